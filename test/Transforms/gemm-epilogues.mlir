// RUN: anvil-opt %s --split-input-file --anvil-gemm-epilogues | FileCheck %s

// Tests that a bf16 linear layer whose bias and tanh GELU are rounded to
// bf16 by every reader becomes anvil.linear_gelu of the bias rounded to
// bf16 (cuBLASLt's GELU_AUX_BIAS). gemm-epilogues-grad.mlir has its
// gradient.

// CHECK-LABEL: func.func @forward
// CHECK: %[[B:.+]] = anvil.cast %arg2 : tensor<16xf32> to tensor<16xbf16>
// CHECK: %[[Y:.+]], %[[PRE:.+]] = anvil.linear_gelu %arg0, %arg1, %[[B]] : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>) -> (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>)
// CHECK: anvil.matmul %[[Y]], %arg3 : (tensor<2x4x16xbf16>, tensor<16x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NOT: anvil.gelu
// CHECK: return

func.func @forward(%x: tensor<2x4x8xbf16> {anvil.input = #anvil.input<name = "x">},
                   %w: tensor<8x16xbf16> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                   %b: tensor<16xf32> {anvil.param = #anvil.param<name = "b", init = #anvil.init<zeros>>},
                   %w2: tensor<16x8xbf16> {anvil.param = #anvil.param<name = "w2", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %0 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %1 = anvil.cast %0 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %2 = anvil.broadcast %b, dims = [2] : tensor<16xf32> -> tensor<2x4x16xf32>
  %3 = anvil.add %2, %1 : tensor<2x4x16xf32>
  %4 = anvil.gelu tanh %3 : tensor<2x4x16xf32>
  %5 = anvil.cast %4 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  %6 = anvil.matmul %5, %w2 : (tensor<2x4x16xbf16>, tensor<16x8xbf16>) -> tensor<2x4x8xbf16>
  %7 = anvil.cast %6 : tensor<2x4x8xbf16> to tensor<2x4x8xf32>
  %8 = anvil.reduce_sum %7 dims [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
  return %8 : tensor<f32>
}

// -----

// Tests that what is not of that form stays: the erf GELU; a GELU that an f32 op reads; a product read
// twice (the sum too); a bias along another dimension; 12 columns (cuBLASLt needs
// multiples of 8 for the GELU's input it keeps); f32 GEMMs.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: anvil.linear_gelu
// CHECK: return
func.func @unfused(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>,
                   %c: tensor<4xf32>, %w12: tensor<8x12xbf16>, %b12: tensor<12xf32>,
                   %xf: tensor<2x4x8xf32>, %wf: tensor<8x16xf32>)
    -> (tensor<2x4x16xbf16>, tensor<2x4x16xf32>, tensor<2x4x16xbf16>, tensor<2x4x16xf32>,
        tensor<2x4x16xbf16>, tensor<2x4x12xbf16>, tensor<2x4x16xbf16>) {
  %0 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %1 = anvil.cast %0 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %bb = anvil.broadcast %b, dims = [2] : tensor<16xf32> -> tensor<2x4x16xf32>
  %2 = anvil.add %1, %bb : tensor<2x4x16xf32>
  %3 = anvil.gelu erf %2 : tensor<2x4x16xf32>
  %erf = anvil.cast %3 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %10 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %11 = anvil.cast %10 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %12 = anvil.add %11, %bb : tensor<2x4x16xf32>
  %wide = anvil.gelu tanh %12 : tensor<2x4x16xf32>

  %20 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %21 = anvil.cast %20 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %22 = anvil.add %21, %bb : tensor<2x4x16xf32>
  %23 = anvil.gelu tanh %22 : tensor<2x4x16xf32>
  %twice = anvil.cast %23 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %cb = anvil.broadcast %c, dims = [1] : tensor<4xf32> -> tensor<2x4x16xf32>
  %30 = anvil.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
  %31 = anvil.cast %30 : tensor<2x4x16xbf16> to tensor<2x4x16xf32>
  %32 = anvil.add %31, %cb : tensor<2x4x16xf32>
  %33 = anvil.gelu tanh %32 : tensor<2x4x16xf32>
  %rows = anvil.cast %33 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>

  %b12b = anvil.broadcast %b12, dims = [2] : tensor<12xf32> -> tensor<2x4x12xf32>
  %40 = anvil.matmul %x, %w12 : (tensor<2x4x8xbf16>, tensor<8x12xbf16>) -> tensor<2x4x12xbf16>
  %41 = anvil.cast %40 : tensor<2x4x12xbf16> to tensor<2x4x12xf32>
  %42 = anvil.add %41, %b12b : tensor<2x4x12xf32>
  %43 = anvil.gelu tanh %42 : tensor<2x4x12xf32>
  %twelve = anvil.cast %43 : tensor<2x4x12xf32> to tensor<2x4x12xbf16>

  %50 = anvil.matmul %xf, %wf : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %51 = anvil.add %50, %bb : tensor<2x4x16xf32>
  %52 = anvil.gelu tanh %51 : tensor<2x4x16xf32>
  %f32 = anvil.cast %52 : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  return %erf, %wide, %twice, %22, %rows, %twelve, %f32
      : tensor<2x4x16xbf16>, tensor<2x4x16xf32>, tensor<2x4x16xbf16>, tensor<2x4x16xf32>,
        tensor<2x4x16xbf16>, tensor<2x4x12xbf16>, tensor<2x4x16xbf16>
}

// -----

// Tests that a gradient that is not one GEMM's product read once stays
// unfused.
// CHECK-LABEL: func.func @grad_read_twice
// CHECK: anvil.gelu_bias_grad
// CHECK-NOT: anvil.matmul_gelu_bias_grad
func.func @grad_read_twice(%dy: tensor<2x4x8xbf16>, %w2: tensor<16x8xbf16>, %pre: tensor<2x4x16xbf16>)
    -> (tensor<2x4x16xbf16>, tensor<16xbf16>, tensor<2x4x16xbf16>) {
  %g = anvil.matmul %dy, %w2 {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
  %d, %db = anvil.gelu_bias_grad %g, %pre : (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>) -> (tensor<2x4x16xbf16>, tensor<16xbf16>)
  return %d, %db, %g : tensor<2x4x16xbf16>, tensor<16xbf16>, tensor<2x4x16xbf16>
}
