//===- AnvilToLinalgWindows.cpp - convolutions, pooling, upsampling -------===//
//
// The sliding-window ops of anvil-convert-to-linalg: convolutions (any
// rank, groups, dilation) and their filter gradient as generics over the
// window, pooling and max pooling's gradient, nearest upsampling.
//
//===----------------------------------------------------------------------===//

#include "AnvilToLinalgPatterns.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::anvil;
using namespace mlir::anvil::lowering;

namespace {

using utils::IteratorType;

/// `x` padded with `value`: pad_low / pad_high per spatial dimension of an
/// (N, C, spatial...) tensor.
Value padSpatial(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> low,
                 ArrayRef<int64_t> high, Value value) {
  auto t = tensorType(x);
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return x;
  SmallVector<int64_t> shape(t.getShape()), offsets(t.getRank(), 0);
  for (size_t i = 0; i < low.size(); ++i) {
    shape[2 + i] += low[i] + high[i];
    offsets[2 + i] = low[i];
  }
  Value dest = filled(b, loc, t.clone(shape), value);
  return insertAlong(b, loc, dest, {x}, -1, offsets);
}

/// Splits dimension 1 of `v` (N, C, rest...) into (N, G, C / G, rest...).
Value splitGroups(OpBuilder &b, Location loc, Value v, int64_t groups,
                  int64_t dim = 1) {
  auto t = tensorType(v);
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] /= groups;
  shape.insert(shape.begin() + dim, groups);
  return reshapeTensor(b, loc, v, t.clone(shape));
}

/// The body of a convolution's multiply-accumulate: acc + x * w, the
/// operands widened to the accumulator's type (f32 for bf16: exact
/// products).
Value multiplyAdd(OpBuilder &b, Location l, ValueRange a) {
  Type acc = a[2].getType();
  auto widen = [&](Value v) -> Value {
    return v.getType() == acc ? v : arith::ExtFOp::create(b, l, acc, v);
  };
  return combine(b, l, Combine::Sum, a[2],
                 arith::MulFOp::create(b, l, widen(a[0]), widen(a[1])));
}

/// The type a convolution with results of `out` sums in: f32 for bf16 and
/// f16 (rounded once at the end, by roundTo), else `out`.
RankedTensorType accumulatorOf(OpBuilder &b, RankedTensorType out) {
  return accumulatesInF32(out.getElementType()) ? out.clone(b.getF32Type())
                                                : out;
}

/// `sums` (accumulatorOf(out)) rounded to `out`'s element type.
Value roundTo(OpBuilder &b, Location loc, Value sums, RankedTensorType out) {
  if (tensorType(sums) == out)
    return sums;
  auto id = b.getMultiDimIdentityMap(out.getRank());
  return buildGeneric(b, loc, out, {sums}, {id},
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        return arith::TruncFOp::create(
                            nb, l, out.getElementType(), args[0]);
                      });
}

/// A convolution's input, zero-padded and viewed as (N, G, C / G, ...).
Value paddedGroups(OpBuilder &b, Location loc, Value input,
                   ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                   int64_t groups) {
  Value zero = scalarConstant(b, loc, tensorType(input).getElementType(), 0.0);
  return splitGroups(b, loc, padSpatial(b, loc, input, low, high, zero),
                     groups);
}

struct LowerConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    // A library call's (anvil-library-convs): anvil-bufferize makes it.
    if (op->hasAttr(AnvilDialect::kLibraryCallAttrName))
      return failure();
    // y[n, g, co, o] += xp[n, g, ci, o * stride + k * dilation] w[g, co, ci, k]
    // Loops: n, g, co, o... (parallel), ci, k... (reduction).
    Location loc = op.getLoc();
    // A bf16 convolution sums in f32 and rounds once (bias included).
    auto result = op.getType();
    auto out = accumulatorOf(rewriter, result);
    Type element = out.getElementType();
    int64_t groups = op.getGroups();
    Value zero = scalarConstant(rewriter, loc, element, 0.0);
    Value xp = paddedGroups(rewriter, loc, op.getInput(), op.getPadLow(),
                            op.getPadHigh(), groups);
    Value w = splitGroups(rewriter, loc, op.getFilter(), groups, 0);
    SmallVector<int64_t> grouped = {out.getDimSize(0), groups,
                                    out.getDimSize(1) / groups};
    grouped.append(out.getShape().drop_front(2).begin(),
                   out.getShape().drop_front(2).end());
    Value y = namedConv(rewriter, loc, op, xp, w, out, grouped, zero);
    if (!y)
      y = genericConv(rewriter, loc, op, xp, w, out.clone(grouped), zero);
    y = reshapeTensor(rewriter, loc, y, out);
    if (Value bias = op.getBias()) {
      auto id = rewriter.getMultiDimIdentityMap(out.getRank());
      auto bmap = AffineMap::get(out.getRank(), 0,
                                 {rewriter.getAffineDimExpr(1)}, getContext());
      y = buildGeneric(rewriter, loc, out, {y, bias}, {id, bmap},
                       [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                         Value bi =
                             a[1].getType() == element
                                 ? a[1]
                                 : arith::ExtFOp::create(b, l, element, a[1]);
                         return arith::AddFOp::create(b, l, a[0], bi);
                       });
    }
    rewriter.replaceOp(op, roundTo(rewriter, loc, y, result));
    return success();
  }

  /// The named linalg convolution for this case, or null: 1-3 D without
  /// groups (conv_{1,2,3}d_nc*_fc*), 2-D with groups (conv_2d_ngchw_fgchw);
  /// `xp` and `w` are padded and split into groups already.
  static Value namedConv(PatternRewriter &rewriter, Location loc, ConvOp op,
                         Value xp, Value w, RankedTensorType out,
                         ArrayRef<int64_t> grouped, Value zero) {
    int64_t s = out.getRank() - 2, groups = op.getGroups();
    auto strides = rewriter.getNamedAttr(
        "strides", rewriter.getI64TensorAttr(op.getStride()));
    auto dilations = rewriter.getNamedAttr(
        "dilations", rewriter.getI64TensorAttr(op.getDilation()));
    if (groups > 1) {
      if (s != 2)
        return Value();
      // The filter layout of conv_2d_ngchw_fgchw is (F, G, C, kh, kw).
      auto wt = tensorType(w);
      SmallVector<int64_t> fg = {wt.getDimSize(1), wt.getDimSize(0)};
      fg.append(wt.getShape().drop_front(2).begin(), wt.getShape().end());
      Value wf = linalg::TransposeOp::create(
                     rewriter, loc, w, emptyOf(rewriter, loc, wt.clone(fg)),
                     ArrayRef<int64_t>{1, 0, 2, 3, 4})
                     .getResult()[0];
      auto t = out.clone(grouped);
      return linalg::Conv2DNgchwFgchwOp::create(
                 rewriter, loc, TypeRange{t}, ValueRange{xp, wf},
                 ValueRange{filled(rewriter, loc, t, zero)},
                 {strides, dilations})
          .getResult(0);
    }
    // Without groups the split is a unit dimension: drop it again.
    auto drop = [&](Value v, int64_t dim) {
      auto t = tensorType(v);
      SmallVector<int64_t> shape(t.getShape());
      shape.erase(shape.begin() + dim);
      return reshapeTensor(rewriter, loc, v, t.clone(shape));
    };
    Value x = drop(xp, 1), f = drop(w, 0);
    Value init = filled(rewriter, loc, out, zero);
    switch (s) {
    case 1:
      return linalg::Conv1DNcwFcwOp::create(rewriter, loc, TypeRange{out},
                                            ValueRange{x, f}, ValueRange{init},
                                            {strides, dilations})
          .getResult(0);
    case 2:
      return linalg::Conv2DNchwFchwOp::create(
                 rewriter, loc, TypeRange{out}, ValueRange{x, f},
                 ValueRange{init}, {strides, dilations})
          .getResult(0);
    case 3:
      return linalg::Conv3DNcdhwFcdhwOp::create(
                 rewriter, loc, TypeRange{out}, ValueRange{x, f},
                 ValueRange{init}, {strides, dilations})
          .getResult(0);
    default:
      return Value();
    }
  }

  /// Any other convolution as a generic over the grouped layout.
  static Value genericConv(PatternRewriter &rewriter, Location loc, ConvOp op,
                           Value xp, Value w, RankedTensorType grouped,
                           Value zero) {
    int64_t s = grouped.getRank() - 3;
    unsigned nLoops = 3 + s + 1 + s;
    auto d = [&](unsigned i) { return rewriter.getAffineDimExpr(i); };
    SmallVector<AffineExpr> xe = {d(0), d(1), d(3 + s)},
                            we = {d(1), d(2), d(3 + s)},
                            ye = {d(0), d(1), d(2)};
    for (int64_t i = 0; i < s; ++i) {
      xe.push_back(d(3 + i) * op.getStride()[i] +
                   d(4 + s + i) * op.getDilation()[i]);
      we.push_back(d(4 + s + i));
      ye.push_back(d(3 + i));
    }
    auto map = [&](ArrayRef<AffineExpr> e) {
      return AffineMap::get(nLoops, 0, e, rewriter.getContext());
    };
    Value init = filled(rewriter, loc, grouped, zero);
    return buildReduction(rewriter, loc, {xp, w}, {map(xe), map(we)}, init,
                          map(ye), 3 + s, 1 + s, multiplyAdd);
  }
};

struct LowerConvFilterGrad : OpRewritePattern<ConvFilterGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvFilterGradOp op,
                                PatternRewriter &rewriter) const override {
    // A library call's (anvil-library-convs): anvil-bufferize makes it.
    if (op->hasAttr(AnvilDialect::kLibraryCallAttrName))
      return failure();
    // dw[g, co, ci, k] += grad[n, g, co, o] xp[n, g, ci, o * stride + k * d]
    // Loops: g, co, ci, k... (parallel), n, o... (reduction).
    Location loc = op.getLoc();
    auto result = op.getType();
    auto out = accumulatorOf(rewriter, result);
    Type element = out.getElementType();
    int64_t s = out.getRank() - 2, groups = op.getGroups();
    Value zero = scalarConstant(rewriter, loc, element, 0.0);
    Value xp = paddedGroups(rewriter, loc, op.getInput(), op.getPadLow(),
                            op.getPadHigh(), groups);
    Value g = splitGroups(rewriter, loc, op.getGrad(), groups);
    unsigned nLoops = 3 + s + 1 + s;
    auto d = [&](unsigned i) { return rewriter.getAffineDimExpr(i); };
    unsigned n = 3 + s;
    SmallVector<AffineExpr> ge = {d(n), d(0), d(1)}, xe = {d(n), d(0), d(2)},
                            we = {d(0), d(1), d(2)};
    for (int64_t i = 0; i < s; ++i) {
      ge.push_back(d(n + 1 + i));
      xe.push_back(d(n + 1 + i) * op.getStride()[i] +
                   d(3 + i) * op.getDilation()[i]);
      we.push_back(d(3 + i));
    }
    auto map = [&](ArrayRef<AffineExpr> e) {
      return AffineMap::get(nLoops, 0, e, rewriter.getContext());
    };
    SmallVector<int64_t> grouped = {groups, out.getDimSize(0) / groups,
                                    out.getDimSize(1)};
    grouped.append(out.getShape().drop_front(2).begin(),
                   out.getShape().drop_front(2).end());
    Value init = filled(rewriter, loc, out.clone(grouped), zero);
    Value dw = buildReduction(rewriter, loc, {g, xp}, {map(ge), map(xe)}, init,
                              map(we), 3 + s, 1 + s, multiplyAdd);
    rewriter.replaceOp(
        op,
        roundTo(rewriter, loc, reshapeTensor(rewriter, loc, dw, out), result));
    return success();
  }
};

/// Maps of a window sweep over (n, c, o..., k...): the padded input at
/// o * stride + k, the window shape tensor at k, the output at o.
struct WindowMaps {
  AffineMap input, window, output;
};
WindowMaps windowMaps(OpBuilder &b, int64_t s, ArrayRef<int64_t> stride) {
  unsigned nLoops = 2 + 2 * s;
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  SmallVector<AffineExpr> in = {d(0), d(1)}, win, outE = {d(0), d(1)};
  for (int64_t i = 0; i < s; ++i) {
    in.push_back(d(2 + i) * stride[i] + d(2 + s + i));
    win.push_back(d(2 + s + i));
    outE.push_back(d(2 + i));
  }
  MLIRContext *ctx = b.getContext();
  return {AffineMap::get(nLoops, 0, in, ctx),
          AffineMap::get(nLoops, 0, win, ctx),
          AffineMap::get(nLoops, 0, outE, ctx)};
}

template <typename OpTy, bool Max> struct LowerPool : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto out = op.getType();
    Type element = out.getElementType();
    int64_t s = out.getRank() - 2;
    Value padValue =
        scalarConstant(rewriter, loc, element, Max ? -INFINITY : 0.0);
    Value xp = padSpatial(rewriter, loc, op.getOperand(), op.getPadLow(),
                          op.getPadHigh(), padValue);
    Value window =
        tensor::EmptyOp::create(rewriter, loc, op.getWindow(), element);
    WindowMaps m = windowMaps(rewriter, s, op.getStride());
    Combine c = Max ? Combine::Max : Combine::Sum;
    Value init =
        filled(rewriter, loc, out, identityOf(rewriter, loc, element, c));
    Value y;
    if (s == 1 || s == 2) {
      // The named pooling ops (NCW / NCHW); 3-D has none in that layout.
      SmallVector<NamedAttribute> attrs = {
          rewriter.getNamedAttr("strides",
                                rewriter.getI64TensorAttr(op.getStride())),
          rewriter.getNamedAttr("dilations", rewriter.getI64TensorAttr(
                                                 SmallVector<int64_t>(s, 1)))};
      SmallVector<Value> ins = {xp, window}, outs = {init};
      Operation *pool =
          s == 1 ? (Max ? linalg::PoolingNcwMaxOp::create(
                              rewriter, loc, TypeRange{out}, ins, outs, attrs)
                              .getOperation()
                        : linalg::PoolingNcwSumOp::create(
                              rewriter, loc, TypeRange{out}, ins, outs, attrs)
                              .getOperation())
                 : (Max ? linalg::PoolingNchwMaxOp::create(
                              rewriter, loc, TypeRange{out}, ins, outs, attrs)
                              .getOperation()
                        : linalg::PoolingNchwSumOp::create(
                              rewriter, loc, TypeRange{out}, ins, outs, attrs)
                              .getOperation());
      y = pool->getResult(0);
    } else {
      y = buildReduction(rewriter, loc, {xp, window}, {m.input, m.window}, init,
                         m.output, 2 + s, s,
                         [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                           return combine(b, l, c, a[2], a[0]);
                         });
    }
    if constexpr (!Max) {
      // Divide by the window size, or by the count of real elements.
      Value count;
      int64_t size = 1;
      for (int64_t w : op.getWindow())
        size *= w;
      if (op.getCountIncludePad()) {
        count = filled(rewriter, loc, out,
                       scalarConstant(rewriter, loc, element, double(size)));
      } else {
        auto inType = op.getOperand().getType();
        Value ones = filled(rewriter, loc, inType,
                            scalarConstant(rewriter, loc, element, 1.0));
        Value onesPadded =
            padSpatial(rewriter, loc, ones, op.getPadLow(), op.getPadHigh(),
                       scalarConstant(rewriter, loc, element, 0.0));
        Value zeroInit = filled(rewriter, loc, out,
                                scalarConstant(rewriter, loc, element, 0.0));
        count = buildReduction(rewriter, loc, {onesPadded, window},
                               {m.input, m.window}, zeroInit, m.output, 2 + s,
                               s, [&](OpBuilder &b, Location l, ValueRange a) {
                                 return combine(b, l, Combine::Sum, a[2], a[0]);
                               });
      }
      auto id = rewriter.getMultiDimIdentityMap(out.getRank());
      y = buildGeneric(rewriter, loc, out, {y, count}, {id, id},
                       [](OpBuilder &b, Location l, ValueRange a) -> Value {
                         return arith::DivFOp::create(b, l, a[0], a[1]);
                       });
    }
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct LowerMaxPoolGrad : OpRewritePattern<MaxPoolGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPoolGradOp op,
                                PatternRewriter &rewriter) const override {
    // 1. Per output window, the flat offset of its first maximum.
    // 2. Per input position i and window offset k: the window o with
    //    o * stride + k = i + pad_low (if any) sends grad[o] when its
    //    maximum is at k.
    Location loc = op.getLoc();
    auto in = op.getType();
    auto gt = op.getGrad().getType();
    Type element = in.getElementType();
    int64_t s = in.getRank() - 2;
    ArrayRef<int64_t> win = op.getWindow(), stride = op.getStride(),
                      low = op.getPadLow();
    Value xp = padSpatial(rewriter, loc, op.getOperand(), low, op.getPadHigh(),
                          scalarConstant(rewriter, loc, element, -INFINITY));
    Value window = tensor::EmptyOp::create(rewriter, loc, win, element);
    WindowMaps m = windowMaps(rewriter, s, stride);
    Type i64 = rewriter.getI64Type();
    auto flatK = [&](OpBuilder &b, Location l) -> Value {
      Value k = arith::ConstantIndexOp::create(b, l, 0);
      for (int64_t i = 0; i < s; ++i)
        k = arith::AddIOp::create(
            b, l,
            arith::MulIOp::create(b, l, k,
                                  arith::ConstantIndexOp::create(b, l, win[i])),
            linalg::IndexOp::create(b, l, 2 + s + i));
      return arith::IndexCastOp::create(b, l, i64, k);
    };
    SmallVector<AffineMap> maps = {m.input, m.window, m.output, m.output};
    SmallVector<IteratorType> iterators(2 + s, IteratorType::parallel);
    iterators.append(s, IteratorType::reduction);
    Value bestInit = filled(rewriter, loc, gt,
                            scalarConstant(rewriter, loc, element, -INFINITY));
    Value idxInit = filled(rewriter, loc, gt.clone(i64),
                           scalarConstant(rewriter, loc, i64, 0));
    auto argmax = linalg::GenericOp::create(
        rewriter, loc, TypeRange{gt, gt.clone(i64)}, ValueRange{xp, window},
        ValueRange{bestInit, idxInit}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value take = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                             a[0], a[2]);
          linalg::YieldOp::create(
              b, l,
              ValueRange{
                  arith::SelectOp::create(b, l, take, a[0], a[2]),
                  arith::SelectOp::create(b, l, take, flatK(b, l), a[3])});
        });
    Value best = argmax.getResult(1);
    Value grad = op.getGrad();

    // 2. Loops (n, c, i..., k...) with a reduction over k.
    unsigned nLoops = 2 + 2 * s;
    auto d = [&](unsigned i) { return rewriter.getAffineDimExpr(i); };
    SmallVector<AffineExpr> winE, outE = {d(0), d(1)};
    for (int64_t i = 0; i < s; ++i) {
      winE.push_back(d(2 + s + i));
      outE.push_back(d(2 + i));
    }
    auto winMap = AffineMap::get(nLoops, 0, winE, getContext());
    auto outMap = AffineMap::get(nLoops, 0, outE, getContext());
    Value init =
        filled(rewriter, loc, in, scalarConstant(rewriter, loc, element, 0.0));
    Value dx = buildReduction(
        rewriter, loc, {window}, {winMap}, init, outMap, 2 + s, s,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
          SmallVector<Value> at = {linalg::IndexOp::create(b, l, 0),
                                   linalg::IndexOp::create(b, l, 1)};
          Value zeroI = arith::ConstantIndexOp::create(b, l, 0);
          for (int64_t i = 0; i < s; ++i) {
            // j = i + pad_low - k; a window o = j / stride when divisible.
            Value j = arith::SubIOp::create(
                b, l,
                arith::AddIOp::create(
                    b, l, linalg::IndexOp::create(b, l, 2 + i),
                    arith::ConstantIndexOp::create(b, l, low[i])),
                linalg::IndexOp::create(b, l, 2 + s + i));
            Value st = arith::ConstantIndexOp::create(b, l, stride[i]);
            Value nonNeg = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::sge, j, zeroI);
            Value jc = arith::SelectOp::create(b, l, nonNeg, j, zeroI);
            Value o = arith::DivUIOp::create(b, l, jc, st);
            Value exact = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::eq,
                arith::RemUIOp::create(b, l, jc, st), zeroI);
            Value inRange = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, o,
                arith::ConstantIndexOp::create(b, l, gt.getDimSize(2 + i)));
            valid = arith::AndIOp::create(
                b, l, valid,
                arith::AndIOp::create(
                    b, l, nonNeg, arith::AndIOp::create(b, l, exact, inRange)));
            at.push_back(arith::SelectOp::create(b, l, inRange, o, zeroI));
          }
          Value winner = tensor::ExtractOp::create(b, l, best, at);
          Value mine = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                             winner, flatK(b, l));
          Value g = tensor::ExtractOp::create(b, l, grad, at);
          Value use = arith::AndIOp::create(b, l, valid, mine);
          Value contrib = arith::SelectOp::create(
              b, l, use, g, scalarConstant(b, l, element, 0.0));
          return arith::AddFOp::create(b, l, a[1], contrib);
        });
    rewriter.replaceOp(op, dx);
    return success();
  }
};

struct LowerUpsample : OpRewritePattern<UpsampleNearestOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UpsampleNearestOp op,
                                PatternRewriter &rewriter) const override {
    // y[n, c, o...] = x[n, c, o / scale...]
    Value x = op.getOperand();
    ArrayRef<int64_t> scale = op.getScale();
    rewriter.replaceOp(
        op, buildGeneric(
                rewriter, op.getLoc(), op.getType(), {}, {},
                [&](OpBuilder &b, Location l, ValueRange) -> Value {
                  SmallVector<Value> at;
                  for (int64_t d = 0; d < op.getType().getRank(); ++d) {
                    Value i = linalg::IndexOp::create(b, l, d);
                    if (d >= 2)
                      i = arith::DivUIOp::create(
                          b, l, i,
                          arith::ConstantIndexOp::create(b, l, scale[d - 2]));
                    at.push_back(i);
                  }
                  return tensor::ExtractOp::create(b, l, x, at);
                }));
    return success();
  }
};

} // namespace

void mlir::anvil::lowering::populateWindowLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerConv, LowerConvFilterGrad, LowerMaxPoolGrad,
               LowerPool<AvgPoolOp, false>, LowerPool<MaxPoolOp, true>,
               LowerUpsample>(patterns.getContext());
}
