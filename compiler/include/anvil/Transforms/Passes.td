//===- Passes.td - graph-level analysis and transform passes -*- tablegen -*-===//
//
// Passes that work on anvil-dialect graphs without changing what they
// compute. Flags are `anvil-` prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRANSFORMS_PASSES_TD
#define ANVIL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilCostReportPass : Pass<"anvil-cost-report", "mlir::ModuleOp"> {
  let summary = "Reports FLOPs, bytes moved and parameter counts per function";
  let description = [{
    Sums `CostOpInterface` over every function and prints one line per
    function to stderr (the IR on stdout is unchanged), or a JSON array with
    `json=true`. Parameters are the arguments marked `anvil.param`.

    Input:
    ```mlir
    func.func @forward(%x: tensor<8x768xf32> {anvil.input = #anvil.input<name = "x">},
                       %w: tensor<768x3072xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>})
        -> tensor<8x3072xf32> {
      %y = anvil.matmul %x, %w : (tensor<8x768xf32>, tensor<768x3072xf32>) -> tensor<8x3072xf32>
      return %y : tensor<8x3072xf32>
    }
    ```
    Output (stderr):
    ```
    anvil-cost-report: @forward: 1 ops, 37748736 FLOPs, 9560064 bytes, 2359296 parameters (1 tensors)
    ```
  }];
  let options = [
    Option<"json", "json", "bool", /*default=*/"false",
           "Print a JSON array instead of text lines">,
    Option<"perOp", "per-op", "bool", /*default=*/"false",
           "Also print one line per op with its FLOPs and bytes">,
  ];
}

#endif // ANVIL_TRANSFORMS_PASSES_TD
