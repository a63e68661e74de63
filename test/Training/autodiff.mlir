// RUN: anvil-opt %s --split-input-file --anvil-autodiff | FileCheck %s

// Tests that a weight used twice gets the sum of both gradients:
// L = sum(w * x + w * w), dL/dw = x + (w + w).
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: -> (tensor<f32>, tensor<3xf32> {anvil.grad = "w"})
// CHECK: anvil.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[G2:.+]] = anvil.mul %{{.+}}, %arg0 : tensor<3xf32>
// CHECK: %[[G3:.+]] = anvil.mul %{{.+}}, %arg0 : tensor<3xf32>
// CHECK: %[[S1:.+]] = anvil.add %[[G2]], %[[G3]]
// CHECK: %[[G1:.+]] = anvil.mul %{{.+}}, %arg1 : tensor<3xf32>
// CHECK: %[[S2:.+]] = anvil.add %[[S1]], %[[G1]]
// CHECK: return %{{.+}}, %[[S2]]
func.func @forward(%w: tensor<3xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                   %x: tensor<3xf32> {anvil.input = #anvil.input<name = "x">}) -> tensor<f32> {
  %a = anvil.mul %w, %x : tensor<3xf32>
  %b = anvil.mul %w, %w : tensor<3xf32>
  %c = anvil.add %a, %b : tensor<3xf32>
  %l = anvil.reduce_sum %c dims [0] : tensor<3xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a frozen parameter gets no gradient and no backward ops: the
// only gradient is the trainable one, and nothing multiplies by dL/dy to
// reach the frozen weight's side.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: -> (tensor<f32>, tensor<2x2xf32> {anvil.grad = "lora.a"})
// CHECK-NOT: anvil.grad = "base"
// CHECK: anvil.matmul %{{.+}}, %{{.+}} {transpose_lhs}
// CHECK-NOT: anvil.matmul
// CHECK: return
func.func @forward(%base: tensor<2x2xf32> {anvil.param = #anvil.param<name = "base", init = #anvil.init<zeros>, trainable = false>},
                   %a: tensor<2x2xf32> {anvil.param = #anvil.param<name = "lora.a", init = #anvil.init<zeros>>},
                   %x: tensor<2x2xf32> {anvil.input = #anvil.input<name = "x">}) -> tensor<f32> {
  %h = anvil.matmul %x, %base : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d = anvil.matmul %x, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = anvil.add %h, %d : tensor<2x2xf32>
  %l = anvil.reduce_sum %y dims [0, 1] : tensor<2x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that stop_gradient, comparisons and argmax stop gradients, and that
// a parameter the loss does not depend on gets zeros.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {anvil.grad = "w"}, tensor<5xf32> {anvil.grad = "unused"})
// CHECK: %[[ZERO:.+]] = anvil.constant dense<0.000000e+00> : tensor<5xf32>
// CHECK-NEXT: return %{{.+}}, %{{.+}}, %[[ZERO]]
func.func @forward(%w: tensor<4xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                   %u: tensor<5xf32> {anvil.param = #anvil.param<name = "unused", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %s = anvil.stop_gradient %w : tensor<4xf32>
  %m = anvil.compare gt, %w, %s : tensor<4xf32>
  %i = anvil.argmax %w dim = 0 : tensor<4xf32> -> tensor<i64>
  %p = anvil.select %m, %w, %s : tensor<4xf32>
  %l = anvil.reduce_sum %p dims [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}


// -----

// Tests that the gradient a rule builds for a frozen operand is dropped:
// y = (x a) base with base frozen needs dh = g base^T and da = x^T dh,
// not d(base) = h^T g: two forward and two backward matmuls.
// CHECK-LABEL: func.func @forward_grad
// CHECK-COUNT-4: anvil.matmul
// CHECK-NOT: anvil.matmul
// CHECK: return
func.func @forward(%base: tensor<2x2xf32> {anvil.param = #anvil.param<name = "base", init = #anvil.init<zeros>, trainable = false>},
                   %a: tensor<2x2xf32> {anvil.param = #anvil.param<name = "a", init = #anvil.init<zeros>>},
                   %x: tensor<2x2xf32> {anvil.input = #anvil.input<name = "x">}) -> tensor<f32> {
  %h = anvil.matmul %x, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = anvil.matmul %h, %base : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %l = anvil.reduce_sum %y dims [0, 1] : tensor<2x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Tests that a weight shared by a batch gets its gradient from one GEMM
// over every batch entry's rows, the batch folded into the contraction
// (dW = X^T dY with X (8*16, 32) and dY (8*16, 64)), not from a GEMM per
// entry and a sum over the batch; and that a transposed weight's is
// dY^T X.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[X:.+]] = anvil.reshape %arg2 : tensor<8x16x32xf32> -> tensor<128x32xf32>
// CHECK-NEXT: %[[G:.+]] = anvil.reshape %{{.+}} : tensor<8x16x64xf32> -> tensor<128x64xf32>
// CHECK-NEXT: %[[DWT:.+]] = anvil.matmul %[[G]], %[[X]] {transpose_lhs} : (tensor<128x64xf32>, tensor<128x32xf32>) -> tensor<64x32xf32>
// CHECK-NEXT: %[[X2:.+]] = anvil.reshape %arg2 : tensor<8x16x32xf32> -> tensor<128x32xf32>
// CHECK-NEXT: %[[G2:.+]] = anvil.reshape %{{.+}} : tensor<8x16x64xf32> -> tensor<128x64xf32>
// CHECK-NEXT: %[[DW:.+]] = anvil.matmul %[[X2]], %[[G2]] {transpose_lhs} : (tensor<128x32xf32>, tensor<128x64xf32>) -> tensor<32x64xf32>
// CHECK-NEXT: return %{{.+}}, %[[DW]], %[[DWT]]
func.func @forward(%w: tensor<32x64xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                   %wt: tensor<64x32xf32> {anvil.param = #anvil.param<name = "wt", init = #anvil.init<zeros>>},
                   %x: tensor<8x16x32xf32> {anvil.input = #anvil.input<name = "x">}) -> tensor<f32> {
  %y = anvil.matmul %x, %w : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
  %z = anvil.matmul %x, %wt {transpose_rhs} : (tensor<8x16x32xf32>, tensor<64x32xf32>) -> tensor<8x16x64xf32>
  %s = anvil.add %y, %z : tensor<8x16x64xf32>
  %l = anvil.reduce_sum %s dims [0, 1, 2] : tensor<8x16x64xf32> -> tensor<f32>
  return %l : tensor<f32>
}
