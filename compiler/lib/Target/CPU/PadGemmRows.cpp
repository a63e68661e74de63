//===- PadGemmRows.cpp - GEMM buffers with aligned row strides ------------===//
//
// A GEMM library reads and writes its matrices through a leading dimension
// (the row stride); on tensor cores its fast kernels want every row to start
// 16 bytes aligned, or better a cache line (cuBLAS picks kernels by the
// alignment of its pointers and leading dimensions; TMA needs 16-byte
// strides). A buffer of rows of odd length, like GPT-2's logits (50257
// columns), gets none of that. This pass allocates such buffers with padded
// rows and uses them through a subview of their first columns: every reader
// and writer sees the same shape, and the GEMMs' leading dimensions (taken
// from the layouts by anvil-cpu-gemm-to-blas) become multiples of the
// padding. The padding is never read or written.
//
// 1. Each memref.alloc of a static, identity-layout buffer of rank 2 or more
//    whose innermost extent is at least `min-row` and not a multiple of 8
//    elements (a bf16 row of 16 bytes: f32 buffers may become bf16 later,
//    anvil-cpu-gemm-to-blas' rounded products), and which a contraction
//    (linalg's contraction interface: what becomes a GEMM call) reads or
//    writes, directly or through views, with the innermost dimension a
//    group of its own (its m, n, k or batch loops; `rowsAlone`).
// 2. Every use of it and of its views must be a view that keeps the
//    innermost dimension (memref.expand_shape, collapse_shape, subview with
//    static offsets, sizes and strides), a linalg op on buffers, or a
//    dealloc: anything else (an address taken for a library call, a call, a
//    return) may assume contiguous rows, and the buffer is left alone.
// 3. The buffer is allocated with its innermost extent rounded up to a
//    multiple of `row-multiple`, its old value replaced by a subview of the
//    original shape (offset 0, the padded row stride), and the result types
//    of the views on it recomputed, users before their users.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCPUPADGEMMROWSPASS
#include "anvil/Target/CPU/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// The result type `view` has when its source has type `source`, or null
/// when it would not keep the innermost dimension whole or is no view this
/// pass rebuilds.
MemRefType viewTypeOn(Operation *view, MemRefType source) {
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(view)) {
    // The source's innermost dimension must expand to itself alone (unit
    // dimensions before it aside): splitting a padded row is no view.
    ArrayRef<int64_t> shape = expand.getResultType().getShape();
    ReassociationIndices last = expand.getReassociationIndices().back();
    for (int64_t d : ArrayRef(last).drop_back())
      if (shape[d] != 1)
        return nullptr;
    FailureOr<MemRefType> t = memref::ExpandShapeOp::computeExpandedType(
        source, shape, expand.getReassociationIndices());
    return succeeded(t) ? *t : nullptr;
  }
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(view)) {
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
            source, collapse.getReassociationIndices()))
      return nullptr;
    return memref::CollapseShapeOp::computeCollapsedType(
        source, collapse.getReassociationIndices());
  }
  if (auto subview = dyn_cast<memref::SubViewOp>(view)) {
    if (!subview.getOffsets().empty() || !subview.getSizes().empty() ||
        !subview.getStrides().empty())
      return nullptr; // dynamic offsets, sizes or strides
    return memref::SubViewOp::inferRankReducedResultType(
        subview.getType().getShape(), source, subview.getStaticOffsets(),
        subview.getStaticSizes(), subview.getStaticStrides());
  }
  return nullptr;
}

/// Whether contraction `op` reads or writes `operand` with its innermost
/// dimension as a group of its own (m, n, k or batch loops): a GEMM library
/// takes each group as one dimension of contiguous loops, which padded rows
/// would break if the innermost joined another (A's k as two loops, say:
/// anvil-cpu-gemm-to-blas would leave the contraction a loop nest).
bool rowsAlone(linalg::LinalgOp op, OpOperand &operand) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  AffineMap map = op.getMatchingIndexingMap(&operand);
  if (failed(dims) || map.getNumResults() < 2)
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResult(map.getNumResults() - 1));
  auto before = dyn_cast<AffineDimExpr>(map.getResult(map.getNumResults() - 2));
  if (!last || !before)
    return false;
  for (ArrayRef<unsigned> group :
       {ArrayRef<unsigned>(dims->batch), ArrayRef<unsigned>(dims->m),
        ArrayRef<unsigned>(dims->n), ArrayRef<unsigned>(dims->k)})
    if (llvm::is_contained(group, last.getPosition()))
      return !llvm::is_contained(group, before.getPosition());
  return false;
}

/// What padding `alloc` involves: its views (uses before their users) and
/// whether a contraction touches it. False if a use could assume contiguous
/// rows.
bool collectUses(memref::AllocOp alloc, SmallVectorImpl<Operation *> &views,
                 bool &gemm) {
  SmallVector<Value> worklist = {alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<memref::DeallocOp>(user)) {
        if (v != alloc.getResult())
          return false; // a view freed
        continue;
      }
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user)) {
        if (!linalgOp.hasPureBufferSemantics())
          return false;
        if (linalg::isaContractionOpInterface(linalgOp)) {
          if (!rowsAlone(linalgOp, use))
            return false;
          gemm = true;
        }
        continue;
      }
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
              memref::SubViewOp>(user) &&
          use.getOperandNumber() == 0) {
        views.push_back(user);
        worklist.push_back(user->getResult(0));
        continue;
      }
      return false;
    }
  }
  return true;
}

struct PadGemmRows
    : mlir::anvil::impl::AnvilCPUPadGemmRowsPassBase<PadGemmRows> {
  using AnvilCPUPadGemmRowsPassBase::AnvilCPUPadGemmRowsPassBase;

  void runOnOperation() override {
    if (rowMultiple < 8 || rowMultiple % 8 != 0) {
      getOperation().emitError("anvil-cpu-pad-gemm-rows: row-multiple = ")
          << static_cast<int64_t>(rowMultiple)
          << " is not a positive multiple of 8";
      return signalPassFailure();
    }
    SmallVector<memref::AllocOp> allocs;
    getOperation().walk([&](memref::AllocOp alloc) {
      MemRefType t = alloc.getType();
      if (t.getRank() >= 2 && t.hasStaticShape() &&
          t.getLayout().isIdentity() && alloc.getDynamicSizes().empty() &&
          alloc.getSymbolOperands().empty() &&
          t.getElementType().isIntOrFloat() && t.getShape().back() >= minRow &&
          t.getShape().back() % 8 != 0)
        allocs.push_back(alloc);
    });
    for (memref::AllocOp alloc : allocs)
      pad(alloc);
  }

  void pad(memref::AllocOp alloc) {
    SmallVector<Operation *> views;
    bool gemm = false;
    if (!collectUses(alloc, views, gemm) || !gemm)
      return;
    MemRefType type = alloc.getType();
    SmallVector<int64_t> padded(type.getShape());
    padded.back() = llvm::alignTo(padded.back(), uint64_t(rowMultiple));
    auto paddedType =
        MemRefType::get(padded, type.getElementType(),
                        MemRefLayoutAttrInterface(), type.getMemorySpace());
    // The columns in use: offset 0, the original sizes, unit strides.
    int64_t rank = type.getRank();
    SmallVector<int64_t> zeros(rank, 0), ones(rank, 1);
    MemRefType columns = memref::SubViewOp::inferResultType(
        paddedType, zeros, type.getShape(), ones);
    // Every view's new type first: nothing changes unless all exist.
    DenseMap<Value, MemRefType> newTypes = {{alloc.getResult(), columns}};
    for (Operation *view : views) {
      MemRefType t = viewTypeOn(view, newTypes.lookup(view->getOperand(0)));
      if (!t)
        return;
      newTypes[view->getResult(0)] = t;
    }
    OpBuilder b(alloc);
    auto wide = memref::AllocOp::create(b, alloc.getLoc(), paddedType,
                                        alloc.getAlignmentAttr());
    auto subview = memref::SubViewOp::create(b, alloc.getLoc(), columns, wide,
                                             zeros, type.getShape(), ones);
    alloc.getResult().replaceUsesWithIf(wide, [](OpOperand &use) {
      return isa<memref::DeallocOp>(use.getOwner());
    });
    alloc.getResult().replaceAllUsesWith(subview.getResult());
    alloc.erase();
    for (Operation *view : views)
      view->getResult(0).setType(newTypes.lookup(view->getResult(0)));
    ++numPadded;
  }
};

} // namespace
