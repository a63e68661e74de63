// RUN: anvil-opt %s --split-input-file --anvil-cpu-parallel-dispatches=min-iterations=1000 | FileCheck %s

// Tests that a large dispatch gets a chunk function whose outermost loop
// runs over [lo, hi), named with the extent of that loop, and that a small
// one and one whose first loop is a reduction do not.
// CHECK-LABEL: func.func private @step__dispatch_0(
// CHECK-LABEL: func.func private @step__dispatch_0__chunk_of_64(
// CHECK-SAME: %[[LO:[a-z0-9]+]]: index, %[[HI:[a-z0-9]+]]: index)
// CHECK: scf.for %{{.+}} = %[[LO]] to %[[HI]]
// CHECK: scf.for
// CHECK-NOT: __chunk_of_
#id = affine_map<(d0, d1) -> (d0, d1)>
#sum0 = affine_map<(d0, d1) -> (d1)>
func.func private @step__dispatch_0(%a: memref<64x32xf32>, %b: memref<64x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x32xf32>) outs(%b : memref<64x32xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}
func.func private @step__dispatch_1(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  linalg.copy ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>)
  return
}
func.func private @step__dispatch_2(%a: memref<64x32xf32>, %b: memref<32xf32>) {
  linalg.generic {indexing_maps = [#id, #sum0], iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<64x32xf32>) outs(%b : memref<32xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}
