// RUN: anvil-opt %s --split-input-file --anvil-flash-attention | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-flash-attention=max-head-dim=8 | FileCheck %s --check-prefix=NARROW

// Tests anvil-flash-attention's key biases: a mask that is an anvil.broadcast
// of one row of keys per batch element (or one row for all) over the heads
// and queries, made from data, becomes the fused op's (B, Tk) key_bias;
// masks that vary along the heads or queries, or that a float argument
// reaches, stay anvil.attention.

// BERT's padding mask, (1 - attention_mask) * -10000 from (B, 1, 1, T),
// shared by two layers: one key bias, the (B, T) row the mask was
// broadcast from, and the broadcast mask is gone.
// CHECK-LABEL: func.func @padding_mask
// CHECK: %[[ROW:.+]] = anvil.mul %{{.+}}, %{{.+}} : tensor<2x8xf32>
// CHECK-NOT: anvil.broadcast {{.*}} -> tensor<2x1x8x8xf32>
// CHECK: anvil.flash_attention %arg0, %arg1, %arg2 key_bias(%[[ROW]]) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
// CHECK: anvil.flash_attention %{{.+}}, %arg1, %arg2 key_bias(%[[ROW]])
// CHECK-NOT: anvil.attention
func.func @padding_mask(%q: tensor<2x4x8x16xf32> {anvil.param = #anvil.param<name = "q", init = #anvil.init<zeros>>},
                        %k: tensor<2x4x8x16xf32> {anvil.param = #anvil.param<name = "k", init = #anvil.init<zeros>>},
                        %v: tensor<2x4x8x16xf32> {anvil.param = #anvil.param<name = "v", init = #anvil.init<zeros>>},
                        %am: tensor<2x8xi32> {anvil.input = #anvil.input<name = "attention_mask", range = 2>}) -> tensor<f32> {
  %m = anvil.cast %am : tensor<2x8xi32> to tensor<2x8xf32>
  %one = anvil.constant dense<1.0> : tensor<2x8xf32>
  %big = anvil.constant dense<10000.0> : tensor<2x8xf32>
  %d = anvil.sub %m, %one : tensor<2x8xf32>
  %row = anvil.mul %d, %big : tensor<2x8xf32>
  %r4 = anvil.reshape %row : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
  %mask = anvil.broadcast %r4, dims = [0, 1, 2, 3] : tensor<2x1x1x8xf32> -> tensor<2x1x8x8xf32>
  %o = anvil.attention %q, %k, %v mask(%mask) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32>
  %p = anvil.attention %o, %k, %v mask(%mask) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32>
  %l = anvil.reduce_sum %p dims [0, 1, 2, 3] : tensor<2x4x8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// One row of keys for every batch element: a (Tq, Tk) mask broadcast from
// (Tk), and a (1, 1, Tq, Tk) one from (1, 1, 1, Tk): the bias is broadcast
// over the batch. (Inputs without anvil.input are data too.)
// CHECK-LABEL: func.func @shared_rows
// CHECK: %[[F1:.+]] = anvil.cast %arg3
// CHECK: %[[F2:.+]] = anvil.cast %arg4
// CHECK: %[[B1:.+]] = anvil.broadcast %[[F1]], dims = [1] : tensor<8xf32> -> tensor<2x8xf32>
// CHECK: %[[R:.+]] = anvil.reshape %[[F2]] : tensor<1x1x1x8xf32> -> tensor<8xf32>
// CHECK: %[[B2:.+]] = anvil.broadcast %[[R]], dims = [1] : tensor<8xf32> -> tensor<2x8xf32>
// CHECK: anvil.flash_attention %arg0, %arg1, %arg2 key_bias(%[[B1]])
// CHECK: anvil.flash_attention %arg0, %arg1, %arg2 key_bias(%[[B2]])
func.func @shared_rows(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                       %row: tensor<8xi1>, %row4: tensor<1x1x1x8xi1>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) {
  %rf = anvil.cast %row : tensor<8xi1> to tensor<8xf32>
  %rf4 = anvil.cast %row4 : tensor<1x1x1x8xi1> to tensor<1x1x1x8xf32>
  %m = anvil.broadcast %rf, dims = [1] : tensor<8xf32> -> tensor<8x8xf32>
  %m4 = anvil.broadcast %rf4, dims = [0, 1, 2, 3] : tensor<1x1x1x8xf32> -> tensor<1x1x8x8xf32>
  %o = anvil.attention %q, %k, %v mask(%m) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  %p = anvil.attention %q, %k, %v mask(%m4) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x1x8x8xf32>) -> tensor<2x4x8x16xf32>
  return %o, %p : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
}

// -----

// Not key biases: a mask that varies along the queries (a (B, Tq) row
// broadcast over the keys), one that varies along the heads, one that is
// not a broadcast, and one a float argument reaches (its gradient would be
// lost); they stay anvil.attention.
// CHECK-LABEL: func.func @not_key_biases
// CHECK-NOT: anvil.flash_attention
// CHECK-COUNT-4: anvil.attention
func.func @not_key_biases(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                          %rows: tensor<2x8xi1>, %heads: tensor<2x4x1x8xi1>, %fullBits: tensor<8x8xi1>,
                          %learned: tensor<8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) {
  %full = anvil.cast %fullBits : tensor<8x8xi1> to tensor<8x8xf32>
  %rf = anvil.cast %rows : tensor<2x8xi1> to tensor<2x8xf32>
  %byQuery = anvil.broadcast %rf, dims = [0, 2] : tensor<2x8xf32> -> tensor<2x1x8x8xf32>
  %hf = anvil.cast %heads : tensor<2x4x1x8xi1> to tensor<2x4x1x8xf32>
  %byHead = anvil.broadcast %hf, dims = [0, 1, 2, 3] : tensor<2x4x1x8xf32> -> tensor<2x4x8x8xf32>
  %byParam = anvil.broadcast %learned, dims = [1] : tensor<8xf32> -> tensor<8x8xf32>
  %a = anvil.attention %q, %k, %v mask(%byQuery) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32>
  %b = anvil.attention %q, %k, %v mask(%byHead) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  %c = anvil.attention %q, %k, %v mask(%full) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  %d = anvil.attention %q, %k, %v mask(%byParam) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  return %a, %b, %c, %d : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
}

// -----

// Behind anvil.stop_gradient, a float argument's values are data.
// CHECK-LABEL: func.func @stopped
// CHECK: anvil.flash_attention {{.*}} key_bias
func.func @stopped(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                   %learned: tensor<2x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = anvil.stop_gradient %learned : tensor<2x8xf32>
  %r = anvil.reshape %s : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
  %m = anvil.broadcast %r, dims = [0, 1, 2, 3] : tensor<2x1x1x8xf32> -> tensor<2x4x8x8xf32>
  %o = anvil.attention %q, %k, %v mask(%m) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// A mask shared by an op that fuses and one that does not (its heads are
// wider than max-head-dim): the fused one takes the key bias, the other
// keeps the mask.
// NARROW-LABEL: func.func @shared_mask
// NARROW: %[[M:.+]] = anvil.broadcast %{{.+}}, dims = [0, 1, 2, 3] : tensor<2x1x1x8xf32> -> tensor<2x1x8x8xf32>
// NARROW: anvil.flash_attention %arg0, %arg1, %arg2 key_bias(%{{.+}}) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x8xf32>)
// NARROW: anvil.attention %arg3, %arg4, %arg5 mask(%[[M]])
func.func @shared_mask(%q: tensor<2x4x8x8xf32>, %k: tensor<2x4x8x8xf32>, %v: tensor<2x4x8x8xf32>,
                       %q2: tensor<2x4x8x16xf32>, %k2: tensor<2x4x8x16xf32>, %v2: tensor<2x4x8x16xf32>,
                       %am: tensor<2x8xi32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) {
  %row = anvil.cast %am : tensor<2x8xi32> to tensor<2x8xf32>
  %r4 = anvil.reshape %row : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
  %mask = anvil.broadcast %r4, dims = [0, 1, 2, 3] : tensor<2x1x1x8xf32> -> tensor<2x1x8x8xf32>
  %o = anvil.attention %q, %k, %v mask(%mask) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = anvil.attention %q2, %k2, %v2 mask(%mask) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32>
  return %o, %p : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
}
