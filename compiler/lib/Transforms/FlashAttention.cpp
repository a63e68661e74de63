//===- FlashAttention.cpp - attention as fused kernels --------------------===//
//
// anvil-flash-attention: an f32 anvil.attention without a mask becomes
// anvil.flash_attention (same operands and attributes; its second result,
// each row's log-sum-exp, is for the gradient). Run on the forward graph,
// so that autodiff builds the fused gradient (the op's VJP) instead of the
// decomposed one, which stores the probabilities.
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILFLASHATTENTIONPASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

struct AnvilFlashAttentionPass
    : mlir::anvil::impl::AnvilFlashAttentionPassBase<AnvilFlashAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxHeadDim < 0) {
      getOperation().emitError("anvil-flash-attention: max-head-dim = ")
          << static_cast<int64_t>(maxHeadDim) << " must be 0 (any) or positive";
      return signalPassFailure();
    }
    auto fits = [&](int64_t dim) {
      return maxHeadDim == 0 || dim <= maxHeadDim;
    };
    SmallVector<AttentionOp> chosen;
    getOperation().walk([&](AttentionOp op) {
      if (!op.getMask() && op.getType().getElementType().isF32() &&
          fits(op.getQuery().getType().getDimSize(3)) &&
          fits(op.getValue().getType().getDimSize(3)))
        chosen.push_back(op);
    });
    for (AttentionOp op : chosen) {
      OpBuilder b(op);
      auto fused = FlashAttentionOp::create(
          b, op.getLoc(), op.getQuery(), op.getKey(), op.getValue(),
          op.getCausal(), op.getScaleAttr(), op.getBf16Gemms());
      op.getResult().replaceAllUsesWith(fused.getResult());
      op.erase();
    }
  }
};

} // namespace
