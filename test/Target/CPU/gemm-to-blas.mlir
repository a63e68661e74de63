// RUN: anvil-opt %s --split-input-file --anvil-cpu-gemm-to-blas | FileCheck %s

// Tests that a plain f32 matmul on buffers becomes one anvil_rt_sgemm call:
// no transposes, (m, n, k) = (8, 16, 4), ld = row strides, batch 1, adding
// to C (accumulate 1: C was not just zero-filled).
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[F:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[M:.+]] = arith.constant 8 : i64
// CHECK-DAG: %[[N:.+]] = arith.constant 16 : i64
// CHECK-DAG: %[[K:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[ACC:.+]] = arith.constant 1 : i32
// CHECK: call @anvil_rt_sgemm(%[[F]], %[[F]], %[[M]], %[[N]], %[[K]], %{{.+}}, %[[K]], %[[ZERO]], %{{.+}}, %[[N]], %[[ZERO]], %{{.+}}, %[[N]], %[[ZERO]], %[[ONE]], %[[ACC]])
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}

// -----

// Tests that a contraction generic whose m loops (d0, d1) are contiguous
// in A and C, with a transposed weight shared by the batch-free product,
// is one GEMM of m = 2 * 3 rows and a transposed B.
// CHECK-LABEL: func.func @collapsed_transposed
// CHECK-DAG: %[[T:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[F:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[M:.+]] = arith.constant 6 : i64
// CHECK: call @anvil_rt_sgemm(%[[F]], %[[T]], %[[M]],
func.func @collapsed_transposed(%a: memref<2x3x4xf32>, %w: memref<5x4xf32>, %c: memref<2x3x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<2x3x4xf32>, memref<5x4xf32>) outs(%c : memref<2x3x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests that a batch matmul keeps its batch strides, and that a matmul
// whose inner dimension is strided, or whose type is not f32, is left to
// the loops.
// CHECK-LABEL: func.func @batched_and_left_alone
// CHECK-DAG: %[[B:.+]] = arith.constant 6 : i64
// CHECK-DAG: %[[SA:.+]] = arith.constant 12 : i64
// CHECK: call @anvil_rt_sgemm({{.+}}, %[[SA]], {{.+}}, %[[B]], %{{.+}})
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<4x3xf32, strided<[1, 4]>>, memref<3x5xf32>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<4x3xf64>, memref<3x5xf64>)
func.func @batched_and_left_alone(%a: memref<6x4x3xf32>, %b: memref<6x3x5xf32>, %c: memref<6x4x5xf32>,
                                  %s: memref<4x3xf32, strided<[1, 4]>>, %w: memref<3x5xf32>, %o: memref<4x5xf32>,
                                  %d: memref<4x3xf64>, %e: memref<3x5xf64>, %f: memref<4x5xf64>) {
  linalg.batch_matmul ins(%a, %b : memref<6x4x3xf32>, memref<6x3x5xf32>) outs(%c : memref<6x4x5xf32>)
  linalg.matmul ins(%s, %w : memref<4x3xf32, strided<[1, 4]>>, memref<3x5xf32>) outs(%o : memref<4x5xf32>)
  linalg.matmul ins(%d, %e : memref<4x3xf64>, memref<3x5xf64>) outs(%f : memref<4x5xf64>)
  return
}

// -----

// Tests that a contraction of two bf16 buffers widened into an f32 C (a
// bf16 anvil.matmul's) calls anvil_rt_gemm_bf16 with the sgemm's
// arguments, and that one accumulating in bf16, or of a bf16 and an f32
// operand, is left to the loops.
// CHECK: func.func private @anvil_rt_gemm_bf16
// CHECK-LABEL: func.func @bf16
// CHECK-DAG: %[[T:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[F:.+]] = arith.constant 0 : i32
// CHECK: call @anvil_rt_gemm_bf16(%[[F]], %[[T]], {{.+}}) : (i32, i32, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64, i32) -> ()
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<4x3xbf16>, memref<3x5xbf16>) outs(%{{.+}} : memref<4x5xbf16>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<4x3xbf16>, memref<3x5xf32>) outs(%{{.+}} : memref<4x5xf32>)
func.func @bf16(%a: memref<4x3xbf16>, %wt: memref<5x3xbf16>, %c: memref<4x5xf32>,
                %w: memref<3x5xbf16>, %c16: memref<4x5xbf16>, %w32: memref<3x5xf32>) {
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d1, d2)>,
                                 affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %wt : memref<4x3xbf16>, memref<5x3xbf16>) outs(%c : memref<4x5xf32>)
  linalg.matmul ins(%a, %w : memref<4x3xbf16>, memref<3x5xbf16>) outs(%c16 : memref<4x5xbf16>)
  linalg.matmul ins(%a, %w32 : memref<4x3xbf16>, memref<3x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// -----

// Tests that a product into a buffer just filled with zeros overwrites it
// (accumulate 0) and the fill goes; a fill followed by another write to
// memory before the product stays, and the call accumulates.
// CHECK-LABEL: func.func @zero_filled
// CHECK-DAG: %[[OVER:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[ACC:.+]] = arith.constant 1 : i32
// CHECK-NOT: linalg.fill
// CHECK: call @anvil_rt_sgemm({{.+}}, %[[OVER]]) :
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%arg3 : memref<8x16xf32>)
// CHECK: memref.store
// CHECK: call @anvil_rt_sgemm({{.+}}, %[[ACC]]) :
// CHECK-LABEL: func.func @one_filled
// CHECK: linalg.fill
// CHECK: call @anvil_rt_sgemm({{.+}}, %c1_i32) :
// A product that reads C as an operand needs the zeros: the fill stays.
// CHECK-LABEL: func.func @reads_its_output
// CHECK: linalg.fill
// CHECK: call @anvil_rt_sgemm({{.+}}, %c1_i32) :
func.func @zero_filled(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>, %d: memref<8x16xf32>, %s: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  linalg.fill ins(%zero : f32) outs(%d : memref<8x16xf32>)
  memref.store %zero, %s[] : memref<f32>
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%d : memref<8x16xf32>)
  return
}
func.func @one_filled(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}
func.func @reads_its_output(%b: memref<16x16xf32>, %c: memref<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x16xf32>)
  linalg.matmul ins(%c, %b : memref<16x16xf32>, memref<16x16xf32>) outs(%c : memref<16x16xf32>)
  return
}

// -----

// Tests that a bf16 product overwriting a buffer of its own (zero-filled
// first), whose readers only round it to bf16 (a bf16 anvil.matmul's result:
// here a reshaped view of it, read by a bias add and by a plain cast),
// becomes anvil_rt_gemm_bf16_rounded into a bf16 buffer (no accumulate
// argument: it always overwrites), the views rebuilt on it and the readers'
// truncations gone; the f32 buffer goes.
// CHECK-LABEL: func.func @rounded
// CHECK-NOT: memref<8x6xf32>
// CHECK: %[[C:.+]] = memref.alloc() {alignment = 64 : i64} : memref<8x6xbf16>
// CHECK: %[[V:.+]] = memref.expand_shape %[[C]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 6] : memref<8x6xbf16> into memref<2x4x6xbf16>
// CHECK: memref.extract_aligned_pointer_as_index %[[C]]
// CHECK: call @anvil_rt_gemm_bf16_rounded({{.+}}) : (i32, i32, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64) -> ()
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.+}} ins(%[[V]], %{{.+}} : memref<2x4x6xbf16>, memref<6xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.+]]: bf16, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[X:.+]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: arith.addf %[[X]]
// CHECK: linalg.generic {{.+}} ins(%[[V]] : memref<2x4x6xbf16>)
// CHECK-NEXT: ^bb0(%[[IN2:.+]]: bf16, %{{.+}}: bf16):
// CHECK-NEXT: linalg.yield %[[IN2]] : bf16
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias = affine_map<(d0, d1, d2) -> (d2)>
func.func @rounded(%a: memref<8x5xbf16>, %w: memref<5x6xbf16>, %bias: memref<6xf32>,
                   %y: memref<2x4x6xf32>, %z: memref<2x4x6xbf16>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<8x6xf32>
  %v = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 6] : memref<8x6xf32> into memref<2x4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x6xf32>)
  linalg.matmul ins(%a, %w : memref<8x5xbf16>, memref<5x6xbf16>) outs(%c : memref<8x6xf32>)
  linalg.generic {indexing_maps = [#id3, #bias, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<2x4x6xf32>, memref<6xf32>) outs(%y : memref<2x4x6xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = arith.truncf %in : f32 to bf16
    %x = arith.extf %r : bf16 to f32
    %s = arith.addf %x, %b : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : memref<2x4x6xf32>) outs(%z : memref<2x4x6xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  return
}

// -----

// Tests that a bf16 product whose one reader only rounds it into a buffer
// of its own (attention's bf16 output gradient, read by a library call)
// is written there by the GEMM: the copy and the product's buffer go, the
// target's allocation moves before the call. Where something touches the
// target before the copy, the copy stays.
#id3c = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @into_its_reader
// CHECK-NOT: memref<8x6xf32>
// CHECK-NOT: memref.alloc() {{.*}} : memref<8x6xbf16>
// CHECK: %[[Y:.+]] = memref.alloc() {alignment = 64 : i64} : memref<2x4x6xbf16>
// CHECK: %[[FLAT:.+]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1, 2]] : memref<2x4x6xbf16> into memref<48xbf16>
// CHECK: %[[C:.+]] = memref.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [8, 6] : memref<48xbf16> into memref<8x6xbf16>
// CHECK: %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[C]]
// CHECK: %[[I:.+]] = arith.index_cast %[[P]]
// CHECK: %[[PTR:.+]] = llvm.inttoptr %[[I]]
// CHECK: call @anvil_rt_gemm_bf16_rounded({{.*}}, %[[PTR]], %c6_i64, %c0_i64, %c1_i64)
// CHECK-NOT: linalg.generic
// CHECK: call @use(%[[Y]])
// CHECK-LABEL: func.func @touched_before
// CHECK: call @anvil_rt_gemm_bf16_rounded(
// CHECK: linalg.generic
func.func private @use(memref<2x4x6xbf16>)
func.func @into_its_reader(%a: memref<8x5xbf16>, %w: memref<5x6xbf16>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<8x6xf32>
  %v = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 6] : memref<8x6xf32> into memref<2x4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x6xf32>)
  linalg.matmul ins(%a, %w : memref<8x5xbf16>, memref<5x6xbf16>) outs(%c : memref<8x6xf32>)
  %y = memref.alloc() {alignment = 64 : i64} : memref<2x4x6xbf16>
  linalg.generic {indexing_maps = [#id3c, #id3c], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : memref<2x4x6xf32>) outs(%y : memref<2x4x6xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  func.call @use(%y) : (memref<2x4x6xbf16>) -> ()
  return
}
func.func @touched_before(%a: memref<8x5xbf16>, %w: memref<5x6xbf16>) {
  %zero = arith.constant 0.0 : f32
  %y = memref.alloc() {alignment = 64 : i64} : memref<2x4x6xbf16>
  func.call @use(%y) : (memref<2x4x6xbf16>) -> ()
  %c = memref.alloc() {alignment = 64 : i64} : memref<8x6xf32>
  %v = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 6] : memref<8x6xf32> into memref<2x4x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x6xf32>)
  linalg.matmul ins(%a, %w : memref<8x5xbf16>, memref<5x6xbf16>) outs(%c : memref<8x6xf32>)
  linalg.generic {indexing_maps = [#id3c, #id3c], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : memref<2x4x6xf32>) outs(%y : memref<2x4x6xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  func.call @use(%y) : (memref<2x4x6xbf16>) -> ()
  return
}


// -----

// A reader that uses the f32 product itself (here: adds it unrounded), or a
// product accumulated into C: C stays f32 (anvil_rt_gemm_bf16).
// CHECK-LABEL: func.func @not_rounded
// CHECK: call @anvil_rt_gemm_bf16(
// CHECK: call @anvil_rt_gemm_bf16(
// CHECK-NOT: anvil_rt_gemm_bf16_rounded
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @not_rounded(%a: memref<8x5xbf16>, %w: memref<5x6xbf16>, %y: memref<8x6xf32>,
                       %acc: memref<8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<8x6xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x6xf32>)
  linalg.matmul ins(%a, %w : memref<8x5xbf16>, memref<5x6xbf16>) outs(%c : memref<8x6xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x6xf32>) outs(%y : memref<8x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.truncf %in : f32 to bf16
    %x = arith.extf %r : bf16 to f32
    %s = arith.addf %x, %in : f32
    linalg.yield %s : f32
  }
  linalg.matmul ins(%a, %w : memref<8x5xbf16>, memref<5x6xbf16>) outs(%acc : memref<8x6xf32>)
  return
}

