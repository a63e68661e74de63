// examples/mlp.mlir with Megatron's tensor-parallel layout on its
// parameters: fc1 column-parallel (its weight's output columns and its bias
// split), fc2 row-parallel (its weight's input rows split; its bias whole).
// `anvil-compile --mesh tp=N` partitions it; without --mesh the layout is
// unused.

func.func @forward(
    %x: tensor<16x12xf32> {anvil.input = #anvil.input<name = "x">},
    %y: tensor<16xi32> {anvil.input = #anvil.input<name = "y">},
    %w1: tensor<12x32xf32> {anvil.param = #anvil.param<name = "fc1.weight", init = #anvil.init<kaiming_uniform(gain = 1.0)>>, anvil.sharding = {split_axis = "tp", split_dim = 1, split_groups = 1}},
    %b1: tensor<32xf32> {anvil.param = #anvil.param<name = "fc1.bias", init = #anvil.init<zeros>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}},
    %w2: tensor<32x5xf32> {anvil.param = #anvil.param<name = "fc2.weight", init = #anvil.init<kaiming_uniform(gain = 1.0)>>, anvil.sharding = {split_axis = "tp", split_dim = 0, split_groups = 1}},
    %b2: tensor<5xf32> {anvil.param = #anvil.param<name = "fc2.bias", init = #anvil.init<zeros>>})
    -> tensor<f32> {
  // (B, 12) x (12, 32) + b1 -> GELU
  %h0 = anvil.matmul %x, %w1 : (tensor<16x12xf32>, tensor<12x32xf32>) -> tensor<16x32xf32>
  %bb1 = anvil.broadcast %b1, dims = [1] : tensor<32xf32> -> tensor<16x32xf32>
  %h1 = anvil.add %h0, %bb1 : tensor<16x32xf32>
  %h = anvil.gelu tanh %h1 : tensor<16x32xf32>
  // (B, 32) x (32, 5) + b2 -> logits
  %z0 = anvil.matmul %h, %w2 : (tensor<16x32xf32>, tensor<32x5xf32>) -> tensor<16x5xf32>
  %bb2 = anvil.broadcast %b2, dims = [1] : tensor<5xf32> -> tensor<16x5xf32>
  %z = anvil.add %z0, %bb2 : tensor<16x5xf32>
  %loss = anvil.cross_entropy mean %z, %y : (tensor<16x5xf32>, tensor<16xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
