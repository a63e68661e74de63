// RUN: anvil-opt %s --split-input-file --anvil-autodiff --verify-diagnostics

// Tests that a loss that is not a scalar is reported at the op computing it.
func.func @forward(%w: tensor<3xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>}) -> tensor<3xf32> {
  // expected-error@+1 {{anvil-autodiff: the loss (the first result, from 'anvil.exp') must be a float scalar tensor, got 'tensor<3xf32>'}}
  %y = anvil.exp %w : tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// Tests that an active op without a VJP rule (the gradient ops are not
// differentiated again) is reported, naming the op.
func.func @forward(%g: tensor<2x3xf32> {anvil.param = #anvil.param<name = "g", init = #anvil.init<zeros>>},
                   %i: tensor<2xi32> {anvil.input = #anvil.input<name = "i">}) -> tensor<f32> {
  // expected-error@+1 {{anvil-autodiff: 'anvil.embedding_grad' has no VJP rule, so the loss cannot be differentiated through it}}
  %y = anvil.embedding_grad %g[%i] rows = 4 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<4x3xf32>
  %l = anvil.reduce_sum %y dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that dynamic shapes are reported at the function.
// expected-error@+1 {{anvil-autodiff: argument #1 has type 'tensor<?xf32>'; differentiation needs statically shaped tensors}}
func.func @forward(%w: tensor<f32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>}, %x: tensor<?xf32>) -> tensor<f32> {
  return %w : tensor<f32>
}

// -----

// expected-error@+1 {{anvil-autodiff: no function @forward}}
module {
  func.func @other() {
    return
  }
}
