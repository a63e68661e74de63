// RUN: anvil-opt %s --split-input-file --canonicalize | FileCheck %s

// Tests the canonicalizer's packing of fused attention gradients: the
// concatenation, along dimension 2, of a bshd anvil.flash_attention_grad's
// dq, dk and dv reshaped to (B, T, H D) (the VJP of a fused q/k/v
// projection's split) becomes the op with `packed_grads`, whose one result
// is that concatenation.

// CHECK-LABEL: func.func @packed
// CHECK-NEXT: %[[G:.+]] = anvil.flash_attention_grad %arg0, %arg1, %arg2, %arg3, %arg4, %arg5 {bshd, causal, packed_grads} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4x8xf32>) -> tensor<2x8x112xf32>
// CHECK-NEXT: return %[[G]]
func.func @packed(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x2x8xf32>, %o: tensor<2x8x4x8xf32>, %lse: tensor<2x4x8xf32>, %g: tensor<2x8x4x8xf32>) -> tensor<2x8x112xf32> {
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %k, %v, %o, %lse, %g {bshd, causal} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x8xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4x8xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x8xf32>)
  %a = anvil.reshape %dq : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %b = anvil.reshape %dk : tensor<2x8x2x16xf32> -> tensor<2x8x32xf32>
  %c = anvil.reshape %dv : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
  %x = anvil.concat %a, %b, %c dim = 2 : (tensor<2x8x64xf32>, tensor<2x8x32xf32>, tensor<2x8x16xf32>) -> tensor<2x8x112xf32>
  return %x : tensor<2x8x112xf32>
}

// -----

// Not in q, k, v order: no packing.
// CHECK-LABEL: func.func @other_order
// CHECK: anvil.concat
// CHECK-NOT: packed_grads
func.func @other_order(%q: tensor<2x8x4x16xf32>, %o: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xf32>) -> tensor<2x8x192xf32> {
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %q, %q, %o, %lse, %o {bshd} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  %a = anvil.reshape %dq : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %b = anvil.reshape %dk : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %c = anvil.reshape %dv : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %x = anvil.concat %b, %a, %c dim = 2 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  return %x : tensor<2x8x192xf32>
}

// -----

// dq is also used on its own: no packing.
// CHECK-LABEL: func.func @other_use
// CHECK: anvil.concat
// CHECK-NOT: packed_grads
func.func @other_use(%q: tensor<2x8x4x16xf32>, %o: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xf32>) -> (tensor<2x8x192xf32>, tensor<2x8x4x16xf32>) {
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %q, %q, %o, %lse, %o {bshd} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
  %a = anvil.reshape %dq : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %b = anvil.reshape %dk : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %c = anvil.reshape %dv : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %x = anvil.concat %a, %b, %c dim = 2 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  return %x, %dq : tensor<2x8x192xf32>, tensor<2x8x4x16xf32>
}

// -----

// (B, H, T, D) gradients: their rows are not (B, T) rows; no packing.
// CHECK-LABEL: func.func @heads_major
// CHECK: anvil.concat
// CHECK-NOT: packed_grads
func.func @heads_major(%q: tensor<2x4x8x16xf32>, %lse: tensor<2x4x8xf32>) -> tensor<2x4x384xf32> {
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %q, %q, %q, %lse, %q : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
  %a = anvil.reshape %dq : tensor<2x4x8x16xf32> -> tensor<2x4x128xf32>
  %b = anvil.reshape %dk : tensor<2x4x8x16xf32> -> tensor<2x4x128xf32>
  %c = anvil.reshape %dv : tensor<2x4x8x16xf32> -> tensor<2x4x128xf32>
  %x = anvil.concat %a, %b, %c dim = 2 : (tensor<2x4x128xf32>, tensor<2x4x128xf32>, tensor<2x4x128xf32>) -> tensor<2x4x384xf32>
  return %x : tensor<2x4x384xf32>
}
