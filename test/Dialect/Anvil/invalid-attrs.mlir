// RUN: anvil-opt %s --split-input-file --verify-diagnostics

// One case per diagnostic about parameter and input metadata.

// expected-error@+1 {{unknown initializer 'gaussian'; expected zeros, ones, constant, normal, truncated_normal, uniform, xavier_uniform, xavier_normal, kaiming_uniform or kaiming_normal}}
func.func private @f() attributes {init = #anvil.init<gaussian>}

// -----

// expected-error@+1 {{initializer argument 'std' is given twice}}
func.func private @f() attributes {init = #anvil.init<normal(std = 1.0, std = 2.0)>}

// -----

// expected-error@+1 {{initializer 'zeros' takes no argument 'value' (it takes none)}}
func.func private @f() attributes {init = #anvil.init<zeros(value = 1.0)>}

// -----

// expected-error@+1 {{initializer 'normal' takes no argument 'gain'; it takes mean, std}}
func.func private @f() attributes {init = #anvil.init<normal(std = 1.0, gain = 2.0)>}

// -----

// expected-error@+1 {{initializer 'normal' needs the argument 'std'}}
func.func private @f() attributes {init = #anvil.init<normal>}

// -----

// expected-error@+1 {{initializer 'normal': std must be positive, got -1.0}}
func.func private @f() attributes {init = #anvil.init<normal(std = -1.0)>}

// -----

// expected-error@+1 {{initializer 'xavier_normal': gain must be positive, got 0.0}}
func.func private @f() attributes {init = #anvil.init<xavier_normal(gain = 0.0)>}

// -----

// expected-error@+1 {{initializer 'uniform': low (1.0) must be below high (0.0)}}
func.func private @f() attributes {init = #anvil.init<uniform(low = 1.0, high = 0.0)>}

// -----

// expected-error@+1 {{initializer 'truncated_normal': lower (2.0) must be below upper (2.0)}}
func.func private @f() attributes {init = #anvil.init<truncated_normal(std = 1.0, lower = 2.0)>}

// -----

// expected-error@+1 {{initializer 'kaiming_normal': mode must be fan_in or fan_out}}
func.func private @f() attributes {init = #anvil.init<kaiming_normal(mode = fan_avg)>}

// -----

// expected-error@+1 {{parameter name must not be empty}}
func.func private @f(tensor<4xf32> {anvil.param = #anvil.param<name = "", init = #anvil.init<zeros>>})

// -----

// expected-error@+1 {{input name must not be empty}}
func.func private @f(tensor<4xi32> {anvil.input = #anvil.input<name = "">})

// -----

// expected-error@+1 {{input 'labels' has range 0; a range holds at least one value}}
func.func private @f(tensor<4xi32> {anvil.input = #anvil.input<name = "labels", range = 0>})

// -----

// expected-error@+1 {{buffer 'bn.running_var' must not be trainable (trainable = false)}}
func.func private @f(tensor<4xf32> {anvil.param = #anvil.param<name = "bn.running_var", init = #anvil.init<ones>, buffer = true>})

// -----

// expected-error@+1 {{struct is missing required parameter: init}}
func.func private @f(tensor<4xf32> {anvil.param = #anvil.param<name = "w">})

// -----

// expected-error@+1 {{argument #0 has unknown attribute 'anvil.parameter'; anvil defines 'anvil.param', 'anvil.state' and 'anvil.input'}}
func.func private @f(tensor<4xf32> {anvil.parameter = #anvil.input<name = "x">})

// -----

// expected-error@+1 {{argument #0: 'anvil.param' must be a #anvil.param<...> attribute, got #anvil.input<name = "x">}}
func.func private @f(tensor<4xf32> {anvil.param = #anvil.input<name = "x">})

// -----

// expected-error@+1 {{argument #0: 'anvil.input' must be a #anvil.input<...> attribute, got "x"}}
func.func private @f(tensor<4xf32> {anvil.input = "x"})

// -----

// expected-error@+1 {{argument #0: has more than one of 'anvil.param', 'anvil.state' and 'anvil.input'}}
func.func private @f(tensor<4xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>, anvil.input = #anvil.input<name = "x">})

// -----

// expected-error@+1 {{argument #1: name 'h.0.attn.c_attn.weight' is already used by argument #0}}
func.func private @f(tensor<4xf32> {anvil.param = #anvil.param<name = "h.0.attn.c_attn.weight", init = #anvil.init<zeros>>},
                     tensor<4xf32> {anvil.param = #anvil.param<name = "h.0.attn.c_attn.weight", init = #anvil.init<zeros>>})

// -----

// expected-error@+1 {{argument #0: parameter 'w' must be a statically shaped float tensor, got 'tensor<4xi32>'}}
func.func private @f(tensor<4xi32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>})

// -----

// expected-error@+1 {{argument #0: parameter 'b' of type 'tensor<4xf32>' has no fan-in/fan-out for the 'kaiming_uniform' initializer (it needs rank 2 or more)}}
func.func private @f(tensor<4xf32> {anvil.param = #anvil.param<name = "b", init = #anvil.init<kaiming_uniform>>})

// -----

// Tests that the error points at the argument when the function has a body.
// expected-error@+2 {{argument #1: name 'x' is already used by argument #0}}
func.func @g(%a: tensor<4xi32> {anvil.input = #anvil.input<name = "x">},
             %b: tensor<4xi32> {anvil.input = #anvil.input<name = "x">}) {
  return
}

// -----

// expected-error@+1 {{initializer 'normal': argument 'std' must be finite}}
func.func private @f() attributes {init = #anvil.init<normal(std = 1.0e400)>}

// -----

// expected-error@+1 {{initializer 'constant': argument 'value' must be finite}}
func.func private @f() attributes {init = #anvil.init<constant(value = 0x7FF8000000000000)>}

// -----

// expected-error@+1 {{argument #0: 'anvil.state' must be a #anvil.state<...> attribute, got #anvil.input<name = "x">}}
func.func private @f(tensor<f32> {anvil.state = #anvil.input<name = "x">})

// -----

// expected-error@+1 {{result #0: 'anvil.tied_to' must be the index of an argument of the result's type, got 3 : i64}}
func.func private @f(tensor<f32>) -> (tensor<f32> {anvil.tied_to = 3 : i64})

// -----

// expected-error@+1 {{'anvil.partitioner' must be "shard" or "anvil" on a function}}
func.func private @f() attributes {anvil.partitioner = "gspmd"}
