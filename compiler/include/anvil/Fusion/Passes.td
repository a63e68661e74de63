//===- Passes.td - dispatch-region fusion -------------------*- tablegen -*-===//
//
// Fusion of linalg ops on tensors into dispatch regions (one kernel each).
// Flags are `anvil-` prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FUSION_PASSES_TD
#define ANVIL_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilFusePass : Pass<"anvil-fuse", "mlir::ModuleOp"> {
  let summary = "Fuses elementwise producers into their consumers, without recomputation";
  let description = [{
    Upstream linalg elementwise fusion and reshape propagation, with Anvil's
    rule for when a producer may be fused into a consumer:

    1. the producer has one use (otherwise fusing duplicates its work), and
    2. the consumer reads it through a permutation of all its loops, so
       each produced element is computed exactly once inside the fused
       kernel; a producer that only moves data (a broadcast, a copy) may be
       read through any map, since re-reading it costs only a load.

    Chains of elementwise ops and broadcasts become one generic; an
    elementwise producer of a reduction (the `x * y` of `sum(x * y)`)
    joins it; but the GELU feeding a matmul does not: fused, it would be
    recomputed for every output column. Reshapes are propagated through
    generics (by expansion) so they do not split regions.

    Input:
    ```mlir
    %b = linalg.generic ... ins(%bias) ... { broadcast }
    %y = linalg.generic ... ins(%x, %b) ... { arith.addf }
    %z = linalg.generic ... ins(%y) ... { math.tanh }
    ```
    Output:
    ```mlir
    %z = linalg.generic ... ins(%x, %bias) ... { arith.addf; math.tanh }
    ```
  }];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect"
  ];
}

#endif // ANVIL_FUSION_PASSES_TD
