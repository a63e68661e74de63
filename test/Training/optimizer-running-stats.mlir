// RUN: anvil-opt %s --anvil-optimizer="optimizer=sgd" | FileCheck %s

// Tests that a batch norm whose batch statistics update two buffers
// (running mean and variance) normalizes with those buffers in @forward,
// the evaluation function, while @train_step keeps the batch statistics
// and updates the buffers.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4x2x3x3xf32>
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<2xf32>
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32>
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2xf32>
// CHECK-SAME: %[[V:[a-z0-9]+]]: tensor<2xf32>
// CHECK-SAME: -> tensor<f32>
// CHECK-NOT: batch_norm_train
// CHECK: anvil.batch_norm_inference %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] {epsilon = 1.000000e-03 : f64}
// CHECK-NOT: batch_norm_train
// CHECK: return
// CHECK-LABEL: func.func @train_step
// CHECK: anvil.batch_norm_train
// CHECK-NOT: batch_norm_inference
// CHECK: return
func.func @forward(%x: tensor<4x2x3x3xf32> {anvil.input = #anvil.input<name = "x">},
                   %g: tensor<2xf32> {anvil.param = #anvil.param<name = "bn.weight", init = #anvil.init<ones>>},
                   %b: tensor<2xf32> {anvil.param = #anvil.param<name = "bn.bias", init = #anvil.init<zeros>>},
                   %rm: tensor<2xf32> {anvil.param = #anvil.param<name = "bn.running_mean", init = #anvil.init<zeros>, trainable = false, buffer = true>},
                   %rv: tensor<2xf32> {anvil.param = #anvil.param<name = "bn.running_var", init = #anvil.init<ones>, trainable = false, buffer = true>})
    -> (tensor<f32>, tensor<2xf32> {anvil.tied_to = 3 : i64}, tensor<2xf32> {anvil.tied_to = 4 : i64}) {
  %y, %mean, %var = anvil.batch_norm_train %x, %g, %b {epsilon = 1.0e-03}
      : (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>)
  %l = anvil.reduce_sum %y dims [0, 1, 2, 3] : tensor<4x2x3x3xf32> -> tensor<f32>
  %k = anvil.constant dense<0.5> : tensor<2xf32>
  %m1 = anvil.mul %rm, %k : tensor<2xf32>
  %m2 = anvil.mul %mean, %k : tensor<2xf32>
  %nm = anvil.add %m1, %m2 : tensor<2xf32>
  %v1 = anvil.mul %rv, %k : tensor<2xf32>
  %v2 = anvil.mul %var, %k : tensor<2xf32>
  %nv = anvil.add %v1, %v2 : tensor<2xf32>
  return %l, %nm, %nv : tensor<f32>, tensor<2xf32>, tensor<2xf32>
}
