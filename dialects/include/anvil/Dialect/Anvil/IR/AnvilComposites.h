//===- AnvilComposites.h - the insides of composite anvil ops ----*- C++
//-*-===//
//
// Pieces of composite ops written as primitive anvil ops, shared by the
// rules that need them: attention's probabilities are rebuilt by its VJP
// (FlashAttention-style recomputation) and by the decomposition that
// lowers attention for the backends; cross-entropy's label masks likewise.
// One definition keeps the forward math of the two in step.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILCOMPOSITES_H
#define ANVIL_DIALECT_ANVIL_IR_ANVILCOMPOSITES_H

#include "anvil/Dialect/Anvil/IR/AnvilEmit.h"

namespace mlir::anvil {

/// The probabilities of an attention op and the keys and values repeated to
/// the query heads (grouped-query attention), all as anvil ops.
struct AttentionParts {
  Value keys;   ///< (B, Hq, Tk, D)
  Value values; ///< (B, Hq, Tk, Dv)
  Value probs;  ///< (B, Hq, Tq, Tk) = softmax(q k^T scale + mask), causal
  double scale = 1.0;
};
AttentionParts emitAttentionProbabilities(Emit &e, AttentionOp op);

/// One of attention `op`'s products, `lhs @ rhs` (either transposed): an
/// anvil.matmul, on bf16 casts of the operands with the product widened
/// back when the op has `bf16_gemms`.
Value emitAttentionProduct(Emit &e, AttentionOp op, Value lhs, Value rhs,
                           bool transposeLhs, bool transposeRhs);

/// Cross-entropy's masks in the logits' float type: `onehot` (..., C) is 1
/// at each row's label, `kept` (...) is 1 where the label is not the
/// ignore index.
struct LabelMasks {
  Value onehot;
  Value kept;
};
LabelMasks emitLabelMasks(Emit &e, CrossEntropyOp op);

/// Each row's log-sum-exp along the logits' last dimension, kept (size 1
/// there): max + log(sum(exp(z - max))). The cross-entropy's decomposition
/// and its VJP (softmax(z) = exp(z - lse)) emit it alike, so the CSE after
/// decomposition leaves one, which the backward pass reads instead of
/// normalizing the logits again.
Value emitRowLogSumExp(Emit &e, Value logits);

/// `max(sum(kept), 1)`: the divisor of a mean over kept labels, so that a
/// batch whose labels are all ignored has loss 0 rather than NaN.
Value emitKeptCount(Emit &e, Value kept);

/// The broadcast defining `v` when it spreads an f32 (N) bias over the rows
/// of `v`'s (..., N) type (a linear layer's bias, which anvil-gemm-epilogues
/// and anvil-decompose's FP8 GEMMs take into their epilogues); null
/// otherwise.
BroadcastOp rowBias(Value v);

} // namespace mlir::anvil

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILCOMPOSITES_H
