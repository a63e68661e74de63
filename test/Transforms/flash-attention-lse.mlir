// A gradient reaching the log-sum-exp itself is not taken.
// RUN: not anvil-opt %s --anvil-autodiff 2>&1 | FileCheck %s --check-prefix=LSE
// LSE: error: 'anvil.flash_attention' op a gradient flows into 'lse' (its users are differentiated); only the result's is supported
func.func @forward(%q: tensor<1x2x8x16xf32> {anvil.param = #anvil.param<name = "q", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %o, %lse = anvil.flash_attention %q, %q, %q : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  %l = anvil.reduce_sum %lse dims [0, 1, 2] : tensor<1x2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
