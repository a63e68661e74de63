//===- ExampleOps.td - the example plugin's dialect ----------*- tablegen -*-===//
//
// A dialect of a plugin's own, built out of tree against an installed Anvil:
// one op, `example.squared_relu`, with Anvil's interfaces, so that a model
// written with it is costed (CostOpInterface), differentiated
// (VJPOpInterface) and lowered (ConvertToLinalgDialectInterface, attached
// in ExampleDialect.cpp) like the anvil dialect's own ops.
//
//===----------------------------------------------------------------------===//

#ifndef EXAMPLE_OPS_TD
#define EXAMPLE_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "anvil/Dialect/Anvil/IR/AnvilInterfaces.td"

def Example_Dialect : Dialect {
  let name = "example";
  let cppNamespace = "::example";
  let summary = "The example plugin's ops";
  let dependentDialects = ["::mlir::anvil::AnvilDialect"];
}

def Example_SquaredReluOp : Op<Example_Dialect, "squared_relu", [
    Pure, SameOperandsAndResultType, InferTypeOpInterface,
    DeclareOpInterfaceMethods<Anvil_VJPOpInterface>,
    DeclareOpInterfaceMethods<Anvil_CostOpInterface, ["getFlops"]>]> {
  let summary = "Squared ReLU, max(x, 0)^2 (Primer, So et al. 2021)";
  let description = [{
    Elementwise `max(x, 0)^2` on a float tensor; its gradient is
    `2 max(x, 0) dy`.

    ```mlir
    %y = example.squared_relu %x : tensor<16x32xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

#endif // EXAMPLE_OPS_TD
