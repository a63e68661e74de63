// examples/mlp.mlir with the example plugin's activation: a two-layer MLP
// classifier whose hidden layer is example.squared_relu, max(x, 0)^2.
//
// The plugin's dialect brings the op's gradient (VJPOpInterface) and its
// lowering (ConvertToLinalgDialectInterface), so the model trains like any
// other:
//   anvil-compile squared-relu-mlp.mlir \
//       --load-dialect-plugin=libAnvilExamplePlugin.so \
//       --target=cpu --optimizer=sgd --lr=0.05 -o sqrelu.train
//   ./sqrelu.train --batch-dir DIR --steps 50      # DIR/x.npy, DIR/y.npy
// and @squared_relu alone, for evaluation:
//   anvil-compile squared-relu-mlp.mlir --load-dialect-plugin=... \
//       --entry=squared_relu --target=cpu -o sqrelu.run

func.func @forward(
    %x: tensor<16x12xf32> {anvil.input = #anvil.input<name = "x">},
    %y: tensor<16xi32> {anvil.input = #anvil.input<name = "y">},
    %w1: tensor<12x32xf32> {anvil.param = #anvil.param<name = "fc1.weight", init = #anvil.init<kaiming_uniform(gain = 1.0)>>},
    %b1: tensor<32xf32> {anvil.param = #anvil.param<name = "fc1.bias", init = #anvil.init<zeros>>},
    %w2: tensor<32x5xf32> {anvil.param = #anvil.param<name = "fc2.weight", init = #anvil.init<kaiming_uniform(gain = 1.0)>>},
    %b2: tensor<5xf32> {anvil.param = #anvil.param<name = "fc2.bias", init = #anvil.init<zeros>>})
    -> tensor<f32> {
  %h0 = anvil.matmul %x, %w1 : (tensor<16x12xf32>, tensor<12x32xf32>) -> tensor<16x32xf32>
  %bb1 = anvil.broadcast %b1, dims = [1] : tensor<32xf32> -> tensor<16x32xf32>
  %h1 = anvil.add %h0, %bb1 : tensor<16x32xf32>
  %h = example.squared_relu %h1 : tensor<16x32xf32> loc("fc1.act")
  %z0 = anvil.matmul %h, %w2 : (tensor<16x32xf32>, tensor<32x5xf32>) -> tensor<16x5xf32>
  %bb2 = anvil.broadcast %b2, dims = [1] : tensor<5xf32> -> tensor<16x5xf32>
  %z = anvil.add %z0, %bb2 : tensor<16x5xf32>
  %loss = anvil.cross_entropy mean %z, %y : (tensor<16x5xf32>, tensor<16xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

func.func @squared_relu(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = example.squared_relu %x : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
