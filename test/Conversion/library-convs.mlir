// RUN: anvil-opt %s --split-input-file --anvil-library-convs | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-library-convs --anvil-decompose --anvil-convert-to-linalg --anvil-bufferize | FileCheck %s --check-prefix=CALL

// Tests which convolutions anvil-library-convs marks to run as one library
// call (cuDNN on CUDA): symmetric padding (or a pad_high that drops only a
// stride's remainder), 1-3 spatial dimensions, f32 or bf16 of one type. A
// bias is split off into a broadcast add; the marked op stays through
// anvil-decompose and anvil-convert-to-linalg and anvil-bufferize makes it
// one call of anvil_rt_conv with its problem in a constant global (s, N,
// C, K, groups, then x, y, kernel, stride, pad, dilation per dimension).

// CHECK-LABEL: func.func @forward_with_bias
// CHECK: %[[C:.+]] = anvil.conv %arg0, %arg1 stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {anvil.library_call, groups = 2 : i64} : (tensor<2x4x9x8xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x5x4xf32>
// CHECK: %[[B:.+]] = anvil.broadcast %arg2, dims = [1] : tensor<6xf32> -> tensor<2x6x5x4xf32>
// CHECK: %[[Y:.+]] = anvil.add %[[C]], %[[B]]
// CHECK: return %[[Y]]
// CALL-DAG: memref.global "private" constant @__anvil_conv_problem_0 : memref<17xi64> = dense<[2, 2, 4, 6, 2, 9, 5, 3, 2, 1, 1, 8, 4, 3, 2, 1, 1]>
// CALL-DAG: func.func private @anvil_rt_conv(i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CALL-LABEL: func.func @forward_with_bias
// CALL: memref.get_global @__anvil_conv_problem_0
// CALL: call @anvil_rt_conv(%c0_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CALL: linalg.generic
// CALL-NOT: linalg.conv
func.func @forward_with_bias(%x: tensor<2x4x9x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<2x6x5x4xf32> {
  %0 = anvil.conv %x, %w, %b stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x9x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x4xf32>
  return %0 : tensor<2x6x5x4xf32>
}

// -----

// The gradients: x's (a transposed convolution, kind 1, in the terms of
// the forward convolution it is the adjoint of) and w's (kind 2); a 1-D
// problem; bf16.
// CHECK-LABEL: func.func @gradients
// CHECK: anvil.conv_transpose {{.+}} {anvil.library_call, groups = 2 : i64}
// CHECK: anvil.conv_filter_grad {{.+}} {anvil.library_call, groups = 2 : i64}
// CHECK: anvil.conv %arg3, %arg4 stride [3] {{.+}} {anvil.library_call}
// CALL-DAG: memref.global "private" constant @__anvil_conv_problem_{{[0-9]+}} : memref<17xi64> = dense<[2, 2, 4, 6, 2, 9, 5, 3, 2, 1, 1, 8, 4, 3, 2, 1, 1]>
// CALL-DAG: memref.global "private" constant @__anvil_conv_problem_{{[0-9]+}} : memref<11xi64> = dense<[1, 1, 3, 2, 1, 11, 3, 4, 3, 1, 2]>
// CALL-LABEL: func.func @gradients
// CALL: call @anvil_rt_conv(%c1_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}},
// CALL: call @anvil_rt_conv(%c2_i32{{(_[0-9]+)?}}, %c1_i32{{(_[0-9]+)?}},
// CALL: call @anvil_rt_conv(%c0_i32{{(_[0-9]+)?}}, %c0_i32{{(_[0-9]+)?}},
// CALL-NOT: linalg.conv
func.func @gradients(%x: tensor<2x4x9x8xbf16>, %w: tensor<6x2x3x3xbf16>, %g: tensor<2x6x5x4xbf16>, %x1: tensor<1x3x11xf32>, %w1: tensor<2x3x4xf32>) -> (tensor<2x4x9x8xbf16>, tensor<6x2x3x3xbf16>, tensor<1x2x3xf32>) {
  %0 = anvil.conv_transpose %g, %w stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] output_padding [0, 1] {groups = 2 : i64} : (tensor<2x6x5x4xbf16>, tensor<6x2x3x3xbf16>) -> tensor<2x4x9x8xbf16>
  %1 = anvil.conv_filter_grad %x, %g kernel [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x9x8xbf16>, tensor<2x6x5x4xbf16>) -> tensor<6x2x3x3xbf16>
  %2 = anvil.conv %x1, %w1 stride [3] pad_low [1] pad_high [1] dilation [2] : (tensor<1x3x11xf32>, tensor<2x3x4xf32>) -> tensor<1x2x3xf32>
  return %0, %1, %2 : tensor<2x4x9x8xbf16>, tensor<6x2x3x3xbf16>, tensor<1x2x3xf32>
}

// -----

// What stays a linalg convolution: padding that differs by more than a
// stride's remainder (the symmetric one would change the size), f64, and
// a transposed convolution whose adjoint needs asymmetric padding. A
// smaller pad_high that only drops a remainder is taken (@drop).
// CHECK-LABEL: func.func @stays
// CHECK-NOT: anvil.library_call
// CHECK: return
// CALL-LABEL: func.func @stays
// CALL-NOT: call @anvil_rt_conv
// CALL: return
func.func @stays(%x: tensor<2x4x9x8xf32>, %w: tensor<6x4x3x2xf32>, %x64: tensor<1x2x8x8xf64>, %w64: tensor<4x2x3x3xf64>, %t: tensor<2x4x5x6xf32>, %tw: tensor<4x3x3x2xf32>) -> (tensor<2x6x5x8xf32>, tensor<1x4x8x8xf64>, tensor<2x3x11x12xf32>) {
  %0 = anvil.conv %x, %w stride [2, 1] pad_low [1, 0] pad_high [1, 2] dilation [1, 2] : (tensor<2x4x9x8xf32>, tensor<6x4x3x2xf32>) -> tensor<2x6x5x8xf32>
  %1 = anvil.conv %x64, %w64 stride [1, 1] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] : (tensor<1x2x8x8xf64>, tensor<4x2x3x3xf64>) -> tensor<1x4x8x8xf64>
  %2 = anvil.conv_transpose %t, %tw stride [2, 2] pad_low [1, 0] pad_high [0, 1] dilation [1, 2] output_padding [1, 0] : (tensor<2x4x5x6xf32>, tensor<4x3x3x2xf32>) -> tensor<2x3x11x12xf32>
  return %0, %1, %2 : tensor<2x6x5x8xf32>, tensor<1x4x8x8xf64>, tensor<2x3x11x12xf32>
}

// -----

// CHECK-LABEL: func.func @drop
// CHECK: anvil.conv {{.+}} pad_low [1, 1] pad_high [0, 0] {{.+}} {anvil.library_call}
// CALL-DAG: memref.global "private" constant @__anvil_conv_problem_0 : memref<17xi64> = dense<[2, 1, 2, 4, 1, 8, 4, 3, 2, 1, 1, 8, 4, 3, 2, 1, 1]>
func.func @drop(%x: tensor<1x2x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = anvil.conv %x, %w stride [2, 2] pad_low [1, 1] pad_high [0, 0] dilation [1, 1] : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
