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
