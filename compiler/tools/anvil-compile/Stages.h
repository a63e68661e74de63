//===- Stages.h - anvil-compile's named stages and extension points -------===//
//
// anvil-compile runs a model through a fixed list of named stages:
//
//   forward -> sharded -> precision -> train-step -> linalg -> fused
//     -> bufferized
//     -> kernels (--target=cuda only) -> llvm
//
// Each stage is a point where the IR can be printed (--emit=STAGE, then
// stop), written to a file while compiling goes on (--dump-ir-after=STAGE),
// or extended with passes of the user's own (--insert-pass=after:STAGE:P or
// before:STAGE:P, P a pass pipeline on the module, typically from a plugin
// loaded with --load-pass-plugin). `PipelineHooks` holds what the command
// line asked for and runs it as the driver reaches each stage.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TOOLS_ANVIL_COMPILE_STAGES_H
#define ANVIL_TOOLS_ANVIL_COMPILE_STAGES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/FunctionExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace anvil::compile {

/// The stages of anvil-compile, in the order they run.
enum class Stage {
  Forward,
  Sharded,
  Precision,
  TrainStep,
  Linalg,
  Fused,
  Bufferized,
  Kernels, ///< --target=cuda only.
  LLVM,
};

/// A stage's command-line name and what its IR is.
struct StageInfo {
  Stage stage;
  llvm::StringRef name;
  llvm::StringRef description;
};

/// Every stage, in order.
llvm::ArrayRef<StageInfo> allStages();
llvm::StringRef stageName(Stage stage);
/// The stage called `name`, or nothing.
std::optional<Stage> parseStage(llvm::StringRef name);
/// "forward, sharded, ..., llvm": for error messages.
std::string stageNameList();

/// The passes and dumps a user hooks into the pipeline.
class PipelineHooks {
public:
  explicit PipelineHooks(mlir::MLIRContext &context) : context(context) {}

  /// Adds `--insert-pass=SPEC`: `after:STAGE:PIPELINE` or
  /// `before:STAGE:PIPELINE`, where PIPELINE is a pass pipeline on the
  /// module as anvil-opt's --pass-pipeline takes inside builtin.module(...)
  /// (`foo`, `foo{opt=1},bar`, `func.func(foo)`). The pipeline is parsed
  /// now, so its passes must be registered (plugins loaded) before.
  llvm::Error addInsertion(llvm::StringRef spec);

  /// Adds `--dump-ir-after=STAGE` (or `all`): after the stage, and the
  /// passes inserted after it, the IR is written to
  /// `<directory>/<prefix>.<stage>.mlir`.
  llvm::Error addDump(llvm::StringRef stage);
  void setDumpFiles(llvm::StringRef directory, llvm::StringRef prefix) {
    dumpDirectory = directory.str();
    dumpPrefix = prefix.str();
  }

  /// Fails, naming the option, when a pass is inserted at or a dump is asked
  /// for a stage that this compilation does not run (`runs` says which do).
  llvm::Error checkReached(llvm::function_ref<bool(Stage)> runs,
                           llvm::StringRef why) const;

  /// Runs what is hooked before or after `stage` on `module`. Errors go to
  /// the context's diagnostic handler and stderr.
  mlir::LogicalResult runBefore(Stage stage, mlir::ModuleOp module);
  mlir::LogicalResult runAfter(Stage stage, mlir::ModuleOp module);

private:
  struct Insertion {
    bool before;
    Stage stage;
    std::string spec;     ///< As given on the command line.
    std::string pipeline; ///< The pass pipeline part.
    std::unique_ptr<mlir::PassManager> passes;
  };
  mlir::LogicalResult runInsertions(bool before, Stage stage,
                                    mlir::ModuleOp module);

  mlir::MLIRContext &context;
  std::vector<Insertion> insertions;
  bool dumpAll = false;
  std::vector<Stage> dumps;
  std::string dumpDirectory = ".";
  std::string dumpPrefix = "module";
};

} // namespace anvil::compile

#endif // ANVIL_TOOLS_ANVIL_COMPILE_STAGES_H
