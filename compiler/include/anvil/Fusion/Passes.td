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

    With `merge-amax` (the CUDA backend's), a tensor that an elementwise op
    casts (FP8's codes, by a scale that does not come from this amax: the
    delayed recipe's) and a full reduction takes the amax of (`max(out,
    |x|)`), over the same loops, is read once: the two become one generic
    with both outputs (the codes at every point, the amax folded over all of
    them), into which the tensor's producers then fuse, so the kernel that
    computes the tensor writes its 8-bit codes and its amax without writing
    it. The CUDA mapping runs such a generic on a grid (its amax by atomic
    max); the CPU backend leaves them apart (a whole-tensor reduction would
    take its dispatch off the threads).
  }];
  let options = [
    Option<"mergeAmax", "merge-amax", "bool", /*default=*/"false",
           "Merge an elementwise cast and an amax of the same tensor into "
           "one generic (FP8's codes and amax in the producer's kernel)">,
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect"
  ];
}

#endif // ANVIL_FUSION_PASSES_TD
