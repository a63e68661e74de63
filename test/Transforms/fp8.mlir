// RUN: anvil-opt %s --anvil-fp8 | FileCheck %s
// RUN: anvil-opt %s --anvil-fp8=modules=head | FileCheck %s --check-prefix=HEAD
// RUN: anvil-opt %s --anvil-fp8 --anvil-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: anvil-opt %s --anvil-fp8=recipe=delayed | FileCheck %s --check-prefix=DELAYED
// RUN: anvil-opt %s --anvil-fp8=recipe=delayed --anvil-autodiff --anvil-fp8-delayed-scaling='function=forward_grad history-length=4 margin=1' | FileCheck %s --check-prefix=STATE
// RUN: anvil-opt %s --anvil-fp8=recipe=delayed --anvil-autodiff --anvil-fp8-delayed-scaling='function=forward_grad history-length=1 amax-compute=most_recent' | FileCheck %s --check-prefix=RECENT
// RUN: anvil-opt %s --anvil-fp8='recipe=mxfp8 block-size=4' --anvil-autodiff | FileCheck %s --check-prefix=MX
// RUN: not anvil-opt %s --anvil-fp8=recipe=tensorwise 2>&1 | FileCheck %s --check-prefix=RECIPE
// RUN: not anvil-opt %s --anvil-fp8='recipe=mxfp8 block-size=3' 2>&1 | FileCheck %s --check-prefix=BLOCKS

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

// The delayed recipe names each quantization's history after its GEMM and
// role; anvil-fp8-delayed-scaling then gives the differentiated step two
// state arguments per history (here x's, w's and the output gradient's: the
// gradient's quantization, built by autodiff, keeps the name): the amax
// history and the scale, starting at 1. The scale is fmax / 2^margin /
// max(history), the previous one where the history's amax is zero or not
// finite or the quotient is not finite; each is returned tied to its
// argument, the history with this step's amax first, then its first L - 1
// entries.
// DELAYED: anvil.fp8_quantize %arg0 forward f8E4M3FN history "h.0.fc.input"
// DELAYED: anvil.fp8_quantize %arg1 forward f8E4M3FN history "h.0.fc.weight"
// DELAYED: anvil.matmul {{.+}} {anvil.fp8 = "delayed"}
// DELAYED: anvil.fp8_quantize %{{.+}} backward f8E5M2 history "h.0.fc.grad_output"
// STATE-LABEL: func.func @forward_grad(
// STATE-SAME: %[[HX:[a-z0-9]+]]: tensor<4xf32> {anvil.state = #anvil.state<name = "fp8.amax_history.h.0.fc.input", init = <zeros>>}
// STATE-SAME: %[[SX:[a-z0-9]+]]: tensor<f32> {anvil.state = #anvil.state<name = "fp8.scale.h.0.fc.input", init = <constant(value = 1.0)>>}
// STATE-SAME: %[[HW:[a-z0-9]+]]: tensor<4xf32> {anvil.state = #anvil.state<name = "fp8.amax_history.h.0.fc.weight", init = <zeros>>}
// STATE-SAME: %[[HG:[a-z0-9]+]]: tensor<4xf32> {anvil.state = #anvil.state<name = "fp8.amax_history.h.0.fc.grad_output", init = <zeros>>}
// STATE-SAME: tensor<4xf32> {anvil.tied_to = 3 : i64}, tensor<f32> {anvil.tied_to = 4 : i64}, tensor<4xf32> {anvil.tied_to = 5 : i64}, tensor<f32> {anvil.tied_to = 6 : i64}, tensor<4xf32> {anvil.tied_to = 7 : i64}, tensor<f32> {anvil.tied_to = 8 : i64})
// STATE: %[[A:.+]] = anvil.reduce_max %[[HX]] dims [0] : tensor<4xf32> -> tensor<f32>
// STATE: %[[FMAX:.+]] = anvil.constant dense<2.240000e+02> : tensor<f32>
// STATE: %[[S:.+]] = anvil.div %[[FMAX]], %[[A]]
// STATE: %[[POS:.+]] = anvil.compare gt, %[[A]]
// STATE: %[[FIN:.+]] = anvil.compare lt, %[[A]]
// STATE: %[[BOUND:.+]] = anvil.compare lt, %[[S]]
// STATE: %[[S1:.+]] = anvil.select %[[BOUND]], %[[S]], %[[SX]]
// STATE: %[[S2:.+]] = anvil.select %[[FIN]], %[[S1]], %[[SX]]
// STATE: %[[S3:.+]] = anvil.select %[[POS]], %[[S2]], %[[SX]]
// STATE: %[[XQ:.+]] = anvil.fp8_quantize %arg0 scale %[[S3]] forward f8E4M3FN history "h.0.fc.input"
// STATE: %[[ABS:.+]] = anvil.abs %arg0
// STATE: %[[AMAX:.+]] = anvil.reduce_max %[[ABS]] dims [0, 1]
// STATE: %[[NEW:.+]] = anvil.reshape %[[AMAX]] : tensor<f32> -> tensor<1xf32>
// STATE: %[[OLD:.+]] = anvil.slice %[[HX]] [0:3:1] : tensor<4xf32> -> tensor<3xf32>
// STATE: %[[HX2:.+]] = anvil.concat %[[NEW]], %[[OLD]] dim = 0
// STATE: anvil.fp8_quantize %{{.+}} scale %{{.+}} forward f8E5M2 history "h.0.fc.grad_output"
// STATE: return {{.+}}, %[[HX2]], %[[S3]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :
// RECENT-LABEL: func.func @forward_grad(
// RECENT-SAME: %[[HX:[a-z0-9]+]]: tensor<1xf32> {anvil.state = #anvil.state<name = "fp8.amax_history.h.0.fc.input"
// RECENT: %[[SLOT:.+]] = anvil.slice %[[HX]] [0:1:1] : tensor<1xf32> -> tensor<1xf32>
// RECENT: anvil.reshape %[[SLOT]] : tensor<1xf32> -> tensor<f32>
// RECENT: %[[AMAX:.+]] = anvil.reduce_max %{{.+}} dims [0, 1]
// RECENT: %[[NEW:.+]] = anvil.reshape %[[AMAX]] : tensor<f32> -> tensor<1xf32>
// RECENT-NOT: anvil.concat
// RECENT: return {{.+}}, %[[NEW]],

// MXFP8 (blocks of 4 here, 32 by default): blocks along each GEMM's
// contraction, x's columns and w's rows; the gradient's along its last
// dimension (the contraction of dX = dY W^T).
// MX-LABEL: func.func @forward_grad
// MX: %[[XQ:.+]] = anvil.fp8_quantize %arg0 forward f8E4M3FN block 4 dim 1 : tensor<4x8xf32>
// MX: anvil.fp8_quantize %arg1 forward f8E4M3FN block 4 dim 0 : tensor<8x8xf32>
// MX: %[[DY:.+]] = anvil.fp8_quantize %{{.+}} forward f8E5M2 block 4 dim 1 : tensor<4x8xf32>
// MX: anvil.matmul %[[XQ]], %[[DY]] {transpose_lhs}
// RECIPE: error: anvil-fp8: unknown recipe 'tensorwise' (current, delayed or mxfp8)
// BLOCKS: error: loc("h.0.fc"): anvil-fp8: mxfp8 blocks of 3 do not divide the input's contraction dimension 1 (size 8, 'tensor<4x8xf32>') of the GEMM 'h.0.fc'
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
