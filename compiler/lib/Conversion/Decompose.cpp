//===- Decompose.cpp - composite anvil ops as primitive anvil ops ---------===//
//
// The backends lower a small set of primitive ops; everything composite is
// first written out of them here, in anvil IR, so that the reference
// interpreter can check each rule by running the graph before and after.
//
// 1. softmax / log_softmax: subtract the row maximum, exponentiate, sum.
// 2. layer_norm / rms_norm: row statistics over [axis, rank), biased
//    variance, rsqrt(var + eps), then scale and bias broadcast over rows.
// 3. attention: the probabilities of AnvilComposites.h, then P v.
// 4. cross_entropy: log-softmax; the per-row loss
//    -((1 - s) logp[label] + s/C sum(logp)) masked by the kept labels;
//    mean divides by max(kept, 1).
// 5. The other losses (MSE, BCE on logits, focal, Dice) per element or per
//    (n, c), then reduced; group, instance and batch norm as statistics over
//    an (N, groups, rest) or per-channel view; embedding bags as an
//    embedding and a reduction over the bag; RoPE as slices, products and
//    a concatenation.
// 6. conv_transpose as the convolution it is the adjoint of: the input
//    with stride - 1 zeros between elements and the edges padded (or
//    cropped), the filter flipped and its channel roles exchanged per
//    group, then a stride-1 convolution.
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"
#include "anvil/Dialect/Anvil/IR/AnvilComposites.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILDECOMPOSEPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

SmallVector<int64_t> range(int64_t from, int64_t to) {
  return llvm::to_vector(llvm::seq<int64_t>(from, to));
}

/// exp(x - max(x)) along `dim` and the row maximum, kept (size 1 at dim).
std::pair<Value, Value> shiftedExp(Emit &e, Value x, int64_t dim) {
  Value max = ReduceMaxOp::create(e.b, e.loc, x, ArrayRef<int64_t>{dim},
                                  /*keep_dims=*/true);
  Value shifted = e.sub(x, e.unreduce(max, x.getType()));
  return {ExpOp::create(e.b, e.loc, shifted), shifted};
}

/// Whether `q` is a tensorwise quantization with a forward format (one
/// scale for the whole tensor, not MX blocks).
bool isTensorwise(Fp8QuantizeOp q) {
  return q && q.getForward() && !q.getBlockSize();
}

/// The quantization a GEMM operand reads: its defining fp8_quantize, or
/// the one a reshape views (autodiff flattens a shared weight's dW
/// operands to rows).
Fp8QuantizeOp quantizationOf(Value operand) {
  if (auto r = operand.getDefiningOp<ReshapeOp>())
    operand = r.getOperand();
  return operand.getDefiningOp<Fp8QuantizeOp>();
}

/// A tensorwise fp8_quantize's 8-bit codes and its scale: `x * s` cast to
/// the format, where `s` is the op's scale operand or the format's largest
/// value over the tensor's amax (1 for a zero amax; reduced over the amax
/// axis for one rank's part of a split tensor).
std::pair<Value, Value> quantizeTensorwise(Emit &e, Fp8QuantizeOp op) {
  Value x = op.getOperand();
  Type format = *op.getForward();
  auto type = e.typeOf(x);
  Value scale = op.getScale();
  if (!scale) {
    double largest =
        llvm::APFloat::getLargest(cast<FloatType>(format).getFloatSemantics())
            .convertToDouble();
    Value amax =
        ReduceMaxOp::create(e.b, e.loc, AbsOp::create(e.b, e.loc, x),
                            range(0, type.getRank()), /*keep_dims=*/false);
    if (std::optional<StringRef> axis = op.getAmaxAxis())
      amax = AllReduceOp::create(e.b, e.loc, CollectiveOp::max, amax, *axis);
    scale = e.select(e.cmp(ComparisonDirection::gt, amax, e.like(amax, 0)),
                     e.div(e.like(amax, largest), amax), e.like(amax, 1.0));
  }
  auto eightBit = RankedTensorType::get(type.getShape(), format);
  Value q = CastOp::create(e.b, e.loc, eightBit,
                           e.mul(x, e.broadcast(scale, type, {})));
  return {q, scale};
}

/// Tensorwise fp8_quantize with a forward format: scale to the format's
/// range (or by the given scale), cast there and back, unscale (the op's
/// definition, in anvil ops). Without one it is the identity (its backward
/// format acted in autodiff).
struct DecomposeFp8Quantize : OpRewritePattern<Fp8QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Fp8QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getOperand();
    if (!op.getForward()) {
      rewriter.replaceOp(op, x);
      return success();
    }
    // MX blocks: anvil-convert-to-linalg (the scale is read off the bits of
    // each block's amax).
    if (op.getBlockSize())
      return failure();
    Emit e{rewriter, op.getLoc()};
    auto type = e.typeOf(x);
    auto [q, s] = quantizeTensorwise(e, op);
    rewriter.replaceOp(op, e.div(CastOp::create(rewriter, op.getLoc(), type, q),
                                 e.broadcast(s, type, {})));
    return success();
  }
};

/// `x` with its last two dimensions swapped.
Value swapLastTwo(Emit &e, Value x) {
  int64_t rank = e.typeOf(x).getRank();
  SmallVector<int64_t> perm = range(0, rank);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return e.transpose(x, perm);
}

/// `v` past the quantizations of its gradient alone (identities forward)
/// that are its only reader, one after another; they are appended to
/// `through`.
Value throughGradientQuantizations(Value v,
                                   SmallVectorImpl<Operation *> &through) {
  while (v.hasOneUse()) {
    auto q = dyn_cast<Fp8QuantizeOp>(*v.user_begin());
    if (!q || q.getForward())
      break;
    through.push_back(q);
    v = q.getResult();
  }
  return v;
}

/// The broadcast of the f32 (N) bias that `add` adds to `product` (...,
/// N) over its last dimension, if it is one.
BroadcastOp biasAddedTo(AddOp add, Value product) {
  return rowBias(add.getLhs() == product ? add.getRhs() : add.getLhs());
}

/// A bias added to `gemm`'s product and the sum rounded to bf16 (the q, k
/// and v projection's, which attention reads in bf16): the rounding, the
/// add and the f32 bias it broadcasts over the last dimension, when the
/// product (through quantizations of its gradient alone, identities
/// forward) is read by the add alone and the add by the rounding alone.
struct BiasThenRound {
  CastOp rounding;
  AddOp add;
  BroadcastOp broadcast;            ///< Of the bias.
  SmallVector<Operation *> through; ///< The gradients' quantizations.
};
std::optional<BiasThenRound> biasThenRound(MatmulOp gemm) {
  BiasThenRound m;
  Value v = throughGradientQuantizations(gemm.getResult(), m.through);
  if (!v.hasOneUse() || !(m.add = dyn_cast<AddOp>(*v.user_begin())) ||
      !m.add->hasOneUse() ||
      !(m.rounding = dyn_cast<CastOp>(*m.add->user_begin())) ||
      !m.rounding.getType().getElementType().isBF16() ||
      !(m.broadcast = biasAddedTo(m.add, v)))
    return std::nullopt;
  return m;
}

/// A bias added to `gemm`'s product, then a tanh GELU (the first linear
/// layer of an FP8 MLP), when the GELU is read by its forward quantization
/// with a given scale (the delayed recipe's: its codes can be written by
/// the GEMM) and otherwise only by amaxes (|gelu| reduced over every
/// dimension: the history's entry), and the product (through quantizations
/// of its gradient alone) by the add alone. The add may have other readers
/// (the GELU's gradient).
struct GeluThenQuantize {
  AddOp add;
  BroadcastOp broadcast; ///< Of the bias.
  GeluOp gelu;
  Fp8QuantizeOp quantize;           ///< The GELU's, with its scale.
  SmallVector<AbsOp> magnitudes;    ///< The GELU's, read by amaxes alone.
  SmallVector<ReduceMaxOp> amaxes;  ///< Of the GELU's magnitudes.
  SmallVector<Operation *> through; ///< The gradients' quantizations.
};
std::optional<GeluThenQuantize> geluThenQuantize(MatmulOp gemm) {
  GeluThenQuantize m;
  Value v = throughGradientQuantizations(gemm.getResult(), m.through);
  if (!v.hasOneUse() || !(m.add = dyn_cast<AddOp>(*v.user_begin())) ||
      !(m.broadcast = biasAddedTo(m.add, v)))
    return std::nullopt;
  for (Operation *user : m.add->getUsers())
    if (auto gelu = dyn_cast<GeluOp>(user);
        gelu && gelu.getApproximation() == GeluApproximation::tanh) {
      if (m.gelu)
        return std::nullopt;
      m.gelu = gelu;
    }
  if (!m.gelu)
    return std::nullopt;
  int64_t rank = m.gelu.getType().getRank();
  for (Operation *user : m.gelu->getUsers()) {
    if (auto q = dyn_cast<Fp8QuantizeOp>(user)) {
      if (m.quantize || !isTensorwise(q) || !q.getScale())
        return std::nullopt;
      m.quantize = q;
      continue;
    }
    auto abs = dyn_cast<AbsOp>(user);
    if (!abs)
      return std::nullopt;
    m.magnitudes.push_back(abs);
    for (Operation *absUser : abs->getUsers()) {
      auto amax = dyn_cast<ReduceMaxOp>(absUser);
      if (!amax || amax.getKeepDims() ||
          amax.getDims() != ArrayRef<int64_t>(range(0, rank)))
        return std::nullopt;
      m.amaxes.push_back(amax);
    }
  }
  if (!m.quantize)
    return std::nullopt;
  return m;
}

/// The f32 (N) bias that `broadcast` broadcasts, rounded to bf16 at `b`'s
/// insertion point: how an FP8 GEMM's epilogue takes it (cuBLASLt's bf16
/// bias, as a bf16 GEMM's linear_gelu).
Value bf16Bias(OpBuilder &b, Location loc, BroadcastOp broadcast) {
  Value f32Bias = broadcast.getOperand();
  return CastOp::create(
      b, loc, cast<RankedTensorType>(f32Bias.getType()).clone(b.getBF16Type()),
      f32Bias);
}

/// Erases what an FP8 GEMM's epilogue replaced, once nothing reads it: the
/// add of the bias, the bias's broadcast unless something else reads it,
/// the gradient's quantizations between and the product.
void eraseFolded(AddOp add, BroadcastOp broadcast,
                 ArrayRef<Operation *> through, MatmulOp gemm) {
  add.erase();
  if (broadcast->use_empty())
    broadcast.erase();
  for (Operation *q : llvm::reverse(through))
    q->erase();
  gemm.erase();
}

/// Where `at`'s block holds `user` (or the op that holds it): after `at`.
bool isAfter(Operation *at, Operation *user) {
  Operation *ancestor = at->getBlock()->findAncestorOpInBlock(*user);
  return ancestor && at->isBeforeInBlock(ancestor);
}

/// `gemm` (an FP8 product with bf16 results, lhs `a8` (..., M, K) and the
/// shared weight's codes `b8`, scaled by `ua` and `ub`) as
/// anvil.linear_gelu_f8 when its bias and GELU are geluThenQuantize's, the
/// product is not empty, the GELU's rows of codes are 16-byte aligned (N a
/// multiple of 16) and their format one an FP8 GEMM writes from these
/// operands (E5M2 only with an E5M2 operand, as cuBLASLt's): the GELU's
/// codes, recorded in `quantized`, its amaxes and the bf16 `pre` come from
/// the GEMM. Every other reader of the sum before the GELU (its gradient)
/// reads `pre` widened. The product, the add and the bias's broadcast are
/// erased; the GELU, which the quantization reads until its codes replace
/// it, goes into `dead`. False, changing nothing, when it does not fold.
bool foldGelu(MatmulOp gemm, Value a8, Value b8, Value ua, Value ub, bool tb,
              llvm::MapVector<Operation *, std::pair<Value, Value>> &quantized,
              SmallVectorImpl<Operation *> &dead) {
  std::optional<GeluThenQuantize> m = geluThenQuantize(gemm);
  RankedTensorType product = gemm.getType();
  auto e5m2 = [](Value v) {
    return isa<Float8E5M2Type>(
        cast<RankedTensorType>(v.getType()).getElementType());
  };
  if (!m || quantized.contains(m->quantize) ||
      cast<RankedTensorType>(b8.getType()).getRank() != 2 ||
      product.getNumElements() == 0 || product.getShape().back() % 16 != 0 ||
      (isa<Float8E5M2Type>(*m->quantize.getForward()) && !e5m2(a8) &&
       !e5m2(b8)))
    return false;
  Value f32Bias = m->broadcast.getOperand(), scale = m->quantize.getScale();
  // After the product and whatever the bias and the scale are computed by;
  // before every reader of what it replaces.
  Operation *at = gemm;
  for (Value v : {f32Bias, scale})
    if (Operation *def = v.getDefiningOp()) {
      if (def->getBlock() != at->getBlock())
        return false;
      if (at->isBeforeInBlock(def))
        at = def;
    }
  for (ReduceMaxOp amax : m->amaxes)
    for (Operation *user : amax->getUsers())
      if (!isAfter(at, user))
        return false;
  for (Operation *user : m->add->getUsers())
    if (user != m->gelu && !isAfter(at, user))
      return false;

  OpBuilder b(gemm->getContext());
  b.setInsertionPointAfter(at);
  Location loc = gemm.getLoc();
  auto fused = LinearGeluF8Op::create(
      b, loc,
      TypeRange{product.clone(*m->quantize.getForward()),
                product.clone(b.getBF16Type()),
                RankedTensorType::get({}, b.getF32Type())},
      a8, b8, ua, ub, bf16Bias(b, loc, m->broadcast), scale, tb);
  for (ReduceMaxOp amax : m->amaxes) {
    amax.replaceAllUsesWith(fused.getAmax());
    amax.erase();
  }
  for (AbsOp abs : m->magnitudes)
    abs.erase();
  Value pre = CastOp::create(b, loc, product, fused.getPre());
  // The GELU too, moved after `pre`: the quantization (after `at`, as it
  // reads the scale) reads it until its codes replace it.
  m->add.getResult().replaceAllUsesWith(pre);
  m->gelu->moveAfter(pre.getDefiningOp());
  eraseFolded(m->add, m->broadcast, m->through, gemm);
  quantized.insert({m->quantize, {fused.getResult(), scale}});
  dead.push_back(m->gelu);
  return true;
}

/// A GEMM of two tensorwise quantizations as an FP8 GEMM: matmul_f8 of the
/// 8-bit codes scaled by (1 / s_a) (1 / s_b), its result of type `result`
/// (f32, or bf16 widened back to f32 for the GEMM's users). With `kInner`,
/// both operands are laid out with K innermost, as cuBLASLt's FP8 GEMM
/// takes them (a transposed copy of the codes where an operand is not),
/// and a GEMM whose K is not a multiple of 16 or whose rows of results are
/// not a multiple of 16 bytes stays a GEMM of the dequantized values. With
/// bf16 results, a bias added to the product and the sum rounded to bf16
/// (biasThenRound) join the GEMM: its bias, rounded to bf16 (as cuBLASLt's
/// BIAS epilogue adds a bf16 GEMM's, and as a bf16 GEMM's linear_gelu), is
/// added before its result is rounded, which replaces the rounding. With
/// `geluEpilogue`, a bias and GELU whose quantization has a given scale
/// (geluThenQuantize) join it as anvil.linear_gelu_f8 instead (foldGelu).
/// Each quantization is computed once, after its op, for every GEMM that
/// reads it (its amax all-reduce too); its other users read the
/// dequantized codes.
void lowerFp8Gemms(ModuleOp module, bool kInner, FloatType result,
                   bool geluEpilogue) {
  SmallVector<MatmulOp> gemms;
  module.walk([&](MatmulOp op) {
    std::optional<std::string> why =
        fp8GemmForm(op, kInner ? "f8-k-inner" : "f8", result);
    if (why && why->empty())
      gemms.push_back(op);
  });
  // The codes and scale of each quantization, made right after it (or
  // written by a GEMM's epilogue).
  llvm::MapVector<Operation *, std::pair<Value, Value>> quantized;
  // The GELUs that epilogues replaced, erased once their quantizations are.
  SmallVector<Operation *> dead;
  auto codesOf = [&](Fp8QuantizeOp q) {
    auto [it, fresh] = quantized.try_emplace(q, Value(), Value());
    if (fresh) {
      OpBuilder b(q->getContext());
      b.setInsertionPointAfter(q);
      Emit e{b, q.getLoc()};
      it->second = quantizeTensorwise(e, q);
    }
    return it->second;
  };
  for (MatmulOp op : gemms) {
    auto [a8, sa] = codesOf(quantizationOf(op.getLhs()));
    auto [b8, sb] = codesOf(quantizationOf(op.getRhs()));
    OpBuilder b(op);
    Emit e{b, op.getLoc()};
    // The codes in the operand's shape (a reshaped quantization).
    auto shapedLike = [&](Value codes, Value operand) {
      auto t = cast<RankedTensorType>(operand.getType());
      return e.reshape(codes, t.clone(e.typeOf(codes).getElementType()));
    };
    a8 = shapedLike(a8, op.getLhs());
    b8 = shapedLike(b8, op.getRhs());
    bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
    if (kInner && ta) {
      a8 = swapLastTwo(e, a8);
      ta = false;
    }
    if (kInner && !tb) {
      b8 = swapLastTwo(e, b8);
      tb = true;
    }
    // The dequantization factors, each alone: the inverse of s_a s_b would
    // overflow for tiny amaxes, where each scale is large.
    Value ua = e.div(e.like(sa, 1.0), sa), ub = e.div(e.like(sb, 1.0), sb);
    if (geluEpilogue && result.isBF16() && !ta &&
        foldGelu(op, a8, b8, ua, ub, tb, quantized, dead))
      continue;
    std::optional<BiasThenRound> epilogue;
    if (result.isBF16())
      epilogue = biasThenRound(op);
    if (epilogue) {
      // At the rounding: the bias may be computed after the product.
      OpBuilder at(epilogue->rounding);
      Value product = MatmulF8Op::create(
          at, op.getLoc(), op.getType().clone(result), a8, b8, ua, ub,
          bf16Bias(at, op.getLoc(), epilogue->broadcast), ta, tb);
      epilogue->rounding.replaceAllUsesWith(product);
      epilogue->rounding.erase();
      eraseFolded(epilogue->add, epilogue->broadcast, epilogue->through, op);
      continue;
    }
    Value product =
        MatmulF8Op::create(b, op.getLoc(), op.getType().clone(result), a8, b8,
                           ua, ub, Value(), ta, tb);
    if (product.getType() != op.getType())
      product = CastOp::create(b, op.getLoc(), op.getType(), product);
    op.replaceAllUsesWith(product);
    op.erase();
  }
  // Other users of a quantization the GEMMs read dequantize its codes.
  for (auto &[op, codes] : quantized) {
    auto q = cast<Fp8QuantizeOp>(op);
    if (q->use_empty()) {
      q->erase();
      continue;
    }
    OpBuilder b(q->getContext());
    b.setInsertionPointAfter(codes.first.getDefiningOp());
    Emit e{b, q.getLoc()};
    auto type = e.typeOf(q.getOperand());
    q->replaceAllUsesWith(
        ValueRange{e.div(CastOp::create(b, q.getLoc(), type, codes.first),
                         e.broadcast(codes.second, type, {}))});
    q->erase();
  }
  for (Operation *op : dead)
    op->erase();
}

struct DecomposeSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    int64_t dim = op.getDim();
    auto [ex, shifted] = shiftedExp(e, op.getOperand(), dim);
    Value sum = e.sum(ex, {dim}, true);
    rewriter.replaceOp(op, e.div(ex, e.unreduce(sum, op.getType())));
    return success();
  }
};

struct DecomposeLogSoftmax : OpRewritePattern<LogSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LogSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    int64_t dim = op.getDim();
    auto [ex, shifted] = shiftedExp(e, op.getOperand(), dim);
    Value logSum = LogOp::create(rewriter, op.getLoc(), e.sum(ex, {dim}, true));
    rewriter.replaceOp(op, e.sub(shifted, e.unreduce(logSum, op.getType())));
    return success();
  }
};

/// `y * scale + bias` with (features) operands broadcast over the rows.
Value affine(Emit &e, Value y, Value scale, Value bias, int64_t axis) {
  auto type = e.typeOf(y);
  SmallVector<int64_t> featureDims = range(axis, type.getRank());
  if (scale)
    y = e.mul(y, e.broadcast(scale, type, featureDims));
  if (bias)
    y = e.add(y, e.broadcast(bias, type, featureDims));
  return y;
}

struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    Value x = op.getOperand();
    auto type = op.getType();
    SmallVector<int64_t> normDims = range(op.getAxis(), type.getRank());
    Value xc = e.sub(x, e.unreduce(e.mean(x, normDims, true), type));
    Value var = e.mean(e.mul(xc, xc), normDims, true);
    Value r = RsqrtOp::create(
        rewriter, op.getLoc(),
        e.add(var, e.like(var, op.getEpsilon().convertToDouble())));
    Value y = e.mul(xc, e.unreduce(r, type));
    rewriter.replaceOp(op,
                       affine(e, y, op.getScale(), op.getBias(), op.getAxis()));
    return success();
  }
};

struct DecomposeRMSNorm : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    Value x = op.getOperand();
    auto type = op.getType();
    SmallVector<int64_t> normDims = range(op.getAxis(), type.getRank());
    Value ms = e.mean(e.mul(x, x), normDims, true);
    Value r = RsqrtOp::create(
        rewriter, op.getLoc(),
        e.add(ms, e.like(ms, op.getEpsilon().convertToDouble())));
    Value y = e.mul(x, e.unreduce(r, type));
    rewriter.replaceOp(op, affine(e, y, op.getScale(), Value(), op.getAxis()));
    return success();
  }
};

/// d = grad gelu_tanh'(pre) in f32 (or the element type if wider); pre_grad
/// = d and bias_grad = the sum of d over every dimension but the last, each
/// rounded to the element type. (anvil.linear_gelu's VJP, where no GEMM
/// was fused into it.)
struct DecomposeGeluBiasGrad : OpRewritePattern<GeluBiasGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluBiasGradOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    auto type = cast<RankedTensorType>(op.getGrad().getType());
    Type element = type.getElementType();
    auto wide = type.clone(
        element.getIntOrFloatBitWidth() < 32 ? rewriter.getF32Type() : element);
    auto as = [&](Value v, RankedTensorType to) -> Value {
      return v.getType() == to ? v
                               : CastOp::create(rewriter, op.getLoc(), to, v);
    };
    Value d =
        e.mul(as(op.getGrad(), wide),
              e.geluDerivative(GeluApproximation::tanh, as(op.getPre(), wide)));
    Value sum = e.sum(d, range(0, type.getRank() - 1), false);
    rewriter.replaceOp(
        op, {as(d, type),
             as(sum, cast<RankedTensorType>(sum.getType()).clone(element))});
    return success();
  }
};

struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    AttentionParts parts = emitAttentionProbabilities(e, op);
    // (B, Hq, Tq, Tk) x (B, Hq, Tk, Dv) -> (B, Hq, Tq, Dv)
    rewriter.replaceOp(op, emitAttentionProduct(e, op, parts.probs,
                                                parts.values, false, false));
    return success();
  }
};

struct DecomposeCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    Value z = op.getLogits();
    int64_t rank = op.getLogits().getType().getRank();
    int64_t classes = op.getLogits().getType().getDimSize(rank - 1);
    double s = op.getLabelSmoothing().convertToDouble();
    LabelMasks masks = emitLabelMasks(e, op);
    // (..., C) -> (...): lse - (1 - s) z[label] - s/C sum(z), which is
    // -((1 - s) log p[label] + s/C sum(log p)) with log p = z - lse, without
    // a (..., C) log p: each term reads the logits directly, and lse is
    // the one the VJP reads (emitRowLogSumExp).
    auto rowType = cast<RankedTensorType>(masks.kept.getType());
    // z[label] kept (size 1 there) as the row maximum is, and made before
    // it: one domain, nothing read in between, so that a GPU's horizontal
    // fusion reads the logits once for both (anvil-horizontal-fuse).
    Value picked =
        e.reshape(e.sum(e.mul(z, masks.onehot), {rank - 1}, true), rowType);
    Value lse = e.reshape(emitRowLogSumExp(e, z), rowType);
    Value rowLoss = e.sub(lse, e.scale(picked, 1.0 - s));
    if (s != 0.0)
      rowLoss = e.sub(rowLoss, e.scale(e.sum(z, {rank - 1}, false),
                                       s / static_cast<double>(classes)));
    rowLoss = e.mul(rowLoss, masks.kept);
    Value result = rowLoss;
    if (op.getReduction() != Reduction::none) {
      SmallVector<int64_t> all = range(0, rank - 1);
      Value total = all.empty() ? rowLoss : e.sum(rowLoss, all, false);
      result = op.getReduction() == Reduction::mean
                   ? e.div(total, emitKeptCount(e, masks.kept))
                   : total;
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// `values` reduced as a loss: mean or sum over every element, or as is.
Value reduceLoss(Emit &e, Reduction reduction, Value values) {
  auto t = e.typeOf(values);
  if (reduction == Reduction::none || t.getRank() == 0)
    return values;
  SmallVector<int64_t> all = range(0, t.getRank());
  return reduction == Reduction::mean ? e.mean(values, all, false)
                                      : e.sum(values, all, false);
}

/// max(x, 0) - x t + log(1 + exp(-|x|)): BCE on logits, stable.
Value bceWithLogits(Emit &e, Value x, Value t) {
  Value relu = MaxOp::create(e.b, e.loc, x, e.like(x, 0.0));
  Value soft = LogOp::create(
      e.b, e.loc,
      e.add(e.like(x, 1.0),
            ExpOp::create(e.b, e.loc,
                          e.neg(AbsOp::create(e.b, e.loc, x).getResult()))));
  return e.add(e.sub(relu, e.mul(x, t)), soft);
}

struct DecomposeMSE : OpRewritePattern<MSELossOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MSELossOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    Value d = e.sub(op.getInput(), op.getTarget());
    rewriter.replaceOp(op, reduceLoss(e, op.getReduction(), e.mul(d, d)));
    return success();
  }
};

struct DecomposeBCE : OpRewritePattern<BCEWithLogitsLossOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BCEWithLogitsLossOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    rewriter.replaceOp(
        op, reduceLoss(e, op.getReduction(),
                       bceWithLogits(e, op.getInput(), op.getTarget())));
    return success();
  }
};

struct DecomposeFocal : OpRewritePattern<FocalLossOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FocalLossOp op,
                                PatternRewriter &rewriter) const override {
    // alpha_t (1 - p_t)^gamma bce(x, t), p_t = p t + (1 - p)(1 - t).
    Emit e{rewriter, op.getLoc()};
    Value x = op.getInput(), t = op.getTarget();
    Value p = SigmoidOp::create(rewriter, op.getLoc(), x);
    Value one = e.like(x, 1.0);
    Value pt = e.add(e.mul(p, t), e.mul(e.sub(one, p), e.sub(one, t)));
    Value w = PowOp::create(rewriter, op.getLoc(), e.sub(one, pt),
                            e.like(x, op.getGamma().convertToDouble()));
    Value l = e.mul(bceWithLogits(e, x, t), w);
    double alpha = op.getAlpha().convertToDouble();
    if (alpha >= 0.0)
      l = e.mul(l, e.add(e.scale(t, alpha), e.scale(e.sub(one, t), 1 - alpha)));
    rewriter.replaceOp(op, reduceLoss(e, op.getReduction(), l));
    return success();
  }
};

struct DecomposeDice : OpRewritePattern<DiceLossOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DiceLossOp op,
                                PatternRewriter &rewriter) const override {
    // Per (n, c): 1 - (2 sum(p t) + s) / (sum p + sum t + s).
    Emit e{rewriter, op.getLoc()};
    Value p = op.getInput(), t = op.getTarget();
    SmallVector<int64_t> spatial = range(2, e.typeOf(p).getRank());
    double smooth = op.getSmooth().convertToDouble();
    Value inter = e.sum(e.mul(p, t), spatial, false);
    Value num = e.add(e.scale(inter, 2.0), e.like(inter, smooth));
    Value den = e.add(e.add(e.sum(p, spatial, false), e.sum(t, spatial, false)),
                      e.like(inter, smooth));
    Value d = e.sub(e.like(inter, 1.0), e.div(num, den));
    rewriter.replaceOp(op, reduceLoss(e, op.getReduction(), d));
    return success();
  }
};

/// (x - mean) rsqrt(var + eps) with the statistics of `view`'s dimensions
/// `dims` (biased variance), computed on `x` reshaped to `view`.
Value normalizeOver(Emit &e, Value x, RankedTensorType view,
                    ArrayRef<int64_t> dims, double epsilon) {
  auto type = e.typeOf(x);
  Value v = e.reshape(x, view);
  Value xc = e.sub(v, e.unreduce(e.mean(v, dims, true), view));
  Value var = e.mean(e.mul(xc, xc), dims, true);
  Value r = RsqrtOp::create(e.b, e.loc, e.add(var, e.like(var, epsilon)));
  return e.reshape(e.mul(xc, e.unreduce(r, view)), type);
}

/// `y * scale + bias` with (C) operands broadcast along dimension 1.
Value channelAffine(Emit &e, Value y, Value scale, Value bias) {
  auto type = e.typeOf(y);
  if (scale)
    y = e.mul(y, e.broadcast(scale, type, {1}));
  if (bias)
    y = e.add(y, e.broadcast(bias, type, {1}));
  return y;
}

template <typename OpTy> struct DecomposeGroupedNorm : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    // (N, C, S...) as (N, G, C/G * S): statistics over the last dimension.
    Emit e{rewriter, op.getLoc()};
    auto type = op.getType();
    int64_t n = type.getDimSize(0), c = type.getDimSize(1);
    int64_t groups = c;
    if constexpr (std::is_same_v<OpTy, GroupNormOp>)
      groups = op.getGroups();
    auto view = type.clone({n, groups, type.getNumElements() / (n * groups)});
    Value y = normalizeOver(e, op.getOperand(), view, {2},
                            op.getEpsilon().convertToDouble());
    rewriter.replaceOp(op, channelAffine(e, y, op.getScale(), op.getBias()));
    return success();
  }
};

struct DecomposeBatchNormTrain : OpRewritePattern<BatchNormTrainOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormTrainOp op,
                                PatternRewriter &rewriter) const override {
    // Per channel over N and the spatial positions; also (mean, var).
    Emit e{rewriter, op.getLoc()};
    Value x = op.getOperand();
    auto type = e.typeOf(x);
    SmallVector<int64_t> dims = {0};
    for (int64_t d = 2; d < type.getRank(); ++d)
      dims.push_back(d);
    Value mean = e.mean(x, dims, false);
    Value xc = e.sub(x, e.broadcast(mean, type, {1}));
    Value var = e.mean(e.mul(xc, xc), dims, false);
    Value r = RsqrtOp::create(
        rewriter, op.getLoc(),
        e.add(var, e.like(var, op.getEpsilon().convertToDouble())));
    Value y = e.mul(xc, e.broadcast(r, type, {1}));
    rewriter.replaceOp(
        op, {channelAffine(e, y, op.getScale(), op.getBias()), mean, var});
    return success();
  }
};

struct DecomposeBatchNormInference : OpRewritePattern<BatchNormInferenceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormInferenceOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    Value x = op.getOperand();
    auto type = e.typeOf(x);
    Value r = RsqrtOp::create(
        rewriter, op.getLoc(),
        e.add(op.getVariance(),
              e.like(op.getVariance(), op.getEpsilon().convertToDouble())));
    Value y = e.mul(e.sub(x, e.broadcast(op.getMean(), type, {1})),
                    e.broadcast(r, type, {1}));
    rewriter.replaceOp(op, channelAffine(e, y, op.getScale(), op.getBias()));
    return success();
  }
};

struct DecomposeEmbeddingBag : OpRewritePattern<EmbeddingBagOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingBagOp op,
                                PatternRewriter &rewriter) const override {
    // (B, L) rows of (V, C) -> (B, L, C) -> sum or mean over L.
    Emit e{rewriter, op.getLoc()};
    Value rows = EmbeddingOp::create(rewriter, op.getLoc(), op.getTable(),
                                     op.getIndices());
    rewriter.replaceOp(op, op.getMode() == BagMode::sum
                               ? e.sum(rows, {1}, false)
                               : e.mean(rows, {1}, false));
    return success();
  }
};

struct DecomposeRope : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RopeOp op,
                                PatternRewriter &rewriter) const override {
    // Pairs (a, b) -> (a cos - b sin, a sin + b cos); a, b are the halves
    // of the last dimension, or its even and odd elements (interleaved).
    Emit e{rewriter, op.getLoc()};
    Value x = op.getOperand();
    auto type = op.getType();
    int64_t rank = type.getRank(), d = type.getDimSize(rank - 1);
    SmallVector<int64_t> halfShape(type.getShape());
    halfShape.back() = d / 2;
    auto half = type.clone(halfShape);
    Value cos = e.broadcast(op.getCos(), half, {rank - 2, rank - 1});
    Value sin = e.broadcast(op.getSin(), half, {rank - 2, rank - 1});
    // `v` sliced along its last dimension: [start, limit) by stride.
    auto slice = [&](Value v, int64_t lastStart, int64_t lastLimit,
                     int64_t lastStride) -> Value {
      auto vt = e.typeOf(v);
      SmallVector<int64_t> start(vt.getRank(), 0), limit(vt.getShape()),
          stride(vt.getRank(), 1);
      start.back() = lastStart;
      limit.back() = lastLimit;
      stride.back() = lastStride;
      return SliceOp::create(rewriter, op.getLoc(), v, start, limit, stride)
          .getResult();
    };
    Value a, b;
    if (op.getInterleaved()) {
      a = slice(x, 0, d, 2);
      b = slice(x, 1, d, 2);
    } else {
      a = slice(x, 0, d / 2, 1);
      b = slice(x, d / 2, d, 1);
    }
    Value ra = e.sub(e.mul(a, cos), e.mul(b, sin));
    Value rb = e.add(e.mul(a, sin), e.mul(b, cos));
    Value out;
    if (op.getInterleaved()) {
      // Back to (..., D/2, 2) pairs, then (..., D).
      SmallVector<int64_t> pairShape(halfShape);
      pairShape.push_back(1);
      auto pair = type.clone(pairShape);
      Value cat = ConcatOp::create(
          rewriter, op.getLoc(),
          ValueRange{e.reshape(ra, pair), e.reshape(rb, pair)}, rank);
      out = e.reshape(cat, type);
    } else {
      out =
          ConcatOp::create(rewriter, op.getLoc(), ValueRange{ra, rb}, rank - 1);
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct DecomposeConvTranspose : OpRewritePattern<ConvTransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvTransposeOp op,
                                PatternRewriter &rewriter) const override {
    // A library call's (anvil-library-convs): anvil-bufferize makes it.
    if (op->hasAttr(AnvilDialect::kLibraryCallAttrName))
      return failure();
    Emit e{rewriter, op.getLoc()};
    Location loc = op.getLoc();
    Value x = op.getInput(), w = op.getFilter();
    auto xt = op.getInput().getType();
    auto wt = op.getFilter().getType();
    int64_t spatial = xt.getRank() - 2, groups = op.getGroups();
    int64_t cin = wt.getDimSize(0), cog = wt.getDimSize(1), cig = cin / groups;

    // 1. Zeros between input elements: (..., I) -> (..., I, s) with the
    //    new entries zero -> (..., I * s) -> the first (I - 1) s + 1.
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t s = op.getStride()[i], dim = 2 + i;
      if (s == 1)
        continue;
      auto t = e.typeOf(x);
      SmallVector<int64_t> expanded(t.getShape());
      expanded.insert(expanded.begin() + dim + 1, 1);
      Value x1 = e.reshape(x, t.clone(expanded));
      SmallVector<int64_t> zerosShape(expanded);
      zerosShape[dim + 1] = s - 1;
      Value zeros = e.splat(t.clone(zerosShape), 0.0);
      Value spread =
          ConcatOp::create(rewriter, loc, ValueRange{x1, zeros}, dim + 1);
      SmallVector<int64_t> flat(t.getShape());
      flat[dim] *= s;
      Value x2 = e.reshape(spread, t.clone(flat));
      SmallVector<int64_t> start(t.getRank(), 0), limit(flat),
          stride(t.getRank(), 1);
      limit[dim] = (t.getDimSize(dim) - 1) * s + 1;
      x = SliceOp::create(rewriter, loc, x2, start, limit, stride);
    }
    // 2. Edges: d (k - 1) - pad_low before, d (k - 1) - pad_high +
    //    output_padding after; negative amounts crop.
    {
      auto t = e.typeOf(x);
      SmallVector<int64_t> low(t.getRank(), 0), high(t.getRank(), 0);
      SmallVector<int64_t> cropLow(t.getRank(), 0), cropHigh(t.getRank(), 0);
      bool pad = false, crop = false;
      for (int64_t i = 0; i < spatial; ++i) {
        int64_t k = wt.getDimSize(2 + i), d = op.getDilation()[i];
        int64_t lo = d * (k - 1) - op.getPadLow()[i];
        int64_t hi =
            d * (k - 1) - op.getPadHigh()[i] + op.getOutputPadding()[i];
        (lo >= 0 ? low : cropLow)[2 + i] = std::abs(lo);
        (hi >= 0 ? high : cropHigh)[2 + i] = std::abs(hi);
        pad |= lo > 0 || hi > 0;
        crop |= lo < 0 || hi < 0;
      }
      if (pad)
        x = PadOp::create(rewriter, loc, x, rewriter.getDenseI64ArrayAttr(low),
                          rewriter.getDenseI64ArrayAttr(high),
                          rewriter.getF64FloatAttr(0.0));
      if (crop) {
        auto pt = e.typeOf(x);
        SmallVector<int64_t> start(cropLow), limit(pt.getShape()),
            stride(pt.getRank(), 1);
        for (int64_t d = 0; d < pt.getRank(); ++d)
          limit[d] -= cropHigh[d];
        x = SliceOp::create(rewriter, loc, x, start, limit, stride);
      }
    }
    // 3. The filter: flipped spatially, (G * CIG, COG, k...) ->
    //    (G * COG, CIG, k...).
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t k = wt.getDimSize(2 + i);
      if (k == 1)
        continue;
      auto it = RankedTensorType::get({k}, rewriter.getI64Type());
      SmallVector<APInt> rev;
      for (int64_t j = k - 1; j >= 0; --j)
        rev.push_back(APInt(64, j));
      Value idx = ConstantOp::create(rewriter, loc, it,
                                     DenseElementsAttr::get(it, rev));
      w = GatherOp::create(rewriter, loc, w, idx, 2 + i);
    }
    SmallVector<int64_t> kernel(wt.getShape().drop_front(2));
    SmallVector<int64_t> grouped = {groups, cig, cog};
    grouped.append(kernel);
    w = e.reshape(w, wt.clone(grouped));
    SmallVector<int64_t> perm = {0, 2, 1};
    for (int64_t i = 0; i < spatial; ++i)
      perm.push_back(3 + i);
    w = e.transpose(w, perm);
    SmallVector<int64_t> convFilter = {groups * cog, cig};
    convFilter.append(kernel);
    w = e.reshape(w, wt.clone(convFilter));
    // 4. A stride-1 convolution with the same dilation.
    SmallVector<int64_t> ones(spatial, 1), zeros(spatial, 0);
    Value y =
        ConvOp::create(rewriter, loc, x, w, op.getBias(), ones, zeros, zeros,
                       op.getDilation(), static_cast<uint64_t>(groups));
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

std::optional<std::string> mlir::anvil::fp8GemmForm(MatmulOp op, StringRef form,
                                                    FloatType result) {
  Fp8QuantizeOp qa = quantizationOf(op.getLhs()),
                qb = quantizationOf(op.getRhs());
  if (!qa || !qb || !qa.getForward() || !qb.getForward())
    return std::nullopt;
  if (form == "dequantized")
    return std::string("the target has no FP8 GEMM (fp8-gemms=dequantized)");
  if (!isTensorwise(qa) || !isTensorwise(qb))
    return std::string("MX blocks are multiplied dequantized");
  if (isa<Float8E5M2Type>(*qa.getForward()) &&
      isa<Float8E5M2Type>(*qb.getForward()))
    return std::string("both operands are E5M2, which no FP8 GEMM takes");
  if (!op.getType().getElementType().isF32() || !op.getType().hasStaticShape())
    return std::string("not an f32 product of a static shape");
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  int64_t k =
      lhsType.getDimSize(lhsType.getRank() - (op.getTransposeLhs() ? 2 : 1));
  int64_t n = op.getType().getDimSize(op.getType().getRank() - 1);
  // cuBLASLt's FP8 GEMM: rows of codes and of results 16-byte aligned.
  if (form == "f8-k-inner" && k % 16 != 0)
    return "K = " + std::to_string(k) +
           " is not a multiple of 16 (cuBLASLt's FP8 GEMM)";
  int64_t perRow = 128 / result.getWidth();
  if (form == "f8-k-inner" && n % perRow != 0)
    return "N = " + std::to_string(n) + " is not a multiple of " +
           std::to_string(perRow) + " (cuBLASLt's FP8 GEMM, " +
           (result.isF32() ? "f32" : "bf16") + " results)";
  return std::string();
}

namespace {

struct AnvilDecomposePass
    : mlir::anvil::impl::AnvilDecomposePassBase<AnvilDecomposePass> {
  using AnvilDecomposePassBase::AnvilDecomposePassBase;
  void runOnOperation() override {
    if (fp8Gemms != "dequantized" && fp8Gemms != "f8" &&
        fp8Gemms != "f8-k-inner") {
      getOperation().emitError("anvil-decompose: fp8-gemms=")
          << fp8Gemms << ": the choices are dequantized, f8 and f8-k-inner";
      return signalPassFailure();
    }
    if (fp8GemmResult != "f32" && fp8GemmResult != "bf16") {
      getOperation().emitError("anvil-decompose: fp8-gemm-result=")
          << fp8GemmResult << ": the choices are f32 and bf16";
      return signalPassFailure();
    }
    Builder b(&getContext());
    FloatType result =
        fp8GemmResult == "bf16" ? FloatType(b.getBF16Type()) : b.getF32Type();
    if (fp8Gemms != "dequantized")
      lowerFp8Gemms(getOperation(), fp8Gemms == "f8-k-inner", result,
                    fp8GeluEpilogue);
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeFp8Quantize>(&getContext());
    patterns.add<DecomposeAttention, DecomposeCrossEntropy, DecomposeLayerNorm,
                 DecomposeLogSoftmax, DecomposeRMSNorm, DecomposeSoftmax,
                 DecomposeMSE, DecomposeBCE, DecomposeFocal, DecomposeDice,
                 DecomposeGroupedNorm<GroupNormOp>,
                 DecomposeGroupedNorm<InstanceNormOp>, DecomposeBatchNormTrain,
                 DecomposeBatchNormInference, DecomposeEmbeddingBag,
                 DecomposeRope, DecomposeConvTranspose, DecomposeGeluBiasGrad>(
        &getContext());
    // No folding or region simplification: the pass rewrites only the ops
    // it names and leaves the rest of the graph as it found it.
    GreedyRewriteConfig config;
    config.enableFolding(false).setRegionSimplificationLevel(
        GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
