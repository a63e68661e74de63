// RUN: anvil-opt %s --split-input-file --anvil-partition=engine=anvil --verify-diagnostics | FileCheck %s

// Tests Megatron's MLP over tp = 2: the column-parallel matmul's input goes
// through an axis copy (its gradient is summed over the ranks), the
// elementwise op between keeps the split, the row-parallel matmul's
// partial sums are all-reduced, and the parameters take their local
// shapes with their whole shapes recorded.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<64x128xf32> {{{.*}}anvil.sharding = {global_shape = array<i64: 64, 256>, split_axis = "tp", split_dim = 1 : i64, split_groups = 1 : i64}}
// CHECK-SAME: tensor<128x64xf32> {{{.*}}anvil.sharding = {global_shape = array<i64: 256, 64>, split_axis = "tp", split_dim = 0 : i64
// CHECK: %[[C:.+]] = anvil.axis_copy %{{.+}} axis "tp" : tensor<8x64xf32>
// CHECK: %[[H:.+]] = anvil.matmul %[[C]], %[[W1]] : (tensor<8x64xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
// CHECK: anvil.gelu tanh %[[H]] : tensor<8x128xf32>
// CHECK: %[[P:.+]] = anvil.matmul {{.+}} -> tensor<8x64xf32>
// CHECK: %[[Y:.+]] = anvil.all_reduce sum %[[P]] axis "tp" : tensor<8x64xf32>
// CHECK: return %[[Y]]
module attributes {anvil.mesh = {tp = 2 : i64}} {
func.func @forward(%x: tensor<8x64xf32> {anvil.input = #anvil.input<name = "x">},
    %w1: tensor<64x256xf32> {anvil.param = #anvil.param<name = "w1", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}},
    %w2: tensor<256x64xf32> {anvil.param = #anvil.param<name = "w2", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}}) -> tensor<8x64xf32> {
  %h = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %g = anvil.gelu tanh %h : tensor<8x256xf32>
  %y = anvil.matmul %g, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
}

// -----

// Tests attention split by heads with a fused q/k/v weight [C, 3C] split
// in 3 groups: each rank keeps its heads of q, of k and of v, so the split
// into q, k and v gives plain head splits, which survive the reshape to
// (B, T, H, D), the transpose to (B, H, T, D), attention, and the way back.
// CHECK-LABEL: func.func @forward
// CHECK: anvil.matmul {{.+}} -> tensor<2x4x48xf32>
// CHECK: anvil.split %{{.+}} dim = 2 sizes [16, 16, 16] : tensor<2x4x48xf32> -> tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>
// CHECK: anvil.reshape %{{.+}} : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
// CHECK: anvil.transpose %{{.+}}, [0, 2, 1, 3] : tensor<2x4x2x8xf32> -> tensor<2x2x4x8xf32>
// CHECK: anvil.attention {{.+}} -> tensor<2x2x4x8xf32>
// CHECK: anvil.reshape %{{.+}} : tensor<2x4x2x8xf32> -> tensor<2x4x16xf32>
// CHECK: anvil.matmul {{.+}} : (tensor<2x4x16xf32>, tensor<16x32xf32>) -> tensor<2x4x32xf32>
// CHECK: anvil.all_reduce sum
module attributes {anvil.mesh = {tp = 2 : i64}} {
func.func @forward(%x: tensor<2x4x32xf32> {anvil.input = #anvil.input<name = "x">},
    %wqkv: tensor<32x96xf32> {anvil.param = #anvil.param<name = "qkv", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 3}},
    %wo: tensor<32x32xf32> {anvil.param = #anvil.param<name = "o", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}}) -> tensor<2x4x32xf32> {
  %qkv = anvil.matmul %x, %wqkv : (tensor<2x4x32xf32>, tensor<32x96xf32>) -> tensor<2x4x96xf32>
  %p:3 = anvil.split %qkv dim = 2 sizes [32, 32, 32] : tensor<2x4x96xf32> -> tensor<2x4x32xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>
  %q0 = anvil.reshape %p#0 : tensor<2x4x32xf32> -> tensor<2x4x4x8xf32>
  %q = anvil.transpose %q0, [0, 2, 1, 3] : tensor<2x4x4x8xf32> -> tensor<2x4x4x8xf32>
  %k0 = anvil.reshape %p#1 : tensor<2x4x32xf32> -> tensor<2x4x4x8xf32>
  %k = anvil.transpose %k0, [0, 2, 1, 3] : tensor<2x4x4x8xf32> -> tensor<2x4x4x8xf32>
  %v0 = anvil.reshape %p#2 : tensor<2x4x32xf32> -> tensor<2x4x4x8xf32>
  %v = anvil.transpose %v0, [0, 2, 1, 3] : tensor<2x4x4x8xf32> -> tensor<2x4x4x8xf32>
  %a = anvil.attention %q, %k, %v {causal} : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  %t = anvil.transpose %a, [0, 2, 1, 3] : tensor<2x4x4x8xf32> -> tensor<2x4x4x8xf32>
  %m = anvil.reshape %t : tensor<2x4x4x8xf32> -> tensor<2x4x32xf32>
  %y = anvil.matmul %m, %wo : (tensor<2x4x32xf32>, tensor<32x32xf32>) -> tensor<2x4x32xf32>
  return %y : tensor<2x4x32xf32>
}
}

// -----

// Tests that a dimension that does not divide names the tensor, the
// dimension and the axis.
module attributes {anvil.mesh = {tp = 3 : i64}} {
// expected-error@+1 {{anvil-partition: dimension 1 of 'w1' (256) does not divide by mesh axis 'tp' of 3 ranks}}
func.func @forward(%x: tensor<8x64xf32> {anvil.input = #anvil.input<name = "x">},
    %w1: tensor<64x256xf32> {anvil.param = #anvil.param<name = "w1", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}}) -> tensor<8x256xf32> {
  %h = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  return %h : tensor<8x256xf32>
}
}

// -----

// Tests that an op without a rule for its operands' shardings says so.
module attributes {anvil.mesh = {tp = 2 : i64}} {
func.func @forward(%x: tensor<8x64xf32> {anvil.input = #anvil.input<name = "x">},
    %w1: tensor<64x256xf32> {anvil.param = #anvil.param<name = "w1", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}}) -> tensor<8x256xf32> {
  %h = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  // expected-error@+1 {{anvil-partition: 'anvil.softmax' over mesh axis 'tp' (2 ranks): no tensor-parallel rule for operands #0 split on dimension 1}}
  %s = anvil.softmax %h dim = 1 : tensor<8x256xf32>
  return %s : tensor<8x256xf32>
}
}
