//===- Passes.td - passes that build training graphs --------*- tablegen -*-===//
//
// Differentiation (and, next, the optimizer step) of forward graphs.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRAINING_PASSES_TD
#define ANVIL_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilAutodiffPass : Pass<"anvil-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of a forward graph";
  let description = [{
    Adds `@<function>_grad` next to the forward function: the same
    arguments, and results `(loss, dL/dp for every trainable parameter
    p, in argument order [, dL/dx for every float input x with
    wrt-inputs])`. Each gradient result carries `anvil.grad = "<name>"`.

    1. Activity: starting from the trainable parameters (and float inputs
       with `wrt-inputs`), mark every float value computed from them,
       except through `anvil.stop_gradient` and ops with the
       NonDifferentiable trait. Frozen parameters are not active, so they
       get no gradient and no backward ops.
    2. Seed dL/dL = 1 for the scalar loss (the first result).
    3. Walk the ops backwards; for each op with an active operand and a
       gradient on one of its results, call its VJP rule (VJPOpInterface),
       which reuses the op's forward operands and results. Gradients of a
       value used several times are summed.
    4. Return the loss and the gradients; a trainable parameter the loss
       does not depend on gets zeros.

    A loss that is not a float scalar, a function with more than one
    block, or an active op without a VJP rule is a diagnostic at that op.

    Before:
    ```mlir
    func.func @forward(%w: tensor<3xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                       %x: tensor<3xf32> {anvil.input = #anvil.input<name = "x">}) -> tensor<f32> {
      %y = anvil.mul %w, %x : tensor<3xf32>
      %l = anvil.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (added):
    ```mlir
    func.func @forward_grad(%w: ..., %x: ...) -> (tensor<f32>, tensor<3xf32> {anvil.grad = "w"}) {
      %y = anvil.mul %w, %x : tensor<3xf32>
      %l = anvil.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
      %one = anvil.constant dense<1.0> : tensor<f32>
      %g = anvil.broadcast ... // dL/dy
      %gw = anvil.mul %g, %x : tensor<3xf32>
      return %l, %gw : tensor<f32>, tensor<3xf32>
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The forward function to differentiate">,
    Option<"wrtInputs", "wrt-inputs", "bool", /*default=*/"false",
           "Also return gradients of the float inputs">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

#endif // ANVIL_TRAINING_PASSES_TD
