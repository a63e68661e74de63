// RUN: anvil-opt %s --split-input-file --anvil-gemm-epilogues | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-gemm-epilogues=backward=false | FileCheck %s --check-prefix=FORWARD

// Tests that a linear layer's bias gradient (the f32 sum of its output's
// gradient over the rows, which the bias broadcast's VJP marks) and its
// weight gradient (x^T times the gradient rounded to bf16, as rows) become
// one anvil.matmul_bias_grad, the bias's gradient widened back to f32 where
// the sum was read; not with `backward=false`.
// CHECK-LABEL: func.func @weight_and_bias
// CHECK-SAME: (%[[G:.+]]: tensor<2x4x16xf32>, %[[X:.+]]: tensor<8x32xbf16>)
// CHECK-NOT: anvil.reduce_sum
// CHECK: %[[ROWS:.+]] = anvil.reshape %{{.+}} : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK: %[[DW:.+]], %[[DB:.+]] = anvil.matmul_bias_grad %[[X]], %[[ROWS]] : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> (tensor<32x16xbf16>, tensor<16xbf16>)
// CHECK: %[[DB32:.+]] = anvil.cast %[[DB]] : tensor<16xbf16> to tensor<16xf32>
// CHECK-NOT: anvil.reduce_sum
// CHECK: return %[[DW]], %[[DB32]]
// FORWARD-LABEL: func.func @weight_and_bias
// FORWARD: anvil.reduce_sum
// FORWARD-NOT: anvil.matmul_bias_grad
func.func @weight_and_bias(%g: tensor<2x4x16xf32>, %x: tensor<8x32xbf16>) -> (tensor<32x16xbf16>, tensor<16xf32>) {
  %db = anvil.reduce_sum %g dims [0, 1] {anvil.broadcast_grad} : tensor<2x4x16xf32> -> tensor<16xf32>
  %g16 = anvil.cast %g : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  %rows = anvil.reshape %g16 : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %dw = anvil.matmul %x, %rows {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  return %dw, %db : tensor<32x16xbf16>, tensor<16xf32>
}

// -----

// Tests that with two GEMMs of the same rows, the sum goes to the earliest
// that comes before its readers.
// CHECK-LABEL: func.func @two_gemms
// CHECK-SAME: (%[[G:.+]]: tensor<8x16xf32>, %[[X:.+]]: tensor<8x32xbf16>, %[[Y:.+]]: tensor<8x4xbf16>)
// CHECK: %[[DW:.+]], %[[DB:.+]] = anvil.matmul_bias_grad %[[X]],
// CHECK: anvil.cast %[[DB]]
// CHECK: anvil.matmul %[[Y]], %{{.+}} {transpose_lhs}
func.func @two_gemms(%g: tensor<8x16xf32>, %x: tensor<8x32xbf16>, %y: tensor<8x4xbf16>) -> (tensor<32x16xbf16>, tensor<4x16xbf16>, tensor<16xf32>) {
  %db = anvil.reduce_sum %g dims [0] {anvil.broadcast_grad} : tensor<8x16xf32> -> tensor<16xf32>
  %g16 = anvil.cast %g : tensor<8x16xf32> to tensor<8x16xbf16>
  %dw1 = anvil.matmul %x, %g16 {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  %n = anvil.neg %db : tensor<16xf32>
  %dw2 = anvil.matmul %y, %g16 {transpose_lhs} : (tensor<8x4xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  return %dw1, %dw2, %n : tensor<32x16xbf16>, tensor<4x16xbf16>, tensor<16xf32>
}

// -----

// Tests that what is not of that form stays: a sum no broadcast's VJP
// made (a forward graph's); a sum that keeps a dimension of the rows; a sum
// read before the weight's GEMM; a GEMM of the f32 gradient; a reshape
// that is not g's rows; the gradient as the transposed operand (a weight
// stored (out, in): BGRADB).
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: anvil.matmul_bias_grad
// CHECK: return
func.func @unfused(%g0: tensor<8x16xf32>, %g1: tensor<8x16xf32>, %g2: tensor<8x16xf32>, %g3: tensor<8x16xf32>,
                   %g4: tensor<8x16xf32>, %g5: tensor<8x16xf32>, %x: tensor<8x32xbf16>, %xf: tensor<8x32xf32>,
                   %x16: tensor<16x32xbf16>, %w: tensor<32x8xbf16>)
    -> (tensor<16xf32>, tensor<32x16xbf16>, tensor<8xf32>, tensor<32x16xbf16>, tensor<16xf32>, tensor<32x16xbf16>,
        tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32x8xbf16>, tensor<16xf32>, tensor<16x32xbf16>) {
  %plain = anvil.reduce_sum %g0 dims [0] : tensor<8x16xf32> -> tensor<16xf32>
  %c0 = anvil.cast %g0 : tensor<8x16xf32> to tensor<8x16xbf16>
  %dw0 = anvil.matmul %x, %c0 {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  %c1 = anvil.cast %g1 : tensor<8x16xf32> to tensor<8x16xbf16>
  %rowsum = anvil.reduce_sum %g1 dims [1] {anvil.broadcast_grad} : tensor<8x16xf32> -> tensor<8xf32>
  %dw1 = anvil.matmul %x, %c1 {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  %early = anvil.reduce_sum %g2 dims [0] {anvil.broadcast_grad} : tensor<8x16xf32> -> tensor<16xf32>
  %use = anvil.neg %early : tensor<16xf32>
  %c2 = anvil.cast %g2 : tensor<8x16xf32> to tensor<8x16xbf16>
  %dw2 = anvil.matmul %x, %c2 {transpose_lhs} : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  %sumf = anvil.reduce_sum %g3 dims [0] {anvil.broadcast_grad} : tensor<8x16xf32> -> tensor<16xf32>
  %dwf = anvil.matmul %xf, %g3 {transpose_lhs} : (tensor<8x32xf32>, tensor<8x16xf32>) -> tensor<32x16xf32>
  %sum4 = anvil.reduce_sum %g4 dims [0] {anvil.broadcast_grad} : tensor<8x16xf32> -> tensor<16xf32>
  %c4 = anvil.cast %g4 : tensor<8x16xf32> to tensor<8x16xbf16>
  %r4 = anvil.reshape %c4 : tensor<8x16xbf16> -> tensor<16x8xbf16>
  %dw4 = anvil.matmul %x16, %r4 {transpose_lhs} : (tensor<16x32xbf16>, tensor<16x8xbf16>) -> tensor<32x8xbf16>
  %sum5 = anvil.reduce_sum %g5 dims [0] {anvil.broadcast_grad} : tensor<8x16xf32> -> tensor<16xf32>
  %c5 = anvil.cast %g5 : tensor<8x16xf32> to tensor<8x16xbf16>
  %dw5 = anvil.matmul %c5, %x {transpose_lhs} : (tensor<8x16xbf16>, tensor<8x32xbf16>) -> tensor<16x32xbf16>
  return %plain, %dw0, %rowsum, %dw1, %use, %dw2, %dwf, %sumf, %sum4, %dw4, %sum5, %dw5
      : tensor<16xf32>, tensor<32x16xbf16>, tensor<8xf32>, tensor<32x16xbf16>, tensor<16xf32>, tensor<32x16xbf16>,
        tensor<32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<32x8xbf16>, tensor<16xf32>, tensor<16x32xbf16>
}
