//===- PlanMemory.cpp - one workspace per step, shared by lifetimes -------===//
//
// See the pass description in Passes.td for the algorithm. Sizes are in
// bytes; element types narrower than a byte (i1) take a byte each, as
// they do once lowered to LLVM.
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILPLANMEMORYPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

constexpr int64_t kAlignment = 64;

struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0;
  int64_t first = 0, last = 0; ///< Live over body ops [first, last].
  int64_t offset = 0;
};

/// The byte size of a static, identity-layout memref, or -1.
int64_t byteSize(MemRefType t) {
  if (!t.hasStaticShape() || !t.getLayout().isIdentity() ||
      !t.getElementType().isIntOrFloat())
    return -1;
  int64_t bits = t.getElementTypeBitWidth();
  return t.getNumElements() * ((bits + 7) / 8);
}

/// The last body op using `root` or an alias of it; -1 if it escapes. An
/// address taken of it (memref.extract_aligned_pointer_as_index) and every
/// value computed from that (the pointer a library call is passed: GEMMs)
/// count as uses too.
int64_t lastUse(Value root, Block &body,
                const DenseMap<Operation *, int64_t> &position) {
  int64_t last = position.lookup(root.getDefiningOp());
  SmallVector<Value> worklist = {root};
  DenseSet<Value> seen = {root};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    bool address = !isa<BaseMemRefType>(v.getType());
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user))
        return -1;
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top)
        return -1;
      last = std::max(last, position.lookup(top));
      if (address || isa<memref::ExtractAlignedPointerAsIndexOp>(user)) {
        for (Value r : user->getResults())
          if (seen.insert(r).second)
            worklist.push_back(r);
        continue;
      }
      // Views and ops that return memrefs may alias their operand, and so
      // may the results of every op enclosing a nested use (a value
      // yielded out of a loop or a branch).
      for (Operation *op = user; op;
           op = op == top ? nullptr : op->getParentOp())
        for (Value r : op->getResults())
          if (isa<BaseMemRefType>(r.getType()) && seen.insert(r).second)
            worklist.push_back(r);
    }
  }
  return last;
}

struct AnvilPlanMemoryPass
    : mlir::anvil::impl::AnvilPlanMemoryPassBase<AnvilPlanMemoryPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        plan(fn);
  }

  void plan(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body.getOperations()))
      position[&op] = static_cast<int64_t>(i);

    // 1. Lifetimes.
    SmallVector<Buffer> buffers;
    for (auto alloc : body.getOps<memref::AllocOp>()) {
      Buffer b;
      b.alloc = alloc;
      b.bytes = byteSize(alloc.getType());
      if (b.bytes < 0 || !alloc.getDynamicSizes().empty() ||
          !alloc.getSymbolOperands().empty())
        continue;
      b.first = position.lookup(alloc);
      b.last = lastUse(alloc.getResult(), body, position);
      if (b.last < 0)
        continue;
      buffers.push_back(b);
    }

    // 2. Largest first, lowest fitting offset.
    SmallVector<Buffer *> order;
    for (Buffer &b : buffers)
      order.push_back(&b);
    llvm::stable_sort(order,
                      [](Buffer *a, Buffer *b) { return a->bytes > b->bytes; });
    SmallVector<Buffer *> placed;
    int64_t total = 0;
    for (Buffer *b : order) {
      // Placed buffers live at the same time, by offset.
      SmallVector<Buffer *> live;
      for (Buffer *p : placed)
        if (p->first <= b->last && b->first <= p->last)
          live.push_back(p);
      llvm::sort(live,
                 [](Buffer *x, Buffer *y) { return x->offset < y->offset; });
      int64_t offset = 0;
      for (Buffer *p : live) {
        if (offset + b->bytes <= p->offset)
          break;
        offset = std::max(offset, (p->offset + p->bytes + kAlignment - 1) /
                                      kAlignment * kAlignment);
      }
      b->offset = offset;
      total = std::max(total, offset + b->bytes);
      placed.push_back(b);
    }

    // 3. The workspace argument and the views into it.
    int64_t size = std::max<int64_t>(
        (total + kAlignment - 1) / kAlignment * kAlignment, kAlignment);
    OpBuilder builder(fn.getContext());
    auto wsType = MemRefType::get({size}, builder.getI8Type());
    if (failed(fn.insertArgument(fn.getNumArguments(), wsType,
                                 builder.getDictionaryAttr({}), fn.getLoc()))) {
      fn.emitError("anvil-plan-memory: cannot add the workspace argument");
      return signalPassFailure();
    }
    Value workspace = fn.getArgument(fn.getNumArguments() - 1);
    for (Buffer &b : buffers) {
      builder.setInsertionPoint(b.alloc);
      Value offset =
          arith::ConstantIndexOp::create(builder, b.alloc.getLoc(), b.offset);
      Value view =
          memref::ViewOp::create(builder, b.alloc.getLoc(), b.alloc.getType(),
                                 workspace, offset, ValueRange{});
      b.alloc.getResult().replaceAllUsesWith(view);
      b.alloc.erase();
    }
  }
};

} // namespace
