//===- Stages.cpp - anvil-compile's named stages and extension points -----===//

#include "Stages.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace anvil::compile;

ArrayRef<StageInfo> anvil::compile::allStages() {
  static const StageInfo stages[] = {
      {Stage::Forward, "forward",
       "@forward, the model's graph (anvil; a data-parallel rank's batch)"},
      {Stage::Sharded, "sharded",
       "with --mesh: anvil.mesh set; tp=M partitioned by anvil-partition"},
      {Stage::Precision, "precision",
       "with --precision=bf16 or fp8: GEMMs in bf16 (anvil-bf16) or chosen "
       "GEMMs through FP8 (anvil-fp8)"},
      {Stage::TrainStep, "train-step",
       "@train_step: forward, backward, optimizer update (not with --entry)"},
      {Stage::Linalg, "linalg",
       "linalg/tensor/arith/math; only the exported functions are left"},
      {Stage::Fused, "fused",
       "after elementwise fusion: one linalg op per dispatch region"},
      {Stage::Bufferized, "bufferized",
       "bufferized, memory planned, dispatch regions outlined"},
      {Stage::Kernels, "kernels",
       "--target=cuda: dispatches as gpu.module kernels, gpu.launch_func"},
      {Stage::LLVM, "llvm",
       "the LLVM dialect, ready for object emission (CUDA: cubin inside)"},
  };
  return stages;
}

StringRef anvil::compile::stageName(Stage stage) {
  return allStages()[static_cast<unsigned>(stage)].name;
}

std::optional<Stage> anvil::compile::parseStage(StringRef name) {
  for (const StageInfo &info : allStages())
    if (info.name == name)
      return info.stage;
  return std::nullopt;
}

std::string anvil::compile::stageNameList() {
  std::string list;
  for (const StageInfo &info : allStages())
    list += (list.empty() ? "" : ", ") + info.name.str();
  return list;
}

static Error unknownStage(StringRef option, StringRef name) {
  return createStringError(option + ": no stage named '" + name +
                           "' (the stages, in order: " + stageNameList() + ")");
}

Error PipelineHooks::addInsertion(StringRef spec) {
  std::string option = ("--insert-pass=" + spec).str();
  auto [where, rest] = spec.split(':');
  auto [name, pipeline] = rest.split(':');
  if ((where != "after" && where != "before") || pipeline.empty())
    return createStringError(option + ": expected after:STAGE:PASSES or "
                                      "before:STAGE:PASSES (e.g. "
                                      "after:forward:canonicalize)");
  std::optional<Stage> stage = parseStage(name);
  if (!stage)
    return unknownStage(option, name);
  if (where == "before" && *stage == Stage::Forward)
    return createStringError(option +
                             ": nothing runs before the forward graph is "
                             "built; use after:forward");

  auto passes = std::make_unique<mlir::PassManager>(&context);
  std::string message;
  raw_string_ostream os(message);
  if (failed(mlir::parsePassPipeline(pipeline, *passes, os)))
    return createStringError(option +
                             ": the passes do not parse (anvil-opt --help "
                             "lists Anvil's and MLIR's; a plugin's join them "
                             "with --load-pass-plugin):\n" +
                             StringRef(message).trim());
  insertions.push_back(Insertion{where == "before", *stage, spec.str(),
                                 pipeline.str(), std::move(passes)});
  return Error::success();
}

Error PipelineHooks::addDump(StringRef name) {
  if (name == "all") {
    dumpAll = true;
    return Error::success();
  }
  std::optional<Stage> stage = parseStage(name);
  if (!stage)
    return unknownStage("--dump-ir-after=" + name.str(), name);
  dumps.push_back(*stage);
  return Error::success();
}

Error PipelineHooks::checkReached(function_ref<bool(Stage)> runs,
                                  StringRef why) const {
  for (const Insertion &insertion : insertions)
    if (!runs(insertion.stage))
      return createStringError("--insert-pass=" + insertion.spec + ": stage '" +
                               stageName(insertion.stage) +
                               "' does not run in this compilation (" + why +
                               ")");
  for (Stage stage : dumps)
    if (!runs(stage))
      return createStringError("--dump-ir-after=" + stageName(stage) +
                               ": stage '" + stageName(stage) +
                               "' does not run in this compilation (" + why +
                               ")");
  return Error::success();
}

mlir::LogicalResult PipelineHooks::runInsertions(bool before, Stage stage,
                                                 mlir::ModuleOp module) {
  for (Insertion &insertion : insertions) {
    if (insertion.before != before || insertion.stage != stage)
      continue;
    if (failed(insertion.passes->run(module))) {
      WithColor::error(errs(), "anvil-compile")
          << "the passes inserted " << (before ? "before" : "after") << " '"
          << stageName(stage) << "' (" << insertion.pipeline
          << ") failed (see above)\n";
      return mlir::failure();
    }
  }
  return mlir::success();
}

mlir::LogicalResult PipelineHooks::runBefore(Stage stage,
                                             mlir::ModuleOp module) {
  return runInsertions(/*before=*/true, stage, module);
}

mlir::LogicalResult PipelineHooks::runAfter(Stage stage,
                                            mlir::ModuleOp module) {
  if (failed(runInsertions(/*before=*/false, stage, module)))
    return mlir::failure();
  if (!dumpAll && !is_contained(dumps, stage))
    return mlir::success();
  SmallString<256> path(dumpDirectory);
  sys::path::append(path, dumpPrefix + "." + stageName(stage) + ".mlir");
  std::string message;
  auto file = mlir::openOutputFile(path, &message);
  if (!file) {
    WithColor::error(errs(), "anvil-compile")
        << "--dump-ir-after: " << message << "\n";
    return mlir::failure();
  }
  module.print(file->os());
  file->keep();
  WithColor::note(errs(), "anvil-compile")
      << "IR after '" << stageName(stage) << "' written to " << path << "\n";
  return mlir::success();
}
