// RUN: anvil-opt %s --split-input-file --anvil-optimizer="optimizer=sgd" | FileCheck %s
// RUN: anvil-opt %s --split-input-file --anvil-optimizer="optimizer=sgd accumulate=2" --verify-diagnostics -o /dev/null

// Tests that a forward function's buffer update (a result tied to a
// buffer) becomes a state update of @train_step, and that @forward, the
// evaluation function, loses it. Micro-batching cannot keep one update per
// step, so accumulate > 1 is refused.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> tensor<f32>
// CHECK-NOT: anvil.tied_to
// CHECK: return
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {anvil.param = #anvil.param<name = "w"
// CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<i64> {anvil.param = #anvil.param<name = "count", init = <zeros>, trainable = false, buffer = true>}
// CHECK-SAME: tensor<3xf32> {anvil.tied_to = 0 : i64}, tensor<i64> {anvil.tied_to = 1 : i64}, tensor<f32> {anvil.tied_to = 2 : i64})
// CHECK: %[[ONE:.+]] = anvil.constant dense<1> : tensor<i64>
// CHECK: %[[NEXT:.+]] = anvil.add %[[C]], %[[ONE]]
// CHECK: return {{.*}}, %[[NEXT]], %{{.+}} :
// expected-error@below {{anvil-optimizer: accumulate = 2: @forward updates buffers (result #1 is tied to an argument), and micro-batches would each update them; use accumulate = 1}}
module {
func.func @forward(%w: tensor<3xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<ones>>},
                   %count: tensor<i64> {anvil.param = #anvil.param<name = "count", init = #anvil.init<zeros>, trainable = false, buffer = true>})
    -> (tensor<f32>, tensor<i64> {anvil.tied_to = 1 : i64}) {
  %s = anvil.reduce_sum %w dims [0] : tensor<3xf32> -> tensor<f32>
  %one = anvil.constant dense<1> : tensor<i64>
  %next = anvil.add %count, %one : tensor<i64>
  return %s, %next : tensor<f32>, tensor<i64>
}
}
