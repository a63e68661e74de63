// RUN: anvil-opt %s --split-input-file --anvil-cpu-pad-gemm-rows | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-cpu-pad-gemm-rows --anvil-cpu-gemm-to-blas | FileCheck %s --check-prefix=GEMM
// RUN: not anvil-opt %s --split-input-file --anvil-cpu-pad-gemm-rows=row-multiple=12 2>&1 | FileCheck %s --check-prefix=BAD

// Tests a head's logits (rows of 1027, not 16-byte aligned in bf16): the
// buffer is allocated with rows of 1088 (a multiple of 64) and used through
// the subview of its first 1027 columns; the reshapes on it get the padded
// strides, and the GEMMs read and write it with leading dimension 1088.
// CHECK-LABEL: func.func @logits
// CHECK: %[[WIDE:.+]] = memref.alloc() {alignment = 64 : i64} : memref<32x1088xf32>
// CHECK: %[[COLS:.+]] = memref.subview %[[WIDE]][0, 0] [32, 1027] [1, 1] : memref<32x1088xf32> to memref<32x1027xf32, strided<[1088, 1]>>
// CHECK: memref.expand_shape %[[COLS]] {{\[}}[0, 1], [2]] output_shape [4, 8, 1027] : memref<32x1027xf32, strided<[1088, 1]>> into memref<4x8x1027xf32, strided<[8704, 1088, 1]>>
// CHECK: linalg.generic
// CHECK-SAME: memref<4x8x1027xf32, strided<[8704, 1088, 1]>>
// CHECK: memref.dealloc %[[WIDE]] : memref<32x1088xf32>
// GEMM-LABEL: func.func @logits
// GEMM-DAG: %[[LD:.+]] = arith.constant 1088 : i64
// GEMM: call @anvil_rt_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[LD]],
// GEMM: call @anvil_rt_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[LD]],
// BAD: row-multiple = 12 is not a positive multiple of 8
func.func @logits(%x: memref<32x16xf32>, %w: memref<1027x16xf32>,
                  %dx: memref<32x16xf32>) {
  %c = memref.alloc() {alignment = 64 : i64} : memref<32x1027xf32>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<32x16xf32>, memref<1027x16xf32>)
      outs(%c : memref<32x1027xf32>)
  %e = memref.expand_shape %c [[0, 1], [2]] output_shape [4, 8, 1027]
      : memref<32x1027xf32> into memref<4x8x1027xf32>
  linalg.generic {indexing_maps = [affine_map<(a, b, n) -> (a, b, n)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%e : memref<4x8x1027xf32>) {
  ^bb0(%o: f32):
    %s = arith.mulf %o, %o : f32
    linalg.yield %s : f32
  }
  linalg.matmul ins(%c, %w : memref<32x1027xf32>, memref<1027x16xf32>)
                outs(%dx : memref<32x16xf32>)
  memref.dealloc %c : memref<32x1027xf32>
  return
}

// -----

// Tests what is left alone: rows already a multiple of 8 (1024), rows
// shorter than min-row (1000 % 8 = 0 anyway; 999), a buffer no contraction
// touches, and one whose address a library call takes (it may assume
// contiguous rows).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: memref.subview
// CHECK: return
func.func private @library(index)
func.func @left_alone(%x: memref<32x16xf32>, %w: memref<1024x16xf32>,
                      %w2: memref<999x16xf32>, %w3: memref<1027x16xf32>) {
  %a = memref.alloc() : memref<32x1024xf32>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<32x16xf32>, memref<1024x16xf32>)
      outs(%a : memref<32x1024xf32>)
  %b = memref.alloc() : memref<32x999xf32>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w2 : memref<32x16xf32>, memref<999x16xf32>)
      outs(%b : memref<32x999xf32>)
  %cst = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<32x1027xf32>
  linalg.fill ins(%cst : f32) outs(%c : memref<32x1027xf32>)
  %d = memref.alloc() : memref<32x1027xf32>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w3 : memref<32x16xf32>, memref<1027x16xf32>)
      outs(%d : memref<32x1027xf32>)
  %p = memref.extract_aligned_pointer_as_index %d : memref<32x1027xf32> -> index
  func.call @library(%p) : (index) -> ()
  return
}

// -----

// Tests a reshape that would split the padded rows (1027 x 2 as 2054): the
// buffer stays contiguous.
// CHECK-LABEL: func.func @rows_merged
// CHECK-NOT: memref.subview
// CHECK: memref.collapse_shape %{{.+}} {{\[}}[0, 1]] : memref<4x1027xf32> into memref<4108xf32>
func.func @rows_merged(%x: memref<4x16xf32>, %w: memref<1027x16xf32>,
                       %out: memref<4108xf32>) {
  %c = memref.alloc() : memref<4x1027xf32>
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<4x16xf32>, memref<1027x16xf32>)
      outs(%c : memref<4x1027xf32>)
  %flat = memref.collapse_shape %c [[0, 1]] : memref<4x1027xf32> into memref<4108xf32>
  memref.copy %flat, %out : memref<4108xf32> to memref<4108xf32>
  return
}

// -----

// Tests a bf16 product with rows of 1027 whose reader only rounds it (what a
// bf16 anvil.matmul's logits are): padded here, then anvil-cpu-gemm-to-blas
// narrows the padded buffer to bf16 through the subview and writes the
// rounded product with leading dimension 1088.
// CHECK-LABEL: func.func @rounded_logits
// CHECK: memref.alloc() : memref<32x1088xf32>
// GEMM-LABEL: func.func @rounded_logits
// GEMM-NOT: memref<32x1088xf32>
// GEMM: %[[WIDE:.+]] = memref.alloc() : memref<32x1088xbf16>
// GEMM: memref.subview %[[WIDE]][0, 0] [32, 1027] [1, 1] : memref<32x1088xbf16> to memref<32x1027xbf16, strided<[1088, 1]>>
// GEMM: call @anvil_rt_gemm_bf16_rounded({{.*}}, %c1088_i64, %c0_i64, %c1_i64)
// GEMM: linalg.generic {{.+}} ins(%{{.+}} : memref<32x1027xbf16, strided<[1088, 1]>>)
func.func @rounded_logits(%x: memref<32x16xbf16>, %w: memref<1027x16xbf16>,
                          %y: memref<32x1027xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<32x1027xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<32x1027xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<32x16xbf16>, memref<1027x16xbf16>)
      outs(%c : memref<32x1027xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<32x1027xf32>) outs(%y : memref<32x1027xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.truncf %in : f32 to bf16
    %e = arith.extf %r : bf16 to f32
    %s = arith.mulf %e, %e : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tests an operand whose rows are half of a group: A's k is two loops
// (4 x 1025), which a GEMM library takes as one dimension of 4100
// contiguous elements. Padded rows would break that (the contraction would
// stay a loop nest), so A stays contiguous and the call is made.
// CHECK-LABEL: func.func @split_k
// CHECK-NOT: memref.subview
// CHECK: return
// GEMM-LABEL: func.func @split_k
// GEMM: call @anvil_rt_sgemm
func.func @split_k(%x: memref<8x4x1025xf32>, %w: memref<4x1025x16xf32>,
                   %c: memref<8x16xf32>) {
  %a = memref.alloc() : memref<8x4x1025xf32>
  linalg.copy ins(%x : memref<8x4x1025xf32>) outs(%a : memref<8x4x1025xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k1, k2) -> (m, k1, k2)>,
                                   affine_map<(m, n, k1, k2) -> (k1, k2, n)>,
                                   affine_map<(m, n, k1, k2) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %w : memref<8x4x1025xf32>, memref<4x1025x16xf32>)
      outs(%c : memref<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return
}
