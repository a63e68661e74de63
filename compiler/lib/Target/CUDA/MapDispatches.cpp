//===- MapDispatches.cpp - dispatch regions onto a CUDA grid --------------===//
//
// Each outlined dispatch function's linalg ops become parallel loops (the
// parallel dimensions outermost, reductions inside), and each loop nest one
// gpu.launch over its linearized iteration space: thread i of the grid
// computes the point i of the space, innermost dimension fastest, so a
// warp's threads read and write consecutive elements. A dispatch that is
// one full amax reduction (FP8's) folds grid-stride partials per thread and
// then atomically into its output; one that reduces long contiguous rows
// runs a warp per row; one that transposes its innermost dimension away
// goes through 32 x 32 tiles in shared memory. The host functions' copies
// between device buffers become kernels too (the workspace is device memory).
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <cmath>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCUDAMAPDISPATCHESPASS
#include "anvil/Target/CUDA/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// The iteration space of a loop nest with constant bounds.
struct Space {
  SmallVector<int64_t> lower, extent, step;
  int64_t total = 1;
};

std::optional<Space> staticSpace(scf::ParallelOp loop) {
  if (loop.getNumReductions() != 0)
    return std::nullopt;
  Space space;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb);
    std::optional<int64_t> u = getConstantIntValue(ub);
    std::optional<int64_t> s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return std::nullopt;
    int64_t extent = *u > *l ? (*u - *l + *s - 1) / *s : 0;
    space.lower.push_back(*l);
    space.extent.push_back(extent);
    space.step.push_back(*s);
    space.total *= extent;
  }
  return space;
}

/// A launch of `blocks` x `threads` (1-D), its body ended by gpu.terminator
/// and the builder's insertion point at the start of the body.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value grid = arith::ConstantIndexOp::create(b, loc, blocks);
  Value block = arith::ConstantIndexOp::create(b, loc, threads);
  auto launch = gpu::LaunchOp::create(b, loc, grid, one, one, block, one, one);
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&launch.getBody().front());
  return launch;
}

/// Replaces `loop` by a launch of one thread per point of `space`.
void mapToGrid(scf::ParallelOp loop, const Space &space, int64_t blockSize) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  // Fewer threads than a block for a small space, but whole warps.
  int64_t threads = std::min(blockSize, (space.total + 31) / 32 * 32);
  int64_t blocks = (space.total + threads - 1) / threads;
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);

  Value linear = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x, index(threads)),
      launch.getThreadIds().x);
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       linear, index(space.total));
  auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());

  // Delinearize, innermost dimension fastest.
  IRMapping map;
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(space.extent.size()) - 1; d >= 0; --d) {
    Value at = rest;
    if (d > 0) {
      at = arith::RemUIOp::create(b, loc, rest, index(space.extent[d]));
      rest = arith::DivUIOp::create(b, loc, rest, index(space.extent[d]));
    }
    if (space.step[d] != 1)
      at = arith::MulIOp::create(b, loc, at, index(space.step[d]));
    if (space.lower[d] != 0)
      at = arith::AddIOp::create(b, loc, at, index(space.lower[d]));
    map.map(loop.getInductionVars()[d], at);
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
}

/// Whether points `width` apart along the innermost dimension of `type`
/// start at addresses aligned to `width` elements, given a base address
/// aligned to that many bytes at least (every buffer is: the memory plan's
/// 64 bytes, the runtime's allocations): 16- and 32-bit elements, static
/// strides and offset, the innermost stride 1 and the others and the
/// offset multiples of `width`.
bool alignedRows(MemRefType type, int64_t width) {
  if (!type.getElementType().isIntOrFloat())
    return false;
  unsigned bits = type.getElementTypeBitWidth();
  SmallVector<int64_t> strides;
  int64_t offset;
  if ((bits != 16 && bits != 32) ||
      failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      ShapedType::isDynamic(offset) || offset % width != 0 ||
      strides.back() != 1)
    return false;
  return llvm::all_of(ArrayRef(strides).drop_back(), [&](int64_t s) {
    return !ShapedType::isDynamic(s) && s % width == 0;
  });
}

/// Whether `memref` is an argument of the dispatch `fn` with `alignedRows`:
/// a buffer, 64-byte aligned, not a constant global that every call passes
/// (`constants`, read in the kernels instead, with its own alignment).
bool alignedArgument(Value memref, func::FuncOp fn,
                     ArrayRef<memref::GlobalOp> constants, int64_t width) {
  auto arg = dyn_cast<BlockArgument>(memref);
  auto type = dyn_cast<MemRefType>(memref.getType());
  return arg && arg.getOwner() == &fn.front() &&
         !constants[arg.getArgNumber()] && type && alignedRows(type, width);
}

/// Gives each point of `loop` (a loop nest of loads, stores and pure
/// arithmetic: an elementwise dispatch) `width` consecutive points of its
/// innermost dimension, so that a thread's accesses to a buffer along that
/// dimension are `width` consecutive elements at an address aligned to
/// their size: the first access of each run carries that alignment, and
/// LLVM's load/store vectorizer (NVPTX) makes the run one vector access
/// (`ld.global.v4.f32`: a warp moves 512 bytes a load instead of 128).
/// Every value is computed as before (each lane's operations on its own
/// point; what does not depend on the point, once for the run); only
/// accesses go through `alignedRows` buffers of the dispatch (its arguments,
/// not the constant globals read in its kernels, whose alignment is their
/// own) are aligned, others stay one element at a time. `loop` and `space`
/// are replaced; false (nothing changed) when the nest does not qualify or
/// no access would be aligned.
bool widenInnermost(scf::ParallelOp &loop, Space &space, int64_t width,
                    func::FuncOp fn, ArrayRef<memref::GlobalOp> constants) {
  unsigned rank = space.extent.size();
  if (width <= 1 || rank == 0 || space.lower.back() != 0 ||
      space.step.back() != 1 || space.extent.back() % width != 0)
    return false;
  Value inner = loop.getInductionVars().back();
  Block *body = loop.getBody();
  // The accesses along the innermost dimension (it is their last index and
  // nothing else reads it), and whether each can be aligned.
  auto alongInner = [&](ValueRange indices) {
    return !indices.empty() && indices.back() == inner &&
           !llvm::is_contained(indices.drop_back(), inner);
  };
  auto alignable = [&](Value memref) {
    return alignedArgument(memref, fn, constants, width);
  };
  unsigned aligned = 0;
  for (Operation &op : body->without_terminator()) {
    if (op.getNumRegions() != 0)
      return false;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (alongInner(load.getIndices()) && alignable(load.getMemRef()))
        ++aligned;
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      // A store must write one element per point.
      if (!alongInner(store.getIndices()))
        return false;
      if (alignable(store.getMemRef()))
        ++aligned;
      continue;
    }
    if (!isMemoryEffectFree(&op))
      return false;
  }
  for (OpOperand &use : inner.getUses()) {
    auto load = dyn_cast<memref::LoadOp>(use.getOwner());
    auto store = dyn_cast<memref::StoreOp>(use.getOwner());
    if (!(load && alongInner(load.getIndices())) &&
        !(store && alongInner(store.getIndices())))
      return false;
  }
  if (aligned == 0)
    return false;

  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  SmallVector<Value> lbs, ubs, steps;
  for (unsigned d = 0; d < rank; ++d) {
    lbs.push_back(index(space.lower[d]));
    int64_t extent = space.extent[d] / (d + 1 == rank ? width : 1);
    ubs.push_back(index(space.lower[d] + extent * space.step[d]));
    steps.push_back(index(space.step[d]));
  }
  auto wide = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
  b.setInsertionPointToStart(wide.getBody());
  // Lane k of the thread's run is point first + k.
  Value first = arith::MulIOp::create(b, loc, wide.getInductionVars().back(),
                                      index(width));
  SmallVector<IRMapping> lanes(width);
  DenseSet<Value> varying = {inner};
  for (int64_t k = 0; k < width; ++k) {
    for (unsigned d = 0; d + 1 < rank; ++d)
      lanes[k].map(loop.getInductionVars()[d], wide.getInductionVars()[d]);
    lanes[k].map(
        inner,
        k == 0 ? first
               : arith::AddIOp::create(b, loc, first, index(k)).getResult());
  }
  for (Operation &op : body->without_terminator()) {
    bool perLane = llvm::any_of(op.getOperands(),
                                [&](Value v) { return varying.contains(v); });
    if (!perLane) {
      Operation *once = b.clone(op, lanes[0]);
      for (int64_t k = 1; k < width; ++k)
        lanes[k].map(op.getResults(), once->getResults());
      continue;
    }
    for (int64_t k = 0; k < width; ++k) {
      Operation *copy = b.clone(op, lanes[k]);
      if (k == 0) {
        // The run's first access, along the innermost dimension.
        Value memref;
        if (auto load = dyn_cast<memref::LoadOp>(op);
            load && alongInner(load.getIndices()))
          memref = load.getMemRef();
        if (auto store = dyn_cast<memref::StoreOp>(op);
            store && alongInner(store.getIndices()))
          memref = store.getMemRef();
        if (memref && alignable(memref)) {
          auto type = cast<MemRefType>(memref.getType());
          copy->setAttr(
              "alignment",
              b.getI64IntegerAttr(width * type.getElementTypeBitWidth() / 8));
        }
      }
    }
    for (Value result : op.getResults())
      varying.insert(result);
  }
  loop.erase();
  loop = wide;
  space = *staticSpace(wide);
  return true;
}

/// Puts `op`'s parallel loops outermost (in their order), the reductions
/// inside: a reduction over a leading dimension (the batch's sum of weight
/// gradients, [8, K, N] -> [K, N]) would otherwise wrap the parallel nest in
/// a sequential loop and run the dispatch on one thread. Every point still
/// accumulates in the same order. Named ops are generalized first; one
/// that cannot be stays as it is.
void parallelLoopsFirst(RewriterBase &rewriter, linalg::LinalgOp &op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (unsigned i = 0, e = iterators.size(); i < e; ++i)
    if (iterators[i] == utils::IteratorType::parallel)
      order.push_back(i);
  for (unsigned i = 0, e = iterators.size(); i < e; ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      order.push_back(i);
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
    return;
  rewriter.setInsertionPoint(op);
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
    if (failed(g))
      return;
    generic = *g;
  }
  FailureOr<linalg::GenericOp> swapped =
      linalg::interchangeGenericOp(rewriter, generic, order);
  op = swapped.value_or(generic);
}

/// Keeps the accumulators of the sequential loops in `root` (a reduction's
/// loops inside a thread) in registers, innermost loops first: where a
/// loop's body loads X[i] and later stores X[i] (i defined outside the
/// loop, and nothing else in the loop touching X), X[i] is loaded once
/// before the loop, carried as an iter_arg and stored once after it. The
/// same operations run in the same order; only the round trips through
/// memory go, which otherwise chain every step of a reduction on a load
/// waiting for the previous step's store (8192 of them for a bias
/// gradient over GPT-2's tokens). The outputs of a dispatch's linalg ops
/// do not alias its inputs (bufferization's and the memory plan's
/// contract), so no other access reads X[i] through another memref.
void keepAccumulatorsInRegisters(RewriterBase &rewriter, Operation *root) {
  // The loops' index maps (identities, mostly) folded first, so that the
  // load and the store of an accumulator index it with the same values.
  RewritePatternSet folds(root->getContext());
  affine::AffineApplyOp::getCanonicalizationPatterns(folds, root->getContext());
  (void)applyPatternsGreedily(root, std::move(folds));
  SmallVector<scf::ForOp> loops;
  root->walk([&](scf::ForOp loop) { loops.push_back(loop); }); // post-order
  for (scf::ForOp loop : loops) {
    Block *body = loop.getBody();
    SmallVector<std::pair<memref::LoadOp, memref::StoreOp>> carried;
    for (auto store : body->getOps<memref::StoreOp>()) {
      Value x = store.getMemRef();
      if (!llvm::all_of(store.getIndices(), [&](Value v) {
            return loop.isDefinedOutsideOfLoop(v);
          }))
        continue;
      // X is the function's buffer, read and written only by loads and
      // stores (no view of it elsewhere), and in the loop only by one load
      // of X[i] before the store.
      memref::LoadOp load;
      bool alone = isa<BlockArgument>(x);
      for (Operation *user : x.getUsers()) {
        if (!alone)
          break;
        if (!isa<memref::LoadOp, memref::StoreOp>(user))
          alone = false;
        if (user == store.getOperation() || !loop->isAncestor(user))
          continue;
        auto l = dyn_cast<memref::LoadOp>(user);
        if (load || !l || l->getBlock() != body ||
            !llvm::equal(l.getIndices(), store.getIndices()) ||
            !l->isBeforeInBlock(store))
          alone = false;
        load = l;
      }
      if (alone && load)
        carried.emplace_back(load, store);
    }
    if (carried.empty())
      continue;
    rewriter.setInsertionPoint(loop);
    SmallVector<Value> inits;
    for (auto [load, store] : carried)
      inits.push_back(memref::LoadOp::create(
          rewriter, load.getLoc(), load.getMemRef(), load.getIndices()));
    FailureOr<LoopLikeOpInterface> grown =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(
                rewriter, inits, /*replaceInitOperandUsesInLoop=*/false,
                [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                  SmallVector<Value> next;
                  for (auto [load, store] : carried)
                    next.push_back(store.getValueToStore());
                  return next;
                });
    if (failed(grown))
      continue;
    auto newLoop = cast<scf::ForOp>(grown->getOperation());
    unsigned first = newLoop.getNumResults() - carried.size();
    rewriter.setInsertionPointAfter(newLoop);
    for (auto [i, pair] : llvm::enumerate(carried)) {
      auto [load, store] = pair;
      rewriter.replaceAllUsesWith(load.getResult(),
                                  newLoop.getRegionIterArgs()[first + i]);
      memref::StoreOp::create(rewriter, store.getLoc(),
                              newLoop.getResult(first + i), store.getMemRef(),
                              store.getIndices());
      rewriter.eraseOp(store);
      rewriter.eraseOp(load);
    }
  }
}

/// The memref an access goes to, seen through a subview defined in `loop`:
/// the source defined outside, and the offsets of the subview's last `n`
/// dimensions in the source's (a subview that keeps the rank and steps by
/// one there). A null source when the access cannot be followed.
std::pair<Value, SmallVector<int64_t>> columnsOf(Value memref, scf::ForOp loop,
                                                 unsigned n) {
  auto definedInside = [&](Value v) {
    return loop->isAncestor(v.getParentBlock()->getParentOp());
  };
  auto subview = memref.getDefiningOp<memref::SubViewOp>();
  if (!subview)
    return {definedInside(memref) ? Value() : memref,
            SmallVector<int64_t>(n, 0)};
  if (!loop->isAncestor(subview) || definedInside(subview.getSource()) ||
      subview.getSourceType().getRank() != subview.getType().getRank() ||
      subview.getType().getRank() < n)
    return {Value(), {}};
  SmallVector<int64_t> offsets;
  for (auto [offset, stride] :
       llvm::zip(subview.getStaticOffsets().take_back(n),
                 subview.getStaticStrides().take_back(n))) {
    if (ShapedType::isDynamic(offset) || stride != 1)
      return {Value(), {}};
    offsets.push_back(offset);
  }
  return {subview.getSource(), offsets};
}

/// A sequential loop around a parallel loop nest whose iteration j only
/// ever touches element j of the trailing dimensions of what it writes (a
/// scatter of rows: the embedding gradient) becomes the parallel nest
/// around the sequential loop, so that a thread per element runs the rows
/// in their order. `loop`'s other ops must read nothing the nest writes.
bool hoistColumnLoops(scf::ForOp loop, ArrayRef<func::CallOp> calls) {
  Block *body = loop.getBody();
  if (loop.getNumRegionIterArgs() != 0 || body->getOperations().size() < 2)
    return false;
  auto inner = dyn_cast<scf::ParallelOp>(*std::prev(body->end(), 2));
  if (!inner || inner.getNumReductions() != 0)
    return false;
  // The loops of more than one iteration: their iterations must touch
  // disjoint elements (a loop of one has nothing to keep apart).
  SmallVector<Value> ivs;
  for (auto [iv, lb, ub, step] :
       llvm::zip(inner.getInductionVars(), inner.getLowerBound(),
                 inner.getUpperBound(), inner.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb);
    std::optional<int64_t> u = getConstantIntValue(ub);
    std::optional<int64_t> st = getConstantIntValue(step);
    if (!l || !u || !st || *st <= 0)
      return false;
    if (*u - *l > *st)
      ivs.push_back(iv);
  }
  unsigned n = ivs.size();
  if (n == 0)
    return false;
  // An index that is an induction variable (through linalg's identity
  // affine.apply).
  auto plain = [](Value index) {
    if (auto apply = index.getDefiningOp<affine::AffineApplyOp>();
        apply && apply.getAffineMap().isIdentity())
      return apply.getMapOperands()[0];
    return index;
  };
  auto trailing = [&](ValueRange indices) {
    return indices.size() >= n &&
           llvm::equal(llvm::map_range(indices.take_back(n), plain), ivs);
  };
  // What the nest writes, by source, and the trailing offsets.
  llvm::DenseMap<Value, SmallVector<int64_t>> written;
  bool ok = true;
  inner.walk([&](memref::StoreOp store) {
    auto [source, offsets] = columnsOf(store.getMemRef(), loop, n);
    if (!source || !trailing(store.getIndices())) {
      ok = false;
      return;
    }
    auto [it, fresh] = written.try_emplace(source, offsets);
    ok &= fresh || it->second == offsets;
  });
  if (!ok || written.empty())
    return false;
  // Reads of a written source at the same element; no other effects.
  WalkResult walk = inner.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto [source, offsets] = columnsOf(load.getMemRef(), loop, n);
      if (!source)
        return WalkResult::interrupt();
      if (auto w = written.find(source);
          w != written.end() &&
          (offsets != w->second || !trailing(load.getIndices())))
        return WalkResult::interrupt();
      return WalkResult::advance();
    }
    if (isa<memref::StoreOp, scf::ReduceOp>(op) || isMemoryEffectFree(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return false;
  for (Operation &op : body->without_terminator()) {
    if (&op == inner.getOperation())
      continue;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      Value source = columnsOf(load.getMemRef(), loop, 0).first;
      if (!source || written.count(source))
        return false;
      continue;
    }
    if (!isMemoryEffectFree(&op))
      return false;
  }
  // Distinct buffers: what the nest writes is an argument of the dispatch
  // laid out with a nonzero stride in each trailing dimension, and no call
  // passes it as another argument too (a read through another name could
  // reach another column).
  auto fn = loop->getParentOfType<func::FuncOp>();
  for (const auto &[source, offsets] : written) {
    auto arg = dyn_cast<BlockArgument>(source);
    auto type = dyn_cast<MemRefType>(source.getType());
    if (!arg || arg.getOwner() != &fn.front() || !type)
      return false;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        llvm::any_of(ArrayRef(strides).take_back(n),
                     [](int64_t s) { return s == 0; }))
      return false;
    for (func::CallOp call : calls)
      for (auto [i, other] : llvm::enumerate(call.getOperands()))
        if (i != arg.getArgNumber() &&
            other == call.getOperand(arg.getArgNumber()))
          return false;
  }
  // for t { pre(t); parallel j { body(t, j) } }  ->
  // parallel j { for t { pre(t); body(t, j) } }
  OpBuilder b(loop);
  // The nest's bounds are constants (checked above), perhaps made inside
  // `loop`: made again before it.
  auto constants = [&](ValueRange values) {
    return llvm::map_to_vector(values, [&](Value v) -> Value {
      return arith::ConstantIndexOp::create(b, inner.getLoc(),
                                            *getConstantIntValue(v));
    });
  };
  auto outer = scf::ParallelOp::create(
      b, inner.getLoc(), constants(inner.getLowerBound()),
      constants(inner.getUpperBound()), constants(inner.getStep()));
  b.setInsertionPointToStart(outer.getBody());
  auto rows = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                                 loop.getUpperBound(), loop.getStep());
  IRMapping map;
  map.map(loop.getInductionVar(), rows.getInductionVar());
  map.map(inner.getInductionVars(), outer.getInductionVars());
  b.setInsertionPoint(rows.getBody()->getTerminator());
  for (Operation &op : body->without_terminator())
    if (&op != inner.getOperation())
      b.clone(op, map);
  for (Operation &op : inner.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
  return true;
}

/// The one `OpTy` of `fn`, whose body is that op and constants; null
/// otherwise.
template <typename OpTy> OpTy soleOp(func::FuncOp fn) {
  OpTy op;
  for (Operation &o : fn.front().without_terminator()) {
    if (o.hasTrait<OpTrait::ConstantLike>())
      continue;
    auto only = dyn_cast<OpTy>(o);
    if (!only || op)
      return nullptr;
    op = only;
  }
  return op;
}

/// A dispatch that only transposes (one linalg.transpose between
/// contiguous row-major buffers of 1-, 2- or 4-byte elements) and moves the
/// input's innermost dimension away from the output's innermost one (an
/// FP8 GEMM's operand laid out with K innermost): tiles of 32 x 32 through
/// shared memory, so that both the reads and the writes of a warp are 32
/// consecutive elements. Output dimension q holds the input's innermost
/// dimension, L is the output's innermost; both must be multiples of 32.
/// Block b takes tile (q0, l0) of one point of the other dimensions;
/// thread (tx, ty), tx in [0, 32), ty in [0, R) for R rows a pass, reads
/// the input at (q0 + tx, l0 + ty + R k) into the tile's row ty + R k,
/// column tx, waits at a barrier, and writes the tile's column ty + R k,
/// row tx to the output at (q0 + ty + R k, l0 + tx). A row of the tile is
/// 33 elements long (the bank of a column's elements differ).
bool mapTranspose(func::FuncOp fn, int64_t blockSize) {
  auto op = soleOp<linalg::TransposeOp>(fn);
  if (!op || !op.hasPureBufferSemantics())
    return false;
  auto inType = dyn_cast<MemRefType>(op.getInput().getType());
  auto outType = dyn_cast<MemRefType>(op.getInit().getType());
  auto rowMajor = [](MemRefType t) {
    return t && t.hasStaticShape() && t.getLayout().isIdentity();
  };
  if (!rowMajor(inType) || !rowMajor(outType) ||
      !inType.getElementType().isIntOrFloat() ||
      !llvm::is_contained({8u, 16u, 32u}, inType.getElementTypeBitWidth()))
    return false;
  ArrayRef<int64_t> perm = op.getPermutation();
  ArrayRef<int64_t> shape = outType.getShape();
  int64_t rank = outType.getRank(), last = rank - 1;
  int64_t q = llvm::find(perm, last) - perm.begin();
  constexpr int64_t kTile = 32;
  if (rank < 2 || q == last || shape[q] % kTile != 0 ||
      shape[last] % kTile != 0)
    return false;
  // R rows a pass: whole warps, a power of two up to 8, within the block.
  int64_t rows = 1;
  while (rows < 8 && kTile * rows * 2 <= blockSize)
    rows *= 2;
  SmallVector<int64_t> others;
  int64_t points = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d != q && d != last) {
      others.push_back(d);
      points *= shape[d];
    }
  int64_t tilesQ = shape[q] / kTile, tilesL = shape[last] / kTile;

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto tileType = MemRefType::get(
      {kTile, kTile + 1}, inType.getElementType(), AffineMap(),
      gpu::AddressSpaceAttr::get(b.getContext(),
                                 gpu::GPUDialect::getWorkgroupAddressSpace()));
  Value one = index(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, index(tilesQ * tilesL * points), one, one, index(kTile * rows),
      one, one, /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, TypeRange{tileType});
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value tile = launch.getWorkgroupAttributions()[0];
  // The block's tile and point of the other dimensions, tiles along L
  // fastest.
  Value block = launch.getBlockIds().x;
  Value l0 = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, block, index(tilesL)),
      index(kTile));
  Value rest = arith::DivUIOp::create(b, loc, block, index(tilesL));
  Value q0 = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, rest, index(tilesQ)),
      index(kTile));
  rest = arith::DivUIOp::create(b, loc, rest, index(tilesQ));
  SmallVector<Value> at(rank);
  for (int64_t i = static_cast<int64_t>(others.size()) - 1; i >= 0; --i) {
    int64_t d = others[i];
    at[d] =
        i > 0
            ? arith::RemUIOp::create(b, loc, rest, index(shape[d])).getResult()
            : rest;
    if (i > 0)
      rest = arith::DivUIOp::create(b, loc, rest, index(shape[d]));
  }
  Value tid = launch.getThreadIds().x;
  Value tx = arith::RemUIOp::create(b, loc, tid, index(kTile));
  Value ty = arith::DivUIOp::create(b, loc, tid, index(kTile));
  // The input's indices of output point `at` (output dimension d is input
  // dimension perm[d]).
  auto inputAt = [&](ArrayRef<Value> out) {
    SmallVector<Value> in(rank);
    for (int64_t d = 0; d < rank; ++d)
      in[perm[d]] = out[d];
    return in;
  };
  for (int64_t k = 0; k < kTile / rows; ++k) {
    Value row = arith::AddIOp::create(b, loc, ty, index(rows * k));
    at[q] = arith::AddIOp::create(b, loc, q0, tx);
    at[last] = arith::AddIOp::create(b, loc, l0, row);
    Value v = memref::LoadOp::create(b, loc, op.getInput(), inputAt(at));
    memref::StoreOp::create(b, loc, v, tile, ValueRange{row, tx});
  }
  gpu::BarrierOp::create(b, loc);
  for (int64_t k = 0; k < kTile / rows; ++k) {
    Value row = arith::AddIOp::create(b, loc, ty, index(rows * k));
    Value v = memref::LoadOp::create(b, loc, tile, ValueRange{tx, row});
    at[q] = arith::AddIOp::create(b, loc, q0, row);
    at[last] = arith::AddIOp::create(b, loc, l0, tx);
    memref::StoreOp::create(b, loc, v, op.getInit(), at);
  }
  op.erase();
  return true;
}

/// The one linalg.generic of `fn`, whose body is that generic and
/// constants; null otherwise.
linalg::GenericOp soleGeneric(func::FuncOp fn) {
  return soleOp<linalg::GenericOp>(fn);
}

/// The generic of a dispatch that is fills of some of its outputs with
/// constants and then the generic (anvil-outline-dispatches
/// fills-into-reductions), and those fills; null when `fn`'s body is
/// anything else but constants.
linalg::GenericOp genericAfterFills(func::FuncOp fn,
                                    SmallVectorImpl<linalg::FillOp> &fills) {
  linalg::GenericOp generic;
  for (Operation &o : fn.front().without_terminator()) {
    if (o.hasTrait<OpTrait::ConstantLike>())
      continue;
    auto fill = dyn_cast<linalg::FillOp>(o);
    if (fill && !generic && fill.hasPureBufferSemantics() &&
        fill.getInputs()[0].getDefiningOp<arith::ConstantOp>()) {
      fills.push_back(fill);
      continue;
    }
    auto op = dyn_cast<linalg::GenericOp>(o);
    if (!op || generic)
      return nullptr;
    generic = op;
  }
  if (!generic)
    return nullptr;
  // Each fill's buffer an output the generic writes whole (every result of
  // its map a distinct loop dimension, or 0 along a dimension of 1), and
  // no input.
  for (linalg::FillOp fill : fills) {
    Value buffer = fill.getOutputs()[0];
    if (llvm::is_contained(generic.getDpsInputs(), buffer))
      return nullptr;
    OpOperand *init = nullptr;
    for (OpOperand &o : generic.getDpsInitsMutable())
      if (o.get() == buffer)
        init = &o;
    if (!init)
      return nullptr;
    AffineMap map = generic.getMatchingIndexingMap(init);
    auto shape = cast<MemRefType>(buffer.getType()).getShape();
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return nullptr;
    for (auto [i, e] : llvm::enumerate(map.getResults()))
      if (isa<AffineConstantExpr>(e) && shape[i] != 1)
        return nullptr;
  }
  return generic;
}

/// The combining op of the reduction body `op` yields as result `r`, when
/// it folds each value into that output as an amax does, `out =
/// maximumf(out, |v|)` (v computed without `out`): null otherwise.
Operation *amaxCombiner(linalg::GenericOp op, unsigned r) {
  Block *body = op.getBlock();
  Value out = body->getArgument(op.getNumDpsInputs() + r);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto combine = yield.getOperand(r).getDefiningOp<arith::MaximumFOp>();
  if (!combine || combine->getBlock() != body)
    return nullptr;
  Value lhs = combine.getLhs(), rhs = combine.getRhs();
  if ((lhs == out) == (rhs == out))
    return nullptr;
  if (!(lhs == out ? rhs : lhs).getDefiningOp<math::AbsFOp>())
    return nullptr;
  // Nothing else reads the output.
  for (OpOperand &use : out.getUses())
    if (use.getOwner() != combine)
      return nullptr;
  return combine;
}

/// A dispatch that is one full amax reduction (FP8's: `max(out, |x|)` over
/// a whole tensor) on a grid: each thread folds its elements (grid-stride,
/// so a warp reads consecutive elements) from -inf with maximumf, the warp
/// folds its lanes' partials by shuffles, and lane 0 folds the warp's into
/// the output with an atomic signed-integer max of the bits. A partial is
/// -inf (no elements), +0 or more, or a NaN with a clear sign, and among
/// such values (and against any output that is not a NaN with its sign
/// set: a fill's -inf or 0) the bits order as the floats do, a NaN above
/// every number; maximumf is associative
/// and commutative (NaN propagating, -0 below +0), so any order gives the
/// sequential result bit for bit. Other outputs the generic writes at every
/// point (anvil-fuse's merge-amax: FP8's codes of the same tensor, or the
/// tensor itself and its producer's other outputs) are stored as each point is
/// visited. `fn`'s body must be `op` and constants.
bool mapFullReduction(func::FuncOp fn, int64_t blockSize) {
  linalg::GenericOp op = soleGeneric(fn);
  // Each input read at loop indices or constants (a row statistic's
  // (d0, d1, 0)).
  auto atIndices = [](AffineMap m) {
    return llvm::all_of(m.getResults(), [](AffineExpr e) {
      return isa<AffineDimExpr, AffineConstantExpr>(e);
    });
  };
  if (!op || !op.hasPureBufferSemantics() || op.getNumLoops() == 0 ||
      llvm::any_of(op.getIteratorTypesArray(),
                   [](utils::IteratorType t) {
                     return t != utils::IteratorType::reduction;
                   }) ||
      !llvm::all_of(op.getIndexingMapsArray(), atIndices))
    return false;
  // One rank-0 f32 amax output; any other output written at every point
  // (identity map, its old value unread).
  Value output;
  Operation *combine = nullptr;
  Block *body = op.getBlock();
  for (OpOperand &init : op.getDpsInitsMutable()) {
    unsigned r = init.getOperandNumber() - op.getNumDpsInputs();
    auto type = dyn_cast<MemRefType>(init.get().getType());
    if (!type)
      return false;
    if (type.getRank() == 0) {
      if (output || !type.getElementType().isF32() ||
          !(combine = amaxCombiner(op, r)))
        return false;
      output = init.get();
    } else if (!op.getMatchingIndexingMap(&init).isIdentity() ||
               !body->getArgument(op.getNumDpsInputs() + r).use_empty()) {
      return false;
    }
  }
  if (!output)
    return false;
  // The other outputs' values must not read the running maximum (a point
  // would store a thread's partial, not the sequential prefix).
  auto yieldOp = cast<linalg::YieldOp>(body->getTerminator());
  for (auto [r, init] : llvm::enumerate(op.getDpsInits())) {
    if (init == output)
      continue;
    SmallVector<Value> work = {yieldOp.getOperand(r)};
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != body || !seen.insert(def).second)
        continue;
      if (def == combine)
        return false;
      work.append(def->operand_begin(), def->operand_end());
    }
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t total = 1;
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r) || r <= 0)
      return false;
    total *= r;
  }

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  // At least 16 elements a thread, at most 2048 blocks: one atomic per
  // warp (its lanes' partials folded by shuffles first), at most 16384.
  int64_t threads = std::min(blockSize, (total + 31) / 32 * 32);
  int64_t blocks =
      std::clamp<int64_t>((total + threads * 16 - 1) / (threads * 16), 1, 2048);
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  Value first = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x, index(threads)),
      launch.getThreadIds().x);
  Value identity =
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-INFINITY));
  auto loop = scf::ForOp::create(b, loc, first, index(total),
                                 index(blocks * threads), ValueRange{identity});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    // Delinearize, innermost loop fastest.
    SmallVector<Value> ivs(ranges.size());
    Value rest = loop.getInductionVar();
    for (int64_t d = static_cast<int64_t>(ranges.size()) - 1; d >= 0; --d) {
      ivs[d] = d > 0 ? arith::RemUIOp::create(b, loc, rest, index(ranges[d]))
                           .getResult()
                     : rest;
      if (d > 0)
        rest = arith::DivUIOp::create(b, loc, rest, index(ranges[d]));
    }
    IRMapping map;
    for (auto [i, input] : llvm::enumerate(op.getDpsInputs())) {
      if (!isa<MemRefType>(input.getType())) {
        map.map(body->getArgument(i), input); // a scalar
        continue;
      }
      SmallVector<Value> at;
      for (AffineExpr e : op.getIndexingMapsArray()[i].getResults())
        at.push_back(isa<AffineConstantExpr>(e)
                         ? index(cast<AffineConstantExpr>(e).getValue())
                         : ivs[cast<AffineDimExpr>(e).getPosition()]);
      map.map(body->getArgument(i),
              memref::LoadOp::create(b, loc, input, at).getResult());
    }
    unsigned amaxIndex = 0;
    for (OpOperand &init : op.getDpsInitsMutable())
      if (init.get() == output)
        amaxIndex = init.getOperandNumber() - op.getNumDpsInputs();
    map.map(body->getArgument(op.getNumDpsInputs() + amaxIndex),
            loop.getRegionIterArgs()[0]);
    for (Operation &bodyOp : body->without_terminator()) {
      // The loops' indices are the point's.
      if (auto index = dyn_cast<linalg::IndexOp>(bodyOp)) {
        map.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      b.clone(bodyOp, map);
    }
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    for (auto [r, init] : llvm::enumerate(op.getDpsInits()))
      if (init != output)
        memref::StoreOp::create(
            b, loc, map.lookupOrDefault(yield.getOperand(r)), init, ivs);
    scf::YieldOp::create(b, loc, map.lookup(combine->getResult(0)));
  }
  // The output's address: its aligned base plus its offset (a view into
  // the step's arena).
  auto i64 = b.getI64Type();
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, output);
  Value base = arith::IndexCastOp::create(
      b, loc, i64,
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, output));
  Value offset = arith::IndexCastOp::create(b, loc, i64, metadata.getOffset());
  Value address = arith::AddIOp::create(
      b, loc, base,
      arith::MulIOp::create(b, loc, offset,
                            arith::ConstantIntOp::create(b, loc, 4, 64)));
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), address);
  // The warp's partials folded by a butterfly of shuffles (xor 16 ... 1:
  // every lane ends with the warp's maximum; `threads` is whole warps),
  // then lane 0 folds it into the output.
  Value partial = loop.getResult(0);
  for (int32_t offset = 16; offset >= 1; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, loc, partial, offset, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = arith::MaximumFOp::create(b, loc, partial, other);
  }
  Value firstLane = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, launch.getThreadIds().x, index(32)),
      index(0));
  auto guard = scf::IfOp::create(b, loc, firstLane, /*withElseRegion=*/false);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), partial);
  LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::max, pointer, bits,
                            LLVM::AtomicOrdering::monotonic);
  op.erase();
  return true;
}

/// The value `x` combined with which by `combine` gives x back, for the
/// combiners a warp can fold in any order: f32 addf (-0: x + -0 = x for
/// every x, +0 and NaN included), maximumf (-inf) and minimumf (+inf).
std::optional<APFloat> combinerIdentity(Operation *combine) {
  if (!combine->getResult(0).getType().isF32())
    return std::nullopt;
  const llvm::fltSemantics &f32 = APFloat::IEEEsingle();
  if (isa<arith::AddFOp>(combine))
    return APFloat::getZero(f32, /*Negative=*/true);
  if (isa<arith::MaximumFOp>(combine))
    return APFloat::getInf(f32, /*Negative=*/true);
  if (isa<arith::MinimumFOp>(combine))
    return APFloat::getInf(f32, /*Negative=*/false);
  return std::nullopt;
}

/// A dispatch that reduces rows of at least `minLength` consecutive
/// elements (the innermost reduction dimension is every read operand's
/// innermost, unit-stride dimension: softmax's and the norms' rows, the
/// cross-entropy's logits) on a warp per row: lane l folds the row's
/// elements l, l + 32, l + 64, ... (a warp's loads are one coalesced
/// 128-byte line) from the combiner's identity, then the 32 partials fold
/// by a butterfly of shuffles (xor 16, 8, 4, 2, 1: every lane ends with the
/// same value, since a + b == b + a) and lane 0 folds that into the output.
/// One thread a row, the default, reads 32 rows 4 bytes apart per warp
/// load and has few threads: 8192 rows fill 32 blocks. The sums'
/// order is not the sequential one (the CPU's): a fixed tree, the same on
/// every run. Every output must be such a reduction (`out = combine(out,
/// v)`, v computed without the outputs), f32, with addf, maximumf or
/// minimumf. A warp past the last row computes the last row again and
/// stores nothing, so that every lane of every warp takes part in the
/// shuffles. Where the row (and its innermost dimension) divides into runs
/// of `width` and an operand's rows are aligned to them (`alignedRows`, a
/// buffer argument, not a constant global: `constants`), lane l folds runs
/// of `width` instead, elements width l ... width l + width - 1, then 32
/// runs on, the first access of each run carrying the run's alignment (a
/// warp's load is then 512 bytes: ld.global.v4). `fn`'s body must be the
/// generic and constants, after fills of some of its outputs with
/// constants (anvil-outline-dispatches fills-into-reductions): lane 0 then
/// folds a filled output's row into the fill's value where it would have
/// read the output, the same value, and the fills go.
bool mapRowReductions(func::FuncOp fn, int64_t blockSize, int64_t minLength,
                      int64_t width, ArrayRef<memref::GlobalOp> constants) {
  if (minLength <= 0)
    return false;
  SmallVector<linalg::FillOp> fills;
  linalg::GenericOp op = genericAfterFills(fn, fills);
  // Operands indexed by loop dimensions, or 0 (a per-row value broadcast
  // along the row: the cross-entropy's maximum, of shape [rows, 1]).
  auto dimsOrZeros = [](AffineMap m) {
    return llvm::all_of(m.getResults(), [](AffineExpr e) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      return isa<AffineDimExpr>(e) || (c && c.getValue() == 0);
    });
  };
  if (!op || !op.hasPureBufferSemantics() || op.getNumDpsInits() == 0 ||
      !llvm::all_of(op.getIndexingMapsArray(), dimsOrZeros))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> parallel, reduction;
  int64_t rows = 1, length = 1;
  for (auto [d, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (ShapedType::isDynamic(ranges[d]) || ranges[d] <= 0)
      return false;
    if (iterator == utils::IteratorType::parallel) {
      parallel.push_back(d);
      rows *= ranges[d];
    } else {
      reduction.push_back(d);
      length *= ranges[d];
    }
  }
  if (reduction.empty() || length < std::max<int64_t>(minLength, 32))
    return false;
  // Rows: every input that reads along the reduction reads its innermost
  // reduction dimension contiguously.
  unsigned inner = reduction.back();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (llvm::none_of(reduction,
                      [&](unsigned d) { return map.isFunctionOfDim(d); }))
      continue;
    auto type = dyn_cast<MemRefType>(input->get().getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!type || map.getNumResults() == 0 ||
        map.getResults().back() != getAffineDimExpr(inner, op.getContext()) ||
        failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return false;
  }
  // Every output a reduction `combine(out, v)` of a known identity.
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  SmallVector<Operation *> combines;
  SmallVector<APFloat> identities;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    unsigned r = init.getOperandNumber() - op.getNumDpsInputs();
    AffineMap map = op.getMatchingIndexingMap(&init);
    // Indexed by every parallel dimension and no reduction one: each row
    // its own output element.
    if (llvm::any_of(reduction,
                     [&](unsigned d) { return map.isFunctionOfDim(d); }) ||
        !llvm::all_of(parallel,
                      [&](unsigned d) { return map.isFunctionOfDim(d); }))
      return false;
    Value out = body->getArgument(op.getNumDpsInputs() + r);
    Operation *combine = yield.getOperand(r).getDefiningOp();
    if (!combine || combine->getBlock() != body ||
        combine->getNumOperands() != 2 || !out.hasOneUse() ||
        out.getUses().begin()->getOwner() != combine ||
        !combine->getResult(0).hasOneUse())
      return false;
    std::optional<APFloat> identity = combinerIdentity(combine);
    if (!identity)
      return false;
    combines.push_back(combine);
    identities.push_back(*identity);
  }
  // The values folded in read neither output nor another fold.
  for (auto [r, combine] : llvm::enumerate(combines)) {
    Value out = body->getArgument(op.getNumDpsInputs() + r);
    SmallVector<Value> work = {combine->getOperand(0) == out
                                   ? combine->getOperand(1)
                                   : combine->getOperand(0)};
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() == body &&
            arg.getArgNumber() >= op.getNumDpsInputs())
          return false;
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != body || !seen.insert(def).second)
        continue;
      if (llvm::is_contained(combines, def))
        return false;
      work.append(def->operand_begin(), def->operand_end());
    }
  }

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  constexpr int64_t warp = 32;
  int64_t threads = std::min(blockSize, rows * warp);
  int64_t blocks = (rows * warp + threads - 1) / threads;
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  Value tid = launch.getThreadIds().x;
  // One statement an op: the IR's order does not depend on the C++
  // compiler's order of evaluating arguments.
  Value firstWarp = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                          index(threads / warp));
  Value warpInBlock = arith::DivUIOp::create(b, loc, tid, index(warp));
  Value warpIndex = arith::AddIOp::create(b, loc, firstWarp, warpInBlock);
  Value lane = arith::RemUIOp::create(b, loc, tid, index(warp));
  Value row = arith::MinUIOp::create(b, loc, warpIndex, index(rows - 1));
  // Delinearizes `linear` over `dims` (the last fastest) into `ivs`.
  SmallVector<Value> ivs(ranges.size());
  auto delinearize = [&](Value linear, ArrayRef<unsigned> dims) {
    for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
      int64_t extent = ranges[dims[i]];
      if (i == 0) {
        ivs[dims[i]] = linear;
        break;
      }
      ivs[dims[i]] = arith::RemUIOp::create(b, loc, linear, index(extent));
      linear = arith::DivUIOp::create(b, loc, linear, index(extent));
    }
  };
  delinearize(row, parallel);
  Value zero = index(0);
  auto at = [&](OpOperand &operand) {
    return llvm::map_to_vector(op.getMatchingIndexingMap(&operand).getResults(),
                               [&](AffineExpr e) -> Value {
                                 auto dim = dyn_cast<AffineDimExpr>(e);
                                 return dim ? ivs[dim.getPosition()] : zero;
                               });
  };
  // combine(acc, v) or combine(v, acc), in the body's order and with its
  // flags.
  auto fold = [&](Operation *combine, unsigned r, Value acc, Value v) {
    Value out = body->getArgument(op.getNumDpsInputs() + r);
    IRMapping operands;
    operands.map(out, acc);
    for (Value operand : combine->getOperands())
      if (operand != out)
        operands.map(operand, v);
    return b.clone(*combine, operands)->getResult(0);
  };

  SmallVector<Value> inits;
  for (const APFloat &identity : identities)
    inits.push_back(arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(identity.convertToFloat())));
  // Runs of `width` where the rows divide into them and some operand's
  // rows are aligned to them.
  auto alongRows = [&](OpOperand *input) {
    AffineMap map = op.getMatchingIndexingMap(input);
    return llvm::any_of(reduction,
                        [&](unsigned d) { return map.isFunctionOfDim(d); });
  };
  auto alignable = [&](OpOperand *input) {
    return alongRows(input) &&
           alignedArgument(input->get(), fn, constants, width);
  };
  int64_t run = 1;
  if (width > 1 && length % width == 0 && ranges[inner] % width == 0 &&
      llvm::any_of(op.getDpsInputOperands(), alignable))
    run = width;
  Value first =
      run == 1 ? lane
               : arith::MulIOp::create(b, loc, lane, index(run)).getResult();
  auto loop = scf::ForOp::create(b, loc, first, index(length),
                                 index(warp * run), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> accs(loop.getRegionIterArgs());
    for (int64_t j = 0; j < run; ++j) {
      Value k = loop.getInductionVar();
      if (j > 0)
        k = arith::AddIOp::create(b, loc, k, index(j));
      delinearize(k, reduction);
      IRMapping map;
      for (OpOperand *input : op.getDpsInputOperands()) {
        Value value = input->get(); // a scalar, used as it is
        if (isa<MemRefType>(value.getType())) {
          auto load = memref::LoadOp::create(b, loc, value, at(*input));
          if (j == 0 && run > 1 && alignable(input))
            load.setAlignment(
                run *
                cast<MemRefType>(value.getType()).getElementTypeBitWidth() / 8);
          value = load.getResult();
        }
        map.map(body->getArgument(input->getOperandNumber()), value);
      }
      for (Operation &bodyOp : body->without_terminator()) {
        if (llvm::is_contained(combines, &bodyOp))
          continue;
        if (auto idx = dyn_cast<linalg::IndexOp>(bodyOp)) {
          map.map(idx.getResult(), ivs[idx.getDim()]);
          continue;
        }
        b.clone(bodyOp, map);
      }
      for (auto [r, combine] : llvm::enumerate(combines)) {
        Value out = body->getArgument(op.getNumDpsInputs() + r);
        Value v = combine->getOperand(0) == out ? combine->getOperand(1)
                                                : combine->getOperand(0);
        accs[r] = fold(combine, r, accs[r], map.lookupOrDefault(v));
      }
    }
    scf::YieldOp::create(b, loc, accs);
  }
  // The butterfly: after the step of offset o, each lane holds the fold of
  // the lanes whose numbers differ from its own only in bits o and above,
  // the same value in all of them; after offset 1, the fold of all 32.
  SmallVector<Value> partials(loop.getResults());
  for (int32_t offset = warp / 2; offset >= 1; offset /= 2)
    for (auto [r, combine] : llvm::enumerate(combines)) {
      Value other = gpu::ShuffleOp::create(b, loc, partials[r], offset, warp,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      partials[r] = fold(combine, r, partials[r], other);
    }
  // Lane 0 of a warp that has a row folds the row's value into the output.
  Value hasRow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       warpIndex, index(rows));
  Value firstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
  Value store = arith::AndIOp::create(b, loc, hasRow, firstLane);
  auto guard = scf::IfOp::create(b, loc, store, /*withElseRegion=*/false);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  for (auto [r, combine] : llvm::enumerate(combines)) {
    OpOperand &init = op.getDpsInitsMutable()[r];
    SmallVector<Value> where = at(init);
    // The output's value before the reduction: its fill's, or read.
    Value old;
    for (linalg::FillOp fill : fills)
      if (fill.getOutputs()[0] == init.get())
        old = b.clone(*fill.getInputs()[0].getDefiningOp())->getResult(0);
    if (!old)
      old = memref::LoadOp::create(b, loc, init.get(), where);
    Value result = fold(combine, r, old, partials[r]);
    memref::StoreOp::create(b, loc, result, init.get(), where);
  }
  op.erase();
  for (linalg::FillOp fill : fills)
    fill.erase();
  return true;
}

/// Whether `a` and `b` are the same constant indices, in order.
bool sameConstants(ValueRange a, ValueRange b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto pair) {
           std::optional<int64_t> x = getConstantIntValue(std::get<0>(pair));
           return x && x == getConstantIntValue(std::get<1>(pair));
         });
}

/// Whether `indices` are `loop`'s induction variables, in order.
bool atInductionVars(ValueRange indices, scf::ParallelOp loop) {
  return llvm::equal(indices, loop.getInductionVars());
}

/// A fill's loop nest (anvil-outline-dispatches fills-into-reductions) into
/// the next nest of `fn`: where a top-level scf.parallel only stores a value
/// defined outside it into B at its induction variables, and the next
/// top-level nest has the same bounds and touches B only at its own
/// induction variables, first by a load in its body's block, and stores
/// each point in that block, that load becomes the value and the fill's
/// nest goes (one launch fewer; every point of B still starts from the
/// value and ends written). The reductions that run a thread an output
/// (column sums) start so.
void foldFillNests(func::FuncOp fn) {
  SmallVector<scf::ParallelOp> nests(fn.front().getOps<scf::ParallelOp>());
  for (auto [fill, next] : llvm::zip(nests, llvm::drop_begin(nests))) {
    // Nothing but constants between the two.
    Operation *between = fill->getNextNode();
    while (between != next.getOperation() &&
           between->hasTrait<OpTrait::ConstantLike>())
      between = between->getNextNode();
    Block *fillBody = fill.getBody();
    if (fillBody->getOperations().size() != 2) // the store and the yield
      continue;
    auto store = dyn_cast<memref::StoreOp>(fillBody->front());
    if (!store || !atInductionVars(store.getIndices(), fill) ||
        !fill.isDefinedOutsideOfLoop(store.getValueToStore()) ||
        !sameConstants(fill.getLowerBound(), next.getLowerBound()) ||
        !sameConstants(fill.getUpperBound(), next.getUpperBound()) ||
        !sameConstants(fill.getStep(), next.getStep()) ||
        between != next.getOperation())
      continue;
    Value buffer = store.getMemRef();
    memref::LoadOp first;
    bool alone = true;
    for (Operation *user : buffer.getUsers()) {
      if (user == store.getOperation() || !next->isAncestor(user))
        continue;
      auto load = dyn_cast<memref::LoadOp>(user);
      auto write = dyn_cast<memref::StoreOp>(user);
      ValueRange indices = load    ? load.getIndices()
                           : write ? write.getIndices()
                                   : ValueRange();
      if ((!load && !write) || !atInductionVars(indices, next)) {
        alone = false;
        break;
      }
      if (load && load->getBlock() == next.getBody() &&
          (!first || load->isBeforeInBlock(first)))
        first = load;
    }
    // The load comes before every other access of B in the body.
    if (!alone || !first)
      continue;
    Block *body = next.getBody();
    bool firstAccess = llvm::all_of(buffer.getUsers(), [&](Operation *user) {
      if (user == first.getOperation() || !next->isAncestor(user))
        return true;
      Operation *ancestor = body->findAncestorOpInBlock(*user);
      return ancestor && first->isBeforeInBlock(ancestor);
    });
    // And B is written at every point (the fill's values are not needed
    // after the nest either): a store in the body's block.
    bool written = llvm::any_of(buffer.getUsers(), [&](Operation *user) {
      return isa<memref::StoreOp>(user) && user->getBlock() == body;
    });
    if (!firstAccess || !written)
      continue;
    first.getResult().replaceAllUsesWith(store.getValueToStore());
    first.erase();
    fill.erase();
  }
}

/// Moves the whole body of `fn` (but its return) into a one-thread launch.
void runOnOneThread(func::FuncOp fn) {
  Block &entry = fn.front();
  OpBuilder b(&entry, entry.begin());
  gpu::LaunchOp launch = createLaunch(b, fn.getLoc(), 1, 1);
  Operation *end = launch.getBody().front().getTerminator();
  for (Operation &op : llvm::make_early_inc_range(
           llvm::make_range(std::next(launch->getIterator()), entry.end())))
    if (!isa<func::ReturnOp>(op))
      op.moveBefore(end);
}

/// The constant global `v` is (the host's memory), or null.
memref::GlobalOp constantGlobal(Value v, SymbolTable &symbols) {
  auto get = v.getDefiningOp<memref::GetGlobalOp>();
  auto global = get ? symbols.lookup<memref::GlobalOp>(get.getName()) : nullptr;
  return global && global.getConstant() ? global : memref::GlobalOp();
}

/// Kernels cannot read the host's globals, so a dispatch reads the constant
/// globals its calls pass inside its kernels instead (outlining then copies
/// each global into the kernel's module, in device memory). That needs
/// every call of a dispatch to pass the same global for an argument: where
/// calls differ (Llama's rotary tables, cos and sin in one call, sin and
/// cos in another), each further combination of globals gets a copy of the
/// dispatch of its own (`<dispatch>_c<k>`), which its calls then call.
/// Updates `calls` (by callee) for the copies.
void specializeForConstants(
    ModuleOp module, SymbolTable &symbols,
    llvm::DenseMap<StringRef, SmallVector<func::CallOp>> &calls) {
  SmallVector<func::FuncOp> dispatches;
  for (func::FuncOp fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && fn.getName().contains("__dispatch_"))
      dispatches.push_back(fn);
  for (func::FuncOp fn : dispatches) {
    // Calls grouped by the globals they pass, in order of first call.
    SmallVector<std::pair<SmallVector<Operation *>, SmallVector<func::CallOp>>>
        groups;
    for (func::CallOp call : calls.lookup(fn.getName())) {
      SmallVector<Operation *> key;
      for (Value operand : call.getOperands())
        key.push_back(constantGlobal(operand, symbols));
      auto *group =
          llvm::find_if(groups, [&](const auto &g) { return g.first == key; });
      if (group == groups.end())
        group = &groups.emplace_back(key, SmallVector<func::CallOp>());
      group->second.push_back(call);
    }
    if (groups.size() < 2)
      continue;
    calls[fn.getName()] = groups.front().second;
    Block::iterator after = std::next(fn->getIterator());
    for (auto [k, group] : llvm::enumerate(llvm::drop_begin(groups))) {
      func::FuncOp copy = fn.clone();
      copy.setName((fn.getName() + "_c" + Twine(k + 1)).str());
      symbols.insert(copy, after);
      for (func::CallOp call : group.second)
        call.setCallee(copy.getName());
      calls[copy.getName()] = group.second;
    }
  }
}

/// For each argument of `fn`: the constant global every call passes for it
/// (specializeForConstants made them agree), or null.
SmallVector<memref::GlobalOp> constantArguments(func::FuncOp fn,
                                                SymbolTable &symbols,
                                                ArrayRef<func::CallOp> calls) {
  SmallVector<memref::GlobalOp> globals(fn.getNumArguments());
  if (calls.empty())
    return globals;
  func::CallOp first = calls.front();
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    globals[i] = constantGlobal(first.getOperand(i), symbols);
    assert(llvm::all_of(calls,
                        [&](func::CallOp call) {
                          return constantGlobal(call.getOperand(i), symbols) ==
                                 globals[i];
                        }) &&
           "specializeForConstants makes the calls agree");
  }
  return globals;
}

/// In every launch of `fn`, reads the constant globals of `globals` (by
/// argument) inside the launch rather than through the argument.
void readConstantsInKernels(func::FuncOp fn,
                            ArrayRef<memref::GlobalOp> globals) {
  fn.walk([&](gpu::LaunchOp launch) {
    OpBuilder b(&launch.getBody().front(), launch.getBody().front().begin());
    for (auto [arg, constGlobal] : llvm::zip(fn.getArguments(), globals)) {
      memref::GlobalOp global = constGlobal;
      if (!global)
        continue;
      Value inside;
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        if (!launch->isProperAncestor(use.getOwner()))
          continue;
        if (!inside)
          inside = memref::GetGlobalOp::create(
              b, launch.getLoc(), global.getType(), global.getSymName());
        use.set(inside);
      }
    }
  });
}

/// Whether `memref` is (a view of) a constant global: host memory.
bool isHostGlobal(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (isa<memref::GetGlobalOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    memref = view.getViewSource();
  }
  return false;
}

/// Moves a host function's copy between device buffers (the workspace's
/// views, the trainer's buffers: a loss into its result) into a kernel of
/// one thread per element. The workspace is device memory, which the host
/// cannot read (RuntimeABI.h); a copy out of a constant global, in the
/// host's memory, stays on the host. Returns false for a copy it leaves.
bool copyOnDevice(memref::CopyOp copy, int64_t blockSize) {
  auto source = dyn_cast<MemRefType>(copy.getSource().getType());
  auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
  if (!source || !target || !source.hasStaticShape() ||
      !target.hasStaticShape() || isHostGlobal(copy.getSource()) ||
      isHostGlobal(copy.getTarget()))
    return false;
  OpBuilder b(copy);
  Location loc = copy.getLoc();
  if (source.getRank() == 0) {
    createLaunch(b, loc, 1, 1);
    Value v = memref::LoadOp::create(b, loc, copy.getSource());
    memref::StoreOp::create(b, loc, v, copy.getTarget());
  } else {
    SmallVector<Value> zeros, extents, ones;
    for (int64_t extent : source.getShape()) {
      zeros.push_back(arith::ConstantIndexOp::create(b, loc, 0));
      extents.push_back(arith::ConstantIndexOp::create(b, loc, extent));
      ones.push_back(arith::ConstantIndexOp::create(b, loc, 1));
    }
    auto loop = scf::ParallelOp::create(b, loc, zeros, extents, ones);
    b.setInsertionPointToStart(loop.getBody());
    Value v = memref::LoadOp::create(b, loc, copy.getSource(),
                                     loop.getInductionVars());
    memref::StoreOp::create(b, loc, v, copy.getTarget(),
                            loop.getInductionVars());
    if (std::optional<Space> space = staticSpace(loop); space && space->total)
      mapToGrid(loop, *space, blockSize);
    else
      loop.erase(); // an empty copy
  }
  copy.erase();
  return true;
}

/// Moves a host function's store of a scalar into a device buffer (a mesh
/// axis's index into the workspace) into a kernel of one thread, which
/// takes the value as an argument. Only a store into (a view of) one of the
/// function's buffer arguments moves, the workspace or the trainer's
/// buffers; one into the host's own memory (a stack slot, an allocation
/// the host reads back, a global) stays.
bool storeOnDevice(memref::StoreOp store) {
  Value root = store.getMemRef();
  while (Operation *def = root.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    root = view.getViewSource();
  }
  if (!isa<BlockArgument>(root))
    return false;
  OpBuilder b(store);
  createLaunch(b, store.getLoc(), 1, 1);
  store->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
  return true;
}

struct AnvilCUDAMapDispatchesPass
    : mlir::anvil::impl::AnvilCUDAMapDispatchesPassBase<
          AnvilCUDAMapDispatchesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32 != 0) {
      getOperation().emitError("anvil-cuda-map-dispatches: block-size = ")
          << static_cast<int64_t>(blockSize)
          << " is not a multiple of 32 in [32, 1024]";
      return signalPassFailure();
    }
    if (vectorWidth != 1 && vectorWidth != 2 && vectorWidth != 4) {
      getOperation().emitError("anvil-cuda-map-dispatches: vector-width = ")
          << static_cast<int64_t>(vectorWidth) << " is not 1, 2 or 4";
      return signalPassFailure();
    }
    if (warpReductions < 0) {
      getOperation().emitError("anvil-cuda-map-dispatches: warp-reductions = ")
          << static_cast<int64_t>(warpReductions)
          << " is not a number of terms (0: no warp reductions)";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::DenseMap<StringRef, SmallVector<func::CallOp>> calls;
    module.walk(
        [&](func::CallOp call) { calls[call.getCallee()].push_back(call); });
    specializeForConstants(module, symbols, calls);
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn.getName().contains("__dispatch_"))
        continue;
      SmallVector<memref::GlobalOp> constants =
          constantArguments(fn, symbols, calls.lookup(fn.getName()));
      if (mapTranspose(fn, blockSize) || mapFullReduction(fn, blockSize) ||
          mapRowReductions(fn, blockSize, warpReductions, vectorWidth,
                           constants)) {
        readConstantsInKernels(fn, constants);
        continue;
      }
      // Linalg ops to loops: parallel dimensions as scf.parallel, reduction
      // dimensions as scf.for inside.
      SmallVector<linalg::LinalgOp> ops;
      fn.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
      for (linalg::LinalgOp op : ops) {
        parallelLoopsFirst(rewriter, op);
        rewriter.setInsertionPoint(op);
        if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
          op->emitError("anvil-cuda-map-dispatches: cannot turn '")
              << op->getName() << "' into loops";
          return signalPassFailure();
        }
        rewriter.eraseOp(op);
      }
      keepAccumulatorsInRegisters(rewriter, fn);

      // A sequential loop around a column loop: the columns outermost.
      for (auto loop :
           llvm::make_early_inc_range(fn.front().getOps<scf::ForOp>()))
        hoistColumnLoops(loop, calls.lookup(fn.getName()));

      foldFillNests(fn);

      // Every loop nest onto a grid when the body is nothing else.
      SmallVector<std::pair<scf::ParallelOp, Space>> nests;
      bool onlyNests = true;
      for (Operation &op : fn.front().without_terminator()) {
        if (op.hasTrait<OpTrait::ConstantLike>())
          continue;
        auto loop = dyn_cast<scf::ParallelOp>(op);
        std::optional<Space> space =
            loop ? staticSpace(loop) : std::optional<Space>();
        if (!space || space->total == 0) {
          onlyNests = false;
          break;
        }
        nests.emplace_back(loop, *space);
      }
      if (onlyNests && !nests.empty()) {
        for (auto &[loop, space] : nests) {
          widenInnermost(loop, space, vectorWidth, fn, constants);
          mapToGrid(loop, space, blockSize);
        }
      } else {
        runOnOneThread(fn);
      }
      readConstantsInKernels(fn, constants);
    }
    // The host functions' own copies between device buffers.
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn.getName().contains("__dispatch_"))
        continue;
      SmallVector<memref::CopyOp> copies;
      fn.walk([&](memref::CopyOp copy) {
        if (!copy->getParentOfType<gpu::LaunchOp>())
          copies.push_back(copy);
      });
      for (memref::CopyOp copy : copies)
        copyOnDevice(copy, blockSize);
      SmallVector<memref::StoreOp> stores;
      fn.walk([&](memref::StoreOp store) {
        if (!store->getParentOfType<gpu::LaunchOp>())
          stores.push_back(store);
      });
      for (memref::StoreOp store : stores)
        storeOnDevice(store);
    }
  }
};

} // namespace
