// RUN: anvil-opt %s --split-input-file | anvil-opt --split-input-file | FileCheck %s

// Round trip of the parameter and input metadata on forward functions.

// Tests that every initializer kind round-trips with its arguments.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: anvil.input = #anvil.input<name = "tokens">
// CHECK-SAME: anvil.param = #anvil.param<name = "wte.weight", init = <normal(std = 0.02)>>
// CHECK-SAME: anvil.param = #anvil.param<name = "wpe.weight", init = <zeros>, trainable = false>
// CHECK-SAME: anvil.param = #anvil.param<name = "ln_f.weight", init = <ones>>
// CHECK-SAME: anvil.param = #anvil.param<name = "c", init = <constant(value = -0.5)>>
// CHECK-SAME: anvil.param = #anvil.param<name = "t", init = <truncated_normal(lower = -3.0, mean = 0.0, std = 0.006, upper = 3.0)>>
// CHECK-SAME: anvil.param = #anvil.param<name = "u", init = <uniform(high = 0.1, low = -0.1)>>
// CHECK-SAME: anvil.param = #anvil.param<name = "xu", init = <xavier_uniform>>
// CHECK-SAME: anvil.param = #anvil.param<name = "xn", init = <xavier_normal(gain = 1.4142135623730951)>>
// CHECK-SAME: anvil.param = #anvil.param<name = "ku", init = <kaiming_uniform(gain = 1.0)>>
// CHECK-SAME: anvil.param = #anvil.param<name = "kn", init = <kaiming_normal(mode = fan_out)>>
func.func @forward(
    %tokens: tensor<2x8xi32> {anvil.input = #anvil.input<name = "tokens">},
    %wte: tensor<100x16xf32> {anvil.param = #anvil.param<name = "wte.weight", init = #anvil.init<normal(std = 0.02)>>},
    %wpe: tensor<8x16xf32> {anvil.param = #anvil.param<name = "wpe.weight", init = #anvil.init<zeros>, trainable = false>},
    %g: tensor<16xf32> {anvil.param = #anvil.param<name = "ln_f.weight", init = #anvil.init<ones>, trainable = true>},
    %c: tensor<16xf32> {anvil.param = #anvil.param<name = "c", init = #anvil.init<constant(value = -0.5)>>},
    %t: tensor<16xf32> {anvil.param = #anvil.param<name = "t", init = #anvil.init<truncated_normal(std = 6.0e-3, mean = 0.0, lower = -3.0, upper = 3.0)>>},
    %u: tensor<16xf32> {anvil.param = #anvil.param<name = "u", init = #anvil.init<uniform(low = -0.1, high = 0.1)>>},
    %xu: tensor<16x16xf32> {anvil.param = #anvil.param<name = "xu", init = #anvil.init<xavier_uniform>>},
    %xn: tensor<16x16xf32> {anvil.param = #anvil.param<name = "xn", init = #anvil.init<xavier_normal(gain = 1.4142135623730951)>>},
    %ku: tensor<8x4x3x3xf32> {anvil.param = #anvil.param<name = "ku", init = #anvil.init<kaiming_uniform(gain = 1.0)>>},
    %kn: tensor<8x4x3x3xbf16> {anvil.param = #anvil.param<name = "kn", init = #anvil.init<kaiming_normal(mode = fan_out)>>})
    -> tensor<2x8x16xf32> {
  %e = anvil.embedding %wte[%tokens] : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  return %e : tensor<2x8x16xf32>
}

// -----

// Tests that declarations (no body) carry the metadata too.
// CHECK-LABEL: func.func private @external
// CHECK-SAME: anvil.param = #anvil.param<name = "w", init = <normal(mean = 1.0, std = 0.5)>>
func.func private @external(tensor<4xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<normal(mean = 1.0, std = 0.5)>>})

// -----

// Tests that training state and tied results round-trip.
// CHECK-LABEL: func.func private @state
// CHECK-SAME: anvil.state = #anvil.state<name = "step", init = <zeros>>
// CHECK-SAME: -> (tensor<f32> {anvil.tied_to = 0 : i64})
func.func private @state(tensor<f32> {anvil.state = #anvil.state<name = "step", init = #anvil.init<zeros>>}) -> (tensor<f32> {anvil.tied_to = 0 : i64})

// -----

// Tests that an input's range and a parameter's buffer flag round-trip, and
// that their defaults (no range, not a buffer) print nothing.
// CHECK-LABEL: func.func private @ranges_and_buffers
// CHECK-SAME: anvil.input = #anvil.input<name = "labels", range = 2>
// CHECK-SAME: anvil.input = #anvil.input<name = "images">
// CHECK-SAME: anvil.param = #anvil.param<name = "bn.running_mean", init = <zeros>, trainable = false, buffer = true>
// CHECK-SAME: anvil.param = #anvil.param<name = "bn.weight", init = <ones>>
func.func private @ranges_and_buffers(
    tensor<4xf32> {anvil.input = #anvil.input<name = "labels", range = 2>},
    tensor<4x3xf32> {anvil.input = #anvil.input<name = "images">},
    tensor<3xf32> {anvil.param = #anvil.param<name = "bn.running_mean", init = #anvil.init<zeros>, trainable = false, buffer = true>},
    tensor<3xf32> {anvil.param = #anvil.param<name = "bn.weight", init = #anvil.init<ones>, buffer = false>})
