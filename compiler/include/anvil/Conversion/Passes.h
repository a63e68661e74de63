//===- Passes.h - lowering anvil graphs to upstream dialects -*- C++ -*-===//
//
// Declarations generated from Passes.td (`createAnvilFooPass()`), and the
// registration of every pass in this component.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CONVERSION_PASSES_H
#define ANVIL_CONVERSION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Conversion/Passes.h.inc"

} // namespace mlir::anvil

#endif // ANVIL_CONVERSION_PASSES_H
