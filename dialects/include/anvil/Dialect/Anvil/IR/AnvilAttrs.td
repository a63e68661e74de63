//===- AnvilAttrs.td - parameter and input metadata ------------*- tablegen -*-===//
//
// Attributes that mark the arguments of a forward function as parameters
// (`#anvil.param`, with an initializer `#anvil.init`) or batch inputs
// (`#anvil.input`). Parameter names are the names checkpoints use.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILATTRS_TD
#define ANVIL_DIALECT_ANVIL_IR_ANVILATTRS_TD

include "anvil/Dialect/Anvil/IR/AnvilBase.td"

class Anvil_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Anvil_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Anvil_InitializerAttr : Anvil_Attr<"Initializer", "init"> {
  let summary = "How a parameter is initialized";
  let description = [{
    An initializer kind with its arguments, all of them floating-point
    numbers except the fan mode of the Kaiming initializers:

    | kind               | arguments (default)                                  |
    |--------------------|------------------------------------------------------|
    | `zeros`, `ones`    | none                                                 |
    | `constant`         | `value` (required)                                   |
    | `normal`           | `std` (required), `mean` (0)                         |
    | `truncated_normal` | `std` (required), `mean` (0), `lower` (-2), `upper` (2); bounds in standard deviations around the mean |
    | `uniform`          | `low`, `high` (both required)                        |
    | `xavier_uniform`, `xavier_normal` | `gain` (1)                            |
    | `kaiming_uniform`, `kaiming_normal` | `gain` (sqrt 2), `mode` (`fan_in` or `fan_out`; `fan_in`) |

    Fans follow PyTorch: for a weight `(out, in, k...)`, fan-in is
    `in * prod(k)` and fan-out is `out * prod(k)`.

    ```mlir
    #anvil.init<zeros>
    #anvil.init<normal(std = 0.02)>
    #anvil.init<truncated_normal(std = 0.02, lower = -3.0, upper = 3.0)>
    #anvil.init<kaiming_normal(mode = fan_out)>
    ```
  }];
  let parameters = (ins "::mlir::anvil::InitKind":$kind,
                        "::mlir::DictionaryAttr":$args);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The numeric argument `name`, or `defaultValue` when it is absent.
    double getArg(::llvm::StringRef name, double defaultValue) const;
    /// True for `mode = fan_out` (Kaiming initializers only).
    bool usesFanOut() const;
  }];
}

def Anvil_ParamAttr : Anvil_Attr<"Param", "param"> {
  let summary = "Marks a function argument as a model parameter";
  let description = [{
    Placed on arguments of a forward function under the name `anvil.param`.
    `name` is the checkpoint name (`h.0.attn.c_attn.weight`), unique within
    the function; `trainable = false` freezes the parameter (no gradient).
    `buffer = true` marks what PyTorch registers as a buffer rather than a
    parameter (the statistics of a frozen batch norm): it is initialized,
    checkpointed and loaded under its name like a parameter, is never
    trained (`trainable` must be false), and is not counted among the
    model's parameters.

    ```mlir
    func.func @forward(
        %w: tensor<768x2304xf32> {anvil.param = #anvil.param<
              name = "h.0.attn.c_attn.weight",
              init = #anvil.init<normal(std = 0.02)>>},
        %pe: tensor<1024x768xf32> {anvil.param = #anvil.param<
              name = "wpe.weight", init = #anvil.init<zeros>,
              trainable = false>})
    ```
  }];
  let parameters = (ins
      StringRefParameter<"checkpoint name of the parameter">:$name,
      "::mlir::anvil::InitializerAttr":$init,
      DefaultValuedParameter<"bool", "true">:$trainable,
      DefaultValuedParameter<"bool", "false">:$buffer);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$name,
                     "::mlir::anvil::InitializerAttr":$init,
                     CArg<"bool", "true">:$trainable), [{
      return $_get($_ctxt, name, init, trainable, false);
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Anvil_StateAttr : Anvil_Attr<"State", "state"> {
  let summary = "Marks a function argument as training state";
  let description = [{
    Placed on arguments of a training step under the name `anvil.state`:
    optimizer moments, the step counter. `name` is the checkpoint name
    (`opt.adamw.m.h.0.attn.c_attn.weight`), unique within the function;
    `init` says how the runtime creates it before the first step.

    ```mlir
    func.func @train_step(%step: tensor<f32> {anvil.state = #anvil.state<
                            name = "step", init = #anvil.init<zeros>>})
    ```
  }];
  let parameters = (ins
      StringRefParameter<"checkpoint name of the state">:$name,
      "::mlir::anvil::InitializerAttr":$init);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Anvil_InputAttr : Anvil_Attr<"Input", "input"> {
  let summary = "Marks a function argument as a batch input";
  let description = [{
    `range`, when given, says the input holds whole numbers in `[0, range)`
    (in any element type: class labels, masked positions, 0/1 click labels
    stored as floats). The manifest passes it on so that runtimes and data
    tools can check real data and draw synthetic batches; without it the
    manifest infers a range from the input's use as embedding indices or
    class labels.

    ```mlir
    func.func @forward(%tokens: tensor<8x1024xi32>
                         {anvil.input = #anvil.input<name = "tokens">},
                       %clicks: tensor<8xf32>
                         {anvil.input = #anvil.input<name = "labels", range = 2>})
    ```
  }];
  let parameters = (ins StringRefParameter<"name of the input">:$name,
                        OptionalParameter<"std::optional<int64_t>">:$range);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$name), [{
      return $_get($_ctxt, name, std::nullopt);
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILATTRS_TD
