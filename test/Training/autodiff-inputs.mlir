// RUN: anvil-opt %s --anvil-autodiff=wrt-inputs | FileCheck %s

// Tests that wrt-inputs adds the gradients of float inputs (not of integer
// ones), named after the inputs.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: -> (tensor<f32>, tensor<2xf32> {anvil.grad = "w"}, tensor<2xf32> {anvil.grad = "x"})
func.func @forward(%w: tensor<2xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                   %x: tensor<2xf32> {anvil.input = #anvil.input<name = "x">},
                   %t: tensor<2xi32> {anvil.input = #anvil.input<name = "t">}) -> tensor<f32> {
  %y = anvil.mul %w, %x : tensor<2xf32>
  %l = anvil.reduce_sum %y dims [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
