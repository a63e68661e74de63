// RUN: anvil-opt %s --split-input-file --anvil-plan-memory | FileCheck %s

// Tests that buffers whose lifetimes are disjoint share bytes and those
// that overlap do not: %a dies when %b is filled, so %c reuses its bytes;
// the workspace is two buffers (128 bytes), not three.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[WS:[a-z0-9]+]]: memref<128xi8>)
// CHECK: %[[O1:.+]] = arith.constant 0 : index
// CHECK: memref.view %[[WS]][%[[O1]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[O2:.+]] = arith.constant 64 : index
// CHECK: memref.view %[[WS]][%[[O2]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[O3:.+]] = arith.constant 0 : index
// CHECK: memref.view %[[WS]][%[[O3]]][] : memref<128xi8> to memref<16xf32>
// CHECK-NOT: memref.alloc
func.func @step(%x: memref<16xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  linalg.copy ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<16xf32>
  linalg.copy ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
  %c = memref.alloc() : memref<16xf32>
  linalg.copy ins(%b : memref<16xf32>) outs(%c : memref<16xf32>)
  linalg.copy ins(%c : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// Tests that a use through a view keeps the buffer alive (%a, read through
// %flat by the last copy, overlaps %b and %c: three buffers, 192 bytes),
// and that a returned buffer is left allocated (it escapes the step).
// CHECK-LABEL: func.func @views_and_escapes
// CHECK-SAME: %{{.+}}: memref<192xi8>)
// CHECK: %[[KEEP:.+]] = memref.alloc() : memref<4xf32>
// CHECK: return %[[KEEP]]
func.func @views_and_escapes(%x: memref<2x8xf32>, %out: memref<16xf32>) -> memref<4xf32> {
  %a = memref.alloc() : memref<2x8xf32>
  linalg.copy ins(%x : memref<2x8xf32>) outs(%a : memref<2x8xf32>)
  %flat = memref.collapse_shape %a [[0, 1]] : memref<2x8xf32> into memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  linalg.copy ins(%flat : memref<16xf32>) outs(%b : memref<16xf32>)
  %c = memref.alloc() : memref<16xf32>
  linalg.copy ins(%flat : memref<16xf32>) outs(%c : memref<16xf32>)
  linalg.copy ins(%b : memref<16xf32>) outs(%out : memref<16xf32>)
  %keep = memref.alloc() : memref<4xf32>
  return %keep : memref<4xf32>
}

// -----

// Tests that a buffer yielded out of a region lives as long as the
// region's result: %a is read through %r after %b is filled, so %b must
// not take %a's bytes (two buffers, 128 bytes).
// CHECK-LABEL: func.func @yielded
// CHECK-SAME: %{{[a-z0-9]+}}: memref<128xi8>)
func.func @yielded(%x: memref<16xf32>, %c: i1, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  linalg.copy ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
  %r = scf.if %c -> memref<16xf32> {
    scf.yield %a : memref<16xf32>
  } else {
    scf.yield %x : memref<16xf32>
  }
  %b = memref.alloc() : memref<16xf32>
  linalg.copy ins(%x : memref<16xf32>) outs(%b : memref<16xf32>)
  linalg.copy ins(%r : memref<16xf32>) outs(%out : memref<16xf32>)
  linalg.copy ins(%b : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
