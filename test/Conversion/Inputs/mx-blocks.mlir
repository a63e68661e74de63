// The functions check_mx.py runs: MX block quantization (blocks of 32 with
// E8M0 power-of-two scales) along the rows' dimension and along the
// columns'.
func.func @e4m3(%x: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %q = anvil.fp8_quantize %x forward f8E4M3FN block 32 dim 1 : tensor<256x64xf32>
  return %q : tensor<256x64xf32>
}

func.func @e5m2(%x: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %q = anvil.fp8_quantize %x forward f8E5M2 block 32 dim 0 : tensor<256x64xf32>
  return %q : tensor<256x64xf32>
}
