// RUN: anvil-opt %s --split-input-file --anvil-convert-to-linalg --anvil-fuse | FileCheck %s

// Tests that a chain of a broadcast, an add and a tanh becomes one
// generic reading the bias directly.
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: arith.addf
// CHECK: math.tanh
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %bb = anvil.broadcast %b, dims = [1] : tensor<8xf32> -> tensor<4x8xf32>
  %y = anvil.add %x, %bb : tensor<4x8xf32>
  %z = anvil.tanh %y : tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// Tests that an elementwise producer joins the reduction that reads each
// of its elements once: sum(x * y) is one generic.
// CHECK-LABEL: func.func @reduction
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
func.func @reduction(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4xf32> {
  %p = anvil.mul %x, %y : tensor<4x8xf32>
  %s = anvil.reduce_sum %p dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Tests that a GELU feeding a matmul stays its own dispatch: fused into
// the contraction, it would be recomputed for every output column.
// CHECK-LABEL: func.func @gelu_then_matmul
// CHECK: %[[G:.+]] = linalg.generic
// CHECK: math.tanh
// CHECK: linalg.matmul ins(%[[G]], %{{.+}} : tensor<4x8xf32>, tensor<8x16xf32>)
func.func @gelu_then_matmul(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %g = anvil.gelu tanh %x : tensor<4x8xf32>
  %y = anvil.matmul %g, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
