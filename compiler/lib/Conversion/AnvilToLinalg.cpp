//===- AnvilToLinalg.cpp - primitive anvil ops to linalg/tensor/arith -----===//
//
// Lowers every primitive anvil op to upstream ops on tensors, the common
// entry of the CPU and CUDA backends:
//
// 1. Elementwise ops (arithmetic, math, compare, select, cast, GELU, SiLU,
//    dropout, ...) become one `linalg.generic` with identity maps whose body
//    is the op's scalar function (`emitScalar`); broadcasts are generics
//    whose input map drops or pins (size-1) dimensions.
// 2. Reductions are generics with reduction iterators over a filled init;
//    a mean divides afterwards; `keep_dims` re-expands the shape.
// 3. `matmul` becomes `linalg.matmul` / `linalg.batch_matmul`, transposes
//    and shared (rank-2) weights expressed in their indexing maps, leading
//    batch dimensions collapsed into one. An add of a single-use matmul's
//    result (a bias, a residual) becomes the matmul's accumulator.
// 4. Data movement: `transpose` is `linalg.transpose`; reshape, slice,
//    concat, split and pad are tensor ops (collapse/expand, extract/insert
//    slices over a filled tensor).
// 5. Gathers (`embedding`, `gather`) are generics that `tensor.extract`
//    their element; `embedding_grad` is an `scf.for` over the index
//    positions adding rows into a zero table. Indices are clamped into
//    range: the data loader rejects bad tokens, the clamp keeps a bad index
//    from ever addressing memory outside the table.
//
// 6. Convolutions become the named linalg convolutions where one exists
//    (1-3 D NC* without groups, 2-D grouped NGCHW), generics over (batch,
//    group, output channel, output position) with reductions over (input
//    channel, kernel offset) otherwise, on the input padded explicitly;
//    filter gradients are such generics; pooling is the named NCW / NCHW
//    pooling op, or a generic sweeping a window shape tensor (3-D);
//    max_pool_grad finds each window's first maximum, then gathers, per input
//    position, the gradients of the windows whose maximum it is; argmax keeps
//    the first maximum (the first NaN); nearest upsampling extracts at o /
//    scale.
//
// Composite ops (softmax, norms, attention, losses, conv_transpose) are
// decomposed before this pass (`anvil-decompose`); an op without a
// lowering is reported with its location and the list of ops that have
// one.
//
//===----------------------------------------------------------------------===//

#include "AnvilToLinalgPatterns.h"

#include "anvil/Conversion/ConvertToLinalgInterface.h"
#include "anvil/Conversion/Passes.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCONVERTTOLINALGPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;
using namespace mlir::anvil::lowering;

namespace {

using utils::IteratorType;

} // namespace

namespace mlir::anvil::lowering {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

Value emptyOf(OpBuilder &b, Location loc, RankedTensorType t) {
  return tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value filled(OpBuilder &b, Location loc, RankedTensorType t, Value value) {
  return linalg::FillOp::create(b, loc, ValueRange{value},
                                ValueRange{emptyOf(b, loc, t)})
      .getResult(0);
}

bool accumulatesInF32(Type element) {
  return element.isBF16() || element.isF16();
}

} // namespace mlir::anvil::lowering

namespace {

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(
      values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); });
}

/// Converts `x` to `to`: floats round, floats to integers truncate toward
/// zero, anything non-zero becomes true in i1 (the semantics of anvil.cast).
Value convertScalar(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    return fromFloat
               ? Value(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                             x, zero))
               : Value(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                             x, zero));
  }
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, x);
    if (toFloat.getWidth() == 8) {
      // anvil.cast saturates the 8-bit floats: beyond the largest finite
      // value (infinities included) is that value; NaN stays NaN.
      double largest = llvm::APFloat::getLargest(toFloat.getFloatSemantics())
                           .convertToDouble();
      x = arith::MinimumFOp::create(b, loc, x,
                                    scalarConstant(b, loc, from, largest));
      x = arith::MaximumFOp::create(b, loc, x,
                                    scalarConstant(b, loc, from, -largest));
    }
    return arith::TruncFOp::create(b, loc, to, x);
  }
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, x);
  bool fromBool = from.isInteger(1);
  if (toFloat)
    return fromBool ? Value(arith::UIToFPOp::create(b, loc, to, x))
                    : Value(arith::SIToFPOp::create(b, loc, to, x));
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth < toWidth)
    return fromBool ? Value(arith::ExtUIOp::create(b, loc, to, x))
                    : Value(arith::ExtSIOp::create(b, loc, to, x));
  return arith::TruncIOp::create(b, loc, to, x);
}

Value sigmoidScalar(OpBuilder &b, Location loc, Value x) {
  Value one = scalarConstant(b, loc, x.getType(), 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

/// splitmix64 of `x` (i64), as the dropout op's description defines it.
Value mix64(OpBuilder &b, Location loc, Value x) {
  auto c = [&](uint64_t v) {
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(b.getI64Type(), static_cast<int64_t>(v)));
  };
  auto xorShift = [&](Value v, uint64_t s) {
    return arith::XOrIOp::create(b, loc, v,
                                 arith::ShRUIOp::create(b, loc, v, c(s)));
  };
  x = arith::AddIOp::create(b, loc, x, c(0x9E3779B97F4A7C15ull));
  x = arith::MulIOp::create(b, loc, xorShift(x, 30), c(0xBF58476D1CE4E5B9ull));
  x = arith::MulIOp::create(b, loc, xorShift(x, 27), c(0x94D049BB133111EBull));
  return xorShift(x, 31);
}

/// The row-major linear index of the current point of a generic, as i64.
Value linearIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value index = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [d, size] : llvm::enumerate(shape)) {
    Value scaled = arith::MulIOp::create(
        b, loc, index, arith::ConstantIndexOp::create(b, loc, size));
    index = arith::AddIOp::create(b, loc, scaled,
                                  linalg::IndexOp::create(b, loc, d));
  }
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

arith::CmpFPredicate floatPredicate(ComparisonDirection d) {
  switch (d) {
  case ComparisonDirection::eq:
    return arith::CmpFPredicate::OEQ;
  case ComparisonDirection::ne:
    return arith::CmpFPredicate::UNE;
  case ComparisonDirection::lt:
    return arith::CmpFPredicate::OLT;
  case ComparisonDirection::le:
    return arith::CmpFPredicate::OLE;
  case ComparisonDirection::gt:
    return arith::CmpFPredicate::OGT;
  case ComparisonDirection::ge:
    return arith::CmpFPredicate::OGE;
  }
  llvm_unreachable("unknown comparison direction");
}

arith::CmpIPredicate intPredicate(ComparisonDirection d) {
  switch (d) {
  case ComparisonDirection::eq:
    return arith::CmpIPredicate::eq;
  case ComparisonDirection::ne:
    return arith::CmpIPredicate::ne;
  case ComparisonDirection::lt:
    return arith::CmpIPredicate::slt;
  case ComparisonDirection::le:
    return arith::CmpIPredicate::sle;
  case ComparisonDirection::gt:
    return arith::CmpIPredicate::sgt;
  case ComparisonDirection::ge:
    return arith::CmpIPredicate::sge;
  }
  llvm_unreachable("unknown comparison direction");
}

/// The scalar function of elementwise op `op` applied to `args` (one per
/// tensor operand), inside a generic whose iteration space is `shape`.
/// Returns null for ops that are not elementwise.
Value emitScalar(Operation *op, OpBuilder &b, Location loc, ValueRange args,
                 ArrayRef<int64_t> shape) {
  Type type = args.empty() ? Type() : args[0].getType();
  bool isFloat = type && isa<FloatType>(type);
  auto fi = [&](auto floatOp, auto intOp) -> Value {
    using F = decltype(floatOp);
    using I = decltype(intOp);
    if (isFloat)
      return F::create(b, loc, args[0], args[1]);
    return I::create(b, loc, args[0], args[1]);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) { return fi(arith::AddFOp(), arith::AddIOp()); })
      .Case([&](SubOp) { return fi(arith::SubFOp(), arith::SubIOp()); })
      .Case([&](MulOp) { return fi(arith::MulFOp(), arith::MulIOp()); })
      .Case([&](DivOp) { return fi(arith::DivFOp(), arith::DivSIOp()); })
      .Case([&](MaxOp) { return fi(arith::MaximumFOp(), arith::MaxSIOp()); })
      .Case([&](MinOp) { return fi(arith::MinimumFOp(), arith::MinSIOp()); })
      .Case(
          [&](PowOp) { return math::PowFOp::create(b, loc, args[0], args[1]); })
      .Case([&](NegOp) -> Value {
        if (isFloat)
          return arith::NegFOp::create(b, loc, args[0]);
        return arith::SubIOp::create(b, loc, scalarConstant(b, loc, type, 0),
                                     args[0]);
      })
      .Case([&](AbsOp) -> Value {
        if (isFloat)
          return math::AbsFOp::create(b, loc, args[0]);
        return math::AbsIOp::create(b, loc, args[0]);
      })
      .Case([&](ExpOp) { return math::ExpOp::create(b, loc, args[0]); })
      .Case([&](LogOp) { return math::LogOp::create(b, loc, args[0]); })
      .Case([&](SqrtOp) { return math::SqrtOp::create(b, loc, args[0]); })
      .Case([&](RsqrtOp) { return math::RsqrtOp::create(b, loc, args[0]); })
      .Case([&](TanhOp) { return math::TanhOp::create(b, loc, args[0]); })
      .Case([&](CosOp) { return math::CosOp::create(b, loc, args[0]); })
      .Case([&](SinOp) { return math::SinOp::create(b, loc, args[0]); })
      .Case([&](ErfOp) { return math::ErfOp::create(b, loc, args[0]); })
      .Case([&](SigmoidOp) { return sigmoidScalar(b, loc, args[0]); })
      .Case([&](SiluOp) {
        return arith::MulFOp::create(b, loc, args[0],
                                     sigmoidScalar(b, loc, args[0]));
      })
      .Case([&](ReluOp) {
        // max(x, 0) propagating NaN, as the interpreter does.
        return arith::MaximumFOp::create(b, loc, args[0],
                                         scalarConstant(b, loc, type, 0.0));
      })
      .Case([&](GeluOp gelu) {
        Value x = args[0];
        auto c = [&](double v) { return scalarConstant(b, loc, type, v); };
        Value inner;
        if (gelu.getApproximation() == GeluApproximation::erf) {
          // 0.5 x (1 + erf(x / sqrt 2))
          inner = math::ErfOp::create(
              b, loc, arith::MulFOp::create(b, loc, x, c(M_SQRT1_2)));
        } else {
          // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
          Value x3 = arith::MulFOp::create(b, loc, x,
                                           arith::MulFOp::create(b, loc, x, x));
          Value u = arith::AddFOp::create(
              b, loc, x, arith::MulFOp::create(b, loc, x3, c(0.044715)));
          inner = math::TanhOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, u, c(std::sqrt(2.0 / M_PI))));
        }
        Value half = arith::MulFOp::create(b, loc, x, c(0.5));
        return arith::MulFOp::create(
            b, loc, half, arith::AddFOp::create(b, loc, c(1.0), inner));
      })
      .Case([&](CompareOp cmp) -> Value {
        if (isFloat)
          return arith::CmpFOp::create(
              b, loc, floatPredicate(cmp.getDirection()), args[0], args[1]);
        return arith::CmpIOp::create(b, loc, intPredicate(cmp.getDirection()),
                                     args[0], args[1]);
      })
      .Case([&](SelectOp) {
        return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
      })
      .Case([&](CastOp cast) {
        return convertScalar(b, loc, args[0], cast.getType().getElementType());
      })
      .Case([&](DropoutOp dropout) -> Value {
        // Kept iff u(seed, i) >= rate with u = (m(seed ^ m(i)) >> 11) 2^-53.
        double rate = dropout.getRate().convertToDouble();
        Value i = linearIndex(b, loc, shape);
        Value bits = mix64(
            b, loc, arith::XOrIOp::create(b, loc, args[1], mix64(b, loc, i)));
        Value top = arith::ShRUIOp::create(
            b, loc, bits,
            arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(11)));
        Value u = arith::MulFOp::create(
            b, loc, arith::UIToFPOp::create(b, loc, b.getF64Type(), top),
            scalarConstant(b, loc, b.getF64Type(), std::ldexp(1.0, -53)));
        Value keep =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, u,
                                  scalarConstant(b, loc, b.getF64Type(), rate));
        Value scaled = arith::MulFOp::create(
            b, loc, args[0], scalarConstant(b, loc, type, 1.0 / (1.0 - rate)));
        return arith::SelectOp::create(b, loc, keep, scaled,
                                       scalarConstant(b, loc, type, 0.0));
      })
      .Default([](Operation *) { return Value(); });
}

} // namespace

namespace mlir::anvil::lowering {

/// A `linalg.generic` over `resultType` whose inputs are read with `maps`
/// and whose body is `body(args)`.
Value buildGeneric(
    OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs,
      ValueRange{emptyOf(b, loc, resultType)}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args.drop_back()));
      });
  return generic.getResult(0);
}

} // namespace mlir::anvil::lowering

namespace {

/// Elementwise ops: one generic with identity maps. Rank-0 operands (the
/// dropout seed) are read through an empty map.
struct LowerElementwise : RewritePattern {
  LowerElementwise(MLIRContext *ctx, StringRef name)
      : RewritePattern(name, /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t rank = resultType.getRank();
    SmallVector<AffineMap> maps;
    for (Value operand : op->getOperands())
      maps.push_back(tensorType(operand).getRank() == rank
                         ? rewriter.getMultiDimIdentityMap(rank)
                         : AffineMap::get(rank, 0, {}, getContext()));
    bool ok = true;
    Value result = buildGeneric(
        rewriter, op->getLoc(), resultType, op->getOperands(), maps,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value v = emitScalar(op, b, loc, args, resultType.getShape());
          if (!v) {
            ok = false;
            return args[0];
          }
          return v;
        });
    if (!ok)
      return rewriter.notifyMatchFailure(op, "no scalar function");
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Identities: a stop-gradient, and an axis copy (what it marks is for
/// differentiation).
template <typename OpTy> struct LowerIdentity : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getOperand());
    return success();
  }
};

struct LowerConstant : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

struct LowerBroadcast : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto in = op.getOperand().getType();
    auto out = op.getType();
    // Operand dimension i reads result dimension dims[i], or 0 when it
    // stretches from size 1.
    SmallVector<AffineExpr> exprs;
    for (auto [i, d] : llvm::enumerate(op.getDimensions())) {
      bool stretches = in.getDimSize(i) == 1 && out.getDimSize(d) != 1;
      exprs.push_back(stretches ? rewriter.getAffineConstantExpr(0)
                                : rewriter.getAffineDimExpr(d));
    }
    auto map = AffineMap::get(out.getRank(), 0, exprs, getContext());
    rewriter.replaceOp(
        op, buildGeneric(rewriter, op.getLoc(), out, {op.getOperand()}, {map},
                         [](OpBuilder &, Location, ValueRange args) {
                           return args[0];
                         }));
    return success();
  }
};

} // namespace

namespace mlir::anvil::lowering {

/// `src` reshaped to `to` (same element count) through collapse/expand.
Value reshapeTensor(OpBuilder &b, Location loc, Value src,
                    RankedTensorType to) {
  auto from = tensorType(src);
  if (from == to)
    return src;
  if (from.getRank() == 0 || to.getRank() == 0) {
    // Every dimension is 1: an empty reassociation in either direction.
    if (from.getRank() == 0)
      return tensor::ExpandShapeOp::create(b, loc, to, src,
                                           ArrayRef<ReassociationIndices>{});
    return tensor::CollapseShapeOp::create(b, loc, to, src,
                                           ArrayRef<ReassociationIndices>{});
  }
  if (auto reassociation = getReassociationIndicesForReshape(from, to)) {
    if (from.getRank() > to.getRank())
      return tensor::CollapseShapeOp::create(b, loc, to, src, *reassociation);
    return tensor::ExpandShapeOp::create(b, loc, to, src, *reassociation);
  }
  // Neither a pure collapse nor a pure expansion: go through one dimension.
  auto flat =
      RankedTensorType::get({from.getNumElements()}, from.getElementType());
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, from.getRank()));
  Value line = tensor::CollapseShapeOp::create(
      b, loc, flat, src, ArrayRef<ReassociationIndices>{all});
  ReassociationIndices allTo =
      llvm::to_vector(llvm::seq<int64_t>(0, to.getRank()));
  return tensor::ExpandShapeOp::create(b, loc, to, line,
                                       ArrayRef<ReassociationIndices>{allTo});
}

} // namespace mlir::anvil::lowering

namespace {

struct LowerReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTensor(rewriter, op.getLoc(), op.getOperand(),
                                         op.getType()));
    return success();
  }
};

struct LowerTranspose : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    Value init = emptyOf(rewriter, op.getLoc(), op.getType());
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       op.getOperand(), init,
                                                       op.getPermutation())
                               .getResult()[0]);
    return success();
  }
};

struct LowerSlice : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getType(), op.getOperand(), indexAttrs(rewriter, op.getStart()),
        indexAttrs(rewriter, op.getType().getShape()),
        indexAttrs(rewriter, op.getStride()));
    return success();
  }
};

struct LowerSplit : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp op,
                                PatternRewriter &rewriter) const override {
    auto in = op.getOperand().getType();
    SmallVector<int64_t> offsets(in.getRank(), 0), strides(in.getRank(), 1);
    SmallVector<Value> pieces;
    for (Value result : op.getResults()) {
      auto t = tensorType(result);
      pieces.push_back(tensor::ExtractSliceOp::create(
          rewriter, op.getLoc(), t, op.getOperand(),
          indexAttrs(rewriter, offsets), indexAttrs(rewriter, t.getShape()),
          indexAttrs(rewriter, strides)));
      offsets[op.getDim()] += t.getDimSize(op.getDim());
    }
    rewriter.replaceOp(op, pieces);
    return success();
  }
};

} // namespace

namespace mlir::anvil::lowering {

/// Inserts `pieces` into `dest` one after another along `dim`, starting at
/// `offsets`.
Value insertAlong(OpBuilder &b, Location loc, Value dest, ValueRange pieces,
                  int64_t dim, SmallVector<int64_t> offsets) {
  SmallVector<int64_t> strides(offsets.size(), 1);
  for (Value piece : pieces) {
    auto t = tensorType(piece);
    dest = tensor::InsertSliceOp::create(
        b, loc, piece, dest, indexAttrs(b, offsets),
        indexAttrs(b, t.getShape()), indexAttrs(b, strides));
    if (dim >= 0)
      offsets[dim] += t.getDimSize(dim);
  }
  return dest;
}

} // namespace mlir::anvil::lowering

namespace {

/// The most elements, and inputs, of a concatenation lowered to one
/// generic that reads each point from its input (LowerConcat).
constexpr int64_t kGatheredConcatElements = 65536;
constexpr size_t kGatheredConcatInputs = 4;

/// A concatenation into a static result of at most kGatheredConcatElements
/// elements from at most kGatheredConcatInputs inputs (an FP8 tensor's
/// amax history shifted by one, its newest amax first) becomes one
/// generic over the result that reads each point from the input it comes
/// from (`tensor.extract` at the point's index less the input's offset
/// along `dim`, clamped into every input, and `select`s by that index):
/// one kernel on a GPU instead of a copy a piece, and a generic that
/// anvil-horizontal-fuse can merge with others. Larger ones insert each
/// input into the result (a copy each, at full bandwidth).
struct LowerConcat : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    auto t = cast<RankedTensorType>(op.getType());
    if (t.hasStaticShape() && t.getRank() > 0 &&
        t.getNumElements() <= kGatheredConcatElements &&
        op.getInputs().size() <= kGatheredConcatInputs &&
        llvm::all_of(op.getInputs(), [](Value in) {
          // Every input read at some point: none empty.
          auto shape = cast<RankedTensorType>(in.getType());
          return shape.hasStaticShape() && shape.getNumElements() > 0;
        })) {
      rewriter.replaceOp(op, gathered(rewriter, op, t));
      return success();
    }
    Value dest = emptyOf(rewriter, op.getLoc(), t);
    rewriter.replaceOp(op, insertAlong(rewriter, op.getLoc(), dest,
                                       op.getInputs(), op.getDim(),
                                       SmallVector<int64_t>(t.getRank(), 0)));
    return success();
  }

  static Value gathered(OpBuilder &b, ConcatOp op, RankedTensorType t) {
    Location loc = op.getLoc();
    int64_t dim = op.getDim();
    auto identity = b.getMultiDimIdentityMap(t.getRank());
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{t}, ValueRange{}, ValueRange{emptyOf(b, loc, t)},
        ArrayRef<AffineMap>{identity},
        SmallVector<utils::IteratorType>(t.getRank(),
                                         utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nl, ValueRange) {
          auto index = [&](int64_t v) {
            return arith::ConstantIndexOp::create(nb, nl, v).getResult();
          };
          SmallVector<Value> at;
          for (int64_t d = 0; d < t.getRank(); ++d)
            at.push_back(linalg::IndexOp::create(nb, nl, d));
          Value i = at[dim];
          // Each input's element at the point, its index along `dim`
          // clamped into it; the point's own input's is the one selected.
          SmallVector<Value> values;
          SmallVector<int64_t> offsets;
          int64_t offset = 0;
          for (Value in : op.getInputs()) {
            int64_t size = cast<RankedTensorType>(in.getType()).getDimSize(dim);
            SmallVector<Value> local(at);
            Value shifted = arith::SubIOp::create(nb, nl, i, index(offset));
            shifted = arith::MaxSIOp::create(nb, nl, shifted, index(0));
            local[dim] =
                arith::MinSIOp::create(nb, nl, shifted, index(size - 1));
            values.push_back(tensor::ExtractOp::create(nb, nl, in, local));
            offsets.push_back(offset);
            offset += size;
          }
          Value result = values.back();
          for (int64_t k = int64_t(values.size()) - 2; k >= 0; --k) {
            Value before = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::slt, i, index(offsets[k + 1]));
            result = arith::SelectOp::create(nb, nl, before, values[k], result);
          }
          linalg::YieldOp::create(nb, nl, result);
        });
    return generic.getResult(0);
  }
};

struct LowerPad : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    auto t = op.getType();
    Value value = scalarConstant(rewriter, op.getLoc(), t.getElementType(),
                                 op.getValue().convertToDouble());
    Value dest = filled(rewriter, op.getLoc(), t, value);
    rewriter.replaceOp(op, insertAlong(rewriter, op.getLoc(), dest,
                                       {op.getOperand()}, -1,
                                       llvm::to_vector(op.getLow())));
    return success();
  }
};

} // namespace

namespace mlir::anvil::lowering {

Value identityOf(OpBuilder &b, Location loc, Type type, Combine c) {
  if (c == Combine::Sum)
    return scalarConstant(b, loc, type, 0.0);
  bool max = c == Combine::Max;
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(f, max ? -INFINITY : INFINITY));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt v =
      max ? APInt::getSignedMinValue(width) : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

Value combine(OpBuilder &b, Location loc, Combine c, Value acc, Value x) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (c) {
  case Combine::Sum:
    return isFloat ? Value(arith::AddFOp::create(b, loc, acc, x))
                   : Value(arith::AddIOp::create(b, loc, acc, x));
  case Combine::Max:
    return isFloat ? Value(arith::MaximumFOp::create(b, loc, acc, x))
                   : Value(arith::MaxSIOp::create(b, loc, acc, x));
  case Combine::Min:
    return isFloat ? Value(arith::MinimumFOp::create(b, loc, acc, x))
                   : Value(arith::MinSIOp::create(b, loc, acc, x));
  }
  llvm_unreachable("unknown combine");
}

} // namespace mlir::anvil::lowering

namespace {

template <typename OpTy, Combine C, bool Mean = false>
struct LowerReduce : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto in = op.getOperand().getType();
    Type element = in.getElementType();
    llvm::SmallDenseSet<int64_t> reduced(op.getDims().begin(),
                                         op.getDims().end());
    SmallVector<int64_t> kept;
    SmallVector<AffineExpr> outExprs;
    SmallVector<IteratorType> iterators;
    for (int64_t d = 0; d < in.getRank(); ++d) {
      bool r = reduced.contains(d);
      iterators.push_back(r ? IteratorType::reduction : IteratorType::parallel);
      if (!r) {
        kept.push_back(in.getDimSize(d));
        outExprs.push_back(rewriter.getAffineDimExpr(d));
      }
    }
    auto outType = RankedTensorType::get(kept, element);
    Value init =
        filled(rewriter, loc, outType, identityOf(rewriter, loc, element, C));
    SmallVector<AffineMap> maps = {
        rewriter.getMultiDimIdentityMap(in.getRank()),
        AffineMap::get(in.getRank(), 0, outExprs, rewriter.getContext())};
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{outType}, ValueRange{op.getOperand()},
            ValueRange{init}, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(b, l, combine(b, l, C, args[1], args[0]));
            })
            .getResult(0);
    if (Mean) {
      int64_t count = 1;
      for (int64_t d : op.getDims())
        count *= in.getDimSize(d);
      Value divisor =
          scalarConstant(rewriter, loc, element, static_cast<double>(count));
      auto id = rewriter.getMultiDimIdentityMap(outType.getRank());
      result =
          buildGeneric(rewriter, loc, outType, {result}, {id},
                       [&](OpBuilder &b, Location l, ValueRange args) {
                         return arith::DivFOp::create(b, l, args[0], divisor);
                       });
    }
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, result, op.getType()));
    return success();
  }
};

/// lowerMatmul with the linalg op's result type `out` (op's shape).
Value lowerMatmulAs(PatternRewriter &rewriter, MatmulOp op, Value acc,
                    RankedTensorType out) {
  {
    Location loc = op.getLoc();
    Value lhs = op.getLhs(), rhs = op.getRhs();
    auto lt = op.getLhs().getType(), rt = op.getRhs().getType();
    bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
    int64_t rank = out.getRank();
    Type element = out.getElementType();
    int64_t m = out.getDimSize(rank - 2), n = out.getDimSize(rank - 1);
    Value zero = scalarConstant(rewriter, loc, element, 0.0);
    MLIRContext *ctx = rewriter.getContext();

    // Dimensions of the linalg op: (b,) m, n, k.
    auto maps = [&](bool batched, bool sharedRhs) {
      unsigned nd = batched ? 4 : 3, base = batched ? 1 : 0;
      AffineExpr bd = getAffineDimExpr(0, ctx);
      AffineExpr md = getAffineDimExpr(base, ctx),
                 nd_ = getAffineDimExpr(base + 1, ctx),
                 kd = getAffineDimExpr(base + 2, ctx);
      auto mk = [&](SmallVector<AffineExpr> e, bool withBatch) {
        if (withBatch)
          e.insert(e.begin(), bd);
        return AffineMap::get(nd, 0, e, ctx);
      };
      SmallVector<Attribute> attrs = {
          AffineMapAttr::get(mk(ta ? SmallVector<AffineExpr>{kd, md}
                                   : SmallVector<AffineExpr>{md, kd},
                                batched)),
          AffineMapAttr::get(mk(tb ? SmallVector<AffineExpr>{nd_, kd}
                                   : SmallVector<AffineExpr>{kd, nd_},
                                batched && !sharedRhs)),
          AffineMapAttr::get(mk({md, nd_}, batched))};
      return rewriter.getNamedAttr("indexing_maps",
                                   rewriter.getArrayAttr(attrs));
    };

    // The accumulator, in the shape of the linalg op's result.
    auto initOf = [&](RankedTensorType t) {
      return acc ? reshapeTensor(rewriter, loc, acc, t)
                 : filled(rewriter, loc, t, zero);
    };
    if (rank == 2) {
      auto t = RankedTensorType::get({m, n}, element);
      return linalg::MatmulOp::create(
                 rewriter, loc, TypeRange{t}, ValueRange{lhs, rhs},
                 ValueRange{initOf(t)}, {maps(false, false)})
          .getResult(0);
    }

    // Batched: collapse the leading dimensions into one.
    int64_t batch = 1;
    for (int64_t d = 0; d < rank - 2; ++d)
      batch *= out.getDimSize(d);
    auto collapse = [&](Value v, RankedTensorType t) {
      return reshapeTensor(
          rewriter, loc, v,
          RankedTensorType::get({batch, t.getDimSize(t.getRank() - 2),
                                 t.getDimSize(t.getRank() - 1)},
                                t.getElementType()));
    };
    bool shared = rt.getRank() == 2;
    if (shared && ta) {
      // batch_matmul cannot broadcast B and transpose A at once: transpose
      // A's last two dimensions first, then take the shared-weight path.
      SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      std::swap(perm[rank - 1], perm[rank - 2]);
      SmallVector<int64_t> shape(lt.getShape());
      std::swap(shape[rank - 1], shape[rank - 2]);
      auto tt = RankedTensorType::get(shape, lt.getElementType());
      lhs = linalg::TransposeOp::create(rewriter, loc, lhs,
                                        emptyOf(rewriter, loc, tt), perm)
                .getResult()[0];
      lt = tt;
      ta = false;
    }
    if (shared) {
      // x @ W with W shared: one (batch * M, K) x (K, N) product.
      int64_t k = lt.getDimSize(rank - 1);
      Value lhs2 = reshapeTensor(
          rewriter, loc, lhs,
          RankedTensorType::get({batch * m, k}, lt.getElementType()));
      auto t = RankedTensorType::get({batch * m, n}, element);
      Value r = linalg::MatmulOp::create(
                    rewriter, loc, TypeRange{t}, ValueRange{lhs2, rhs},
                    ValueRange{initOf(t)}, {maps(false, false)})
                    .getResult(0);
      return reshapeTensor(rewriter, loc, r, out);
    }
    Value lhs3 = collapse(lhs, lt);
    Value rhs3 = shared ? rhs : collapse(rhs, rt);
    auto t = RankedTensorType::get({batch, m, n}, element);
    Value r = linalg::BatchMatmulOp::create(
                  rewriter, loc, TypeRange{t}, ValueRange{lhs3, rhs3},
                  ValueRange{initOf(t)}, {maps(true, shared)})
                  .getResult(0);
    return reshapeTensor(rewriter, loc, r, out);
  }
}

/// anvil.matmul (accumulating into `acc` when given) as linalg.matmul or
/// batch_matmul. A bf16 or f16 matmul's linalg op widens
/// its operands to an f32 result (exact products, f32 sums), rounded to
/// the element type by a linalg.generic after it.
Value lowerMatmul(PatternRewriter &rewriter, MatmulOp op, Value acc) {
  auto narrow = op.getType();
  if (accumulatesInF32(narrow.getElementType())) {
    assert(!acc && "a narrow matmul takes no accumulator");
    auto wide = narrow.clone(rewriter.getF32Type());
    Value product = lowerMatmulAs(rewriter, op, Value(), wide);
    auto id = rewriter.getMultiDimIdentityMap(narrow.getRank());
    return buildGeneric(rewriter, op.getLoc(), narrow, {product}, {id},
                        [&](OpBuilder &b, Location l, ValueRange args) {
                          return arith::TruncFOp::create(
                              b, l, narrow.getElementType(), args[0]);
                        });
  }
  return lowerMatmulAs(rewriter, op, acc, narrow);
}

struct LowerMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerMatmul(rewriter, op, Value()));
    return success();
  }
};

/// The additive epilogue of a GEMM: `matmul(a, b) + c` (either order), the
/// matmul used only there, is one matmul accumulating into `c`. The BLAS
/// call takes it as its C (beta = 1): the add costs no pass of its own, and
/// a bias broadcast replaces the zero fill.
struct LowerMatmulPlus : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      auto mm = op.getOperand(i).getDefiningOp<MatmulOp>();
      // (A narrow matmul rounds its product before the add.)
      if (!mm || !mm->hasOneUse() || mm.getType() != op.getType() ||
          accumulatesInF32(mm.getType().getElementType()))
        continue;
      Value acc = op.getOperand(1 - i);
      rewriter.replaceOp(op, lowerMatmul(rewriter, mm, acc));
      rewriter.eraseOp(mm);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no single-use matmul operand");
  }
};

/// `index` (any integer type) as an index clamped into [0, size).
Value clampedIndex(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value lo = arith::ConstantIndexOp::create(b, loc, 0);
  Value hi = arith::ConstantIndexOp::create(b, loc, size - 1);
  return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, i, lo),
                                hi);
}

/// result[pre..., idx..., post...] = operand[pre..., clamp(indices[idx...]),
/// post...]: `embedding` (axis 0 of a (V, C) table) and `gather`.
Value buildTake(OpBuilder &b, Location loc, Value operand, Value indices,
                int64_t axis, RankedTensorType out) {
  auto opType = tensorType(operand);
  int64_t ni = tensorType(indices).getRank(), rank = out.getRank();
  SmallVector<AffineExpr> idxExprs;
  for (int64_t d = axis; d < axis + ni; ++d)
    idxExprs.push_back(b.getAffineDimExpr(d));
  auto idxMap = AffineMap::get(rank, 0, idxExprs, b.getContext());
  return buildGeneric(
      b, loc, out, {indices}, {idxMap},
      [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        SmallVector<Value> at;
        for (int64_t d = 0; d < axis; ++d)
          at.push_back(linalg::IndexOp::create(nb, nl, d));
        at.push_back(clampedIndex(nb, nl, args[0], opType.getDimSize(axis)));
        for (int64_t d = axis + ni; d < rank; ++d)
          at.push_back(linalg::IndexOp::create(nb, nl, d));
        return tensor::ExtractOp::create(nb, nl, operand, at);
      });
}

struct LowerEmbedding : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildTake(rewriter, op.getLoc(), op.getTable(),
                                     op.getIndices(), 0, op.getType()));
    return success();
  }
};

struct LowerGather : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       buildTake(rewriter, op.getLoc(), op.getOperand(),
                                 op.getIndices(), op.getAxis(), op.getType()));
    return success();
  }
};

/// Whether the runtime's anvil_rt_embedding_grad_f32 computes `op`: f32
/// gradients, i32 ids, static shapes, a table of rows of one dimension.
bool isLibraryEmbeddingGrad(EmbeddingGradOp op) {
  auto grad = op.getGrad().getType();
  auto ids = op.getIndices().getType();
  auto table = op.getType();
  return grad.getElementType().isF32() && ids.getElementType().isInteger(32) &&
         grad.hasStaticShape() && ids.hasStaticShape() &&
         table.hasStaticShape() && table.getRank() == 2;
}

struct LowerEmbeddingGrad : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    if (op->hasAttr(AnvilDialect::kLibraryCallAttrName))
      return rewriter.notifyMatchFailure(op, "a runtime call's");
    // table (R, C) = 0; for n in [0, N): table[idx[n]] += grad[n].
    Location loc = op.getLoc();
    auto out = op.getType();
    Type element = out.getElementType();
    int64_t rows = out.getDimSize(0), width = out.getDimSize(1);
    auto idxType = op.getIndices().getType();
    int64_t count = idxType.getNumElements();
    Value grad = reshapeTensor(rewriter, loc, op.getGrad(),
                               RankedTensorType::get({count, width}, element));
    Value ids =
        reshapeTensor(rewriter, loc, op.getIndices(),
                      RankedTensorType::get({count}, idxType.getElementType()));
    Value table =
        filled(rewriter, loc, out, scalarConstant(rewriter, loc, element, 0.0));
    auto rowType = RankedTensorType::get({1, width}, element);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value end = arith::ConstantIndexOp::create(rewriter, loc, count);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, end, one, ValueRange{table},
        [&](OpBuilder &b, Location l, Value n, ValueRange acc) {
          Value id =
              clampedIndex(b, l, tensor::ExtractOp::create(b, l, ids, n), rows);
          SmallVector<OpFoldResult> sizes = indexAttrs(b, {1, width});
          SmallVector<OpFoldResult> strides = indexAttrs(b, {1, 1});
          SmallVector<OpFoldResult> at = {id, b.getIndexAttr(0)};
          Value row = tensor::ExtractSliceOp::create(b, l, rowType, acc[0], at,
                                                     sizes, strides);
          Value g = tensor::ExtractSliceOp::create(
              b, l, rowType, grad,
              SmallVector<OpFoldResult>{n, b.getIndexAttr(0)}, sizes, strides);
          auto id2 = b.getMultiDimIdentityMap(2);
          Value sum =
              linalg::GenericOp::create(
                  b, l, TypeRange{rowType}, ValueRange{g}, ValueRange{row},
                  SmallVector<AffineMap>{id2, id2},
                  SmallVector<IteratorType>(2, IteratorType::parallel),
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    linalg::YieldOp::create(
                        nb, nl,
                        combine(nb, nl, Combine::Sum, args[1], args[0]));
                  })
                  .getResult(0);
          Value updated = tensor::InsertSliceOp::create(b, l, sum, acc[0], at,
                                                        sizes, strides);
          scf::YieldOp::create(b, l, updated);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

} // namespace

namespace mlir::anvil::lowering {

/// A generic with `parallel` leading loops and `reduction` trailing ones,
/// reading `inputs` through `maps`, accumulating into `init` (read and
/// written through `outMap`) with `body(args..., acc)`.
Value buildReduction(
    OpBuilder &b, Location loc, ValueRange inputs, ArrayRef<AffineMap> maps,
    Value init, AffineMap outMap, unsigned parallel, unsigned reduction,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> all(maps);
  all.push_back(outMap);
  SmallVector<IteratorType> iterators(parallel, IteratorType::parallel);
  iterators.append(reduction, IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, all,
             iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, body(nb, nl, args));
             })
      .getResult(0);
}

} // namespace mlir::anvil::lowering

namespace {

/// fp8_quantize with MX blocks (anvil-decompose writes the tensorwise forms
/// in anvil ops; a block's power-of-two scale needs its amax's bits). The
/// operand is viewed with its block dimension d split in (d / N, N); one
/// reduction gives each block's amax (in f32), then per element
///   X = 2^e, e = clamp(exponent(amax) - emax, -127, 127), NaN for a
///   non-finite amax;  y = ext(trunc(x * 2^-e, format)) * X,
/// the exponent read from the amax's bit pattern (a zero or subnormal amax
/// clamps to 2^-127, stored as the f32 subnormal it is).
struct LowerFp8Blocks : OpRewritePattern<Fp8QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Fp8QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> size = op.getBlockSize();
    std::optional<Type> format = op.getForward();
    if (!size || !format)
      return rewriter.notifyMatchFailure(op, "anvil-decompose's form");
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type element = type.getElementType();
    int64_t dim = *op.getBlockDim();
    if (type.isDynamicDim(dim))
      return rewriter.notifyMatchFailure(op, "a dynamic block dimension");
    SmallVector<int64_t> blocked(type.getShape());
    blocked[dim] /= *size;
    blocked.insert(blocked.begin() + dim + 1, *size);
    auto blockedType = RankedTensorType::get(blocked, element);
    Value x = reshapeTensor(rewriter, loc, op.getOperand(), blockedType);
    int64_t rank = blockedType.getRank(), within = dim + 1;

    // The amax of each block: loops over the other dimensions, in order,
    // then the block's.
    Type f32 = rewriter.getF32Type();
    SmallVector<int64_t> amaxShape(blocked);
    amaxShape.erase(amaxShape.begin() + within);
    auto amaxType = RankedTensorType::get(amaxShape, f32);
    SmallVector<AffineExpr> xExprs, amaxExprs;
    for (int64_t d = 0; d < rank; ++d)
      xExprs.push_back(rewriter.getAffineDimExpr(d < within    ? d
                                                 : d == within ? rank - 1
                                                               : d - 1));
    for (int64_t d = 0; d < rank; ++d)
      if (d != within)
        amaxExprs.push_back(rewriter.getAffineDimExpr(d));
    MLIRContext *ctx = rewriter.getContext();
    auto toF32 = [&](OpBuilder &b, Location l, Value v) {
      return convertScalar(b, l, v, f32);
    };
    Value amax = buildReduction(
        rewriter, loc, {x}, {AffineMap::get(rank, 0, xExprs, ctx)},
        filled(rewriter, loc, amaxType, scalarConstant(rewriter, loc, f32, 0)),
        AffineMap::get(rank, 0,
                       llvm::map_to_vector(llvm::seq<int64_t>(0, rank - 1),
                                           [&](int64_t d) {
                                             return rewriter.getAffineDimExpr(
                                                 d);
                                           }),
                       ctx),
        rank - 1, 1, [&](OpBuilder &b, Location l, ValueRange args) {
          Value magnitude = math::AbsFOp::create(b, l, toF32(b, l, args[0]));
          return combine(b, l, Combine::Max, args[1], magnitude);
        });

    int emax = std::ilogb(
        llvm::APFloat::getLargest(cast<FloatType>(*format).getFloatSemantics())
            .convertToDouble());
    Value result = buildGeneric(
        rewriter, loc, blockedType, {x, amax},
        {rewriter.getMultiDimIdentityMap(rank),
         AffineMap::get(rank, 0, amaxExprs, ctx)},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Type i32 = b.getI32Type();
          auto int32 = [&](int64_t v) {
            return arith::ConstantOp::create(b, l, b.getI32IntegerAttr(v));
          };
          Value bits = arith::BitcastOp::create(b, l, i32, args[1]);
          Value field = arith::AndIOp::create(
              b, l, arith::ShRUIOp::create(b, l, bits, int32(23)), int32(0xff));
          Value exponent = arith::MaxSIOp::create(
              b, l, arith::SubIOp::create(b, l, field, int32(127 + emax)),
              int32(-127));
          Value normal = arith::ShLIOp::create(
              b, l, arith::AddIOp::create(b, l, exponent, int32(127)),
              int32(23));
          Value smallest = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                 exponent, int32(-127));
          Value scale = arith::BitcastOp::create(
              b, l, f32,
              arith::SelectOp::create(b, l, smallest, int32(0x00400000),
                                      normal));
          Value finite = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne,
                                               field, int32(0xff));
          Value nan = scalarConstant(b, l, f32, NAN);
          scale = arith::SelectOp::create(b, l, finite, scale, nan);
          // x / X as x * 2^-e: the same value (a power of two), and 2^-e is
          // a normal float over the whole clamped range (e <= 119 for an
          // f32 amax), where X = 2^-127 is subnormal and a flush-to-zero
          // division would turn a zero block into NaN.
          Value inverse = arith::BitcastOp::create(
              b, l, f32,
              arith::ShLIOp::create(
                  b, l, arith::SubIOp::create(b, l, int32(127), exponent),
                  int32(23)));
          inverse = arith::SelectOp::create(b, l, finite, inverse, nan);
          Value q = arith::MulFOp::create(b, l, toF32(b, l, args[0]), inverse);
          q = convertScalar(b, l, convertScalar(b, l, q, *format), f32);
          return convertScalar(b, l, arith::MulFOp::create(b, l, q, scale),
                               element);
        });
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, result, type));
    return success();
  }
};

struct LowerArgmax : OpRewritePattern<ArgmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ArgmaxOp op,
                                PatternRewriter &rewriter) const override {
    // The first maximum along `dim`; the first NaN wins, as in the
    // interpreter.
    Location loc = op.getLoc();
    auto in = op.getOperand().getType();
    Type element = in.getElementType();
    int64_t dim = op.getDim(), rank = in.getRank();
    SmallVector<int64_t> kept;
    SmallVector<AffineExpr> outE;
    SmallVector<IteratorType> iterators;
    for (int64_t d = 0; d < rank; ++d) {
      iterators.push_back(d == dim ? IteratorType::reduction
                                   : IteratorType::parallel);
      if (d != dim) {
        kept.push_back(in.getDimSize(d));
        outE.push_back(rewriter.getAffineDimExpr(d));
      }
    }
    auto valueType = RankedTensorType::get(kept, element);
    auto indexType = RankedTensorType::get(kept, rewriter.getI64Type());
    Value bestInit = filled(rewriter, loc, valueType,
                            identityOf(rewriter, loc, element, Combine::Max));
    Value idxInit =
        filled(rewriter, loc, indexType,
               scalarConstant(rewriter, loc, rewriter.getI64Type(), 0));
    auto outMap = AffineMap::get(rank, 0, outE, getContext());
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank),
                                   outMap, outMap};
    bool isFloat = isa<FloatType>(element);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valueType, indexType},
        ValueRange{op.getOperand()}, ValueRange{bestInit, idxInit}, maps,
        iterators, [&](OpBuilder &b, Location l, ValueRange a) {
          Value take;
          if (isFloat) {
            Value greater = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OGT, a[0], a[1]);
            Value xNaN = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO,
                                               a[0], a[0]);
            Value bestNaN = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::UNO, a[1], a[1]);
            Value notBestNaN = arith::XOrIOp::create(
                b, l, bestNaN, arith::ConstantIntOp::create(b, l, 1, 1));
            take = arith::OrIOp::create(
                b, l, greater, arith::AndIOp::create(b, l, xNaN, notBestNaN));
          } else {
            take = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, a[0],
                                         a[1]);
          }
          Value k = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, dim));
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, take, a[0], a[1]),
                         arith::SelectOp::create(b, l, take, k, a[2])});
        });
    rewriter.replaceOp(
        op, reshapeTensor(rewriter, loc, generic.getResult(1), op.getType()));
    return success();
  }
};

struct AnvilConvertToLinalgPass
    : mlir::anvil::impl::AnvilConvertToLinalgPassBase<
          AnvilConvertToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (onlineLogSumExp)
      lowerOnlineLogSumExps(getOperation());
    if (libraryEmbeddingGrads)
      getOperation().walk([&](EmbeddingGradOp op) {
        if (isLibraryEmbeddingGrad(op))
          op->setAttr(AnvilDialect::kLibraryCallAttrName, UnitAttr::get(ctx));
      });
    RewritePatternSet patterns(ctx);
    for (StringRef name :
         {AddOp::getOperationName(),    SubOp::getOperationName(),
          MulOp::getOperationName(),    DivOp::getOperationName(),
          MaxOp::getOperationName(),    MinOp::getOperationName(),
          PowOp::getOperationName(),    NegOp::getOperationName(),
          AbsOp::getOperationName(),    ExpOp::getOperationName(),
          LogOp::getOperationName(),    SqrtOp::getOperationName(),
          RsqrtOp::getOperationName(),  TanhOp::getOperationName(),
          CosOp::getOperationName(),    SinOp::getOperationName(),
          ErfOp::getOperationName(),    SigmoidOp::getOperationName(),
          SiluOp::getOperationName(),   ReluOp::getOperationName(),
          GeluOp::getOperationName(),   CompareOp::getOperationName(),
          SelectOp::getOperationName(), CastOp::getOperationName(),
          DropoutOp::getOperationName()})
      patterns.add<LowerElementwise>(ctx, name);
    patterns.add<LowerArgmax, LowerBroadcast, LowerConcat, LowerConstant,
                 LowerEmbedding, LowerEmbeddingGrad, LowerFp8Blocks,
                 LowerGather, LowerMatmul, LowerPad, LowerReshape, LowerSlice,
                 LowerSplit, LowerIdentity<StopGradientOp>,
                 LowerIdentity<AxisCopyOp>, LowerTranspose>(ctx);
    populateWindowLoweringPatterns(patterns);
    patterns.add<LowerReduce<ReduceSumOp, Combine::Sum>,
                 LowerReduce<ReduceMeanOp, Combine::Sum, /*Mean=*/true>,
                 LowerReduce<ReduceMaxOp, Combine::Max>,
                 LowerReduce<ReduceMinOp, Combine::Min>>(ctx);
    // The lowerings other dialects bring (plugins' dialects).
    llvm::SmallPtrSet<Dialect *, 4> lowers;
    lowers.insert(ctx->getLoadedDialect<AnvilDialect>());
    for (Dialect *dialect : ctx->getLoadedDialects())
      if (auto *lowering =
              dialect
                  ->getRegisteredInterface<ConvertToLinalgDialectInterface>()) {
        lowering->populateConvertToLinalgPatterns(patterns);
        lowers.insert(dialect);
      }

    // Report every op without a lowering up front, with the list of those
    // that have one, rather than leaving a half-lowered function.
    llvm::StringSet<> lowered;
    for (const auto &pattern : patterns.getNativePatterns())
      if (std::optional<OperationName> root = pattern->getRootKind())
        lowered.insert(root->getStringRef());
    bool missing = false;
    // Collectives, fused attention, the FP8 GEMMs and the GEMMs with
    // epilogues stay: anvil-bufferize turns them into runtime calls.
    for (StringRef name :
         {AllReduceOp::getOperationName(), AxisIndexOp::getOperationName(),
          AllGatherOp::getOperationName(), ReduceScatterOp::getOperationName(),
          AxisSliceOp::getOperationName(), FlashAttentionOp::getOperationName(),
          FlashAttentionGradOp::getOperationName(),
          LinearOp::getOperationName(), LinearGeluOp::getOperationName(),
          MatmulF8Op::getOperationName(), LinearGeluF8Op::getOperationName(),
          MatmulGeluBiasGradOp::getOperationName(),
          MatmulBiasGradOp::getOperationName()})
      lowered.insert(name);
    // So do the convolutions marked to run as a library call
    // (anvil-library-convs).
    auto libraryCall = [](Operation *op) {
      return op->hasAttr(AnvilDialect::kLibraryCallAttrName);
    };
    getOperation().walk([&](Operation *op) {
      if (!lowers.contains(op->getDialect()) ||
          lowered.contains(op->getName().getStringRef()) || libraryCall(op))
        return;
      SmallVector<StringRef> names;
      for (const auto &entry : lowered)
        names.push_back(entry.getKey());
      llvm::sort(names);
      op->emitError("anvil-convert-to-linalg: no lowering for '")
          << op->getName()
          << "' (composite ops need anvil-decompose first; ops with a "
             "lowering: "
          << llvm::join(names, ", ") << ")";
      missing = true;
    });
    if (missing)
      return signalPassFailure();

    // GEMM epilogues first, while each add still sees its matmul.
    RewritePatternSet epilogues(ctx);
    epilogues.add<LowerMatmulPlus>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(epilogues))))
      return signalPassFailure();
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation().walk([&](Operation *op) {
      if (!lowers.contains(op->getDialect()) ||
          isa<AllReduceOp, AxisIndexOp, AllGatherOp, ReduceScatterOp,
              AxisSliceOp, FlashAttentionOp, FlashAttentionGradOp, LinearOp,
              LinearGeluOp, MatmulF8Op, LinearGeluF8Op, MatmulGeluBiasGradOp,
              MatmulBiasGradOp>(op) ||
          libraryCall(op))
        return WalkResult::advance();
      op->emitError("anvil-convert-to-linalg: failed to lower '")
          << op->getName() << "'";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

MLIR_DEFINE_EXPLICIT_TYPE_ID(mlir::anvil::ConvertToLinalgDialectInterface)
