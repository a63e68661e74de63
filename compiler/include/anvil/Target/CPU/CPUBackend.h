//===- CPUBackend.h - anvil graphs to a CPU training executable --*- C++
//-*-===//
//
// The CPU backend in three steps, each usable alone:
//
// 1. `buildCPUPipeline`: anvil IR -> LLVM dialect (decompose, lower to
//    linalg, fuse elementwise chains, bufferize, results to out-parameters,
//    deallocation, loops, LLVM). Stages are named so a driver can stop
//    after one (`linalg`, `fused`, `bufferized`, `llvm`).
// 2. `emitObjectFile`: LLVM dialect -> LLVM IR for the host CPU, with the
//    ABI entry points (`anvil_module_manifest`, `anvil_module_train_step`,
//    `anvil_module_eval_step`) added, optimized at O3 (the loop vectorizer
//    targets the host's AVX2 / AVX-512) and written as an object file,
//    all in-process.
// 3. `linkExecutable`: object + the runtime's training driver -> one
//    executable, through the system C++ compiler driver.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TARGET_CPU_CPUBACKEND_H
#define ANVIL_TARGET_CPU_CPUBACKEND_H

#include "anvil/Target/Manifest.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace mlir::anvil::cpu {

/// The stages of the CPU pipeline, in order.
enum class Stage { Linalg, Fused, Bufferized, LLVM };

/// Choices of the pipeline.
struct CPUPipelineOptions {
  bool fuse = true; ///< Run anvil-fuse (off: one dispatch per linalg op).
  /// anvil-fuse's merge-amax: FP8's cast and amax of a tensor in one
  /// generic (for a GPU grid, which runs it in parallel).
  bool mergeAmax = false;
  /// anvil-fuse's recompute-cheap: cheap elementwise producers of several
  /// consumers computed in each (the CUDA backend's and its emulation).
  bool recomputeCheap = false;
  /// anvil-fuse's merge-cheap-readers: a cast of a producer that stays
  /// written merged into its kernel (the CUDA backend's and its emulation).
  bool mergeCheapReaders = false;
  /// Split each dispatch into chunks for the CPU's threads
  /// (anvil-cpu-parallel-dispatches); off for a GPU target, which maps the
  /// dispatches onto a grid instead.
  bool threadChunks = true;
  /// After fusion, merge independent dispatches over one domain into one
  /// (anvil-horizontal-fuse; the CUDA backend's and its emulation, where a
  /// launch costs more than a small kernel's work).
  bool horizontalFuse = false;
  /// Outline a fill and the reduction it initializes as one dispatch
  /// (anvil-outline-dispatches fills-into-reductions; a GPU grid's row
  /// reductions then start from the fill's value).
  bool fillsIntoReductions = false;
  /// Group the dispatches over the same rows, at least this many (0:
  /// none), into one (anvil-row-groups; a GPU grid runs it as one kernel
  /// of a warp per row).
  int64_t rowGroups = 0;
  /// After fusion, split long sums into few outputs into two stages
  /// (anvil-split-reductions min-length; 0: off, the CPU's default: its
  /// threads split a dispatch's outer loop instead).
  int64_t splitReductions = 0;
  /// Allocate the buffers GEMMs touch with rows padded to aligned strides
  /// (anvil-cpu-pad-gemm-rows; the CUDA backend's and its emulation: cuBLAS
  /// wants aligned leading dimensions, OpenBLAS does not care).
  bool padGemmRows = false;
  /// The runtime function f32 GEMMs call (anvil-cpu-gemm-to-blas callee).
  std::string sgemm = "anvil_rt_sgemm";
  /// The runtime function FP8 GEMMs (anvil.matmul_f8) call
  /// (anvil-bufferize gemm-f8).
  std::string gemmF8 = "anvil_rt_gemm_f8";
  /// The runtime function FP8 GEMMs with the GELU's epilogue
  /// (anvil.linear_gelu_f8) call (anvil-bufferize gemm-f8-gelu).
  std::string gemmF8Gelu = "anvil_rt_gemm_f8_gelu";
  /// The runtime function bf16 GEMMs call (callee-bf16).
  std::string gemmBF16 = "anvil_rt_gemm_bf16";
  /// The runtime function a bf16 GEMM whose readers only round its result
  /// calls, writing it rounded in bf16 (callee-bf16-rounded).
  std::string gemmBF16Rounded = "anvil_rt_gemm_bf16_rounded";
  /// The runtime functions fused attention and its gradient call
  /// (anvil-bufferize attention, attention-grad).
  std::string attention = "anvil_rt_attention_f32";
  std::string attentionGrad = "anvil_rt_attention_grad_f32";
  /// The same on bf16 tensors (attention-bf16, attention-grad-bf16).
  std::string attentionBf16 = "anvil_rt_attention_bf16";
  std::string attentionGradBf16 = "anvil_rt_attention_grad_bf16";
  /// The runtime functions the GEMMs with epilogues call
  /// (anvil-bufferize gemm-bias, gemm-bias-gelu, gemm-dgelu-bgrad,
  /// gemm-weight-bias-grad).
  std::string gemmBias = "anvil_rt_gemm_bias";
  std::string gemmBiasGelu = "anvil_rt_gemm_bias_gelu";
  std::string gemmDgeluBgrad = "anvil_rt_gemm_dgelu_bgrad";
  std::string gemmWeightBiasGrad = "anvil_rt_gemm_weight_bias_grad";
  /// A row's log-sum-exp in one pass over the row (anvil-convert-to-linalg
  /// online-logsumexp; off on the CPU, whose caches hold a row for the two).
  bool onlineLogSumExp = false;
  /// Each embedding gradient of f32 with i32 ids as one call of
  /// `embeddingGrad` (anvil-convert-to-linalg library-embedding-grads; off,
  /// the CPU's default: the loop, the same bits).
  bool libraryEmbeddingGrads = false;
  /// Copy library calls' operands that are globals into planned buffers
  /// first (anvil-bufferize copy-globals; the CUDA backend's and its
  /// emulation's: their calls run on the device).
  bool copyGlobals = false;
  /// The runtime function such an embedding gradient calls (anvil-bufferize
  /// embedding-grad).
  std::string embeddingGrad = "anvil_rt_embedding_grad_f32";
  /// Run anvil-library-convs: the convolutions a library takes become one
  /// call each of `conv` (off, the CPU's default: every convolution is a
  /// linalg one).
  bool libraryConvs = false;
  /// The runtime function a convolution marked anvil.library_call calls
  /// (anvil-bufferize conv; also for one marked in the input).
  std::string conv = "anvil_rt_conv";
  /// GEMMs of two tensorwise FP8 quantizations (anvil-decompose
  /// fp8-gemms): f8, f8-k-inner or dequantized.
  std::string fp8Gemms = "f8";
  /// Their result type (anvil-decompose fp8-gemm-result): f32, or bf16
  /// (with bf16 mixed precision's other GEMMs: --precision=fp8).
  std::string fp8GemmResult = "f32";
  /// With bf16 results, an FP8 MLP's first GEMM, bias and GELU as
  /// anvil.linear_gelu_f8 when the GELU's quantization has a given scale
  /// (anvil-decompose fp8-gelu-epilogue; with --gemm-epilogues=on).
  bool fp8GeluEpilogue = false;
};

/// Adds the passes of the stages after `after` (from the start when not
/// given) up to `last`, inclusive.
void buildCPUPipeline(OpPassManager &pm, Stage last = Stage::LLVM,
                      std::optional<Stage> after = std::nullopt,
                      const CPUPipelineOptions &options = {});

/// Adds the `llvm` stage's passes: host code (memrefs, loops, math, calls)
/// to the LLVM dialect, bare pointers at function boundaries. With
/// `finish` false the unrealized casts are left for a target's own
/// conversions (the CUDA backend's launches) to meet.
void buildHostToLLVMPipeline(OpPassManager &pm, bool finish = true);

/// Registers the dialects and interfaces the pipeline needs (bufferization
/// models, LLVM translations) in `registry`.
void registerCPUBackendDialects(DialectRegistry &registry);

/// Translates `module` (LLVM dialect) for the host CPU, adds the entry
/// points of `abi`, optimizes it with LLVM's -O`optLevel` pipeline (0-3)
/// and writes an object file to `path`. Errors go to the diagnostic
/// handler of `module`'s context.
LogicalResult emitObjectFile(ModuleOp module, const ModuleABI &abi,
                             StringRef path, unsigned optLevel = 3);

/// Links `object` with the runtime's libraries in `runtimeDir`
/// (libanvil_trainer.a, the transport, libanvil_cpu.a, libanvil_runtime.a)
/// and OpenBLAS into the executable `output` with the C++ compiler driver
/// `cxx`. The transport is libanvil_mpi.a and MPI when `distributed` (a
/// program compiled with a mesh), else libanvil_single.a. On failure `log`
/// holds the driver's output.
/// A device's runtime library and what linking it needs (none: the CPU).
struct DeviceLibraries {
  std::string library; ///< In runtimeDir, linked before libanvil_cpu.a.
  std::vector<std::string> linkArguments; ///< -L, -l, -Wl,-rpath, ...
};
LogicalResult linkExecutable(StringRef object, StringRef output,
                             StringRef runtimeDir, StringRef cxx,
                             bool distributed, std::string &log,
                             const DeviceLibraries &device = {});

} // namespace mlir::anvil::cpu

#endif // ANVIL_TARGET_CPU_CPUBACKEND_H
