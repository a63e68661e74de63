// Tests that a gradient reaching anvil.linear_gelu's `pre` itself is not
// taken: the fused gradient (anvil.gelu_bias_grad) reads `pre`, it does not
// add to it.
// RUN: not anvil-opt %s --anvil-autodiff 2>&1 | FileCheck %s --check-prefix=PRE
// PRE: error: 'anvil.linear_gelu' op a gradient flows into 'pre' (its users are differentiated); only the result's is supported
func.func @forward(%x: tensor<4x8xbf16> {anvil.input = #anvil.input<name = "x">},
                   %w: tensor<8x16xbf16> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                   %b: tensor<16xbf16> {anvil.param = #anvil.param<name = "b", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %y, %pre = anvil.linear_gelu %x, %w, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
  %p = anvil.cast %pre : tensor<4x16xbf16> to tensor<4x16xf32>
  %l = anvil.reduce_sum %p dims [0, 1] : tensor<4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
