// RUN: anvil-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" | FileCheck %s

// Tests the upstream shard dialect's view of anvil ops
// (Transforms/ShardingModels.cpp): upstream's `sharding-propagation` and
// `shard-partition` alone, on annotated anvil programs.

// The upstream passes alone on anvil ops: Megatron's MLP (column- then
// row-parallel) comes out with local shapes and one all-reduce of the
// row-parallel matmul's partial sums.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<64x128xf32>, %[[W2:.+]]: tensor<128x64xf32>
// CHECK: anvil.matmul %{{.+}} -> tensor<8x128xf32>
// CHECK: anvil.gelu tanh %{{.+}} : tensor<8x128xf32>
// CHECK: %[[P:.+]] = anvil.matmul %{{.+}}, %[[W2]] : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
// CHECK: shard.all_reduce %[[P]] on @tp grid_axes = [0] : tensor<8x64xf32> -> tensor<8x64xf32>
shard.grid @tp(shape = 2)
func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<8x64xf32> {
  %cols = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
  %rows = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  %whole = shard.sharding @tp split_axes = [[]] : !shard.sharding
  %xa = shard.shard %x to %whole : tensor<8x64xf32>
  %w1s = shard.shard %w1 to %cols : tensor<64x256xf32>
  %w2s = shard.shard %w2 to %rows : tensor<256x64xf32>
  %h = anvil.matmul %xa, %w1s : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %g = anvil.gelu tanh %h : tensor<8x256xf32>
  %y = anvil.matmul %g, %w2s : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  %ya = shard.shard %y to %whole : tensor<8x64xf32>
  %yu = shard.shard %ya to %whole annotate_for_users : tensor<8x64xf32>
  return %yu : tensor<8x64xf32>
}


// -----

// A batched matmul with a transposed rhs, split on the batch (attention's
// scores per head), keeps the split through a transpose with no
// communication; a transposed-lhs matmul contracting two splits (dW = X^T dY
// of a row-parallel layer) sums its partial products.
// CHECK-LABEL: func.func @batched
// CHECK-SAME: tensor<2x8x16xf32>, %{{.+}}: tensor<2x8x16xf32>, %{{.+}}: tensor<32x8xf32>, %{{.+}}: tensor<32x4xf32>
// CHECK: anvil.matmul %{{.+}} {transpose_rhs} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
// CHECK-NEXT: anvil.transpose %{{.+}}, [0, 2, 1] : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT: %[[D:.+]] = anvil.matmul %{{.+}} {transpose_lhs} : (tensor<32x8xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: shard.all_reduce %[[D]] on @tp grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
shard.grid @tp(shape = 2)
func.func @batched(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %x: tensor<64x8xf32>, %dy: tensor<64x4xf32>) -> (tensor<4x8x8xf32>, tensor<8x4xf32>) {
  %heads = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  %whole = shard.sharding @tp split_axes = [[]] : !shard.sharding
  %qs = shard.shard %q to %heads : tensor<4x8x16xf32>
  %ks = shard.shard %k to %heads : tensor<4x8x16xf32>
  %xs = shard.shard %x to %heads : tensor<64x8xf32>
  %dys = shard.shard %dy to %heads : tensor<64x4xf32>
  %s = anvil.matmul %qs, %ks {transpose_rhs} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %t = anvil.transpose %s, [0, 2, 1] : tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  %ts = shard.shard %t to %heads : tensor<4x8x8xf32>
  %tu = shard.shard %ts to %heads annotate_for_users : tensor<4x8x8xf32>
  %dw = anvil.matmul %xs, %dys {transpose_lhs} : (tensor<64x8xf32>, tensor<64x4xf32>) -> tensor<8x4xf32>
  %dws = shard.shard %dw to %whole : tensor<8x4xf32>
  %dwu = shard.shard %dws to %whole annotate_for_users : tensor<8x4xf32>
  return %tu, %dwu : tensor<4x8x8xf32>, tensor<8x4xf32>
}
