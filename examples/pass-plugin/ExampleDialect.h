//===- ExampleDialect.h - the example plugin's dialect ----------*- C++ -*-===//

#ifndef EXAMPLE_DIALECT_H
#define EXAMPLE_DIALECT_H

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ExampleOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "ExampleOps.h.inc"

#endif // EXAMPLE_DIALECT_H
