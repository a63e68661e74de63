//===- Fuse.cpp - elementwise fusion without recomputation ----------------===//
//
// 1. Decide each candidate fusion with `shouldFuse` (the rule of the pass
//    description: one use, and a permutation map unless the producer only
//    moves data).
// 2. Run upstream's elementwise fusion, reshape propagation by expansion
//    and linalg constant folding under that rule, with the canonicalizations
//    they rely on, to a fixed point.
//
//===----------------------------------------------------------------------===//

#include "anvil/Fusion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILFUSEPASS
#include "anvil/Fusion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// True when `op`'s body only yields inputs (a broadcast, transpose or
/// copy): re-reading its result costs a load, never a recomputation.
bool movesDataOnly(linalg::GenericOp op) {
  return op.getBody()->without_terminator().empty();
}

bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!consumer)
    return true; // reshapes and the like: nothing is recomputed
  if (auto generic = dyn_cast<linalg::GenericOp>(producer);
      generic && movesDataOnly(generic))
    return true;
  return consumer.getMatchingIndexingMap(fused).isPermutation();
}

struct AnvilFusePass : mlir::anvil::impl::AnvilFusePassBase<AnvilFusePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::ControlFusionFn control = shouldFuse;
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
