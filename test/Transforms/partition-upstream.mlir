// RUN: anvil-opt %s --pass-pipeline="builtin.module(func.func(sharding-propagation))" --verify-diagnostics

// Why anvil-partition has rules of its own (ShardingRuleOpInterface,
// AnvilSharding.cpp) instead of the upstream shard dialect's propagation
// and SPMD partitioning: anvil partitions the model-level graph before it is
// differentiated, so that the VJP rules of the collectives it inserts
// (axis_copy, all_reduce, all_gather, reduce_scatter) give the backward
// pass its communication. Upstream's ShardingInterface describes an op by
// loop iterator types and indexing maps, which anvil's attention,
// embedding and cross-entropy do not have (and the vocabulary-parallel
// forms of the last two are rewrites, not shardings); its splits are even
// blocks, so a fused q/k/v weight split in 3 groups has no sharding there.
// Upstream propagation over the MLP that test/Transforms/partition.mlir
// partitions (column- then row-parallel) stops at the anvil ops:

shard.grid @tp(shape = 2)
func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<8x64xf32> {
  %s = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
  %w1s = shard.shard %w1 to %s : tensor<64x256xf32>
  // expected-error@+1 {{'anvil.matmul' op sharding interface is not implemented}}
  %h = anvil.matmul %x, %w1s : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %g = anvil.gelu tanh %h : tensor<8x256xf32>
  // expected-error@+1 {{'anvil.matmul' op sharding interface is not implemented}}
  %y = anvil.matmul %g, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
