// RUN: anvil-opt %s --split-input-file --anvil-flash-attention="bf16-tensors=true" | FileCheck %s

// bf16-tensors: an attention with bf16 products takes bf16 tensors. The
// split of a fused projection that only attention reads is cast once,
// before it (its producer then writes bf16); the result is widened for its
// users, the log-sum-exp stays f32.
// CHECK-LABEL: func.func @split_projection
// CHECK: %[[C:.+]] = anvil.cast %{{.+}} : tensor<2x8x48xf32> to tensor<2x8x48xbf16>
// CHECK-NEXT: %[[S:.+]]:3 = anvil.split %[[C]] dim = 2 sizes [16, 16, 16] : tensor<2x8x48xbf16>
// CHECK-NOT: anvil.cast
// CHECK: %[[O:.+]], %{{.+}} = anvil.flash_attention %{{.+}}, %{{.+}}, %{{.+}} {bf16_gemms, causal} : (tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16>) -> (tensor<2x2x8x8xbf16>, tensor<2x2x8xf32>)
// CHECK-NEXT: %[[W:.+]] = anvil.cast %[[O]] : tensor<2x2x8x8xbf16> to tensor<2x2x8x8xf32>
// CHECK-NEXT: return %[[W]]
func.func @split_projection(%x: tensor<2x8x48xf32>) -> tensor<2x2x8x8xf32> {
  %y = anvil.add %x, %x : tensor<2x8x48xf32>
  %s:3 = anvil.split %y dim = 2 sizes [16, 16, 16] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %q = anvil.reshape %s#0 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %k = anvil.reshape %s#1 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %v = anvil.reshape %s#2 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %o = anvil.attention %q, %k, %v {causal, bf16_gemms} : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  return %o : tensor<2x2x8x8xf32>
}

// -----

// A split something else also reads keeps f32: each operand is cast where
// attention reads it.
// CHECK-LABEL: func.func @shared_projection
// CHECK: anvil.split %{{.+}} : tensor<2x8x48xf32>
// CHECK-COUNT-3: anvil.cast %{{.+}} : tensor<2x2x8x8xf32> to tensor<2x2x8x8xbf16>
// CHECK: anvil.flash_attention {{.*}} : (tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16>)
func.func @shared_projection(%x: tensor<2x8x48xf32>) -> (tensor<2x2x8x8xf32>, tensor<2x8x16xf32>) {
  %s:3 = anvil.split %x dim = 2 sizes [16, 16, 16] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %q = anvil.reshape %s#0 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %k = anvil.reshape %s#1 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %v = anvil.reshape %s#2 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %o = anvil.attention %q, %k, %v {bf16_gemms} : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %w = anvil.exp %s#2 : tensor<2x8x16xf32>
  return %o, %w : tensor<2x2x8x8xf32>, tensor<2x8x16xf32>
}

// -----

// f32 products keep f32 tensors.
// CHECK-LABEL: func.func @f32_products
// CHECK-NOT: anvil.cast
// CHECK: anvil.flash_attention {{.*}} -> (tensor<1x2x8x8xf32>, tensor<1x2x8xf32>)
func.func @f32_products(%q: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %o = anvil.attention %q, %q, %q : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %o : tensor<1x2x8x8xf32>
}

// -----

// Nested splits, one of whose results something else reads: the projection
// keeps f32 and each operand is cast where attention reads it (the IR
// stays valid: no split reads bf16 and gives f32).
// CHECK-LABEL: func.func @nested_split
// CHECK: anvil.split %{{.+}} : tensor<2x8x48xf32>
// CHECK: anvil.split %{{.+}} : tensor<2x8x32xf32>
// CHECK-COUNT-3: anvil.cast %{{.+}} : tensor<2x2x8x8xf32> to tensor<2x2x8x8xbf16>
func.func @nested_split(%x: tensor<2x8x48xf32>) -> (tensor<2x2x8x8xf32>, tensor<2x8x16xf32>) {
  %s:2 = anvil.split %x dim = 2 sizes [16, 32] : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x32xf32>
  %t:2 = anvil.split %s#1 dim = 2 sizes [16, 16] : tensor<2x8x32xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %q = anvil.reshape %s#0 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %k = anvil.reshape %t#0 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %v = anvil.reshape %t#1 : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %o = anvil.attention %q, %k, %v {bf16_gemms} : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %w = anvil.exp %t#1 : tensor<2x8x16xf32>
  return %o, %w : tensor<2x2x8x8xf32>, tensor<2x8x16xf32>
}

// -----

// Overlapping slices: their gradients would meet in bf16 above a hoisted
// cast, so each operand is cast where attention reads it and the
// gradients are widened before they are summed.
// CHECK-LABEL: func.func @overlapping_slices
// CHECK-NOT: anvil.cast {{.*}} : tensor<2x8x24xf32>
// CHECK-COUNT-3: anvil.cast %{{.+}} : tensor<2x2x8x8xf32> to tensor<2x2x8x8xbf16>
func.func @overlapping_slices(%x: tensor<2x8x24xf32>) -> tensor<2x2x8x8xf32> {
  %a = anvil.slice %x [0:2:1, 0:8:1, 0:16:1] : tensor<2x8x24xf32> -> tensor<2x8x16xf32>
  %b = anvil.slice %x [0:2:1, 0:8:1, 8:24:1] : tensor<2x8x24xf32> -> tensor<2x8x16xf32>
  %q = anvil.reshape %a : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %k = anvil.reshape %b : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %o = anvil.attention %q, %k, %k {bf16_gemms} : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  return %o : tensor<2x2x8x8xf32>
}
