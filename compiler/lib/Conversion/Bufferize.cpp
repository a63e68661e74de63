//===- Bufferize.cpp - one-shot bufferization with Anvil's settings -------===//
//
// 1. Drop the `anvil.*` argument and result attributes: they describe
//    tensors (parameters, state, ties) and the dialect verifies them as
//    such; the manifest has recorded them before lowering.
// 2. Configure upstream one-shot module bufferization: function
//    boundaries bufferized with identity layouts, unknown ops rejected,
//    copies built as `linalg.copy`.
// 3. Run it over the module.
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILBUFFERIZEPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

struct AnvilBufferizePass
    : mlir::anvil::impl::AnvilBufferizePassBase<AnvilBufferizePass> {
  void runOnOperation() override {
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
    bufferization::BufferizationState state;
    if (failed(bufferization::runOneShotModuleBufferize(getOperation(), options,
                                                        state)))
      signalPassFailure();
  }
};

} // namespace
