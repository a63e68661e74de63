// RUN: anvil-opt %s --split-input-file --anvil-partition=engine=shard --verify-diagnostics | FileCheck %s --check-prefix=SHARD --implicit-check-not=shard.
// RUN: anvil-opt %s --split-input-file --anvil-partition | FileCheck %s --check-prefix=AUTO --implicit-check-not=shard.

// Tests anvil-partition's use of the upstream shard dialect. The anvil ops
// that are loop nests (elementwise ops, matmul, transpose, broadcast)
// describe themselves to it by loops and indexing maps
// (Transforms/ShardingModels.cpp), so upstream's `sharding-propagation` and
// `shard-partition` partition them; anvil-partition (engine=auto, the
// default) uses them where they cover the function and anvil's own rules
// (AnvilSharding.cpp) where they do not, and the function's
// `anvil.partitioner` says which ran. engine=shard fails saying why.

// The same MLP through anvil-partition: the parameters' layouts become the
// annotations, and the result is anvil's (the axis copy of the input of the
// column-parallel matmul, the collective an anvil.all_reduce), the same
// program as anvil's own rules give (partition.mlir). A replicated bias
// added to the split activations is cut to the rank's block (upstream's
// all_slice: an axis copy and a gather of the rank's rows) before it is
// broadcast.
// SHARD-LABEL: func.func @forward
// SHARD-SAME: %[[X:[a-z0-9]+]]: tensor<8x64xf32> {anvil.input
// SHARD-SAME: %[[W1:[a-z0-9]+]]: tensor<64x128xf32> {{{.*}}anvil.sharding = {global_shape = array<i64: 64, 256>, split_axis = "tp", split_dim = 1 : i64, split_groups = 1 : i64}}
// SHARD-SAME: %[[B1:[a-z0-9]+]]: tensor<256xf32>
// SHARD-SAME: tensor<128x64xf32> {{{.*}}anvil.sharding = {global_shape = array<i64: 256, 64>, split_axis = "tp", split_dim = 0 : i64
// SHARD-SAME: attributes {anvil.partitioner = "shard"}
// SHARD: %[[C:.+]] = anvil.axis_copy %[[X]] axis "tp" : tensor<8x64xf32>
// SHARD: anvil.matmul %[[C]], %[[W1]] : (tensor<8x64xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
// SHARD: %[[BC:.+]] = anvil.axis_copy %[[B1]] axis "tp" : tensor<256xf32>
// SHARD: anvil.axis_index axis "tp"
// SHARD: %[[BB:.+]] = anvil.gather %[[BC]][%{{.+}}] axis = 0 : (tensor<256xf32>, tensor<128xi64>) -> tensor<128xf32>
// SHARD: anvil.broadcast %[[BB]], dims = [1] : tensor<128xf32> -> tensor<8x128xf32>
// SHARD: anvil.gelu tanh %{{.+}} : tensor<8x128xf32>
// SHARD: %[[P:.+]] = anvil.matmul {{.+}} -> tensor<8x64xf32>
// SHARD: %[[Y:.+]] = anvil.all_reduce sum %[[P]] axis "tp" : tensor<8x64xf32>
// SHARD: return %[[Y]]
// AUTO-LABEL: func.func @forward
// AUTO-SAME: attributes {anvil.partitioner = "shard"}
module attributes {anvil.mesh = {tp = 2 : i64}} {
func.func @forward(%x: tensor<8x64xf32> {anvil.input = #anvil.input<name = "x">},
    %w1: tensor<64x256xf32> {anvil.param = #anvil.param<name = "w1", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}},
    %b1: tensor<256xf32> {anvil.param = #anvil.param<name = "b1", init = <zeros>>},
    %w2: tensor<256x64xf32> {anvil.param = #anvil.param<name = "w2", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}}) -> tensor<8x64xf32> {
  %h0 = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %bb = anvil.broadcast %b1, dims = [1] : tensor<256xf32> -> tensor<8x256xf32>
  %h = anvil.add %h0, %bb : tensor<8x256xf32>
  %g = anvil.gelu tanh %h : tensor<8x256xf32>
  %y = anvil.matmul %g, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
}

// -----

// Where the shard dialect does not reach: a fused q/k/v weight split in 3
// groups (each rank keeps its heads of q, of k and of v) is no shard.sharding,
// which splits in even blocks. Anvil's rules partition it.
// AUTO-LABEL: func.func @forward
// AUTO-SAME: attributes {anvil.partitioner = "anvil"}
// AUTO: anvil.split %{{.+}} dim = 2 sizes [16, 16, 16]
module attributes {anvil.mesh = {tp = 2 : i64}} {
// expected-error@+1 {{anvil-partition: the shard dialect does not partition @forward: 'qkv' splits dimension 1 in 3 groups, which a shard.sharding (even blocks) cannot express}}
func.func @forward(%x: tensor<2x4x32xf32> {anvil.input = #anvil.input<name = "x">},
    %wqkv: tensor<32x96xf32> {anvil.param = #anvil.param<name = "qkv", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 3}},
    %wo: tensor<32x32xf32> {anvil.param = #anvil.param<name = "o", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}}) -> tensor<2x4x32xf32> {
  %qkv = anvil.matmul %x, %wqkv : (tensor<2x4x32xf32>, tensor<32x96xf32>) -> tensor<2x4x96xf32>
  %p:3 = anvil.split %qkv dim = 2 sizes [32, 32, 32] : tensor<2x4x96xf32> -> tensor<2x4x32xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>
  %s = anvil.add %p#0, %p#1 : tensor<2x4x32xf32>
  %v = anvil.mul %s, %p#2 : tensor<2x4x32xf32>
  %y = anvil.matmul %v, %wo : (tensor<2x4x32xf32>, tensor<32x32xf32>) -> tensor<2x4x32xf32>
  return %y : tensor<2x4x32xf32>
}
}

// -----

// Attention split by heads: the shard dialect has no loops for the reshape
// into heads, nor for anvil.attention (nor for the norms, embeddings and
// losses, whose vocabulary-parallel forms are rewrites, not shardings), so
// it stops at the first of them. Anvil's rules split attention by heads.
// AUTO-LABEL: func.func @forward
// AUTO-SAME: attributes {anvil.partitioner = "anvil"}
// AUTO: anvil.attention {{.+}} -> tensor<2x2x4x8xf32>
module attributes {anvil.mesh = {tp = 2 : i64}} {
// expected-error@+1 {{anvil-partition: the shard dialect does not partition @forward: 'anvil.reshape' at}}
func.func @forward(%x: tensor<2x4x32xf32> {anvil.input = #anvil.input<name = "x">},
    %wq: tensor<32x32xf32> {anvil.param = #anvil.param<name = "q", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}},
    %wo: tensor<32x32xf32> {anvil.param = #anvil.param<name = "o", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}}) -> tensor<2x4x32xf32> {
  %q2 = anvil.matmul %x, %wq : (tensor<2x4x32xf32>, tensor<32x32xf32>) -> tensor<2x4x32xf32>
  %q1 = anvil.reshape %q2 : tensor<2x4x32xf32> -> tensor<2x4x4x8xf32>
  %q = anvil.transpose %q1, [0, 2, 1, 3] : tensor<2x4x4x8xf32> -> tensor<2x4x4x8xf32>
  %a = anvil.attention %q, %q, %q {causal} : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  %t = anvil.transpose %a, [0, 2, 1, 3] : tensor<2x4x4x8xf32> -> tensor<2x4x4x8xf32>
  %m = anvil.reshape %t : tensor<2x4x4x8xf32> -> tensor<2x4x32xf32>
  %y = anvil.matmul %m, %wo : (tensor<2x4x32xf32>, tensor<32x32xf32>) -> tensor<2x4x32xf32>
  return %y : tensor<2x4x32xf32>
}
}

// -----

// A value nothing uses gets no sharding from propagation (and
// shard-partition needs one on every value): the copy the shard dialect
// partitions leaves it out.
// SHARD-LABEL: func.func @forward
// SHARD-SAME: attributes {anvil.partitioner = "shard"}
// SHARD-NOT: anvil.exp
// SHARD: return
// AUTO-LABEL: func.func @forward
// AUTO-SAME: attributes {anvil.partitioner = "shard"}
module attributes {anvil.mesh = {tp = 2 : i64}} {
func.func @forward(%x: tensor<8x64xf32> {anvil.input = #anvil.input<name = "x">},
    %w1: tensor<64x256xf32> {anvil.param = #anvil.param<name = "w1", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}},
    %w2: tensor<256x64xf32> {anvil.param = #anvil.param<name = "w2", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}}) -> tensor<8x64xf32> {
  %h = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %unused = anvil.exp %h : tensor<8x256xf32>
  %y = anvil.matmul %h, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
}
