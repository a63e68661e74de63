//===- AnvilOpFolders.cpp - folders of anvil ops --------------------------===//
//
// Folds that are always profitable and exact up to the sign of a zero (like
// XLA, `x + 0` folds to `x` even for `x = -0.0`): identities with splat
// constants (`x + 0`, `x - 0`, `x * 1`, `x / 1`), `neg(neg(x))`, casts and
// broadcasts to the operand's own type, a float widened exactly and cast
// back (also across a reshape: a canonicalization pattern), and chains of
// reshapes and transposes, which fold into one op.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::anvil;

/// True if `attr` is a splat constant equal to `value` (0 or 1).
static bool isSplatOf(Attribute attr, int64_t value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType())) {
    APFloat f = dense.getSplatValue<APFloat>();
    return value == 0 ? f.isZero()
                      : f.isExactlyValue(static_cast<double>(value));
  }
  APInt i = dense.getSplatValue<APInt>();
  return value == 0 ? i.isZero() : i.isOne();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// The operand of `inner`, a cast that widens floats exactly, when `outer`
/// casts its result back to the operand's type; null otherwise.
static Value exactlyWidened(CastOp inner, Type outer) {
  if (!inner || getElementTypeOrSelf(inner.getOperand().getType()) !=
                    getElementTypeOrSelf(outer))
    return {};
  auto from = dyn_cast<FloatType>(getElementTypeOrSelf(outer));
  auto via = dyn_cast<FloatType>(getElementTypeOrSelf(inner.getType()));
  if (!from || !via)
    return {};
  // Every value of `from` exactly in `via`: its finite values, and its
  // infinities, NaNs and signed zeros where it has them.
  using llvm::APFloatBase;
  const llvm::fltSemantics &f = from.getFloatSemantics(),
                           &v = via.getFloatSemantics();
  if (!APFloatBase::isRepresentableBy(f, v) ||
      (APFloatBase::semanticsHasInf(f) && !APFloatBase::semanticsHasInf(v)) ||
      (APFloatBase::semanticsHasNaN(f) && !APFloatBase::semanticsHasNaN(v)) ||
      (APFloatBase::semanticsHasSignedRepr(f) &&
       !APFloatBase::semanticsHasSignedRepr(v)))
    return {};
  return inner.getOperand();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  // cast(cast(x)) with the inner one widening x exactly: x.
  if (Value x = exactlyWidened(getOperand().getDefiningOp<CastOp>(), getType());
      x && x.getType() == getType())
    return x;
  return {};
}

namespace {
/// cast(reshape(cast(x))), the inner cast widening x exactly and the outer
/// one casting back: reshape(x). (A bf16 tensor widened, reshaped and
/// rounded again for a bf16 GEMM.)
struct CastOfReshapedWidening : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto reshape = op.getOperand().getDefiningOp<ReshapeOp>();
    if (!reshape)
      return failure();
    Value x = exactlyWidened(reshape.getOperand().getDefiningOp<CastOp>(),
                             op.getType());
    if (!x)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), x);
    return success();
  }
};
} // namespace

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<CastOfReshapedWidening>(context);
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 0))
    return getRhs();
  return {};
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    return getLhs();
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 1))
    return getRhs();
  return {};
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    return getLhs();
  return {};
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  // reshape(reshape(x)) -> reshape(x): only the final shape matters.
  if (auto inner = getOperand().getDefiningOp<ReshapeOp>()) {
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand()))
    return dense.reshape(getType());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getOperand();
  // transpose(transpose(x, p), q) -> transpose(x, p o q); the identity
  // composition is removed by the next fold.
  if (auto inner = getOperand().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getOperandMutable().assign(inner.getOperand());
    setPermutation(composed);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return getOperand();
    return getResult();
  }
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  // Dimensions are strictly increasing, so equal types mean the identity.
  if (getOperand().getType() == getType())
    return getOperand();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (dense && dense.isSplat())
    return SplatElementsAttr::get(getType(), dense.getSplatValue<Attribute>());
  return {};
}
