//===- ExamplePasses.cpp - the example plugin's passes and entry points ---===//
//
// Two passes on anvil graphs, registered by the plugin's entry points:
//
//   example-gelu-tanh{modules=a.b,c}   exact (erf) GELUs of the chosen modules
//                                      become the tanh approximation
//   example-flops-per-module{depth=N}  FLOPs of @forward per module path
//
// Ops carry the module path that built them as their location
// (loc("bert.encoder.layer.0"); anvil::modulePathOf reads it), so a module is
// a prefix of that path.
//
//===----------------------------------------------------------------------===//

#include "ExampleDialect.h"

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

struct GeluTanhPass : PassWrapper<GeluTanhPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GeluTanhPass)

  GeluTanhPass() = default;
  GeluTanhPass(const GeluTanhPass &other) : PassWrapper(other) {}

  StringRef getArgument() const override { return "example-gelu-tanh"; }
  StringRef getDescription() const override {
    return "Replaces exact (erf) GELUs with the tanh approximation in the "
           "chosen modules";
  }

  ListOption<std::string> modules{
      *this, "modules",
      llvm::cl::desc("Module paths whose GELUs change (prefixes of the ops' "
                     "locations, e.g. bert.encoder); none: every GELU")};

  void runOnOperation() override {
    getOperation().walk([&](anvil::GeluOp gelu) {
      if (gelu.getApproximation() == anvil::GeluApproximation::tanh)
        return;
      StringRef path = anvil::modulePathOf(gelu.getLoc());
      if (!modules.empty() && !llvm::any_of(modules, [&](const std::string &m) {
            return anvil::isInModule(path, m);
          }))
        return;
      gelu.setApproximation(anvil::GeluApproximation::tanh);
    });
  }
};

struct FlopsPerModulePass
    : PassWrapper<FlopsPerModulePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FlopsPerModulePass)

  FlopsPerModulePass() = default;
  FlopsPerModulePass(const FlopsPerModulePass &other) : PassWrapper(other) {}

  StringRef getArgument() const override { return "example-flops-per-module"; }
  StringRef getDescription() const override {
    return "Prints the FLOPs of a function per module (Anvil's cost "
           "interface), largest first, to stderr";
  }

  Option<unsigned> depth{*this, "depth",
                         llvm::cl::desc("Components of the module path to "
                                        "group by (0: the whole path)"),
                         llvm::cl::init(0)};
  Option<std::string> function{*this, "function",
                               llvm::cl::desc("The function to count"),
                               llvm::cl::init("forward")};

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(function);
    if (!fn) {
      getOperation().emitError("example-flops-per-module: no function @")
          << function;
      return signalPassFailure();
    }
    llvm::MapVector<StringRef, int64_t> flops;
    int64_t total = 0;
    fn.walk([&](anvil::CostOpInterface op) {
      StringRef path = anvil::modulePathOf(op->getLoc());
      if (path.empty())
        path = "(no module)";
      else if (depth > 0) {
        // The first `depth` components: up to the depth-th dot.
        size_t end = path.find('.');
        for (unsigned i = 1; i < depth && end != StringRef::npos; ++i)
          end = path.find('.', end + 1);
        path = path.take_front(end);
      }
      flops[path] += op.getFlops();
      total += op.getFlops();
    });
    auto rows = flops.takeVector();
    llvm::stable_sort(rows,
                      [](auto &a, auto &b) { return a.second > b.second; });
    llvm::raw_ostream &os = llvm::errs();
    os << "example-flops-per-module: @" << function << ", " << total
       << " FLOPs in " << rows.size() << " modules\n";
    for (auto &[path, count] : rows)
      os << llvm::format("  %-40s %14lld %6.2f%%\n", path.str().c_str(),
                         static_cast<long long>(count),
                         total ? 100.0 * count / total : 0.0);
    markAllAnalysesPreserved();
  }
};

} // namespace

/// The pass plugin: anvil-compile --load-pass-plugin, anvil-opt
/// --load-pass-plugin.
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AnvilExample", "0.1", [] {
            PassRegistration<GeluTanhPass>();
            PassRegistration<FlopsPerModulePass>();
          }};
}

/// The dialect plugin: --load-dialect-plugin (the same library).
extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AnvilExample", "0.1",
          [](DialectRegistry *registry) {
            registry->insert<example::ExampleDialect>();
          }};
}
