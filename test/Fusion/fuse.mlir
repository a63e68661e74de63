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

// -----

// Tests a one-hot: labels compared with the class ids 0, 1, ..., 6 (a
// constant whose values are their positions) read the column's index
// instead of a table (no constant left); other constants stay loads.
// CHECK-LABEL: func.func @one_hot
// CHECK-NOT: dense<[0, 1, 2, 3, 4, 5, 6]>
// CHECK: linalg.generic
// CHECK: %[[J:.+]] = linalg.index 1 : index
// CHECK: %[[ID:.+]] = arith.index_cast %[[J]] : index to i32
// CHECK: arith.cmpi eq, %[[ID]], %{{.+}} : i32
// CHECK-LABEL: func.func @not_positions
// CHECK: arith.constant dense<[0, 1, 2, 3, 4, 5, 7]> : tensor<7xi32>
// CHECK-NOT: linalg.index
func.func @one_hot(%labels: tensor<5xi32>) -> tensor<5x7xf32> {
  %ids = anvil.constant dense<[0, 1, 2, 3, 4, 5, 6]> : tensor<7xi32>
  %i = anvil.broadcast %ids, dims = [1] : tensor<7xi32> -> tensor<5x7xi32>
  %l = anvil.broadcast %labels, dims = [0] : tensor<5xi32> -> tensor<5x7xi32>
  %m = anvil.compare eq, %i, %l : tensor<5x7xi32>
  %h = anvil.cast %m : tensor<5x7xi1> to tensor<5x7xf32>
  return %h : tensor<5x7xf32>
}

func.func @not_positions(%labels: tensor<5xi32>) -> tensor<5x7xf32> {
  %ids = anvil.constant dense<[0, 1, 2, 3, 4, 5, 7]> : tensor<7xi32>
  %i = anvil.broadcast %ids, dims = [1] : tensor<7xi32> -> tensor<5x7xi32>
  %l = anvil.broadcast %labels, dims = [0] : tensor<5xi32> -> tensor<5x7xi32>
  %m = anvil.compare eq, %i, %l : tensor<5x7xi32>
  %h = anvil.cast %m : tensor<5x7xi1> to tensor<5x7xf32>
  return %h : tensor<5x7xf32>
}
