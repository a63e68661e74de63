// More composite ops for decompose-numerics.test: losses, normalizations
// over channels, embedding bags, RoPE and transposed convolutions.
func.func @more(
    %x: tensor<2x6x5x3xf64>, %t: tensor<2x6x5x3xf64>, %g: tensor<6xf64>,
    %b: tensor<6xf64>, %table: tensor<9x4xf64>, %ids: tensor<3x5xi64>,
    %q: tensor<2x3x7x8xf64>, %cos: tensor<7x4xf64>, %sin: tensor<7x4xf64>,
    %ct: tensor<2x4x5x6xf64>, %cw: tensor<4x3x3x2xf64>, %cb: tensor<6xf64>,
    %c1: tensor<1x3x7xf64>, %cw1: tensor<3x2x4xf64>)
    -> (tensor<f64>, tensor<f64>, tensor<2x6x5x3xf64>, tensor<f64>,
        tensor<2x6xf64>, tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>,
        tensor<2x6x5x3xf64>, tensor<6xf64>, tensor<6xf64>, tensor<2x6x5x3xf64>,
        tensor<3x4xf64>, tensor<3x4xf64>, tensor<2x3x7x8xf64>,
        tensor<2x3x7x8xf64>, tensor<2x6x11x12xf64>, tensor<1x2x22xf64>) {
  %0 = anvil.mse_loss mean %x, %t : (tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>) -> tensor<f64>
  %p = anvil.sigmoid %t : tensor<2x6x5x3xf64>
  %1 = anvil.bce_with_logits sum %x, %p : (tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>) -> tensor<f64>
  %2 = anvil.focal_loss none %x, %p {alpha = 0.25 : f64, gamma = 2.0 : f64} : (tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>) -> tensor<2x6x5x3xf64>
  %px = anvil.sigmoid %x : tensor<2x6x5x3xf64>
  %3 = anvil.dice_loss mean %px, %p {smooth = 1.0e-03 : f64} : (tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>) -> tensor<f64>
  %4 = anvil.dice_loss none %px, %p : (tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>) -> tensor<2x6xf64>
  %5 = anvil.group_norm %x scale(%g) bias(%b) groups = 3 : (tensor<2x6x5x3xf64>, tensor<6xf64>, tensor<6xf64>) -> tensor<2x6x5x3xf64>
  %6 = anvil.instance_norm %x scale(%g) {epsilon = 1.0e-03 : f64} : (tensor<2x6x5x3xf64>, tensor<6xf64>) -> tensor<2x6x5x3xf64>
  %7:3 = anvil.batch_norm_train %x, %g, %b : (tensor<2x6x5x3xf64>, tensor<6xf64>, tensor<6xf64>) -> (tensor<2x6x5x3xf64>, tensor<6xf64>, tensor<6xf64>)
  %var = anvil.abs %b : tensor<6xf64>
  %8 = anvil.batch_norm_inference %x, %g, %b, %g, %var : (tensor<2x6x5x3xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xf64>, tensor<6xf64>) -> tensor<2x6x5x3xf64>
  %9 = anvil.embedding_bag sum %table[%ids] : (tensor<9x4xf64>, tensor<3x5xi64>) -> tensor<3x4xf64>
  %10 = anvil.embedding_bag mean %table[%ids] : (tensor<9x4xf64>, tensor<3x5xi64>) -> tensor<3x4xf64>
  %11 = anvil.rope %q, %cos, %sin : (tensor<2x3x7x8xf64>, tensor<7x4xf64>, tensor<7x4xf64>) -> tensor<2x3x7x8xf64>
  %12 = anvil.rope %q, %cos, %sin {interleaved} : (tensor<2x3x7x8xf64>, tensor<7x4xf64>, tensor<7x4xf64>) -> tensor<2x3x7x8xf64>
  %13 = anvil.conv_transpose %ct, %cw, %cb stride [2, 2] pad_low [1, 0] pad_high [0, 1] dilation [1, 2] output_padding [1, 0] {groups = 2 : i64} : (tensor<2x4x5x6xf64>, tensor<4x3x3x2xf64>, tensor<6xf64>) -> tensor<2x6x11x12xf64>
  %14 = anvil.conv_transpose %c1, %cw1 stride [3] pad_low [2] pad_high [3] dilation [2] output_padding [2] : (tensor<1x3x7xf64>, tensor<3x2x4xf64>) -> tensor<1x2x22xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7#0, %7#1, %7#2, %8, %9, %10, %11, %12, %13, %14
      : tensor<f64>, tensor<f64>, tensor<2x6x5x3xf64>, tensor<f64>, tensor<2x6xf64>,
        tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>, tensor<2x6x5x3xf64>,
        tensor<6xf64>, tensor<6xf64>, tensor<2x6x5x3xf64>, tensor<3x4xf64>,
        tensor<3x4xf64>, tensor<2x3x7x8xf64>, tensor<2x3x7x8xf64>,
        tensor<2x6x11x12xf64>, tensor<1x2x22xf64>
}
