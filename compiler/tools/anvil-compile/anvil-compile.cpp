//===- anvil-compile.cpp - build a model's graph from the model zoo -------===//
//
// The command-line entry to the frontends:
//
//   anvil-compile --list-models
//   anvil-compile --model gpt --config gpt2-124m --emit=forward -o gpt2.mlir
//   anvil-compile --model gpt --config gpt3-175b --report=json
//   anvil-compile --model gpt --config gpt-tiny --set layers=4,dropout=0.1
//
// Later stages (training step, lowering, executables) extend --emit.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/Registry.h"

#include "anvil/Training/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace anvil::frontend;

namespace {
enum class Emit { None, Forward, TrainStep };
enum class Report { None, Text, Json };

cl::OptionCategory category("anvil-compile options");

cl::opt<bool> listModelsFlag("list-models",
                             cl::desc("List the models and their configs"),
                             cl::cat(category));
cl::opt<std::string> modelName("model", cl::desc("Model family (e.g. gpt)"),
                               cl::value_desc("name"), cl::cat(category));
cl::opt<std::string> configName("config",
                                cl::desc("Named config (e.g. gpt2-124m)"),
                                cl::value_desc("name"), cl::cat(category));
cl::list<std::string>
    overrides("set",
              cl::desc("Override config fields: --set layers=4,width=128 "
                       "(see --list-models for the fields)"),
              cl::value_desc("field=value"), cl::CommaSeparated,
              cl::cat(category));
cl::opt<int64_t> batchSize("batch",
                           cl::desc("Batch size (same as --set batch=N)"),
                           cl::init(0), cl::cat(category));
cl::opt<int64_t> seqLen("seq-len",
                        cl::desc("Sequence length (same as --set seq_len=N)"),
                        cl::init(0), cl::cat(category));
cl::opt<Emit>
    emit("emit", cl::desc("What to write (default: forward when -o is given)"),
         cl::values(clEnumValN(Emit::None, "none", "nothing"),
                    clEnumValN(Emit::Forward, "forward",
                               "the forward graph (anvil dialect)"),
                    clEnumValN(Emit::TrainStep, "train-step",
                               "@forward and @train_step (forward, backward "
                               "and the optimizer update)")),
         cl::init(Emit::None), cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init(""),
                                cl::cat(category));
cl::opt<std::string>
    optimizerName("optimizer",
                  cl::desc("With --emit=train-step: sgd, adam, adamw, lamb, "
                           "adagrad (default adamw)"),
                  cl::init("adamw"), cl::cat(category));
cl::opt<double> learningRate("lr", cl::desc("Peak learning rate"),
                             cl::init(1e-3), cl::cat(category));
cl::opt<int64_t> warmupSteps("warmup", cl::desc("Linear warm-up steps"),
                             cl::init(0), cl::cat(category));
cl::opt<std::string> decaySchedule("decay",
                                   cl::desc("After warm-up: none, cosine, "
                                            "linear"),
                                   cl::init("none"), cl::cat(category));
cl::opt<int64_t> totalSteps("total-steps",
                            cl::desc("Step at which the decay ends"),
                            cl::init(0), cl::cat(category));
cl::opt<double> clipNorm("clip", cl::desc("Global gradient-norm clip (0: off)"),
                         cl::init(0.0), cl::cat(category));
cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                            cl::init(0.0), cl::cat(category));
cl::opt<std::string> optimizerOptions(
    "optimizer-options",
    cl::desc("More anvil-optimizer options, e.g. \"beta2=0.95 momentum=0.9\""),
    cl::init(""), cl::cat(category));

cl::opt<Report> report(
    "report", cl::desc("Print a summary of the model"),
    cl::values(clEnumValN(Report::None, "none", "no summary"),
               clEnumValN(Report::Text, "text", "one line per figure"),
               clEnumValN(Report::Json, "json",
                          "{model, config, parameters, flops_per_step, ...}")),
    cl::init(Report::None), cl::cat(category));

int error(const Twine &message) {
  WithColor::error(errs(), "anvil-compile") << message << "\n";
  return 1;
}

void printModels(raw_ostream &os) {
  for (const ModelInfo &m : listModels()) {
    os << m.name << ": " << m.description << "\n  configs:";
    for (const std::string &c : m.configs)
      os << " " << c;
    os << "\n  fields (--set):";
    for (const std::string &f : m.fields)
      os << " " << f;
    os << "\n";
  }
}

void printReport(const ModelReport &r, raw_ostream &os) {
  if (report == Report::Json) {
    json::Object o{{"model", r.model},
                   {"config", r.config},
                   {"parameters", r.parameters},
                   {"parameter_tensors", r.parameterTensors},
                   {"flops_per_step", r.flopsPerStep},
                   {"batch", r.batch},
                   {"seq_len", r.seqLen},
                   {"tokens_per_step", r.tokensPerStep},
                   {"vocab", r.vocab}};
    os << json::Value(std::move(o)) << "\n";
    return;
  }
  os << "model:           " << r.model << " (" << r.config << ")\n"
     << "parameters:      " << r.parameters << " in " << r.parameterTensors
     << " tensors\n"
     << "batch x seq_len: " << r.batch << " x " << r.seqLen << " = "
     << r.tokensPerStep << " tokens per step\n"
     << "flops_per_step:  " << r.flopsPerStep << " (training, analytic)\n";
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // The printer's options (--mlir-print-debuginfo, ...) apply to --emit;
  // the rest of what the linked libraries register stays out of --help.
  mlir::registerAsmPrinterCLOptions();
  for (const char *name : {"mlir-print-debuginfo", "mlir-pretty-debuginfo",
                           "mlir-print-local-scope"}) {
    auto &options = cl::getRegisteredOptions();
    if (auto it = options.find(name); it != options.end())
      it->second->addCategory(category);
  }
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "anvil-compile: build a model from Anvil's model zoo\n\n"
      "  anvil-compile --list-models\n"
      "  anvil-compile --model gpt --config gpt2-124m --emit=forward -o "
      "out.mlir\n"
      "  anvil-compile --model gpt --config gpt2-124m --report=json\n");

  if (listModelsFlag) {
    printModels(outs());
    return 0;
  }
  if (modelName.empty() || configName.empty())
    return error("--model and --config are required (see --list-models)");

  std::vector<std::pair<std::string, std::string>> fields;
  for (const std::string &o : overrides) {
    size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      return error("--set expects field=value, got '" + o + "'");
    fields.emplace_back(o.substr(0, eq), o.substr(eq + 1));
  }
  if (batchSize.getNumOccurrences())
    fields.emplace_back("batch", std::to_string(batchSize));
  if (seqLen.getNumOccurrences())
    fields.emplace_back("seq_len", std::to_string(seqLen));

  mlir::MLIRContext context;
  BuiltModel built;
  try {
    built = buildModel(context, modelName, configName, fields);
  } catch (const BuildError &e) {
    return error(e.what());
  }

  Emit what = emit;
  if (emit.getNumOccurrences() == 0 && !outputFile.empty())
    what = Emit::Forward;
  bool irToStdout =
      what != Emit::None && (outputFile.empty() || outputFile == "-");
  if (what == Emit::TrainStep) {
    mlir::anvil::registerAnvilTrainingPasses();
    mlir::PassManager pm(&context);
    // Full precision: std::to_string would print 1e-7 as 0.000000.
    auto num = [](double v) { return llvm::formatv("{0:e16}", v).str(); };
    std::string pipeline =
        "anvil-optimizer{optimizer=" + optimizerName +
        " lr=" + num(learningRate) + " warmup=" + std::to_string(warmupSteps) +
        " decay=" + decaySchedule +
        " total-steps=" + std::to_string(totalSteps) +
        " clip=" + num(clipNorm) + " weight-decay=" + num(weightDecay) + " " +
        optimizerOptions + "}";
    if (failed(mlir::parsePassPipeline(pipeline, pm)) ||
        failed(pm.run(*built.module)))
      return error("could not build the training step (" + pipeline + ")");
  }
  if (what != Emit::None) {
    std::string errorMessage;
    auto output = mlir::openOutputFile(
        outputFile.empty() ? std::string("-") : outputFile, &errorMessage);
    if (!output)
      return error(errorMessage);
    built.module->print(output->os());
    output->keep();
  }
  if (report != Report::None)
    printReport(built.report, irToStdout ? errs() : outs());
  return 0;
}
