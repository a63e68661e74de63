// RUN: anvil-opt %s --anvil-bufferize --canonicalize | FileCheck %s

// Tests that state is updated in place: the result tied to %w leaves the
// signature, and the update writes straight into %w
// (no temporary, no copy); the untied loss stays a result.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[W:[a-z0-9]+]]: memref<8xf32>, %[[G:[a-z0-9]+]]: memref<8xf32>) -> memref<f32>
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.copy
// CHECK: linalg.generic {{.+}} ins(%[[W]], %[[G]] : memref<8xf32>, memref<8xf32>) outs(%[[W]] : memref<8xf32>)
// CHECK: return %{{.+}} : memref<f32>
#map = affine_map<(d0) -> (d0)>
func.func @step(%w: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32> {anvil.tied_to = 0 : i64}) {
  %loss = arith.constant dense<1.0> : tensor<f32>
  %e = tensor.empty() : tensor<8xf32>
  %next = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%w, %g : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  return %loss, %next : tensor<f32>, tensor<8xf32>
}
