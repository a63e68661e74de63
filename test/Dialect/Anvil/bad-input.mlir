// RUN: not anvil-opt %s --split-input-file 2>&1 | FileCheck %s

// Tests that bad input exits non-zero with a located diagnostic instead of
// crashing: a wrong shape, an unknown attribute, malformed IR, and a generic
// op missing its attributes.

// CHECK: bad-input.mlir:[[@LINE+2]]:8: error: 'anvil.matmul' op contraction sizes differ
func.func @wrong_shape(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %0 = anvil.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// CHECK: bad-input.mlir:[[@LINE+1]]:1: error: argument #0 has unknown attribute 'anvil.parm'
func.func private @unknown_attribute(tensor<4xf32> {anvil.parm = #anvil.input<name = "x">})

// -----

// CHECK: bad-input.mlir:[[@LINE+2]]:20: error: expected ':'
func.func @malformed(%a: tensor<4xf32>) {
  %0 = anvil.exp %a tensor<4xf32>
  return
}

// -----

// CHECK: bad-input.mlir:[[@LINE+2]]:8: error: 'anvil.transpose' op requires attribute 'permutation'
func.func @missing_attribute(%a: tensor<2x3xf32>) {
  %0 = "anvil.transpose"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}
