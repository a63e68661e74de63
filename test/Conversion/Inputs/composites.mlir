// Composite ops with odd shapes for the decomposition's numerics test
// (decompose-numerics.test): every result is compared with the
// interpreter's run of the original ops.
func.func @composites(
    %x: tensor<3x5x7xf64>, %g: tensor<5x7xf64>, %b: tensor<5x7xf64>,
    %q: tensor<2x4x5x3xf64>, %k: tensor<2x2x6x3xf64>, %v: tensor<2x2x6x2xf64>,
    %m: tensor<5x6xf64>, %z: tensor<3x5x7xf64>, %t: tensor<3x5xi64>)
    -> (tensor<3x5x7xf64>, tensor<3x5x7xf64>, tensor<3x5x7xf64>,
        tensor<3x5x7xf64>, tensor<2x4x5x2xf64>, tensor<2x4x5x2xf64>,
        tensor<f64>, tensor<3x5xf64>, tensor<f64>) {
  %s = anvil.softmax %x dim = 0 : tensor<3x5x7xf64>
  %ls = anvil.log_softmax %x dim = 1 : tensor<3x5x7xf64>
  %ln = anvil.layer_norm %x scale(%g) bias(%b) axis = 1 {epsilon = 1.0e-03}
      : (tensor<3x5x7xf64>, tensor<5x7xf64>, tensor<5x7xf64>) -> tensor<3x5x7xf64>
  %rms = anvil.rms_norm %x axis = 2 : (tensor<3x5x7xf64>) -> tensor<3x5x7xf64>
  %a = anvil.attention %q, %k, %v mask(%m) {causal}
      : (tensor<2x4x5x3xf64>, tensor<2x2x6x3xf64>, tensor<2x2x6x2xf64>, tensor<5x6xf64>) -> tensor<2x4x5x2xf64>
  %a2 = anvil.attention %q, %k, %v {scale = 0.25 : f64}
      : (tensor<2x4x5x3xf64>, tensor<2x2x6x3xf64>, tensor<2x2x6x2xf64>) -> tensor<2x4x5x2xf64>
  %ce = anvil.cross_entropy mean %z, %t {ignore_index = 3 : i64, label_smoothing = 0.1 : f64}
      : (tensor<3x5x7xf64>, tensor<3x5xi64>) -> tensor<f64>
  %cen = anvil.cross_entropy none %z, %t : (tensor<3x5x7xf64>, tensor<3x5xi64>) -> tensor<3x5xf64>
  %ces = anvil.cross_entropy sum %z, %t : (tensor<3x5x7xf64>, tensor<3x5xi64>) -> tensor<f64>
  return %s, %ls, %ln, %rms, %a, %a2, %ce, %cen, %ces
      : tensor<3x5x7xf64>, tensor<3x5x7xf64>, tensor<3x5x7xf64>,
        tensor<3x5x7xf64>, tensor<2x4x5x2xf64>, tensor<2x4x5x2xf64>,
        tensor<f64>, tensor<3x5xf64>, tensor<f64>
}
