//===- OpVerification.h - the anvil ops' shape checks (private) -*- C++ -*-===//
//
// What the ops' type inference shares across files: diagnostics in the
// ops' voice, and the matmul's shape rule.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_LIB_DIALECT_ANVIL_IR_OPVERIFICATION_H
#define ANVIL_LIB_DIALECT_ANVIL_IR_OPVERIFICATION_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::anvil::detail {

/// Emits "'anvil.foo' op <message>" at `loc` (when given) and fails.
template <typename OpTy> struct Fail {
  std::optional<Location> loc;
  template <typename... Args> LogicalResult operator()(Args &&...args) const {
    return emitOptionalError(loc, "'", OpTy::getOperationName(), "' op ",
                             std::forward<Args>(args)...);
  }
};

/// "[2, 3, 4]" for diagnostics.
inline std::string fmt(ArrayRef<int64_t> values) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(values, os);
  os << "]";
  return s;
}

inline RankedTensorType tensorType(Value v) {
  return dyn_cast_or_null<RankedTensorType>(v ? v.getType() : Type());
}

/// The shape of `(..., M, K) x (..., K, N)` after the optional transposes,
/// with `element` as its element type.
template <typename OpTy>
LogicalResult inferMatmul(std::optional<Location> loc, RankedTensorType lhs,
                          RankedTensorType rhs, bool tl, bool tr, Type element,
                          SmallVectorImpl<Type> &inferred) {
  Fail<OpTy> fail{loc};
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return fail("operands must have rank 2 or more, got lhs ", lhs, " and rhs ",
                rhs);
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  // (..., M, K) x (..., K, N), after the optional transposes.
  int64_t m = lhs.getDimSize(tl ? lr - 1 : lr - 2);
  int64_t kl = lhs.getDimSize(tl ? lr - 2 : lr - 1);
  int64_t kr = rhs.getDimSize(tr ? rr - 1 : rr - 2);
  int64_t n = rhs.getDimSize(tr ? rr - 2 : rr - 1);
  if (kl != kr)
    return fail("contraction sizes differ: lhs ", lhs, " has K = ", kl,
                (tl ? " (transposed)" : ""), ", rhs ", rhs, " has K = ", kr,
                (tr ? " (transposed)" : ""));
  ArrayRef<int64_t> lhsBatch = lhs.getShape().drop_back(2);
  ArrayRef<int64_t> rhsBatch = rhs.getShape().drop_back(2);
  if (rr > 2 && lhsBatch != rhsBatch)
    return fail("batch dimensions differ: lhs has ", fmt(lhsBatch),
                ", rhs has ", fmt(rhsBatch),
                " (rhs must have the same batch dimensions or rank 2)");
  SmallVector<int64_t> shape(lhsBatch);
  shape.push_back(m);
  shape.push_back(n);
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

/// An FP8 GEMM's operands: 8-bit floats (`f8E4M3FN` or `f8E5M2`), not both
/// `f8E5M2`, as Hopper's FP8 tensor cores take them.
template <typename OpTy>
LogicalResult verifyFp8Operands(std::optional<Location> loc,
                                RankedTensorType lhs, RankedTensorType rhs) {
  Fail<OpTy> fail{loc};
  auto eightBit = [](Type t) {
    return isa<Float8E4M3FNType, Float8E5M2Type>(t);
  };
  if (!eightBit(lhs.getElementType()) || !eightBit(rhs.getElementType()))
    return fail("operands must be f8E4M3FN or f8E5M2 tensors, got lhs ", lhs,
                " and rhs ", rhs);
  if (isa<Float8E5M2Type>(lhs.getElementType()) &&
      isa<Float8E5M2Type>(rhs.getElementType()))
    return fail("at most one operand may be f8E5M2 (as in FP8 GEMMs), got lhs ",
                lhs, " and rhs ", rhs);
  return success();
}

} // namespace mlir::anvil::detail

#endif // ANVIL_LIB_DIALECT_ANVIL_IR_OPVERIFICATION_H
