// The functions check_f8.py runs: f32 -> 8-bit float -> f32 through
// anvil.cast (saturating), and the same from f64.
func.func @e4m3(%x: tensor<1067584xf32>) -> tensor<1067584xf32> {
  %a = anvil.cast %x : tensor<1067584xf32> to tensor<1067584xf8E4M3FN>
  %b = anvil.cast %a : tensor<1067584xf8E4M3FN> to tensor<1067584xf32>
  return %b : tensor<1067584xf32>
}

func.func @e5m2(%x: tensor<1067584xf32>) -> tensor<1067584xf32> {
  %a = anvil.cast %x : tensor<1067584xf32> to tensor<1067584xf8E5M2>
  %b = anvil.cast %a : tensor<1067584xf8E5M2> to tensor<1067584xf32>
  return %b : tensor<1067584xf32>
}
