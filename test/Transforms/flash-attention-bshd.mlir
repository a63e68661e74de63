// RUN: anvil-opt %s --split-input-file --anvil-flash-attention | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-flash-attention=fold-transposes=false | FileCheck %s --check-prefix=KEEP
// RUN: sed -n '/^\/\/ BEGIN-GRAD/,/^\/\/ END-GRAD/p' %s > %t.mlir
// RUN: anvil-opt %t.mlir --anvil-flash-attention --anvil-autodiff | FileCheck %s --check-prefix=GRAD

// Tests anvil-flash-attention's fold-transposes: attention between the
// transposes [0, 2, 1, 3] of (B, T, H, D) tensors takes those tensors
// (`bshd`) when that removes more transposes than it adds, and its gradient
// follows (no transpose in either pass).

// BEGIN-GRAD (the first case, alone, for autodiff)
// A transformer's attention: q, k and v transposed from the projection's
// (B, T, H, D), the result transposed back. All four transposes go.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: anvil.transpose
// CHECK: %[[O:.+]], %{{.+}} = anvil.flash_attention %arg0, %arg1, %arg2 {bshd, causal} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
// CHECK-NOT: anvil.transpose
// CHECK: anvil.reduce_sum %[[O]]
// KEEP-LABEL: func.func @forward
// KEEP-COUNT-3: anvil.transpose %arg
// KEEP: anvil.flash_attention %{{.+}} {causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
// KEEP: anvil.transpose
// GRAD-LABEL: func.func @forward_grad
// GRAD-NOT: anvil.transpose
// GRAD: %[[O:.+]], %[[LSE:.+]] = anvil.flash_attention %arg0, %arg1, %arg2 {bshd, causal}
// GRAD-NOT: anvil.transpose
// GRAD: anvil.flash_attention_grad %arg0, %arg1, %arg2, %[[O]], %[[LSE]], %{{.+}} {bshd, causal} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>)
// GRAD-NOT: anvil.transpose
// GRAD: return
func.func @forward(%x: tensor<2x8x4x16xf32> {anvil.param = #anvil.param<name = "x", init = #anvil.init<zeros>>},
                   %y: tensor<2x8x2x16xf32> {anvil.param = #anvil.param<name = "y", init = #anvil.init<zeros>>},
                   %z: tensor<2x8x2x16xf32> {anvil.param = #anvil.param<name = "z", init = #anvil.init<zeros>>}) -> tensor<f32> {
  %q = anvil.transpose %x, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %k = anvil.transpose %y, [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v = anvil.transpose %z, [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %o = anvil.attention %q, %k, %v {causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %t = anvil.transpose %o, [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  %l = anvil.reduce_sum %t dims [0, 1, 2, 3] : tensor<2x8x4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
// END-GRAD

// -----

// The result used as it is: three transposes go, one comes (the result's).
// CHECK-LABEL: func.func @result_used_as_is
// CHECK: %[[O:.+]], %{{.+}} = anvil.flash_attention %arg0, %arg1, %arg2 {bshd} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
// CHECK: %[[T:.+]] = anvil.transpose %[[O]], [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: return %[[T]]
func.func @result_used_as_is(%x: tensor<2x8x4x16xf32>, %y: tensor<2x8x4x16xf32>, %z: tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32> {
  %q = anvil.transpose %x, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %k = anvil.transpose %y, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %v = anvil.transpose %z, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = anvil.attention %q, %k, %v : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Only q is transposed, k and v are not, and the result is transposed back:
// two would go, two would come. The op keeps (B, H, T, D).
// CHECK-LABEL: func.func @no_gain
// CHECK: anvil.flash_attention %{{.+}}, %arg1, %arg2 : (tensor<2x4x8x16xf32>
// CHECK-NOT: bshd
// CHECK: return
func.func @no_gain(%x: tensor<2x8x4x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32> {
  %q = anvil.transpose %x, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = anvil.attention %q, %k, %v : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %t = anvil.transpose %o, [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  return %t : tensor<2x8x4x16xf32>
}

// -----

// The transposed q is returned too, so its transpose stays (it removes
// nothing); k, v and the result's still gain: the op takes q's source, the
// transpose remains for the return.
// CHECK-LABEL: func.func @shared_transpose
// CHECK: %[[Q:.+]] = anvil.transpose %arg0, [0, 2, 1, 3]
// CHECK: %[[O:.+]], %{{.+}} = anvil.flash_attention %arg0, %arg1, %arg2 {bshd}
// CHECK: return %[[O]], %[[Q]]
func.func @shared_transpose(%x: tensor<2x8x4x16xf32>, %y: tensor<2x8x4x16xf32>, %z: tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32>) {
  %q = anvil.transpose %x, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %k = anvil.transpose %y, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %v = anvil.transpose %z, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = anvil.attention %q, %k, %v : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %t = anvil.transpose %o, [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  return %t, %q : tensor<2x8x4x16xf32>, tensor<2x4x8x16xf32>
}

// -----

// Another permutation is no (B, T, H, D) layout: nothing folds.
// CHECK-LABEL: func.func @other_permutation
// CHECK-COUNT-3: anvil.transpose %arg{{.}}, [0, 1, 3, 2]
// CHECK: anvil.flash_attention %{{.+}} : (tensor<2x4x8x16xf32>
// CHECK-NOT: bshd
// CHECK: return
func.func @other_permutation(%x: tensor<2x4x16x8xf32>, %y: tensor<2x4x16x8xf32>, %z: tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32> {
  %q = anvil.transpose %x, [0, 1, 3, 2] : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
  %k = anvil.transpose %y, [0, 1, 3, 2] : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
  %v = anvil.transpose %z, [0, 1, 3, 2] : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
  %o = anvil.attention %q, %k, %v : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// One transpose as q, k and v (after CSE, say): it goes once, with the
// result's.
// CHECK-LABEL: func.func @one_transpose_three_operands
// CHECK-NOT: anvil.transpose
// CHECK: %[[O:.+]], %{{.+}} = anvil.flash_attention %arg0, %arg0, %arg0 {bshd}
// CHECK-NOT: anvil.transpose
// CHECK: return %[[O]]
func.func @one_transpose_three_operands(%x: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %t = anvil.transpose %x, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = anvil.attention %t, %t, %t : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %r = anvil.transpose %o, [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}

// -----

// One transpose as q and k, v plain, the result transposed back: the
// transpose goes (+1), v needs one (-1), the result's goes (+1).
// CHECK-LABEL: func.func @one_transpose_two_operands
// CHECK: %[[V:.+]] = anvil.transpose %arg1, [0, 2, 1, 3]
// CHECK: %[[O:.+]], %{{.+}} = anvil.flash_attention %arg0, %arg0, %[[V]] {bshd}
// CHECK: return %[[O]]
func.func @one_transpose_two_operands(%x: tensor<2x8x4x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32> {
  %t = anvil.transpose %x, [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %o = anvil.attention %t, %t, %v : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %r = anvil.transpose %o, [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}
