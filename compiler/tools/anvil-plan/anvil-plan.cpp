//===- anvil-plan.cpp - step time and memory of a parallel training run ---===//
//
// anvil-plan --model M --config C --gpu G --gpus N [--tp T --pp P --dp D]
//            [--vp V] [--cp X] --mbs B --gbs G --seq S
//            [--precision bf16|fp8] [--recompute none|selective|full]
//            [--report=json]
//
// Predicts one optimizer step's time and the memory per GPU of a parallel
// configuration, from the compiler's own program (Program.h) priced on the
// GPU's achieved rates (hardware.json, Model.h). Without --tp, --pp and
// --dp it searches the configurations that fit in memory and prints the
// fastest.
//
//===----------------------------------------------------------------------===//

#include "Model.h"
#include "Program.h"

#include "anvil/Frontend/Models/Registry.h"

#include "anvil/Conversion/Passes.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Training/Passes.h"
#include "anvil/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <tuple>

using namespace llvm;
using namespace anvil::plan;

namespace {

cl::OptionCategory category("anvil-plan options");

cl::opt<std::string> modelName("model",
                               cl::desc("Zoo model family (gpt, "
                                        "llama, ...)"),
                               cl::cat(category));
cl::opt<std::string> configName("config", cl::desc("The family's config"),
                                cl::cat(category));
cl::list<std::string>
    overrides("set", cl::desc("Override config fields: --set vocab=32000"),
              cl::CommaSeparated, cl::cat(category));
cl::opt<std::string> gpuName("gpu",
                             cl::desc("GPU (hardware file's names: h100-sxm, "
                                      "h200, b200, gb200)"),
                             cl::init("h100-sxm"), cl::cat(category));
cl::opt<int64_t> gpus("gpus", cl::desc("GPUs in the run"), cl::init(0),
                      cl::cat(category));
cl::opt<int64_t> tp("tp", cl::desc("Tensor-parallel size (search if unset)"),
                    cl::init(0), cl::cat(category));
cl::opt<int64_t> pp("pp",
                    cl::desc("Pipeline-parallel stages (search if unset)"),
                    cl::init(0), cl::cat(category));
cl::opt<int64_t> vp("vp",
                    cl::desc("Virtual stages per pipeline rank (interleaved "
                             "1F1B; search if unset)"),
                    cl::init(0), cl::cat(category));
cl::opt<int64_t> cp("cp", cl::desc("Context-parallel size (search if unset)"),
                    cl::init(0), cl::cat(category));
cl::opt<int64_t> dp("dp", cl::desc("Data-parallel size (search if unset)"),
                    cl::init(0), cl::cat(category));
cl::opt<int64_t> mbs("mbs", cl::desc("Micro-batch size (sequences)"),
                     cl::init(1), cl::cat(category));
cl::opt<int64_t> gbs("gbs", cl::desc("Global batch size (sequences per step)"),
                     cl::init(0), cl::cat(category));
cl::opt<int64_t> seqLen("seq", cl::desc("Sequence length (tokens)"),
                        cl::init(0), cl::cat(category));
cl::opt<std::string>
    precision("precision",
              cl::desc("GEMM precision: bf16 or fp8 (the "
                       "transformer blocks' GEMMs, anvil-fp8)"),
              cl::init("bf16"), cl::cat(category));
cl::opt<std::string>
    recompute("recompute",
              cl::desc("Activation recomputation: none, selective (the "
                       "attention core) or full (each layer from its input)"),
              cl::init("none"), cl::cat(category));
cl::opt<std::string> report("report", cl::desc("Output: text or json"),
                            cl::init("text"), cl::cat(category));
cl::opt<std::string> hardwareFile(
    "hardware",
    cl::desc("Hardware descriptions (default: share/anvil/hardware.json "
             "beside the tools)"),
    cl::cat(category));
cl::opt<bool> noTpOverlap("no-tp-overlap",
                          cl::desc("Tensor-parallel collectives not "
                                   "overlapped with the GEMMs"),
                          cl::cat(category));
cl::opt<bool> showParts("show-parts",
                        cl::desc("Print one layer's and the rest's priced "
                                 "parts (seconds, bytes)"),
                        cl::cat(category));
cl::opt<int64_t> top("top", cl::desc("Configurations a search prints"),
                     cl::init(5), cl::cat(category));

int fail(const Twine &message) {
  errs() << "anvil-plan: error: " << message << "\n";
  return 1;
}

std::string defaultHardwareFile(const char *argv0) {
  std::string exe = sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&defaultHardwareFile));
  SmallString<256> path(sys::path::parent_path(exe));
  sys::path::append(path, "..", "share", "anvil", "hardware.json");
  return std::string(path);
}

std::vector<int64_t> divisorsOf(int64_t n, int64_t upTo) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= std::min(n, upTo); ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

/// Program facts by (tp, cp, micro-batch), priced: one layer and the rest.
class Programs {
public:
  Programs(mlir::MLIRContext &context, const Hardware &hw,
           std::vector<std::pair<std::string, std::string>> sets)
      : context(context), hw(hw), sets(std::move(sets)) {}

  /// The priced parts for `c`, or an error (a tp that does not divide).
  std::optional<std::pair<PartTimes, PartTimes>> parts(const Config &c,
                                                       std::string &error) {
    auto key = std::make_tuple(c.tp, c.cp, c.microBatch);
    auto it = cache.find(key);
    if (it == cache.end()) {
      std::optional<std::pair<ProgramFacts, ProgramFacts>> built;
      std::string why;
      ProgramRequest r;
      r.model = modelName;
      r.config = configName;
      r.overrides = sets;
      r.microBatch = c.microBatch;
      r.sequence = c.sequence / c.cp;
      r.tensorParallel = c.tp;
      r.fp8 = c.precision == "fp8";
      // Megatron pads the vocabulary to a multiple of 128 x tp.
      if (modelName == "gpt")
        r.overrides.push_back({"pad_vocab_to", std::to_string(128 * c.tp)});
      r.layers = 1;
      std::optional<ProgramFacts> one = readProgram(context, r, why);
      r.layers = 2;
      std::optional<ProgramFacts> two =
          one ? readProgram(context, r, why) : std::nullopt;
      if (one && two)
        built = std::make_pair(*one, *two);
      it = cache.emplace(key, std::make_pair(built, why)).first;
    }
    if (!it->second.first) {
      error = it->second.second;
      return std::nullopt;
    }
    PartTimes one = priceProgram(it->second.first->first, hw, c, !noTpOverlap);
    PartTimes two = priceProgram(it->second.first->second, hw, c, !noTpOverlap);
    PartTimes layer = two - one;
    return std::make_pair(layer, one - layer);
  }

private:
  mlir::MLIRContext &context;
  const Hardware &hw;
  std::vector<std::pair<std::string, std::string>> sets;
  std::map<std::tuple<int64_t, int64_t, int64_t>,
           std::pair<std::optional<std::pair<ProgramFacts, ProgramFacts>>,
                     std::string>>
      cache;
};

void printText(const Prediction &p, const Hardware &hw, raw_ostream &os) {
  const Config &c = p.config;
  const Breakdown &b = p.breakdown;
  auto s = [](double v) {
    return v >= 0.1 || v == 0 ? formatv("{0:f3} s", v).str()
                              : formatv("{0:f3} ms", v * 1e3).str();
  };
  auto gb = [](double v) { return formatv("{0:f1} GB", v / 1e9).str(); };
  os << formatv("{0} GPUs ({1}): tp={2} pp={3} vp={4} cp={5} dp={6}, "
                "micro-batch {7}, {8} micro-batches, {9}\n",
                c.gpus, hw.key, c.tp, c.pp, c.vp, c.cp, c.dp, c.microBatch,
                p.microBatches, c.precision);
  os << formatv("  step time        {0}  ({1:f0} tokens/s, MFU {2:f1}% of "
                "{3} peak)\n",
                s(p.stepTime), p.tokensPerSecond, 100 * p.mfu, c.precision);
  auto line = [&](const char *name, double v) {
    os << formatv("    {0,-17}{1}", name, s(v));
  };
  line("compute", b.compute);
  os << "\n";
  line("tp exposed", b.tpExposed);
  os << "\n";
  line("cp exposed", b.cpExposed);
  os << "\n";
  line("recompute", b.recompute);
  os << "\n";
  line("pipeline bubble", b.bubble);
  os << "\n";
  line("dp exposed", b.dpExposed);
  os << "  (of " << s(p.dpComm) << ")\n";
  line("optimizer", b.optimizer);
  os << "\n";
  const Memory &m = p.memory;
  os << "  memory per GPU   " << gb(m.total()) << " of " << gb(hw.hbmBytes)
     << " (weights " << gb(m.weights) << ", FP8 copies " << gb(m.weightCopies)
     << ", gradients " << gb(m.gradients) << ", optimizer " << gb(m.optimizer)
     << ", activations " << gb(m.activations) << ")\n";
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "anvil-plan: step time and memory of a parallel training run\n\n"
      "Builds the model's training step with the compiler (one and two "
      "layers, partitioned over tp with sequence parallelism, FP8 where "
      "asked, differentiated), prices its GEMMs, attention, memory-bound "
      "ops and collectives on the GPU's achieved rates (--hardware), and "
      "composes them with the interleaved 1F1B pipeline, context "
      "parallelism and the distributed optimizer. Without --tp/--pp/--dp "
      "it searches the configurations that fit in memory. docs/planner.md "
      "explains the model.\n");

  std::string hwPath =
      hardwareFile.empty() ? defaultHardwareFile(argv[0]) : hardwareFile;
  std::string error;
  std::optional<Hardware> hw = loadHardware(hwPath, gpuName, error);
  if (!hw) {
    std::string known = join(hardwareNames(hwPath), ", ");
    return fail(error + (known.empty() ? "" : " (known: " + known + ")"));
  }
  if (modelName.empty() || configName.empty())
    return fail("--model and --config are required");
  if (gpus <= 0 || gbs <= 0 || seqLen <= 0 || mbs <= 0)
    return fail("--gpus, --gbs, --seq and --mbs must be positive");
  if (precision != "bf16" && precision != "fp8")
    return fail("--precision=" + precision + ": expected bf16 or fp8");
  if (precision == "fp8" && !hw->peak.count("fp8"))
    return fail(hw->name + " has no FP8 rate in " + hwPath);
  if (recompute != "none" && recompute != "selective" && recompute != "full")
    return fail("--recompute=" + recompute +
                ": expected none, selective or full");
  if (report != "text" && report != "json")
    return fail("--report=" + report + ": expected text or json");
  // The planner pipelines numbered blocks over sequences of tokens.
  const anvil::frontend::ModelInfo *info =
      anvil::frontend::findModel(modelName);
  auto hasField = [&](const char *f) {
    return info && llvm::is_contained(info->fields, f);
  };
  if (info &&
      !(hasField("layers") && hasField("batch") && hasField("seq_len"))) {
    std::string planned;
    for (const anvil::frontend::ModelInfo &m : anvil::frontend::listModels())
      if (llvm::is_contained(m.fields, "layers") &&
          llvm::is_contained(m.fields, "seq_len"))
        planned += (planned.empty() ? "" : ", ") + m.name;
    return fail("model '" + modelName +
                "' is not a stack of layers over token sequences; anvil-plan "
                "plans " +
                planned);
  }
  std::vector<std::pair<std::string, std::string>> sets;
  for (const std::string &s : overrides) {
    auto [field, value] = StringRef(s).split('=');
    if (value.empty())
      return fail("--set " + s + ": expected field=value");
    sets.push_back({field.str(), value.str()});
  }

  mlir::MLIRContext context;
  context.loadDialect<mlir::anvil::AnvilDialect, mlir::func::FuncDialect>();
  mlir::anvil::registerAnvilTransformsPasses();
  mlir::anvil::registerAnvilTrainingPasses();
  mlir::registerCSEPass();
  context.getDiagEngine().registerHandler(
      [](mlir::Diagnostic &) { return mlir::success(); });

  std::optional<ModelShape> shape =
      readModelShape(context, modelName, configName, sets, seqLen, error);
  if (!shape)
    return fail(error);
  Programs programs(context, *hw, sets);

  Config base;
  base.gpus = gpus;
  base.microBatch = mbs;
  base.globalBatch = gbs;
  base.sequence = seqLen;
  base.precision = precision;
  base.recompute = recompute;

  // Every configuration the fixed flags allow.
  auto candidates = [&](int64_t fixed, std::vector<int64_t> range) {
    return fixed > 0 ? std::vector<int64_t>{fixed} : range;
  };
  std::vector<Config> configs;
  for (int64_t t : candidates(
           tp, divisorsOf(gpus, std::min<int64_t>(hw->nvlinkDomain, 64))))
    for (int64_t x : candidates(cp, {1, 2, 4, 8}))
      for (int64_t p : candidates(pp, {1, 2, 4, 8, 16, 32}))
        for (int64_t v : candidates(vp, {1, 2, 3, 4, 6, 8, 12, 16})) {
          // The layers split evenly over the pp x vp model chunks, or do
          // once the embedding and the loss count as a layer each
          // (Megatron's account-for-embedding-in-pipeline-split).
          bool even = shape->layers % (p * v) == 0 ||
                      (p > 1 && (shape->layers + 2) % (p * v) == 0);
          if (gpus % (t * x * p) != 0 || (v > 1 && p == 1) || !even)
            continue;
          int64_t d = gpus / (t * x * p);
          if (dp > 0 && d != dp)
            continue;
          if (gbs % (d * mbs) != 0 || seqLen % x != 0)
            continue;
          // Interleaving needs the micro-batches in multiples of the stages.
          if (v > 1 && (gbs / (d * mbs)) % p != 0)
            continue;
          Config c = base;
          c.tp = t;
          c.cp = x;
          c.pp = p;
          c.vp = v;
          c.dp = d;
          configs.push_back(c);
        }
  bool single = tp > 0 && pp > 0 && dp > 0;
  if (single) {
    if (configs.empty())
      return fail(formatv("tp={0} x pp={1} x cp={2} x dp={3} must be --gpus "
                          "({4}), the layers ({5}, or with the embedding and "
                          "the loss {5} + 2) must divide by pp x vp, "
                          "--gbs by dp x mbs and --seq by cp",
                          tp.getValue(), pp.getValue(),
                          std::max<int64_t>(cp, 1), dp.getValue(),
                          gpus.getValue(), shape->layers)
                      .str());
    Config c = configs.front();
    auto parts = programs.parts(c, error);
    if (!parts)
      return fail(formatv("tp={0}: {1}", c.tp, error).str());
    Prediction p = predict(c, *hw, parts->first, parts->second, *shape);
    if (showParts)
      for (auto [name, t] :
           {std::pair{"layer", parts->first}, std::pair{"rest", parts->second}})
        outs() << formatv(
            "{0}: gemm {1:e3}+{2:e3} attention {3:e3}+{4:e3} "
            "memory {5:e3}+{6:e3} tp {7:e3} (hidden {8:e3}) "
            "cp {9:e3} params {10:e3} trainable {11:e3} "
            "activations {12:e3} input {13:e3}\n",
            name, t.gemmForward, t.gemmBackward, t.attentionForward,
            t.attentionBackward, t.memoryForward, t.memoryBackward, t.tpComm,
            t.tpHidden, t.cpComm, t.parameters, t.trainableParameters,
            t.activationBytes, t.inputBytes);
    if (report == "json") {
      json::Object o = toJson(p);
      o["model"] = modelName.getValue();
      o["model_config"] = configName.getValue();
      o["gpu"] = hw->key;
      o["fits"] = p.memory.total() <= hw->hbmBytes;
      outs() << json::Value(std::move(o)) << "\n";
    } else {
      printText(p, *hw, outs());
      if (p.memory.total() > hw->hbmBytes)
        outs() << "  does not fit: needs "
               << formatv("{0:f1}", p.memory.total() / 1e9) << " GB of "
               << formatv("{0:f0}", hw->hbmBytes / 1e9) << "\n";
    }
    return 0;
  }

  // Search: every configuration that fits, fastest first.
  std::vector<Prediction> fit;
  int64_t tried = 0;
  for (const Config &c : configs) {
    auto parts = programs.parts(c, error);
    if (!parts)
      continue; // tp or cp the model does not divide
    ++tried;
    Prediction p = predict(c, *hw, parts->first, parts->second, *shape);
    if (p.memory.total() <= hw->hbmBytes)
      fit.push_back(p);
  }
  std::sort(fit.begin(), fit.end(),
            [](const Prediction &a, const Prediction &b) {
              return a.stepTime < b.stepTime;
            });
  if (fit.size() > static_cast<size_t>(top))
    fit.resize(top);
  if (report == "json") {
    json::Array best;
    for (const Prediction &p : fit)
      best.push_back(toJson(p));
    outs() << json::Value(json::Object{{"model", modelName.getValue()},
                                       {"model_config", configName.getValue()},
                                       {"gpu", hw->key},
                                       {"searched", tried},
                                       {"best", std::move(best)}})
           << "\n";
  } else {
    outs() << formatv("searched {0} configurations of {1} GPUs; the fastest "
                      "that fit:\n",
                      tried, gpus.getValue());
    for (const Prediction &p : fit)
      printText(p, *hw, outs());
  }
  if (fit.empty())
    return fail("no configuration fits in " +
                formatv("{0:f0}", hw->hbmBytes / 1e9).str() + " GB per GPU");
  return 0;
}
