//===- KernelReport.h - anvil-compile's --kernel-report ---------*- C++ -*-===//
//
// What ptxas reports of every kernel of a module at the kernels stage
// (registers, spills, shared memory, launch shape, vector accesses), and of
// the runtime's own kernels its library calls launch, as JSON.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TOOLS_ANVIL_COMPILE_KERNELREPORT_H
#define ANVIL_TOOLS_ANVIL_COMPILE_KERNELREPORT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace anvil::compile {

/// Assembles the kernels of `module` (at the kernels stage) for `cudaArch`
/// with the toolkit at `cudaToolkit` (empty: the configured one) and writes
/// what ptxas reports to `kernelReport` (a path, '-' for stdout), with the
/// runtime's own kernels the module's library calls launch (from the report
/// the runtime's build made next to its libraries in `runtimeLibDir`).
/// Prints why on failure.
mlir::LogicalResult writeKernelReport(mlir::ModuleOp module,
                                      llvm::StringRef cudaArch,
                                      llvm::StringRef cudaToolkit,
                                      llvm::StringRef kernelReport,
                                      llvm::StringRef runtimeLibDir);

/// What one call of a step function makes at the kernels stage: its kernel
/// launches (gpu.launch_func) and its calls of the runtime's functions
/// (`anvil_rt_*` declarations: the libraries' GEMMs, attention,
/// convolutions and collectives, and the few that are not a library's, as
/// a rank's index), with those of the functions it calls (its dispatches)
/// counted once per call.
struct StepLaunches {
  int64_t kernels = 0;
  int64_t runtimeCalls = 0;
};
StepLaunches countStepLaunches(mlir::func::FuncOp step);

} // namespace anvil::compile

#endif // ANVIL_TOOLS_ANVIL_COMPILE_KERNELREPORT_H
