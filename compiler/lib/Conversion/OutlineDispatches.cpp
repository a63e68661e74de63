//===- OutlineDispatches.cpp - one function per dispatch region -----------===//
//
// 1. In every function with a body, collect the top-level ops that are
//    dispatch regions: linalg ops, and loops or regions containing linalg
//    ops (the scatter-add of embedding_grad). Only ops without results
//    qualify: after bufferization, kernels write buffers.
// 2. Wrap each in an `scf.execute_region`, clone the constants it uses
//    into that region, and outline the region into a private function
//    `<function>__dispatch_<n>` (upstream outlineSingleBlockRegion); the
//    remaining operands become arguments.
// 3. Inline the now trivial execute_region, leaving the call.
// 4. Keep one function per distinct kernel: dispatch functions that print
//    the same (apart from their names) are merged and their calls
//    redirected. A deep model's layers repeat the same kernels, so this
//    divides what the rest of the pipeline and LLVM compile by the number
//    of layers.
//
// A row group (anvil-row-groups' region) is one dispatch: its ops make the
// outlined function's body, which carries the group's mark for
// anvil-cuda-map-dispatches.
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"
#include "anvil/Conversion/RowGroups.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILOUTLINEDISPATCHESPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// With fills-into-reductions: when `fill` (a linalg.fill of a buffer with
/// a constant) is followed, past ops free of memory effects and constant
/// fills of the generic's other outputs only (a merged reduction's outputs,
/// each filled), by a dispatch that is a linalg.generic with parallel and
/// reduction loops
/// whose outputs include the filled buffer and whose inputs do not (nor a
/// view of it), that generic: the two make one dispatch, so that a grid's
/// reduction can start from the fill's value instead of a launch of its
/// own writing it. Null otherwise. (A reduction over every loop, such
/// as FP8's amax, is left alone: its blocks fold into the output
/// atomically, which must be filled before any of them starts.)
linalg::GenericOp reductionFilled(linalg::FillOp fill) {
  if (!fill.hasPureBufferSemantics() ||
      !fill.getInputs()[0].getDefiningOp<arith::ConstantOp>())
    return nullptr;
  Value buffer = fill.getOutputs()[0];
  // Whether `v` is the buffer or a view of it.
  auto viewsBuffer = [&](Value v) {
    while (v != buffer) {
      auto view = v.getDefiningOp<ViewLikeOpInterface>();
      if (!view)
        return false;
      v = view.getViewSource();
    }
    return true;
  };
  // The constant fills passed over: each must fill another output of the
  // generic (then it joins the region too, and no write moves past
  // another).
  SmallVector<linalg::FillOp> passed;
  for (Operation *op = fill->getNextNode(); op; op = op->getNextNode()) {
    if (!anvil::rows::isDispatchRegion(op)) {
      if (!isMemoryEffectFree(op))
        return nullptr;
      continue;
    }
    if (auto other = dyn_cast<linalg::FillOp>(op);
        other && other.hasPureBufferSemantics() &&
        other.getInputs()[0].getDefiningOp<arith::ConstantOp>()) {
      passed.push_back(other);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(op);
    auto writesOther = [&](linalg::FillOp other) {
      Value out = other.getOutputs()[0];
      return out != buffer && llvm::is_contained(generic.getDpsInits(), out);
    };
    if (!generic || !generic.hasPureBufferSemantics() ||
        generic.getNumParallelLoops() == 0 ||
        generic.getNumReductionLoops() == 0 ||
        !llvm::is_contained(generic.getDpsInits(), buffer) ||
        llvm::any_of(generic.getDpsInputs(), viewsBuffer) ||
        !llvm::all_of(passed, writesOther))
      return nullptr;
    return generic;
  }
  return nullptr;
}

struct AnvilOutlineDispatchesPass
    : mlir::anvil::impl::AnvilOutlineDispatchesPassBase<
          AnvilOutlineDispatchesPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<func::FuncOp> dispatches;
    SmallVector<func::FuncOp> functions(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp fn : functions) {
      if (fn.isExternal())
        continue;
      // Each region's ops, in order: one dispatch, or the fills and the
      // reduction they initialize (the region goes where the last one is).
      SmallVector<SmallVector<Operation *, 2>> regions;
      // The region of each reduction that fills start.
      DenseMap<Operation *, size_t> regionOf;
      for (Operation &op : fn.getBody().getOps()) {
        if (!anvil::rows::isDispatchRegion(&op) || regionOf.contains(&op))
          continue;
        auto fill = dyn_cast<linalg::FillOp>(op);
        linalg::GenericOp reduction =
            fill && fillsIntoReductions ? reductionFilled(fill) : nullptr;
        if (!reduction) {
          regions.push_back({&op});
          continue;
        }
        auto [it, added] = regionOf.try_emplace(reduction, regions.size());
        if (added)
          regions.push_back({reduction});
        SmallVector<Operation *, 2> &region = regions[it->second];
        region.insert(std::prev(region.end()), fill);
      }
      for (auto [n, ops] : llvm::enumerate(regions)) {
        Operation *op = ops.back();
        rewriter.setInsertionPoint(op);
        auto wrapper =
            scf::ExecuteRegionOp::create(rewriter, op->getLoc(), TypeRange{});
        Block *body = rewriter.createBlock(&wrapper.getRegion());
        rewriter.setInsertionPointToEnd(body);
        auto yield = scf::YieldOp::create(rewriter, op->getLoc());
        for (Operation *member : ops)
          member->moveBefore(yield);
        // Constants stay constants inside the kernel.
        IRMapping map;
        rewriter.setInsertionPointToStart(body);
        wrapper->walk([&](Operation *inner) {
          for (OpOperand &use : inner->getOpOperands()) {
            Operation *def = use.get().getDefiningOp();
            if (!def || !isa<arith::ConstantOp>(def) ||
                wrapper->isAncestor(def))
              continue;
            if (!map.contains(use.get()))
              map.map(use.get(), rewriter.clone(*def)->getResult(0));
            use.set(map.lookup(use.get()));
          }
        });
        std::string name = (fn.getName() + "__dispatch_" + Twine(n)).str();
        func::CallOp call;
        FailureOr<func::FuncOp> outlined = outlineSingleBlockRegion(
            rewriter, op->getLoc(), wrapper.getRegion(), name, &call);
        if (failed(outlined)) {
          op->emitError("anvil-outline-dispatches: cannot outline this "
                        "dispatch region");
          return signalPassFailure();
        }
        outlined->setPrivate();
        inlineRowGroup(rewriter, *outlined);
        dispatches.push_back(*outlined);
        // The execute_region now holds only the call: inline it.
        Block &inner = wrapper.getRegion().front();
        Operation *terminator = inner.getTerminator();
        rewriter.inlineBlockBefore(&inner, wrapper);
        rewriter.eraseOp(terminator);
        rewriter.eraseOp(wrapper);
      }
    }
    mergeIdentical(dispatches);
  }

  /// A row group's region (anvil-row-groups), now the body of `fn`: its
  /// ops in its place, and the mark on `fn`.
  static void inlineRowGroup(RewriterBase &rewriter, func::FuncOp fn) {
    StringRef mark = anvil::AnvilDialect::kRowGroupAttrName;
    for (auto group : llvm::make_early_inc_range(
             fn.front().getOps<scf::ExecuteRegionOp>())) {
      if (!group->hasAttr(mark) || !group.getRegion().hasOneBlock())
        continue;
      Block &inner = group.getRegion().front();
      Operation *terminator = inner.getTerminator();
      rewriter.inlineBlockBefore(&inner, group);
      rewriter.eraseOp(terminator);
      rewriter.eraseOp(group);
      fn->setAttr(mark, rewriter.getUnitAttr());
    }
  }

  /// Step 4: the first of each set of identical functions stays.
  void mergeIdentical(ArrayRef<func::FuncOp> dispatches) {
    MLIRContext *ctx = &getContext();
    llvm::StringMap<StringAttr> first; // printed body -> function name
    DenseMap<StringAttr, StringAttr> replacement;
    auto key = StringAttr::get(ctx, "anvil_dispatch_key");
    for (func::FuncOp fn : dispatches) {
      StringAttr name = fn.getSymNameAttr();
      fn.setSymNameAttr(key);
      std::string text;
      llvm::raw_string_ostream os(text);
      fn.print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
      fn.setSymNameAttr(name);
      auto [it, fresh] = first.try_emplace(text, name);
      if (!fresh)
        replacement[name] = it->second;
    }
    if (replacement.empty())
      return;
    getOperation().walk([&](func::CallOp call) {
      if (StringAttr to = replacement.lookup(call.getCalleeAttr().getAttr()))
        call.setCalleeAttr(FlatSymbolRefAttr::get(to));
    });
    for (func::FuncOp fn : dispatches)
      if (replacement.count(fn.getSymNameAttr()))
        fn.erase();
  }
};

} // namespace
