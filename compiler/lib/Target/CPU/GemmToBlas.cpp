//===- GemmToBlas.cpp - contractions on buffers as runtime GEMM calls -----===//
//
// 1. Match a bufferized f32 contraction (linalg.matmul, batch_matmul, or a
//    generic that fusion made of them by folding reshapes in) whose
//    buffers have static layouts: upstream `inferContractionDims` splits
//    its loops into batch, m, n and k groups.
// 2. Check that every operand stores its groups as row-major blocks: C as
//    (batch, m, n); A as (batch, m, k) or, transposed, (batch, k, m); B as
//    (batch, k, n) or (batch, n, k), or without batch when one B is shared
//    by the whole batch. A group of several loops must be contiguous in
//    memory (it then acts as one dimension), the innermost with unit
//    stride; k's loops appear in one order in A and B, m's and n's in C's.
// 3. Compute each buffer's address as an LLVM pointer, the row strides
//    (ld) and batch strides, and call anvil_rt_sgemm (declared once per
//    module). The call keeps linalg's semantics, C += A B, or, when C was
//    just filled with zeros (the fill the last op before it that touches
//    memory), overwrites C (accumulate 0) and the fill goes. A contraction
//    of two bf16 operands widened to f32 (a bf16 anvil.matmul's) calls
//    anvil_rt_gemm_bf16 instead. When that product overwrites
//    a buffer of its own whose readers only round it to bf16 (each reads
//    it, or a reshape or subview of it, as an input its body only
//    truncates to bf16: a bf16 anvil.matmul's result), the buffer becomes
//    bf16, its views and readers move onto it without their truncations,
//    and anvil_rt_gemm_bf16_rounded writes the rounded product.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCPUGEMMTOBLASPASS
#include "anvil/Target/CPU/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// An operand of the contraction as BLAS sees it.
struct Matrix {
  bool transposed = false;
  int64_t ld = 0;          ///< Row stride of the stored matrix.
  int64_t batchStride = 0; ///< 0: shared by the whole batch.
  int64_t offset = 0;      ///< Elements from the aligned base.
};

/// What a GEMM's operands are stored in: f32 or bf16 (widened to f32 by
/// the contraction's body).
enum class Operands { F32, BF16 };

/// The kind of GEMM operand an element type makes, if any.
std::optional<Operands> kindOf(Type t) {
  if (t.isBF16())
    return Operands::BF16;
  if (t.isF32())
    return Operands::F32;
  return std::nullopt;
}

/// Describes buffer `v`, read through `map`, as a (possibly batched)
/// matrix whose logical rows are the loops `rows` and columns `cols`:
/// stored as (batch, rows, cols), or transposed as (batch, cols, rows);
/// `batch` may be absent from a shared operand (`allowShared`).
std::optional<Matrix> asMatrix(Value v, AffineMap map, ArrayRef<unsigned> batch,
                               ArrayRef<unsigned> rows, ArrayRef<unsigned> cols,
                               bool allowShared, bool allowTranspose,
                               Operands kind = Operands::F32) {
  auto t = dyn_cast<MemRefType>(v.getType());
  if (!t || kindOf(t.getElementType()) != kind || !t.hasStaticShape() ||
      !map.isProjectedPermutation())
    return std::nullopt;
  SmallVector<int64_t> strides;
  Matrix m;
  if (failed(t.getStridesAndOffset(strides, m.offset)) ||
      ShapedType::isDynamic(m.offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  ArrayRef<int64_t> shape = t.getShape();

  auto concat = [](std::initializer_list<ArrayRef<unsigned>> parts) {
    SmallVector<unsigned> out;
    for (ArrayRef<unsigned> p : parts)
      out.append(p.begin(), p.end());
    return out;
  };
  bool hasBatch = true;
  if (ArrayRef<unsigned>(dims) ==
      ArrayRef<unsigned>(concat({batch, rows, cols}))) {
  } else if (allowTranspose &&
             ArrayRef<unsigned>(dims) ==
                 ArrayRef<unsigned>(concat({batch, cols, rows}))) {
    m.transposed = true;
  } else if (allowShared && !batch.empty() &&
             ArrayRef<unsigned>(dims) ==
                 ArrayRef<unsigned>(concat({rows, cols}))) {
    hasBatch = false;
  } else if (allowShared && allowTranspose && !batch.empty() &&
             ArrayRef<unsigned>(dims) ==
                 ArrayRef<unsigned>(concat({cols, rows}))) {
    hasBatch = false;
    m.transposed = true;
  } else {
    return std::nullopt;
  }
  // Groups as stored: [batch], outer, inner. Each must be contiguous.
  size_t nb = hasBatch ? batch.size() : 0;
  size_t nOuter = m.transposed ? cols.size() : rows.size();
  auto contiguous = [&](size_t from, size_t to) {
    for (size_t i = from; i + 1 < to; ++i)
      if (strides[i] != strides[i + 1] * shape[i + 1])
        return false;
    return true;
  };
  size_t rank = dims.size();
  if (!contiguous(0, nb) || !contiguous(nb, nb + nOuter) ||
      !contiguous(nb + nOuter, rank) || strides[rank - 1] != 1)
    return std::nullopt;
  m.ld = strides[nb + nOuter - 1];
  m.batchStride = nb ? strides[nb - 1] : 0;
  return m;
}

/// `v`, or what the arith.extf defining it widens to f32 (8-bit or bf16
/// operands, whose kind goes to `kind`; F32 otherwise).
Value widened(Value v, Operands &kind) {
  kind = Operands::F32;
  if (auto ext = v.getDefiningOp<arith::ExtFOp>(); ext && ext.getType().isF32())
    if (std::optional<Operands> k = kindOf(ext.getIn().getType());
        k && *k != Operands::F32) {
      kind = *k;
      return ext.getIn();
    }
  return v;
}

/// The zero fill of `c` that `op` accumulates into, when the fill is the
/// last op before `op` with any effect on memory (so nothing reads the
/// zeros but the contraction): the call then overwrites C (accumulate 0)
/// and the fill goes. A product overwritten into C differs from 0 + the
/// product only in the sign of an exact zero sum.
linalg::FillOp zeroFillOf(Operation *op, Value c) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (isMemoryEffectFree(prev))
      continue;
    auto fill = dyn_cast<linalg::FillOp>(prev);
    if (!fill || !fill.hasPureBufferSemantics() || fill.getDpsInits()[0] != c)
      return nullptr;
    auto zero = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
    auto value = zero ? dyn_cast<FloatAttr>(zero.getValue()) : nullptr;
    return value && value.getValue().isZero() ? fill : nullptr;
  }
  return nullptr;
}

/// The readers of a GEMM's f32 result C that only round it to bf16: linalg
/// ops reading C (or a view of it: expand_shape, collapse_shape, subview)
/// as an input whose every use in the body is an arith.truncf to bf16 (a
/// bf16 anvil.matmul's result, which is all its readers see). Collects the
/// views and reader operands; false if anything else uses C.
bool onlyRoundedReaders(Value c, Operation *gemm, Operation *fill,
                        SmallVectorImpl<Operation *> &views,
                        SmallVectorImpl<OpOperand *> &readers) {
  for (OpOperand &use : c.getUses()) {
    Operation *user = use.getOwner();
    if ((user == gemm && cast<linalg::LinalgOp>(gemm).isDpsInit(&use)) ||
        user == fill)
      continue; // the product's own write, and the zeros it replaces
    if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::SubViewOp>(
            user) &&
        use.getOperandNumber() == 0) {
      views.push_back(user);
      if (!onlyRoundedReaders(user->getResult(0), gemm, fill, views, readers))
        return false;
      continue;
    }
    auto reader = dyn_cast<linalg::LinalgOp>(user);
    if (!reader || !reader.hasPureBufferSemantics() || !reader.isDpsInput(&use))
      return false;
    BlockArgument arg = reader.getMatchingBlockArgument(&use);
    if (!llvm::all_of(arg.getUsers(), [](Operation *u) {
          auto trunc = dyn_cast<arith::TruncFOp>(u);
          // (Round to nearest even: the GEMM's rounding.)
          return trunc && trunc.getType().isBF16() &&
                 (!trunc.getRoundingmodeAttr() ||
                  *trunc.getRoundingmode() ==
                      arith::RoundingMode::to_nearest_even);
        }))
      return false;
    readers.push_back(&use);
  }
  return true;
}

/// `type` with bf16 elements (same shape, layout, offset and strides in
/// elements).
MemRefType asBF16(Type type) {
  return MemRefType::Builder(cast<MemRefType>(type))
      .setElementType(BFloat16Type::get(type.getContext()));
}

/// Moves the rounded readers (onlyRoundedReaders) of the buffer `c`
/// allocates onto a new bf16 buffer of its shape, its views rebuilt on it,
/// the readers' truncations gone: the GEMM then writes the rounded product
/// there itself. Returns what becomes of `gemmC` (c or one of its views).
Value narrowToBF16(PatternRewriter &rewriter, memref::AllocOp c, Value gemmC,
                   ArrayRef<Operation *> views, ArrayRef<OpOperand *> readers) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(c);
  auto narrow = memref::AllocOp::create(
      rewriter, c.getLoc(), asBF16(c.getType()), c.getAlignmentAttr());
  IRMapping map;
  map.map(c.getResult(), narrow.getResult());
  for (Operation *view : views) { // uses before their views' views
    rewriter.setInsertionPoint(view);
    Operation *clone = rewriter.clone(*view, map);
    clone->getResult(0).setType(asBF16(view->getResult(0).getType()));
    map.map(view->getResult(0), clone->getResult(0));
  }
  for (OpOperand *use : readers) {
    auto reader = cast<linalg::LinalgOp>(use->getOwner());
    BlockArgument arg = reader.getMatchingBlockArgument(use);
    rewriter.modifyOpInPlace(reader, [&] {
      use->set(map.lookup(use->get()));
      arg.setType(rewriter.getBF16Type());
    });
    for (Operation *trunc : llvm::make_early_inc_range(arg.getUsers()))
      rewriter.replaceOp(trunc, arg);
  }
  Value narrowC = map.lookup(gemmC);
  for (Operation *view : llvm::reverse(views))
    if (view->use_empty())
      rewriter.eraseOp(view);
  return narrowC;
}

/// Where `reader` (the one rounded reader narrowToBF16 left: now a copy of
/// the GEMM's bf16 product) copies the whole product, unchanged, into a
/// contiguous buffer Y of its shape that nothing touches before it (but
/// views): Y viewed as `gemmC`'s type, for the GEMM to write the product
/// into directly (the copy and the product's own buffer then go; Y's
/// allocation moves before the GEMM). Null otherwise.
Value copyTarget(PatternRewriter &rewriter, linalg::LinalgOp reader,
                 Value gemmC, Operation *gemm) {
  auto copy = dyn_cast<linalg::GenericOp>(reader.getOperation());
  // After the GEMM in its block (not in a branch or a loop of it).
  if (!copy || copy->getBlock() != gemm->getBlock() ||
      !gemm->isBeforeInBlock(copy) || copy.getNumDpsInputs() != 1 ||
      copy.getNumDpsInits() != 1 ||
      copy.getNumParallelLoops() != copy.getNumLoops() ||
      !llvm::all_of(copy.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return Value();
  Block *body = copy.getBlock();
  if (body->getOperations().size() != 1 ||
      cast<linalg::YieldOp>(body->getTerminator()).getOperand(0) !=
          body->getArgument(0))
    return Value();
  Value y = copy.getDpsInits()[0];
  auto yType = dyn_cast<MemRefType>(y.getType());
  auto cType = cast<MemRefType>(gemmC.getType());
  if (!yType || y.getType() != copy.getDpsInputs()[0].getType() ||
      !yType.getLayout().isIdentity() || !yType.hasStaticShape() ||
      yType.getRank() == 0 || !cType.getLayout().isIdentity() ||
      yType.getNumElements() != cType.getNumElements())
    return Value();
  // Y (a buffer, or reshapes of one) defined before the GEMM, and first
  // touched by the copy: the GEMM may write it earlier.
  Value root = y;
  SmallVector<Value> names = {y};
  while (isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(
      root.getDefiningOp())) {
    root = root.getDefiningOp()->getOperand(0);
    names.push_back(root);
  }
  auto alloc = root.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getNumOperands() != 0 ||
      llvm::any_of(names, [&](Value v) {
        return v.getDefiningOp()->getBlock() != gemm->getBlock();
      }))
    return Value();
  for (Value name : names)
    for (Operation *user : name.getUsers()) {
      if (user == copy.getOperation() ||
          llvm::is_contained(
              names, user->getNumResults() == 1 ? user->getResult(0) : Value()))
        continue;
      Operation *top = gemm->getBlock()->findAncestorOpInBlock(*user);
      if (!top || !copy->isBeforeInBlock(top))
        return Value();
    }
  // Y's allocation and views before the GEMM (Y lives from there).
  for (Value v : llvm::reverse(names))
    if (gemm->isBeforeInBlock(v.getDefiningOp()))
      rewriter.moveOpBefore(v.getDefiningOp(), gemm);
  // Y as the GEMM's C: flattened, then shaped as C.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(gemm);
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < yType.getRank(); ++d)
    all[0].push_back(d);
  Value flat =
      memref::CollapseShapeOp::create(rewriter, gemm->getLoc(), y, all);
  SmallVector<ReassociationIndices> back(1);
  for (int64_t d = 0; d < cType.getRank(); ++d)
    back[0].push_back(d);
  return memref::ExpandShapeOp::create(rewriter, gemm->getLoc(),
                                       cType.getShape(), flat, back);
}

struct GemmToBlas : OpInterfaceRewritePattern<linalg::LinalgOp> {
  GemmToBlas(MLIRContext *context, StringRef callee, StringRef calleeBF16,
             StringRef calleeBF16Rounded)
      : OpInterfaceRewritePattern(context), calleeName(callee.str()),
        calleeBF16Name(calleeBF16.str()),
        calleeBF16RoundedName(calleeBF16Rounded.str()) {}
  std::string calleeName;     ///< anvil_rt_sgemm, or a device's variant.
  std::string calleeBF16Name; ///< anvil_rt_gemm_bf16, or a device's.
  /// anvil_rt_gemm_bf16_rounded, or a device's; empty: C stays f32.
  std::string calleeBF16RoundedName;
  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
      return rewriter.notifyMatchFailure(op, "not a bufferized contraction");
    // Exactly acc + a * b of f32, or acc + extf(a) * extf(b) of two bf16
    // operands and an f32 acc: the contraction interface would
    // also accept bodies with unary ops (negations, other casts) that a
    // GEMM call drops.
    Block *body = op.getBlock();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
    auto mul = add ? add.getRhs().getDefiningOp<arith::MulFOp>() : nullptr;
    Operands kind = Operands::F32, rhsKind = Operands::F32;
    if (!add || !mul || add.getLhs() != body->getArgument(2) ||
        widened(mul.getLhs(), kind) != body->getArgument(0) ||
        widened(mul.getRhs(), rhsKind) != body->getArgument(1) ||
        kind != rhsKind ||
        body->getOperations().size() != (kind == Operands::F32 ? 3u : 5u))
      return rewriter.notifyMatchFailure(
          op, "body is not acc + a * b (of f32, or of two widened bf16 "
              "operands)");
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
      return rewriter.notifyMatchFailure(op, "no m, n and k loops");
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();

    // The loop groups in the order C and A store them.
    auto ordered = [](AffineMap map, ArrayRef<unsigned> group) {
      SmallVector<unsigned> out;
      for (AffineExpr e : map.getResults())
        if (auto d = dyn_cast<AffineDimExpr>(e);
            d && llvm::is_contained(group, d.getPosition()))
          out.push_back(d.getPosition());
      return out;
    };
    SmallVector<unsigned> batch = ordered(maps[2], dims->batch),
                          mDims = ordered(maps[2], dims->m),
                          nDims = ordered(maps[2], dims->n),
                          kDims = ordered(maps[0], dims->k);
    std::optional<Matrix> mc =
        asMatrix(c, maps[2], batch, mDims, nDims, false, false);
    std::optional<Matrix> ma =
        asMatrix(a, maps[0], batch, mDims, kDims, false, true, kind);
    std::optional<Matrix> mb =
        asMatrix(b, maps[1], batch, kDims, nDims, true, true, kind);
    if (!ma || !mb || !mc)
      return rewriter.notifyMatchFailure(
          op, "operands are not row-major (batched) f32 or bf16 matrices");

    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    auto product = [&](ArrayRef<unsigned> group) {
      int64_t p = 1;
      for (unsigned d : group)
        p *= ranges[d];
      return p;
    };

    Location loc = op.getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(rewriter, loc, v, 64);
    };
    auto i32 = [&](bool v) -> Value {
      return arith::ConstantIntOp::create(rewriter, loc, v ? 1 : 0, 32);
    };
    auto ptrType = LLVM::LLVMPointerType::get(getContext());
    auto address = [&](Value buffer, const Matrix &m) -> Value {
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
      Value asInt = arith::IndexCastOp::create(rewriter, loc,
                                               rewriter.getI64Type(), base);
      int64_t bytes =
          cast<MemRefType>(buffer.getType()).getElementTypeBitWidth() / 8;
      Value withOffset =
          arith::AddIOp::create(rewriter, loc, asInt, i64(m.offset * bytes));
      return LLVM::IntToPtrOp::create(rewriter, loc, ptrType, withOffset);
    };
    // (A product that reads C as an operand still needs its zeros.)
    linalg::FillOp zeroFill = a == c || b == c ? nullptr : zeroFillOf(op, c);
    // A bf16 product that C's readers only round to bf16, into a buffer of
    // its own: the GEMM writes it rounded, in bf16 (half C's bytes, and
    // the readers read half).
    bool rounded = false;
    SmallVector<Operation *> views;
    SmallVector<OpOperand *> readers;
    // The buffer C is, or views of it by reshapes and subviews (rows
    // padded by anvil-cpu-pad-gemm-rows).
    Value root = c;
    while (isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp,
                           memref::SubViewOp>(root.getDefiningOp()))
      root = root.getDefiningOp()->getOperand(0);
    if (auto alloc = root.getDefiningOp<memref::AllocOp>();
        alloc && kind == Operands::BF16 && zeroFill &&
        !calleeBF16RoundedName.empty() &&
        alloc.getType().getLayout().isIdentity() &&
        onlyRoundedReaders(root, op, zeroFill, views, readers)) {
      c = narrowToBF16(rewriter, alloc, c, views, readers);
      rounded = true;
      // A reader that only copies the product into a buffer of its own
      // (attention's bf16 output gradient, say): the GEMM writes there.
      if (readers.size() == 1) {
        auto reader = cast<linalg::LinalgOp>(readers.front()->getOwner());
        if (Value target = copyTarget(rewriter, reader, c, op)) {
          Value narrow = c;
          rewriter.eraseOp(reader);
          c = target;
          // The bf16 buffer and its views, now unread.
          while (narrow && narrow.use_empty()) {
            Operation *def = narrow.getDefiningOp();
            narrow = isa<memref::AllocOp>(def) ? Value() : def->getOperand(0);
            rewriter.eraseOp(def);
          }
        }
      }
    }
    SmallVector<Value> args = {
        i32(ma->transposed), i32(mb->transposed),  i64(product(mDims)),
        i64(product(nDims)), i64(product(kDims)),  address(a, *ma),
        i64(ma->ld),         i64(ma->batchStride), address(b, *mb),
        i64(mb->ld),         i64(mb->batchStride), address(c, *mc),
        i64(mc->ld),         i64(mc->batchStride), i64(product(batch)),
        i32(!zeroFill)};
    if (rounded)
      args.pop_back(); // always overwritten
    StringRef name = rounded                  ? calleeBF16RoundedName
                     : kind == Operands::BF16 ? calleeBF16Name
                                              : calleeName;
    auto module = op->getParentOfType<ModuleOp>();
    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      callee = func::FuncOp::create(
          rewriter, module.getLoc(), name,
          rewriter.getFunctionType(ValueRange(args).getTypes(), {}));
      callee.setPrivate();
    }
    Value wide = root, wideC = op.getDpsInits()[0];
    rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, args);
    if (zeroFill)
      rewriter.eraseOp(zeroFill);
    if (rounded) // the f32 buffer and the views the GEMM's C went through
      for (Value v = wideC; v && v.use_empty();) {
        Operation *def = v.getDefiningOp();
        v = v == wide ? Value() : def->getOperand(0);
        rewriter.eraseOp(def);
      }
    return success();
  }
};

struct AnvilCPUGemmToBlasPass
    : mlir::anvil::impl::AnvilCPUGemmToBlasPassBase<AnvilCPUGemmToBlasPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GemmToBlas>(&getContext(), callee, calleeBF16,
                             calleeBF16Rounded);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
