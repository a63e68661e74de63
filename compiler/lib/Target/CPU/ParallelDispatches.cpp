//===- ParallelDispatches.cpp - chunked kernels for the thread pool -------===//
//
// 1. Find the outlined dispatch functions whose body is a single linalg op
//    on buffers with static loop ranges, a parallel first loop of extent R
//    >= 2, and at least `min-iterations` iterations.
// 2. Clone each into `<name>__chunk_of_<R>` with two more arguments (lo,
//    hi), lower its op to loops there, and bound the outermost loop (the
//    first, parallel, dimension) by [lo, hi).
// The object emitter completes the job (ObjectEmitter.cpp): the dispatch
// function's body becomes one anvil_rt_parallel_for call over the chunk
// function.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCPUPARALLELDISPATCHESPASS
#include "anvil/Target/CPU/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// The single linalg op of a dispatch function, if that is all it holds.
linalg::LinalgOp soleKernel(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  if (body.getOperations().size() != 2)
    return nullptr;
  auto op = dyn_cast<linalg::LinalgOp>(body.front());
  return op && op.hasPureBufferSemantics() ? op : nullptr;
}

struct AnvilCPUParallelDispatchesPass
    : mlir::anvil::impl::AnvilCPUParallelDispatchesPassBase<
          AnvilCPUParallelDispatchesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    SmallVector<func::FuncOp> dispatches;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.getName().contains("__dispatch_") &&
          !fn.getName().contains("__chunk_of_"))
        dispatches.push_back(fn);
    for (func::FuncOp fn : dispatches) {
      linalg::LinalgOp kernel = soleKernel(fn);
      if (!kernel)
        continue;
      SmallVector<int64_t> ranges = kernel.getStaticLoopRanges();
      if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic) ||
          kernel.getIteratorTypesArray()[0] != utils::IteratorType::parallel ||
          ranges[0] < 2)
        continue;
      int64_t total = 1;
      for (int64_t r : ranges)
        total *= r;
      if (total < minIterations)
        continue;

      // 2. The chunk function.
      rewriter.setInsertionPointAfter(fn);
      auto chunk = cast<func::FuncOp>(rewriter.clone(*fn));
      chunk.setName((fn.getName() + "__chunk_of_" + Twine(ranges[0])).str());
      Location loc = fn.getLoc();
      Type index = rewriter.getIndexType();
      unsigned n = chunk.getNumArguments();
      if (failed(chunk.insertArguments(
              {n, n}, {index, index},
              {rewriter.getDictionaryAttr({}), rewriter.getDictionaryAttr({})},
              {loc, loc}))) {
        fn.emitError("anvil-cpu-parallel-dispatches: cannot add the chunk "
                     "bounds");
        return signalPassFailure();
      }
      Value lo = chunk.getArgument(n), hi = chunk.getArgument(n + 1);
      auto clonedKernel = soleKernel(chunk);
      rewriter.setInsertionPoint(clonedKernel);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToLoops(rewriter, clonedKernel);
      if (failed(loops) || loops->empty()) {
        fn.emitError("anvil-cpu-parallel-dispatches: cannot lower the kernel "
                     "to loops");
        return signalPassFailure();
      }
      rewriter.eraseOp(clonedKernel);
      auto outer = cast<scf::ForOp>(loops->front());
      outer.setLowerBound(lo);
      outer.setUpperBound(hi);
    }
  }
};

} // namespace
