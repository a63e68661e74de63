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

/// An input read at constant 0s where its dimensions are 1 (a layer norm's
/// row mean, [8, 1024, 1], read at (d0, d1, 0)), as the split reads it:
/// those dimensions collapsed away (`groups`, a dropped one joining the
/// kept one before it, or after it when it leads) into `shape`, read
/// through `map` (the loop dimensions alone).
struct Unbroadcast {
  AffineMap map;
  SmallVector<ReassociationIndices> groups;
  SmallVector<int64_t> shape;
  bool collapses = false;
};

/// `in` as the split reads it, or nothing when its map reads it other than
/// through loop dimensions and constant 0s into unit dimensions.
std::optional<Unbroadcast> unbroadcast(linalg::GenericOp op, OpOperand *in) {
  AffineMap map = op.getMatchingIndexingMap(in);
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(in->get().getType());
  if (!type) // a scalar: no dimensions to drop
    return map.getNumResults() == 0 ? std::optional(Unbroadcast{map, {}, {}})
                                    : std::nullopt;
  Unbroadcast u;
  SmallVector<AffineExpr> kept;
  ReassociationIndices leading;
  for (auto [i, expr] : llvm::enumerate(map.getResults())) {
    if (isa<AffineConstantExpr>(expr)) {
      if (type.getDimSize(i) != 1)
        return std::nullopt; // one column of a wider tensor, not a broadcast
      (u.groups.empty() ? leading : u.groups.back())
          .push_back(static_cast<int64_t>(i));
      u.collapses = true;
      continue;
    }
    kept.push_back(expr);
    u.shape.push_back(type.getDimSize(i));
    u.groups.push_back(leading);
    u.groups.back().push_back(static_cast<int64_t>(i));
    leading.clear();
  }
  u.map = AffineMap::get(map.getNumDims(), 0, kept, op.getContext());
  return u;
}

/// `op` with each input that unbroadcast() collapses read so (the row mean
/// read as [8, 1024] at (d0, d1)): every map a projected permutation, which
/// the split needs. The same op when no input collapses.
linalg::GenericOp dropUnitBroadcasts(RewriterBase &rewriter,
                                     linalg::GenericOp op,
                                     ArrayRef<Unbroadcast> reads) {
  if (llvm::none_of(reads, [](const Unbroadcast &u) { return u.collapses; }))
    return op;
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (auto [in, u] : llvm::zip_equal(op.getDpsInputOperands(), reads)) {
    maps.push_back(u.map);
    if (!u.collapses) {
      inputs.push_back(in->get());
      continue;
    }
    auto type = cast<RankedTensorType>(in->get().getType());
    inputs.push_back(tensor::CollapseShapeOp::create(
        rewriter, op.getLoc(),
        RankedTensorType::get(u.shape, type.getElementType()), in->get(),
        u.groups));
  }
  for (OpOperand &out : op.getDpsInitsMutable())
    maps.push_back(op.getMatchingIndexingMap(&out));
  auto replacement = linalg::GenericOp::create(
      rewriter, op.getLoc(), op->getResultTypes(), inputs, op.getDpsInits(),
      maps, op.getIteratorTypesArray());
  replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(op.getRegion(), replacement.getRegion(),
                              replacement.getRegion().begin());
  rewriter.replaceOp(op, replacement->getResults());
  return replacement;
}

/// The reduction dimensions of `op`, in order: collapsed into one before
/// the split when there are several.
ReassociationIndices reductionGroup(linalg::GenericOp op) {
  SmallVector<unsigned> dims;
  op.getReductionDims(dims);
  return ReassociationIndices(dims.begin(), dims.end());
}

/// Whether `group` (several dimensions) is consecutive and every one of
/// `maps` keeps it next to each other, so that it collapses into one.
bool collapsible(const ReassociationIndices &group, ArrayRef<AffineMap> maps) {
  return group.size() < 2 || (group.back() - group.front() + 1 ==
                                  static_cast<int64_t>(group.size()) &&
                              linalg::areDimSequencesPreserved(maps, {group}));
}

/// How a sum splits: into `slices` of its (collapsed) reduction dimension
/// (linalg::splitReduction), or, where its reduction dimensions are not
/// next to each other (a batch norm's sums over N, H and W of NCHW), into
/// partial sums over the trailing run of them for each point of the
/// `leading` others, which become parallel in the first stage.
struct Plan {
  int64_t slices = 0;
  /// With slices: each input as the split reads it.
  SmallVector<Unbroadcast> reads;
  SmallVector<unsigned> leading;
};

/// `op` (a sum) as partial sums over its reduction dimensions but
/// `leading`, which become parallel dimensions of the partials (outermost,
/// in order, before the output's), each partial from 0.0; then the sum of
/// the partials over `leading`, in order, into `op`'s output (whose value
/// it continues). The same terms in another fixed association. Returns
/// the two stages.
std::pair<linalg::GenericOp, linalg::GenericOp>
splitLeading(RewriterBase &rewriter, linalg::GenericOp op,
             ArrayRef<unsigned> leading) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  auto outType = cast<RankedTensorType>(init->get().getType());
  // The partials: the leading dimensions, then the output's.
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> partialExprs;
  for (unsigned d : leading) {
    shape.push_back(ranges[d]);
    partialExprs.push_back(getAffineDimExpr(d, ctx));
  }
  llvm::append_range(shape, outType.getShape());
  llvm::append_range(partialExprs, outMap.getResults());
  rewriter.setInsertionPoint(op);
  Type element = outType.getElementType();
  Value zero = arith::ConstantOp::create(
      rewriter, loc, cast<TypedAttr>(rewriter.getZeroAttr(element)));
  Value empty = tensor::EmptyOp::create(rewriter, loc, shape, element);
  Value filled =
      linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
  SmallVector<AffineMap> maps;
  for (OpOperand *in : op.getDpsInputOperands())
    maps.push_back(op.getMatchingIndexingMap(in));
  maps.push_back(AffineMap::get(op.getNumLoops(), 0, partialExprs, ctx));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned d : leading)
    iterators[d] = utils::IteratorType::parallel;
  auto partials = linalg::GenericOp::create(
      rewriter, loc, TypeRange{filled.getType()}, op.getDpsInputs(),
      ValueRange{filled}, maps, iterators);
  partials->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.cloneRegionBefore(op.getRegion(), partials.getRegion(),
                             partials.getRegion().begin());
  // The partials summed over the leading dimensions, in order.
  auto add =
      cast<arith::AddFOp>(cast<linalg::YieldOp>(op.getBody()->getTerminator())
                              .getOperand(0)
                              .getDefiningOp());
  unsigned rank = shape.size(), lead = leading.size();
  SmallVector<AffineExpr> outExprs;
  for (unsigned d = lead; d < rank; ++d)
    outExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<utils::IteratorType> finalIterators(
      lead, utils::IteratorType::reduction);
  finalIterators.append(rank - lead, utils::IteratorType::parallel);
  auto sum = linalg::GenericOp::create(
      rewriter, loc, op->getResultTypes(), partials.getResults(),
      ValueRange{init->get()},
      SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank),
                             AffineMap::get(rank, 0, outExprs, ctx)},
      finalIterators, [&](OpBuilder &b, Location l, ValueRange args) {
        Value total = arith::AddFOp::create(b, l, args[1], args[0],
                                            add.getFastmathAttr());
        linalg::YieldOp::create(b, l, total);
      });
  rewriter.replaceOp(op, sum->getResults());
  return {partials, sum};
}

/// Moves the fill of `combine`'s output (a constant fill read by it alone)
/// to just before it: the first stage came between the two, and
/// anvil-outline-dispatches folds a fill into the reduction right after
/// it (one launch for both).
void fillJustBefore(linalg::LinalgOp combine) {
  Value init = combine.getDpsInitOperand(0)->get();
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (fill && fill.getInputs()[0].getDefiningOp<arith::ConstantOp>() &&
      fill->hasOneUse() && fill->getBlock() == combine->getBlock())
    fill->moveBefore(combine);
}

struct AnvilSplitReductionsPass
    : mlir::anvil::impl::AnvilSplitReductionsPassBase<
          AnvilSplitReductionsPass> {
  using Base::Base;

  /// How to split `op`, or an empty plan when it is not a sum this pass
  /// splits.
  Plan planOf(linalg::GenericOp op) const {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
        op.getNumResults() != 1 || !isSum(op))
      return {};
    // The output is read through loop dimensions.
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (!outMap.isProjectedPermutation(/*allowZeroInResults=*/false))
      return {};
    // A matrix product (rows and columns of its own) is a GEMM's; a sum of
    // products over a shared index (a norm's weight gradient) is not.
    FailureOr<linalg::ContractionDimensions> gemm =
        linalg::inferContractionDims(op);
    if (succeeded(gemm) && !gemm->m.empty() && !gemm->n.empty())
      return {};
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic))
      return {};
    int64_t terms = 1, points = 1;
    for (auto [range, kind] : llvm::zip(ranges, op.getIteratorTypesArray()))
      (kind == utils::IteratorType::reduction ? terms : points) *= range;
    if (terms == 1 || terms < minLength || points > maxPoints)
      return {};
    // Slices: linalg::splitReduction re-indexes the loops, so the body
    // must not read loop positions (linalg.index would keep the old ones:
    // a dropout mask hashed from the element's index), and each map's
    // results must be loop dimensions, or a constant 0 where an input's
    // dimension is 1, dropped before the split: in a column sum (the
    // innermost loop parallel: a layer norm's weight gradient reading its
    // row statistics), or in a row sum of few rows (at most max-points /
    // 32: an instance norm's variance over 128^3 voxels reading its mean,
    // 64 rows a warp each). A row sum reading its row's statistic over
    // more rows (softmax's, the cross-entropy's) stays whole: a warp per
    // row runs it, with warps enough. Several reduction dimensions must
    // collapse into one.
    SmallVector<AffineMap> maps;
    SmallVector<Unbroadcast> reads;
    bool columns =
        op.getIteratorTypesArray().back() == utils::IteratorType::parallel;
    bool fewRows = points * 32 <= maxPoints;
    bool reindexable = true;
    for (OpOperand *in : op.getDpsInputOperands()) {
      std::optional<Unbroadcast> u = unbroadcast(op, in);
      reindexable &= u && !(u->collapses && !columns && !fewRows);
      if (!reindexable)
        break;
      maps.push_back(u->map);
      reads.push_back(std::move(*u));
    }
    maps.push_back(outMap);
    ReassociationIndices group = reductionGroup(op);
    bool indexed = !op.getBody()->getOps<linalg::IndexOp>().empty();
    if (!indexed && reindexable && collapsible(group, maps)) {
      int64_t slices = 1;
      while (slices < 256 && terms % (2 * slices) == 0 &&
             terms / (2 * slices) >= minSlice)
        slices *= 2;
      Plan plan;
      if (slices > 1) {
        plan.slices = slices;
        plan.reads = std::move(reads);
      }
      return plan;
    }
    // Partials over the maximal run of consecutive reduction dimensions
    // that ends at the innermost one, one per point of the others, whose
    // loops keep their positions (any maps; linalg.index reads the same
    // positions). When all of them are one run, only a body reading loop
    // positions splits so, over the innermost one (the others stay
    // whole: a row sum over many rows reading its row's statistic runs a
    // warp per row). At least two such points and `minSlice` terms each.
    size_t run = group.size() - 1;
    while (run > 0 && group[run - 1] + 1 == group[run])
      --run;
    if (run == 0) {
      if (!indexed)
        return {};
      run = group.size() - 1;
    }
    Plan plan;
    int64_t inner = 1, outer = 1;
    for (auto [i, d] : llvm::enumerate(group)) {
      if (i < run) {
        plan.leading.push_back(static_cast<unsigned>(d));
        outer *= ranges[d];
      } else {
        inner *= ranges[d];
      }
    }
    if (plan.leading.empty() || outer < 2 || inner < minSlice)
      return {};
    return plan;
  }

  void runOnOperation() override {
    if (minLength <= 0)
      return;
    SmallVector<std::pair<linalg::GenericOp, Plan>> sums;
    getOperation().walk([&](linalg::GenericOp op) {
      Plan plan = planOf(op);
      if (plan.slices || !plan.leading.empty())
        sums.emplace_back(op, std::move(plan));
    });
    IRRewriter rewriter(&getContext());
    for (auto &[original, plan] : sums) {
      if (plan.leading.empty()) {
        splitIntoSlices(rewriter, original, plan);
        continue;
      }
      auto [partials, sum] = splitLeading(rewriter, original, plan.leading);
      fillJustBefore(sum);
      // Partials that are still few long rows (a warp each: an instance
      // norm's gradient sums over N = 2, D, H, W, 64 rows of 2M voxels
      // after the first split) split into slices too.
      Plan again = planOf(partials);
      int64_t rows = 1;
      for (auto [range, kind] : llvm::zip(partials.getStaticLoopRanges(),
                                          partials.getIteratorTypesArray()))
        if (kind == utils::IteratorType::parallel)
          rows *= range;
      if (again.slices &&
          partials.getIteratorTypesArray().back() ==
              utils::IteratorType::reduction &&
          rows * 32 <= maxPoints)
        splitIntoSlices(rewriter, partials, again);
    }
  }

  /// `original` as partial sums over `plan.slices` slices of its reduction
  /// dimensions, collapsed into one, then their sum (planOf's slices, each
  /// input read as `plan.reads` says).
  void splitIntoSlices(RewriterBase &rewriter, linalg::GenericOp original,
                       const Plan &plan) {
    int64_t slices = plan.slices;
    linalg::GenericOp op = dropUnitBroadcasts(rewriter, original, plan.reads);
    linalg::LinalgOp sum = op;
    // Several reduction dimensions become one where every operand has
    // them next to each other ([8, 1024, 768] -> [768] sums 8192 rows;
    // planOf checked that they do).
    if (ReassociationIndices group = reductionGroup(op); group.size() > 1) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::CollapseResult> collapsed =
          linalg::collapseOpIterationDims(op, {group}, rewriter);
      if (failed(collapsed))
        return;
      rewriter.replaceOp(op, collapsed->results);
      sum = collapsed->collapsedOp;
    }
    // Slices of consecutive terms, outermost in the partials' shape: a
    // warp's threads are neighbouring outputs of one slice.
    rewriter.setInsertionPoint(sum);
    FailureOr<linalg::SplitReductionResult> split =
        linalg::splitReduction(rewriter, sum, [slices](linalg::LinalgOp) {
          return linalg::SplitReductionOptions{slices, /*index=*/0,
                                               /*innerParallel=*/false};
        });
    if (succeeded(split))
      fillJustBefore(split->resultCombiningLinalgOp);
  }
};

} // namespace
