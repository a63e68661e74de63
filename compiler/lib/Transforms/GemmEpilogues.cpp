//===- GemmEpilogues.cpp - bias and GELU fused into bf16 GEMMs ------------===//
//
// anvil-gemm-epilogues: the forms of cuBLASLt's GELU_AUX_BIAS, BIAS,
// DGELU_BGRAD and BGRADA epilogues, as ops the backends call one GEMM for.
//
// 1. Forward graph: gelu_tanh(cast<f32>(matmul(x, w)) + broadcast(b)), each
//    intermediate read by the next alone, bf16 x and a shared bf16 w, an
//    f32 bias over the last dimension, and the GELU read only by roundings
//    to bf16, becomes anvil.linear_gelu, whose bf16 result replaces the
//    roundings. Its VJP builds anvil.gelu_bias_grad.
// 2. Training step: anvil.gelu_bias_grad of a bf16 anvil.matmul's product
//    that nothing else reads becomes anvil.matmul_gelu_bias_grad.
// 3. Training step: a linear layer's bias gradient, the f32 reduce_sum of
//    its output's gradient g over every dimension but the last that a
//    broadcast's VJP made (anvil.broadcast_grad), and its weight gradient,
//    a bf16 matmul {transpose_lhs} of the input's rows and g rounded to
//    bf16 (as rows), become one anvil.matmul_bias_grad at the earliest such
//    GEMM before the sum's readers: the sum is taken of the bf16 rows the
//    GEMM reads (cuBLASLt's BGRADA).
// 4. Training step: cast<bf16>(cast<f32>(matmul(x, w)) + broadcast(b)),
//    each intermediate read by the next alone, bf16 x and a shared bf16 w,
//    an f32 bias over the last dimension (GPT's q, k and v projection),
//    becomes anvil.linear of x, w and b rounded to bf16 (cuBLASLt's BIAS).
//    It has no VJP: the training step is differentiated already.
// `forward` runs form 1, `backward` forms 2, 3 and 4.
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilComposites.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILGEMMEPILOGUESPASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

/// `v`'s bf16 anvil.matmul when it is one that the fused ops take: bf16
/// (..., M, K) times a shared bf16 matrix, lhs not transposed, N a
/// multiple of 8 (cuBLASLt's rule for the auxiliary matrix's rows, and
/// rows of 16 bytes, which every epilogue's algorithms take), and `v` read
/// once.
MatmulOp linearProduct(Value v) {
  auto mm = v.getDefiningOp<MatmulOp>();
  if (!mm || !v.hasOneUse() || mm.getTransposeLhs() ||
      mm.getType().getShape().back() % 8 != 0 ||
      !mm.getLhs().getType().getElementType().isBF16() ||
      !mm.getRhs().getType().getElementType().isBF16() ||
      !mm.getType().getElementType().isBF16() ||
      mm.getRhs().getType().getRank() != 2 ||
      mm->hasAttr(AnvilDialect::kFP8AttrName))
    return nullptr;
  return mm;
}

/// The f32 (N) bias that `v` broadcasts over the rows of a (..., N)
/// tensor, if it is such a broadcast.
Value broadcastBias(Value v) {
  BroadcastOp broadcast = rowBias(v);
  return broadcast ? broadcast.getOperand() : Value();
}

/// A linear layer's product plus its bias, `cast<f32>(matmul(x, w)) +
/// broadcast(b)` in either order, the product and its widening each read
/// by the next alone: the GEMM (one linearProduct takes), the widening, the
/// f32 (N) bias and its broadcast.
struct BiasedProduct {
  MatmulOp mm;
  CastOp widen;
  Value bias;
  Operation *broadcast;
};
std::optional<BiasedProduct> biasedProduct(AddOp add) {
  for (auto [sum, other] : {std::pair(add.getLhs(), add.getRhs()),
                            std::pair(add.getRhs(), add.getLhs())}) {
    auto widen = sum.getDefiningOp<CastOp>();
    Value bias = broadcastBias(other);
    if (!widen || !sum.hasOneUse() || !bias ||
        !widen.getType().getElementType().isF32())
      continue;
    if (MatmulOp mm = linearProduct(widen.getOperand()))
      return BiasedProduct{mm, widen, bias, other.getDefiningOp()};
  }
  return std::nullopt;
}

/// The fused op's bf16 bias, at `b`'s point: cuBLASLt adds a bf16 GEMM's
/// bias in bf16 (and autocast rounds a linear layer's); its gradient is
/// widened back by the cast's VJP.
Value narrowBias(OpBuilder &b, BiasedProduct p) {
  return CastOp::create(
      b, p.mm.getLoc(),
      cast<RankedTensorType>(p.bias.getType()).clone(b.getBF16Type()), p.bias);
}

/// Erases `add` and the product it read (the fused op computes them), and
/// the bias's broadcast unless something else reads it.
void eraseBiasedProduct(AddOp add, BiasedProduct p) {
  add.erase();
  p.widen.erase();
  p.mm.erase();
  if (p.broadcast->use_empty())
    p.broadcast->erase();
}

/// Rewrites `gelu` (form 1 of the file comment) into anvil.linear_gelu;
/// false when it is not of that form.
bool fuseForward(GeluOp gelu) {
  if (gelu.getApproximation() != GeluApproximation::tanh)
    return false;
  auto add = gelu.getOperand().getDefiningOp<AddOp>();
  if (!add || !add->hasOneUse())
    return false;
  // The GELU's readers round it to bf16, as the next GEMM's operand.
  SmallVector<CastOp> roundings;
  for (Operation *user : gelu->getUsers()) {
    auto cast = dyn_cast<CastOp>(user);
    if (!cast || !cast.getType().getElementType().isBF16())
      return false;
    roundings.push_back(cast);
  }
  std::optional<BiasedProduct> p = biasedProduct(add);
  if (roundings.empty() || !p)
    return false;
  OpBuilder b(gelu);
  auto fused =
      LinearGeluOp::create(b, p->mm.getLoc(), p->mm.getLhs(), p->mm.getRhs(),
                           narrowBias(b, *p), p->mm.getTransposeRhs());
  for (CastOp cast : roundings) {
    cast.replaceAllUsesWith(fused.getResult());
    cast.erase();
  }
  gelu.erase();
  eraseBiasedProduct(add, *p);
  return true;
}

/// Rewrites `rounding` (form 4 of the file comment) and the GEMM and bias
/// it rounds into anvil.linear; false when they are not of that form.
bool fuseBias(CastOp rounding) {
  auto add = rounding.getOperand().getDefiningOp<AddOp>();
  if (!rounding.getType().getElementType().isBF16() || !add ||
      !add->hasOneUse())
    return false;
  std::optional<BiasedProduct> p = biasedProduct(add);
  if (!p)
    return false;
  OpBuilder b(rounding);
  Value fused =
      LinearOp::create(b, p->mm.getLoc(), p->mm.getLhs(), p->mm.getRhs(),
                       narrowBias(b, *p), p->mm.getTransposeRhs());
  rounding.replaceAllUsesWith(fused);
  rounding.erase();
  eraseBiasedProduct(add, *p);
  return true;
}

/// Rewrites `grad` (form 2) into anvil.matmul_gelu_bias_grad; false when
/// its gradient is not such a product.
bool fuseBackward(GeluBiasGradOp grad) {
  MatmulOp mm = linearProduct(grad.getGrad());
  if (!mm)
    return false;
  OpBuilder b(grad);
  auto fused =
      MatmulGeluBiasGradOp::create(b, grad.getLoc(), mm.getLhs(), mm.getRhs(),
                                   grad.getPre(), mm.getTransposeRhs());
  grad.replaceAllUsesWith(fused);
  grad.erase();
  mm.erase();
  return true;
}

/// Whether `v` is the (M, N) bf16 rows of `g` (..., N): a cast of g to
/// bf16, of rank 2, or a reshape of one that folds its leading dimensions.
bool areRowsOf(Value v, Value g) {
  auto rows = cast<RankedTensorType>(v.getType());
  if (rows.getRank() != 2 ||
      rows.getDimSize(1) !=
          cast<RankedTensorType>(g.getType()).getShape().back())
    return false;
  if (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getOperand();
  auto cast = v.getDefiningOp<CastOp>();
  return cast && cast.getOperand() == g &&
         cast.getType().getElementType().isBF16();
}

/// Rewrites `sum` and the weight gradient beside it (form 3) into
/// anvil.matmul_bias_grad; false when they are not of that form.
bool fuseWeightBiasGrad(ReduceSumOp sum) {
  Value g = sum.getOperand();
  auto type = cast<RankedTensorType>(g.getType());
  int64_t rank = type.getRank();
  if (!sum->hasAttr(AnvilDialect::kBroadcastGradAttrName) ||
      sum.getKeepDims() || rank < 2 || !type.getElementType().isF32() ||
      sum.getDims() !=
          ArrayRef<int64_t>(llvm::to_vector(llvm::seq<int64_t>(0, rank - 1))))
    return false;
  // The weight gradients: x^T (rows of g in bf16), x (M, K) bf16; the
  // earliest that comes before every reader of the sum.
  SmallVector<MatmulOp> candidates;
  for (Operation *user : g.getUsers())
    for (Operation *rows : user->getUsers()) {
      SmallVector<Operation *> readers = {rows};
      if (isa<ReshapeOp>(rows))
        llvm::append_range(readers, rows->getUsers());
      for (Operation *op : readers)
        if (auto mm = dyn_cast<MatmulOp>(op);
            mm && mm.getTransposeLhs() && !mm.getTransposeRhs() &&
            mm.getType().getRank() == 2 &&
            mm.getLhs().getType().getRank() == 2 &&
            mm.getType().getElementType().isBF16() &&
            mm.getLhs().getType().getElementType().isBF16() &&
            !mm->hasAttr(AnvilDialect::kFP8AttrName) &&
            areRowsOf(mm.getRhs(), g) && !llvm::is_contained(candidates, mm))
          candidates.push_back(mm);
    }
  MatmulOp weightGrad;
  for (MatmulOp mm : candidates) {
    bool beforeReaders = llvm::all_of(sum->getUsers(), [&](Operation *user) {
      return user->getBlock() == mm->getBlock() && mm->isBeforeInBlock(user);
    });
    if (beforeReaders && (!weightGrad || mm->isBeforeInBlock(weightGrad)))
      weightGrad = mm;
  }
  if (!weightGrad)
    return false;
  OpBuilder b(weightGrad);
  auto fused = MatmulBiasGradOp::create(
      b, weightGrad.getLoc(), weightGrad.getLhs(), weightGrad.getRhs());
  Value biasGrad =
      CastOp::create(b, sum.getLoc(), sum.getType(), fused.getBiasGrad());
  weightGrad.replaceAllUsesWith(fused.getWeightGrad());
  weightGrad.erase();
  sum.replaceAllUsesWith(biasGrad);
  sum.erase();
  return true;
}

struct AnvilGemmEpiloguesPass
    : mlir::anvil::impl::AnvilGemmEpiloguesPassBase<AnvilGemmEpiloguesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<GeluOp> gelus;
    SmallVector<GeluBiasGradOp> grads;
    SmallVector<ReduceSumOp> sums;
    getOperation().walk([&](Operation *op) {
      if (auto gelu = dyn_cast<GeluOp>(op))
        gelus.push_back(gelu);
      else if (auto grad = dyn_cast<GeluBiasGradOp>(op))
        grads.push_back(grad);
      else if (auto sum = dyn_cast<ReduceSumOp>(op))
        sums.push_back(sum);
    });
    if (forward)
      for (GeluOp gelu : gelus)
        fuseForward(gelu);
    if (!backward)
      return;
    for (GeluBiasGradOp grad : grads)
      fuseBackward(grad);
    for (ReduceSumOp sum : sums)
      fuseWeightBiasGrad(sum);
    // The roundings left by the forms before (which erase casts).
    SmallVector<CastOp> roundings;
    getOperation().walk([&](CastOp op) { roundings.push_back(op); });
    for (CastOp rounding : roundings)
      fuseBias(rounding);
  }
};

} // namespace
