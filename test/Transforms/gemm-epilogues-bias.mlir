// RUN: anvil-opt %s --split-input-file --anvil-gemm-epilogues | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-gemm-epilogues=backward=false | FileCheck %s --check-prefix=FORWARD

// Tests that on the training step a bf16 linear layer whose bias is added
// in f32 and the sum rounded to bf16 (GPT's q, k and v projection) becomes
// anvil.linear of the bias rounded to bf16 (cuBLASLt's BIAS epilogue), the
// rounding's readers reading it; with the weight stored (N, K) too. Not
// with `backward=false`: the op has no VJP, so the forward graph keeps its
// ops.
// CHECK-LABEL: func.func @bias
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xbf16>, %[[W:.+]]: tensor<8x24xbf16>, %[[B:.+]]: tensor<24xf32>, %[[WT:.+]]: tensor<16x8xbf16>, %[[C:.+]]: tensor<16xf32>)
// CHECK-NOT: anvil.add
// CHECK: %[[B16:.+]] = anvil.cast %[[B]] : tensor<24xf32> to tensor<24xbf16>
// CHECK: %[[Y:.+]] = anvil.linear %[[X]], %[[W]], %[[B16]] : (tensor<2x4x8xbf16>, tensor<8x24xbf16>, tensor<24xbf16>) -> tensor<2x4x24xbf16>
// CHECK: %[[Q:.+]]:3 = anvil.split %[[Y]]
// CHECK: %[[C16:.+]] = anvil.cast %[[C]] : tensor<16xf32> to tensor<16xbf16>
// CHECK: %[[Z:.+]] = anvil.linear %[[X]], %[[WT]], %[[C16]] {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NOT: anvil.matmul
// CHECK-NOT: anvil.broadcast
// CHECK: return %[[Q]]#0, %[[Q]]#2, %[[Z]]
// FORWARD-LABEL: func.func @bias
// FORWARD-NOT: anvil.linear
// FORWARD: return
func.func @bias(%x: tensor<2x4x8xbf16>, %w: tensor<8x24xbf16>, %b: tensor<24xf32>,
                %wt: tensor<16x8xbf16>, %c: tensor<16xf32>)
    -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) {
  %0 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x24xbf16>) -> tensor<2x4x24xbf16>
  %1 = anvil.cast %0 : tensor<2x4x24xbf16> to tensor<2x4x24xf32>
  %2 = anvil.broadcast %b, dims = [2] : tensor<24xf32> -> tensor<2x4x24xf32>
  %3 = anvil.add %1, %2 : tensor<2x4x24xf32>
  %4 = anvil.cast %3 : tensor<2x4x24xf32> to tensor<2x4x24xbf16>
  %q:3 = anvil.split %4 dim = 2 sizes [8, 8, 8] : tensor<2x4x24xbf16> -> tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
  %10 = anvil.matmul %x, %wt {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
  %11 = anvil.cast %10 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %12 = anvil.broadcast %c, dims = [2] : tensor<16xf32> -> tensor<2x4x16xf32>
  %13 = anvil.add %12, %11 : tensor<2x4x16xf32>
  %14 = anvil.cast %13 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  return %q#0, %q#2, %14 : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x16xbf16>
}

// -----

// Tests that what is not of that form stays: a product read twice; a sum
// read twice (the f32 sum is not the GEMM's result); a sum rounded to f16;
// a bias along another dimension; a broadcast of a matrix; an f32 GEMM; an
// FP8 GEMM (anvil-decompose fuses its bias); a transposed lhs; 12 columns
// (rows of 24 bytes, which not every cuBLASLt algorithm takes).
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: anvil.linear
// CHECK: return
func.func @unfused(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>,
                   %c: tensor<4xf32>, %m: tensor<4x16xf32>, %xf: tensor<2x4x8xf32>,
                   %wf: tensor<8x16xf32>, %xt: tensor<8x4xbf16>, %w12: tensor<8x12xbf16>,
                   %b12: tensor<12xf32>)
    -> (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xf32>,
        tensor<2x4x16xf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>,
        tensor<2x4x16xbf16>, tensor<4x16xbf16>, tensor<2x4x12xbf16>) {
  %bb = anvil.broadcast %b, dims = [2] : tensor<16xf32> -> tensor<2x4x16xf32>

  %0 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %1 = anvil.cast %0 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %2 = anvil.add %1, %bb : tensor<2x4x16xf32>
  %twice = anvil.cast %2 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %10 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %11 = anvil.cast %10 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %12 = anvil.add %11, %bb : tensor<2x4x16xf32>
  %sum = anvil.cast %12 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %20 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %21 = anvil.cast %20 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %22 = anvil.add %21, %bb : tensor<2x4x16xf32>
  %f16 = anvil.cast %22 : tensor<2x4x16xf32> to tensor<2x4x16xf16>

  %cb = anvil.broadcast %c, dims = [1] : tensor<4xf32> -> tensor<2x4x16xf32>
  %30 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %31 = anvil.cast %30 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %32 = anvil.add %31, %cb : tensor<2x4x16xf32>
  %rows = anvil.cast %32 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %mb = anvil.broadcast %m, dims = [1, 2] : tensor<4x16xf32> -> tensor<2x4x16xf32>
  %40 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %41 = anvil.cast %40 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %42 = anvil.add %41, %mb : tensor<2x4x16xf32>
  %matrix = anvil.cast %42 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %50 = anvil.matmul %xf, %wf : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %51 = anvil.add %50, %bb : tensor<2x4x16xf32>
  %f32 = anvil.cast %51 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %60 = anvil.matmul %x, %w {anvil.fp8 = "current"} : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %61 = anvil.cast %60 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %62 = anvil.add %61, %bb : tensor<2x4x16xf32>
  %fp8 = anvil.cast %62 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %tb = anvil.broadcast %b, dims = [1] : tensor<16xf32> -> tensor<4x16xf32>
  %70 = anvil.matmul %xt, %w {transpose_lhs} : (tensor<8x4xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %71 = anvil.cast %70 : tensor<4x16xbf16> to tensor<4x16xf32>
  %72 = anvil.add %71, %tb : tensor<4x16xf32>
  %tl = anvil.cast %72 : tensor<4x16xf32> to tensor<4x16xbf16>

  %bb12 = anvil.broadcast %b12, dims = [2] : tensor<12xf32> -> tensor<2x4x12xf32>
  %80 = anvil.matmul %x, %w12 : (tensor<2x4x8xbf16>, tensor<8x12xbf16>) -> tensor<2x4x12xbf16>
  %81 = anvil.cast %80 : tensor<2x4x12xbf16> to tensor<2x4x12xf32>
  %82 = anvil.add %81, %bb12 : tensor<2x4x12xf32>
  %twelve = anvil.cast %82 : tensor<2x4x12xf32> to tensor<2x4x12xbf16>

  return %twice, %0, %sum, %12, %f16, %rows, %matrix, %f32, %fp8, %tl, %twelve
      : tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xf32>,
        tensor<2x4x16xf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>, tensor<2x4x16xbf16>,
        tensor<2x4x16xbf16>, tensor<4x16xbf16>, tensor<2x4x12xbf16>
}
