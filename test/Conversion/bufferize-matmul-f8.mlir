// RUN: anvil-opt %s --split-input-file --anvil-bufferize --canonicalize | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-bufferize="gemm-f8=anvil_rt_cuda_gemm_f8 gemm-f8-gelu=anvil_rt_cuda_gemm_f8_gelu" --canonicalize | FileCheck %s --check-prefix=CUDA

// Tests how anvil-bufferize calls the runtime for anvil.matmul_f8: one call
// of anvil_rt_gemm_f8 (RuntimeABI.h) writing a new buffer, with the
// transposes, M, N, K, each operand's pointer, format (0 E4M3, 1 E5M2), row
// and batch strides, the scales' pointers, the bias's (null without one),
// the result's pointer, type (1: bf16), row and batch strides, and the
// batch.

// A batch of 2 (x: 2 x 4 x 32, K innermost) times a weight the batch
// shares (8 x 32: batch stride 0, transposed), into bf16.
// CHECK-LABEL: func.func @linear
// CHECK: %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[D:.+]] = memref.alloc() {{.*}}: memref<2x4x8xbf16>
// CHECK: call @anvil_rt_gemm_f8(%c0_i32, %c1_i32, %c4_i64, %c8_i64, %c32_i64, %{{.+}}, %c0_i32, %c32_i64, %c128_i64, %{{.+}}, %c1_i32, %c32_i64, %c0_i64, %{{.+}}, %{{.+}}, %[[NULL]], %{{.+}}, %c1_i32, %c8_i64, %c32_i64, %c2_i64) : (i32, i32, i64, i64, i64, !llvm.ptr, i32, i64, i64, !llvm.ptr, i32, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i64, i64, i64) -> ()
// CHECK: return %[[D]]
// CUDA-LABEL: func.func @linear
// CUDA: call @anvil_rt_cuda_gemm_f8(
func.func @linear(%x: tensor<2x4x32xf8E4M3FN>, %w: tensor<8x32xf8E5M2>, %sx: tensor<f32>, %sw: tensor<f32>) -> tensor<2x4x8xbf16> {
  %y = anvil.matmul_f8 %x, %w scales(%sx, %sw) {transpose_rhs} : (tensor<2x4x32xf8E4M3FN>, tensor<8x32xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<2x4x8xbf16>
  return %y : tensor<2x4x8xbf16>
}

// -----

// Batched operands of their own, the lhs transposed (3 x (16 x 4): K = 16
// rows of 4), into f32.
// CHECK-LABEL: func.func @batched
// CHECK: call @anvil_rt_gemm_f8(%c1_i32, %c0_i32, %c4_i64, %c8_i64, %c16_i64, %{{.+}}, %c0_i32, %c4_i64, %c64_i64, %{{.+}}, %c0_i32, %c8_i64, %c128_i64, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %c0_i32, %c8_i64, %c32_i64, %c3_i64)
func.func @batched(%a: tensor<3x16x4xf8E4M3FN>, %b: tensor<3x16x8xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<3x4x8xf32> {
  %y = anvil.matmul_f8 %a, %b scales(%sa, %sb) {transpose_lhs} : (tensor<3x16x4xf8E4M3FN>, tensor<3x16x8xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<3x4x8xf32>
  return %y : tensor<3x4x8xf32>
}

// -----

// A bias (bf16, one per column) passed as its buffer's pointer.
// CHECK-LABEL: func.func @bias
// CHECK-NOT: llvm.mlir.zero
// CHECK: memref.extract_aligned_pointer_as_index %arg4 : memref<16xbf16>
// CHECK-NEXT: %[[I:.+]] = arith.index_cast
// CHECK-NEXT: %[[P:.+]] = llvm.inttoptr %[[I]] : i64 to !llvm.ptr
// CHECK: call @anvil_rt_gemm_f8(%c0_i32, %c1_i32, %c4_i64, %c16_i64, %c32_i64, {{.+}}, %[[P]], %{{.+}}, %c1_i32, %c16_i64, %c64_i64, %c1_i64)
func.func @bias(%x: tensor<4x32xf8E4M3FN>, %w: tensor<16x32xf8E5M2>, %sx: tensor<f32>, %sw: tensor<f32>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %y = anvil.matmul_f8 %x, %w scales(%sx, %sw) bias(%b) {transpose_rhs} : (tensor<4x32xf8E4M3FN>, tensor<16x32xf8E5M2>, tensor<f32>, tensor<f32>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// -----

// anvil.linear_gelu_f8: three new buffers (the codes, pre, the amax)
// written by one call of anvil_rt_gemm_f8_gelu: the rhs's transpose, M (the
// lhs's 2 x 4 rows), N, K, the operands' pointers and formats, the scales',
// the bias's and the output scale's pointers, the codes' pointer and
// format (1: E5M2, which the E5M2 weight allows), pre's and the amax's
// pointers.
// CHECK-LABEL: func.func @linear_gelu
// CHECK-DAG: %[[Y:.+]] = memref.alloc() {{.*}}: memref<2x4x16xf8E5M2>
// CHECK-DAG: %[[PRE:.+]] = memref.alloc() {{.*}}: memref<2x4x16xbf16>
// CHECK-DAG: %[[AMAX:.+]] = memref.alloc() {{.*}}: memref<f32>
// CHECK: call @anvil_rt_gemm_f8_gelu(%c1_i32, %c8_i64, %c16_i64, %c32_i64, %{{.+}}, %c0_i32, %{{.+}}, %c1_i32, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %c1_i32, %{{.+}}, %{{.+}}) : (i32, i64, i64, i64, !llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: return %[[Y]], %[[PRE]], %[[AMAX]]
// CUDA-LABEL: func.func @linear_gelu
// CUDA: call @anvil_rt_cuda_gemm_f8_gelu(
func.func @linear_gelu(%x: tensor<2x4x32xf8E4M3FN>, %w: tensor<16x32xf8E5M2>, %s: tensor<f32>, %b: tensor<16xbf16>) -> (tensor<2x4x16xf8E5M2>, tensor<2x4x16xbf16>, tensor<f32>) {
  %y, %pre, %amax = anvil.linear_gelu_f8 %x, %w scales(%s, %s) bias(%b) out_scale(%s) {transpose_rhs} : (tensor<2x4x32xf8E4M3FN>, tensor<16x32xf8E5M2>, tensor<f32>, tensor<f32>, tensor<16xbf16>, tensor<f32>) -> (tensor<2x4x16xf8E5M2>, tensor<2x4x16xbf16>, tensor<f32>)
  return %y, %pre, %amax : tensor<2x4x16xf8E5M2>, tensor<2x4x16xbf16>, tensor<f32>
}
