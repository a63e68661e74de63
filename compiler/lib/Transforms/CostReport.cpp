//===- CostReport.cpp - FLOPs, bytes and parameters per function ----------===//
//
// 1. For every function in the module, walk its ops and sum the FLOPs and
//    bytes that CostOpInterface reports (ops without the interface, such as
//    func.return, cost nothing).
// 2. Count the parameters: arguments marked `anvil.param`, and their
//    elements.
// 3. Print one line (or one JSON object) per function to stderr; the IR is
//    left as it was.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Transforms/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCOSTREPORTPASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {
struct FunctionCost {
  int64_t ops = 0, flops = 0, bytes = 0, params = 0, paramTensors = 0;
};

struct AnvilCostReportPass
    : public anvil::impl::AnvilCostReportPassBase<AnvilCostReportPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::json::Array report;
    for (auto fn : getOperation().getOps<FunctionOpInterface>()) {
      FunctionCost cost;
      fn->walk([&](CostOpInterface op) {
        ++cost.ops;
        cost.flops += op.getFlops();
        cost.bytes += op.getBytesMoved();
        if (perOp && !json)
          llvm::errs() << "anvil-cost-report:   " << op->getName() << " at "
                       << op->getLoc() << ": " << op.getFlops() << " FLOPs, "
                       << op.getBytesMoved() << " bytes\n";
      });
      for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
        auto p =
            fn.getArgAttrOfType<ParamAttr>(i, AnvilDialect::kParamAttrName);
        if (!p || p.getBuffer())
          continue;
        ++cost.paramTensors;
        cost.params += getNumElements(fn.getArgumentTypes()[i]);
      }
      if (json) {
        report.push_back(
            llvm::json::Object{{"function", fn.getName()},
                               {"ops", cost.ops},
                               {"flops", cost.flops},
                               {"bytes", cost.bytes},
                               {"parameters", cost.params},
                               {"parameter_tensors", cost.paramTensors}});
        continue;
      }
      llvm::errs() << "anvil-cost-report: @" << fn.getName() << ": " << cost.ops
                   << " ops, " << cost.flops << " FLOPs, " << cost.bytes
                   << " bytes, " << cost.params << " parameters ("
                   << cost.paramTensors << " tensors)\n";
    }
    if (json)
      llvm::errs() << llvm::json::Value(std::move(report)) << "\n";
    markAllAnalysesPreserved();
  }
};
} // namespace
