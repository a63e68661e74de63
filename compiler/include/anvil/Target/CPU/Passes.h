//===- Passes.h - passes of the CPU backend -----------------*- C++ -*-===//
//
// Declarations generated from Passes.td, and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TARGET_CPU_PASSES_H
#define ANVIL_TARGET_CPU_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Target/CPU/Passes.h.inc"

} // namespace mlir::anvil

#endif // ANVIL_TARGET_CPU_PASSES_H
