// RUN: anvil-opt %s --anvil-autodiff --anvil-decompose --cse | FileCheck %s

// Tests that the cross-entropy's gradient reads the forward's row
// log-sum-exp: the decomposition computes the loss as lse - z[label] (no
// (..., C) log-probabilities) and the VJP's softmax as exp(z - lse), both
// through emitRowLogSumExp, so after CSE one row maximum and one sum of
// exponentials serve both passes.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[MAX:.+]] = anvil.reduce_max %arg0 dims [2] keep_dims : tensor<2x3x7xf32> -> tensor<2x3x1xf32>
// CHECK: %[[SUM:.+]] = anvil.reduce_sum %{{.+}} dims [2] keep_dims : tensor<2x3x7xf32> -> tensor<2x3x1xf32>
// CHECK: %[[LOG:.+]] = anvil.log %[[SUM]]
// CHECK: %[[LSE:.+]] = anvil.add %[[MAX]], %[[LOG]] : tensor<2x3x1xf32>
// CHECK-NOT: anvil.reduce_max
// CHECK-NOT: anvil.div {{.*}}tensor<2x3x7xf32>
// CHECK: return

func.func @forward(%z: tensor<2x3x7xf32> {anvil.param = #anvil.param<name = "z", init = #anvil.init<zeros>>},
                   %t: tensor<2x3xi64> {anvil.input = #anvil.input<name = "t">}) -> tensor<f32> {
  %l = anvil.cross_entropy mean %z, %t {label_smoothing = 0.1 : f64} : (tensor<2x3x7xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
