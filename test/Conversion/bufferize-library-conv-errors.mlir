// RUN: anvil-opt %s --split-input-file --anvil-bufferize --verify-diagnostics

// Tests that anvil-bufferize refuses a convolution marked
// anvil.library_call that is no library call: padding a library cannot
// take, or a bias (anvil-library-convs splits it off).
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
