//===- AnvilVJP.cpp - vector-Jacobian products of anvil ops ---------------===//
//
// One `buildVJP` per differentiable op: given dL/d(results), build
// dL/d(operands) out of anvil ops, reusing the op's operands and results.
// Shapes in comments: x the operand, y the result, g = dL/dy.
//
// Every op whose results can carry a gradient has a rule; comparisons and
// argmax are NonDifferentiable, and the gradient ops themselves
// (embedding_grad, conv_filter_grad, max_pool_grad) are not differentiated
// again (no second derivatives).
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilComposites.h"
#include "anvil/Dialect/Anvil/IR/AnvilEmit.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::anvil;

namespace {

/// The gradient of result `i`, or zeros of its type if none flows in.
Value gradOrZero(Emit &e, Operation *op, ArrayRef<Value> grads, unsigned i) {
  return grads[i] ? grads[i] : e.splat(op->getResult(i).getType(), 0.0);
}

SmallVector<int64_t> range(int64_t from, int64_t to) {
  return llvm::to_vector(llvm::seq<int64_t>(from, to));
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
}

/// The per-element weight of a loss reduction: g / count for mean, g for
/// sum, broadcast to `type`; `none` passes the per-element g through.
Value lossScale(Emit &e, Reduction reduction, Value g, Type type, Value count) {
  if (reduction == Reduction::none)
    return g;
  Value w = reduction == Reduction::mean ? e.div(g, count) : g;
  return e.broadcast(w, type, {});
}

/// The number of elements of `x`, as a scalar of its element type (the
/// divisor of a mean loss).
Value elementCount(Emit &e, Value x) {
  auto t = e.typeOf(x);
  return e.splat(RankedTensorType::get({}, t.getElementType()),
                 static_cast<double>(t.getNumElements()));
}

} // namespace

bool mlir::anvil::mayDependOnFloatArgument(Value value) {
  SmallVector<Value> worklist = {value};
  llvm::SmallPtrSet<Value, 16> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!seen.insert(v).second || !type ||
        !isa<FloatType>(type.getElementType()))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def)
      return true; // a float block argument
    if (isa<StopGradientOp>(def) ||
        def->hasTrait<OpTrait::anvil::NonDifferentiable>())
      continue;
    worklist.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define ANVIL_UNARY_VJP(OpTy, BODY)                                            \
  LogicalResult OpTy::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,      \
                               SmallVectorImpl<Value> &out) {                  \
    Emit e{builder, getLoc()};                                                 \
    Value g = grads[0], x = getOperand(), y = getResult();                     \
    (void)e;                                                                   \
    (void)g;                                                                   \
    (void)x;                                                                   \
    (void)y;                                                                   \
    out.push_back(BODY);                                                       \
    return success();                                                          \
  }

ANVIL_UNARY_VJP(NegOp, e.neg(g))
// sign(x) g, with sign(0) = 0.
ANVIL_UNARY_VJP(
    AbsOp, e.select(e.cmp(ComparisonDirection::gt, x, e.like(x, 0)), g,
                    e.select(e.cmp(ComparisonDirection::lt, x, e.like(x, 0)),
                             e.neg(g), e.like(x, 0))))
ANVIL_UNARY_VJP(ExpOp, e.mul(g, y))
ANVIL_UNARY_VJP(LogOp, e.div(g, x))
// d sqrt(x) = 1 / (2 sqrt(x))
ANVIL_UNARY_VJP(SqrtOp, e.div(e.scale(g, 0.5), y))
// d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
ANVIL_UNARY_VJP(RsqrtOp, e.mul(e.scale(g, -0.5), e.mul(y, e.mul(y, y))))
// d tanh = 1 - y^2
ANVIL_UNARY_VJP(TanhOp, e.mul(g, e.sub(e.like(y, 1), e.mul(y, y))))
ANVIL_UNARY_VJP(CosOp, e.neg(e.mul(g, SinOp::create(builder, getLoc(), x))))
ANVIL_UNARY_VJP(SinOp, e.mul(g, CosOp::create(builder, getLoc(), x)))
// d erf = 2 / sqrt(pi) exp(-x^2)
ANVIL_UNARY_VJP(ErfOp,
                e.mul(e.scale(g, 2.0 / std::sqrt(M_PI)),
                      ExpOp::create(builder, getLoc(), e.neg(e.mul(x, x)))))
// d sigmoid = y (1 - y)
ANVIL_UNARY_VJP(SigmoidOp, e.mul(g, e.mul(y, e.sub(e.like(y, 1), y))))
// d x s(x) = s (1 + x (1 - s))
ANVIL_UNARY_VJP(SiluOp, [&] {
  Value s = SigmoidOp::create(builder, getLoc(), x);
  return e.mul(g,
               e.mul(s, e.add(e.like(x, 1), e.mul(x, e.sub(e.like(x, 1), s)))));
}())
ANVIL_UNARY_VJP(ReluOp,
                e.select(e.cmp(ComparisonDirection::gt, x, e.like(x, 0)), g,
                         e.like(x, 0)))
ANVIL_UNARY_VJP(StopGradientOp, Value())
#undef ANVIL_UNARY_VJP

/// `g` over the ranks of `op`'s axis when the collective takes a mean.
static Value meanOverRanks(OpBuilder &builder, Operation *op, CollectiveOp kind,
                           StringRef axis, Value g) {
  if (kind != CollectiveOp::mean)
    return g;
  int64_t ranks = std::max<int64_t>(meshAxisSize(op, axis), 1);
  Emit e{builder, op->getLoc()};
  return e.scale(g, 1.0 / static_cast<double>(ranks));
}

// A result the same on every rank: each rank's operand gets its gradient
// (divided by the ranks for a mean).
LogicalResult AllReduceOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  if (getOp() == CollectiveOp::max)
    return emitOpError("an all-reduce max has no gradient");
  out.push_back(meanOverRanks(builder, *this, getOp(), getAxis(), grads[0]));
  return success();
}

// The operand feeds every rank's computation: its gradient is their sum.
LogicalResult AxisCopyOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                   SmallVectorImpl<Value> &out) {
  out.push_back(AllReduceOp::create(builder, getLoc(), CollectiveOp::sum,
                                    grads[0], getAxis()));
  return success();
}

// Each rank's block of the result came from every rank's operand: the
// operand's gradient gathers the blocks' gradients.
LogicalResult ReduceScatterOp::buildVJP(OpBuilder &builder,
                                        ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  if (getOp() == CollectiveOp::max)
    return emitOpError("a reduce-scatter max has no gradient");
  Value g = AllGatherOp::create(builder, getLoc(), getOperand().getType(),
                                grads[0], getAxis());
  out.push_back(meanOverRanks(builder, *this, getOp(), getAxis(), g));
  return success();
}

// The gathered result feeds each rank's own computation: the operand's
// gradient is its block of the sum of the ranks' gradients.
LogicalResult AllGatherOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(
      ReduceScatterOp::create(builder, getLoc(), getOperand().getType(),
                              CollectiveOp::sum, grads[0], getAxis()));
  return success();
}

Value Emit::geluDerivative(GeluApproximation approximation, Value x) {
  Emit &e = *this;
  OpBuilder &builder = b;
  Value half = e.like(x, 0.5), one = e.like(x, 1.0);
  Value d;
  if (approximation == GeluApproximation::erf) {
    // Phi(x) + x phi(x): Phi = (1 + erf(x / sqrt 2)) / 2,
    // phi = exp(-x^2 / 2) / sqrt(2 pi).
    Value cdf = e.mul(
        half, e.add(one, ErfOp::create(builder, loc, e.scale(x, M_SQRT1_2))));
    Value pdf = e.scale(ExpOp::create(builder, loc, e.scale(e.mul(x, x), -0.5)),
                        1.0 / std::sqrt(2.0 * M_PI));
    d = e.add(cdf, e.mul(x, pdf));
  } else {
    // u = c (x + a x^3), t = tanh(u):
    // d = (1 + t) / 2 + x (1 - t^2) c (1 + 3 a x^2) / 2.
    const double c = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value x2 = e.mul(x, x);
    Value u = e.scale(e.add(x, e.scale(e.mul(x2, x), a)), c);
    Value t = TanhOp::create(builder, loc, u);
    Value du = e.scale(e.add(one, e.scale(x2, 3 * a)), c);
    d = e.add(e.mul(half, e.add(one, t)),
              e.mul(e.mul(half, x), e.mul(e.sub(one, e.mul(t, t)), du)));
  }
  return d;
}

LogicalResult GeluOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  out.push_back(
      e.mul(grads[0], e.geluDerivative(getApproximation(), getOperand())));
  return success();
}

LogicalResult AddOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  out.append({grads[0], grads[0]});
  return success();
}

LogicalResult SubOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  out.append({grads[0], e.neg(grads[0])});
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  out.append({e.mul(grads[0], getRhs()), e.mul(grads[0], getLhs())});
  return success();
}

LogicalResult DivOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  // d(a/b) = da / b - a db / b^2 = (da - y db) / b
  Emit e{builder, getLoc()};
  Value gOverB = e.div(grads[0], getRhs());
  out.append({gOverB, e.neg(e.mul(gOverB, getResult()))});
  return success();
}

LogicalResult PowOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  // d a^b / da = b a^(b-1); d a^b / db = a^b log a (a > 0).
  Emit e{builder, getLoc()};
  Value a = getLhs(), p = getRhs(), g = grads[0];
  Value aPowBm1 = PowOp::create(builder, getLoc(), a, e.sub(p, e.like(p, 1)));
  out.push_back(e.mul(g, e.mul(p, aPowBm1)));
  out.push_back(
      e.mul(g, e.mul(getResult(), LogOp::create(builder, getLoc(), a))));
  return success();
}

/// max/min: the gradient goes to the operand that was chosen (ties: lhs).
static void chooseVJP(Emit &e, ComparisonDirection d, Value lhs, Value rhs,
                      Value g, SmallVectorImpl<Value> &out) {
  Value lhsWins = e.cmp(d, lhs, rhs);
  Value zero = e.like(g, 0);
  out.append({e.select(lhsWins, g, zero), e.select(lhsWins, zero, g)});
}

LogicalResult MaxOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  chooseVJP(e, ComparisonDirection::ge, getLhs(), getRhs(), grads[0], out);
  return success();
}

LogicalResult MinOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  chooseVJP(e, ComparisonDirection::le, getLhs(), getRhs(), grads[0], out);
  return success();
}

LogicalResult SelectOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  Value zero = e.like(grads[0], 0);
  out.append({Value(), e.select(getCondition(), grads[0], zero),
              e.select(getCondition(), zero, grads[0])});
  return success();
}

LogicalResult CastOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  // Only float-to-float casts pass gradients (back in the operand's type).
  if (!isFloatTensor(getOperand()) || !isFloatTensor(getResult())) {
    out.push_back(Value());
    return success();
  }
  out.push_back(
      CastOp::create(builder, getLoc(), getOperand().getType(), grads[0]));
  return success();
}

LogicalResult DropoutOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  // The mask is a function of (seed, index, rate): the same dropout applied
  // to g zeroes and scales exactly the elements the forward pass did.
  out.push_back(
      DropoutOp::create(builder, getLoc(), grads[0], getSeed(), getRate()));
  out.push_back(Value());
  return success();
}

LogicalResult Fp8QuantizeOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &out) {
  // Straight through the forward quantization; the gradient is quantized
  // with the backward format, if any. A given scale has no gradient.
  out.push_back(quantizeGradient(builder, grads[0]));
  if (getScale())
    out.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  out.push_back(e.reshape(grads[0], getOperand().getType()));
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out.push_back(e.transpose(grads[0], inverse));
  return success();
}

LogicalResult BroadcastOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  // Sum g over the result dimensions that are new or stretched from 1,
  // then restore the operand's shape (its size-1 dimensions).
  Emit e{builder, getLoc()};
  auto in = getOperand().getType();
  auto res = getType();
  ArrayRef<int64_t> dims = getDimensions();
  SmallVector<int64_t> summed;
  for (int64_t d = 0; d < res.getRank(); ++d) {
    auto it = llvm::find(dims, d);
    if (it == dims.end() ||
        (in.getDimSize(it - dims.begin()) == 1 && res.getDimSize(d) != 1))
      summed.push_back(d);
  }
  Value g = grads[0];
  if (!summed.empty()) {
    // Marked as a broadcast's gradient: anvil-gemm-epilogues may take a
    // bias's from its weight's GEMM.
    g = e.sum(grads[0], summed, false);
    if (auto sum = g.getDefiningOp<ReduceSumOp>())
      sum->setAttr(AnvilDialect::kBroadcastGradAttrName, builder.getUnitAttr());
  }
  out.push_back(e.reshape(g, in));
  return success();
}

/// The gradient of taking `indices` along `axis` of a tensor of `type`:
/// move the index dimensions of `g` to the front, flatten the rest, scatter
/// the rows with embedding_grad, and move the axis back.
static Value scatterAlong(Emit &e, Value g, Value indices, int64_t axis,
                          RankedTensorType type) {
  auto gt = e.typeOf(g);
  int64_t k = e.typeOf(indices).getRank(), rank = type.getRank();
  SmallVector<int64_t> perm;
  for (int64_t d = axis; d < axis + k; ++d)
    perm.push_back(d);
  for (int64_t d = 0; d < axis; ++d)
    perm.push_back(d);
  for (int64_t d = axis + k; d < gt.getRank(); ++d)
    perm.push_back(d);
  Value moved = e.transpose(g, perm);
  int64_t rest = type.getNumElements() / type.getDimSize(axis);
  SmallVector<int64_t> rows(e.typeOf(indices).getShape());
  rows.push_back(rest);
  Value flat = e.reshape(moved, gt.clone(rows));
  Value table =
      EmbeddingGradOp::create(e.b, e.loc, flat, indices, type.getDimSize(axis));
  SmallVector<int64_t> unflat{type.getDimSize(axis)};
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      unflat.push_back(type.getDimSize(d));
  Value back = e.reshape(table, type.clone(unflat));
  SmallVector<int64_t> inverse;
  for (int64_t d = 1; d <= axis; ++d)
    inverse.push_back(d);
  inverse.push_back(0);
  for (int64_t d = axis + 1; d < rank; ++d)
    inverse.push_back(d);
  return e.transpose(back, inverse);
}

LogicalResult SliceOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                SmallVectorImpl<Value> &out) {
  // Dimension by dimension, undo the slice: padding for unit strides,
  // a scatter of rows start + i * stride otherwise.
  Emit e{builder, getLoc()};
  auto in = getOperand().getType();
  Value g = grads[0];
  for (int64_t d = 0; d < in.getRank(); ++d) {
    auto cur = e.typeOf(g);
    SmallVector<int64_t> full(cur.getShape());
    full[d] = in.getDimSize(d);
    auto target = cur.clone(full);
    if (getStride()[d] == 1) {
      SmallVector<int64_t> low(cur.getRank(), 0), high(cur.getRank(), 0);
      low[d] = getStart()[d];
      high[d] = in.getDimSize(d) - getLimit()[d];
      if (low[d] || high[d])
        g = PadOp::create(builder, getLoc(), g, low, high, llvm::APFloat(0.0));
      continue;
    }
    auto idxType =
        RankedTensorType::get({cur.getDimSize(d)}, builder.getI64Type());
    SmallVector<APInt> rows;
    for (int64_t i = 0; i < cur.getDimSize(d); ++i)
      rows.push_back(APInt(64, getStart()[d] + i * getStride()[d]));
    Value indices = ConstantOp::create(builder, getLoc(), idxType,
                                       DenseElementsAttr::get(idxType, rows));
    g = scatterAlong(e, g, indices, d, target);
  }
  out.push_back(g);
  return success();
}

LogicalResult PadOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                              SmallVectorImpl<Value> &out) {
  auto in = getOperand().getType();
  SmallVector<int64_t> limit, stride(in.getRank(), 1);
  for (int64_t d = 0; d < in.getRank(); ++d)
    limit.push_back(getLow()[d] + in.getDimSize(d));
  out.push_back(
      SliceOp::create(builder, getLoc(), grads[0], getLow(), limit, stride));
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  int64_t dim = getDim(), offset = 0;
  auto res = getType();
  for (Value input : getInputs()) {
    auto t = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> start(res.getRank(), 0), limit(res.getShape()),
        stride(res.getRank(), 1);
    start[dim] = offset;
    limit[dim] = offset + t.getDimSize(dim);
    offset += t.getDimSize(dim);
    out.push_back(
        SliceOp::create(builder, getLoc(), grads[0], start, limit, stride));
  }
  return success();
}

LogicalResult SplitOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  SmallVector<Value> pieces;
  for (unsigned i = 0; i < getNumResults(); ++i)
    pieces.push_back(gradOrZero(e, *this, grads, i));
  out.push_back(ConcatOp::create(builder, getLoc(), pieces, getDim()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

/// g (reduced over `dims`) broadcast back to `type`.
static Value unreduceGrad(Emit &e, Value g, RankedTensorType type,
                          ArrayRef<int64_t> dims) {
  SmallVector<int64_t> kept(type.getShape());
  for (int64_t d : dims)
    kept[d] = 1;
  return e.unreduce(e.reshape(g, type.clone(kept)), type);
}

LogicalResult ReduceSumOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  out.push_back(unreduceGrad(e, grads[0], getOperand().getType(), getDims()));
  return success();
}

LogicalResult ReduceMeanOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  auto in = getOperand().getType();
  double count = 1;
  for (int64_t d : getDims())
    count *= in.getDimSize(d);
  out.push_back(e.scale(unreduceGrad(e, grads[0], in, getDims()), 1.0 / count));
  return success();
}

/// max/min reductions: g is shared evenly by the elements equal to the
/// extremum (a subgradient also when several tie, as in PyTorch's amax).
template <typename OpTy>
static LogicalResult extremumVJP(OpTy op, OpBuilder &builder,
                                 ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  Emit e{builder, op.getLoc()};
  auto in = op.getOperand().getType();
  Value y = unreduceGrad(e, op.getResult(), in, op.getDims());
  Value g = unreduceGrad(e, grads[0], in, op.getDims());
  Value hit = e.maskOf(e.cmp(ComparisonDirection::eq, op.getOperand(), y),
                       op.getOperand());
  Value ties = e.unreduce(e.sum(hit, op.getDims(), true), in);
  out.push_back(e.div(e.mul(g, hit), ties));
  return success();
}

LogicalResult ReduceMaxOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  return extremumVJP(*this, builder, grads, out);
}

LogicalResult ReduceMinOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  return extremumVJP(*this, builder, grads, out);
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  // y (g - sum(g y)) along dim.
  Emit e{builder, getLoc()};
  Value y = getResult(), g = grads[0];
  int64_t dim = getDim();
  Value s = e.unreduce(e.sum(e.mul(g, y), {dim}, true), y.getType());
  out.push_back(e.mul(y, e.sub(g, s)));
  return success();
}

LogicalResult LogSoftmaxOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  // g - exp(y) sum(g) along dim.
  Emit e{builder, getLoc()};
  Value y = getResult(), g = grads[0];
  Value s =
      e.unreduce(e.sum(g, {static_cast<int64_t>(getDim())}, true), y.getType());
  out.push_back(
      e.sub(g, e.mul(ExpOp::create(builder, getLoc(), y).getResult(), s)));
  return success();
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// The gradients of the product C = A' B' (A' = op(A), B' = op(B)) with
/// respect to `a` and `b`, for C's gradient `g`: dA' = g B'^T, dB' = A'^T
/// g.
static void matmulGrads(OpBuilder &builder, Location loc, Value a, Value b,
                        Value g, bool ta, bool tb,
                        SmallVectorImpl<Value> &out) {
  Emit e{builder, loc};
  int64_t rank = cast<RankedTensorType>(g.getType()).getRank();
  SmallVector<int64_t> swapLast(range(0, rank));
  std::swap(swapLast[rank - 1], swapLast[rank - 2]);

  // dA: g B'^T, transposed back when A was transposed.
  Value dA = MatmulOp::create(builder, loc, g, b, /*transpose_lhs=*/false,
                              /*transpose_rhs=*/!tb);
  if (ta)
    dA = e.transpose(dA, swapLast);

  // dB: A'^T g per batch; a shared (rank-2) B sums over the batch. With A
  // stored (batch, M, K), one GEMM whose contraction runs over every
  // batch's rows (the batch folded into M) does both: it accumulates all
  // of it, as a narrow-float GEMM must (in f32), and writes no (batch, K,
  // N) partial products. (A transposed A's rows are not the batch's rows:
  // it keeps the product per batch and the sum.)
  bool shared = cast<RankedTensorType>(b.getType()).getRank() == 2 && rank > 2;
  bool foldBatch = shared && !ta &&
                   cast<RankedTensorType>(a.getType()).hasStaticShape() &&
                   cast<RankedTensorType>(g.getType()).hasStaticShape();
  if (foldBatch) {
    auto rows = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      int64_t n = 1;
      for (int64_t d = 0; d < rank - 1; ++d)
        n *= t.getDimSize(d);
      return e.reshape(v, RankedTensorType::get({n, t.getDimSize(rank - 1)},
                                                t.getElementType()));
    };
    a = rows(a);
    g = rows(g);
  }
  Value dB;
  if (!tb)
    dB = MatmulOp::create(builder, loc, a, g, /*transpose_lhs=*/!ta,
                          /*transpose_rhs=*/false);
  else
    dB = MatmulOp::create(builder, loc, g, a, /*transpose_lhs=*/true,
                          /*transpose_rhs=*/ta);
  if (shared && !foldBatch)
    dB = e.sum(dB, range(0, rank - 2), false);
  out.append({dA, dB});
}

LogicalResult MatmulOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  matmulGrads(builder, getLoc(), getLhs(), getRhs(), grads[0],
              getTransposeLhs(), getTransposeRhs(), out);
  return success();
}

LogicalResult LinearGeluOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  // `pre` is for this gradient; a gradient reaching it (its users
  // differentiated) would add to d, which the fused epilogue does not take.
  if (grads.size() > 1 && grads[1])
    return emitOpError("a gradient flows into 'pre' (its users are "
                       "differentiated); only the result's is supported");
  Emit e{builder, getLoc()};
  auto epilogue = GeluBiasGradOp::create(
      builder, getLoc(), gradOrZero(e, *this, grads, 0), getPre());
  matmulGrads(builder, getLoc(), getLhs(), getRhs(), epilogue.getPreGrad(),
              /*ta=*/false, getTransposeRhs(), out);
  out.push_back(epilogue.getBiasGrad());
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  // xh = (x - mean) r with r = 1 / sqrt(var + eps); y = xh gamma + beta.
  // dgamma = sum_rows(g xh), dbeta = sum_rows(g), and with dxh = g gamma:
  // dx = r (dxh - mean(dxh) - xh mean(dxh xh)), means over the normalized
  // dimensions. The statistics are recomputed from x.
  Emit e{builder, getLoc()};
  Value x = getOperand(), g = grads[0];
  auto type = getOperand().getType();
  int64_t axis = getAxis(), rank = type.getRank();
  SmallVector<int64_t> normDims = range(axis, rank), rowDims = range(0, axis);
  Value mu = e.unreduce(e.mean(x, normDims, true), type);
  Value xc = e.sub(x, mu);
  Value var = e.mean(e.mul(xc, xc), normDims, true);
  Value r = e.unreduce(
      RsqrtOp::create(builder, getLoc(),
                      e.add(var, e.like(var, getEpsilon().convertToDouble()))),
      type);
  Value xh = e.mul(xc, r);
  SmallVector<int64_t> featureDims = range(axis, rank);
  auto bcastFeature = [&](Value v) {
    return e.broadcast(v, type, featureDims);
  };
  Value dxh = getScale() ? e.mul(g, bcastFeature(getScale())) : g;
  Value m1 = e.unreduce(e.mean(dxh, normDims, true), type);
  Value m2 = e.unreduce(e.mean(e.mul(dxh, xh), normDims, true), type);
  out.push_back(e.mul(r, e.sub(e.sub(dxh, m1), e.mul(xh, m2))));
  auto rowsSum = [&](Value v) {
    return rowDims.empty() ? v : e.sum(v, rowDims, false);
  };
  if (getScale())
    out.push_back(rowsSum(e.mul(g, xh)));
  if (getBias())
    out.push_back(rowsSum(g));
  return success();
}

LogicalResult RMSNormOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  // y = x r gamma, r = 1 / sqrt(mean(x^2) + eps). With dz = g gamma:
  // dx = r dz - x r^3 mean(dz x); dgamma = sum_rows(g x r).
  Emit e{builder, getLoc()};
  Value x = getOperand(), g = grads[0];
  auto type = getOperand().getType();
  int64_t axis = getAxis(), rank = type.getRank();
  SmallVector<int64_t> normDims = range(axis, rank), rowDims = range(0, axis);
  Value ms = e.mean(e.mul(x, x), normDims, true);
  Value r = e.unreduce(
      RsqrtOp::create(builder, getLoc(),
                      e.add(ms, e.like(ms, getEpsilon().convertToDouble()))),
      type);
  Value dz = getScale() ? e.mul(g, e.broadcast(getScale(), type, normDims)) : g;
  Value m = e.unreduce(e.mean(e.mul(dz, x), normDims, true), type);
  out.push_back(e.sub(e.mul(r, dz), e.mul(e.mul(x, e.mul(r, e.mul(r, r))), m)));
  if (getScale()) {
    Value gs = e.mul(g, e.mul(x, r));
    out.push_back(rowDims.empty() ? gs : e.sum(gs, rowDims, false));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RoPE, upsampling
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  // The rotation's transpose is the rotation by -theta: rope(g, cos, -sin).
  // The tables are treated as constants (no gradient).
  Emit e{builder, getLoc()};
  out.push_back(RopeOp::create(builder, getLoc(), grads[0], getCos(),
                               e.neg(getSin()), getInterleaved()));
  out.append({Value(), Value()});
  return success();
}

LogicalResult UpsampleNearestOp::buildVJP(OpBuilder &builder,
                                          ArrayRef<Value> grads,
                                          SmallVectorImpl<Value> &out) {
  // Each input element was copied to a scale-sized block: sum the block,
  // an average pool times the block size.
  Emit e{builder, getLoc()};
  ArrayRef<int64_t> scale = getScale();
  SmallVector<int64_t> zeros(scale.size(), 0);
  double block = 1;
  for (int64_t s : scale)
    block *= s;
  Value pooled = AvgPoolOp::create(builder, getLoc(), grads[0], scale, scale,
                                   zeros, zeros, /*count_include_pad=*/false);
  out.push_back(e.scale(pooled, block));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &builder,
                                       ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  // dz = (softmax(z) - t) w per kept row, t = (1 - s) onehot(label) + s / C,
  // w the row's weight from the reduction; ignored rows get 0.
  Emit e{builder, getLoc()};
  Value z = getLogits();
  auto zType = getLogits().getType();
  int64_t rank = zType.getRank(), classes = zType.getDimSize(rank - 1);
  double s = getLabelSmoothing().convertToDouble();

  LabelMasks masks = emitLabelMasks(e, *this);
  Value onehot = masks.onehot, kept = masks.kept;
  Value count = emitKeptCount(e, kept);
  Value w = lossScale(e, getReduction(), grads[0], kept.getType(), count);
  Value rowWeight = e.broadcast(e.mul(w, kept), zType, range(0, rank - 1));
  Value target = e.add(e.scale(onehot, 1.0 - s),
                       e.like(z, s / static_cast<double>(classes)));
  // softmax(z) from the row's log-sum-exp, which the forward's
  // decomposition computes alike (one after CSE).
  Value p = ExpOp::create(builder, getLoc(),
                          e.sub(z, e.unreduce(emitRowLogSumExp(e, z), zType)));
  out.push_back(e.mul(e.sub(p, target), rowWeight));
  out.push_back(Value());
  return success();
}

LogicalResult MSELossOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  // d (x - t)^2 = 2 (x - t) dx - 2 (x - t) dt.
  Emit e{builder, getLoc()};
  Value x = getInput();
  Value count = elementCount(e, x);
  Value w = lossScale(e, getReduction(), grads[0], x.getType(), count);
  Value dx = e.mul(e.scale(e.sub(x, getTarget()), 2.0), w);
  out.append({dx, e.neg(dx)});
  return success();
}

LogicalResult BCEWithLogitsLossOp::buildVJP(OpBuilder &builder,
                                            ArrayRef<Value> grads,
                                            SmallVectorImpl<Value> &out) {
  // d/dx = sigmoid(x) - t, d/dt = -x.
  Emit e{builder, getLoc()};
  Value x = getInput();
  Value count = elementCount(e, x);
  Value w = lossScale(e, getReduction(), grads[0], x.getType(), count);
  Value dx =
      e.mul(e.sub(SigmoidOp::create(builder, getLoc(), x), getTarget()), w);
  out.append({dx, e.mul(e.neg(x), w)});
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings and attention
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  // Scatter-add the gradient rows into the table.
  out.push_back(EmbeddingGradOp::create(builder, getLoc(), grads[0],
                                        getIndices(),
                                        getTable().getType().getDimSize(0)));
  out.push_back(Value());
  return success();
}

LogicalResult EmbeddingBagOp::buildVJP(OpBuilder &builder,
                                       ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  // Every member of bag b receives g[b] (divided by L for mean).
  Emit e{builder, getLoc()};
  auto ids = getIndices().getType();
  int64_t bags = ids.getDimSize(0), size = ids.getDimSize(1);
  int64_t width = getTable().getType().getDimSize(1);
  auto spread = getType().clone({bags, size, width});
  Value g = e.broadcast(grads[0], spread, {0, 2});
  if (getMode() == BagMode::mean)
    g = e.scale(g, 1.0 / static_cast<double>(size));
  out.push_back(EmbeddingGradOp::create(builder, getLoc(), g, getIndices(),
                                        getTable().getType().getDimSize(0)));
  out.push_back(Value());
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  // Recompute P = softmax(S) with S = q k^T scale + mask (+ causal -inf),
  // with k and v repeated to the query heads (GQA), then
  //   dv = P^T g, dP = g v^T, dS = P (dP - sum(dP P)), dq = dS k scale,
  //   dk = dS^T q scale, dmask = dS (summed to the mask's shape),
  // and sum dk, dv over the query heads that share a key/value head.
  Emit e{builder, getLoc()};
  Value q = getQuery(), g = grads[0];
  auto qt = getQuery().getType(), kt = getKey().getType(),
       vt = getValue().getType();
  int64_t b = qt.getDimSize(0), hq = qt.getDimSize(1), tq = qt.getDimSize(2),
          hkv = kt.getDimSize(1), tk = kt.getDimSize(2), group = hq / hkv;
  auto sType = qt.clone({b, hq, tq, tk});
  auto unrepeat = [&](Value x, RankedTensorType t) -> Value {
    if (group == 1)
      return x;
    int64_t len = t.getDimSize(2), width = t.getDimSize(3);
    Value x5 = e.reshape(x, t.clone({b, hkv, group, len, width}));
    return e.sum(x5, {2}, false);
  };
  AttentionParts parts = emitAttentionProbabilities(e, *this);
  Value kr = parts.keys, vr = parts.values, p = parts.probs;
  double scale = parts.scale;
  Value dvr = emitAttentionProduct(e, *this, p, g, true, false);
  Value dp = emitAttentionProduct(e, *this, g, vr, false, true);
  Value rowDot = e.unreduce(e.sum(e.mul(dp, p), {3}, true), sType);
  Value ds = e.mul(p, e.sub(dp, rowDot));
  Value dss = e.scale(ds, scale);
  Value dq = emitAttentionProduct(e, *this, dss, kr, false, false);
  Value dkr = emitAttentionProduct(e, *this, dss, q, true, false);
  out.push_back(dq);
  out.push_back(unrepeat(dkr, kt));
  out.push_back(unrepeat(dvr, vt));
  if (Value mask = getMask()) {
    auto mt = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> summed;
    if (mt.getRank() == 2) {
      summed = {0, 1};
    } else {
      for (int64_t dim = 0; dim < 2; ++dim)
        if (mt.getDimSize(dim) == 1 && sType.getDimSize(dim) != 1)
          summed.push_back(dim);
    }
    Value dm = summed.empty() ? ds : e.sum(ds, summed, false);
    out.push_back(e.reshape(dm, mt));
  }
  return success();
}

LogicalResult FlashAttentionOp::buildVJP(OpBuilder &builder,
                                         ArrayRef<Value> grads,
                                         SmallVectorImpl<Value> &out) {
  // The fused gradient recomputes the probabilities from the saved
  // log-sum-exp; a gradient reaching lse itself would add P * dlse to dS,
  // which the fused kernels do not take.
  if (grads.size() > 1 && grads[1])
    return emitOpError("a gradient flows into 'lse' (its users are "
                       "differentiated); only the result's is supported");
  // The fused kernels give the key bias no gradient: it must be data.
  Value keyBias = getKeyBias();
  if (keyBias && mayDependOnFloatArgument(keyBias))
    return emitOpError("its key_bias may depend on a float argument of the "
                       "function (a parameter), but the fused gradient gives "
                       "the key bias none; use anvil.attention with a mask");
  Emit e{builder, getLoc()};
  auto grad = FlashAttentionGradOp::create(
      builder, getLoc(), getQuery(), getKey(), getValue(), getResult(),
      getLse(), gradOrZero(e, *this, grads, 0), keyBias, getCausal(),
      getScaleAttr(), getBf16Gemms(), getBshd(), /*packed_grads=*/false);
  out.append(grad->result_begin(), grad->result_end());
  if (keyBias)
    out.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Output padding making conv_transpose invert the size of a window sweep:
/// (in + pad_low + pad_high - dilation (k - 1) - 1) mod stride.
static SmallVector<int64_t>
sweepRemainder(ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
               ArrayRef<int64_t> stride, ArrayRef<int64_t> padLow,
               ArrayRef<int64_t> padHigh, ArrayRef<int64_t> dilation) {
  SmallVector<int64_t> r;
  for (size_t i = 0; i < kernel.size(); ++i) {
    int64_t span = dilation[i] * (kernel[i] - 1) + 1;
    r.push_back((in[i] + padLow[i] + padHigh[i] - span) % stride[i]);
  }
  return r;
}

/// Sum over every dimension but the channels (1): the gradient of a bias.
static Value channelSum(Emit &e, Value g) {
  SmallVector<int64_t> dims{0};
  for (int64_t d = 2; d < e.typeOf(g).getRank(); ++d)
    dims.push_back(d);
  return e.sum(g, dims, false);
}

LogicalResult ConvOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                               SmallVectorImpl<Value> &out) {
  // dx: the transposed convolution of g with the same filter; dw: the
  // filter gradient; db: g summed over batch and space.
  Emit e{builder, getLoc()};
  Value g = grads[0];
  auto in = getInput().getType();
  auto f = getFilter().getType();
  ArrayRef<int64_t> kernel = f.getShape().drop_front(2);
  SmallVector<int64_t> outPad =
      sweepRemainder(in.getShape().drop_front(2), kernel, getStride(),
                     getPadLow(), getPadHigh(), getDilation());
  out.push_back(ConvTransposeOp::create(
      builder, getLoc(), g, getFilter(), Value(), getStride(), getPadLow(),
      getPadHigh(), getDilation(), outPad, getGroups()));
  out.push_back(ConvFilterGradOp::create(
      builder, getLoc(), getInput(), g, kernel, getStride(), getPadLow(),
      getPadHigh(), getDilation(), getGroups()));
  if (getBias())
    out.push_back(channelSum(e, g));
  return success();
}

LogicalResult ConvTransposeOp::buildVJP(OpBuilder &builder,
                                        ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  // dx: the forward convolution of g with the same filter (cropped when
  // the output padding made the result longer); dw: the filter gradient
  // with the roles of input and gradient swapped.
  Emit e{builder, getLoc()};
  Value g = grads[0];
  auto in = getInput().getType();
  ArrayRef<int64_t> kernel = getFilter().getType().getShape().drop_front(2);
  Value dx =
      ConvOp::create(builder, getLoc(), g, getFilter(), Value(), getStride(),
                     getPadLow(), getPadHigh(), getDilation(), getGroups());
  if (dx.getType() != in) {
    SmallVector<int64_t> zeros(in.getRank(), 0), ones(in.getRank(), 1);
    dx = SliceOp::create(builder, getLoc(), dx, zeros, in.getShape(), ones);
  }
  out.push_back(dx);
  out.push_back(ConvFilterGradOp::create(
      builder, getLoc(), g, getInput(), kernel, getStride(), getPadLow(),
      getPadHigh(), getDilation(), getGroups()));
  if (getBias())
    out.push_back(channelSum(e, g));
  return success();
}

LogicalResult MaxPoolOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  out.push_back(MaxPoolGradOp::create(builder, getLoc(), getOperand(), grads[0],
                                      getWindow(), getStride(), getPadLow(),
                                      getPadHigh()));
  return success();
}

LogicalResult AvgPoolOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                  SmallVectorImpl<Value> &out) {
  // Each output spreads g / count over its window: divide by the window's
  // count (a constant), then a depthwise transposed convolution with ones.
  Emit e{builder, getLoc()};
  auto in = getOperand().getType();
  auto res = getType();
  ArrayRef<int64_t> window = getWindow(), stride = getStride(),
                    lo = getPadLow(), hi = getPadHigh();
  int64_t spatial = in.getRank() - 2, channels = in.getDimSize(1);
  auto outSpatial = res.getShape().drop_front(2);
  // The count of a window is a product over the spatial dimensions, so the
  // weights 1 / count are built from one short vector per dimension (the
  // IR stays O(sum of sizes), not O(product)).
  auto countType = res.clone(outSpatial);
  const llvm::fltSemantics &sem =
      cast<FloatType>(res.getElementType()).getFloatSemantics();
  Value weights;
  for (int64_t s = 0; s < spatial; ++s) {
    SmallVector<APFloat> inv;
    for (int64_t o = 0; o < outSpatial[s]; ++o) {
      int64_t first = o * stride[s] - lo[s];
      int64_t from = std::max<int64_t>(first, 0);
      int64_t to = std::min<int64_t>(first + window[s], in.getDimSize(s + 2));
      double count = getCountIncludePad() ? window[s] : double(to - from);
      APFloat v(1.0 / count);
      bool losesInfo;
      v.convert(sem, APFloat::rmNearestTiesToEven, &losesInfo);
      inv.push_back(v);
    }
    auto vecType = res.clone({outSpatial[s]});
    Value vec = ConstantOp::create(builder, getLoc(), vecType,
                                   DenseElementsAttr::get(vecType, inv));
    Value spread = e.broadcast(vec, countType, {s});
    weights = weights ? e.mul(weights, spread) : spread;
  }
  SmallVector<int64_t> spatialDims =
      llvm::to_vector(llvm::seq<int64_t>(2, res.getRank()));
  Value gw = e.mul(grads[0], e.broadcast(weights, res, spatialDims));
  SmallVector<int64_t> filterShape{channels, 1};
  llvm::append_range(filterShape, window);
  Value ones = e.splat(res.clone(filterShape), 1.0);
  SmallVector<int64_t> dilation(spatial, 1);
  SmallVector<int64_t> outPad = sweepRemainder(
      in.getShape().drop_front(2), window, stride, lo, hi, dilation);
  out.push_back(ConvTransposeOp::create(builder, getLoc(), gw, ones, Value(),
                                        stride, lo, hi, dilation, outPad,
                                        channels));
  return success();
}

//===----------------------------------------------------------------------===//
// Channel normalizations
//===----------------------------------------------------------------------===//

namespace {
/// The gradient through x^ = (x - mean) r, r = 1 / sqrt(var + eps), with the
/// statistics over `dims` of `x` (a view of the operand): given dxh = dL/dx^,
/// dx = r (dxh - mean(dxh) - x^ mean(dxh x^)). Returns dx and x^.
std::pair<Value, Value> normalizedVJP(Emit &e, Value x, Value dxh,
                                      ArrayRef<int64_t> dims, double eps) {
  Type type = x.getType();
  Value mu = e.unreduce(e.mean(x, dims, true), type);
  Value xc = e.sub(x, mu);
  Value var = e.mean(e.mul(xc, xc), dims, true);
  Value r = e.unreduce(
      RsqrtOp::create(e.b, e.loc, e.add(var, e.like(var, eps))), type);
  Value xh = e.mul(xc, r);
  Value m1 = e.unreduce(e.mean(dxh, dims, true), type);
  Value m2 = e.unreduce(e.mean(e.mul(dxh, xh), dims, true), type);
  return {e.mul(r, e.sub(e.sub(dxh, m1), e.mul(xh, m2))), xh};
}

/// Group normalization over a (N, groups, rest) view of (N, C, spatial...),
/// with per-channel scale and bias.
LogicalResult groupedNormVJP(Emit &e, Value x, Value g, Value scale, Value bias,
                             int64_t groups, double eps,
                             SmallVectorImpl<Value> &out) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t n = type.getDimSize(0);
  auto view = type.clone({n, groups, type.getNumElements() / (n * groups)});
  Value dxh = scale ? e.mul(g, e.broadcast(scale, type, {1})) : g;
  auto [dxv, xhv] =
      normalizedVJP(e, e.reshape(x, view), e.reshape(dxh, view), {2}, eps);
  out.push_back(e.reshape(dxv, type));
  Value xh = e.reshape(xhv, type);
  if (scale)
    out.push_back(channelSum(e, e.mul(g, xh)));
  if (bias)
    out.push_back(channelSum(e, g));
  return success();
}
} // namespace

LogicalResult GroupNormOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  return groupedNormVJP(e, getOperand(), grads[0], getScale(), getBias(),
                        getGroups(), getEpsilon().convertToDouble(), out);
}

LogicalResult InstanceNormOp::buildVJP(OpBuilder &builder,
                                       ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  return groupedNormVJP(e, getOperand(), grads[0], getScale(), getBias(),
                        getOperand().getType().getDimSize(1),
                        getEpsilon().convertToDouble(), out);
}

LogicalResult BatchNormTrainOp::buildVJP(OpBuilder &builder,
                                         ArrayRef<Value> grads,
                                         SmallVectorImpl<Value> &out) {
  // Statistics over every dimension but the channels; the batch mean and
  // variance results, when used, add mean'(x) = 1/M and var'(x) = 2 xc / M.
  Emit e{builder, getLoc()};
  Value x = getOperand();
  auto type = getOperand().getType();
  SmallVector<int64_t> dims{0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    dims.push_back(d);
  double m = static_cast<double>(type.getNumElements() / type.getDimSize(1));
  Value g = gradOrZero(e, *this, grads, 0);
  Value dxh = e.mul(g, e.broadcast(getScale(), type, {1}));
  auto [dx, xh] =
      normalizedVJP(e, x, dxh, dims, getEpsilon().convertToDouble());
  if (grads[1])
    dx = e.add(dx, e.scale(e.broadcast(grads[1], type, {1}), 1.0 / m));
  if (grads[2]) {
    Value xc = e.sub(x, e.unreduce(e.mean(x, dims, true), type));
    dx = e.add(dx,
               e.mul(e.scale(e.broadcast(grads[2], type, {1}), 2.0 / m), xc));
  }
  out.push_back(dx);
  out.push_back(channelSum(e, e.mul(g, xh)));
  out.push_back(channelSum(e, g));
  return success();
}

LogicalResult BatchNormInferenceOp::buildVJP(OpBuilder &builder,
                                             ArrayRef<Value> grads,
                                             SmallVectorImpl<Value> &out) {
  // y = (x - mean) r scale + bias, r = 1 / sqrt(variance + eps).
  Emit e{builder, getLoc()};
  auto type = getOperand().getType();
  Value g = grads[0];
  Value r = RsqrtOp::create(
      builder, getLoc(),
      e.add(getVariance(),
            e.like(getVariance(), getEpsilon().convertToDouble())));
  Value rb = e.broadcast(r, type, {1});
  Value sb = e.broadcast(getScale(), type, {1});
  Value xc = e.sub(getOperand(), e.broadcast(getMean(), type, {1}));
  Value gsr = e.mul(g, e.mul(sb, rb));
  out.push_back(gsr);
  out.push_back(channelSum(e, e.mul(g, e.mul(xc, rb))));
  out.push_back(channelSum(e, g));
  out.push_back(e.neg(channelSum(e, gsr)));
  Value r3 = e.mul(r, e.mul(r, r));
  out.push_back(
      e.mul(e.scale(channelSum(e, e.mul(g, e.mul(sb, xc))), -0.5), r3));
  return success();
}

//===----------------------------------------------------------------------===//
// Gather and strided slices: scatter-adds through embedding_grad
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                 SmallVectorImpl<Value> &out) {
  Emit e{builder, getLoc()};
  out.push_back(scatterAlong(e, grads[0], getIndices(), getAxis(),
                             getOperand().getType()));
  out.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Focal and Dice losses
//===----------------------------------------------------------------------===//

LogicalResult FocalLossOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  // L = a_t (1 - p_t)^gamma ce, p = sigmoid(x), ce = bce_with_logits(x, t),
  // p_t = p t + (1 - p)(1 - t), a_t = alpha t + (1 - alpha)(1 - t) (or 1).
  //   dL/dx = a_t [(1 - p_t)^gamma (p - t)
  //                - gamma (1 - p_t)^(gamma - 1) (2t - 1) p (1 - p) ce]
  //   dL/dt = da_t (1 - p_t)^gamma ce
  //           + a_t [(1 - p_t)^gamma (-x)
  //                  - gamma (1 - p_t)^(gamma - 1) (2p - 1) ce]
  Emit e{builder, getLoc()};
  Value x = getInput(), t = getTarget();
  double alpha = getAlpha().convertToDouble();
  double gamma = getGamma().convertToDouble();
  Value one = e.like(x, 1.0);
  Value p = SigmoidOp::create(builder, getLoc(), x);
  Value ce =
      BCEWithLogitsLossOp::create(builder, getLoc(), Reduction::none, x, t);
  Value q = e.sub(
      one, e.add(e.mul(p, t), e.mul(e.sub(one, p), e.sub(one, t)))); // 1 - p_t
  Value qg = PowOp::create(builder, getLoc(), q, e.like(x, gamma));
  Value qg1 = PowOp::create(builder, getLoc(), q, e.like(x, gamma - 1));
  Value at = alpha >= 0
                 ? e.add(e.scale(t, alpha), e.scale(e.sub(one, t), 1 - alpha))
                 : one;
  Value twoTm1 = e.sub(e.scale(t, 2.0), one);
  Value dx = e.mul(
      at, e.sub(e.mul(qg, e.sub(p, t)),
                e.mul(e.scale(qg1, gamma),
                      e.mul(twoTm1, e.mul(e.mul(p, e.sub(one, p)), ce)))));
  Value twoPm1 = e.sub(e.scale(p, 2.0), one);
  Value dt = e.mul(at, e.sub(e.mul(qg, e.neg(x)),
                             e.mul(e.scale(qg1, gamma), e.mul(twoPm1, ce))));
  if (alpha >= 0)
    dt = e.add(dt, e.scale(e.mul(qg, ce), 2 * alpha - 1));
  Value count = elementCount(e, x);
  Value w = lossScale(e, getReduction(), grads[0], x.getType(), count);
  out.append({e.mul(dx, w), e.mul(dt, w)});
  return success();
}

LogicalResult DiceLossOp::buildVJP(OpBuilder &builder, ArrayRef<Value> grads,
                                   SmallVectorImpl<Value> &out) {
  // Per (n, c): D = 1 - (2 I + s) / (P + T + s) with I = sum(p t),
  // P = sum(p), T = sum(t); with Z = P + T + s:
  //   dD/dp = -(2 t Z - (2 I + s)) / Z^2, dD/dt = -(2 p Z - (2 I + s)) / Z^2.
  Emit e{builder, getLoc()};
  Value p = getInput(), t = getTarget();
  auto type = getInput().getType();
  SmallVector<int64_t> spatial =
      llvm::to_vector(llvm::seq<int64_t>(2, type.getRank()));
  double smooth = getSmooth().convertToDouble();
  Value inter = e.sum(e.mul(p, t), spatial, false);
  Value z = e.add(e.add(e.sum(p, spatial, false), e.sum(t, spatial, false)),
                  e.like(inter, smooth));
  Value num = e.add(e.scale(inter, 2.0), e.like(inter, smooth));
  auto nc = type.clone(type.getShape().take_front(2));
  Value count = e.splat(RankedTensorType::get({}, type.getElementType()),
                        static_cast<double>(nc.getNumElements()));
  Value w = lossScale(e, getReduction(), grads[0], nc, count);
  Value invZ2 = e.div(w, e.mul(z, z)); // (N, C)
  auto up = [&](Value v) { return e.broadcast(v, type, {0, 1}); };
  Value zb = up(z), numb = up(num), sb = up(invZ2);
  out.push_back(e.neg(e.mul(e.sub(e.mul(e.scale(t, 2.0), zb), numb), sb)));
  out.push_back(e.neg(e.mul(e.sub(e.mul(e.scale(p, 2.0), zb), numb), sb)));
  return success();
}
