// RUN: anvil-opt %s --anvil-fp8 | FileCheck %s
// RUN: anvil-opt %s --anvil-fp8=modules=head | FileCheck %s --check-prefix=HEAD
// RUN: anvil-opt %s --anvil-fp8 --anvil-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: not anvil-opt %s --anvil-fp8=recipe=delayed 2>&1 | FileCheck %s --check-prefix=RECIPE

// Tests anvil-fp8 (recipe current): the matmuls of the numbered blocks take
// E4M3-quantized operands and their results quantize the gradient to E5M2;
// the head's matmul stays f32 unless chosen by module. After autodiff, the
// backward GEMMs read the E5M2 gradient (fp8_quantize's VJP) and the E4M3
// operands (here dW = X^T dY; x is an input, so there is no dX).

// CHECK-LABEL: func.func @forward
// CHECK: %[[X:.+]] = anvil.fp8_quantize %arg0 forward f8E4M3FN : tensor<4x8xf32>
// CHECK: %[[W:.+]] = anvil.fp8_quantize %arg1 forward f8E4M3FN : tensor<8x8xf32>
// CHECK: %[[Y:.+]] = anvil.matmul %[[X]], %[[W]] {anvil.fp8 = "current"}
// CHECK: %[[G:.+]] = anvil.fp8_quantize %[[Y]] backward f8E5M2 : tensor<4x8xf32>
// CHECK: anvil.relu %[[G]]
// CHECK: %[[H:.+]] = anvil.matmul %{{.+}}, %arg2 : (tensor<4x8xf32>, tensor<8x3xf32>)
// CHECK-NOT: anvil.fp8_quantize %[[H]]
// HEAD-LABEL: func.func @forward
// HEAD: anvil.matmul %arg0, %arg1 :
// HEAD: anvil.fp8_quantize %arg2 forward f8E4M3FN
// HEAD: anvil.matmul {{.+}} {anvil.fp8 = "current"}
// GRAD-LABEL: func.func @forward_grad
// GRAD: %[[XQ:.+]] = anvil.fp8_quantize %arg0 forward f8E4M3FN
// GRAD: %[[DY:.+]] = anvil.fp8_quantize %{{.+}} forward f8E5M2 : tensor<4x8xf32>
// GRAD: anvil.matmul %[[XQ]], %[[DY]] {transpose_lhs}
// RECIPE: error: anvil-fp8: recipe 'delayed' is not implemented yet (current is; delayed and mxfp8 are to come)
func.func @forward(%x: tensor<4x8xf32> {anvil.input = #anvil.input<name = "x">},
                   %w: tensor<8x8xf32> {anvil.param = #anvil.param<name = "h.0.fc.weight", init = #anvil.init<zeros>>},
                   %v: tensor<8x3xf32> {anvil.param = #anvil.param<name = "head.weight", init = #anvil.init<zeros>>})
    -> tensor<f32> {
  %y = anvil.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("h.0.fc")
  %r = anvil.relu %y : tensor<4x8xf32>
  %z = anvil.matmul %r, %v : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("head")
  %l = anvil.reduce_sum %z dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
