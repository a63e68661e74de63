//===- RowGroups.cpp - dispatches that run a warp per row -----------------===//
//
// The checks of a row group's members that anvil-row-groups and
// anvil-cuda-map-dispatches share (see RowGroups.h), and anvil-row-groups:
// in each function, from each dispatch whose leading loops are parallel
// (the rows), the later dispatches over the same rows that commute with
// what they move over join it, and the group becomes one
// `scf.execute_region` (see the pass's description).
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/RowGroups.h"

#include "anvil/Conversion/Passes.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SetVector.h"

#include <functional>
#include <limits>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILROWGROUPSPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace mlir::anvil::rows {

bool isDispatchRegion(Operation *op) {
  if (op->getNumResults() != 0 || isa<func::ReturnOp>(op))
    return false;
  if (isa<linalg::LinalgOp>(op))
    return true;
  if (op->getNumRegions() == 0)
    return false;
  bool hasLinalg = false;
  op->walk([&](linalg::LinalgOp) { hasLinalg = true; });
  return hasLinalg;
}

std::optional<Loops> memberLoops(Operation *op) {
  Loops loops;
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    auto type = dyn_cast<MemRefType>(fill.getOutputs()[0].getType());
    if (!fill.hasPureBufferSemantics() ||
        !fill.getInputs()[0].getDefiningOp<arith::ConstantOp>() || !type ||
        !type.hasStaticShape() || type.getRank() == 0)
      return std::nullopt;
    loops.ranges = llvm::to_vector(type.getShape());
    loops.reduction.assign(type.getRank(), false);
    return loops;
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumLoops() == 0)
    return std::nullopt;
  for (AffineMap map : generic.getIndexingMapsArray())
    for (AffineExpr e : map.getResults()) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (!isa<AffineDimExpr>(e) && !(c && c.getValue() == 0))
        return std::nullopt;
    }
  loops.ranges = generic.getStaticLoopRanges();
  for (int64_t r : loops.ranges)
    if (ShapedType::isDynamic(r) || r <= 0)
      return std::nullopt;
  for (utils::IteratorType t : generic.getIteratorTypesArray())
    loops.reduction.push_back(t == utils::IteratorType::reduction);
  return loops;
}

SmallVector<int64_t> rowExtents(ArrayRef<Operation *> ops) {
  SmallVector<int64_t> rows;
  for (auto [i, op] : llvm::enumerate(ops)) {
    std::optional<Loops> loops = memberLoops(op);
    if (!loops)
      return {};
    SmallVector<int64_t> leading;
    for (auto [range, reduction] : llvm::zip(loops->ranges, loops->reduction)) {
      if (reduction)
        break;
      leading.push_back(range);
    }
    if (i == 0) {
      rows = leading;
      continue;
    }
    unsigned common = 0;
    while (common < rows.size() && common < leading.size() &&
           rows[common] == leading[common])
      ++common;
    rows.resize(common);
  }
  while (!rows.empty() && rows.back() == 1)
    rows.pop_back();
  return rows;
}

bool rowLocal(Operation *op, OpOperand &operand, ArrayRef<int64_t> rows) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  if (!linalgOp || !type)
    return false;
  AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
  if (!memref::isStaticShapeAndContiguousRowMajor(type) ||
      type.getRank() < static_cast<int64_t>(rows.size()) ||
      map.getNumResults() < rows.size())
    return false;
  for (auto [d, extent] : llvm::enumerate(rows))
    if (type.getDimSize(d) != extent ||
        map.getResult(d) != getAffineDimExpr(d, op->getContext()))
      return false;
  return true;
}

bool fitsRows(Operation *op, ArrayRef<int64_t> rows, int64_t maxColumns) {
  std::optional<Loops> loops = memberLoops(op);
  if (!loops || rows.empty() || loops->ranges.size() < rows.size())
    return false;
  int64_t columns = 1;
  for (auto [d, range] : llvm::enumerate(loops->ranges)) {
    if (d < rows.size()) {
      if (loops->reduction[d] || range != rows[d])
        return false;
      continue;
    }
    columns *= range;
    if (columns > maxColumns)
      return false;
  }
  // A reduction's other loops past the rows are of range 1: it makes one
  // value a row.
  bool reduces = llvm::is_contained(loops->reduction, true);
  for (unsigned d = rows.size(); d < loops->ranges.size(); ++d)
    if (reduces && !loops->reduction[d] && loops->ranges[d] != 1)
      return false;
  auto linalgOp = cast<linalg::LinalgOp>(op);
  for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
    if (!rowLocal(op, init, rows))
      return false;
    if (!reduces)
      continue;
    // One element per row: the indices past the rows' 0, or parallel loops
    // of 1.
    AffineMap map = linalgOp.getMatchingIndexingMap(&init);
    for (AffineExpr e : map.getResults().drop_front(rows.size()))
      if (auto dim = dyn_cast<AffineDimExpr>(e);
          dim && loops->reduction[dim.getPosition()])
        return false;
  }
  return true;
}

} // namespace mlir::anvil::rows

namespace {

using namespace mlir::anvil::rows;

/// Where a buffer lies: the buffer it is a view of (a function argument,
/// an allocation, a global) and its bytes there, [begin, end), when the
/// views between are memref.view at constant shifts and reshapes of
/// contiguous buffers; all of the root's bytes otherwise.
struct Extent {
  Value root;
  int64_t begin = 0, end = std::numeric_limits<int64_t>::max();
};

/// Whether `type` is statically shaped, contiguous and row-major from its
/// base (offset 0).
bool contiguousFromBase(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  SmallVector<int64_t> strides;
  int64_t offset;
  return memref && memref::isStaticShapeAndContiguousRowMajor(memref) &&
         succeeded(memref.getStridesAndOffset(strides, offset)) && offset == 0;
}

Extent extentOf(Value buffer) {
  auto bufferType = dyn_cast<MemRefType>(buffer.getType());
  bool known = contiguousFromBase(buffer.getType()) &&
               bufferType.getElementType().isIntOrFloat();
  int64_t shift = 0;
  Value v = buffer;
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      std::optional<int64_t> c = getConstantIntValue(view.getByteShift());
      known &= c.has_value();
      shift += c.value_or(0);
      v = view.getSource();
      continue;
    }
    if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def)) {
      v = def->getOperand(0);
      known &= contiguousFromBase(v.getType());
      continue;
    }
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      known = false;
      v = view.getViewSource();
      continue;
    }
    break;
  }
  Extent e;
  e.root = v;
  if (known) {
    auto type = cast<MemRefType>(buffer.getType());
    e.begin = shift;
    e.end = shift +
            type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  }
  return e;
}

/// Whether `root` is a buffer of its own: an allocation, a global, or an
/// argument of a public function (an entry point, whose buffers the
/// runtime allocates apart; a private function's caller could pass one
/// buffer twice).
bool distinctBuffer(Value root) {
  if (auto arg = dyn_cast<BlockArgument>(root)) {
    auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return fn && fn.isPublic() && arg.getOwner()->isEntryBlock();
  }
  return isa_and_nonnull<memref::AllocOp, memref::AllocaOp,
                         memref::GetGlobalOp>(root.getDefiningOp());
}

/// Whether two extents may share bytes. Distinct buffers (distinctBuffer)
/// do not; two reads of one global are one buffer; any other root may be
/// any buffer.
bool mayOverlap(const Extent &a, const Extent &b) {
  auto ga = a.root.getDefiningOp<memref::GetGlobalOp>();
  auto gb = b.root.getDefiningOp<memref::GetGlobalOp>();
  bool same = ga && gb ? ga.getName() == gb.getName() : a.root == b.root;
  if (!same)
    return !distinctBuffer(a.root) || !distinctBuffer(b.root);
  return a.begin < b.end && b.begin < a.end;
}

/// A linalg op's buffer operand, where it lies, and whether the op writes
/// it.
struct Access {
  Operation *op;
  OpOperand *operand;
  Extent extent;
  bool write;
};

/// The buffer operands of `op`, a linalg op on buffers; false for any
/// other op.
bool accessesOf(Operation *op, SmallVectorImpl<Access> &accesses) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics())
    return false;
  for (OpOperand &operand : op->getOpOperands())
    if (isa<MemRefType>(operand.get().getType()))
      accesses.push_back({op, &operand, extentOf(operand.get()),
                          linalgOp.isDpsInit(&operand)});
  return true;
}

/// Whether an op reads no bytes it writes but through the buffer it writes
/// (a reduction whose fill folds into it must not read that fill's bytes
/// under another name).
bool selfContained(ArrayRef<Access> accesses) {
  return llvm::all_of(accesses, [&](const Access &w) {
    return !w.write || llvm::all_of(accesses, [&](const Access &r) {
      return r.write || r.operand->get() == w.operand->get() ||
             !mayOverlap(r.extent, w.extent);
    });
  });
}

/// Whether running `a` and `b` (of different ops) in either order, or
/// interleaved row by row over `rows`, gives what running them in order
/// does: neither writes bytes the other touches, or both touch one buffer
/// (the same bytes) within rows.
bool commute(const Access &a, const Access &b, ArrayRef<int64_t> rows) {
  if ((!a.write && !b.write) || !mayOverlap(a.extent, b.extent))
    return true;
  if (rows.empty())
    return false;
  bool sameBytes =
      a.operand->get() == b.operand->get() ||
      (a.extent.end != std::numeric_limits<int64_t>::max() &&
       a.extent.begin == b.extent.begin && a.extent.end == b.extent.end);
  return sameBytes && anvil::rows::rowLocal(a.op, *a.operand, rows) &&
         anvil::rows::rowLocal(b.op, *b.operand, rows);
}

/// Appends to `producers` the ops that make values `op` uses (nested ops'
/// too) and that come after `anchor` in its block, with what those use in
/// turn, definitions first; false when one is not a pure op without
/// regions or a static allocation (it could not move before `anchor`).
bool collectProducers(Operation *op, Operation *anchor,
                      llvm::SetVector<Operation *> &producers) {
  Block *block = anchor->getBlock();
  std::function<bool(Value)> visit = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block || !anchor->isBeforeInBlock(def) ||
        producers.contains(def))
      return true;
    // A pure op, or the allocation of a static buffer (it lives longer).
    auto alloc = dyn_cast<memref::AllocOp>(def);
    if (def->getNumRegions() != 0 ||
        !(isMemoryEffectFree(def) || (alloc && def->getNumOperands() == 0)))
      return false;
    for (Value operand : def->getOperands())
      if (!visit(operand))
        return false;
    producers.insert(def);
    return true;
  };
  WalkResult walk = op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (!visit(operand))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

/// The row group that starts at `first` (RowGroups.h), its later members
/// moved right after it, in order, and what they use before it; empty when
/// no group forms (nothing moved). Candidates are the next dispatches, up
/// to `maxSkipped` that stay where they are, before an op with memory
/// effects that is not a linalg dispatch. A group has at least `minRows`
/// rows, a member at most 8 points a row per row (a member of n points
/// then runs on sqrt(n / 8) warps or more: a grid of its own would have
/// had a thread a point), some member touches what an earlier one writes
/// (independent ops over one domain are anvil-horizontal-fuse's) and one
/// reduces (elementwise ops alone are anvil-fuse's).
SmallVector<Operation *> formRowGroup(Operation *first, int64_t minRows) {
  constexpr unsigned maxSkipped = 16;
  constexpr int64_t columnsPerRow = 8;
  SmallVector<Operation *> members = {first};
  SmallVector<Access> memberAccesses, skippedAccesses;
  if (anvil::rows::rowExtents(members).empty() ||
      !accessesOf(first, memberAccesses) || !selfContained(memberAccesses))
    return {};
  unsigned skipped = 0;
  bool dependent = false;
  auto reducing = [](Operation *op) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    return generic && generic.getNumReductionLoops() != 0;
  };
  // What the later members use that comes after `first`: moved before it
  // with them.
  llvm::SetVector<Operation *> producers;
  for (Operation *op = first->getNextNode(); op && skipped <= maxSkipped;) {
    Operation *next = op->getNextNode();
    if (!isDispatchRegion(op)) {
      // Pure ops and static allocations stay behind (the members take
      // along those they use).
      if (!isMemoryEffectFree(op) &&
          !(isa<memref::AllocOp>(op) && op->getNumOperands() == 0))
        break;
      op = next;
      continue;
    }
    SmallVector<Access> accesses;
    if (!accessesOf(op, accesses))
      break;
    if (!selfContained(accesses)) {
      skippedAccesses.append(accesses);
      ++skipped;
      op = next;
      continue;
    }
    members.push_back(op);
    SmallVector<int64_t> rows = anvil::rows::rowExtents(members);
    int64_t count = 1;
    for (int64_t r : rows)
      count *= r;
    bool fits = !rows.empty() && count >= minRows &&
                llvm::all_of(members, [&](Operation *m) {
                  return anvil::rows::fitsRows(m, rows, columnsPerRow * count);
                });
    fits = fits && llvm::all_of(accesses, [&](const Access &a) {
             return llvm::all_of(
                        memberAccesses,
                        [&](const Access &b) { return commute(a, b, rows); }) &&
                    llvm::all_of(skippedAccesses, [&](const Access &b) {
                      return commute(a, b, {});
                    });
           });
    llvm::SetVector<Operation *> withProducers = producers;
    fits = fits && collectProducers(op, first, withProducers);
    if (!fits) {
      members.pop_back();
      skippedAccesses.append(accesses);
      ++skipped;
      op = next;
      continue;
    }
    producers = std::move(withProducers);
    // A member that touches what an earlier one writes.
    dependent |= llvm::any_of(accesses, [&](const Access &a) {
      return llvm::any_of(memberAccesses, [&](const Access &b) {
        return b.write && mayOverlap(a.extent, b.extent);
      });
    });
    memberAccesses.append(accesses);
    op = next;
  }
  if (!dependent || llvm::none_of(members, reducing))
    return {};
  for (Operation *producer : producers)
    producer->moveBefore(first);
  for (auto [previous, member] : llvm::zip(members, llvm::drop_begin(members)))
    member->moveAfter(previous);
  return members;
}

struct AnvilRowGroupsPass
    : mlir::anvil::impl::AnvilRowGroupsPassBase<AnvilRowGroupsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minRows <= 0) {
      getOperation().emitError("anvil-row-groups: min-rows = ")
          << static_cast<int64_t>(minRows) << " is not a number of rows";
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      SmallVector<SmallVector<Operation *>> groups;
      DenseSet<Operation *> taken;
      for (Operation &op : fn.getBody().getOps()) {
        if (!isDispatchRegion(&op) || taken.contains(&op))
          continue;
        SmallVector<Operation *> group = formRowGroup(&op, minRows);
        taken.insert(group.begin(), group.end());
        if (!group.empty())
          groups.push_back(std::move(group));
      }
      for (ArrayRef<Operation *> group : groups) {
        b.setInsertionPoint(group.front());
        auto region =
            scf::ExecuteRegionOp::create(b, group.front()->getLoc(), {});
        region.setNoInline(true);
        region->setAttr(anvil::AnvilDialect::kRowGroupAttrName,
                        b.getUnitAttr());
        Block *body = b.createBlock(&region.getRegion());
        auto yield = scf::YieldOp::create(b, group.back()->getLoc());
        (void)body;
        for (Operation *member : group)
          member->moveBefore(yield);
      }
    }
  }
};

} // namespace
