// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg -verify-diagnostics

// Tests that a composite op left undecomposed is reported with the ops
// that have a lowering.
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{anvil-convert-to-linalg: no lowering for 'anvil.softmax' (composite ops need anvil-decompose first; ops with a lowering: anvil.abs, anvil.add,}}
  %y = anvil.softmax %x dim = 1 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
