// RUN: anvil-opt %s --anvil-bufferize --verify-diagnostics

// Tests that anvil-bufferize refuses fused attention of another element type
// than f32 (the interpreter's f64, say): the runtime's functions, CPU and
// CUDA, take f32 buffers.
func.func @f64_attention(%q: tensor<1x2x8x4xf64>) -> tensor<1x2x8x4xf64> {
  // expected-error@+2 {{anvil-bufferize: 'anvil.flash_attention' of 'f64' is not supported by the runtime's functions yet (f32 only)}}
  // expected-error@+1 {{failed to bufferize op}}
  %o, %lse = anvil.flash_attention %q, %q, %q : (tensor<1x2x8x4xf64>, tensor<1x2x8x4xf64>, tensor<1x2x8x4xf64>) -> (tensor<1x2x8x4xf64>, tensor<1x2x8xf64>)
  return %o : tensor<1x2x8x4xf64>
}
