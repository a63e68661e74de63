//===- AnvilOps.cpp - type inference and verifiers of anvil ops ----------===//
//
// Result-type inference for every op whose result the operands and
// attributes determine, and the verifiers of the ops whose result type is
// chosen by the user (reshape, broadcast). Every failure names the operand
// or attribute at fault and the values that disagree; inference failures go
// through emitOptionalError so that builders probing a type stay silent.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "OpVerification.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::anvil;
using namespace mlir::anvil::detail;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Type mlir::anvil::getBoolTensorType(Type type) {
  return cast<ShapedType>(type).clone(IntegerType::get(type.getContext(), 1));
}

namespace {

/// Checks that `dim` indexes a dimension of a rank-`rank` tensor.
template <typename OpTy>
LogicalResult checkDim(const Fail<OpTy> &fail, StringRef what, int64_t dim,
                       int64_t rank) {
  if (dim < 0 || dim >= rank)
    return fail(what, " = ", dim, " is out of range for rank ", rank,
                " (expected 0 <= ", what, " < ", rank, ")");
  return success();
}

/// Checks an optional per-channel or per-feature operand against `expected`.
template <typename OpTy>
LogicalResult checkShapeOf(const Fail<OpTy> &fail, StringRef name, Value v,
                           ArrayRef<int64_t> expected, Type elementType) {
  if (!v)
    return success();
  RankedTensorType t = tensorType(v);
  if (t.getShape() != expected)
    return fail(name, " has shape ", fmt(t.getShape()), ", expected ",
                fmt(expected));
  if (t.getElementType() != elementType)
    return fail(name, " has element type ", t.getElementType(), ", expected ",
                elementType, " (the operand's)");
  return success();
}

/// Checks that each spatial attribute array has `n` entries.
template <typename OpTy>
LogicalResult
checkSpatialArrays(const Fail<OpTy> &fail, int64_t n,
                   ArrayRef<std::pair<StringRef, ArrayRef<int64_t>>> arrays) {
  for (auto [name, values] : arrays)
    if (static_cast<int64_t>(values.size()) != n)
      return fail(name, " has ", values.size(), " entries, expected ", n,
                  " (one per spatial dimension)");
  return success();
}

/// Shape of a reduction over `dims` (already checked).
SmallVector<int64_t> reducedShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> dims, bool keepDims) {
  SmallVector<int64_t> out;
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      out.push_back(size);
    else if (keepDims)
      out.push_back(1);
  }
  return out;
}

/// Checked int64 arithmetic for dimension sizes: `overflowed` turns true
/// when any step overflows, and the caller reports the size as too large.
struct DimMath {
  bool overflowed = false;
  int64_t add(int64_t a, int64_t b) {
    int64_t r;
    overflowed |= static_cast<bool>(llvm::AddOverflow(a, b, r));
    return r;
  }
  int64_t sub(int64_t a, int64_t b) {
    int64_t r;
    overflowed |= static_cast<bool>(llvm::SubOverflow(a, b, r));
    return r;
  }
  int64_t mul(int64_t a, int64_t b) {
    int64_t r;
    overflowed |= static_cast<bool>(llvm::MulOverflow(a, b, r));
    return r;
  }
};

/// Output size of a window sweep (convolution or pooling); <= 0 when the
/// window does not fit. Arguments are non-negative (strides positive).
int64_t windowOutput(DimMath &math, int64_t in, int64_t padLow, int64_t padHigh,
                     int64_t window, int64_t stride, int64_t dilation) {
  int64_t span = math.add(math.mul(dilation, window - 1), 1);
  int64_t padded = math.add(math.add(in, padLow), padHigh);
  if (math.overflowed || padded < span)
    return 0;
  return (padded - span) / stride + 1;
}

} // namespace

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOpError("rate = ")
           << formatDouble(rate) << " must lie in [0, 1)";
  return success();
}

StringRef mlir::anvil::modulePathOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (StringRef path = modulePathOf(part); !path.empty())
        return path;
  return "";
}

bool mlir::anvil::isInModule(StringRef path, StringRef module) {
  return path.starts_with(module) &&
         (path.size() == module.size() || path[module.size()] == '.');
}

LogicalResult Fp8QuantizeOp::verify() {
  auto eightBit = [](std::optional<Type> t) {
    return !t || isa<Float8E4M3FNType, Float8E5M2Type>(*t);
  };
  if (!getForward() && !getBackward())
    return emitOpError("needs a forward format, a backward format or both");
  if (!eightBit(getForward()) || !eightBit(getBackward()))
    return emitOpError("formats must be f8E4M3FN or f8E5M2");
  if (std::optional<StringRef> axis = getAmaxAxis();
      axis && meshAxisSize(*this, *axis) < 0)
    return emitOpError("amax_axis '")
           << *axis << "' is not an axis of the module's anvil.mesh";
  std::optional<int64_t> size = getBlockSize(), dim = getBlockDim();
  if (size.has_value() != dim.has_value())
    return emitOpError("needs both block_size and block_dim, or neither");
  if (size && dim) {
    auto type = getOperand().getType();
    if (*dim < 0 || *dim >= type.getRank())
      return emitOpError("block dim ")
             << *dim << " is not a dimension of " << type;
    if (*size < 1 ||
        (!type.isDynamicDim(*dim) && type.getDimSize(*dim) % *size != 0))
      return emitOpError("blocks of ")
             << *size << " do not divide dimension " << *dim << " of " << type;
    if (getScale() || getAmaxAxis() || getHistory())
      return emitOpError(
          "block scaling takes no scale, amax_axis or history (each block's "
          "scale comes from the block)");
  }
  if (getScale() && getAmaxAxis())
    return emitOpError("a given scale takes no amax_axis");
  if (getScale() && !getForward())
    return emitOpError("a given scale needs a forward format");
  return success();
}

Value Fp8QuantizeOp::quantizeGradient(OpBuilder &builder, Value gradient) {
  std::optional<Type> backward = getBackward();
  if (!backward)
    return gradient;
  IntegerAttr blockDim;
  if (getBlockSize())
    blockDim = builder.getI64IntegerAttr(
        cast<RankedTensorType>(gradient.getType()).getRank() - 1);
  StringAttr history = getHistoryAttr();
  if (history && getForward())
    history = builder.getStringAttr(history.getValue() + ".grad");
  return Fp8QuantizeOp::create(
      builder, getLoc(), gradient, /*scale=*/Value(), TypeAttr::get(*backward),
      TypeAttr(), getBlockSizeAttr(), blockDim, getAmaxAxisAttr(), history);
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getOperand().getType(), out = getResult().getType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("operand has ")
           << in.getNumElements() << " elements (" << in
           << ") but the result has " << out.getNumElements() << " (" << out
           << ")";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  Fail<TransposeOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return fail("permutation ", fmt(perm), " has ", perm.size(),
                " entries, but the operand has rank ", in.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return fail("permutation ", fmt(perm), " is not a permutation of [0, ",
                  in.getRank(), ")");
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  inferred.push_back(in.clone(shape));
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto in = getOperand().getType(), out = getResult().getType();
  ArrayRef<int64_t> dims = getDimensions();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError("dims ")
           << fmt(dims) << " has " << dims.size()
           << " entries, but the operand has rank " << in.getRank();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= out.getRank())
      return emitOpError("dims[")
             << i << "] = " << d << " is out of range for the result rank "
             << out.getRank();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError("dims ")
             << fmt(dims) << " must be strictly increasing";
    int64_t inSize = in.getDimSize(i), outSize = out.getDimSize(d);
    if (inSize != 1 && inSize != outSize)
      return emitOpError("operand dimension ")
             << i << " has size " << inSize << ", which can only broadcast to "
             << inSize << " or from 1, but result dimension " << d
             << " has size " << outSize;
  }
  return success();
}

static ParseResult parseSliceRanges(OpAsmParser &parser,
                                    DenseI64ArrayAttr &start,
                                    DenseI64ArrayAttr &limit,
                                    DenseI64ArrayAttr &stride) {
  SmallVector<int64_t> starts, limits, strides;
  auto parseRange = [&]() -> ParseResult {
    int64_t a, b, c;
    if (parser.parseInteger(a) || parser.parseColon() ||
        parser.parseInteger(b) || parser.parseColon() || parser.parseInteger(c))
      return failure();
    starts.push_back(a);
    limits.push_back(b);
    strides.push_back(c);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseRange))
    return failure();
  Builder &b = parser.getBuilder();
  start = b.getDenseI64ArrayAttr(starts);
  limit = b.getDenseI64ArrayAttr(limits);
  stride = b.getDenseI64ArrayAttr(strides);
  return success();
}

static void printSliceRanges(OpAsmPrinter &p, Operation *,
                             DenseI64ArrayAttr start, DenseI64ArrayAttr limit,
                             DenseI64ArrayAttr stride) {
  p << "[";
  for (size_t i = 0, e = start.size(); i < e; ++i) {
    if (i)
      p << ", ";
    p << start[i] << ":" << limit[i] << ":" << stride[i];
  }
  p << "]";
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  Fail<SliceOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit(),
                    stride = adaptor.getStride();
  int64_t rank = in.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(stride.size()) != rank)
    return fail("has ", start.size(), " ranges, but the operand has rank ",
                rank);
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (stride[i] < 1)
      return fail("stride of dimension ", i, " is ", stride[i],
                  ", expected at least 1");
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > in.getDimSize(i))
      return fail("range ", start[i], ":", limit[i], " of dimension ", i,
                  " is not within [0, ", in.getDimSize(i), "]");
    int64_t extent = limit[i] - start[i];
    shape.push_back(extent == 0 ? 0 : (extent - 1) / stride[i] + 1);
  }
  inferred.push_back(in.clone(shape));
  return success();
}

namespace {
/// concat(reshape(g#0), reshape(g#1), reshape(g#2)) along dimension 2, of
/// the three gradients of one bshd anvil.flash_attention_grad, each
/// reshaped (B, T, H, D) -> (B, T, H D) and used only there (the VJP of a
/// fused q/k/v projection's split): the op's packed form, whose kernels
/// write each gradient into its columns of the concatenation.
struct PackFlashAttentionGrads : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp concat,
                                PatternRewriter &rewriter) const override {
    if (concat.getDim() != 2 || concat.getInputs().size() != 3)
      return failure();
    FlashAttentionGradOp grad;
    SmallVector<Operation *> reshapes;
    for (auto [i, input] : llvm::enumerate(concat.getInputs())) {
      auto reshape = input.getDefiningOp<ReshapeOp>();
      if (!reshape || !reshape->hasOneUse())
        return failure();
      auto result = dyn_cast<OpResult>(reshape.getOperand());
      auto op =
          result ? dyn_cast<FlashAttentionGradOp>(result.getOwner()) : nullptr;
      if (!op || (grad && op != grad) || result.getResultNumber() != i ||
          !result.hasOneUse())
        return failure();
      grad = op;
      ArrayRef<int64_t> from =
                            cast<RankedTensorType>(result.getType()).getShape(),
                        to = cast<RankedTensorType>(input.getType()).getShape();
      if (to.size() != 3 || to[0] != from[0] || to[1] != from[1])
        return failure(); // (B, T, H, D) -> (B, T, H D)
      reshapes.push_back(reshape);
    }
    if (!grad.getBshd() || grad.getPackedGrads() ||
        grad.getQuery().getType().getDimSize(1) !=
            grad.getKey().getType().getDimSize(1))
      return failure();
    rewriter.setInsertionPoint(grad);
    auto packed = FlashAttentionGradOp::create(
        rewriter, grad.getLoc(), grad.getQuery(), grad.getKey(),
        grad.getValue(), grad.getResult(), grad.getLse(), grad.getResultGrad(),
        grad.getKeyBias(), grad.getCausal(), grad.getScaleAttr(),
        grad.getBf16Gemms(),
        /*bshd=*/true, /*packed_grads=*/true);
    for (NamedAttribute attr : grad->getDiscardableAttrs())
      packed->setDiscardableAttr(attr.getName(), attr.getValue());
    rewriter.replaceOp(concat, packed->getResult(0));
    for (Operation *reshape : reshapes)
      rewriter.eraseOp(reshape);
    rewriter.eraseOp(grad);
    return success();
  }
};
} // namespace

void ConcatOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<PackFlashAttentionGrads>(context);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  Fail<ConcatOp> fail{loc};
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail("needs at least one input");
  RankedTensorType first = tensorType(inputs[0]);
  int64_t dim = adaptor.getDim();
  if (failed(checkDim(fail, "dim", dim, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  DimMath math;
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    RankedTensorType t = tensorType(v);
    if (t.getElementType() != first.getElementType() ||
        t.getRank() != first.getRank())
      return fail("input #", i + 1, " has type ", t,
                  ", which does not match input #0 of type ", first);
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != dim && t.getDimSize(d) != first.getDimSize(d))
        return fail("input #", i + 1, " has size ", t.getDimSize(d),
                    " in dimension ", d, " but input #0 has ",
                    first.getDimSize(d), " (only dimension ", dim,
                    " may differ)");
    shape[dim] = math.add(shape[dim], t.getDimSize(dim));
  }
  if (math.overflowed)
    return fail("the concatenated dimension ", dim, " is too large");
  inferred.push_back(first.clone(shape));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  Fail<SplitOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  int64_t dim = adaptor.getDim();
  if (failed(checkDim(fail, "dim", dim, in.getRank())))
    return failure();
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty())
    return fail("sizes must name at least one piece");
  int64_t total = 0;
  DimMath math;
  for (int64_t s : sizes) {
    if (s < 1)
      return fail("sizes ", fmt(sizes), " must all be positive");
    total = math.add(total, s);
  }
  if (math.overflowed)
    return fail("sizes ", fmt(sizes), " add up to more than 2^63");
  if (total != in.getDimSize(dim))
    return fail("sizes ", fmt(sizes), " add up to ", total, ", but dimension ",
                dim, " of the operand has size ", in.getDimSize(dim));
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(in.getShape());
    shape[dim] = s;
    inferred.push_back(in.clone(shape));
  }
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  Fail<PadOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (static_cast<int64_t>(low.size()) != in.getRank() ||
      static_cast<int64_t>(high.size()) != in.getRank())
    return fail("low ", fmt(low), " and high ", fmt(high),
                " need one entry per dimension of the rank-", in.getRank(),
                " operand");
  double value = adaptor.getValue().convertToDouble();
  if (auto intType = dyn_cast<IntegerType>(in.getElementType())) {
    // The value must be exactly representable in the element type.
    unsigned width = intType.getWidth();
    double lo = width == 1 ? 0.0 : -std::ldexp(1.0, width - 1);
    double hi = width == 1 ? 1.0 : std::ldexp(1.0, width - 1) - 1.0;
    if (!std::isfinite(value) || value != std::trunc(value) || value < lo ||
        value > hi)
      return fail("padding value ", formatDouble(value),
                  " is not representable in the element type ", intType);
  } else if (std::isnan(value)) {
    return fail("padding value is NaN");
  }
  SmallVector<int64_t> shape;
  DimMath math;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (low[i] < 0 || high[i] < 0)
      return fail("padding of dimension ", i, " is negative (low ", low[i],
                  ", high ", high[i], ")");
    shape.push_back(math.add(math.add(in.getDimSize(i), low[i]), high[i]));
  }
  if (math.overflowed)
    return fail("padded shape is too large (low ", fmt(low), ", high ",
                fmt(high), ")");
  inferred.push_back(in.clone(shape));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  Fail<GatherOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  RankedTensorType idx = tensorType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (failed(checkDim(fail, "axis", axis, in.getRank())))
    return failure();
  SmallVector<int64_t> shape(in.getShape().take_front(axis));
  llvm::append_range(shape, idx.getShape());
  llvm::append_range(shape, in.getShape().drop_front(axis + 1));
  inferred.push_back(in.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

template <typename OpTy>
static LogicalResult inferReduce(std::optional<Location> loc,
                                 typename OpTy::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  Fail<OpTy> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  ArrayRef<int64_t> dims = adaptor.getDims();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (failed(checkDim(fail, "dims entry", d, in.getRank())))
      return failure();
    if (i > 0 && d <= dims[i - 1])
      return fail("dims ", fmt(dims), " must be strictly increasing");
  }
  inferred.push_back(
      in.clone(reducedShape(in.getShape(), dims, adaptor.getKeepDims())));
  return success();
}

#define ANVIL_REDUCE_INFER(OpTy)                                               \
  LogicalResult OpTy::inferReturnTypes(                                        \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    return inferReduce<OpTy>(loc, adaptor, inferred);                          \
  }
ANVIL_REDUCE_INFER(ReduceSumOp)
ANVIL_REDUCE_INFER(ReduceMeanOp)
ANVIL_REDUCE_INFER(ReduceMaxOp)
ANVIL_REDUCE_INFER(ReduceMinOp)
#undef ANVIL_REDUCE_INFER

LogicalResult ArgmaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  Fail<ArgmaxOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  int64_t dim = adaptor.getDim();
  if (failed(checkDim(fail, "dim", dim, in.getRank())))
    return failure();
  inferred.push_back(RankedTensorType::get(
      reducedShape(in.getShape(), {dim}, adaptor.getKeepDims()),
      IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return checkDim(Fail<SoftmaxOp>{getLoc()}, "dim", getDim(),
                  getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return checkDim(Fail<LogSoftmaxOp>{getLoc()}, "dim", getDim(),
                  getType().getRank());
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhs = tensorType(adaptor.getLhs());
  RankedTensorType rhs = tensorType(adaptor.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return Fail<MatmulOp>{loc}("lhs element type ", lhs.getElementType(),
                               " differs from rhs element type ",
                               rhs.getElementType());
  return inferMatmul<MatmulOp>(loc, lhs, rhs, adaptor.getTransposeLhs(),
                               adaptor.getTransposeRhs(), lhs.getElementType(),
                               inferred);
}

LogicalResult MatmulF8Op::verify() {
  Fail<MatmulF8Op> fail{getLoc()};
  RankedTensorType lhs = tensorType(getLhs());
  RankedTensorType rhs = tensorType(getRhs());
  if (failed(verifyFp8Operands<MatmulF8Op>(getLoc(), lhs, rhs)))
    return failure();
  RankedTensorType result = getType();
  Type element = result.getElementType();
  if (!element.isF32() && !element.isBF16())
    return fail("result must be an f32 or bf16 tensor, got ", result);
  SmallVector<Type> product;
  if (failed(inferMatmul<MatmulF8Op>(getLoc(), lhs, rhs, getTransposeLhs(),
                                     getTransposeRhs(), element, product)))
    return failure();
  if (product[0] != result)
    return fail("result must be ", product[0], " (the product's shape), got ",
                result);
  auto columns = RankedTensorType::get({result.getShape().back()}, element);
  if (getBias() && !element.isBF16())
    return fail("a bias needs a bf16 result (cuBLASLt's FP8 GEMM adds a bf16 "
                "bias to a bf16 D), got ",
                result);
  if (getBias() && tensorType(getBias()) != columns)
    return fail("bias must be ", columns, " (one per column), got ",
                tensorType(getBias()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

template <typename OpTy>
static LogicalResult inferTrailingNorm(std::optional<Location> loc,
                                       RankedTensorType in, int64_t axis,
                                       Value scale, Value bias,
                                       SmallVectorImpl<Type> &inferred) {
  Fail<OpTy> fail{loc};
  if (failed(checkDim(fail, "axis", axis, in.getRank())))
    return failure();
  ArrayRef<int64_t> normalized = in.getShape().drop_front(axis);
  if (failed(checkShapeOf(fail, "scale", scale, normalized,
                          in.getElementType())) ||
      failed(checkShapeOf(fail, "bias", bias, normalized, in.getElementType())))
    return failure();
  inferred.push_back(in);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferTrailingNorm<LayerNormOp>(loc, tensorType(adaptor.getOperand()),
                                        adaptor.getAxis(), adaptor.getScale(),
                                        adaptor.getBias(), inferred);
}

LogicalResult RMSNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferTrailingNorm<RMSNormOp>(loc, tensorType(adaptor.getOperand()),
                                      adaptor.getAxis(), adaptor.getScale(),
                                      Value(), inferred);
}

/// Checks `(N, C, ...)` activations of rank >= `minRank` and per-channel
/// operands of shape `(C)`.
template <typename OpTy>
static LogicalResult checkChannels(std::optional<Location> loc,
                                   RankedTensorType in, int64_t minRank,
                                   ArrayRef<std::pair<StringRef, Value>> perC) {
  Fail<OpTy> fail{loc};
  if (in.getRank() < minRank)
    return fail("operand ", in, " must have rank ", minRank, " or more: (N, C",
                (minRank > 2 ? ", spatial..." : ""), ")");
  for (auto [name, v] : perC)
    if (failed(checkShapeOf(fail, name, v, {in.getDimSize(1)},
                            in.getElementType())))
      return failure();
  return success();
}

LogicalResult GroupNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType in = tensorType(adaptor.getOperand());
  if (failed(checkChannels<GroupNormOp>(
          loc, in, 2,
          {{"scale", adaptor.getScale()}, {"bias", adaptor.getBias()}})))
    return failure();
  int64_t groups = adaptor.getGroups(), channels = in.getDimSize(1);
  if (groups < 1 || channels % groups != 0)
    return Fail<GroupNormOp>{loc}("groups = ", groups, " must be positive ",
                                  "and divide the ", channels, " channels");
  inferred.push_back(in);
  return success();
}

LogicalResult
InstanceNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  RankedTensorType in = tensorType(adaptor.getOperand());
  if (failed(checkChannels<InstanceNormOp>(
          loc, in, 3,
          {{"scale", adaptor.getScale()}, {"bias", adaptor.getBias()}})))
    return failure();
  inferred.push_back(in);
  return success();
}

LogicalResult
BatchNormTrainOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  RankedTensorType in = tensorType(adaptor.getOperand());
  if (failed(checkChannels<BatchNormTrainOp>(
          loc, in, 2,
          {{"scale", adaptor.getScale()}, {"bias", adaptor.getBias()}})))
    return failure();
  inferred.push_back(in);
  inferred.push_back(tensorType(adaptor.getScale()));
  inferred.push_back(tensorType(adaptor.getScale()));
  return success();
}

LogicalResult BatchNormInferenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  RankedTensorType in = tensorType(adaptor.getOperand());
  if (failed(checkChannels<BatchNormInferenceOp>(
          loc, in, 2,
          {{"scale", adaptor.getScale()},
           {"bias", adaptor.getBias()},
           {"mean", adaptor.getMean()},
           {"variance", adaptor.getVariance()}})))
    return failure();
  inferred.push_back(in);
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings, RoPE, attention
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType table = tensorType(adaptor.getTable());
  RankedTensorType idx = tensorType(adaptor.getIndices());
  if (table.getRank() != 2)
    return Fail<EmbeddingOp>{loc}("table ", table,
                                  " must have rank 2: (vocabulary, width)");
  SmallVector<int64_t> shape(idx.getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(table.clone(shape));
  return success();
}

LogicalResult
EmbeddingGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  Fail<EmbeddingGradOp> fail{loc};
  RankedTensorType grad = tensorType(adaptor.getGrad());
  RankedTensorType idx = tensorType(adaptor.getIndices());
  int64_t rows = adaptor.getRows();
  if (grad.getRank() != idx.getRank() + 1 ||
      grad.getShape().drop_back() != idx.getShape())
    return fail("grad ", grad, " must have the indices' shape ",
                fmt(idx.getShape()), " plus a row width");
  if (rows < 1)
    return fail("rows = ", rows, " must be at least 1");
  inferred.push_back(grad.clone({rows, grad.getShape().back()}));
  return success();
}

LogicalResult
EmbeddingBagOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  Fail<EmbeddingBagOp> fail{loc};
  RankedTensorType table = tensorType(adaptor.getTable());
  RankedTensorType idx = tensorType(adaptor.getIndices());
  if (table.getRank() != 2)
    return fail("table ", table, " must have rank 2: (vocabulary, width)");
  if (idx.getRank() != 2)
    return fail("indices ", idx, " must have rank 2: (bags, bag size)");
  inferred.push_back(table.clone({idx.getDimSize(0), table.getDimSize(1)}));
  return success();
}

LogicalResult RopeOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  Fail<RopeOp> fail{loc};
  RankedTensorType x = tensorType(adaptor.getOperand());
  if (x.getRank() < 2)
    return fail("operand ", x, " must have rank 2 or more: (..., T, D)");
  int64_t t = x.getDimSize(x.getRank() - 2), d = x.getDimSize(x.getRank() - 1);
  if (d % 2 != 0)
    return fail("head dimension D = ", d, " of the operand must be even");
  if (failed(checkShapeOf(fail, "cos", adaptor.getCos(), {t, d / 2},
                          x.getElementType())) ||
      failed(checkShapeOf(fail, "sin", adaptor.getSin(), {t, d / 2},
                          x.getElementType())))
    return failure();
  inferred.push_back(x);
  return success();
}

/// The checks anvil.attention and the flash attention ops share: query,
/// key and value of one element type and of compatible (B, H, T, D)
/// shapes, grouped heads, causal alignment and the scale.
template <typename FailFn>
static LogicalResult
checkAttentionOperands(const FailFn &fail, RankedTensorType q,
                       RankedTensorType k, RankedTensorType v, bool causal,
                       FloatAttr scale) {
  for (auto [name, t] : {std::pair<StringRef, RankedTensorType>{"query", q},
                         {"key", k},
                         {"value", v}}) {
    if (t.getRank() != 4)
      return fail(name, " ", t, " must have rank 4: (B, H, T, D)");
    if (t.getElementType() != q.getElementType())
      return fail(name, " has element type ", t.getElementType(),
                  ", query has ", q.getElementType());
  }
  int64_t b = q.getDimSize(0), hq = q.getDimSize(1), tq = q.getDimSize(2),
          d = q.getDimSize(3);
  int64_t hkv = k.getDimSize(1), tk = k.getDimSize(2);
  if (k.getDimSize(0) != b || v.getDimSize(0) != b)
    return fail("batch sizes differ: query ", b, ", key ", k.getDimSize(0),
                ", value ", v.getDimSize(0));
  if (k.getDimSize(3) != d)
    return fail("key head dimension ", k.getDimSize(3),
                " differs from the query's ", d);
  if (v.getDimSize(1) != hkv || v.getDimSize(2) != tk)
    return fail("value ", v, " must have the key's heads and length (", hkv,
                ", ", tk, ")");
  if (hkv < 1 || hq % hkv != 0)
    return fail("query heads ", hq, " must be a multiple of key/value heads ",
                hkv);
  if (causal && tq > tk)
    return fail("causal attention needs at least as many keys as queries (", tk,
                " keys, ", tq, " queries): with the bottom-right ",
                "alignment the first queries would see no key");
  if (scale) {
    double value = scale.getValueAsDouble();
    if (!std::isfinite(value) || value <= 0.0)
      return fail("scale = ", formatDouble(value),
                  " must be finite and positive");
  }
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  Fail<AttentionOp> fail{loc};
  RankedTensorType q = tensorType(adaptor.getQuery());
  RankedTensorType k = tensorType(adaptor.getKey());
  RankedTensorType v = tensorType(adaptor.getValue());
  if (failed(checkAttentionOperands(fail, q, k, v, adaptor.getCausal(),
                                    adaptor.getScaleAttr())))
    return failure();
  int64_t b = q.getDimSize(0), hq = q.getDimSize(1), tq = q.getDimSize(2),
          tk = k.getDimSize(2);
  if (Value maskValue = adaptor.getMask()) {
    RankedTensorType mask = tensorType(maskValue);
    ArrayRef<int64_t> ms = mask.getShape();
    bool ok = mask.getElementType() == q.getElementType() &&
              ((ms.size() == 2 && ms[0] == tq && ms[1] == tk) ||
               (ms.size() == 4 && (ms[0] == 1 || ms[0] == b) &&
                (ms[1] == 1 || ms[1] == hq) && ms[2] == tq && ms[3] == tk));
    if (!ok)
      return fail("mask ", mask, " must be (", tq, ", ", tk, ") or (", b,
                  "|1, ", hq, "|1, ", tq, ", ", tk, ") of element type ",
                  q.getElementType());
  }
  inferred.push_back(q.clone({b, hq, tq, v.getDimSize(3)}));
  return success();
}

/// `scale`, or 1 / sqrt(D) for a query of head dimension D.
static double scaleOrDefault(std::optional<APFloat> scale, Value query) {
  return scale
             ? scale->convertToDouble()
             : 1.0 /
                   std::sqrt(static_cast<double>(
                       cast<RankedTensorType>(query.getType()).getDimSize(3)));
}

double FlashAttentionOp::getScaleOrDefault() {
  return scaleOrDefault(getScale(), getQuery());
}
double FlashAttentionGradOp::getScaleOrDefault() {
  return scaleOrDefault(getScale(), getQuery());
}

/// `t` with dimensions 1 and 2 swapped: (B, T, H, D) <-> (B, H, T, D).
static RankedTensorType swapHeadsAndSequence(RankedTensorType t) {
  SmallVector<int64_t> shape(t.getShape());
  std::swap(shape[1], shape[2]);
  return t.clone(shape);
}

/// The operands of the flash attention ops, checked (a key bias (B, Tk) of
/// the op's element type, f32 with bf16 tensors), and the forward op's
/// result types: the output (B, Hq, Tq, Dv), or (B, Tq, Hq, Dv) with
/// `bshd`, and the log-sum-exp (B, Hq, Tq).
template <typename OpTy, typename Adaptor>
static FailureOr<std::pair<RankedTensorType, RankedTensorType>>
flashAttentionTypes(const Fail<OpTy> &fail, Adaptor adaptor) {
  RankedTensorType q = tensorType(adaptor.getQuery());
  RankedTensorType k = tensorType(adaptor.getKey());
  RankedTensorType v = tensorType(adaptor.getValue());
  bool bshd = adaptor.getBshd();
  if (bshd) {
    // Checked in the (B, H, T, D) layout the checks are written for.
    for (auto [name, t] :
         {std::pair<StringRef, RankedTensorType *>{"query", &q},
          {"key", &k},
          {"value", &v}}) {
      if (t->getRank() != 4)
        return fail(name, " ", *t, " must have rank 4: (B, T, H, D) (bshd)");
      *t = swapHeadsAndSequence(*t);
    }
  }
  // With bshd the messages name the operands as checked, (B, H, T, D).
  auto failChecked = [&](auto &&...args) {
    return bshd ? fail(args..., " (bshd operands, as (B, H, T, D))")
                : fail(args...);
  };
  if (failed(checkAttentionOperands(failChecked, q, k, v, adaptor.getCausal(),
                                    adaptor.getScaleAttr())))
    return failure();
  Type element = q.getElementType();
  if (!element.isF32() && !element.isF64() && !element.isBF16())
    return fail("element type ", element, " must be f32, f64 or bf16");
  if (element.isBF16() && !adaptor.getBf16Gemms())
    return fail("bf16 tensors need bf16_gemms (bf16 products)");
  int64_t b = q.getDimSize(0), h = q.getDimSize(1), t = q.getDimSize(2);
  RankedTensorType out = q.clone({b, h, t, v.getDimSize(3)});
  // The log-sum-exp and the key bias stay f32 with bf16 tensors.
  Type lseElement =
      element.isBF16() ? Float32Type::get(element.getContext()) : element;
  if (Value keyBias = adaptor.getKeyBias()) {
    auto expected = RankedTensorType::get({b, k.getDimSize(2)}, lseElement);
    if (tensorType(keyBias) != expected)
      return fail("key_bias ", tensorType(keyBias), " must be ", expected,
                  ": (batch, keys)");
  }
  return std::pair(bshd ? swapHeadsAndSequence(out) : out,
                   RankedTensorType::get({b, h, t}, lseElement));
}

LogicalResult
FlashAttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  auto types = flashAttentionTypes(Fail<FlashAttentionOp>{loc}, adaptor);
  if (failed(types))
    return failure();
  inferred.append({types->first, types->second});
  return success();
}

LogicalResult FlashAttentionGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  Fail<FlashAttentionGradOp> fail{loc};
  auto types = flashAttentionTypes(fail, adaptor);
  if (failed(types))
    return failure();
  // The forward op's results and the gradient of its result.
  auto [out, lse] = *types;
  for (auto [name, value, expected] :
       {std::tuple<StringRef, Value, RankedTensorType>{
            "result", adaptor.getResult(), out},
        {"lse", adaptor.getLse(), lse},
        {"result_grad", adaptor.getResultGrad(), out}})
    if (tensorType(value) != expected)
      return fail(name, " ", tensorType(value), " must be ", expected);
  RankedTensorType q = tensorType(adaptor.getQuery()),
                   k = tensorType(adaptor.getKey()),
                   v = tensorType(adaptor.getValue());
  if (!adaptor.getPackedGrads()) {
    inferred.append({q, k, v});
    return success();
  }
  // (B, T, H, D) each: one (B, T, Hq D + Hkv D + Hkv Dv).
  if (!adaptor.getBshd())
    return fail("packed_grads needs bshd: the gradients side by side in "
                "each (B, T) row");
  if (q.getDimSize(1) != k.getDimSize(1))
    return fail("packed_grads needs as many keys as queries (", k.getDimSize(1),
                " keys, ", q.getDimSize(1), " queries)");
  auto width = [](RankedTensorType t) {
    return t.getDimSize(2) * t.getDimSize(3);
  };
  inferred.push_back(q.clone(
      {q.getDimSize(0), q.getDimSize(1), width(q) + width(k) + width(v)}));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, upsampling
//===----------------------------------------------------------------------===//

namespace {
/// The geometry shared by convolutions and their transposes.
struct ConvGeometry {
  RankedTensorType input, filter;
  Value bias;
  ArrayRef<int64_t> stride, padLow, padHigh, dilation;
  int64_t groups;
};
} // namespace

template <typename OpTy>
static LogicalResult checkConvGeometry(const Fail<OpTy> &fail,
                                       const ConvGeometry &g) {
  int64_t rank = g.input.getRank();
  if (rank < 3 || rank > 5)
    return fail("input ", g.input,
                " must have rank 3, 4 or 5: (N, C, spatial...)");
  if (g.filter.getRank() != rank)
    return fail("filter ", g.filter, " must have the input's rank ", rank);
  if (g.filter.getElementType() != g.input.getElementType())
    return fail("filter element type ", g.filter.getElementType(),
                " differs from the input's ", g.input.getElementType());
  if (failed(checkSpatialArrays(fail, rank - 2,
                                {{"stride", g.stride},
                                 {"pad_low", g.padLow},
                                 {"pad_high", g.padHigh},
                                 {"dilation", g.dilation}})))
    return failure();
  for (int64_t i = 0; i < rank - 2; ++i) {
    if (g.stride[i] < 1 || g.dilation[i] < 1)
      return fail("stride and dilation must be at least 1, got stride ",
                  fmt(g.stride), " and dilation ", fmt(g.dilation));
    if (g.padLow[i] < 0 || g.padHigh[i] < 0)
      return fail("padding must not be negative, got pad_low ", fmt(g.padLow),
                  " and pad_high ", fmt(g.padHigh));
  }
  for (int64_t i = 0; i < rank - 2; ++i)
    if (g.input.getDimSize(i + 2) < 1 || g.filter.getDimSize(i + 2) < 1)
      return fail("spatial dimension ", i, " is empty in the input ", g.input,
                  " or the filter ", g.filter);
  if (g.groups < 1 || g.input.getDimSize(1) % g.groups != 0)
    return fail("groups = ", g.groups, " must be positive and divide the ",
                g.input.getDimSize(1), " input channels");
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  Fail<ConvOp> fail{loc};
  ConvGeometry g{tensorType(adaptor.getInput()),
                 tensorType(adaptor.getFilter()),
                 adaptor.getBias(),
                 adaptor.getStride(),
                 adaptor.getPadLow(),
                 adaptor.getPadHigh(),
                 adaptor.getDilation(),
                 adaptor.getGroups()};
  if (failed(checkConvGeometry(fail, g)))
    return failure();
  int64_t cin = g.input.getDimSize(1), cout = g.filter.getDimSize(0);
  if (g.filter.getDimSize(1) * g.groups != cin)
    return fail("filter ", g.filter, " has ", g.filter.getDimSize(1),
                " input channels per group, but the input has ", cin,
                " channels in ", g.groups, " group(s)");
  if (cout % g.groups != 0)
    return fail("groups = ", g.groups, " must divide the ", cout,
                " output channels");
  if (failed(
          checkShapeOf(fail, "bias", g.bias, {cout}, g.input.getElementType())))
    return failure();
  SmallVector<int64_t> shape{g.input.getDimSize(0), cout};
  for (int64_t i = 0; i < g.input.getRank() - 2; ++i) {
    DimMath math;
    int64_t out =
        windowOutput(math, g.input.getDimSize(i + 2), g.padLow[i], g.padHigh[i],
                     g.filter.getDimSize(i + 2), g.stride[i], g.dilation[i]);
    if (math.overflowed)
      return fail("spatial dimension ", i,
                  " overflows: the padding or dilation is too large");
    if (out < 1)
      return fail("the dilated filter (", g.filter.getDimSize(i + 2),
                  " taps) does not fit spatial dimension ", i,
                  " of the padded input (", g.input.getDimSize(i + 2), ")");
    shape.push_back(out);
  }
  inferred.push_back(g.input.clone(shape));
  return success();
}

LogicalResult
ConvTransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  Fail<ConvTransposeOp> fail{loc};
  ConvGeometry g{tensorType(adaptor.getInput()),
                 tensorType(adaptor.getFilter()),
                 adaptor.getBias(),
                 adaptor.getStride(),
                 adaptor.getPadLow(),
                 adaptor.getPadHigh(),
                 adaptor.getDilation(),
                 adaptor.getGroups()};
  if (failed(checkConvGeometry(fail, g)))
    return failure();
  ArrayRef<int64_t> outPad = adaptor.getOutputPadding();
  if (failed(checkSpatialArrays(fail, g.input.getRank() - 2,
                                {{"output_padding", outPad}})))
    return failure();
  int64_t cin = g.input.getDimSize(1);
  if (g.filter.getDimSize(0) != cin)
    return fail("filter ", g.filter, " must have ", cin,
                " rows (the input channels): (Cin, Cout/groups, k...)");
  int64_t cout = g.filter.getDimSize(1) * g.groups;
  if (failed(
          checkShapeOf(fail, "bias", g.bias, {cout}, g.input.getElementType())))
    return failure();
  SmallVector<int64_t> shape{g.input.getDimSize(0), cout};
  for (int64_t i = 0; i < g.input.getRank() - 2; ++i) {
    if (outPad[i] < 0 || outPad[i] >= std::max(g.stride[i], g.dilation[i]))
      return fail("output_padding ", fmt(outPad),
                  " must be non-negative and smaller than the stride or the "
                  "dilation");
    // (in - 1) * stride - pad_low - pad_high + dilation * (k - 1)
    //   + output_padding + 1
    DimMath math;
    int64_t out = math.add(
        math.sub(math.sub(math.mul(g.input.getDimSize(i + 2) - 1, g.stride[i]),
                          g.padLow[i]),
                 g.padHigh[i]),
        math.add(math.mul(g.dilation[i], g.filter.getDimSize(i + 2) - 1),
                 outPad[i] + 1));
    if (math.overflowed)
      return fail("spatial dimension ", i,
                  " of the result is too large: the stride or dilation is too "
                  "large");
    if (out < 1)
      return fail("spatial dimension ", i, " of the result would be empty (",
                  out, "): the padding is larger than the output");
    shape.push_back(out);
  }
  inferred.push_back(g.input.clone(shape));
  return success();
}

template <typename OpTy>
static LogicalResult inferPool(std::optional<Location> loc,
                               typename OpTy::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred) {
  Fail<OpTy> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  if (in.getRank() < 3)
    return fail("operand ", in,
                " must have rank 3 or more: (N, C, spatial...)");
  ArrayRef<int64_t> window = adaptor.getWindow(), stride = adaptor.getStride(),
                    lo = adaptor.getPadLow(), hi = adaptor.getPadHigh();
  if (failed(checkSpatialArrays(fail, in.getRank() - 2,
                                {{"window", window},
                                 {"stride", stride},
                                 {"pad_low", lo},
                                 {"pad_high", hi}})))
    return failure();
  SmallVector<int64_t> shape(in.getShape().take_front(2));
  for (int64_t i = 0; i < in.getRank() - 2; ++i) {
    if (window[i] < 1 || stride[i] < 1)
      return fail("window ", fmt(window), " and stride ", fmt(stride),
                  " must be at least 1");
    if (lo[i] < 0 || hi[i] < 0 || lo[i] >= window[i] || hi[i] >= window[i])
      return fail("padding (pad_low ", fmt(lo), ", pad_high ", fmt(hi),
                  ") must be non-negative and smaller than the window ",
                  fmt(window));
    if (in.getDimSize(i + 2) < 1)
      return fail("spatial dimension ", i, " of the operand ", in, " is empty");
    DimMath math;
    int64_t out = windowOutput(math, in.getDimSize(i + 2), lo[i], hi[i],
                               window[i], stride[i], /*dilation=*/1);
    if (out < 1)
      return fail("window ", window[i], " does not fit spatial dimension ", i,
                  " of the padded operand (", in.getDimSize(i + 2), ")");
    shape.push_back(out);
  }
  inferred.push_back(in.clone(shape));
  return success();
}

LogicalResult
ConvFilterGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  Fail<ConvFilterGradOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getInput());
  RankedTensorType grad = tensorType(adaptor.getGrad());
  int64_t rank = in.getRank();
  if (rank < 3 || rank > 5 || grad.getRank() != rank)
    return fail("input ", in, " and grad ", grad,
                " must have one rank, 3, 4 or 5: (N, C, spatial...)");
  if (grad.getElementType() != in.getElementType() ||
      grad.getDimSize(0) != in.getDimSize(0))
    return fail("grad ", grad, " must have the input's element type and batch");
  ArrayRef<int64_t> kernel = adaptor.getKernel();
  if (failed(checkSpatialArrays(fail, rank - 2,
                                {{"kernel", kernel},
                                 {"stride", adaptor.getStride()},
                                 {"pad_low", adaptor.getPadLow()},
                                 {"pad_high", adaptor.getPadHigh()},
                                 {"dilation", adaptor.getDilation()}})))
    return failure();
  for (int64_t i = 0; i < rank - 2; ++i)
    if (kernel[i] < 1 || adaptor.getStride()[i] < 1 ||
        adaptor.getDilation()[i] < 1 || adaptor.getPadLow()[i] < 0 ||
        adaptor.getPadHigh()[i] < 0)
      return fail("kernel, stride and dilation must be positive and the "
                  "padding non-negative");
  int64_t groups = adaptor.getGroups();
  if (groups < 1 || in.getDimSize(1) % groups || grad.getDimSize(1) % groups)
    return fail("groups = ", groups, " must divide the ", in.getDimSize(1),
                " input and ", grad.getDimSize(1), " output channels");
  SmallVector<int64_t> shape{grad.getDimSize(1), in.getDimSize(1) / groups};
  llvm::append_range(shape, kernel);
  inferred.push_back(in.clone(shape));
  return success();
}

LogicalResult MaxPoolGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  SmallVector<Type> pooled;
  if (failed(inferPool<MaxPoolGradOp>(loc, adaptor, pooled)))
    return failure();
  if (pooled[0] != adaptor.getGrad().getType())
    return Fail<MaxPoolGradOp>{loc}(
        "grad has type ", adaptor.getGrad().getType(),
        ", the pooling of the operand gives ", pooled[0]);
  inferred.push_back(adaptor.getOperand().getType());
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool<MaxPoolOp>(loc, adaptor, inferred);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPool<AvgPoolOp>(loc, adaptor, inferred);
}

LogicalResult
UpsampleNearestOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  Fail<UpsampleNearestOp> fail{loc};
  RankedTensorType in = tensorType(adaptor.getOperand());
  if (in.getRank() < 3)
    return fail("operand ", in,
                " must have rank 3 or more: (N, C, spatial...)");
  ArrayRef<int64_t> scale = adaptor.getScale();
  if (failed(checkSpatialArrays(fail, in.getRank() - 2, {{"scale", scale}})))
    return failure();
  SmallVector<int64_t> shape(in.getShape().take_front(2));
  DimMath math;
  for (int64_t i = 0; i < in.getRank() - 2; ++i) {
    if (scale[i] < 1)
      return fail("scale ", fmt(scale), " must be at least 1");
    shape.push_back(math.mul(in.getDimSize(i + 2), scale[i]));
  }
  if (math.overflowed)
    return fail("scale ", fmt(scale), " makes the result too large");
  inferred.push_back(in.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The loss result: a scalar, or `unreducedShape` with `none`.
static Type lossType(Reduction reduction, RankedTensorType like,
                     ArrayRef<int64_t> unreducedShape) {
  if (reduction == Reduction::none)
    return like.clone(unreducedShape);
  return like.clone(ArrayRef<int64_t>{});
}

LogicalResult
CrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  Fail<CrossEntropyOp> fail{loc};
  RankedTensorType logits = tensorType(adaptor.getLogits());
  RankedTensorType labels = tensorType(adaptor.getLabels());
  if (logits.getRank() < 1)
    return fail("logits must have a class dimension: (..., C)");
  if (labels.getShape() != logits.getShape().drop_back())
    return fail("labels have shape ", fmt(labels.getShape()),
                ", expected the logits' shape without the class dimension, ",
                fmt(logits.getShape().drop_back()));
  double smoothing = adaptor.getLabelSmoothing().convertToDouble();
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return fail("label_smoothing = ", formatDouble(smoothing),
                " must lie in [0, 1]");
  inferred.push_back(
      lossType(adaptor.getReduction(), logits, labels.getShape()));
  return success();
}

template <typename OpTy>
static LogicalResult
inferPairLoss(std::optional<Location> loc, typename OpTy::Adaptor adaptor,
              int64_t minRank, SmallVectorImpl<int64_t> &unreduced) {
  Fail<OpTy> fail{loc};
  RankedTensorType in = tensorType(adaptor.getInput());
  RankedTensorType target = tensorType(adaptor.getTarget());
  if (in != target)
    return fail("input ", in, " and target ", target, " must have one type");
  if (in.getRank() < minRank)
    return fail("input ", in, " must have rank ", minRank, " or more");
  unreduced.assign(in.getShape().begin(), in.getShape().end());
  return success();
}

LogicalResult FocalLossOp::verify() {
  if (!(getAlpha().convertToDouble() <= 1.0))
    return emitOpError("alpha = ")
           << formatDouble(getAlpha().convertToDouble())
           << " must be at most 1 (or negative to disable the weighting)";
  return success();
}

#define ANVIL_PAIR_LOSS_INFER(OpTy, MinRank, Unreduced)                        \
  LogicalResult OpTy::inferReturnTypes(                                        \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    SmallVector<int64_t> unreduced;                                            \
    if (failed(inferPairLoss<OpTy>(loc, adaptor, MinRank, unreduced)))         \
      return failure();                                                        \
    inferred.push_back(lossType(adaptor.getReduction(),                        \
                                tensorType(adaptor.getInput()), Unreduced));   \
    return success();                                                          \
  }
ANVIL_PAIR_LOSS_INFER(MSELossOp, 0, unreduced)
ANVIL_PAIR_LOSS_INFER(BCEWithLogitsLossOp, 0, unreduced)
ANVIL_PAIR_LOSS_INFER(FocalLossOp, 0, unreduced)
// Dice reduces the spatial dimensions always: `none` leaves (N, C).
ANVIL_PAIR_LOSS_INFER(DiceLossOp, 3, ArrayRef<int64_t>(unreduced).take_front(2))
#undef ANVIL_PAIR_LOSS_INFER

#define GET_OP_CLASSES
#include "anvil/Dialect/Anvil/IR/AnvilOps.cpp.inc"

int64_t mlir::anvil::meshAxisSize(Operation *op, StringRef axis) {
  auto module = op->getParentOfType<ModuleOp>();
  auto mesh =
      module
          ? module->getAttrOfType<DictionaryAttr>(AnvilDialect::kMeshAttrName)
          : DictionaryAttr();
  if (!mesh)
    return 1;
  auto size = mesh.getAs<IntegerAttr>(axis);
  return size ? size.getInt() : -1;
}

/// The ranks of a collective's axis, or an error naming the axis when the
/// module's mesh does not have it.
static FailureOr<int64_t> verifyAxis(Operation *op, StringRef axis) {
  if (axis.empty())
    return op->emitOpError("needs the name of a mesh axis (axis \"dp\")");
  int64_t n = meshAxisSize(op, axis);
  if (n < 0)
    return op->emitOpError("axis '")
           << axis << "' is not an axis of the module's "
           << AnvilDialect::kMeshAttrName << " "
           << op->getParentOfType<ModuleOp>()->getAttr(
                  AnvilDialect::kMeshAttrName);
  return n;
}

LogicalResult AllReduceOp::verify() {
  return success(succeeded(verifyAxis(*this, getAxis())));
}

LogicalResult AxisIndexOp::verify() {
  return success(succeeded(verifyAxis(*this, getAxis())));
}

LogicalResult AxisCopyOp::verify() {
  return success(succeeded(verifyAxis(*this, getAxis())));
}

/// `whole` is `n` blocks of `part` along dimension 0.
static LogicalResult verifyBlocks(Operation *op, StringRef axis,
                                  RankedTensorType whole, RankedTensorType part,
                                  StringRef wholeName, StringRef partName) {
  FailureOr<int64_t> n = verifyAxis(op, axis);
  if (failed(n))
    return failure();
  if (whole.getElementType() != part.getElementType() ||
      whole.getRank() != part.getRank() || whole.getRank() == 0 ||
      whole.getShape().drop_front() != part.getShape().drop_front() ||
      whole.getDimSize(0) != *n * part.getDimSize(0))
    return op->emitOpError("the ")
           << wholeName << " (" << whole << ") must be the " << *n
           << " blocks of axis '" << axis << "' along dimension 0, each the "
           << partName << " (" << part << ")";
  return success();
}

LogicalResult AllGatherOp::verify() {
  return verifyBlocks(*this, getAxis(), getType(), getOperand().getType(),
                      "result", "operand");
}

LogicalResult ReduceScatterOp::verify() {
  return verifyBlocks(*this, getAxis(), getOperand().getType(), getType(),
                      "operand", "result");
}

LogicalResult AxisSliceOp::verify() {
  return verifyBlocks(*this, getAxis(), getOperand().getType(), getType(),
                      "operand", "result");
}
