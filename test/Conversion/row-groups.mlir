// RUN: anvil-opt %s --anvil-row-groups=min-rows=4 | FileCheck %s
// RUN: anvil-opt %s --anvil-row-groups=min-rows=4 --anvil-outline-dispatches | FileCheck %s --check-prefix=OUTLINE
// RUN: anvil-opt %s --anvil-row-groups=min-rows=4 --anvil-outline-dispatches --anvil-cuda-map-dispatches | FileCheck %s --check-prefix=MAP
// RUN: anvil-opt %s --anvil-row-groups=min-rows=4 --anvil-outline-dispatches --anvil-cuda-map-dispatches=warp-reductions=32 | FileCheck %s --check-prefix=WARP
// RUN: anvil-opt %s --anvil-row-groups=min-rows=4 --anvil-outline-dispatches --anvil-cuda-map-dispatches=warp-reductions=32 --anvil-cuda-emulate-launches | FileCheck %s --check-prefix=EMULATED
// RUN: anvil-opt %s --anvil-row-groups=min-rows=16 | FileCheck %s --check-prefix=FEW
// RUN: not anvil-opt %s --anvil-row-groups=min-rows=0 2>&1 | FileCheck %s --check-prefix=BAD

// Tests anvil-row-groups: the dispatches over the same rows that touch what
// the group writes only within a row make one region; anvil-outline-dispatches
// outlines it as one marked function, and anvil-cuda-map-dispatches runs
// that as one launch of a warp per row.

#row = affine_map<(d0, d1) -> (d0, d1)>
#stat = affine_map<(d0, d1) -> (d0, 0)>
#sum3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out3 = affine_map<(d0, d1, d2) -> (d0, d1)>

// A row sum (with its fill) and the centered rows: one region, over the
// fill of an unrelated buffer, which stays behind, the allocation the
// second member writes moving up with it.
// CHECK-LABEL: func.func @norm(
// CHECK: %[[C:.+]] = memref.alloc() : memref<8x64xf32>
// CHECK-NEXT: scf.execute_region no_inline {
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic {{.+}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic {{.+}}iterator_types = ["parallel", "parallel"]} ins(%arg0, %{{.+}} : memref<8x64xf32>, memref<8x1xf32>) outs(%[[C]] : memref<8x64xf32>)
// CHECK: scf.yield
// CHECK-NEXT: } {anvil.row_group}
// CHECK-NEXT: linalg.fill ins(%{{.+}} : f32) outs(%arg2 : memref<16xf32>)
// FEW-LABEL: func.func @norm(
// FEW-NOT: scf.execute_region
// FEW: return
// OUTLINE-LABEL: func.func private @norm__dispatch_0(
// OUTLINE-SAME: attributes {anvil.row_group}
// OUTLINE-NEXT: arith.constant
// OUTLINE-NEXT: linalg.fill
// OUTLINE-NEXT: linalg.generic
// OUTLINE: linalg.generic
// OUTLINE: return
// OUTLINE-LABEL: func.func private @norm__dispatch_1(
// OUTLINE-NOT: anvil.row_group
// OUTLINE-LABEL: func.func @norm(
// OUTLINE: call @norm__dispatch_0(
// OUTLINE-NEXT: call @norm__dispatch_1(%arg2)
// MAP-LABEL: func.func private @norm__dispatch_0(
// MAP-SAME: attributes {anvil.row_group}
// One launch: 8 rows, a warp each.
// MAP: gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{.*}}) threads({{.+}}) in (%{{.+}} = %c256
// Rows of 64 terms, below warp-reductions: lane 0 folds its row in order,
// from the fill's 0 (no store of the fill).
// MAP-NOT: gpu.shuffle
// MAP: scf.if
// MAP: scf.for {{.+}} iter_args(%{{.+}} = %cst
// MAP: arith.addf
// MAP: gpu.barrier
// The centered rows: lane l computes points 4 l to 4 l + 3 of its row (a
// run of 4: its first load aligned to 16 bytes, its results stored as one
// vector), the row's sum read once before.
// MAP: scf.if
// MAP-NEXT: memref.load %{{.+}} : memref<8x1xf32>
// MAP: scf.for %{{.+}} = %{{.+}} to %c64 step %c128
// MAP-NOT: memref<8x1xf32>
// MAP: memref.load {{.+}} {alignment = 16 : i64}
// MAP-NOT: memref<8x1xf32>
// MAP-COUNT-4: arith.subf
// MAP: vector.from_elements
// MAP: vector.store {{.+}} {alignment = 16 : i64}
// MAP-NOT: memref<8x1xf32>
// MAP-NOT: gpu.launch
// MAP: return
// With warp-reductions=32, the sums fold on the warp.
// WARP-LABEL: func.func private @norm__dispatch_0(
// WARP-COUNT-5: gpu.shuffle  xor
// WARP: gpu.barrier
// WARP-NOT: gpu.launch
// WARP: return
// EMULATED-LABEL: func.func private @norm__dispatch_0(
// EMULATED-NOT: gpu.launch
// EMULATED-NOT: gpu.barrier
// EMULATED: return
func.func @norm(%x: memref<8x64xf32>, %y: memref<8x64xf32>, %other: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<8x1xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8x1xf32>)
  %x3 = memref.expand_shape %x [[0], [1, 2]] output_shape [8, 1, 64] : memref<8x64xf32> into memref<8x1x64xf32>
  linalg.generic {indexing_maps = [#sum3, #out3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x3 : memref<8x1x64xf32>) outs(%sum : memref<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%other : memref<16xf32>)
  %c = memref.alloc() : memref<8x64xf32>
  linalg.generic {indexing_maps = [#row, #stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<8x64xf32>, memref<8x1xf32>) outs(%c : memref<8x64xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.subf %a, %s : f32
    linalg.yield %r : f32
  }
  return
}

// The second reads what the first writes at other rows (row r reads the
// sums of rows 0 to 7): no group.
// CHECK-LABEL: func.func @across(
// CHECK-NOT: scf.execute_region
// CHECK: return
func.func @across(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  %s = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#row, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %acc, %v : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, #row], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  return
}

// Views of one buffer: %b's bytes overlap %a's at other rows, so its
// reader stays apart (and after the write); %a1 is %a's bytes again, read
// within rows: its reader joins the writer, over %b's reader.
// CHECK-LABEL: func.func @views(
// CHECK: scf.execute_region no_inline {
// CHECK-NEXT: linalg.generic {{.+}} ins(%{{.+}} : memref<8x1x8xf32>) outs(%[[A:.+]] : memref<8x1xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[A1:.+]] : memref<8x1xf32>) outs(%arg3 : memref<8x8xf32>)
// CHECK: } {anvil.row_group}
// CHECK-NEXT: memref.view %arg0[%c16]
// CHECK-NEXT: linalg.generic {{.+}} ins(%{{.+}} : memref<8x1xf32>) outs(%arg2 : memref<8x8xf32>)
// CHECK: return
func.func @views(%arena: memref<1024xi8>, %x: memref<8x8xf32>, %y: memref<8x8xf32>, %z: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %a = memref.view %arena[%c0][] : memref<1024xi8> to memref<8x1xf32>
  %x3 = memref.expand_shape %x [[0], [1, 2]] output_shape [8, 1, 8] : memref<8x8xf32> into memref<8x1x8xf32>
  linalg.generic {indexing_maps = [#sum3, #out3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x3 : memref<8x1x8xf32>) outs(%a : memref<8x1xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %acc, %v : f32
    linalg.yield %r : f32
  }
  %b = memref.view %arena[%c16][] : memref<1024xi8> to memref<8x1xf32>
  linalg.generic {indexing_maps = [#stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<8x1xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  %a1 = memref.view %arena[%c0][] : memref<1024xi8> to memref<8x1xf32>
  linalg.generic {indexing_maps = [#stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%a1 : memref<8x1xf32>) outs(%z : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  return
}

// A library call between the two: no group. Neither for two dispatches
// that share nothing (anvil-horizontal-fuse's), nor for rows of 64 points
// of 4 rows (more than 8 points a row per row), nor for elementwise ops
// alone (anvil-fuse's).
// CHECK-LABEL: func.func @apart(
// CHECK-NOT: scf.execute_region
// CHECK: return
func.func private @library(memref<8x8xf32>)
func.func @apart(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %u: memref<4x64xf32>, %w: memref<4x64xf32>) {
  %a = memref.alloc() : memref<8x1xf32>
  %x3 = memref.expand_shape %x [[0], [1, 2]] output_shape [8, 1, 8] : memref<8x8xf32> into memref<8x1x8xf32>
  linalg.generic {indexing_maps = [#sum3, #out3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x3 : memref<8x1x8xf32>) outs(%a : memref<8x1xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %acc, %v : f32
    linalg.yield %r : f32
  }
  func.call @library(%x) : (memref<8x8xf32>) -> ()
  linalg.generic {indexing_maps = [#stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x1xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  %e = memref.alloc() : memref<8x8xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%e : memref<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  %b = memref.alloc() : memref<4x64xf32>
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%u : memref<4x64xf32>) outs(%b : memref<4x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<4x64xf32>) outs(%w : memref<4x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  return
}

// BAD: anvil-row-groups: min-rows = 0 is not a number of rows

// A member with no loops but the rows' (the mean of each row's sum): lane
// 0 computes each row's one point.
// CHECK-LABEL: func.func @stats(
// CHECK: scf.execute_region
// MAP-LABEL: func.func private @stats__dispatch_0(
// MAP: gpu.barrier
// MAP: scf.if
// MAP: scf.for %{{.+}} = %{{.+}} to %c1{{.*}} step %c32
// MAP: arith.divf
func.func @stats(%x: memref<8x64xf32>, %m: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%s : memref<8xf32>) outs(%m : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  }
  return
}

// A fill folds only into the reduction right after it, and only where that
// writes all of the buffer: %p's sum writes its column 0 of 4, so the fill
// is stored (the other columns keep it); the second sum into %s starts
// from the first's value, read back, not from the fill's.
// MAP-LABEL: func.func private @partial__dispatch_0(
// MAP: scf.if
// MAP: scf.for %{{.+}} = %{{.+}} to %c4 step %c32
// MAP: memref.store %cst{{.*}}, %{{.+}} : memref<8x4xf32>
// MAP: gpu.barrier
// MAP: memref.load %{{.+}} : memref<8x4xf32>
// MAP: gpu.barrier
// MAP: gpu.barrier
// MAP: scf.if
// MAP-NEXT: memref.load %{{.+}} : memref<8xf32>
// MAP: scf.for
// MAP-LABEL: func.func @partial(
func.func @partial(%x: memref<8x64xf32>, %y: memref<8x64xf32>, %p: memref<8x4xf32>, %s: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%p : memref<8x4xf32>)
  linalg.generic {indexing_maps = [#row, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%p : memref<8x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [#row, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#row, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  return
}

// A reduction with a parallel loop past the rows that its output does not
// index (4 sums a row into one element) is not a member.
// CHECK-LABEL: func.func @extra(
// CHECK-NOT: scf.execute_region
// CHECK: return
func.func @extra(%x: memref<8x4x8xf32>, %y: memref<8x8xf32>) {
  %s = memref.alloc() : memref<8x1xf32>
  linalg.generic {indexing_maps = [#sum3, affine_map<(d0, d1, d2) -> (d0, 0)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<8x4x8xf32>) outs(%s : memref<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#stat, #row], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8x1xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
