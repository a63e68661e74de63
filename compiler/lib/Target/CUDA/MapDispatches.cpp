//===- MapDispatches.cpp - dispatch regions onto a CUDA grid --------------===//
//
// Each outlined dispatch function's linalg ops become parallel loops (the
// parallel dimensions outermost, reductions inside), and each loop nest one
// gpu.launch over its linearized iteration space: thread i of the grid
// computes the point i of the space, innermost dimension fastest, so a
// warp's threads read and write consecutive elements.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

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

/// For each argument of `fn`: the constant global every call passes for it,
/// or null. Kernels cannot read the host's globals, so these are read inside
/// the kernels instead (outlining then copies the global into the kernel's
/// module, in device memory). Where some calls pass a global for an
/// argument and others something else, those calls pass a copy of the
/// global in memory the device can read instead (memref.alloc: the
/// runtime's managed memory in CUDA executables), made before the call and
/// freed after it.
SmallVector<memref::GlobalOp> constantArguments(func::FuncOp fn,
                                                SymbolTable &symbols,
                                                ArrayRef<func::CallOp> calls) {
  SmallVector<memref::GlobalOp> globals(fn.getNumArguments());
  auto constantOf = [&](Value v) {
    auto get = v.getDefiningOp<memref::GetGlobalOp>();
    auto global =
        get ? symbols.lookup<memref::GlobalOp>(get.getName()) : nullptr;
    return global && global.getConstant() ? global : memref::GlobalOp();
  };
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    memref::GlobalOp global;
    bool same = !calls.empty();
    for (func::CallOp call : calls) {
      memref::GlobalOp g = constantOf(call.getOperand(i));
      same &= g && (!global || g == global);
      global = g ? g : global;
    }
    if (same) {
      globals[i] = global;
      continue;
    }
    for (func::CallOp call : calls) {
      Value operand = call.getOperand(i);
      if (!constantOf(operand))
        continue;
      OpBuilder b(call);
      auto type = cast<MemRefType>(operand.getType());
      Value copy = memref::AllocOp::create(b, call.getLoc(), type);
      memref::CopyOp::create(b, call.getLoc(), operand, copy);
      call->setOperand(i, copy);
      b.setInsertionPointAfter(call);
      memref::DeallocOp::create(b, call.getLoc(), copy);
    }
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
    IRRewriter rewriter(&getContext());
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::DenseMap<StringRef, SmallVector<func::CallOp>> calls;
    module.walk(
        [&](func::CallOp call) { calls[call.getCallee()].push_back(call); });
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn.getName().contains("__dispatch_"))
        continue;
      SmallVector<memref::GlobalOp> constants =
          constantArguments(fn, symbols, calls.lookup(fn.getName()));
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
        for (auto &[loop, space] : nests)
          mapToGrid(loop, space, blockSize);
      } else {
        runOnOneThread(fn);
      }
      readConstantsInKernels(fn, constants);
    }
  }
};

} // namespace
