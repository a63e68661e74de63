//===- anvil-compile.cpp - models to graphs, training steps, executables --===//
//
// The command-line entry to the compiler:
//
//   anvil-compile --list-models
//   anvil-compile --model gpt --config gpt2-124m --emit=forward -o gpt2.mlir
//   anvil-compile --model gpt --config gpt3-175b --report=json
//   anvil-compile --model gpt --config gpt-tiny --target=cpu -o gpt.train
//   anvil-compile model.mlir --target=cpu -o model.train
//   anvil-compile ops.mlir --entry=f --target=cpu -o f.run
//
// A model comes from the zoo (--model/--config) or from an .mlir file. For
// an executable, the training step is built (autodiff and the optimizer)
// unless the file already has @train_step; --entry compiles one function
// for evaluation only. --emit=STAGE prints the IR after a stage instead.
//
//===----------------------------------------------------------------------===//

#include "KernelReport.h"
#include "Stages.h"

#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/Registry.h"

#include "anvil/Conversion/Passes.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Fusion/Passes.h"
#include "anvil/Target/CPU/CPUBackend.h"
#include "anvil/Target/CUDA/CUDABackend.h"
#include "anvil/Target/CUDA/Passes.h"
#include "anvil/Target/Manifest.h"
#include "anvil/Training/Autodiff.h"
#include "anvil/Training/Passes.h"
#include "anvil/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace anvil::frontend;

namespace {
enum class Target { None, CPU, CUDA };
enum class Report { None, Text, Json };

cl::OptionCategory category("anvil-compile options");

cl::opt<std::string> inputFile(cl::Positional,
                               cl::desc("[model.mlir] (instead of --model)"),
                               cl::init(""), cl::cat(category));
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
// The stages' names and descriptions are set in main (from allStages()).
cl::opt<std::string> emit("emit", cl::value_desc("stage"), cl::init(""),
                          cl::cat(category));
cl::list<std::string>
    dumpIrAfter("dump-ir-after",
                cl::desc("Also write the IR after these stages (or 'all') to "
                         "<dir>/<model>.<stage>.mlir, and go on compiling"),
                cl::value_desc("stage"), cl::CommaSeparated, cl::cat(category));
cl::opt<std::string> dumpIrDir("dump-ir-dir",
                               cl::desc("Directory of --dump-ir-after's files "
                                        "(default: the current one)"),
                               cl::value_desc("dir"), cl::init("."),
                               cl::cat(category));
cl::list<std::string> insertPasses(
    "insert-pass",
    cl::desc("Run a pass pipeline at an extension point: "
             "after:STAGE:PASSES or before:STAGE:PASSES, PASSES as inside "
             "anvil-opt's builtin.module(...) (e.g. "
             "after:forward:my-pass{opt=1},canonicalize); repeatable"),
    cl::value_desc("where:stage:passes"), cl::cat(category));
cl::list<std::string> passPlugins(
    "load-pass-plugin",
    cl::desc("Load a pass plugin (a shared library exporting "
             "mlirGetPassPluginInfo) so that --insert-pass can name its "
             "passes; repeatable"),
    cl::value_desc("library"), cl::cat(category));
cl::list<std::string> dialectPlugins(
    "load-dialect-plugin",
    cl::desc("Load a dialect plugin (a shared library exporting "
             "mlirGetDialectPluginInfo): its dialects, and their lowerings, "
             "join the compiler's; repeatable"),
    cl::value_desc("library"), cl::cat(category));
cl::opt<Target> target(
    "target",
    cl::desc("Compile a training executable for this target (-o names it)"),
    cl::values(clEnumValN(Target::CPU, "cpu",
                          "the host CPU (LLVM, vectorized for its ISA)"),
               clEnumValN(Target::CUDA, "cuda",
                          "NVIDIA GPUs (--cuda-arch): kernels through NVVM "
                          "and ptxas, GEMMs on cuBLAS, bf16 mixed precision "
                          "unless --precision says otherwise")),
    cl::init(Target::None), cl::cat(category));
cl::opt<std::string>
    cudaArch("cuda-arch",
             cl::desc("GPU architecture of --target=cuda's kernels: sm_80, "
                      "sm_90 (default), sm_100, ..."),
             cl::value_desc("sm_XY"), cl::init("sm_90"), cl::cat(category));
cl::opt<std::string> cudaToolkit(
    "cuda-toolkit",
    cl::desc("Root of the CUDA toolkit whose ptxas and libdevice build the "
             "kernels (default: the one Anvil was configured with)"),
    cl::value_desc("dir"), cl::init(""), cl::cat(category));
cl::opt<bool> emulateCUDAGrid(
    "emulate-cuda-grid",
    cl::desc("With --target=cpu: run every dispatch through the CUDA "
             "backend's grid mapping, its launches emulated as loops on the "
             "host (tests the kernels' logic without a GPU; slow)"),
    cl::init(false), cl::Hidden, cl::cat(category));
cl::opt<std::string> emulatedGridOrder(
    "emulated-grid-order",
    cl::desc("With --emulate-cuda-grid: the order the emulation runs a "
             "launch's blocks, and a block's threads between two barriers, "
             "in: forward (the default) or reverse (last first; a GPU keeps "
             "no order, so a kernel must train alike in both)"),
    cl::value_desc("forward|reverse"), cl::init("forward"), cl::Hidden,
    cl::cat(category));
cl::opt<int64_t> splitReductions(
    "split-reductions",
    cl::desc("With --target=cuda or --emulate-cuda-grid: sums of at least "
             "this many terms into at most 16384 outputs run in two stages, "
             "partial sums over slices of the terms and then their sum "
             "(anvil-split-reductions; 0: never)"),
    cl::value_desc("terms"), cl::init(4096), cl::cat(category));
cl::opt<int64_t> warpReductions(
    "warp-reductions",
    cl::desc("With --target=cuda or --emulate-cuda-grid: reductions over "
             "rows of at least this many contiguous terms (softmax, norms, "
             "cross-entropy) run a warp per row, the 32 lanes' partials "
             "folded by shuffles, instead of a thread per row (0: never)"),
    cl::value_desc("terms"), cl::init(256), cl::cat(category));
cl::opt<int64_t> rowGroups(
    "row-groups",
    cl::desc("With --target=cuda or --emulate-cuda-grid: the kernels over "
             "the same rows of at least this many (a layer norm's sums, "
             "statistics and normalized rows over 8 x 1024 tokens) run as "
             "one kernel of a warp per row (0: a kernel each)"),
    cl::value_desc("rows"), cl::init(128), cl::cat(category));
cl::opt<std::string> kernelReport(
    "kernel-report",
    cl::desc("With --target=cuda: assemble every kernel of the step with "
             "ptxas -v and write what it reports (registers, stack, spills, "
             "the launch shape) as JSON to this file"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
cl::opt<std::string>
    entryName("entry",
              cl::desc("Compile only this function, for evaluation (no "
                       "training step): the executable's --call=eval runs it"),
              cl::value_desc("function"), cl::init(""), cl::cat(category));
cl::opt<std::string> runtimeDir(
    "runtime-dir",
    cl::desc("Where libanvil_runtime.a and libanvil_trainer.a are (default: "
             "../lib beside anvil-compile)"),
    cl::value_desc("dir"), cl::init(""), cl::cat(category));
cl::opt<bool> noFusion("no-fusion",
                       cl::desc("Skip anvil-fuse: one dispatch per linalg op "
                                "(to measure what fusion gains)"),
                       cl::init(false), cl::cat(category));
cl::opt<unsigned> optLevel("O",
                           cl::desc("LLVM optimization level of the "
                                    "generated code, 0-3 (default 2)"),
                           cl::Prefix, cl::init(2), cl::cat(category));
cl::opt<std::string> cxxDriver("cxx",
                               cl::desc("C++ compiler driver that links the "
                                        "executable (default: $CXX or c++)"),
                               cl::value_desc("program"), cl::init(""),
                               cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init(""),
                                cl::cat(category));
cl::opt<std::string>
    optimizerName("optimizer",
                  cl::desc("sgd, adam, adamw, lamb, adagrad (default: the "
                           "one the model's reference trains with: lamb for "
                           "bert, adagrad for dlrm, else adamw)"),
                  cl::init("adamw"), cl::cat(category));
cl::opt<std::string> meshSpec(
    "mesh",
    cl::desc("Device mesh of the per-rank program: dp=N (data parallel: "
             "each rank takes batch / N rows; gradients and the loss are "
             "averaged over the ranks), tp=M (tensor parallel in the "
             "Megatron layout: attention and MLP weights and the vocabulary "
             "split over M ranks), or both (dp=2,tp=2: N x M ranks, tp "
             "fastest); run it with anvil-run -n <ranks>, mpirun or srun"),
    cl::value_desc("axis=ranks"), cl::init(""), cl::cat(category));
cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("With --mesh tp=N: Megatron's sequence parallelism (norms, "
             "residual adds and dropout between the tensor-parallel regions "
             "run on each rank's 1/N of the sequence; reduce-scatters and "
             "all-gathers replace the all-reduces)"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> partitioner(
    "partitioner",
    cl::desc("With --mesh tp=N: auto (the upstream shard dialect's "
             "propagation and partitioning where they cover the model: even "
             "splits, every op that sees a split value an elementwise op, "
             "matmul, transpose or broadcast; anvil's own rules elsewhere), "
             "shard (fail where they do not), or anvil (anvil's rules)"),
    cl::value_desc("auto|shard|anvil"), cl::init("auto"), cl::cat(category));
cl::opt<int64_t> zeroStage(
    "zero",
    cl::desc("ZeRO stage: 1 shards the optimizer state over the data-parallel "
             "ranks of --mesh dp=N (each rank keeps 1/N of it; gradients are "
             "reduce-scattered and the updated parameters all-gathered); 0: "
             "every rank keeps all of it"),
    cl::value_desc("stage"), cl::init(0), cl::cat(category));
cl::opt<std::string> attentionMode(
    "attention",
    cl::desc("How attention runs: fused (the default with --target=cuda "
             "for sm_80 and newer: flash-attention kernels that keep each "
             "row's log-sum-exp and "
             "never store the scores or probabilities; a padding mask, one "
             "row of keys per sequence (BERT's), is the kernels' key bias; "
             "attention with another mask or heads wider than 128 stays "
             "decomposed) or decomposed (the "
             "default elsewhere: products, softmax and their gradients as "
             "separate kernels and GEMMs)"),
    cl::value_desc("fused|decomposed"), cl::init(""), cl::cat(category));
cl::opt<std::string> gemmEpilogues(
    "gemm-epilogues",
    cl::desc("Whether bf16 linear layers followed by a bias and a tanh GELU "
             "run them in their GEMMs, and the gradient's GELU derivative "
             "and bias sum in the backward GEMM, and bf16 linear layers "
             "followed by a bias alone run it in their GEMM (cuBLASLt's "
             "GELU_AUX_BIAS, DGELU_BGRAD, BGRADA and BIAS epilogues; "
             "anvil-gemm-epilogues), and with "
             "--precision=fp8=delayed the FP8 MLP's bias and GELU in its first "
             "FP8 GEMM, which writes the GELU's 8-bit codes and their amax "
             "(anvil-decompose fp8-gelu-epilogue): on (the default with "
             "--target=cuda or --emulate-cuda-grid) or off"),
    cl::value_desc("on|off"), cl::init(""), cl::cat(category));
cl::opt<std::string> horizontalFusion(
    "horizontal-fusion",
    cl::desc("Whether independent dispatches that loop over the same domain "
             "(the optimizer's updates of same-shaped parameters) run as one "
             "kernel (anvil-horizontal-fuse): on (the default with "
             "--target=cuda or --emulate-cuda-grid, where a launch costs more "
             "than a small kernel's work) or off"),
    cl::value_desc("on|off"), cl::init(""), cl::cat(category));
cl::opt<std::string> onlineLogSumExp(
    "online-logsumexp",
    cl::desc("Whether a row's log-sum-exp (the cross-entropy's) folds the "
             "row's maximum and sum of exponentials in one pass over the row, "
             "reading the logits once (anvil-convert-to-linalg "
             "online-logsumexp; its rounding differs from the two passes'): "
             "on (the default with --target=cuda or --emulate-cuda-grid) or "
             "off"),
    cl::value_desc("on|off"), cl::init(""), cl::cat(category));
cl::opt<std::string> libraryEmbeddingGrads(
    "library-embedding-grads",
    cl::desc("Whether each embedding table's gradient (f32, i32 ids) runs as "
             "one runtime call (anvil-convert-to-linalg "
             "library-embedding-grads; CUDA's sums each row's gradient rows "
             "in parallel, in position order: the loop's values bit for "
             "bit): on (the "
             "default with --target=cuda or --emulate-cuda-grid, which calls "
             "the CPU's function) or off (a loop over the positions; on a "
             "GPU a thread per column adds every position's row in turn)"),
    cl::value_desc("on|off"), cl::init(""), cl::cat(category));
cl::opt<std::string> padGemmRows(
    "pad-gemm-rows",
    cl::desc("Whether the buffers GEMMs read or write, with rows of 1024 or "
             "more elements that are not 16-byte aligned (GPT-2's logits: "
             "50257 columns), are allocated with rows padded to a multiple of "
             "64 elements "
             "(anvil-cpu-pad-gemm-rows: aligned leading dimensions for "
             "cuBLAS; the padding is never touched, the values are the "
             "same): on (the default with --target=cuda or "
             "--emulate-cuda-grid) or off"),
    cl::value_desc("on|off"), cl::init(""), cl::cat(category));
cl::opt<std::string> libraryConvs(
    "library-convs",
    cl::desc("Whether each convolution, and each of its gradients, that a "
             "convolution library takes (1-3 spatial dimensions, f32 or "
             "bf16, the same padding on both sides) runs as one call of it "
             "(anvil-library-convs): on (the default with --target=cuda: "
             "cuDNN; with --emulate-cuda-grid the CPU's reference of those "
             "calls) or off (linalg convolutions, as kernels; the CPU's "
             "default)"),
    cl::value_desc("on|off"), cl::init(""), cl::cat(category));
cl::opt<std::string> attentionBf16Tensors(
    "attention-bf16-tensors",
    cl::desc("Whether fused attention with bf16 products reads and writes "
             "bf16 tensors, its inputs cast to bf16 where they are made "
             "(anvil-flash-attention's bf16-tensors): on (the default with "
             "--target=cuda or --emulate-cuda-grid: cuDNN reads them in "
             "place) or off (f32 tensors, rounded as the kernels load them)"),
    cl::value_desc("on|off"), cl::init(""), cl::cat(category));
cl::opt<std::string> precision(
    "precision",
    cl::desc("Numeric precision of the step: f32 (the default, but with "
             "--target=cuda); bf16 (the default with --target=cuda: every "
             "GEMM, attention's products too, on bf16 operands with f32 "
             "accumulation, forward and backward; f32 master weights, "
             "optimizer state and other ops: mixed precision); or "
             "fp8[=recipe] (the transformer blocks' linear layers in FP8: "
             "E4M3 operands, E5M2 gradients, bf16 results; the other GEMMs "
             "and attention's "
             "products in bf16 as with bf16, as Transformer Engine runs "
             "inside bf16 autocast). Recipes: current "
             "(the default) scales each tensor by its amax now; delayed by "
             "the largest amax of the last --fp8-amax-history steps "
             "(training state, checkpointed); mxfp8 gives each block of 32 "
             "elements along the contraction a power-of-two scale"),
    cl::value_desc("f32|bf16|fp8[=current|delayed|mxfp8]"), cl::init(""),
    cl::cat(category));
cl::opt<int64_t> fp8AmaxHistory(
    "fp8-amax-history",
    cl::desc("--precision=fp8=delayed: steps of amax history per tensor "
             "(Transformer Engine's default: 1024)"),
    cl::value_desc("steps"), cl::init(1024), cl::cat(category));
cl::opt<std::string> fp8AmaxCompute(
    "fp8-amax-compute",
    cl::desc("--precision=fp8=delayed: the amax a scale comes from, the "
             "history's max or its most_recent entry"),
    cl::value_desc("max|most_recent"), cl::init("max"), cl::cat(category));
cl::opt<int64_t> fp8Margin(
    "fp8-margin",
    cl::desc("--precision=fp8=delayed: powers of two of headroom below the "
             "format's largest value"),
    cl::value_desc("n"), cl::init(0), cl::cat(category));
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

/// What one rank holds and sends in a training step, from @train_step.
struct RankFigures {
  bool valid = false;
  int64_t parameterBytes = 0; ///< Parameters and buffers.
  int64_t gradientBytes = 0;  ///< One gradient per trainable parameter.
  int64_t optimizerStateBytes = 0;
  int64_t communicationBytes = 0; ///< Sent per step (ring all-reduce).
  /// Forward values the backward pass reads (activations kept for it).
  int64_t activationBytes = 0;
};

/// Bytes of a ranked tensor type.
int64_t tensorBytes(mlir::Type type) {
  auto t = mlir::cast<mlir::RankedTensorType>(type);
  return t.getNumElements() *
         static_cast<int64_t>((t.getElementTypeBitWidth() + 7) / 8);
}

/// The figures of `train` (anvil level, one rank's program): what it
/// holds, and what its collectives send over their mesh axes.
RankFigures rankFigures(mlir::func::FuncOp train) {
  RankFigures f;
  f.valid = true;
  for (unsigned i = 0, e = train.getNumArguments(); i < e; ++i) {
    int64_t bytes = tensorBytes(train.getArgumentTypes()[i]);
    if (auto p = train.getArgAttrOfType<mlir::anvil::ParamAttr>(
            i, mlir::anvil::AnvilDialect::kParamAttrName)) {
      f.parameterBytes += bytes;
      if (p.getTrainable())
        f.gradientBytes += bytes;
    } else if (auto s = train.getArgAttrOfType<mlir::anvil::StateAttr>(
                   i, mlir::anvil::AnvilDialect::kStateAttrName);
               s && s.getName().starts_with("opt.")) {
      f.optimizerStateBytes += bytes;
    }
  }
  // The forward computation is what the loss depends on; the values it
  // produces that anything else reads (the VJP rules) are the activations
  // kept for the backward pass.
  auto ret =
      cast<mlir::func::ReturnOp>(train.getBody().front().getTerminator());
  llvm::DenseSet<mlir::Operation *> forward =
      mlir::anvil::lossForwardOps(train);
  for (mlir::Operation *op : forward)
    for (mlir::Value v : op->getResults())
      // (constants are data of the program, not activations)
      if (op->getNumOperands() != 0 &&
          llvm::any_of(v.getUsers(), [&](mlir::Operation *user) {
            return !forward.contains(user) && user != ret;
          }))
        f.activationBytes += tensorBytes(v.getType());
  // A ring reduce-scatter or all-gather of a b-byte tensor over n ranks
  // sends (n - 1) / n b; an all-reduce is one of each.
  train.walk([&](mlir::Operation *op) {
    auto axisRanks = [&](StringRef axis) {
      return std::max<int64_t>(mlir::anvil::meshAxisSize(op, axis), 1);
    };
    if (auto r = dyn_cast<mlir::anvil::AllReduceOp>(op)) {
      int64_t n = axisRanks(r.getAxis());
      f.communicationBytes += 2 * (n - 1) * tensorBytes(r.getType()) / n;
    } else if (auto s = dyn_cast<mlir::anvil::ReduceScatterOp>(op)) {
      int64_t n = axisRanks(s.getAxis());
      f.communicationBytes +=
          (n - 1) * tensorBytes(s.getOperand().getType()) / n;
    } else if (auto g = dyn_cast<mlir::anvil::AllGatherOp>(op)) {
      int64_t n = axisRanks(g.getAxis());
      f.communicationBytes += (n - 1) * tensorBytes(g.getType()) / n;
    }
  });
  return f;
}

/// The GEMMs anvil-fp8 put in FP8, by module path (from --precision=fp8).
std::vector<std::string> fp8Gemms;

/// Collects the matmuls of `module` that anvil-fp8 marked, by the module
/// path of their location (or "?" without one).
void collectFP8Gemms(mlir::ModuleOp module) {
  module.walk([&](mlir::anvil::MatmulOp op) {
    if (!op->hasAttr(mlir::anvil::AnvilDialect::kFP8AttrName))
      return;
    StringRef path = mlir::anvil::modulePathOf(op.getLoc());
    fp8Gemms.push_back(path.empty() ? "?" : path.str());
  });
}

/// An FP8 GEMM of the step that the target runs on dequantized values.
struct DequantizedGemm {
  std::string module; ///< Its layer's module path ("?" without one).
  int64_t m, n, k;
  std::string why;
};
std::vector<DequantizedGemm> fp8Dequantized;
/// The step's FP8 GEMMs, dequantized or not.
int64_t fp8GemmsInStep = 0;

/// The chip whose kernels the emulated CUDA grid runs.
constexpr StringLiteral kEmulatedGridChip = "sm_90";

/// The FP8 GEMMs' form of the emulated CUDA grid: its chip's.
std::string emulatedGridFp8GemmsForm() {
  return mlir::anvil::cuda::fp8GemmsForm(kEmulatedGridChip);
}

/// Collects the FP8 GEMMs of `step` that anvil-decompose{fp8-gemms=`form`
/// fp8-gemm-result=bf16} (--precision=fp8's) multiplies dequantized.
void collectDequantizedFP8Gemms(mlir::func::FuncOp step, StringRef form) {
  mlir::Builder b(step.getContext());
  step.walk([&](mlir::anvil::MatmulOp op) {
    std::optional<std::string> why =
        mlir::anvil::fp8GemmForm(op, form, b.getBF16Type());
    fp8GemmsInStep += why.has_value();
    if (!why || why->empty())
      return;
    auto lhs = cast<mlir::RankedTensorType>(op.getLhs().getType());
    auto out = op.getType();
    int64_t rank = out.getRank();
    int64_t m = 1;
    for (int64_t d = 0; d < rank - 1; ++d)
      m *= out.getDimSize(d);
    StringRef path = mlir::anvil::modulePathOf(op.getLoc());
    fp8Dequantized.push_back(
        {path.empty() ? "?" : path.str(), m, out.getDimSize(rank - 1),
         lhs.getDimSize(lhs.getRank() - (op.getTransposeLhs() ? 2 : 1)), *why});
  });
}

/// `dispatches` is the number of dispatch regions of the compiled step,
/// `plannedBytes` its workspace, or -1 when not compiled that far; `launches`
/// what a CUDA step launches and calls (when compiled to kernels).
void printReport(const ModelReport &r, int64_t dispatches, int64_t plannedBytes,
                 std::optional<anvil::compile::StepLaunches> launches,
                 const RankFigures &rank, raw_ostream &os) {
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
    if (dispatches >= 0)
      o["dispatches_per_step"] = dispatches;
    if (launches) {
      o["kernel_launches_per_step"] = launches->kernels;
      o["runtime_calls_per_step"] = launches->runtimeCalls;
    }
    if (plannedBytes >= 0)
      o["planned_bytes"] = plannedBytes;
    if (!fp8Gemms.empty()) {
      json::Array names;
      for (const std::string &n : fp8Gemms)
        names.push_back(n);
      o["fp8_gemms"] = std::move(names);
    }
    if (!fp8Dequantized.empty()) {
      json::Array gemms;
      for (const DequantizedGemm &g : fp8Dequantized)
        gemms.push_back(json::Object{{"module", g.module},
                                     {"mnk", json::Array{g.m, g.n, g.k}},
                                     {"why", g.why}});
      o["fp8_gemms_dequantized"] = std::move(gemms);
    }
    if (rank.valid) {
      o["per_rank"] = json::Object{
          {"parameter_bytes", rank.parameterBytes},
          {"gradient_bytes", rank.gradientBytes},
          {"optimizer_state_bytes", rank.optimizerStateBytes},
          {"activation_bytes", rank.activationBytes},
          {"communication_bytes_per_step", rank.communicationBytes}};
    }
    os << json::Value(std::move(o)) << "\n";
    return;
  }
  os << "model:           " << r.model << " (" << r.config << ")\n"
     << "parameters:      " << r.parameters << " in " << r.parameterTensors
     << " tensors\n"
     << "batch x seq_len: " << r.batch << " x " << r.seqLen << " = "
     << r.tokensPerStep << " tokens per step\n"
     << "flops_per_step:  " << r.flopsPerStep << " (training, analytic)\n";
  if (dispatches >= 0)
    os << "dispatches:      " << dispatches << " per step (after fusion)\n";
  if (launches)
    os << "launches:        " << launches->kernels << " kernels and "
       << launches->runtimeCalls << " runtime calls per step (CUDA)\n";
  if (plannedBytes >= 0)
    os << "planned_bytes:   " << plannedBytes
       << " (the step's workspace, static memory plan)\n";
  if (!fp8Gemms.empty()) {
    os << "fp8 gemms:       " << fp8Gemms.size() << " (";
    for (size_t i = 0; i < fp8Gemms.size(); ++i)
      os << (i ? ", " : "") << fp8Gemms[i];
    os << ")\n";
  }
  if (!fp8Dequantized.empty()) {
    // The distinct reasons, each with how many GEMMs it keeps.
    llvm::MapVector<StringRef, int> reasons;
    for (const DequantizedGemm &g : fp8Dequantized)
      ++reasons[g.why];
    os << "fp8 dequantized: " << fp8Dequantized.size() << " of the step's "
       << fp8GemmsInStep << " FP8 GEMMs (";
    llvm::interleave(
        reasons, os, [&](const auto &r) { os << r.second << ": " << r.first; },
        "; ");
    os << ")\n";
  }
  if (rank.valid)
    os << "per rank:        " << rank.parameterBytes << " parameter, "
       << rank.gradientBytes << " gradient, " << rank.optimizerStateBytes
       << " optimizer-state, " << rank.activationBytes << " activation bytes; "
       << rank.communicationBytes << " bytes sent per step\n";
}
} // namespace

/// Data-parallel and tensor-parallel ranks of --mesh (1 without them).
int64_t dataParallel = 1, tensorParallel = 1;

/// Parses --mesh: `dp=N`, `tp=M` or both (`dp=2,tp=2`). The ranks are laid
/// out with tp fastest: the tp ranks of one data-parallel rank are
/// neighbours (one machine's NVLink domain).
LogicalResult parseMesh() {
  if (meshSpec.empty())
    return mlir::success();
  SmallVector<StringRef> axes;
  StringRef(meshSpec).split(axes, ',');
  llvm::StringSet<> seen;
  for (StringRef axis : axes) {
    auto [name, value] = axis.split('=');
    int64_t ranks = 0;
    if (name != "dp" && name != "tp") {
      error("--mesh: axis '" + name +
            "' is not supported yet (dp, data parallel, and tp, tensor "
            "parallel, are)");
      return mlir::failure();
    }
    if (!seen.insert(name).second) {
      error("--mesh: axis '" + name + "' appears twice");
      return mlir::failure();
    }
    if (value.getAsInteger(10, ranks) || ranks < 1) {
      error("--mesh: " + name + " = '" + value +
            "' is not a positive number of ranks");
      return mlir::failure();
    }
    (name == "dp" ? dataParallel : tensorParallel) = ranks;
  }
  return mlir::success();
}

/// Partitions @forward, whose parameters carry their tensor-parallel
/// layout, into one rank's program over mesh axis tp; `model` is the zoo
/// model (null for a file).
LogicalResult partitionTensorParallel(mlir::ModuleOp module,
                                      const ModelInfo *model) {
  if (!model) {
    auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
    bool laidOut = false;
    for (unsigned i = 0; forward && i < forward.getNumArguments(); ++i)
      if (auto s = forward.getArgAttrOfType<mlir::DictionaryAttr>(
              i, mlir::anvil::AnvilDialect::kShardingAttrName))
        laidOut |= s.get("split_axis") ==
                   mlir::StringAttr::get(module.getContext(), "tp");
    if (!laidOut) {
      error("--mesh tp=" + std::to_string(tensorParallel) + ": '" + inputFile +
            "': no parameter of @forward has a tensor-parallel layout "
            "(anvil.sharding = {split_axis = \"tp\", split_dim = D, "
            "split_groups = 1})");
      return mlir::failure();
    }
  } else if (!markTensorParallelLayout(module, *model)) {
    std::string with;
    for (const ModelInfo &m : listModels())
      if (!m.tensorParallel.empty())
        with += (with.empty() ? "" : ", ") + m.name;
    error("--mesh tp=" + std::to_string(tensorParallel) + ": model '" +
          model->name +
          "' has no tensor-parallel layout yet (models with "
          "one: " +
          with + ")");
    return mlir::failure();
  }
  mlir::PassManager pm(module.getContext());
  std::string pipeline = "anvil-partition{axis=tp sequence-parallel=" +
                         std::string(sequenceParallel ? "true" : "false") +
                         " engine=" + partitioner + "}";
  if (failed(mlir::parsePassPipeline(pipeline, pm)) || failed(pm.run(module))) {
    bool padding = model && partitioner != "shard" &&
                   llvm::is_contained(model->fields, "pad_vocab_to");
    error("--mesh tp=" + std::to_string(tensorParallel) +
          ": could not partition the model (see above)" +
          (padding ? " (a vocabulary that does not divide can be padded "
                     "as Megatron pads it, to a multiple of 128 x tp: --set "
                     "pad_vocab_to=" +
                         std::to_string(128 * tensorParallel) + ")"
                   : std::string()));
    return mlir::failure();
  }
  return mlir::success();
}

/// anvil-gemm-epilogues on `module` with --gemm-epilogues=on: the forward
/// graph's linear layers in the precision stage (`forward`), the training
/// step's backward GEMMs once it is built (`backward`).
LogicalResult runGemmEpilogues(mlir::ModuleOp module, bool backward) {
  if (gemmEpilogues != "on")
    return mlir::success();
  mlir::PassManager pm(module.getContext());
  std::string pass = backward ? "anvil-gemm-epilogues{forward=false}"
                              : "anvil-gemm-epilogues{backward=false}";
  if (failed(mlir::parsePassPipeline(pass, pm)) || failed(pm.run(module)))
    return error("--gemm-epilogues=on failed (see above)"), mlir::failure();
  return mlir::success();
}

/// Builds @train_step into `module` with the optimizer options.
LogicalResult buildTrainStep(mlir::ModuleOp module) {
  mlir::PassManager pm(module.getContext());
  // Full precision: std::to_string would print 1e-7 as 0.000000.
  auto num = [](double v) { return llvm::formatv("{0:e16}", v).str(); };
  std::string optimizer = optimizerName;
  if (optimizerName.getNumOccurrences() == 0 && !modelName.empty())
    if (const ModelInfo *info = findModel(modelName))
      optimizer = info->optimizer;
  std::string pipeline =
      "anvil-optimizer{optimizer=" + optimizer + " lr=" + num(learningRate) +
      " warmup=" + std::to_string(warmupSteps) + " decay=" + decaySchedule +
      " total-steps=" + std::to_string(totalSteps) + " clip=" + num(clipNorm) +
      " weight-decay=" + num(weightDecay) +
      " data-parallel=" + std::to_string(dataParallel) +
      " zero=" + std::to_string(zeroStage) + " " + optimizerOptions + "}";
  if (failed(mlir::parsePassPipeline(pipeline, pm)))
    return error("could not build the training step (" + pipeline + ")"),
           mlir::failure();
  // The VJP rules build their constants (masks, index vectors) per layer;
  // one copy of each is enough.
  pm.addPass(mlir::createCSEPass());
  if (failed(pm.run(module))) {
    error("could not build the training step (" + pipeline + ")");
    return mlir::failure();
  }
  return mlir::success();
}

/// The directory of the runtime libraries: --runtime-dir, else ../lib
/// relative to this executable.
std::string defaultRuntimeDir(const char *argv0) {
  if (!runtimeDir.empty())
    return runtimeDir;
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&defaultRuntimeDir));
  SmallString<256> dir(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(dir, "..", "lib");
  return std::string(dir);
}

/// Number of dispatch regions of `fn` after fusion: each remaining linalg
/// op (and each scatter loop) is one kernel launch (or GEMM call) per step,
/// and so is each fused attention op (a call of the runtime's kernels).
int64_t countDispatches(mlir::func::FuncOp fn) {
  int64_t n = 0;
  fn.walk([&](mlir::Operation *op) {
    if ((isa<mlir::linalg::LinalgOp>(op) &&
         !op->getParentOfType<mlir::linalg::LinalgOp>()) ||
        isa<mlir::anvil::FlashAttentionOp, mlir::anvil::FlashAttentionGradOp>(
            op))
      ++n;
  });
  return n;
}

/// The stages, one per line, for --help.
std::string stageHelp() {
  std::string help = "The stages (for --emit, --dump-ir-after and "
                     "--insert-pass), in order:\n";
  for (const anvil::compile::StageInfo &info : anvil::compile::allStages())
    help += llvm::formatv("  {0,-11} {1}\n", info.name, info.description);
  return help;
}

/// Loads the plugins of --load-dialect-plugin into `registry` and those of
/// --load-pass-plugin into the pass registry.
LogicalResult loadPlugins(mlir::DialectRegistry &registry) {
  // dlopen searches the library path for a name without a slash; a file
  // named on the command line is meant as a path.
  auto resolve = [](const std::string &path) {
    SmallString<256> absolute(path);
    if (sys::fs::exists(absolute))
      sys::fs::make_absolute(absolute);
    return std::string(absolute);
  };
  for (const std::string &given : dialectPlugins) {
    std::string path = resolve(given);
    auto plugin = mlir::DialectPlugin::load(path);
    if (!plugin)
      return error("--load-dialect-plugin=" + given + ": " +
                   toString(plugin.takeError())),
             mlir::failure();
    plugin->registerDialectRegistryCallbacks(registry);
  }
  for (const std::string &given : passPlugins) {
    std::string path = resolve(given);
    auto plugin = mlir::PassPlugin::load(path);
    if (!plugin)
      return error("--load-pass-plugin=" + given + ": " +
                   toString(plugin.takeError())),
             mlir::failure();
    plugin->registerPassRegistryCallbacks();
  }
  return mlir::success();
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  using anvil::compile::Stage;
  // The printer's options (--mlir-print-debuginfo, ...) apply to --emit;
  // the rest of what the linked libraries register stays out of --help.
  mlir::registerAsmPrinterCLOptions();
  for (const char *name : {"mlir-print-debuginfo", "mlir-pretty-debuginfo",
                           "mlir-print-local-scope"}) {
    auto &options = cl::getRegisteredOptions();
    if (auto it = options.find(name); it != options.end())
      it->second->addCategory(category);
  }
  emit.setDescription("Print the IR after this stage (and the passes "
                      "inserted after it) and stop; none: print nothing "
                      "(the default; but with -o and no --target, sharded: "
                      "the forward graph, one rank's under --mesh)");
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "anvil-compile: compile a model into a training executable\n\n"
      "  anvil-compile --list-models\n"
      "  anvil-compile --model gpt --config gpt2-124m --emit=forward -o "
      "out.mlir\n"
      "  anvil-compile --model gpt --config gpt2-124m --report=json\n"
      "  anvil-compile --model gpt --config gpt-tiny --target=cpu -o "
      "gpt.train\n"
      "  anvil-compile model.mlir --target=cpu -o model.train\n"
      "  anvil-compile model.mlir --emit=fused -o model.fused.mlir\n"
      "  anvil-compile --model bert --config bert-tiny --target=cpu -o "
      "b.train \\\n"
      "      --load-pass-plugin=libAnvilExamplePlugin.so \\\n"
      "      "
      "--insert-pass='after:forward:example-gelu-tanh{modules=bert}'\n\n" +
          stageHelp());

  if (listModelsFlag) {
    printModels(outs());
    return 0;
  }
  bool fromFile = !inputFile.empty();
  if (failed(parseMesh()))
    return 1;
  if (zeroStage != 0 && zeroStage != 1)
    return error("--zero " + std::to_string(zeroStage) +
                 ": stage 1 (sharded optimizer state) is supported; stages 2 "
                 "and 3 are not yet");
  if (zeroStage == 1 && dataParallel == 1)
    return error("--zero 1 shards the optimizer state over data-parallel "
                 "ranks: give --mesh dp=N with N > 1");
  if (sequenceParallel && tensorParallel == 1)
    return error("--sequence-parallel splits the sequence over the "
                 "tensor-parallel ranks: give --mesh tp=N with N > 1");
  if (fromFile && dataParallel > 1)
    return error("--mesh dp=N needs a zoo model (--model, --config) for now: "
                 "it divides the model's batch among the ranks");
  if (partitioner != "auto" && partitioner != "shard" && partitioner != "anvil")
    return error("--partitioner=" + partitioner +
                 ": the partitioners are auto, shard and anvil");
  if (fromFile && (!modelName.empty() || !configName.empty()))
    return error("give either an .mlir file or --model/--config, not both");
  if (!fromFile && (modelName.empty() || configName.empty()))
    return error("--model and --config are required (see --list-models), or "
                 "an .mlir file");

  // --precision: f32, bf16, or fp8 with a recipe; mixed precision by
  // default on CUDA (the tensor cores), f32 elsewhere.
  if (precision.getNumOccurrences() && precision.empty())
    return error("--precision= needs a value: f32, bf16 or "
                 "fp8[=current|delayed|mxfp8]");
  if (precision.empty())
    precision = target == Target::CUDA ? "bf16" : "f32";
  if (attentionMode.getNumOccurrences() && attentionMode != "fused" &&
      attentionMode != "decomposed")
    return error("--attention=" + attentionMode + ": fused or decomposed");
  // The CUDA runtime's flash-attention kernels need sm_80 (bf16 mma.sync).
  bool fusedAttentionRuns =
      target != Target::CUDA || mlir::anvil::cuda::hasFusedAttention(cudaArch);
  if (attentionMode == "fused" && !fusedAttentionRuns)
    return error("--attention=fused: the CUDA flash-attention kernels need "
                 "sm_80 or newer, not --cuda-arch=" +
                 cudaArch + " (use --attention=decomposed)");
  if (attentionMode.empty())
    attentionMode =
        target == Target::CUDA && fusedAttentionRuns ? "fused" : "decomposed";
  // The on|off choices that default to on for the CUDA kernels (the target
  // or its emulated grid).
  for (cl::opt<std::string> *onOff :
       {&gemmEpilogues, &libraryConvs, &attentionBf16Tensors, &horizontalFusion,
        &onlineLogSumExp, &libraryEmbeddingGrads, &padGemmRows}) {
    if (onOff->getNumOccurrences() && *onOff != "on" && *onOff != "off")
      return error("--" + onOff->ArgStr.str() + "=" + *onOff + ": on or off");
    if (onOff->empty())
      *onOff = target == Target::CUDA || emulateCUDAGrid ? "on" : "off";
  }
  if (attentionBf16Tensors.getNumOccurrences() &&
      attentionBf16Tensors == "on" && attentionMode != "fused")
    return error("--attention-bf16-tensors=on: attention is not fused "
                 "(add --attention=fused)");
  std::string fp8Recipe;
  if (precision != "f32" && precision != "bf16") {
    auto [kind, recipe] = StringRef(precision).split('=');
    if (kind != "fp8")
      return error("--precision=" + precision +
                   ": expected f32, bf16 or fp8[=current|delayed|mxfp8]");
    fp8Recipe = recipe.empty() ? "current" : recipe.str();
    if (fp8Recipe != "current" && fp8Recipe != "delayed" &&
        fp8Recipe != "mxfp8")
      return error("--precision=" + precision + ": no FP8 recipe named '" +
                   fp8Recipe + "' (current, delayed or mxfp8)");
  }
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &fp8AmaxHistory, &fp8AmaxCompute, &fp8Margin})
    if (o->getNumOccurrences() && fp8Recipe != "delayed")
      return error("--" + o->ArgStr.str() +
                   " applies to --precision=fp8=delayed only");
  if (fp8AmaxHistory < 1)
    return error("--fp8-amax-history=" + std::to_string(fp8AmaxHistory) +
                 ": needs at least one step");
  if (fp8AmaxCompute != "max" && fp8AmaxCompute != "most_recent")
    return error("--fp8-amax-compute=" + fp8AmaxCompute +
                 ": expected max or most_recent");
  if (fp8Margin < 0)
    return error("--fp8-margin=" + std::to_string(fp8Margin) +
                 ": must not be negative");

  // The last stage to run: --emit's, else all of them for an executable,
  // else the (sharded) forward graph: -o alone writes it, --report reads it.
  std::optional<Stage> emitStage;
  if (!emit.empty() && emit != "none") {
    emitStage = anvil::compile::parseStage(emit);
    if (!emitStage)
      return error("--emit=" + emit + ": no stage named '" + emit +
                   "' (none, or a stage: " + anvil::compile::stageNameList() +
                   ")");
  }
  bool emitIR = emitStage.has_value() ||
                (emit.empty() && !outputFile.empty() && target == Target::None);
  bool cuda = target == Target::CUDA;
  // --kernel-report alone (no -o) needs the kernels, not an executable.
  bool reportOnly = cuda && !kernelReport.empty() && outputFile.empty();
  Stage last = emitStage                                     ? *emitStage
               : reportOnly                                  ? Stage::Kernels
               : target != Target::None                      ? Stage::LLVM
               : emitIR                                      ? Stage::Sharded
               : dumpIrAfter.empty() && insertPasses.empty() ? Stage::Sharded
                                                             : Stage::LLVM;
  if (!entryName.empty() && emitStage == Stage::TrainStep)
    return error("--emit=train-step: --entry compiles one function for "
                 "evaluation, without a training step");
  if (emitStage == Stage::Kernels && !cuda)
    return error("--emit=kernels: the kernels stage is the CUDA backend's; "
                 "add --target=cuda");
  if (emulateCUDAGrid && target != Target::CPU)
    return error("--emulate-cuda-grid runs the CUDA kernels' logic on the "
                 "CPU: use it with --target=cpu");
  if (emulatedGridOrder != "forward" && emulatedGridOrder != "reverse")
    return error("--emulated-grid-order=" + emulatedGridOrder +
                 ": forward or reverse");
  if (emulatedGridOrder.getNumOccurrences() && !emulateCUDAGrid)
    return error("--emulated-grid-order orders the emulated grid's blocks "
                 "and threads: add --emulate-cuda-grid");
  if (!kernelReport.empty() && !cuda)
    return error("--kernel-report assembles CUDA kernels: add --target=cuda");
  // The grid's shapes in numbers of terms: not negative, and for the grid.
  for (auto [option, unit, zero, shapes] :
       {std::tuple(&splitReductions, "terms", "0: never split",
                   "sums: add --target=cuda (the CPU splits a dispatch among "
                   "its threads)"),
        std::tuple(&warpReductions, "terms", "0: a thread per row",
                   "reductions: add --target=cuda (or --emulate-cuda-grid)"),
        std::tuple(&rowGroups, "rows", "0: a kernel each",
                   "kernels: add --target=cuda (or --emulate-cuda-grid)")}) {
    std::string flag = "--" + option->ArgStr.str();
    if (*option < 0)
      return error(flag + "=" + std::to_string(*option) + ": a number of " +
                   unit + ", at least 0 (" + zero + ")");
    if (option->getNumOccurrences() && !cuda && !emulateCUDAGrid)
      return error(flag + " shapes the CUDA grid's " + shapes);
  }
  auto runs = [&](Stage stage) {
    if (stage > last || (stage == Stage::TrainStep && !entryName.empty()))
      return false;
    return stage != Stage::Kernels || cuda;
  };
  if (!kernelReport.empty() && !runs(Stage::Kernels))
    return error("--kernel-report reads the kernels stage, which --emit=" +
                 emit + " stops before");
  bool irToStdout = emitIR && (outputFile.empty() || outputFile == "-");

  mlir::DialectRegistry registry;
  registry.insert<mlir::anvil::AnvilDialect, mlir::func::FuncDialect>();
  mlir::anvil::cuda::registerCUDABackendDialects(registry); // (and CPU's)
  // Every Anvil pass and MLIR's generic ones, for --insert-pass.
  mlir::anvil::registerAnvilConversionPasses();
  mlir::anvil::registerAnvilFusionPasses();
  mlir::anvil::registerAnvilTrainingPasses();
  mlir::anvil::registerAnvilTransformsPasses();
  mlir::registerTransformsPasses();
  if (failed(loadPlugins(registry)))
    return 1;
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  anvil::compile::PipelineHooks hooks(context);
  for (const std::string &spec : insertPasses)
    if (Error e = hooks.addInsertion(spec))
      return error(toString(std::move(e)));
  for (const std::string &stage : dumpIrAfter)
    if (Error e = hooks.addDump(stage))
      return error(toString(std::move(e)));
  std::string why =
      emitStage ? "--emit=" + emit + " stops there"
      : !entryName.empty()
          ? "--entry compiles one function, without a training step"
      : !cuda ? "'kernels' is --target=cuda's"
              : "give --emit=STAGE or --target to compile further";
  if (Error e = hooks.checkReached(runs, why))
    return error(toString(std::move(e)));

  BuiltModel built;
  std::string model;
  if (fromFile) {
    llvm::SourceMgr sourceMgr;
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    built.module =
        mlir::parseSourceFile<mlir::ModuleOp>(inputFile, sourceMgr, &context);
    if (!built.module)
      return 1;
    model = llvm::sys::path::stem(inputFile).str();
    if (built.module->getOperation()->hasAttr(
            mlir::anvil::AnvilDialect::kMeshAttrName))
      return error("'" + inputFile +
                   "' has an anvil.mesh: give the mesh with --mesh (tp=N "
                   "partitions the parameters' anvil.sharding layouts)");
    if (report != Report::None)
      return error("--report describes zoo models; use anvil-opt "
                   "--anvil-cost-report on a file");
  } else {
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
    try {
      built = buildModel(context, modelName, configName, fields);
      if (dataParallel > 1) {
        // One rank's program: its share of the batch.
        int64_t batch = built.report.batch;
        if (batch % dataParallel != 0)
          return error("--mesh dp=" + std::to_string(dataParallel) +
                       ": the batch of " + std::to_string(batch) +
                       " does not divide into " + std::to_string(dataParallel) +
                       " ranks");
        fields.emplace_back("batch", std::to_string(batch / dataParallel));
        built = buildModel(context, modelName, configName, fields);
      }
    } catch (const BuildError &e) {
      return error(e.what());
    }
    model = configName;
  }
  mlir::ModuleOp module = *built.module;
  hooks.setDumpFiles(dumpIrDir, model);

  // Runs `stage`: what is inserted before it, its work, what is inserted
  // after it and the dumps. Stages past `last` do not run.
  auto runStage = [&](Stage stage, llvm::function_ref<LogicalResult()> work) {
    if (!runs(stage))
      return mlir::success();
    return mlir::success(succeeded(hooks.runBefore(stage, module)) &&
                         succeeded(work()) &&
                         succeeded(hooks.runAfter(stage, module)));
  };

  // forward: built above.
  if (failed(runStage(Stage::Forward, [] { return mlir::success(); })))
    return 1;

  // sharded: the mesh, and the tensor-parallel partitioning.
  if (failed(runStage(Stage::Sharded, [&] {
        if (dataParallel == 1 && tensorParallel == 1)
          return mlir::success();
        mlir::Builder b(&context);
        SmallVector<mlir::NamedAttribute> axes;
        if (dataParallel > 1)
          axes.push_back(
              b.getNamedAttr("dp", b.getI64IntegerAttr(dataParallel)));
        if (tensorParallel > 1)
          axes.push_back(
              b.getNamedAttr("tp", b.getI64IntegerAttr(tensorParallel)));
        module->setAttr(mlir::anvil::AnvilDialect::kMeshAttrName,
                        b.getDictionaryAttr(axes));
        if (tensorParallel > 1)
          return partitionTensorParallel(
              module, fromFile ? nullptr : findModel(modelName));
        return mlir::success();
      })))
    return 1;

  // precision: the GEMMs that run in bf16 or FP8; then attention as fused
  // kernels (keeping the bf16_gemms anvil-bf16 set).
  if (failed(runStage(Stage::Precision, [&] {
        mlir::PassManager pm(&context);
        // FP8 for the chosen GEMMs, then bf16 for the others (anvil-bf16
        // leaves FP8 GEMMs alone).
        std::string pass =
            precision == "f32" ? ""
            : precision == "bf16"
                ? "anvil-bf16"
                : "anvil-fp8{recipe=" + fp8Recipe +
                      (tensorParallel > 1 ? " amax-axis=tp" : "") +
                      "},anvil-bf16";
        if (!pass.empty() && (failed(mlir::parsePassPipeline(pass, pm)) ||
                              failed(pm.run(module))))
          return error("--precision=" + precision + " failed (see above)"),
                 mlir::failure();
        collectFP8Gemms(module);
        if (attentionMode == "fused") {
          mlir::PassManager fuse(&context);
          // With --attention-bf16-tensors (CUDA's and its emulated grid's
          // default), attention with bf16 products on bf16 tensors: cuDNN's
          // reads them in place.
          std::string pass = attentionBf16Tensors == "on"
                                 ? "anvil-flash-attention{bf16-tensors=true}"
                                 : "anvil-flash-attention";
          if (failed(mlir::parsePassPipeline(pass, fuse)) ||
              failed(fuse.run(module)))
            return error("--attention=fused failed (see above)"),
                   mlir::failure();
        }
        return runGemmEpilogues(module, /*backward=*/false);
      })))
    return 1;

  // train-step: @train_step, built from @forward unless the module has one.
  if (failed(runStage(Stage::TrainStep, [&] {
        if (module.lookupSymbol<mlir::func::FuncOp>("train_step"))
          return mlir::success();
        if (failed(buildTrainStep(module)) ||
            failed(runGemmEpilogues(module, /*backward=*/true)))
          return mlir::failure();
        if (fp8Recipe != "delayed")
          return mlir::success();
        // The delayed recipe's histories: state of the differentiated step.
        mlir::PassManager pm(&context);
        std::string pipeline = "anvil-fp8-delayed-scaling{history-length=" +
                               std::to_string(fp8AmaxHistory) +
                               " amax-compute=" + fp8AmaxCompute +
                               " margin=" + std::to_string(fp8Margin) + "}";
        if (failed(mlir::parsePassPipeline(pipeline, pm)) ||
            failed(pm.run(module)))
          return error("--precision=" + precision + " failed (see above)"),
                 mlir::failure();
        return mlir::success();
      })))
    return 1;

  // The functions to compile: --entry alone, else @train_step and @forward
  // for evaluation.
  mlir::func::FuncOp train, eval;
  if (!entryName.empty()) {
    eval = module.lookupSymbol<mlir::func::FuncOp>(entryName);
    if (!eval)
      return error("--entry: the module has no function @" + entryName);
  } else if (runs(Stage::TrainStep)) {
    train = module.lookupSymbol<mlir::func::FuncOp>("train_step");
    eval = module.lookupSymbol<mlir::func::FuncOp>("forward");
    if (!train)
      return error("the module has no @train_step and no @forward to build "
                   "one from");
  }
  RankFigures rankFiguresOfStep;
  if (train)
    rankFiguresOfStep = rankFigures(train);
  // Which FP8 GEMMs the target multiplies dequantized (the form the
  // backend's anvil-decompose takes).
  if (train && !fp8Recipe.empty())
    collectDequantizedFP8Gemms(
        train, cuda ? mlir::anvil::cuda::fp8GemmsForm(cudaArch)
               : emulateCUDAGrid
                   ? emulatedGridFp8GemmsForm()
                   : mlir::anvil::cpu::CPUPipelineOptions().fp8Gemms);

  // The FP8 GEMMs' result type: with --precision=fp8, bf16, as the other
  // GEMMs' (anvil-bf16 runs after anvil-fp8); f32 for the FP8 GEMMs an
  // input writes itself (f32 matmuls of fp8_quantize results).
  std::string fp8GemmResult = fp8Recipe.empty() ? "f32" : "bf16";

  // The backend's stages.
  std::optional<mlir::anvil::ModuleABI> abi;
  int64_t dispatches = -1, plannedBytes = -1;
  std::optional<anvil::compile::StepLaunches> launches;
  // What the flags make of the CUDA kernels (the target's, or the emulated
  // grid's).
  auto kernelOptions = [&] {
    mlir::anvil::cuda::CUDAPipelineOptions options;
    options.fuse = !noFusion;
    options.splitReductions = splitReductions;
    options.warpReductions = warpReductions;
    options.rowGroups = rowGroups;
    options.libraryConvs = libraryConvs == "on";
    options.horizontalFuse = horizontalFusion == "on";
    options.onlineLogSumExp = onlineLogSumExp == "on";
    options.libraryEmbeddingGrads = libraryEmbeddingGrads == "on";
    options.padGemmRows = padGemmRows == "on";
    options.fp8GemmResult = fp8GemmResult;
    options.fp8GeluEpilogue = gemmEpilogues == "on";
    return options;
  };
  // Runs the backend's passes of driver stage `stage` (those after the
  // previous stage): the CPU's pipeline, or the CUDA one.
  auto lower = [&](Stage stage) {
    mlir::PassManager pm(&context);
    if (cuda) {
      using S = mlir::anvil::cuda::Stage;
      S upTo = stage == Stage::Linalg       ? S::Linalg
               : stage == Stage::Fused      ? S::Fused
               : stage == Stage::Bufferized ? S::Bufferized
               : stage == Stage::Kernels    ? S::Kernels
                                            : S::LLVM;
      mlir::anvil::cuda::CUDAPipelineOptions options = kernelOptions();
      options.target.chip = cudaArch;
      options.target.toolkit = cudaToolkit;
      mlir::anvil::cuda::buildCUDAPipeline(
          pm, upTo,
          upTo == S::Linalg
              ? std::nullopt
              : std::optional(static_cast<S>(static_cast<int>(upTo) - 1)),
          options);
    } else {
      using S = mlir::anvil::cpu::Stage;
      S upTo = stage == Stage::Linalg       ? S::Linalg
               : stage == Stage::Fused      ? S::Fused
               : stage == Stage::Bufferized ? S::Bufferized
                                            : S::LLVM;
      mlir::anvil::cpu::CPUPipelineOptions options;
      if (emulateCUDAGrid) {
        // The emulated grid runs what CUDA runs (its chip's: FP8 GEMMs with
        // K innermost), calling the CPU's references of the libraries'
        // functions (the convolutions' where CUDA calls cuDNN).
        mlir::anvil::cuda::CUDAPipelineOptions cuda = kernelOptions();
        cuda.target.chip = kEmulatedGridChip.str();
        options = mlir::anvil::cuda::kernelShapeOptions(cuda);
      } else {
        options.fuse = !noFusion;
        options.libraryConvs = libraryConvs == "on";
        options.horizontalFuse = horizontalFusion == "on";
        options.onlineLogSumExp = onlineLogSumExp == "on";
        options.libraryEmbeddingGrads = libraryEmbeddingGrads == "on";
        options.padGemmRows = padGemmRows == "on";
        options.fp8GemmResult = fp8GemmResult;
        options.fp8GeluEpilogue = gemmEpilogues == "on";
      }
      mlir::anvil::cpu::buildCPUPipeline(
          pm, upTo,
          upTo == S::Linalg
              ? std::nullopt
              : std::optional(static_cast<S>(static_cast<int>(upTo) - 1)),
          options);
      if (upTo == S::Bufferized && emulateCUDAGrid)
        mlir::anvil::cuda::buildGridEmulationPipeline(
            pm, /*blockSize=*/256, warpReductions,
            /*reverseOrder=*/emulatedGridOrder == "reverse");
    }
    if (failed(pm.run(module)))
      return error("lowering failed (see above)"), mlir::failure();
    return mlir::success();
  };
  if (failed(runStage(Stage::Linalg, [&] {
        // Drop every function the executable does not export.
        for (auto fn :
             llvm::make_early_inc_range(module.getOps<mlir::func::FuncOp>()))
          if (fn != train && fn != eval)
            fn.erase();
        auto built = mlir::anvil::buildModuleABI(train, eval, model, 0);
        if (failed(built))
          return mlir::failure();
        abi = std::move(*built);
        return lower(Stage::Linalg);
      })))
    return 1;
  if (failed(runStage(Stage::Fused, [&] {
        if (failed(lower(Stage::Fused)))
          return mlir::failure();
        auto step = module.lookupSymbol<mlir::func::FuncOp>(
            abi->entries.front().function);
        if (step)
          dispatches = countDispatches(step);
        return mlir::success();
      })))
    return 1;
  if (failed(runStage(Stage::Bufferized, [&] {
        if (failed(lower(Stage::Bufferized)))
          return mlir::failure();
        // The memory plan: each entry point's last argument is its
        // workspace; the runtime allocates the largest once.
        for (const mlir::anvil::EntryPoint &entry : abi->entries) {
          auto fn = module.lookupSymbol<mlir::func::FuncOp>(entry.function);
          auto ws =
              fn ? dyn_cast<mlir::MemRefType>(fn.getArgumentTypes().back())
                 : nullptr;
          if (ws)
            plannedBytes = std::max(plannedBytes, ws.getNumElements());
        }
        mlir::anvil::setPlannedBytes(*abi, plannedBytes);
        return mlir::success();
      })))
    return 1;
  if (failed(runStage(Stage::Kernels, [&] {
        if (failed(lower(Stage::Kernels)))
          return mlir::failure();
        if (auto step = cuda ? module.lookupSymbol<mlir::func::FuncOp>(
                                   abi->entries.front().function)
                             : nullptr)
          launches = anvil::compile::countStepLaunches(step);
        // The report reads the kernels as this stage leaves them.
        return kernelReport.empty()
                   ? mlir::success()
                   : anvil::compile::writeKernelReport(
                         module, cudaArch, cudaToolkit, kernelReport,
                         defaultRuntimeDir(argv[0]));
      })))
    return 1;
  if (failed(runStage(Stage::LLVM, [&] {
        // Whether the runtime may replay the training step as a CUDA graph:
        // anvil-cuda-step-graph's verdict on the host code as it is lowered
        // (after any pass inserted after the kernels stage); without one,
        // not capturable.
        if (cuda && train && abi) {
          mlir::PassManager pm(&context);
          pm.addPass(mlir::anvil::createAnvilCUDAStepGraphPass());
          if (failed(pm.run(module)))
            return error("anvil-cuda-step-graph failed (see above)"),
                   mlir::failure();
          auto step = module.lookupSymbol<mlir::func::FuncOp>(
              abi->entries.front().function);
          auto blocker =
              step ? step->getAttrOfType<mlir::StringAttr>(
                         mlir::anvil::AnvilDialect::kGraphBlockerAttrName)
                   : mlir::StringAttr();
          bool capturable =
              step && step->hasAttr(
                          mlir::anvil::AnvilDialect::kGraphCapturableAttrName);
          mlir::anvil::setStepGraph(
              *abi, capturable ? ""
                    : blocker  ? blocker.getValue()
                               : "anvil-cuda-step-graph did not judge it");
        }
        return lower(Stage::LLVM);
      })))
    return 1;

  if (emitIR) {
    std::string errorMessage;
    auto output = mlir::openOutputFile(
        outputFile.empty() ? std::string("-") : outputFile, &errorMessage);
    if (!output)
      return error(errorMessage);
    module.print(output->os());
    output->keep();
  } else if (target != Target::None && !reportOnly) {
    if (outputFile.empty() || outputFile == "-")
      return error(std::string("--target=") + (cuda ? "cuda" : "cpu") +
                   " needs -o <executable>");
    SmallString<128> object;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("anvil-module", "o", object))
      return error("cannot create a temporary object file: " + ec.message());
    llvm::scope_exit removeObject([&] { llvm::sys::fs::remove(object); });
    if (optLevel > 3)
      return error("-O expects 0, 1, 2 or 3");
    if (failed(
            mlir::anvil::cpu::emitObjectFile(module, *abi, object, optLevel)))
      return 1;
    std::string cxx = cxxDriver;
    if (cxx.empty())
      cxx = llvm::sys::Process::GetEnv("CXX").value_or("c++");
    std::string log;
    if (failed(mlir::anvil::cpu::linkExecutable(
            object, outputFile, defaultRuntimeDir(argv[0]), cxx,
            /*distributed=*/dataParallel * tensorParallel > 1, log,
            cuda ? mlir::anvil::cuda::deviceLibraries(cudaToolkit)
                 : mlir::anvil::cpu::DeviceLibraries())))
      return error(log);
  }
  if (report != Report::None)
    printReport(built.report, dispatches, plannedBytes, launches,
                rankFiguresOfStep, irToStdout ? errs() : outs());
  return 0;
}
