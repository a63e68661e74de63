//===- SplitReductions.cpp - long sums over few outputs in two stages -----===//
//
// A sum of many terms into few outputs (a bias gradient: 8192 rows into 768
// columns) becomes partial sums over slices of the terms, as a parallel
// dimension of their own, and then the sum of the partials: a GPU grid gets
// slices x outputs threads instead of one per output. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "anvil/Fusion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILSPLITREDUCTIONSPASS
#include "anvil/Fusion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// Whether `op`'s body yields `out + v` (either order) with `v` computed
/// without `out`: a sum, which the split reassociates.
bool isSum(linalg::GenericOp op) {
  BlockArgument out = op.getRegionOutputArgs()[0];
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  return add && out.hasOneUse() && (add.getLhs() == out || add.getRhs() == out);
}

/// Whether `operand`'s map reads it through loop dimensions, and constant
/// 0s only where its dimension is 1 (a layer norm's row mean, [8, 1024, 1],
/// read at (d0, d1, 0)).
bool unitBroadcastsOnly(linalg::GenericOp op, OpOperand &operand) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
    return false;
  ArrayRef<int64_t> shape = op.getShape(&operand);
  return llvm::all_of(llvm::enumerate(map.getResults()), [&](auto result) {
    auto constant = dyn_cast<AffineConstantExpr>(result.value());
    return !constant || shape[result.index()] == 1;
  });
}

/// `op` with each input's unit dimensions that its map reads at a constant
/// 0 collapsed away (the row mean read as [8, 1024] at (d0, d1)), so that
/// every map is a projected permutation, which the split needs.
linalg::GenericOp dropUnitBroadcasts(RewriterBase &rewriter,
                                     linalg::GenericOp op) {
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  bool changed = false;
  rewriter.setInsertionPoint(op);
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    auto type = cast<RankedTensorType>(in->get().getType());
    SmallVector<AffineExpr> kept;
    SmallVector<int64_t> shape;
    // Each kept dimension's group, a dropped one joining the group before
    // it (or the first group, if it leads).
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices leading;
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      if (isa<AffineConstantExpr>(expr)) {
        (groups.empty() ? leading : groups.back())
            .push_back(static_cast<int64_t>(i));
        continue;
      }
      kept.push_back(expr);
      shape.push_back(type.getDimSize(i));
      groups.push_back(leading);
      groups.back().push_back(static_cast<int64_t>(i));
      leading.clear();
    }
    if (kept.size() == map.getNumResults()) {
      inputs.push_back(in->get());
      maps.push_back(map);
      continue;
    }
    changed = true;
    inputs.push_back(tensor::CollapseShapeOp::create(
        rewriter, op.getLoc(),
        RankedTensorType::get(shape, type.getElementType()), in->get(),
        groups));
    maps.push_back(
        AffineMap::get(map.getNumDims(), 0, kept, rewriter.getContext()));
  }
  if (!changed)
    return op;
  for (OpOperand &out : op.getDpsInitsMutable())
    maps.push_back(op.getMatchingIndexingMap(&out));
  auto replacement = linalg::GenericOp::create(
      rewriter, op.getLoc(), op->getResultTypes(), inputs, op.getDpsInits(),
      maps, op.getIteratorTypesArray());
  rewriter.inlineRegionBefore(op.getRegion(), replacement.getRegion(),
                              replacement.getRegion().begin());
  rewriter.replaceOp(op, replacement->getResults());
  return replacement;
}

struct AnvilSplitReductionsPass
    : mlir::anvil::impl::AnvilSplitReductionsPassBase<
          AnvilSplitReductionsPass> {
  using Base::Base;

  /// The number of slices to split `op`'s reduction into, or 0 when it is
  /// not a sum this pass splits.
  int64_t slicesOf(linalg::GenericOp op) const {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
        op.getNumResults() != 1 || !isSum(op))
      return 0;
    // The split re-indexes operands by loop dimension: each map's results
    // must be loop dimensions, or a constant 0 where an input's dimension
    // is 1 (dropped before the split; not a broadcast of a longer one),
    // and the body must not read loop positions (linalg.index would keep
    // the old ones).
    if (!llvm::all_of(
            op.getDpsInputOperands(),
            [&](OpOperand *in) { return unitBroadcastsOnly(op, *in); }) ||
        !op.getMatchingIndexingMap(op.getDpsInitOperand(0))
             .isProjectedPermutation(/*allowZeroInResults=*/false) ||
        !op.getBody()->getOps<linalg::IndexOp>().empty())
      return 0;
    // A matrix product (rows and columns of its own) is a GEMM's; a sum of
    // products over a shared index (a norm's weight gradient) is not.
    FailureOr<linalg::ContractionDimensions> gemm =
        linalg::inferContractionDims(op);
    if (succeeded(gemm) && !gemm->m.empty() && !gemm->n.empty())
      return 0;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return 0;
    int64_t terms = 1, points = 1;
    for (auto [range, kind] : llvm::zip(ranges, op.getIteratorTypesArray()))
      (kind == utils::IteratorType::reduction ? terms : points) *= range;
    if (terms == 1 || terms < minLength || points > maxPoints)
      return 0;
    int64_t slices = 1;
    while (slices < 256 && terms % (2 * slices) == 0 &&
           terms / (2 * slices) >= minSlice)
      slices *= 2;
    return slices > 1 ? slices : 0;
  }

  void runOnOperation() override {
    if (minLength <= 0)
      return;
    SmallVector<std::pair<linalg::GenericOp, int64_t>> sums;
    getOperation().walk([&](linalg::GenericOp op) {
      if (int64_t slices = slicesOf(op))
        sums.emplace_back(op, slices);
    });
    IRRewriter rewriter(&getContext());
    for (auto [original, slices] : sums) {
      linalg::GenericOp op = dropUnitBroadcasts(rewriter, original);
      linalg::LinalgOp sum = op;
      // Several reduction dimensions become one where every operand has
      // them next to each other ([8, 1024, 768] -> [768] sums 8192 rows).
      SmallVector<unsigned> dims;
      op.getReductionDims(dims);
      if (dims.size() > 1) {
        ReassociationIndices group;
        for (unsigned d : dims)
          group.push_back(d);
        bool consecutive = dims.back() - dims.front() + 1 == dims.size();
        if (!consecutive || !linalg::areDimSequencesPreserved(
                                op.getIndexingMapsArray(), {group}))
          continue;
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::CollapseResult> collapsed =
            linalg::collapseOpIterationDims(op, {group}, rewriter);
        if (failed(collapsed))
          continue;
        rewriter.replaceOp(op, collapsed->results);
        sum = collapsed->collapsedOp;
      }
      // Slices of consecutive terms, outermost in the partials' shape: a
      // warp's threads are neighbouring outputs of one slice.
      rewriter.setInsertionPoint(sum);
      int64_t ratio = slices;
      (void)linalg::splitReduction(rewriter, sum, [ratio](linalg::LinalgOp) {
        return linalg::SplitReductionOptions{ratio, /*index=*/0,
                                             /*innerParallel=*/false};
      });
    }
  }
};

} // namespace
