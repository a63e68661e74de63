//===- AnvilEmit.h - terse construction of anvil ops -------------*- C++
//-*-===//
//
// `Emit` builds anvil ops at one location with one call each, so that rules
// that write math out of ops (VJPs, optimizer updates) read like the math:
// `e.mul(g, e.sub(e.like(y, 1), e.mul(y, y)))`.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILEMIT_H
#define ANVIL_DIALECT_ANVIL_IR_ANVILEMIT_H

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::anvil {

/// Builds anvil ops at `loc` through `b`.
struct Emit {
  OpBuilder &b;
  Location loc;

  RankedTensorType typeOf(Value v) const {
    return cast<RankedTensorType>(v.getType());
  }
  /// A splat constant of `type`'s shape and element type.
  Value splat(Type type, double value) {
    auto t = cast<RankedTensorType>(type);
    Attribute element =
        isa<FloatType>(t.getElementType())
            ? Attribute(b.getFloatAttr(t.getElementType(), value))
            : Attribute(b.getIntegerAttr(t.getElementType(),
                                         static_cast<int64_t>(value)));
    return ConstantOp::create(b, loc, t, SplatElementsAttr::get(t, element));
  }
  Value like(Value v, double value) { return splat(v.getType(), value); }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value scale(Value x, double c) { return mul(x, like(x, c)); }
  Value cmp(ComparisonDirection d, Value x, Value y) {
    return CompareOp::create(b, loc, d, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return SelectOp::create(b, loc, c, x, y);
  }
  /// 1.0 where `mask` holds, else 0.0, in the float type of `like`.
  Value maskOf(Value mask, Value likeValue) {
    return CastOp::create(b, loc, typeOf(likeValue), mask);
  }
  Value sum(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceSumOp::create(b, loc, x, dims, keep);
  }
  Value mean(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceMeanOp::create(b, loc, x, dims, keep);
  }
  Value reshape(Value x, Type type) {
    if (x.getType() == type)
      return x;
    return ReshapeOp::create(b, loc, type, x);
  }
  /// Broadcasts `x` to `type`, operand dimension i going to `dims[i]`.
  Value broadcast(Value x, Type type, ArrayRef<int64_t> dims) {
    if (x.getType() == type)
      return x;
    return BroadcastOp::create(b, loc, type, x, dims);
  }
  /// Broadcasts `x`, which has `type`'s rank (size-1 where it stretches).
  Value stretch(Value x, Type type) {
    SmallVector<int64_t> dims =
        llvm::to_vector(llvm::seq<int64_t>(0, typeOf(x).getRank()));
    return broadcast(x, type, dims);
  }
  /// Broadcasts a reduction result kept with `keep_dims` back to `type`.
  Value unreduce(Value reduced, Type type) { return stretch(reduced, type); }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return TransposeOp::create(b, loc, x, perm);
  }
  /// GELU's derivative at `x` (elementwise ops; AnvilVJP.cpp).
  Value geluDerivative(GeluApproximation approximation, Value x);
};

} // namespace mlir::anvil

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILEMIT_H
