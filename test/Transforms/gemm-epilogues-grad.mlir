// RUN: anvil-opt %s --anvil-gemm-epilogues --anvil-autodiff --anvil-gemm-epilogues | FileCheck %s --check-prefix=GRAD
// RUN: anvil-opt %s --anvil-gemm-epilogues --anvil-autodiff | FileCheck %s --check-prefix=UNFUSED

// Tests that anvil.linear_gelu's VJP is anvil.gelu_bias_grad and the
// layer's two GEMMs, and that a second run of anvil-gemm-epilogues fuses
// the gradient with the bf16 GEMM producing it (DGELU_BGRAD), the bias's
// gradient widened back by its cast's VJP.

// The GELU derivative and bias sum take the product of the
// next layer's weight and the output's gradient in the GEMM.
// GRAD-LABEL: func.func @forward_grad
// GRAD: %[[Y:.+]], %[[PRE:.+]] = anvil.linear_gelu
// GRAD: %[[D:.+]], %[[DB:.+]] = anvil.matmul_gelu_bias_grad %{{.+}}, %arg3, %[[PRE]] {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<2x4x16xbf16>) -> (tensor<2x4x16xbf16>, tensor<16xbf16>)
// GRAD-NOT: anvil.gelu_bias_grad
// GRAD-DAG: anvil.reshape %[[D]] : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// GRAD-DAG: anvil.cast %[[DB]] : tensor<16xbf16> to tensor<16xf32>
// GRAD: return
// UNFUSED-LABEL: func.func @forward_grad
// UNFUSED: anvil.gelu_bias_grad %{{.+}}, %{{.+}} : (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>) -> (tensor<2x4x16xbf16>, tensor<16xbf16>)

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
