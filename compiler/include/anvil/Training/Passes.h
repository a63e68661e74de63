//===- Passes.h - passes that build training graphs ---------------*- C++
//-*-===//
//
// Declarations generated from Passes.td and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRAINING_PASSES_H
#define ANVIL_TRAINING_PASSES_H

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::anvil {

#define GEN_PASS_DECL
#include "anvil/Training/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "anvil/Training/Passes.h.inc"

} // namespace mlir::anvil

#endif // ANVIL_TRAINING_PASSES_H
