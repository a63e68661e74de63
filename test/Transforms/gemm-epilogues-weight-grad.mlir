// RUN: anvil-opt %s --split-input-file --anvil-gemm-epilogues | FileCheck %s

// Tests that a linear layer's bias gradient (the f32 sum of its output's
// gradient over the rows) and its weight gradient (x^T times the gradient
// rounded to bf16, as rows) become one anvil.matmul_bias_grad, the bias's
// gradient widened back to f32 where the sum was read.
// CHECK-LABEL: func.func @weight_and_bias
// CHECK: %[[ROWS:.+]] = anvil.reshape %{{.+}} : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK: %[[DW:.+]], %[[DB:.+]] = anvil.matmul_bias_grad %arg1, %[[ROWS]] : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> (tensor<32x16xbf16>, tensor<16xbf16>)
// CHECK: %[[DB32:.+]] = anvil.cast %[[DB]] : tensor<16xbf16> to tensor<16xf32>
// CHECK-NOT: anvil.reduce_sum
// CHECK: return %[[DW]], %[[DB32]]
func.func @weight_and_bias(%g: tensor<2x4x16xf32>, %x: tensor<8x32xbf16>) -> (tensor<32x16xbf16>, tensor<16xf32>) {
  %db = anvil.reduce_sum %g dims [0, 1] : tensor<2x4x16xf32> -> tensor<16xf32>
  %g16 = anvil.cast %g : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  %rows = anvil.reshape %g16 : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %dw = anvil.matmul %x, %rows {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  return %dw, %db : tensor<32x16xbf16>, tensor<16xf32>
}

// -----

// Tests that what is not of that form stays: a sum that keeps a dimension
// of the rows; a sum read before the weight's GEMM; a GEMM of the f32
// gradient.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: anvil.matmul_bias_grad
// CHECK: return
func.func @unfused(%g1: tensor<8x16xf32>, %g2: tensor<8x16xf32>, %g3: tensor<8x16xf32>,
                   %x: tensor<8x32xbf16>, %xf: tensor<8x32xf32>)
    -> (tensor<32x16xbf16>, tensor<8xf32>, tensor<16xf32>, tensor<32x16xbf16>, tensor<32x16xf32>, tensor<16xf32>) {
  %a16 = anvil.cast %g1 : tensor<8x16xf32> to tensor<8x16xbf16>
  %rowsum = anvil.reduce_sum %g1 dims [1] : tensor<8x16xf32> -> tensor<8xf32>
  %dw = anvil.matmul %x, %a16 {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  %early = anvil.reduce_sum %g2 dims [0] : tensor<8x16xf32> -> tensor<16xf32>
  %use = anvil.neg %early : tensor<16xf32>
  %b16 = anvil.cast %g2 : tensor<8x16xf32> to tensor<8x16xbf16>
  %dw2 = anvil.matmul %x, %b16 {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  %sumf = anvil.reduce_sum %g3 dims [0] : tensor<8x16xf32> -> tensor<16xf32>
  %dwf = anvil.matmul %xf, %g3 {transpose_lhs} : (tensor<8x32xf32>, tensor<8x16xf32>) -> tensor<32x16xf32>
  return %dw, %rowsum, %use, %dw2, %dwf, %sumf
      : tensor<32x16xbf16>, tensor<8xf32>, tensor<16xf32>, tensor<32x16xbf16>, tensor<32x16xf32>, tensor<16xf32>
}
