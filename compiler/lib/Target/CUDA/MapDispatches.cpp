//===- MapDispatches.cpp - dispatch regions onto a CUDA grid --------------===//
//
// Each outlined dispatch function's linalg ops become parallel loops (the
// parallel dimensions outermost, reductions inside), and each loop nest one
// gpu.launch over its linearized iteration space: thread i of the grid
// computes the point i of the space, innermost dimension fastest, so a
// warp's threads read and write consecutive elements. A dispatch that is
// one full amax reduction (FP8's) folds grid-stride partials per thread and
// then atomically into its output; one that reduces long contiguous rows
// runs a warp per row (both in MapReductions.cpp); one that transposes its
// innermost dimension away goes through 32 x 32 tiles in shared memory
// (MapTranspose.cpp); a row group (anvil-row-groups) runs a warp per row,
// its ops one after another (MapRowGroups.cpp). The host functions' copies
// between device buffers become kernels too (the workspace is device
// memory).
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "GridMapping.h"

#include "anvil/Conversion/Globals.h"

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
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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
using namespace mlir::anvil::cuda::grid;

namespace mlir::anvil::cuda::grid {

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

/// Whether points `width` apart along the innermost dimension of `type`
/// start at addresses aligned to `width` elements, given a base address
/// aligned to that many bytes at least (every buffer is: the memory plan's
/// 64 bytes, the runtime's allocations): 16- and 32-bit elements, static
/// strides and offset, the innermost stride 1 and the others and the
/// offset multiples of `width`.
static bool alignedRows(MemRefType type, int64_t width) {
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

} // namespace mlir::anvil::cuda::grid

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

/// Gives each point of `loop` (a loop nest of loads, stores and pure
/// arithmetic: an elementwise dispatch) `width` consecutive points of its
/// innermost dimension, so that a thread's accesses to a buffer along that
/// dimension are `width` consecutive elements at an address aligned to
/// their size: one vector.load or vector.store with that alignment
/// (`ld.global.v4.f32`: a warp moves 512 bytes a load instead of 128).
/// Every value is computed as before (each lane's operations on its own
/// point; what does not depend on the point, once for the run); only
/// accesses to `alignedRows` buffers of the dispatch (its arguments, not
/// the constant globals read in its kernels, whose alignment is their own)
/// are vectors, others stay one element at a time. When the innermost
/// extent is not a multiple of `width` (GPT-2's logits: 50257 columns,
/// rows padded to 50304 by anvil-cpu-pad-gemm-rows), the remaining points
/// of each row become a nest of their own after it, `tail`, one point a
/// thread: a second launch (a branch in the kernel instead would join the
/// two paths, and LLVM sinks their last stores into the join, where no
/// vector store can take them), for nests of a million points or more. `loop`
/// and `space` are replaced; false (nothing changed) when the nest does not
/// qualify or no access would be aligned.
bool widenInnermost(scf::ParallelOp &loop, Space &space, int64_t width,
                    func::FuncOp fn, ArrayRef<memref::GlobalOp> constants,
                    std::optional<std::pair<scf::ParallelOp, Space>> &tail) {
  unsigned rank = space.extent.size();
  if (width <= 1 || rank == 0 || space.lower.back() != 0 ||
      space.step.back() != 1 || space.extent.back() < width)
    return false;
  int64_t fullRuns = space.extent.back() / width;
  int64_t rest = space.extent.back() % width;
  // A second launch for the rows' last points pays only when the nest is
  // large: about a microsecond's work at HBM speed and up (a million
  // points), not the FP8 amax history's shifts (1023 points).
  constexpr int64_t kMinPointsWithTail = int64_t(1) << 20;
  if (rest != 0 && space.total < kMinPointsWithTail)
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
  // The values that differ from lane to lane (computed from the innermost
  // index); an access whose other indices are among them reads or writes a
  // row of each lane's own, one element at a time.
  DenseSet<Value> perLane = {inner};
  auto commonRow = [&](ValueRange indices) {
    return llvm::none_of(indices.drop_back(),
                         [&](Value i) { return perLane.contains(i); });
  };
  unsigned aligned = 0;
  for (Operation &op : body->without_terminator()) {
    if (op.getNumRegions() != 0)
      return false;
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return perLane.contains(v); }))
      perLane.insert(op.result_begin(), op.result_end());
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (alongInner(load.getIndices()) && commonRow(load.getIndices()) &&
          alignable(load.getMemRef()))
        ++aligned;
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      // A store must write one element per point.
      if (!alongInner(store.getIndices()))
        return false;
      if (commonRow(store.getIndices()) && alignable(store.getMemRef()))
        ++aligned;
      continue;
    }
    if (!isMemoryEffectFree(&op))
      return false;
  }
  // The innermost index may also feed arithmetic (a one-hot's compare with
  // the column: each lane computes its own), and loads (each lane's own);
  // stores are along it (above).
  for (OpOperand &use : inner.getUses()) {
    Operation *user = use.getOwner();
    if (!isa<memref::LoadOp, memref::StoreOp>(user) &&
        !isMemoryEffectFree(user))
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
    int64_t extent = d + 1 == rank ? fullRuns : space.extent[d];
    ubs.push_back(index(space.lower[d] + extent * space.step[d]));
    steps.push_back(index(space.step[d]));
  }
  auto wide = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
  b.setInsertionPointToStart(wide.getBody());
  // Lane k of the thread's run is point first + k.
  Value first = arith::MulIOp::create(b, loc, wide.getInductionVars().back(),
                                      index(width));
  SmallVector<IRMapping> lanes(width);
  for (int64_t k = 0; k < width; ++k) {
    for (unsigned d = 0; d + 1 < rank; ++d)
      lanes[k].map(loop.getInductionVars()[d], wide.getInductionVars()[d]);
    lanes[k].map(
        inner,
        k == 0 ? first
               : arith::AddIOp::create(b, loc, first, index(k)).getResult());
  }
  for (Operation &op : body->without_terminator()) {
    // (`perLane`, found above, holds what differs from lane to lane.)
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return perLane.contains(v); })) {
      Operation *once = b.clone(op, lanes[0]);
      for (int64_t k = 1; k < width; ++k)
        lanes[k].map(op.getResults(), once->getResults());
      continue;
    }
    // An aligned run's loads and stores: one vector access each (left to
    // LLVM, its SLP vectorizer packs bf16 lanes in pairs first, and the
    // load/store vectorizer then cannot join a [1, 2, 1] run), where its
    // other indices are the lanes' common ones (`commonRow`, above).
    auto runIndices = [&](ValueRange indices) {
      return llvm::map_to_vector(
          indices, [&](Value i) { return lanes[0].lookupOrDefault(i); });
    };
    auto runAlignment = [&](Value memref) {
      auto type = cast<MemRefType>(memref.getType());
      return llvm::MaybeAlign(width * type.getElementTypeBitWidth() / 8);
    };
    auto runType = [&](Value memref) {
      return VectorType::get(
          {width}, cast<MemRefType>(memref.getType()).getElementType());
    };
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && alongInner(load.getIndices()) && commonRow(load.getIndices()) &&
        alignable(load.getMemRef())) {
      auto vectorLoad = vector::LoadOp::create(
          b, loc, runType(load.getMemRef()), load.getMemRef(),
          runIndices(load.getIndices()), /*nontemporal=*/false,
          runAlignment(load.getMemRef()));
      for (int64_t k = 0; k < width; ++k)
        lanes[k].map(
            load.getResult(),
            vector::ExtractOp::create(b, loc, vectorLoad, k).getResult());
    } else if (auto store = dyn_cast<memref::StoreOp>(op);
               store && alongInner(store.getIndices()) &&
               commonRow(store.getIndices()) && alignable(store.getMemRef())) {
      SmallVector<Value> values;
      for (int64_t k = 0; k < width; ++k)
        values.push_back(lanes[k].lookupOrDefault(store.getValueToStore()));
      Value run = vector::FromElementsOp::create(
          b, loc, runType(store.getMemRef()), values);
      vector::StoreOp::create(
          b, loc, run, store.getMemRef(), runIndices(store.getIndices()),
          /*nontemporal=*/false, runAlignment(store.getMemRef()));
    } else {
      for (int64_t k = 0; k < width; ++k)
        b.clone(op, lanes[k]);
    }
  }
  if (rest != 0) {
    // The rows' last `rest` points: the nest as it was, over them alone.
    b.setInsertionPointAfter(wide);
    lbs.back() = index(fullRuns * width);
    ubs.back() = index(space.extent.back());
    steps.back() = index(1);
    auto last = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
    IRMapping map;
    map.map(loop.getInductionVars(), last.getInductionVars());
    b.setInsertionPointToStart(last.getBody());
    for (Operation &op : body->without_terminator())
      b.clone(op, map);
    tail.emplace(last, *staticSpace(last));
  }
  loop.erase();
  loop = wide;
  space = *staticSpace(wide);
  return true;
}

/// Unrolls by 4 each sequential loop of a kernel's thread with constant
/// bounds, at least 8 iterations and a small body with no regions of its
/// own (a split sum's 128 rows, a second stage's 64 partials): the loads
/// of four iterations, which do not depend on the sums they feed, can then
/// issue together (LLVM's NVPTX unroller took two), the sums adding in the
/// same order. A thread's loop over rows waits on memory for every load it
/// has not issued ahead; a GPU hides that only with loads in flight.
void unrollThreadLoops(ModuleOp module) {
  constexpr int64_t kFactor = 4, kMinTrips = 8, kMaxBodyOps = 48;
  SmallVector<scf::ForOp> loops;
  module.walk([&](scf::ForOp loop) {
    if (!loop->getParentOfType<gpu::LaunchOp>())
      return;
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (!lb || !ub || !step || *step <= 0 || *lb < 0 ||
        (*ub - *lb + *step - 1) / *step < kMinTrips)
      return;
    Block *body = loop.getBody();
    if (body->getOperations().size() > kMaxBodyOps ||
        llvm::any_of(*body, [](Operation &op) { return op.getNumRegions(); }))
      return;
    loops.push_back(loop);
  });
  for (scf::ForOp loop : loops)
    (void)loopUnrollByFactor(loop, kFactor);
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

/// Whether two loop nests have the same constant bounds.
bool sameSpace(scf::ParallelOp a, scf::ParallelOp b) {
  std::optional<Space> x = staticSpace(a), y = staticSpace(b);
  return x && y && x->lower == y->lower && x->extent == y->extent &&
         x->step == y->step;
}

/// Whether `indices` are `loop`'s induction variables, in order.
bool atInductionVars(ValueRange indices, scf::ParallelOp loop) {
  return llvm::equal(indices, loop.getInductionVars());
}

/// The store of `nest` when that is all it does: a value defined outside
/// it, into a buffer at its induction variables (a fill's loop nest).
memref::StoreOp fillStore(scf::ParallelOp nest) {
  Block *body = nest.getBody();
  if (body->getOperations().size() != 2) // the store and the yield
    return nullptr;
  auto store = dyn_cast<memref::StoreOp>(body->front());
  if (!store || !atInductionVars(store.getIndices(), nest) ||
      !nest.isDefinedOutsideOfLoop(store.getValueToStore()))
    return nullptr;
  return store;
}

/// A fill's loop nest (anvil-outline-dispatches fills-into-reductions) into
/// the nest it starts: where a top-level scf.parallel only stores a value
/// defined outside it into B at its induction variables, and the next
/// top-level nest (past constants, and past fill nests of the same bounds
/// of other buffers that it writes: a merged reduction's outputs, each
/// filled) has the same bounds and touches B only at its own induction
/// variables, first by a load in its body's block, and stores each point
/// in that block, that load becomes the value and the fill's nest goes
/// (one launch fewer; every point of B still starts from the value and
/// ends written). The reductions that run a thread an output (column sums)
/// start so.
void foldFillNests(func::FuncOp fn) {
  SmallVector<scf::ParallelOp> nests(fn.front().getOps<scf::ParallelOp>());
  // Only the nest being looked at is erased: one looked at later, or found
  // as the next, is still there.
  for (scf::ParallelOp fill : nests) {
    memref::StoreOp store = fillStore(fill);
    if (!store)
      continue;
    scf::ParallelOp next;
    SmallVector<Value> passed; // the buffers of the fill nests passed over
    for (Operation *op = fill->getNextNode(); op; op = op->getNextNode()) {
      if (op->hasTrait<OpTrait::ConstantLike>())
        continue;
      auto nest = dyn_cast<scf::ParallelOp>(op);
      if (!nest)
        break;
      memref::StoreOp other = fillStore(nest);
      if (other && other.getMemRef() != store.getMemRef() &&
          sameSpace(fill, nest)) {
        passed.push_back(other.getMemRef());
        continue;
      }
      next = nest;
      break;
    }
    // Each buffer passed over is another that the next nest writes in its
    // body's block (a merged reduction's other output), so no two fills of
    // one buffer trade places.
    auto writtenByNext = [&](Value other) {
      return llvm::any_of(other.getUsers(), [&](Operation *user) {
        return isa<memref::StoreOp>(user) && user->getBlock() == next.getBody();
      });
    };
    if (!next || !sameSpace(fill, next) || !llvm::all_of(passed, writtenByNext))
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

/// Moves a host function's copy between device buffers (the workspace's
/// views, the trainer's buffers: a loss into its result) into a kernel of
/// one thread per element. The workspace is device memory, which the host
/// cannot read (RuntimeABI.h); a copy out of a constant global, in the
/// host's memory, stays on the host. Returns false for a copy it leaves.
bool copyOnDevice(memref::CopyOp copy, int64_t blockSize) {
  auto source = dyn_cast<MemRefType>(copy.getSource().getType());
  auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
  if (!source || !target || !source.hasStaticShape() ||
      !target.hasStaticShape() || anvil::isGlobalView(copy.getSource()) ||
      anvil::isGlobalView(copy.getTarget()))
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
      if (mapRowGroup(fn, blockSize, warpReductions, vectorWidth, constants) ||
          mapTranspose(fn, blockSize) || mapFullReduction(fn, blockSize) ||
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
          std::optional<std::pair<scf::ParallelOp, Space>> tail;
          widenInnermost(loop, space, vectorWidth, fn, constants, tail);
          mapToGrid(loop, space, blockSize);
          if (tail)
            mapToGrid(tail->first, tail->second, blockSize);
        }
      } else {
        runOnOneThread(fn);
      }
      readConstantsInKernels(fn, constants);
    }
    unrollThreadLoops(module);
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
