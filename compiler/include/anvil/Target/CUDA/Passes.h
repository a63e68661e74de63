//===- Passes.h - passes of the CUDA backend ----------------*- C++ -*-===//
//
// Declarations generated from Passes.td, and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TARGET_CUDA_PASSES_H
#define ANVIL_TARGET_CUDA_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Target/CUDA/Passes.h.inc"

} // namespace mlir::anvil

#endif // ANVIL_TARGET_CUDA_PASSES_H
