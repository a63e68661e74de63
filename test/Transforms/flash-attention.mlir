// RUN: anvil-opt %s --anvil-flash-attention | FileCheck %s
// RUN: anvil-opt %s --anvil-flash-attention=max-head-dim=8 | FileCheck %s --check-prefix=NARROW
// RUN: anvil-opt %s --anvil-flash-attention --anvil-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: not anvil-opt %s --anvil-flash-attention=max-head-dim=-1 2>&1 | FileCheck %s --check-prefix=BAD

// Tests anvil-flash-attention: f32 attention without a mask becomes
// anvil.flash_attention (its attributes kept: causal, scale, bf16_gemms),
// whose VJP is one anvil.flash_attention_grad reading the forward's result
// and log-sum-exp; masked attention stays anvil.attention, as do heads
// wider than max-head-dim.

// CHECK-LABEL: func.func @forward
// CHECK: %[[O:.+]], %[[LSE:.+]] = anvil.flash_attention %arg0, %arg1, %arg2 {bf16_gemms, causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
// CHECK: anvil.attention %arg0, %arg1, %arg2 mask(%arg3)
// CHECK: anvil.add %[[O]], 
// NARROW-LABEL: func.func @forward
// NARROW-NOT: anvil.flash_attention
// NARROW: return
// BAD: anvil-flash-attention: max-head-dim = -1 must be 0 (any) or positive

// The gradient: the fused op for the first attention (grouped-query: dk and
// dv have the key/value heads' shape), the decomposition's products for the
// masked one.
// GRAD-LABEL: func.func @forward_grad
// GRAD: %[[O:.+]], %[[LSE:.+]] = anvil.flash_attention %arg0, %arg1, %arg2
// GRAD: anvil.flash_attention_grad %arg0, %arg1, %arg2, %[[O]], %[[LSE]], %{{.+}} {bf16_gemms, causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
// GRAD-NOT: anvil.flash_attention_grad
// GRAD: return

func.func @forward(%q: tensor<2x4x8x16xf32> {anvil.param = #anvil.param<name = "q", init = #anvil.init<zeros>>},
                   %k: tensor<2x2x8x16xf32> {anvil.param = #anvil.param<name = "k", init = #anvil.init<zeros>>},
                   %v: tensor<2x2x8x16xf32> {anvil.param = #anvil.param<name = "v", init = #anvil.init<zeros>>},
                   %m: tensor<8x8xf32> {anvil.input = #anvil.input<name = "mask">}) -> tensor<f32> {
  %o = anvil.attention %q, %k, %v {causal, scale = 0.25 : f64, bf16_gemms} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %p = anvil.attention %q, %k, %v mask(%m) : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  %s = anvil.add %o, %p : tensor<2x4x8x16xf32>
  %l = anvil.reduce_sum %s dims [0, 1, 2, 3] : tensor<2x4x8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
