//===- KernelReport.h - anvil-compile's --kernel-report ---------*- C++ -*-===//
//
// What ptxas reports of every kernel of a module at the kernels stage
// (registers, spills, shared memory, launch shape, vector accesses), and of
// the runtime's own kernels its library calls launch, as JSON.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TOOLS_ANVIL_COMPILE_KERNELREPORT_H
#define ANVIL_TOOLS_ANVIL_COMPILE_KERNELREPORT_H

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

} // namespace anvil::compile

#endif // ANVIL_TOOLS_ANVIL_COMPILE_KERNELREPORT_H
