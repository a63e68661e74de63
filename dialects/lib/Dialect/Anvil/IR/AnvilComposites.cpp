//===- AnvilComposites.cpp - the insides of composite anvil ops -----------===//
//
// See AnvilComposites.h. Shapes in comments: q (B, Hq, Tq, D), k (B, Hkv,
// Tk, D), v (B, Hkv, Tk, Dv).
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilComposites.h"

#include <cmath>

using namespace mlir;
using namespace mlir::anvil;

/// A constant i64 vector `offset, offset + 1, ..., offset + n - 1`.
static Value iota(Emit &e, int64_t n, int64_t offset, Type elementType) {
  auto t = RankedTensorType::get({n}, elementType);
  SmallVector<APInt> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(APInt(elementType.getIntOrFloatBitWidth(), i + offset,
                      /*isSigned=*/true));
  return ConstantOp::create(e.b, e.loc, t, DenseElementsAttr::get(t, v));
}

Value mlir::anvil::emitAttentionProduct(Emit &e, AttentionOp op, Value lhs,
                                        Value rhs, bool transposeLhs,
                                        bool transposeRhs) {
  if (!op.getBf16Gemms())
    return MatmulOp::create(e.b, e.loc, lhs, rhs, transposeLhs, transposeRhs);
  auto narrow = [&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    return CastOp::create(e.b, e.loc, type.clone(e.b.getBF16Type()), v);
  };
  Value lhs16 = narrow(lhs);
  Value rhs16 = narrow(rhs);
  Value product =
      MatmulOp::create(e.b, e.loc, lhs16, rhs16, transposeLhs, transposeRhs);
  auto wide = cast<RankedTensorType>(product.getType())
                  .clone(op.getType().getElementType());
  return CastOp::create(e.b, e.loc, wide, product);
}

AttentionParts mlir::anvil::emitAttentionProbabilities(Emit &e,
                                                       AttentionOp op) {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto qt = op.getQuery().getType(), kt = op.getKey().getType(),
       vt = op.getValue().getType();
  int64_t b = qt.getDimSize(0), hq = qt.getDimSize(1), tq = qt.getDimSize(2),
          d = qt.getDimSize(3), hkv = kt.getDimSize(1), tk = kt.getDimSize(2),
          group = hq / hkv;
  AttentionParts parts;
  parts.scale = op.getScale() ? op.getScale()->convertToDouble()
                              : 1.0 / std::sqrt(double(d));

  // (B, Hkv, T, X) -> (B, Hq, T, X): head h reads key/value head h / group.
  auto repeat = [&](Value x, RankedTensorType t) -> Value {
    if (group == 1)
      return x;
    int64_t len = t.getDimSize(2), width = t.getDimSize(3);
    Value x5 =
        e.broadcast(x, t.clone({b, hkv, group, len, width}), {0, 1, 3, 4});
    return e.reshape(x5, t.clone({b, hq, len, width}));
  };
  parts.keys = repeat(k, kt);
  parts.values = repeat(v, vt);

  auto sType = qt.clone({b, hq, tq, tk});
  Value s = e.scale(emitAttentionProduct(e, op, q, parts.keys,
                                         /*transposeLhs=*/false,
                                         /*transposeRhs=*/true),
                    parts.scale);
  if (Value mask = op.getMask()) {
    auto mt = cast<RankedTensorType>(mask.getType());
    Value full = mt.getRank() == 2 ? e.broadcast(mask, sType, {2, 3})
                                   : e.stretch(mask, sType);
    s = e.add(s, full);
  }
  if (op.getCausal()) {
    // Key j is visible to query i iff j <= i + Tk - Tq (bottom right),
    // built from two index vectors rather than a (Tq, Tk) constant, so that
    // the IR stays O(T) for long sequences.
    Type i64 = e.b.getI64Type();
    auto grid = RankedTensorType::get({tq, tk}, i64);
    Value rows = e.broadcast(iota(e, tq, tk - tq, i64), grid, {0});
    Value cols = e.broadcast(iota(e, tk, 0, i64), grid, {1});
    Value visible = e.cmp(ComparisonDirection::le, cols, rows);
    Value mask = e.broadcast(visible, sType.clone(e.b.getI1Type()), {2, 3});
    s = e.select(mask, s, e.splat(sType, -INFINITY));
  }
  parts.probs = SoftmaxOp::create(e.b, e.loc, s, 3);
  return parts;
}

LabelMasks mlir::anvil::emitLabelMasks(Emit &e, CrossEntropyOp op) {
  Value z = op.getLogits(), labels = op.getLabels();
  auto zType = op.getLogits().getType();
  auto lType = op.getLabels().getType();
  int64_t rank = zType.getRank(), classes = zType.getDimSize(rank - 1);
  SmallVector<int64_t> rowDims =
      llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));

  // onehot: iota over the classes compared with the broadcast labels.
  Value classIds = iota(e, classes, 0, lType.getElementType());
  auto intType = zType.clone(lType.getElementType());
  LabelMasks masks;
  masks.onehot = e.maskOf(e.cmp(ComparisonDirection::eq,
                                e.broadcast(classIds, intType, {rank - 1}),
                                e.broadcast(labels, intType, rowDims)),
                          z);
  masks.kept =
      e.maskOf(e.cmp(ComparisonDirection::ne, labels,
                     e.splat(lType, static_cast<double>(static_cast<int64_t>(
                                        op.getIgnoreIndex())))),
               e.splat(lType.clone(zType.getElementType()), 0));
  return masks;
}

Value mlir::anvil::emitRowLogSumExp(Emit &e, Value logits) {
  auto type = e.typeOf(logits);
  int64_t last = type.getRank() - 1;
  Value max = ReduceMaxOp::create(e.b, e.loc, logits, ArrayRef<int64_t>{last},
                                  /*keep_dims=*/true);
  Value shifted = e.sub(logits, e.unreduce(max, type));
  Value sum = e.sum(ExpOp::create(e.b, e.loc, shifted), {last}, true);
  return e.add(max, LogOp::create(e.b, e.loc, sum));
}

Value mlir::anvil::emitKeptCount(Emit &e, Value kept) {
  auto t = e.typeOf(kept);
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, t.getRank()));
  Value count = all.empty() ? kept : e.sum(kept, all, false);
  return MaxOp::create(
      e.b, e.loc, count,
      e.splat(RankedTensorType::get({}, t.getElementType()), 1.0));
}

BroadcastOp mlir::anvil::rowBias(Value v) {
  auto broadcast = v.getDefiningOp<BroadcastOp>();
  if (!broadcast)
    return nullptr;
  auto rows = cast<RankedTensorType>(v.getType());
  auto bias = cast<RankedTensorType>(broadcast.getOperand().getType());
  if (bias.getRank() != 1 || !bias.getElementType().isF32() ||
      bias.getDimSize(0) != rows.getShape().back() ||
      broadcast.getDimensions() != ArrayRef<int64_t>{rows.getRank() - 1})
    return nullptr;
  return broadcast;
}
