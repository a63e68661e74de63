//===- AnvilInterfaces.h - op interfaces of the anvil dialect -*- C++ -*-===//
//
// The cost interface (FLOPs and bytes moved per op) and the helpers its
// default implementations use.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_H
#define ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::anvil {

/// Number of elements of a statically shaped tensor type (1 for a scalar
/// tensor, 0 for anything that is not a static tensor).
int64_t getNumElements(Type type);

/// Storage bytes of one element: i1 and the 8-bit floats take one byte.
int64_t getElementBytes(Type elementType);

/// Bytes of a statically shaped tensor type.
int64_t getTensorBytes(Type type);

/// Bytes of all tensor operands plus all tensor results of `op`.
int64_t getOperandAndResultBytes(Operation *op);

} // namespace mlir::anvil

namespace mlir::OpTrait::anvil {
/// Marks ops whose results carry no gradient (comparisons, argmax).
template <typename ConcreteType>
class NonDifferentiable : public TraitBase<ConcreteType, NonDifferentiable> {};
} // namespace mlir::OpTrait::anvil

#include "anvil/Dialect/Anvil/IR/AnvilInterfaces.h.inc"

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_H
