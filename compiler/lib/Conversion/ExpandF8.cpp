//===- ExpandF8.cpp - f8E4M3FN and f8E5M2 conversions as integer ops
//-------===//
//
// truncf (f32 or f64 bits, width W, m source mantissa bits) to a format of
// M mantissa bits and exponent bias B:
//
//   normal results: r = |x| + (2^(s-1) - 1) + ((|x| >> s) & 1), s = m - M,
//                   code = (r >> s) - ((srcBias - B) << M)   (round to
//                   nearest even: the carry of a full mantissa moves into
//                   the exponent as it should)
//   subnormal results (|x| < 2^(1-B)): code = roundeven(|x| * 2^(B-1+M)),
//                   the product exact in the source type, rounded from its
//                   integer part and remainder
//   code > the largest finite code: the format's overflow (inf or NaN)
//
// extf: the fields moved into an f32, subnormals as man * 2^(1-B-M).
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILEXPANDF8CASTSPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// An 8-bit float format.
struct F8Format {
  unsigned mantissa; ///< Mantissa bits.
  int bias;          ///< Exponent bias.
  uint64_t maxCode;  ///< Largest finite magnitude's code.
  uint64_t overflow; ///< What a larger magnitude becomes (inf or NaN).
  uint64_t nan;      ///< The NaN code (sign apart).
  bool hasInfinity;  ///< E5M2: exponent all ones, mantissa 0.
};

std::optional<F8Format> formatOf(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return F8Format{3, 7, 0x7E, 0x7F, 0x7F, false};
  if (isa<Float8E5M2Type>(type))
    return F8Format{2, 15, 0x7B, 0x7C, 0x7E, true};
  return std::nullopt;
}

struct ExpandTruncF : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<F8Format> f = formatOf(op.getType());
    if (!f)
      return failure();
    Location loc = op.getLoc();
    Value x = op.getIn();
    auto source = cast<FloatType>(x.getType());
    if (!source.isF32() && !source.isF64()) {
      // bf16 and f16 are exactly f32 values.
      x = arith::ExtFOp::create(rewriter, loc, rewriter.getF32Type(), x);
      source = rewriter.getF32Type();
    }
    unsigned width = source.getWidth();
    unsigned srcMantissa = source.isF32() ? 23 : 52;
    int srcBias = source.isF32() ? 127 : 1023;
    Type intType = rewriter.getIntegerType(width);
    auto cst = [&](uint64_t v) {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getIntegerAttr(intType, v))
          .getResult();
    };
    auto fcst = [&](double v) {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getFloatAttr(source, v))
          .getResult();
    };
    Value bits = arith::BitcastOp::create(rewriter, loc, intType, x);
    Value signMask = cst(uint64_t(1) << (width - 1));
    Value abs = arith::AndIOp::create(
        rewriter, loc, bits,
        cst(width == 64 ? ~(uint64_t(1) << 63) : 0x7FFFFFFFu));
    Value sign = arith::ShRUIOp::create(
        rewriter, loc, arith::AndIOp::create(rewriter, loc, bits, signMask),
        cst(width - 8));

    // Normal results.
    unsigned shift = srcMantissa - f->mantissa;
    Value odd = arith::AndIOp::create(
        rewriter, loc, arith::ShRUIOp::create(rewriter, loc, abs, cst(shift)),
        cst(1));
    Value rounded = arith::AddIOp::create(
        rewriter, loc,
        arith::AddIOp::create(rewriter, loc, abs,
                              cst((uint64_t(1) << (shift - 1)) - 1)),
        odd);
    Value normal = arith::SubIOp::create(
        rewriter, loc,
        arith::ShRUIOp::create(rewriter, loc, rounded, cst(shift)),
        cst(uint64_t(srcBias - f->bias) << f->mantissa));

    // Subnormal results: s = |x| 2^(B-1+M) < 2^M, rounded to nearest even
    // from its integer part t and the remainder s - t (both exact). Not
    // math.roundeven: its expansion (math-expand-ops, trunc(s + 0.5) with
    // the tie fixed) rounds the f32 just below 0.5 up to 1.
    Value absF = arith::BitcastOp::create(rewriter, loc, source, abs);
    Value scaled = arith::MulFOp::create(
        rewriter, loc, absF, fcst(std::ldexp(1.0, f->bias - 1 + f->mantissa)));
    Value whole = arith::FPToUIOp::create(rewriter, loc, intType, scaled);
    Value rest = arith::SubFOp::create(
        rewriter, loc, scaled,
        arith::UIToFPOp::create(rewriter, loc, source, whole));
    Value above = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGT, rest, fcst(0.5));
    Value tie = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ,
                                      rest, fcst(0.5));
    Value wholeOdd = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(rewriter, loc, whole, cst(1)), cst(0));
    Value up = arith::OrIOp::create(
        rewriter, loc, above,
        arith::AndIOp::create(rewriter, loc, tie, wholeOdd));
    Value subnormal = arith::AddIOp::create(
        rewriter, loc, whole,
        arith::ExtUIOp::create(rewriter, loc, intType, up));
    Value isSubnormal =
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OLT, absF,
                              fcst(std::ldexp(1.0, 1 - f->bias)));
    Value code =
        arith::SelectOp::create(rewriter, loc, isSubnormal, subnormal, normal);

    Value overflows = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ugt, code, cst(f->maxCode));
    code = arith::SelectOp::create(rewriter, loc, overflows, cst(f->overflow),
                                   code);
    Value isNaN =
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::UNO, x, x);
    code = arith::SelectOp::create(rewriter, loc, isNaN, cst(f->nan), code);
    code = arith::OrIOp::create(rewriter, loc, code, sign);
    Value byte =
        arith::TruncIOp::create(rewriter, loc, rewriter.getI8Type(), code);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, op.getType(), byte);
    return success();
  }
};

struct ExpandExtF : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<F8Format> f = formatOf(op.getIn().getType());
    if (!f)
      return failure();
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    Type f32 = rewriter.getF32Type();
    auto cst = [&](uint32_t v) {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getI32IntegerAttr(v))
          .getResult();
    };
    Value byte = arith::BitcastOp::create(rewriter, loc, rewriter.getI8Type(),
                                          op.getIn());
    Value b = arith::ExtUIOp::create(rewriter, loc, i32, byte);
    Value sign = arith::ShLIOp::create(
        rewriter, loc, arith::AndIOp::create(rewriter, loc, b, cst(0x80)),
        cst(24));
    Value magnitude = arith::AndIOp::create(rewriter, loc, b, cst(0x7F));
    Value exponent =
        arith::ShRUIOp::create(rewriter, loc, magnitude, cst(f->mantissa));
    Value mantissa = arith::AndIOp::create(rewriter, loc, magnitude,
                                           cst((1u << f->mantissa) - 1));
    // Normal: the fields moved, the exponent rebiased.
    Value normal = arith::OrIOp::create(
        rewriter, loc,
        arith::ShLIOp::create(
            rewriter, loc,
            arith::AddIOp::create(rewriter, loc, exponent,
                                  cst(uint32_t(127 - f->bias))),
            cst(23)),
        arith::ShLIOp::create(rewriter, loc, mantissa, cst(23 - f->mantissa)));
    // Subnormal: mantissa * 2^(1 - bias - M), exact in f32.
    Value subnormalF = arith::MulFOp::create(
        rewriter, loc, arith::UIToFPOp::create(rewriter, loc, f32, mantissa),
        arith::ConstantOp::create(rewriter, loc,
                                  rewriter.getF32FloatAttr(std::ldexp(
                                      1.0f, 1 - f->bias - int(f->mantissa)))));
    Value subnormal = arith::BitcastOp::create(rewriter, loc, i32, subnormalF);
    Value isSubnormal = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq, exponent, cst(0));
    Value bits =
        arith::SelectOp::create(rewriter, loc, isSubnormal, subnormal, normal);
    // Specials: E4M3FN's NaN is S.1111.111; E5M2's exponent 31 is inf
    // (mantissa 0) or NaN.
    if (f->hasInfinity) {
      Value top = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        exponent, cst(0x1F));
      Value isInf = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::eq, mantissa, cst(0));
      Value special = arith::SelectOp::create(rewriter, loc, isInf,
                                              cst(0x7F800000), cst(0x7FC00000));
      bits = arith::SelectOp::create(rewriter, loc, top, special, bits);
    } else {
      Value isNaN = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::eq, magnitude, cst(0x7F));
      bits =
          arith::SelectOp::create(rewriter, loc, isNaN, cst(0x7FC00000), bits);
    }
    bits = arith::OrIOp::create(rewriter, loc, bits, sign);
    Value result = arith::BitcastOp::create(rewriter, loc, f32, bits);
    if (!op.getType().isF32())
      result = arith::ExtFOp::create(rewriter, loc, op.getType(), result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct AnvilExpandF8CastsPass
    : mlir::anvil::impl::AnvilExpandF8CastsPassBase<AnvilExpandF8CastsPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandTruncF, ExpandExtF>(&getContext());
    if (bf16)
      arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
