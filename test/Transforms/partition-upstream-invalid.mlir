// RUN: anvil-opt %s --split-input-file --anvil-partition=engine=shard --verify-diagnostics
// RUN: not anvil-opt %s --split-input-file --anvil-partition=engine=gspmd 2>&1 | FileCheck %s --check-prefix=ENGINE
// RUN: not anvil-opt %s --split-input-file --anvil-partition='engine=shard sequence-parallel=true' 2>&1 | FileCheck %s --check-prefix=SP

// Tests where anvil-partition's engine=shard refuses a function, saying why
// (engine=auto takes anvil's rules there, or fails with their error).
// ENGINE: anvil-partition: engine=gspmd: the partitioners are auto, shard and anvil
// SP: anvil-partition: the shard dialect does not partition @forward: sequence parallelism has anvil's rules only

// A split value returned: upstream would gather it whole (an all_gather,
// whose gradient to replicated users anvil's collectives do not give).
module attributes {anvil.mesh = {tp = 2 : i64}} {
// expected-error@+1 {{anvil-partition: the shard dialect does not partition @forward: the shard dialect's partitioning made 'shard.all_gather'}}
func.func @forward(%x: tensor<8x64xf32> {anvil.input = #anvil.input<name = "x">},
    %w1: tensor<64x256xf32> {anvil.param = #anvil.param<name = "w1", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}}) -> tensor<8x256xf32> {
  %h = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  return %h : tensor<8x256xf32>
}
}

// -----

// A broadcast that expands a dimension of size 1 (a per-row scale) into a
// split dimension: its loop description maps that dimension to the split
// loop, which would cut it to nothing.
module attributes {anvil.mesh = {tp = 2 : i64}} {
// expected-error@+1 {{anvil-partition: the shard dialect does not partition @forward: 'anvil.broadcast' at}}
func.func @forward(%x: tensor<8x64xf32> {anvil.input = #anvil.input<name = "x">},
    %s: tensor<8x1xf32> {anvil.input = #anvil.input<name = "s">},
    %w1: tensor<64x256xf32> {anvil.param = #anvil.param<name = "w1", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}},
    %w2: tensor<256x64xf32> {anvil.param = #anvil.param<name = "w2", init = <zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}}) -> tensor<8x64xf32> {
  %h = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %sb = anvil.broadcast %s, dims = [0, 1] : tensor<8x1xf32> -> tensor<8x256xf32>
  %g = anvil.mul %h, %sb : tensor<8x256xf32>
  %y = anvil.matmul %g, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
}
