// RUN: anvil-opt %s --linalg-generalize-named-ops --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s

// Tests that anvil-opt registers the upstream passes and bufferization
// models the lowering pipeline relies on (linalg, one-shot bufferization of
// func/tensor/linalg/arith/scf), so that each stage can be run on its own.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%{{.+}}: memref<4x8xf32{{.*}}>, %{{.+}}: memref<8x16xf32{{.*}}>, %[[C:.+]]: memref<4x16xf32{{.*}}>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[C]] : memref<4x16xf32{{.*}}>)
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
