// RUN: anvil-opt %s --split-input-file --anvil-bufferize --verify-diagnostics

// Tests that anvil-bufferize refuses an op marked anvil.library_call that
// is no library call: a convolution with padding a library cannot take, or
// a bias (anvil-library-convs splits it off); an embedding gradient of
// bf16, or one not marked.
func.func @asymmetric(%x: tensor<2x4x9x8xf32>, %w: tensor<6x4x3x2xf32>) -> tensor<2x6x5x8xf32> {
  // expected-error@+2 {{anvil-bufferize: 'anvil.conv' is not a library convolution (anvil-library-convs marks them and splits their bias off; this one is lowered by anvil-convert-to-linalg)}}
  // expected-error@+1 {{failed to bufferize op}}
  %0 = anvil.conv %x, %w stride [2, 1] pad_low [1, 0] pad_high [1, 2] dilation [1, 2] {anvil.library_call} : (tensor<2x4x9x8xf32>, tensor<6x4x3x2xf32>) -> tensor<2x6x5x8xf32>
  return %0 : tensor<2x6x5x8xf32>
}

// -----

func.func @bias(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error@+2 {{anvil-bufferize: 'anvil.conv' is not a library convolution}}
  // expected-error@+1 {{failed to bufferize op}}
  %0 = anvil.conv %x, %w, %b stride [1, 1] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {anvil.library_call} : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// An embedding gradient left as a runtime call must be one the runtime
// takes: f32 gradients and i32 ids, marked.
func.func @embedding_grad_bf16(%g: tensor<6x8xbf16>, %ids: tensor<6xi32>) -> tensor<10x8xbf16> {
  // expected-error@+2 {{anvil-bufferize: this anvil.embedding_grad is not a runtime call (one of f32 gradients and i32 ids of static shapes marked anvil.library_call, as anvil-convert-to-linalg's library-embedding-grads marks them; the others become a loop there)}}
  // expected-error@+1 {{failed to bufferize op}}
  %t = anvil.embedding_grad %g[%ids] rows = 10 {anvil.library_call} : (tensor<6x8xbf16>, tensor<6xi32>) -> tensor<10x8xbf16>
  return %t : tensor<10x8xbf16>
}

// -----

func.func @embedding_grad_unmarked(%g: tensor<6x8xf32>, %ids: tensor<6xi32>) -> tensor<10x8xf32> {
  // expected-error@+2 {{anvil-bufferize: this anvil.embedding_grad is not a runtime call}}
  // expected-error@+1 {{failed to bufferize op}}
  %t = anvil.embedding_grad %g[%ids] rows = 10 : (tensor<6x8xf32>, tensor<6xi32>) -> tensor<10x8xf32>
  return %t : tensor<10x8xf32>
}
