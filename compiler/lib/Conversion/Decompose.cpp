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
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"
#include "anvil/Dialect/Anvil/IR/AnvilComposites.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Emit e{rewriter, op.getLoc()};
    AttentionParts parts = emitAttentionProbabilities(e, op);
    // (B, Hq, Tq, Tk) x (B, Hq, Tk, Dv) -> (B, Hq, Tq, Dv)
    rewriter.replaceOp(op, MatmulOp::create(rewriter, op.getLoc(), parts.probs,
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
    // (..., C) -> (...): the label's log-probability, and their sum.
    Value logp = LogSoftmaxOp::create(rewriter, op.getLoc(), z, rank - 1);
    Value picked = e.sum(e.mul(logp, masks.onehot), {rank - 1}, false);
    Value rowLoss = e.scale(picked, -(1.0 - s));
    if (s != 0.0)
      rowLoss = e.sub(rowLoss, e.scale(e.sum(logp, {rank - 1}, false),
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

struct AnvilDecomposePass
    : mlir::anvil::impl::AnvilDecomposePassBase<AnvilDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeAttention, DecomposeCrossEntropy, DecomposeLayerNorm,
                 DecomposeLogSoftmax, DecomposeRMSNorm, DecomposeSoftmax>(
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
