//===- CUDABackend.h - anvil graphs to CUDA kernels ---------------*- C++
//-*-===//
//
// The CUDA backend so far: the compiler half of the kernels.
//
// 1. `buildCUDAPipeline`: the target-independent stages (linalg, fused,
//    bufferized: those of the CPU backend, without its thread chunks), then
//    `kernels`: each dispatch region mapped onto a grid
//    (anvil-cuda-map-dispatches) and outlined into a gpu.module kernel
//    launched by gpu.launch_func. f32 GEMMs are calls of the CUDA
//    runtime's anvil_rt_cuda_sgemm (cuBLAS).
// 2. `buildKernelToNVVMPipeline`: the kernels to the NVVM dialect, with a
//    target (chip, PTX features) attached.
// 3. `assembleKernels`: every kernel to PTX and through the toolkit's
//    `ptxas -v`, which reports its registers, stack and spills.
// 4. The `llvm` stage: the kernels to NVVM and a cubin embedded in the
//    module (gpu-module-to-binary), the host code to the LLVM dialect with
//    the launches as calls of MLIR's launch ABI (gpu-to-llvm), which the
//    runtime's CUDA device implements (runtime/include/anvil/runtime/Cuda.h).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TARGET_CUDA_CUDABACKEND_H
#define ANVIL_TARGET_CUDA_CUDABACKEND_H

#include "anvil/Target/CPU/CPUBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::anvil::cuda {

/// The stages of the CUDA pipeline, in order.
enum class Stage { Linalg, Fused, Bufferized, Kernels, LLVM };

/// The GPU architecture the kernels are built for.
struct CUDATarget {
  std::string chip = "sm_90"; ///< sm_80, sm_90, sm_100, ...
  std::string features;       ///< PTX ISA (default: defaultPTXFeatures).
  unsigned optLevel = 3;
  std::string toolkit; ///< CUDA toolkit root (default: defaultCUDAToolkit).
};

/// Whether `chip` (sm_NN) has FP8 tensor cores, which cuBLASLt's FP8 GEMM
/// needs: sm_89 and newer.
bool hasFP8GEMMs(StringRef chip);

/// The form of FP8 GEMMs for `chip` (anvil-decompose's fp8-gemms):
/// f8-k-inner (cuBLASLt's TN FP8 GEMM) where it has FP8 tensor cores,
/// dequantized elsewhere.
std::string fp8GemmsForm(StringRef chip);

/// Whether `chip` (sm_NN) runs the CUDA runtime's flash-attention kernels
/// (bf16 mma.sync; built for sm_80 and sm_90, PTX for newer): sm_80 and
/// newer.
bool hasFusedAttention(StringRef chip);

/// The machine code of the CUDA runtime's own kernels that `chip` runs:
/// "sm_80" for sm_80 to sm_89 (binary compatible within a major version),
/// "sm_90" for sm_90 and sm_90a, "" for newer chips (which compile the
/// compute_90 PTX when the library loads) and older ones (none).
std::string runtimeKernelChip(StringRef chip);

/// Choices of the pipeline.
struct CUDAPipelineOptions {
  bool fuse = true;        ///< Run anvil-fuse.
  int64_t blockSize = 256; ///< Threads per block of a mapped dispatch.
  /// anvil-split-reductions' min-length: sums of at least this many terms
  /// into few outputs run in two stages (0: never).
  int64_t splitReductions = 4096;
  /// anvil-cuda-map-dispatches' warp-reductions: reductions of contiguous
  /// rows of at least this many terms run a warp per row (0: never).
  int64_t warpReductions = 256;
  /// anvil-row-groups' min-rows: the dispatches over the same rows, at
  /// least this many, run as one kernel of a warp per row (0: never).
  int64_t rowGroups = 128;
  /// Independent dispatches over one domain run as one kernel
  /// (anvil-horizontal-fuse).
  bool horizontalFuse = true;
  /// A row's log-sum-exp in one pass over the row (anvil-convert-to-linalg
  /// online-logsumexp): the cross-entropy's logits read once.
  bool onlineLogSumExp = true;
  /// Each embedding gradient of f32 with i32 ids as one runtime call
  /// (anvil-convert-to-linalg library-embedding-grads;
  /// anvil_rt_cuda_embedding_grad_f32, which sums each row in parallel);
  /// off: the loop, a kernel of a thread per column over every position.
  bool libraryEmbeddingGrads = true;
  /// The buffers GEMMs read or write whose rows are not 16-byte aligned
  /// (GPT-2's logits, 50257 columns) are allocated with padded rows
  /// (anvil-cpu-pad-gemm-rows): cuBLAS's aligned kernels.
  bool padGemmRows = true;
  /// Convolutions that cuDNN takes run as one call each
  /// (anvil-library-convs; anvil_rt_cuda_conv); off: as kernels.
  bool libraryConvs = true;
  /// The FP8 GEMMs' result type (anvil-decompose fp8-gemm-result): f32, or
  /// bf16 (with bf16 mixed precision's other GEMMs: --precision=fp8).
  std::string fp8GemmResult = "f32";
  /// anvil-decompose's fp8-gelu-epilogue: the delayed recipe's FP8 MLP
  /// writes the GELU's codes from its first GEMM (anvil_rt_cuda_gemm_f8_gelu).
  bool fp8GeluEpilogue = false;
  CUDATarget target; ///< The llvm stage's cubin.
};

/// The CPU backend's options for its first three stages that shape the
/// CUDA kernels from `options`: fusion, split sums, horizontal merges, row
/// groups, fills in their reductions, merged amaxes, recomputed and merged
/// cheap readers, the one-pass log-sum-exp, library convolutions, padded
/// GEMM rows and the FP8 GEMMs' form for `options.target.chip`; no thread
/// chunks. The CUDA pipeline starts from them (and names its runtime
/// functions), and so does the emulated grid (anvil-compile
/// --emulate-cuda-grid, with the CPU's reference functions), which must run
/// what CUDA runs.
cpu::CPUPipelineOptions kernelShapeOptions(const CUDAPipelineOptions &options);

/// Adds the passes of the stages after `after` (from the start when not
/// given) up to `last`, inclusive.
void buildCUDAPipeline(OpPassManager &pm, Stage last = Stage::Kernels,
                       std::optional<Stage> after = std::nullopt,
                       const CUDAPipelineOptions &options = {});

/// Adds the passes that make a bufferized module's dispatches run through
/// the grid mapping of the `kernels` stage, emulated on the host
/// (anvil-cuda-map-dispatches, anvil-cuda-emulate-launches): for testing
/// the kernels' logic with the CPU backend, where there is no GPU; with
/// `reverseOrder`, the blocks and threads run last first (what a kernel
/// computes must not depend on their order).
void buildGridEmulationPipeline(OpPassManager &pm, int64_t blockSize = 256,
                                int64_t warpReductions = 256,
                                bool reverseOrder = false);

/// The toolkit Anvil was configured with (ANVIL_CUDA_TOOLKIT), or "".
std::string defaultCUDAToolkit();

/// PTX ISA features that suit `chip`: +ptx78 for sm_80/sm_90, +ptx86 for
/// sm_100 and later.
std::string defaultPTXFeatures(StringRef chip);

/// Adds the passes that lower the gpu.module kernels of the `kernels` stage
/// to the NVVM dialect with `target` attached (the host functions are left
/// alone).
void buildKernelToNVVMPipeline(OpPassManager &pm, const CUDATarget &target);

/// Registers the dialects, interfaces and translations the pipeline and
/// the kernels' serialization need.
void registerCUDABackendDialects(DialectRegistry &registry);

/// The CUDA runtime library and the toolkit's libraries (cuBLAS, the CUDA
/// runtime) an executable links, with an rpath to `toolkit`'s libraries.
cpu::DeviceLibraries deviceLibraries(StringRef toolkit);

/// What ptxas reports for one kernel.
struct KernelResources {
  std::string module; ///< The gpu.module (the dispatch it came from).
  std::string kernel; ///< The entry function.
  int64_t registers = 0;
  int64_t stackFrameBytes = 0;
  int64_t spillStoreBytes = 0;
  int64_t spillLoadBytes = 0;
  int64_t sharedBytes = 0;
  /// Vector accesses of global memory in its PTX (`ld.global.v2/v4`,
  /// `st.global.v2/v4`, counted in the text of its module).
  int64_t vectorLoads = 0;
  int64_t vectorStores = 0;
  /// The launch shape of its gpu.launch_func (1-D), 0 when not constant.
  int64_t blocks = 0;
  int64_t threadsPerBlock = 0;
};

/// Adds the entry functions a `ptxas -v` log reports (registers, stack,
/// spills, shared memory) to `out`, each with `module`.
void parsePtxasLog(StringRef log, StringRef module,
                   std::vector<KernelResources> &out);

/// Compiles the gpu.module kernels of `module` (at the `kernels` stage; it
/// is left unchanged) to PTX for `target` and assembles each with the
/// toolkit's `ptxas -v`. Fails, with the diagnostics on `module`, when a
/// kernel does not lower or assemble.
FailureOr<std::vector<KernelResources>>
assembleKernels(ModuleOp module, const CUDATarget &target);

} // namespace mlir::anvil::cuda

#endif // ANVIL_TARGET_CUDA_CUDABACKEND_H
