//===- AnvilOps.h - ops of the anvil dialect ---------------------*- C++
//-*-===//
//
// The generated op classes of the anvil dialect and the few helpers their
// ODS definitions name.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILOPS_H
#define ANVIL_DIALECT_ANVIL_IR_ANVILOPS_H

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::anvil {
/// `tensor<shape x i1>` for a tensor type `type`.
Type getBoolTensorType(Type type);
/// The ranks of mesh axis `axis` in the `anvil.mesh` of `op`'s module: 1
/// when the module has no mesh (a world of one), -1 when its mesh has no
/// such axis.
int64_t meshAxisSize(Operation *op, StringRef axis);
/// The module path the model builders give an op as its location
/// ("h.0.attn.c_attn", "bert.encoder.layer.0"), looked for through fused
/// locations; "" when there is none.
StringRef modulePathOf(Location loc);
/// Whether module path `path` is `module` or inside it ("a.b.c" is in "a.b",
/// "a.bc" is not).
bool isInModule(StringRef path, StringRef module);
} // namespace mlir::anvil

#define GET_OP_CLASSES
#include "anvil/Dialect/Anvil/IR/AnvilOps.h.inc"

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILOPS_H
