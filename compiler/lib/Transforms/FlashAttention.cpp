//===- FlashAttention.cpp - attention as fused kernels --------------------===//
//
// anvil-flash-attention: an f32 anvil.attention without a mask becomes
// anvil.flash_attention (same operands and attributes; its second result,
// each row's log-sum-exp, is for the gradient). Run on the forward graph,
// so that autodiff builds the fused gradient (the op's VJP) instead of the
// decomposed one, which stores the probabilities.
//
// With `fold-transposes`, an op whose operands are transposes of (B, T, H,
// D) tensors and whose result is transposed back (a transformer's
// attention between its projections) takes the (B, T, H, D) tensors
// directly (`bshd`) when that removes more transposes than it adds; its
// gradient is then laid out so too, and neither pass of the step moves the
// heads.
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILFLASHATTENTIONPASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

/// The permutation that swaps (B, H, T, D) and (B, T, H, D); its own
/// inverse.
constexpr int64_t kSwap[] = {0, 2, 1, 3};

/// `op` if it is a transpose by kSwap.
TransposeOp swapOf(Operation *op) {
  auto transpose = dyn_cast_or_null<TransposeOp>(op);
  if (transpose && transpose.getPermutation() == ArrayRef<int64_t>(kSwap))
    return transpose;
  return nullptr;
}

/// The transposes among `op`'s q, k and v, each once.
llvm::SmallSetVector<Operation *, 3> operandTransposes(AttentionOp op) {
  llvm::SmallSetVector<Operation *, 3> transposes;
  for (Value operand : {op.getQuery(), op.getKey(), op.getValue()})
    if (TransposeOp t = swapOf(operand.getDefiningOp()))
      transposes.insert(t);
  return transposes;
}

/// Transposes removed minus transposes added if `op` took its operands and
/// gave its result in (B, T, H, D): a transpose among its operands that
/// only `op` uses is removed, an operand without one needs one; a result
/// transposed by all of its users removes theirs, one with another user
/// needs one.
int64_t bshdSavings(AttentionOp op) {
  int64_t saved = 0;
  for (Operation *t : operandTransposes(op))
    saved += llvm::all_of(t->getUsers(),
                          [&](Operation *user) { return user == op; });
  for (Value operand : {op.getQuery(), op.getKey(), op.getValue()})
    saved -= !swapOf(operand.getDefiningOp());
  if (!op->use_empty())
    saved += llvm::all_of(op->getUsers(),
                          [](Operation *user) {
                            return static_cast<bool>(swapOf(user));
                          })
                 ? 1
                 : -1;
  return saved;
}

/// `value` in the other layout: the transpose's operand when it is one,
/// else a new transpose.
Value swapped(OpBuilder &b, Value value) {
  if (TransposeOp t = swapOf(value.getDefiningOp()))
    return t.getOperand();
  return TransposeOp::create(b, value.getLoc(), value, kSwap);
}

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
      if (!foldTransposes || bshdSavings(op) <= 0) {
        auto fused = FlashAttentionOp::create(
            b, op.getLoc(), op.getQuery(), op.getKey(), op.getValue(),
            op.getCausal(), op.getScaleAttr(), op.getBf16Gemms(),
            /*bshd=*/false);
        op.getResult().replaceAllUsesWith(fused.getResult());
        op.erase();
        continue;
      }
      llvm::SmallSetVector<Operation *, 3> dead = operandTransposes(op);
      auto fused = FlashAttentionOp::create(
          b, op.getLoc(), swapped(b, op.getQuery()), swapped(b, op.getKey()),
          swapped(b, op.getValue()), op.getCausal(), op.getScaleAttr(),
          op.getBf16Gemms(), /*bshd=*/true);
      for (Operation *user : llvm::make_early_inc_range(op->getUsers()))
        if (TransposeOp t = swapOf(user)) {
          t.getResult().replaceAllUsesWith(fused.getResult());
          t.erase();
        }
      if (!op->use_empty())
        op.getResult().replaceAllUsesWith(swapped(b, fused.getResult()));
      op.erase();
      for (Operation *t : dead)
        if (t->use_empty())
          t->erase();
    }
  }
};

} // namespace
