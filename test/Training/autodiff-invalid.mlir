// RUN: anvil-opt %s --split-input-file --anvil-autodiff --verify-diagnostics

// Tests that a loss that is not a scalar is reported at the op computing it.
func.func @forward(%w: tensor<3xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>}) -> tensor<3xf32> {
  // expected-error@+1 {{anvil-autodiff: the loss (the first result) must be a float scalar tensor, got 'tensor<3xf32>'}}
  %y = anvil.exp %w : tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// Tests that an active op without a VJP rule is reported, naming the op.
func.func @forward(%x: tensor<1x1x4xf32> {anvil.input = #anvil.input<name = "x">},
                   %w: tensor<1x1x2xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>}) -> tensor<f32> {
  // expected-error@+1 {{anvil-autodiff: 'anvil.conv' has no VJP rule, so the loss cannot be differentiated through it}}
  %y = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<1x1x4xf32>, tensor<1x1x2xf32>) -> tensor<1x1x3xf32>
  %l = anvil.reduce_sum %y dims [0, 1, 2] : tensor<1x1x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a strided slice, whose VJP is not written yet, says so.
func.func @forward(%w: tensor<4xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>}) -> tensor<f32> {
  // expected-error@+1 {{has no VJP rule for strides other than 1 yet}}
  %y = anvil.slice %w [0:4:2] : tensor<4xf32> -> tensor<2xf32>
  %l = anvil.reduce_sum %y dims [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{anvil-autodiff: no function @forward}}
module {
  func.func @other() {
    return
  }
}
