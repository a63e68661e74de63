//===- Manifest.h - the manifest a training executable embeds ----*- C++
//-*-===//
//
// Builds the JSON manifest of DESIGN.md's contract 3 from the anvil-level
// module, before it is lowered: every buffer of the step (parameters,
// state, inputs, loss, metrics) with its name, shape, dtype, role, argument
// or result position and initializer, and the FLOPs of one step. The
// runtime reads it back (runtime/include/anvil/runtime/Manifest.h).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TARGET_MANIFEST_H
#define ANVIL_TARGET_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <string>

namespace mlir::anvil {

/// The functions an executable exports and their calling shapes: the ABI
/// entry `anvil_module_<abiName>(void **args, void **results, void
/// *workspace)` calls the lowered function with args[0..numArgs), then
/// results[0..numResults), then the workspace (the static memory plan).
struct EntryPoint {
  std::string function; ///< Symbol of the lowered function.
  std::string abiName;  ///< "train_step" or "eval_step".
  unsigned numArgs = 0;
  unsigned numResults = 0;
};

struct ModuleABI {
  std::string manifest; ///< JSON text.
  SmallVector<EntryPoint> entries;
};

/// Describes `train` (the training step; may be null for an eval-only
/// module) and `eval` (the forward function) for model `model`. Fails with
/// a diagnostic on an argument that is neither a parameter, state nor
/// input of a step, or on types the runtime cannot hold.
FailureOr<ModuleABI> buildModuleABI(FunctionOpInterface train,
                                    FunctionOpInterface eval, StringRef model,
                                    int64_t plannedBytes);

/// Sets the manifest's "planned_bytes": the workspace the runtime
/// allocates once and passes to every step.
void setPlannedBytes(ModuleABI &abi, int64_t bytes);

/// Sets the manifest's "step_graph" (CUDA executables): {"capturable":
/// true} when `blocker` is empty, else {"capturable": false, "why":
/// blocker}: whether the runtime may replay the training step as a CUDA
/// graph (anvil-cuda-step-graph).
void setStepGraph(ModuleABI &abi, StringRef blocker);

} // namespace mlir::anvil

#endif // ANVIL_TARGET_MANIFEST_H
