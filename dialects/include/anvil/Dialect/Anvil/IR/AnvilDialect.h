//===- AnvilDialect.h - the anvil dialect, its enums and attributes -*- C++
//-*-===//
//
// Include this to use the dialect and its attributes (`#anvil.param`,
// `#anvil.input`, `#anvil.init`); include AnvilOps.h for the ops.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILDIALECT_H
#define ANVIL_DIALECT_ANVIL_IR_ANVILDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include <string>

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h.inc"
#include "anvil/Dialect/Anvil/IR/AnvilEnums.h.inc"

namespace mlir::anvil {
/// The shortest decimal that reads back as `value`, always with a '.' or an
/// exponent so that MLIR's lexer sees a float: 0.02, 1.0, 1.0e-06. Used to
/// print initializer arguments and numbers in diagnostics.
std::string formatDouble(double value);
} // namespace mlir::anvil

#define GET_ATTRDEF_CLASSES
#include "anvil/Dialect/Anvil/IR/AnvilAttrs.h.inc"

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILDIALECT_H
