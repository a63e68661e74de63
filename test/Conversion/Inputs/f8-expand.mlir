// Inputs of f8-casts.test's anvil-expand-f8-casts check.
func.func @trunc(%x: f32) -> f8E4M3FN {
  %y = arith.truncf %x : f32 to f8E4M3FN
  return %y : f8E4M3FN
}
func.func @trunc64(%x: f64) -> f8E5M2 {
  %y = arith.truncf %x : f64 to f8E5M2
  return %y : f8E5M2
}
func.func @ext(%x: f8E5M2) -> f64 {
  %y = arith.extf %x : f8E5M2 to f64
  return %y : f64
}
