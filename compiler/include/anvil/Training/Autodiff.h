//===- Autodiff.h - reverse-mode differentiation of a function ---*- C++
//-*-===//
//
// The algorithm behind `anvil-autodiff`, for passes that build on it (the
// optimizer step): differentiate a forward function in place.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRAINING_AUTODIFF_H
#define ANVIL_TRAINING_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace mlir::anvil {

struct Gradients {
  Value loss;                     ///< The scalar loss (result 0).
  SmallVector<BlockArgument> wrt; ///< The differentiated arguments.
  SmallVector<Value> grads;       ///< dL/d(wrt[i]).
  SmallVector<std::string> names; ///< The arguments' names.
};

/// Appends the backward ops to `fn`'s block, before its return (which is
/// left as it was), and returns the gradients of the trainable parameters
/// (and float inputs with `wrtInputs`). `seed` is dL/dL (1 when null; the
/// loss scale for dynamic loss scaling); it must dominate the return.
/// Emits a diagnostic and fails for a non-scalar loss, several blocks or an
/// active op without a VJP rule.
FailureOr<Gradients> differentiate(func::FuncOp fn, bool wrtInputs,
                                   Value seed = {});

/// The ops of `fn` that its first result (the loss) depends on: the forward
/// pass of a differentiated step. Values they produce that other ops read
/// (the VJP rules) are the activations kept for the backward pass.
llvm::DenseSet<Operation *> lossForwardOps(func::FuncOp fn);

/// Erases the ops of `fn` whose results nothing uses (pure anvil ops only):
/// gradients the VJP rules built for operands that need none (the frozen
/// weight's side of a matmul) and forward values the step does not need.
/// Run it once the function returns what it should.
void eraseDeadOps(func::FuncOp fn);

} // namespace mlir::anvil

#endif // ANVIL_TRAINING_AUTODIFF_H
