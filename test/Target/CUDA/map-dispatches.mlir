// RUN: anvil-opt %s --split-input-file --anvil-cuda-map-dispatches=vector-width=1 | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-cuda-map-dispatches="vector-width=1 block-size=64" | FileCheck %s --check-prefix=B64
// RUN: anvil-opt %s --split-input-file --anvil-cuda-map-dispatches | FileCheck %s --check-prefix=VEC
// RUN: anvil-opt %s --split-input-file --anvil-cuda-map-dispatches=warp-reductions=0 | FileCheck %s --check-prefix=OFF
// RUN: not anvil-opt %s --anvil-cuda-map-dispatches=block-size=100 2>&1 | FileCheck %s --check-prefix=BADSIZE
// RUN: not anvil-opt %s --anvil-cuda-map-dispatches=warp-reductions=-1 2>&1 | FileCheck %s --check-prefix=BADWARP
// BADWARP: error: anvil-cuda-map-dispatches: warp-reductions = -1 is not a number of terms (0: no warp reductions)
// RUN: not anvil-opt %s --anvil-cuda-map-dispatches=vector-width=3 2>&1 | FileCheck %s --check-prefix=BADVEC
// BADVEC: error: anvil-cuda-map-dispatches: vector-width = 3 is not 1, 2 or 4
// BADSIZE: error: anvil-cuda-map-dispatches: block-size = 100 is not a multiple of 32 in [32, 1024]

// Tests anvil-cuda-map-dispatches: a dispatch's loop nest becomes one
// launch over its linearized iteration space, innermost dimension fastest;
// what is not a loop nest runs on one thread; of the functions that are
// not dispatches, only copies between device buffers move (to kernels).

#id = affine_map<(d0, d1) -> (d0, d1)>
// 64 x 100 = 6400 points: 25 blocks of 256 threads, the last partly idle.
// CHECK-LABEL: func.func private @step__dispatch_0
// CHECK-DAG: %[[C25:.+]] = arith.constant 25 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C25]], %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C256]],
// CHECK: %[[T:.+]] = arith.constant 256 : index
// CHECK: %[[BASE:.+]] = arith.muli %[[BX]], %[[T]]
// CHECK: %[[I:.+]] = arith.addi %[[BASE]], %[[TX]]
// CHECK: %[[N:.+]] = arith.constant 6400 : index
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[I]], %[[N]]
// CHECK: scf.if %[[IN]] {
// CHECK:   %[[W:.+]] = arith.constant 100 : index
// CHECK:   %[[COL:.+]] = arith.remui %[[I]], %[[W]]
// CHECK:   %[[ROW:.+]] = arith.divui %[[I]], %{{.+}}
// CHECK:   %[[X:.+]] = memref.load %{{.+}}[%[[ROW]], %[[COL]]]
// CHECK:   %[[E:.+]] = math.exp %[[X]]
// CHECK:   memref.store %[[E]], %{{.+}}[%[[ROW]], %[[COL]]]
// CHECK: gpu.terminator
// B64-LABEL: func.func private @step__dispatch_0
// B64: gpu.launch blocks({{.+}}) in ({{.+}} = %c100{{.*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c64{{.*}},
// By default (vector-width 4) a thread takes 4 consecutive columns: 1600
// threads, 7 blocks; it reads and writes each buffer's run as one vector
// with the run's 16-byte alignment (ld/st.global.v4).
// VEC-LABEL: func.func private @step__dispatch_0
// VEC-DAG: %[[C7:.+]] = arith.constant 7 : index
// VEC: gpu.launch blocks({{.+}}) in ({{.+}} = %[[C7]], {{.+}}) threads({{.+}}) in ({{.+}} = %c256{{.*}},
// VEC: arith.constant 1600 : index
// VEC: %[[COL:.+]] = arith.remui %{{.+}}, %c25
// VEC: %[[ROW:.+]] = arith.divui %{{.+}}, %c25
// VEC: %[[J0:.+]] = arith.muli %[[COL]], %c4
// VEC: %[[J1:.+]] = arith.addi %[[J0]], %c1
// VEC: %[[J2:.+]] = arith.addi %[[J0]], %c2
// VEC: %[[J3:.+]] = arith.addi %[[J0]], %c3
// VEC: %[[X:.+]] = vector.load %{{.+}}[%[[ROW]], %[[J0]]] {alignment = 16 : i64} : memref<64x100xf32>, vector<4xf32>
// VEC: %[[X0:.+]] = vector.extract %[[X]][0]
// VEC: %[[X1:.+]] = vector.extract %[[X]][1]
// VEC: %[[X2:.+]] = vector.extract %[[X]][2]
// VEC: %[[X3:.+]] = vector.extract %[[X]][3]
// VEC: %[[E0:.+]] = math.exp %[[X0]]
// VEC: %[[E1:.+]] = math.exp %[[X1]]
// VEC: %[[E2:.+]] = math.exp %[[X2]]
// VEC: %[[E3:.+]] = math.exp %[[X3]]
// VEC: %[[R:.+]] = vector.from_elements %[[E0]], %[[E1]], %[[E2]], %[[E3]] : vector<4xf32>
// VEC: vector.store %[[R]], %{{.+}}[%[[ROW]], %[[J0]]] {alignment = 16 : i64}
// VEC-NOT: memref.store
// VEC: gpu.terminator
func.func private @step__dispatch_0(%a: memref<64x100xf32>, %b: memref<64x100xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x100xf32>) outs(%b : memref<64x100xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A row reduction of fewer terms than warp-reductions (256): one thread per
// row (8 rows: one warp, a block of 32), the reduced dimension a loop
// inside, its accumulator in a register: the output is loaded once before
// the loop and stored once after it. The loop is unrolled by 4 (200 terms:
// 50 iterations, no remainder), the adds in order.
// CHECK-LABEL: func.func private @step__dispatch_1
// CHECK: %[[C32:.+]] = arith.constant 32 : index
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{.*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %[[C32]],
// CHECK: %[[C8:.+]] = arith.constant 8 : index
// CHECK: arith.cmpi ult, %{{.+}}, %[[C8]]
// CHECK: %[[INIT:.+]] = memref.load %{{.+}}[%[[ROW:.+]]] : memref<8xf32>
// CHECK: %[[SUM:.+]] = scf.for %{{.+}} = %c0{{.*}} to %c200{{.*}} step %c4{{.*}} iter_args(%[[ACC:.+]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT: %[[X:.+]] = memref.load %{{.+}} : memref<8x200xf32>
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[X]], %[[ACC]]
// CHECK: %[[X1:.+]] = memref.load %{{.+}} : memref<8x200xf32>
// CHECK-NEXT: %[[S1:.+]] = arith.addf %[[X1]], %[[S]]
// CHECK: %[[X2:.+]] = memref.load %{{.+}} : memref<8x200xf32>
// CHECK-NEXT: %[[S2:.+]] = arith.addf %[[X2]], %[[S1]]
// CHECK: %[[X3:.+]] = memref.load %{{.+}} : memref<8x200xf32>
// CHECK-NEXT: %[[S3:.+]] = arith.addf %[[X3]], %[[S2]]
// CHECK-NEXT: scf.yield %[[S3]]
// CHECK: memref.store %[[SUM]], %{{.+}}[%[[ROW]]] : memref<8xf32>
func.func private @step__dispatch_1(%a: memref<8x200xf32>, %b: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<8x200xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An output seen through a view made in the dispatch keeps its loads and
// stores in the loop (another view of the same buffer could alias it).
// CHECK-LABEL: func.func private @step__dispatch_12
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: memref.load %{{.+}} : memref<8xf32, strided<[1]>>
// CHECK: memref.store %{{.+}} : memref<8xf32, strided<[1]>>
// CHECK: gpu.terminator
func.func private @step__dispatch_12(%a: memref<8x300xf32>, %b: memref<16xf32>) {
  %v = memref.subview %b[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<8x300xf32>) outs(%v : memref<8xf32, strided<[1]>>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A reduction over the leading dimension (the sum over the batch of weight
// gradients): the parallel loops go outermost, one thread per output point
// (64 x 96 = 6144: 24 blocks), each summing the 8 batch rows in order.
// CHECK-LABEL: func.func private @step__dispatch_7
// CHECK-DAG: %[[C24:.+]] = arith.constant 24 : index
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %[[C24]],
// CHECK: arith.constant 6144 : index
// CHECK: scf.if
// CHECK: scf.for %{{.+}} = %{{.+}} to %c8 {{.+}} iter_args
// CHECK:   memref.load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] : memref<8x64x96xf32>
// CHECK:   arith.addf
func.func private @step__dispatch_7(%a: memref<8x64x96xf32>, %b: memref<64x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>],
                  iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%a : memref<8x64x96xf32>) outs(%b : memref<64x96xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A scatter of rows (the embedding gradient: row idx[t] of the table gets
// row t of the gradient): the sequential loop over t wraps a loop over the
// columns, and column j only ever touches column j. The columns go
// outermost, a thread each (64: two warps), running the rows in order.
// CHECK-LABEL: func.func private @step__dispatch_8
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{[_0-9]*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c64{{[_0-9]*}},
// CHECK: scf.if
// CHECK: scf.for %{{.+}} = %{{.+}} to %c128
// CHECK:   memref.load %{{.+}}[%{{.+}}] : memref<128xi32>
// CHECK:   memref.subview
// CHECK:   memref.store
func.func private @step__dispatch_8(%idx: memref<128xi32>, %table: memref<256x64xf32>, %grad: memref<128x64xf32>) {
  %c0 = arith.constant 0 : index
  %c255 = arith.constant 255 : index
  %c128 = arith.constant 128 : index
  %c1 = arith.constant 1 : index
  scf.for %t = %c0 to %c128 step %c1 {
    %i = memref.load %idx[%t] : memref<128xi32>
    %r = arith.index_cast %i : i32 to index
    %lo = arith.maxsi %r, %c0 : index
    %row = arith.minsi %lo, %c255 : index
    %dst = memref.subview %table[%row, 0] [1, 64] [1, 1] : memref<256x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
    %src = memref.subview %grad[%t, 0] [1, 64] [1, 1] : memref<128x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                    iterator_types = ["parallel", "parallel"]}
        ins(%src : memref<1x64xf32, strided<[64, 1], offset: ?>>) outs(%dst : memref<1x64xf32, strided<[64, 1], offset: ?>>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %acc, %x : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

// Not when a column's iteration reaches another column (here the next
// row's column j + 1 through a shifted subview): one thread, as before.
// CHECK-LABEL: func.func private @step__dispatch_9
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{[_0-9]*}}, {{.+}} = %c1{{[_0-9]*}}, {{.+}} = %c1{{[_0-9]*}}) threads({{.+}}) in ({{.+}} = %c1{{[_0-9]*}},
// CHECK: scf.for
// CHECK: scf.parallel
func.func private @step__dispatch_9(%table: memref<128x65xf32>) {
  %c0 = arith.constant 0 : index
  %c127 = arith.constant 127 : index
  %c1 = arith.constant 1 : index
  scf.for %t = %c0 to %c127 step %c1 {
    %next = arith.addi %t, %c1 : index
    %src = memref.subview %table[%t, 0] [1, 64] [1, 1] : memref<128x65xf32> to memref<1x64xf32, strided<[65, 1], offset: ?>>
    %dst = memref.subview %table[%next, 1] [1, 64] [1, 1] : memref<128x65xf32> to memref<1x64xf32, strided<[65, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                    iterator_types = ["parallel", "parallel"]}
        ins(%src : memref<1x64xf32, strided<[65, 1], offset: ?>>) outs(%dst : memref<1x64xf32, strided<[65, 1], offset: ?>>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %acc, %x : f32
      linalg.yield %s : f32
    }
  }
  return
}

// -----

// A rank-0 result of a sum (shorter than warp-reductions) has no loop nest
// to map: one thread.
// CHECK-LABEL: func.func private @step__dispatch_2
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{[_0-9]*}}, {{.+}} = %c1{{[_0-9]*}}, {{.+}} = %c1{{[_0-9]*}}) threads({{.+}}) in ({{.+}} = %c1{{[_0-9]*}}, {{.+}} = %c1{{[_0-9]*}}, {{.+}} = %c1{{[_0-9]*}})
// CHECK: scf.for
// CHECK: gpu.terminator
// CHECK: return
func.func private @step__dispatch_2(%a: memref<200xf32>, %b: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%a : memref<200xf32>) outs(%b : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Widening with what cannot be aligned: a per-row value read once for the
// run (not along the columns), a view whose offset (2) puts the runs off
// their 16 bytes (read one element at a time, no alignment), booleans (8-bit
// elements) likewise; the aligned input and the output still get theirs.
// VEC-LABEL: func.func private @step__dispatch_18
// VEC: gpu.launch
// VEC: %[[J0:.+]] = arith.muli %{{.+}}, %c4
// VEC: vector.load %{{.+}}[%{{.+}}, %[[J0]]] {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
// VEC: memref.load %{{.+}}[%{{.+}}, %[[J0]]] : memref<8x64xf32, strided<[64, 1], offset: 2>>
// VEC: memref.load %{{.+}}[%{{.+}}, %[[J0]]] : memref<8x64xi1>
// VEC: memref.load %{{.+}}[%{{.+}}] : memref<8xf32>
// VEC-NOT: memref.load %{{.+}}[%{{.+}}] : memref<8xf32>
// VEC: vector.store %{{.+}}, %{{.+}}[%{{.+}}, %[[J0]]] {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
// A nest whose columns (30) are not a multiple of 4, or of booleans alone,
// stays a point a thread.
// VEC-LABEL: func.func private @step__dispatch_19
// VEC-NOT: alignment
// VEC: return
// VEC-LABEL: func.func private @step__dispatch_20
// VEC-NOT: alignment
// VEC-NOT: arith.muli %{{.+}}, %c4
// VEC: return
func.func private @step__dispatch_18(%a: memref<8x64xf32>, %u: memref<8x64xf32, strided<[64, 1], offset: 2>>, %p: memref<8x64xi1>, %r: memref<8xf32>, %b: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %u, %p, %r : memref<8x64xf32>, memref<8x64xf32, strided<[64, 1], offset: 2>>, memref<8x64xi1>, memref<8xf32>) outs(%b : memref<8x64xf32>) {
  ^bb0(%x: f32, %y: f32, %c: i1, %s: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %t = arith.select %c, %m, %s : f32
    linalg.yield %t : f32
  }
  return
}
func.func private @step__dispatch_19(%a: memref<8x30xf32>, %b: memref<8x30xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x30xf32>) outs(%b : memref<8x30xf32>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}
func.func private @step__dispatch_20(%a: memref<8x64xi1>, %b: memref<8x64xi1>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x64xi1>) outs(%b : memref<8x64xi1>) {
  ^bb0(%x: i1, %o: i1):
    %n = arith.xori %x, %x : i1
    linalg.yield %n : i1
  }
  return
}

// -----

// An index buffer beside an f32 one: the f32 runs are aligned, the index
// elements read one at a time. A row sum scaled by a scalar operand: the
// scalar is used as it is, on a warp per row.
// VEC-LABEL: func.func private @step__dispatch_21
// VEC: vector.load %{{.+}} {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
// VEC: memref.load %{{.+}} : memref<8x64xindex>
// VEC-LABEL: func.func private @step__dispatch_22
// VEC: scf.for
// VEC: arith.mulf %{{.+}}, %arg1 : f32
// VEC: gpu.shuffle xor
func.func private @step__dispatch_21(%a: memref<8x64xf32>, %i: memref<8x64xindex>, %b: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %i : memref<8x64xf32>, memref<8x64xindex>) outs(%b : memref<8x64xf32>) {
  ^bb0(%x: f32, %n: index, %o: f32):
    %c = arith.index_cast %n : index to i32
    %f = arith.sitofp %c : i32 to f32
    %s = arith.addf %x, %f : f32
    linalg.yield %s : f32
  }
  return
}
func.func private @step__dispatch_22(%a: memref<8x300xf32>, %k: f32, %b: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a, %k : memref<8x300xf32>, f32) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %s: f32, %acc: f32):
    %m = arith.mulf %x, %s : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Rows of 300 contiguous terms (softmax's denominator: the sum of exp(x - m)
// along a row, m the row's maximum): a warp per row. 6 x 2 = 12 rows, 384
// threads: 2 blocks of 256, the last 4 warps past the end. Lane l sums the
// terms l, l + 32, ... from -0, the 32 partials fold by shuffles, and lane 0
// of a warp with a row adds the total to the output.
// CHECK-LABEL: func.func private @step__dispatch_13
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C2]], {{.+}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C256]],
// CHECK-DAG: %[[WIB:.+]] = arith.divui %[[TX]], %c32
// CHECK-DAG: %[[BASE:.+]] = arith.muli %[[BX]], %c8
// CHECK: %[[WARP:.+]] = arith.addi %[[BASE]], %[[WIB]]
// CHECK: %[[LANE:.+]] = arith.remui %[[TX]], %c32
// CHECK: %[[ROW:.+]] = arith.minui %[[WARP]], %c11
// CHECK: %[[R1:.+]] = arith.remui %[[ROW]], %c2
// CHECK: %[[R0:.+]] = arith.divui %[[ROW]], %c2
// CHECK: %[[ZERO:.+]] = arith.constant -0.000000e+00 : f32
// CHECK: %[[PART:.+]] = scf.for %[[K:.+]] = %[[LANE]] to %c300{{.*}} step %c32{{.*}} iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (f32) {
// CHECK:   %[[X:.+]] = memref.load %{{.+}}[%[[R0]], %[[R1]], %[[K]]] : memref<6x2x300xf32>
// CHECK:   %[[M:.+]] = memref.load %{{.+}}[%[[R0]], %[[R1]]] : memref<6x2xf32>
// CHECK:   %[[D:.+]] = arith.subf %[[X]], %[[M]]
// CHECK:   %[[E:.+]] = math.exp %[[D]]
// CHECK:   %[[S:.+]] = arith.addf %[[E]], %[[ACC]]
// CHECK:   scf.yield %[[S]]
// CHECK: %[[O16:.+]], %{{.+}} = gpu.shuffle xor %[[PART]], %c16{{.*}}, %c32{{.*}} : f32
// CHECK: %[[P16:.+]] = arith.addf %[[O16]], %[[PART]]
// CHECK: gpu.shuffle xor %[[P16]], %c8
// CHECK: gpu.shuffle xor %{{.+}}, %c4
// CHECK: gpu.shuffle xor %{{.+}}, %c2
// CHECK: %[[O1:.+]], %{{.+}} = gpu.shuffle xor %[[P2:.+]], %c1{{.*}}, %c32
// CHECK: %[[TOTAL:.+]] = arith.addf %[[O1]], %[[P2]]
// CHECK-DAG: %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK-DAG: %[[HAS:.+]] = arith.cmpi ult, %[[WARP]], %c12
// CHECK: %[[STORE:.+]] = arith.andi %[[HAS]], %[[FIRST]]
// CHECK: scf.if %[[STORE]] {
// CHECK:   %[[OLD:.+]] = memref.load %{{.+}}[%[[R0]], %[[R1]]] : memref<6x2xf32>
// CHECK:   %[[NEW:.+]] = arith.addf %[[TOTAL]], %[[OLD]]
// CHECK:   memref.store %[[NEW]], %{{.+}}[%[[R0]], %[[R1]]] : memref<6x2xf32>
// B64-LABEL: func.func private @step__dispatch_13
// B64: gpu.launch blocks({{.+}}) in ({{.+}} = %c6{{.*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c64{{.*}},
// By default (vector-width 4) each lane folds runs of 4 (300 = 75 runs): it
// starts at 4 l, steps by 128, the run's first load 16-byte aligned (one
// ld.global.v4), the 4 terms folded in order.
// VEC-LABEL: func.func private @step__dispatch_13
// VEC: %[[LANE:.+]] = arith.remui %{{.+}}, %c32
// VEC: %[[FIRST:.+]] = arith.muli %[[LANE]], %c4
// VEC: scf.for %[[K:.+]] = %[[FIRST]] to %c300{{.*}} step %c128{{.*}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32) {
// VEC:   memref.load %{{.+}}[%{{.+}}, %{{.+}}, %[[K]]] {alignment = 16 : i64} : memref<6x2x300xf32>
// VEC:   %[[S0:.+]] = arith.addf %{{.+}}, %[[ACC]]
// VEC:   %[[K1:.+]] = arith.addi %[[K]], %c1
// VEC:   memref.load %{{.+}}[%{{.+}}, %{{.+}}, %[[K1]]] : memref<6x2x300xf32>
// VEC:   %[[S1:.+]] = arith.addf %{{.+}}, %[[S0]]
// VEC-COUNT-2: arith.addf
// VEC:   scf.yield
// OFF-LABEL: func.func private @step__dispatch_13
// OFF-NOT: gpu.shuffle
// OFF: gpu.terminator
func.func private @step__dispatch_13(%x: memref<6x2x300xf32>, %m: memref<6x2xf32>, %s: memref<6x2xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %m : memref<6x2x300xf32>, memref<6x2xf32>) outs(%s : memref<6x2xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Two reductions of the same rows (a maximum and a minimum, in the body's
// operand order), over two reduction dimensions (4 x 100 terms a row, the
// inner one contiguous): one warp a row, each lane's term split into its
// two coordinates, both partials shuffled at each step; the one row runs
// on a block of 32.
// CHECK-LABEL: func.func private @step__dispatch_14
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{[_0-9]*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c32{{[_0-9]*}},
// CHECK-DAG: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[PINF:.+]] = arith.constant 0x7F800000 : f32
// CHECK: %[[P:.+]]:2 = scf.for %[[K:.+]] = %{{.+}} to %c400{{.*}} step %c32{{.*}} iter_args(%[[MX:.+]] = %[[NINF]], %[[MN:.+]] = %[[PINF]]) -> (f32, f32) {
// CHECK:   %[[J:.+]] = arith.remui %[[K]], %c100
// CHECK:   %[[I:.+]] = arith.divui %[[K]], %c100
// CHECK:   %[[X:.+]] = memref.load %{{.+}}[%[[I]], %[[J]]] : memref<4x100xf32>
// CHECK:   arith.maximumf %[[MX]], %[[X]]
// CHECK:   arith.minimumf %[[X]], %[[MN]]
// CHECK: gpu.shuffle xor %[[P]]#0, %c16
// CHECK: gpu.shuffle xor %[[P]]#1, %c16
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK-COUNT-8: gpu.shuffle xor
// CHECK: scf.if
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: memref.store
// CHECK: memref.store
func.func private @step__dispatch_14(%x: memref<4x100xf32>, %mx: memref<f32>, %mn: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<4x100xf32>) outs(%mx, %mn : memref<f32>, memref<f32>) {
  ^bb0(%a: f32, %m: f32, %n: f32):
    %0 = arith.maximumf %m, %a : f32
    %1 = arith.minimumf %a, %n : f32
    linalg.yield %0, %1 : f32, f32
  }
  return
}

// -----

// What stays a thread a row: rows read across memory (the reduction
// dimension is not the input's innermost: a warp's lanes would stride),
// f64 rows, and a product (no warp combiner).
// CHECK-LABEL: func.func private @step__dispatch_15
// CHECK-NOT: gpu.shuffle
// CHECK: return
// CHECK-LABEL: func.func private @step__dispatch_16
// CHECK-NOT: gpu.shuffle
// CHECK: return
// CHECK-LABEL: func.func private @step__dispatch_17
// CHECK-NOT: gpu.shuffle
// CHECK: return
func.func private @step__dispatch_15(%x: memref<300x8xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<300x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}
func.func private @step__dispatch_16(%x: memref<8x300xf64>, %s: memref<8xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x300xf64>) outs(%s : memref<8xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %r = arith.addf %a, %acc : f64
    linalg.yield %r : f64
  }
  return
}
func.func private @step__dispatch_17(%x: memref<8x300xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x300xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.mulf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A full amax reduction (FP8's scale: max(out, |x|) over the whole tensor)
// on a grid: 64 x 1000 = 64,000 elements, at least 16 a thread, so 16
// blocks of 256 threads; each folds its grid-stride elements from -inf,
// the warp folds its lanes' partials by a butterfly of shuffles, and lane 0
// folds the warp's into the output with one atomic signed max of the bits
// (the output's address its aligned base plus its offset).
// CHECK-LABEL: func.func private @step__dispatch_5
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c16{{[_0-9]*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c256{{[_0-9]*}}, {{.+}})
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[STRIDE:.+]] = arith.constant 4096 : index
// CHECK-DAG: %[[TOTAL:.+]] = arith.constant 64000 : index
// CHECK: %[[P:.+]] = scf.for %{{.+}} = %{{.+}} to %[[TOTAL]] step %[[STRIDE]] iter_args(%[[ACC:.+]] = %[[NEGINF]]) -> (f32) {
// CHECK: %[[A:.+]] = math.absf
// CHECK: arith.maximumf %[[ACC]], %[[A]] : f32
// CHECK: memref.extract_strided_metadata
// CHECK: %[[S16:.+]], %{{.+}} = gpu.shuffle  xor %[[P]], %c16{{.*}}, %c32
// CHECK: %[[M16:.+]] = arith.maximumf %[[P]], %[[S16]] : f32
// CHECK-COUNT-4: gpu.shuffle  xor
// CHECK: %[[W:.+]] = arith.maximumf
// CHECK: scf.if
// CHECK: %[[BITS:.+]] = arith.bitcast %[[W]] : f32 to i32
// CHECK: llvm.atomicrmw max %{{.+}}, %[[BITS]] monotonic : !llvm.ptr, i32
// CHECK: gpu.terminator
func.func private @step__dispatch_5(%a: memref<64x1000xf32>, %b: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a : memref<64x1000xf32>) outs(%b : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = math.absf %x : f32
    %s = arith.maximumf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The cast and amax of a tensor merged by anvil-fuse (merge-amax): the
// codes stored at each point as it is visited, the amax folded as above.
// CHECK-LABEL: func.func private @step__dispatch_6
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: %[[X:.+]] = arith.addf
// CHECK: %[[Q:.+]] = arith.truncf %{{.+}} : f32 to f8E4M3FN
// CHECK: memref.store %[[Q]], %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x1000xf8E4M3FN>
// CHECK: scf.yield
// CHECK: llvm.atomicrmw max
func.func private @step__dispatch_6(%a: memref<64x1000xf32>, %b: memref<64x1000xf32>, %s: memref<f32>, %q: memref<64x1000xf8E4M3FN>, %m: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a, %b, %s : memref<64x1000xf32>, memref<64x1000xf32>, memref<f32>) outs(%q, %m : memref<64x1000xf8E4M3FN>, memref<f32>) {
  ^bb0(%x0: f32, %x1: f32, %sc: f32, %o: f8E4M3FN, %acc: f32):
    %x = arith.addf %x0, %x1 : f32
    %y = arith.mulf %x, %sc : f32
    %c = arith.truncf %y : f32 to f8E4M3FN
    %ab = math.absf %x : f32
    %mx = arith.maximumf %acc, %ab : f32
    linalg.yield %c, %mx : f8E4M3FN, f32
  }
  return
}

// -----

// A producer's kernel with the amax of one of its outputs merged in
// (anvil-fuse's merge-amax): a row statistic read at (d0, 0), both outputs
// stored at each point as it is visited, the amax folded as above.
// CHECK-LABEL: func.func private @step__dispatch_41
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: memref.load %{{.+}}[%{{.+}}, %c0{{[_0-9]*}}] : memref<64x1xf32>
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x1000xf32>
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x1000xf32>
// CHECK: scf.yield
// CHECK: llvm.atomicrmw max
func.func private @step__dispatch_41(%a: memref<64x1000xf32>, %r: memref<64x1xf32>, %y: memref<64x1000xf32>, %z: memref<64x1000xf32>, %m: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a, %r : memref<64x1000xf32>, memref<64x1xf32>) outs(%y, %z, %m : memref<64x1000xf32>, memref<64x1000xf32>, memref<f32>) {
  ^bb0(%x0: f32, %x1: f32, %o0: f32, %o1: f32, %acc: f32):
    %x = arith.mulf %x0, %x1 : f32
    %w = arith.addf %x, %x0 : f32
    %ab = math.absf %x : f32
    %mx = arith.maximumf %acc, %ab : f32
    linalg.yield %x, %w, %mx : f32, f32, f32
  }
  return
}

// -----

// A transpose that moves the input's innermost dimension (96, the GEMM's K)
// to the front: 32 x 32 tiles through shared memory (rows 33 long), 12
// blocks (3 tiles along 96, 2 along 64, 2 points of the middle dimension)
// of 32 x 8 threads. Each thread reads 4 elements along the input's rows
// (tx the innermost index: a warp reads 32 consecutive bytes) into the
// tile, waits, and writes 4 along the output's rows (tx innermost again).
// CHECK-LABEL: func.func private @step__dispatch_42
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c12{{[_0-9]*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c256{{[_0-9]*}}, {{.+}}) workgroup(%[[TILE:.+]] : memref<32x33xf8E4M3FN, #gpu.address_space<workgroup>>)
// CHECK: %[[TX:.+]] = arith.remui %{{.+}}, %c32
// CHECK-COUNT-4: memref.store %{{.+}}, %[[TILE]][%{{.+}}, %[[TX]]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[TILE]][%[[TX]], %{{.+}}]
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %[[C:.+]]] : memref<96x2x64xf8E4M3FN>
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func private @step__dispatch_42(%a: memref<2x64x96xf8E4M3FN>, %b: memref<96x2x64xf8E4M3FN>) {
  linalg.transpose ins(%a : memref<2x64x96xf8E4M3FN>) outs(%b : memref<96x2x64xf8E4M3FN>) permutation = [2, 0, 1]
  return
}

// -----

// The loops' indices (linalg.index, from a fused producer) are the point's;
// an output that stores the running maximum (a prefix maximum, which a grid
// would not give) keeps its dispatch on one thread.
// CHECK-LABEL: func.func private @step__dispatch_10
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c16{{[_0-9]*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c256{{[_0-9]*}}, {{.+}})
// CHECK-NOT: linalg.index
// CHECK: arith.index_cast
// CHECK: llvm.atomicrmw max
// CHECK-LABEL: func.func private @step__dispatch_11
// CHECK: gpu.launch blocks({{.+}}) in ({{.+}} = %c1{{[_0-9]*}}, {{.+}}) threads({{.+}}) in ({{.+}} = %c1{{[_0-9]*}}, {{.+}})
// CHECK-NOT: llvm.atomicrmw
// CHECK: return
func.func private @step__dispatch_10(%a: memref<64x1000xf32>, %q: memref<64x1000xf32>, %m: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a : memref<64x1000xf32>) outs(%q, %m : memref<64x1000xf32>, memref<f32>) {
  ^bb0(%x0: f32, %o: f32, %acc: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %x = arith.mulf %x0, %fi : f32
    %ab = math.absf %x : f32
    %mx = arith.maximumf %acc, %ab : f32
    linalg.yield %x, %mx : f32, f32
  }
  return
}
func.func private @step__dispatch_11(%a: memref<64x1000xf32>, %q: memref<64x1000xf32>, %m: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a : memref<64x1000xf32>) outs(%q, %m : memref<64x1000xf32>, memref<f32>) {
  ^bb0(%x: f32, %o: f32, %acc: f32):
    %ab = math.absf %x : f32
    %mx = arith.maximumf %acc, %ab : f32
    linalg.yield %mx, %mx : f32, f32
  }
  return
}

// -----

// Not a dispatch (the host's function): untouched.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: gpu.launch
// CHECK: linalg.fill
func.func @train_step(%b: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%b : memref<4xf32>)
  return
}

// -----

// Kernels cannot read the host's globals. A constant every call passes is
// read inside the kernel (outlining then copies the global into the kernel's
// module). Where calls pass different globals, or a global and a buffer,
// each further combination calls a copy of the dispatch of its own
// (`_c1`, ...) that reads its globals inside its kernels: nothing is
// allocated or copied on the host (a step stays capturable as a CUDA graph).
// CHECK-LABEL: func.func private @step__dispatch_3
// CHECK: gpu.launch
// CHECK: memref.get_global @table : memref<4xf32>
// CHECK: gpu.terminator
// The first combination (a global) keeps the dispatch.
// CHECK-LABEL: func.func private @step__dispatch_4(
// CHECK: gpu.launch
// CHECK: memref.get_global @table : memref<4xf32>
// CHECK: gpu.terminator
// CHECK-LABEL: func.func private @step__dispatch_4_c1(
// CHECK: gpu.launch
// CHECK-NOT: memref.get_global
// CHECK: gpu.terminator
// Two tables swapped between calls (Llama's cos and sin).
// CHECK-LABEL: func.func private @step__dispatch_40(
// CHECK: gpu.launch
// CHECK-DAG: %[[T:.+]] = memref.get_global @table : memref<4xf32>
// CHECK-DAG: %[[U:.+]] = memref.get_global @other : memref<4xf32>
// CHECK: memref.load %[[T]]
// CHECK: memref.load %[[U]]
// CHECK: gpu.terminator
// CHECK-LABEL: func.func private @step__dispatch_40_c1(
// CHECK: gpu.launch
// CHECK-DAG: %[[T1:.+]] = memref.get_global @table : memref<4xf32>
// CHECK-DAG: %[[U1:.+]] = memref.get_global @other : memref<4xf32>
// CHECK: memref.load %[[U1]]
// CHECK: memref.load %[[T1]]
// CHECK: gpu.terminator
// CHECK-LABEL: func.func @host
// CHECK-NOT: memref.alloc
// CHECK: %[[G:.+]] = memref.get_global @table
// CHECK: %[[H:.+]] = memref.get_global @other
// CHECK: call @step__dispatch_3(%[[G]], %{{.+}})
// CHECK: call @step__dispatch_4(%[[G]], %{{.+}})
// CHECK: call @step__dispatch_4_c1(%arg0, %{{.+}})
// CHECK: call @step__dispatch_4(%[[G]], %{{.+}})
// CHECK: call @step__dispatch_40(%[[G]], %[[H]], %{{.+}})
// CHECK: call @step__dispatch_40_c1(%[[H]], %[[G]], %{{.+}})
// CHECK-NOT: memref.alloc
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
memref.global "private" constant @other : memref<4xf32> = dense<[5.0, 6.0, 7.0, 8.0]>
func.func private @step__dispatch_3(%t: memref<4xf32>, %o: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%t : memref<4xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
func.func private @step__dispatch_4(%t: memref<4xf32>, %o: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%t : memref<4xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
func.func private @step__dispatch_40(%c: memref<4xf32>, %s: memref<4xf32>,
                                    %o: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                                   affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%c, %s : memref<4xf32>, memref<4xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  }
  return
}
func.func @host(%a: memref<4xf32>, %o: memref<4xf32>) {
  %g = memref.get_global @table : memref<4xf32>
  %h = memref.get_global @other : memref<4xf32>
  call @step__dispatch_3(%g, %o) : (memref<4xf32>, memref<4xf32>) -> ()
  call @step__dispatch_4(%g, %o) : (memref<4xf32>, memref<4xf32>) -> ()
  call @step__dispatch_4(%a, %o) : (memref<4xf32>, memref<4xf32>) -> ()
  call @step__dispatch_4(%g, %o) : (memref<4xf32>, memref<4xf32>) -> ()
  call @step__dispatch_40(%g, %h, %o)
      : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  call @step__dispatch_40(%h, %g, %o)
      : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// The host's own copies between device buffers run on the device, one
// thread per element: the workspace is device memory the host cannot read.
// A copy out of a constant global (host memory) stays on the host.
// CHECK-LABEL: func.func @copies
// CHECK: %[[LOSS:.+]] = memref.view %arg0
// CHECK: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c1{{.*}},
// CHECK:   %[[V:.+]] = memref.load %[[LOSS]][] : memref<f32>
// CHECK:   memref.store %[[V]], %arg1[] : memref<f32>
// CHECK:   gpu.terminator
// CHECK: %[[ROWS:.+]] = memref.view %arg0
// CHECK: gpu.launch
// CHECK:   %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %c12{{.*}} : index
// CHECK:   scf.if %[[IN]]
// CHECK:     %[[J:.+]] = arith.remui %{{.+}}, %c4{{.*}}
// CHECK:     %[[I:.+]] = arith.divui %{{.+}}, %c4{{.*}}
// CHECK:     %[[X:.+]] = memref.load %[[ROWS]][%[[I]], %[[J]]]
// CHECK:     memref.store %[[X]], %arg2[%[[I]], %[[J]]]
// CHECK: %[[G:.+]] = memref.get_global @init
// CHECK-NEXT: memref.copy %[[G]], %arg2
// A host store into a device buffer (a mesh axis's index into the
// workspace) runs on one thread of the device, the value its argument; a
// store into the host's own stack memory stays.
// CHECK: %[[AXIS:.+]] = memref.view %arg0
// CHECK: %[[I:.+]] = call @axis_index()
// CHECK: gpu.launch blocks({{.*}}) in (%{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads({{.*}}) in (%{{.+}} = %c1{{.*}},
// CHECK-NEXT: memref.store %[[I]], %[[AXIS]][] : memref<i64>
// CHECK-NEXT: gpu.terminator
// CHECK: %[[STACK:.+]] = memref.alloca() : memref<i64>
// CHECK-NEXT: memref.store %[[I]], %[[STACK]][] : memref<i64>
// CHECK: %[[HEAP:.+]] = memref.alloc() : memref<2xi64>
// CHECK: %[[SLOT:.+]] = memref.subview %[[HEAP]]
// CHECK-NEXT: memref.store %[[I]], %[[SLOT]][] : memref<i64, strided<[], offset: 1>>
// CHECK-NEXT: memref.load %[[HEAP]]
// CHECK: return
memref.global "private" constant @init : memref<3x4xf32> = dense<1.0>
func.func @copies(%ws: memref<4096xi8>, %loss: memref<f32>, %out: memref<3x4xf32>) {
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %l = memref.view %ws[%c64][] : memref<4096xi8> to memref<f32>
  memref.copy %l, %loss : memref<f32> to memref<f32>
  %r = memref.view %ws[%c128][] : memref<4096xi8> to memref<3x4xf32>
  memref.copy %r, %out : memref<3x4xf32> to memref<3x4xf32>
  %g = memref.get_global @init : memref<3x4xf32>
  memref.copy %g, %out : memref<3x4xf32> to memref<3x4xf32>
  %c0 = arith.constant 0 : index
  %axis = memref.view %ws[%c0][] : memref<4096xi8> to memref<i64>
  %i = call @axis_index() : () -> i64
  memref.store %i, %axis[] : memref<i64>
  %stack = memref.alloca() : memref<i64>
  memref.store %i, %stack[] : memref<i64>
  %heap = memref.alloc() : memref<2xi64>
  %slot = memref.subview %heap[1] [1] [1] : memref<2xi64> to memref<i64, strided<[], offset: 1>>
  memref.store %i, %slot[] : memref<i64, strided<[], offset: 1>>
  %back = memref.load %heap[%c0] : memref<2xi64>
  return
}
func.func private @axis_index() -> i64

// -----

// A fill of the output and the row reduction it starts (one dispatch, from
// anvil-outline-dispatches fills-into-reductions): one warp-per-row
// launch, no launch for the fill; lane 0 adds the row's total to the
// fill's value (0.5) where it would have read the output. With
// warp-reductions=0 a thread sums a row (the generic mapping), and the
// fill's loop nest folds into the sum's: one launch too.
// CHECK-LABEL: func.func private @step__dispatch_23
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: %[[INIT:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %{{.+}}, %[[INIT]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %{{.+}}[%{{.+}}, %{{.+}}] : memref<6x2xf32>
// CHECK-NOT: gpu.launch
// CHECK: return
// OFF-LABEL: func.func private @step__dispatch_23
// OFF: gpu.launch
// OFF-NOT: gpu.launch
// OFF: return
func.func private @step__dispatch_23(%x: memref<6x2x300xf32>, %s: memref<6x2xf32>) {
  %half = arith.constant 0.5 : f32
  linalg.fill ins(%half : f32) outs(%s : memref<6x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<6x2x300xf32>) outs(%s : memref<6x2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A fill and a column sum (one thread an output, through the generic
// mapping): the fill's loop nest folds into the sum's, whose accumulator
// starts from the fill's value instead of a load: one launch.
// CHECK-LABEL: func.func private @step__dispatch_24
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: gpu.launch
// CHECK-NOT: memref.load %{{.+}} : memref<768xf32>
// CHECK: scf.for %{{.+}} = %c0{{.*}} to %c64{{.*}} step %c4{{.*}} iter_args(%{{.+}} = %[[ZERO]]) -> (f32) {
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<768xf32>
// CHECK-NOT: gpu.launch
// CHECK: return
func.func private @step__dispatch_24(%x: memref<64x768xf32>, %s: memref<768xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<768xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x768xf32>) outs(%s : memref<768xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Two column sums merged into one generic (anvil-horizontal-fuse), each
// output filled: both fills' nests fold into the sums' nest (the first
// past the second's), each accumulator starting from its fill's value:
// one launch.
// CHECK-LABEL: func.func private @step__dispatch_26
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: gpu.launch
// CHECK-NOT: memref.load %{{.+}} : memref<768xf32>
// CHECK: scf.for %{{.+}} = %c0{{.*}} to %c64{{.*}} step %c4{{.*}} iter_args(%{{.+}} = %[[ZERO]], %{{.+}} = %[[HALF]]) -> (f32, f32) {
// CHECK-NOT: gpu.launch
// CHECK: return
func.func private @step__dispatch_26(%x: memref<64x768xf32>, %s: memref<768xf32>, %t: memref<768xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<768xf32>)
  linalg.fill ins(%half : f32) outs(%t : memref<768xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x768xf32>) outs(%s, %t : memref<768xf32>, memref<768xf32>) {
  ^bb0(%a: f32, %acc: f32, %acc2: f32):
    %r = arith.addf %a, %acc : f32
    %q = arith.mulf %a, %a : f32
    %r2 = arith.addf %q, %acc2 : f32
    linalg.yield %r, %r2 : f32, f32
  }
  return
}

// -----

// A fill nest of a buffer that the next nest does not write is not passed
// over: the first fill keeps its nest, and so does that one (the sum
// writes only %s).
// CHECK-LABEL: func.func private @step__dispatch_27
// CHECK-COUNT-3: gpu.launch
// CHECK-NOT: gpu.launch
func.func private @step__dispatch_27(%x: memref<64x768xf32>, %s: memref<768xf32>, %t: memref<768xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<768xf32>)
  linalg.fill ins(%half : f32) outs(%t : memref<768xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x768xf32>) outs(%s : memref<768xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A fill whose buffer the next nest reads but does not write keeps its own
// nest: its values are still needed after.
// CHECK-LABEL: func.func private @step__dispatch_25
// CHECK-COUNT-2: gpu.launch
func.func private @step__dispatch_25(%s: memref<768xf32>, %t: memref<768xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<768xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%s : memref<768xf32>) outs(%t : memref<768xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Rows of 67 points whose rows are padded to 128 (anvil-cpu-pad-gemm-rows):
// each row's 16 whole runs of 4 as vectors, and the rows' last 3 points in a
// second launch, a point a thread (16384 x 3 = 49152 threads): the nest has
// a million points or more (16384 x 67), where the second launch pays.
// VEC-LABEL: func.func private @step__dispatch_90
// VEC: gpu.launch
// VEC: vector.load %{{.+}} {alignment = 16 : i64} : memref<16384x67xf32, strided<[128, 1]>>, vector<4xf32>
// VEC: vector.store %{{.+}} {alignment = 16 : i64} : memref<16384x67xf32, strided<[128, 1]>>, vector<4xf32>
// VEC: gpu.terminator
// VEC: gpu.launch
// VEC: arith.constant 49152 : index
// VEC: %[[COL:.+]] = arith.remui %{{.+}}, %c3
// VEC: %[[J:.+]] = arith.addi %[[COL]], %c64
// VEC: %[[X:.+]] = memref.load %{{.+}}[%{{.+}}, %[[J]]] : memref<16384x67xf32, strided<[128, 1]>>
// VEC: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %[[J]]] : memref<16384x67xf32, strided<[128, 1]>>
// VEC: gpu.terminator
// VEC-NOT: gpu.launch
// VEC: return
func.func private @step__dispatch_90(%a: memref<16384x67xf32, strided<[128, 1]>>, %b: memref<16384x67xf32, strided<[128, 1]>>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16384x67xf32, strided<[128, 1]>>) outs(%b : memref<16384x67xf32, strided<[128, 1]>>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// The same rows, 8 of them (536 points): no second launch, a point a
// thread as before.
// VEC-LABEL: func.func private @step__dispatch_91
// VEC: gpu.launch
// VEC-NOT: vector.
// VEC: gpu.terminator
// VEC-NOT: gpu.launch
// VEC: return
func.func private @step__dispatch_91(%a: memref<8x67xf32, strided<[128, 1]>>, %b: memref<8x67xf32, strided<[128, 1]>>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x67xf32, strided<[128, 1]>>) outs(%b : memref<8x67xf32, strided<[128, 1]>>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A one-hot (the column's index compared with a label): the index feeds
// arithmetic, each lane its own column, and the run is still widened.
// VEC-LABEL: func.func private @step__dispatch_92
// VEC: %[[J0:.+]] = arith.muli %{{.+}}, %c4
// VEC: %[[J1:.+]] = arith.addi %[[J0]], %c1
// VEC: arith.index_cast %[[J0]] : index to i32
// VEC: arith.index_cast %[[J1]] : index to i32
// VEC: vector.store %{{.+}} {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
func.func private @step__dispatch_92(%labels: memref<8xi32>, %out: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%labels : memref<8xi32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%l: i32, %o: f32):
    %j = linalg.index 1 : index
    %id = arith.index_cast %j : index to i32
    %eq = arith.cmpi eq, %id, %l : i32
    %h = arith.uitofp %eq : i1 to f32
    linalg.yield %h : f32
  }
  return
}

// -----

// A thread's loop of 10 terms: unrolled by 4 over the first 8, the last 2
// in a loop after it, the sum in order; one of 6 (under 8 iterations) stays
// as it is.
// VEC-LABEL: func.func private @step__dispatch_93
// VEC: %[[MAIN:.+]] = scf.for %{{.+}} = %c0{{.*}} to %c8{{.*}} step %c4{{.*}} iter_args
// VEC-COUNT-4: arith.addf
// VEC: scf.yield
// VEC: %[[REST:.+]] = scf.for %{{.+}} = %c8{{.*}} to %c10{{.*}} step %c1{{.*}} iter_args(%{{.+}} = %[[MAIN]])
// VEC: memref.store %[[REST]]
// VEC-LABEL: func.func private @step__dispatch_94
// VEC: scf.for %{{.+}} = %c0{{.*}} to %c6{{.*}} step %c1{{.*}} iter_args
func.func private @step__dispatch_93(%a: memref<8x10xf32>, %b: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<8x10xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}
func.func private @step__dispatch_94(%a: memref<8x6xf32>, %b: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<8x6xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A gather along the rows: each point reads table[ids[i, j], j], a row that
// each lane looks up for itself. The ids and the output are runs of 4 (one
// vector each); the table is read one element a lane, each from its own row.
// VEC-LABEL: func.func private @step__dispatch_95
// VEC: %[[J0:.+]] = arith.muli %{{.+}}, %c4
// VEC: %[[J1:.+]] = arith.addi %[[J0]], %c1
// VEC: %[[IDS:.+]] = vector.load %{{.+}}[%{{.+}}, %[[J0]]] {alignment = 16 : i64} : memref<8x64xi32>, vector<4xi32>
// VEC: %[[I0:.+]] = vector.extract %[[IDS]][0]
// VEC: %[[I1:.+]] = vector.extract %[[IDS]][1]
// VEC: %[[R0:.+]] = arith.index_cast %[[I0]]
// VEC: %[[R1:.+]] = arith.index_cast %[[I1]]
// VEC: memref.load %arg1[%[[R0]], %[[J0]]] : memref<100x64xf32>
// VEC: memref.load %arg1[%[[R1]], %[[J1]]] : memref<100x64xf32>
// VEC-NOT: vector.load %arg1
// VEC: vector.store %{{.+}} {alignment = 16 : i64} : memref<8x64xf32>, vector<4xf32>
func.func private @step__dispatch_95(%ids: memref<8x64xi32>, %table: memref<100x64xf32>, %out: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%ids : memref<8x64xi32>) outs(%out : memref<8x64xf32>) {
  ^bb0(%id: i32, %o: f32):
    %j = linalg.index 1 : index
    %row = arith.index_cast %id : i32 to index
    %x = memref.load %table[%row, %j] : memref<100x64xf32>
    linalg.yield %x : f32
  }
  return
}

// -----

// The same gather with the ids and the output off their 16 bytes (offset
// 1): the only access along the columns a buffer could take as a vector is
// the table's, whose rows differ by lane, so the nest is not widened: a
// point a thread (512 threads).
// VEC-LABEL: func.func private @step__dispatch_96
// VEC: gpu.launch
// VEC: arith.cmpi ult, %{{.+}}, %c512
// VEC-NOT: vector.
// VEC-NOT: arith.muli %{{.+}}, %c4
// VEC: gpu.terminator
func.func private @step__dispatch_96(%ids: memref<8x64xi32, strided<[64, 1], offset: 1>>, %table: memref<100x64xf32>, %out: memref<8x64xf32, strided<[64, 1], offset: 1>>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%ids : memref<8x64xi32, strided<[64, 1], offset: 1>>) outs(%out : memref<8x64xf32, strided<[64, 1], offset: 1>>) {
  ^bb0(%id: i32, %o: f32):
    %j = linalg.index 1 : index
    %row = arith.index_cast %id : i32 to index
    %x = memref.load %table[%row, %j] : memref<100x64xf32>
    linalg.yield %x : f32
  }
  return
}
