// RUN: anvil-opt %s --anvil-bf16 | FileCheck %s
// RUN: anvil-opt %s --anvil-bf16=modules=head | FileCheck %s --check-prefix=HEAD
// RUN: anvil-opt %s --anvil-bf16 --anvil-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: anvil-opt %s --anvil-fp8 --anvil-bf16 | FileCheck %s --check-prefix=FP8

// Tests anvil-bf16: every f32 matmul reads bf16 casts of its operands (a
// cast per GEMM operand: %h, read by the head and by the gate, is cast
// twice), multiplies in bf16 and is widened back to f32 for its users.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[X:.+]] = anvil.cast %arg0 : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[W1:.+]] = anvil.cast %arg1 : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK-NEXT: %[[P:.+]] = anvil.matmul %[[X]], %[[W1]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[Y:.+]] = anvil.cast %[[P]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: %[[H:.+]] = anvil.relu %[[Y]]
// CHECK-NEXT: %[[H16:.+]] = anvil.cast %[[H]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[HW:.+]] = anvil.cast %arg2 : tensor<8x3xf32> to tensor<8x3xbf16>
// CHECK-NEXT: anvil.matmul %[[H16]], %[[HW]] : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
// CHECK-NEXT: anvil.cast
// CHECK-NEXT: %[[H16B:.+]] = anvil.cast %[[H]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: %[[GATE:.+]] = anvil.cast %arg3 : tensor<3x8xf32> to tensor<3x8xbf16>
// CHECK-NEXT: anvil.matmul %[[H16B]], %[[GATE]] {transpose_rhs} : (tensor<4x8xbf16>, tensor<3x8xbf16>) -> tensor<4x3xbf16>
// CHECK-NOT: anvil.matmul {{.+}}xf32>) ->

// Only the matmuls of the chosen modules.
// HEAD-LABEL: func.func @forward
// HEAD: anvil.matmul %arg0, %arg1 : (tensor<4x8xf32>, tensor<8x8xf32>)
// HEAD: anvil.matmul %{{.+}}, %{{.+}} : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
// HEAD: anvil.matmul %{{.+}}, %arg3 {transpose_rhs} : (tensor<4x8xf32>, tensor<3x8xf32>)

// The training step: the casts' VJPs round each output gradient to bf16
// (dW = X^T dY and dX = dY W^T read bf16 operands) and widen the input
// gradients, so the two gradients of %h are summed in f32; the
// parameters' gradients are f32.
// GRAD-LABEL: func.func @forward_grad
// GRAD-SAME: -> (tensor<f32>, tensor<8x8xf32> {anvil.grad = "w1"}, tensor<8x3xf32> {anvil.grad = "head"}, tensor<3x8xf32> {anvil.grad = "gate"})
// GRAD: %[[DH1:.+]] = anvil.matmul %{{.+}}, %{{.+}} : (tensor<4x3xbf16>, tensor<3x8xbf16>) -> tensor<4x8xbf16>
// GRAD: %[[W1:.+]] = anvil.cast %[[DH1]] : tensor<4x8xbf16> to tensor<4x8xf32>
// GRAD: %[[DH2:.+]] = anvil.matmul %{{.+}}, %{{.+}} {transpose_rhs} : (tensor<4x3xbf16>, tensor<8x3xbf16>) -> tensor<4x8xbf16>
// GRAD: %[[W2:.+]] = anvil.cast %[[DH2]] : tensor<4x8xbf16> to tensor<4x8xf32>
// GRAD: anvil.add %[[W1]], %[[W2]] : tensor<4x8xf32>
// GRAD-NOT: anvil.add {{.+}} : tensor<4x8xbf16>
// GRAD-NOT: anvil.matmul {{.+}}xf32>) ->
// GRAD: return

// FP8 GEMMs (anvil-fp8's: the numbered blocks') stay FP8.
// FP8-LABEL: func.func @forward
// FP8: anvil.matmul %{{.+}}, %{{.+}} {anvil.fp8 = "current"} : (tensor<4x8xf32>, tensor<8x8xf32>)
// FP8: anvil.matmul %{{.+}}, %{{.+}} : (tensor<4x8xbf16>, tensor<8x3xbf16>)

func.func @forward(%x: tensor<4x8xf32> {anvil.input = #anvil.input<name = "x">},
                   %w1: tensor<8x8xf32> {anvil.param = #anvil.param<name = "w1", init = #anvil.init<zeros>>},
                   %head: tensor<8x3xf32> {anvil.param = #anvil.param<name = "head", init = #anvil.init<zeros>>},
                   %gate: tensor<3x8xf32> {anvil.param = #anvil.param<name = "gate", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %y = anvil.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("h.0.fc")
  %h = anvil.relu %y : tensor<4x8xf32>
  %o = anvil.matmul %h, %head : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("head")
  %g = anvil.matmul %h, %gate {transpose_rhs} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32> loc("gate")
  %s = anvil.mul %o, %g : tensor<4x3xf32>
  %l = anvil.reduce_sum %s dims [0, 1] : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
