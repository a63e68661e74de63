// RUN: anvil-opt %s --split-input-file --anvil-autodiff --verify-diagnostics | FileCheck %s

// Tests the VJP of anvil.flash_attention with a key bias: the fused
// gradient reads the bias (an operand after result_grad) and gives it no
// gradient; so a key bias that a float argument may reach, whose gradient
// would be lost, is refused.

// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[BIAS:.+]] = anvil.cast %arg3 : tensor<2x8xi32> to tensor<2x8xf32>
// CHECK: %[[O:.+]], %[[LSE:.+]] = anvil.flash_attention %arg0, %arg1, %arg2 key_bias(%[[BIAS]])
// CHECK: anvil.flash_attention_grad %arg0, %arg1, %arg2, %[[O]], %[[LSE]], %{{.+}} key_bias(%[[BIAS]]) {causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32>, tensor<2x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
func.func @forward(%q: tensor<2x4x8x16xf32> {anvil.param = #anvil.param<name = "q", init = #anvil.init<zeros>>},
                   %k: tensor<2x2x8x16xf32> {anvil.param = #anvil.param<name = "k", init = #anvil.init<zeros>>},
                   %v: tensor<2x2x8x16xf32> {anvil.param = #anvil.param<name = "v", init = #anvil.init<zeros>>},
                   %am: tensor<2x8xi32> {anvil.input = #anvil.input<name = "attention_mask">}) -> tensor<f32> {
  %bias = anvil.cast %am : tensor<2x8xi32> to tensor<2x8xf32>
  %o, %lse = anvil.flash_attention %q, %k, %v key_bias(%bias) {causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  %l = anvil.reduce_sum %o dims [0, 1, 2, 3] : tensor<2x4x8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @forward(%q: tensor<2x4x8x16xf32> {anvil.param = #anvil.param<name = "q", init = #anvil.init<zeros>>},
                   %w: tensor<8xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %e = anvil.exp %w : tensor<8xf32>
  %bias = anvil.broadcast %e, dims = [1] : tensor<8xf32> -> tensor<2x8xf32>
  // expected-error@+1 {{'anvil.flash_attention' op its key_bias may depend on a float argument of the function (a parameter), but the fused gradient gives the key bias none; use anvil.attention with a mask}}
  %o, %lse = anvil.flash_attention %q, %q, %q key_bias(%bias) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  %l = anvil.reduce_sum %o dims [0, 1, 2, 3] : tensor<2x4x8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
