//===- Bufferize.cpp - one-shot bufferization with Anvil's settings -------===//
//
// 1. State updated in place: results tied to an argument are written
//    into it (materialize_in_destination, the argument marked writable)
//    and leave the signature; one-shot analysis keeps the write in place
//    where that is safe and copies where it is not.
// 2. Drop the `anvil.*` argument and result attributes: they describe
//    tensors (parameters, state, ties) and the dialect verifies them as
//    such; the manifest has recorded them before lowering.
// 3. Configure upstream one-shot module bufferization: function
//    boundaries bufferized with identity layouts, unknown ops rejected,
//    copies built as `linalg.copy`.
// 4. Eliminate the empty tensors the in-place writes can replace, then
//    run one-shot bufferization over the module.
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILBUFFERIZEPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// State updated in place: each result tied to an argument
/// (`anvil.tied_to`) is written into that argument through
/// `bufferization.materialize_in_destination` and leaves the signature;
/// the argument becomes writable. Returns false on a malformed tie.
bool tieStateInPlace(func::FuncOp fn) {
  if (fn.isExternal())
    return true;
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  llvm::BitVector drop(fn.getNumResults());
  OpBuilder b(ret);
  for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r) {
    auto tied = fn.getResultAttrOfType<IntegerAttr>(r, "anvil.tied_to");
    if (!tied)
      continue;
    int64_t a = tied.getInt();
    if (a < 0 || a >= fn.getNumArguments())
      return false;
    BlockArgument arg = fn.getArgument(a);
    Value next = ret.getOperand(r);
    if (next != arg)
      bufferization::MaterializeInDestinationOp::create(
          b, ret.getLoc(), arg.getType(), next, arg, /*restrict=*/false,
          /*writable=*/false);
    fn.setArgAttr(a, bufferization::BufferizationDialect::kWritableAttrName,
                  b.getBoolAttr(true));
    drop.set(r);
  }
  if (drop.none())
    return true;
  SmallVector<Value> kept;
  for (unsigned r = 0, e = ret.getNumOperands(); r < e; ++r)
    if (!drop.test(r))
      kept.push_back(ret.getOperand(r));
  ret->setOperands(kept);
  return succeeded(fn.eraseResults(drop));
}

struct AnvilBufferizePass
    : mlir::anvil::impl::AnvilBufferizePassBase<AnvilBufferizePass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!tieStateInPlace(fn)) {
        fn.emitError("anvil-bufferize: an anvil.tied_to names no argument");
        return signalPassFailure();
      }
    for (auto fn : getOperation().getOps<FunctionOpInterface>()) {
      auto strip = [](DictionaryAttr attrs) {
        if (!attrs)
          return attrs;
        SmallVector<NamedAttribute> kept;
        for (NamedAttribute a : attrs)
          if (!a.getName().getValue().starts_with("anvil."))
            kept.push_back(a);
        return DictionaryAttr::get(attrs.getContext(), kept);
      };
      for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
        fn.setArgAttrs(i, strip(fn.getArgAttrDict(i)));
      for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i)
        fn.setResultAttrs(i, strip(fn.getResultAttrDict(i)));
    }
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    options.allowUnknownOps = false;
    options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                          Value to) -> LogicalResult {
      linalg::CopyOp::create(b, loc, from, to);
      return success();
    };
    // Let the final writes of updated state go straight into the argument
    // buffers instead of a temporary that is then copied.
    IRRewriter rewriter(&getContext());
    if (failed(bufferization::eliminateEmptyTensors(rewriter, getOperation())))
      return signalPassFailure();
    bufferization::BufferizationState state;
    if (failed(bufferization::runOneShotModuleBufferize(getOperation(), options,
                                                        state)))
      signalPassFailure();
  }
};

} // namespace
