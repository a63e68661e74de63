//===- OnlineLogSumExp.cpp - a row's log-sum-exp in one pass --------------===//
//
// anvil-convert-to-linalg's `online-logsumexp`: the log-sum-exp of rows
// that anvil-decompose and the cross-entropy's VJP emit (emitRowLogSumExp),
//
//   m = reduce_max(z, [last], keep_dims)
//   s = reduce_sum(exp(z - broadcast(m)), [last], keep_dims)
//   lse = m + log(s)
//
// becomes one linalg.generic that reads z once and folds each row's
// maximum and sum of exponentials together (the online softmax's
// recurrence), term v after term:
//
//   m' = max(m, v)
//   e  = exp(min(m, v) - m')            (exp(-|v - m|): one exp a term)
//   s' = v > m ? s e + 1 : s + e        (the sum rescaled to the new max)
//
// from m = -FLT_MAX and s = 0. The lowest finite float, not -inf, keeps
// min(m, v) - m' from being -inf - -inf: a row of -inf terms keeps s = 0
// and lse = -FLT_MAX + log(0) = -inf (the two passes give NaN there:
// exp(-inf - -inf)). A +inf term gives +inf folded in order, NaN on a
// warp (whose partial sums combine through exp(inf - inf)) and in two
// passes. Otherwise the sums differ from the two passes' in rounding only
// (each term's exponential is taken against the maximum so far and
// rescaled when it grows). m is lse's alone (the pattern requires it): it
// is the row's maximum but for a row of -inf terms, where it is -FLT_MAX.
//
// The CUDA backend's warps fold rows of such a generic (warpFolds,
// MapReductions.cpp), where the cross-entropy's logits would otherwise be
// read twice.
//
//===----------------------------------------------------------------------===//

#include "AnvilToLinalgPatterns.h"

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cfloat>

using namespace mlir;
using namespace mlir::anvil;

namespace {

/// The parts of a row's log-sum-exp (the file comment's form) whose
/// maximum is `max`, if it is one: f32, over the last dimension, kept.
struct RowLogSumExp {
  ReduceMaxOp max;
  BroadcastOp broadcast;
  SubOp shifted;
  ExpOp exp;
  ReduceSumOp sum;
};
std::optional<RowLogSumExp> matchRowLogSumExp(ReduceMaxOp max) {
  auto z = cast<RankedTensorType>(max.getOperand().getType());
  int64_t last = z.getRank() - 1;
  auto overLastKept = [&](auto reduce) {
    return reduce.getKeepDims() && reduce.getDims() == ArrayRef<int64_t>{last};
  };
  if (last < 0 || !z.getElementType().isF32() || !overLastKept(max))
    return std::nullopt;
  RowLogSumExp m{max, {}, {}, {}, {}};
  AddOp lse;
  for (Operation *user : max->getUsers()) {
    if (auto b = dyn_cast<BroadcastOp>(user); b && !m.broadcast)
      m.broadcast = b;
    else if (auto a = dyn_cast<AddOp>(user); a && !lse)
      lse = a;
    else
      return std::nullopt;
  }
  if (!m.broadcast || !lse || m.broadcast.getType() != z ||
      !m.broadcast->hasOneUse())
    return std::nullopt;
  m.shifted = dyn_cast<SubOp>(*m.broadcast->user_begin());
  if (!m.shifted || m.shifted.getLhs() != max.getOperand() ||
      m.shifted.getRhs() != m.broadcast.getResult() || !m.shifted->hasOneUse())
    return std::nullopt;
  m.exp = dyn_cast<ExpOp>(*m.shifted->user_begin());
  if (!m.exp || !m.exp->hasOneUse())
    return std::nullopt;
  m.sum = dyn_cast<ReduceSumOp>(*m.exp->user_begin());
  if (!m.sum || !overLastKept(m.sum) || !m.sum->hasOneUse())
    return std::nullopt;
  // lse = m + log(s), in either order.
  auto log = dyn_cast<LogOp>(*m.sum->user_begin());
  Value other = lse.getLhs() == max.getResult() ? lse.getRhs() : lse.getLhs();
  if (!log || !log->hasOneUse() || other != log.getResult())
    return std::nullopt;
  return m;
}

/// Replaces `m`'s maximum, shift, exponentials and sum with the one-pass
/// generic.
void lowerOnline(RowLogSumExp m) {
  OpBuilder b(m.max);
  Location loc = m.max.getLoc();
  auto z = cast<RankedTensorType>(m.max.getOperand().getType());
  auto kept = cast<RankedTensorType>(m.max.getType());
  MLIRContext *ctx = b.getContext();
  // Over (..., 1, C): z's rows with the kept dimension of size 1, as the
  // results are shaped, so that a sum of z kept the same way (the
  // cross-entropy's z[label]) has this loop nest and merges with it
  // (anvil-horizontal-fuse).
  SmallVector<int64_t> shape(z.getShape());
  shape.insert(shape.end() - 1, 1);
  auto rowsOfZ = RankedTensorType::get(shape, z.getElementType());
  int64_t rank = rowsOfZ.getRank();
  SmallVector<AffineExpr> rowExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank - 1; ++d) {
    rowExprs.push_back(b.getAffineDimExpr(d));
    iterators.push_back(utils::IteratorType::parallel);
  }
  iterators.push_back(utils::IteratorType::reduction);
  // The kept 1 joins the dimension before it (as the sum's reshape does),
  // so that both read one expand_shape of z.
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < z.getRank(); ++d)
    groups.push_back({d});
  if (z.getRank() == 1)
    groups = {{0, 1}};
  else {
    groups[z.getRank() - 2].push_back(z.getRank() - 1);
    groups.back() = {z.getRank()};
  }
  Value input = tensor::ExpandShapeOp::create(b, loc, rowsOfZ,
                                              m.max.getOperand(), groups);
  Value maxInit = lowering::filled(
      b, loc, kept,
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-FLT_MAX)));
  Value sumInit = lowering::filled(
      b, loc, kept, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)));
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, rowExprs, ctx),
                                 AffineMap::get(rank, 0, rowExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{kept, kept}, ValueRange{input},
      ValueRange{maxInit, sumInit}, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value v = args[0], max = args[1], sum = args[2];
        Value next = arith::MaximumFOp::create(nb, l, max, v);
        Value low = arith::MinimumFOp::create(nb, l, max, v);
        Value e = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, low, next).getResult());
        Value grew =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT, v, max);
        Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0));
        Value rescaled = arith::AddFOp::create(
            nb, l, arith::MulFOp::create(nb, l, sum, e).getResult(), one);
        Value added = arith::AddFOp::create(nb, l, sum, e);
        Value folded = arith::SelectOp::create(nb, l, grew, rescaled, added);
        linalg::YieldOp::create(nb, l, ValueRange{next, folded});
      });
  Value max = generic.getResult(0), sum = generic.getResult(1);
  m.sum.getResult().replaceAllUsesWith(sum);
  m.sum.erase();
  m.exp.erase();
  m.shifted.erase();
  m.broadcast.erase();
  m.max.getResult().replaceAllUsesWith(max);
  m.max.erase();
}

} // namespace

void mlir::anvil::lowering::lowerOnlineLogSumExps(Operation *root) {
  SmallVector<RowLogSumExp> found;
  root->walk([&](ReduceMaxOp max) {
    if (std::optional<RowLogSumExp> m = matchRowLogSumExp(max))
      found.push_back(*m);
  });
  for (RowLogSumExp m : found)
    lowerOnline(m);
}
