//===- Passes.h - dispatch-region fusion --------------------*- C++ -*-===//
//
// Declarations generated from Passes.td, and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FUSION_PASSES_H
#define ANVIL_FUSION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Fusion/Passes.h.inc"

} // namespace mlir::anvil

#endif // ANVIL_FUSION_PASSES_H
