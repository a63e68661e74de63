//===- Passes.h - graph-level analysis and transform passes -*- C++ -*-===//
//
// Declarations generated from Passes.td (`createAnvilFooPass()`), and the
// registration of every pass in this component.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRANSFORMS_PASSES_H
#define ANVIL_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Transforms/Passes.h.inc"

} // namespace mlir::anvil

#endif // ANVIL_TRANSFORMS_PASSES_H
