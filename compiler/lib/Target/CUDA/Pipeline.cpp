//===- Pipeline.cpp - the CUDA backend's pass pipeline --------------------===//
//
// anvil IR -> gpu kernels:
//
// 1-3. linalg, fused, bufferized: as on the CPU (Target/CPU/Pipeline.cpp),
//      without the CPU's chunking of dispatches over threads; f32 GEMMs
//      call the CUDA runtime's anvil_rt_cuda_sgemm (cuBLAS), bf16 GEMMs
//      anvil_rt_cuda_gemm_bf16 (cuBLAS, tensor cores), FP8 GEMMs (their
//      operands laid out with K innermost) anvil_rt_cuda_gemm_f8
//      (cuBLASLt, the scales its scale pointers; with the bias and GELU
//      writing FP8 codes and their amax, anvil_rt_cuda_gemm_f8_gelu),
//      fused attention
//      (anvil.flash_attention and its gradient) cuDNN's or Anvil's
//      flash-attention kernels (anvil_rt_cuda_attention_f32, _grad_f32; on bf16
//      tensors anvil_rt_cuda_attention_bf16, _grad_bf16), GEMMs with a bias
//      epilogue (anvil.linear), or a bias and GELU one (anvil.linear_gelu,
//      anvil.matmul_gelu_bias_grad) cuBLASLt's (anvil_rt_cuda_gemm_bias,
//      anvil_rt_cuda_gemm_bias_gelu, _dgelu_bgrad), a weight's
//      gradient with its bias's cuBLASLt's (_weight_bias_grad), the
//      convolutions cuDNN takes (anvil-library-convs) cuDNN's
//      (anvil_rt_cuda_conv).
// 4.   kernels: anvil-cuda-map-dispatches (each dispatch's loop nests onto
//      a 1-D grid; long contiguous row reductions a warp per row),
//      canonicalize, gpu-launch-sink-index-computations (the
//      constants into the launches: kernels take only their buffers),
//      gpu-kernel-outlining, anvil-cuda-step-graph (which exported
//      functions a CUDA graph can replay).
//
// buildKernelToNVVMPipeline then lowers the kernels (those of small grids
// first asking ptxas for one block an SM: anvil-cuda-small-grid-occupancy):
// affine and scf to cf,
// strided memrefs expanded, gpu/math/memref/arith to NVVM and LLVM (math
// through libdevice), with the target attached for serialization.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/CUDABackend.h"

#include "anvil/Conversion/Passes.h"
#include "anvil/Target/CPU/CPUBackend.h"
#include "anvil/Target/CUDA/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

#ifndef ANVIL_CUDA_TOOLKIT
#define ANVIL_CUDA_TOOLKIT ""
#endif

std::string mlir::anvil::cuda::defaultCUDAToolkit() {
  return ANVIL_CUDA_TOOLKIT;
}

/// The number of `chip` (sm_NN), 0 when it is not of that form.
static unsigned smOf(StringRef chip) {
  unsigned sm = 0;
  if (chip.consume_front("sm_"))
    chip.take_while([](char c) { return std::isdigit(c); })
        .getAsInteger(10, sm);
  return sm;
}

std::string mlir::anvil::cuda::defaultPTXFeatures(StringRef chip) {
  return smOf(chip) >= 100 ? "+ptx86" : "+ptx80";
}

bool mlir::anvil::cuda::hasFP8GEMMs(StringRef chip) { return smOf(chip) >= 89; }

std::string mlir::anvil::cuda::fp8GemmsForm(StringRef chip) {
  return hasFP8GEMMs(chip) ? "f8-k-inner" : "dequantized";
}

bool mlir::anvil::cuda::hasFusedAttention(StringRef chip) {
  return smOf(chip) >= 80;
}

std::string mlir::anvil::cuda::runtimeKernelChip(StringRef chip) {
  unsigned sm = smOf(chip);
  return sm >= 80 && sm < 90 ? "sm_80" : sm >= 90 && sm < 100 ? "sm_90" : "";
}

mlir::anvil::cpu::CPUPipelineOptions
mlir::anvil::cuda::kernelShapeOptions(const CUDAPipelineOptions &options) {
  cpu::CPUPipelineOptions cpuOptions;
  cpuOptions.fuse = options.fuse;
  cpuOptions.threadChunks = false;
  cpuOptions.splitReductions = options.splitReductions;
  cpuOptions.libraryConvs = options.libraryConvs;
  cpuOptions.horizontalFuse = options.horizontalFuse;
  cpuOptions.onlineLogSumExp = options.onlineLogSumExp;
  cpuOptions.libraryEmbeddingGrads = options.libraryEmbeddingGrads;
  cpuOptions.padGemmRows = options.padGemmRows;
  cpuOptions.copyGlobals = true;
  // A fill and the row reduction it starts: one launch.
  cpuOptions.fillsIntoReductions = true;
  cpuOptions.rowGroups = options.rowGroups;
  cpuOptions.mergeAmax = true;
  cpuOptions.recomputeCheap = true;
  cpuOptions.mergeCheapReaders = true;
  // cuBLASLt's FP8 GEMM (sm_89 and newer) takes both operands with K
  // innermost, and the scales as its scale pointers; older chips multiply
  // the dequantized values.
  cpuOptions.fp8Gemms = fp8GemmsForm(options.target.chip);
  cpuOptions.fp8GemmResult = options.fp8GemmResult;
  cpuOptions.fp8GeluEpilogue = options.fp8GeluEpilogue;
  return cpuOptions;
}

void mlir::anvil::cuda::buildCUDAPipeline(OpPassManager &pm, Stage last,
                                          std::optional<Stage> after,
                                          const CUDAPipelineOptions &options) {
  // The target-independent stages are the CPU backend's first three.
  auto shared = [](Stage s) { return static_cast<cpu::Stage>(s); };
  if (last >= Stage::Linalg && (!after || *after < Stage::Bufferized)) {
    cpu::CPUPipelineOptions cpuOptions = kernelShapeOptions(options);
    cpuOptions.sgemm = "anvil_rt_cuda_sgemm";
    cpuOptions.gemmF8 = "anvil_rt_cuda_gemm_f8";
    cpuOptions.gemmF8Gelu = "anvil_rt_cuda_gemm_f8_gelu";
    cpuOptions.gemmBF16 = "anvil_rt_cuda_gemm_bf16";
    cpuOptions.gemmBF16Rounded = "anvil_rt_cuda_gemm_bf16_rounded";
    cpuOptions.attention = "anvil_rt_cuda_attention_f32";
    cpuOptions.attentionGrad = "anvil_rt_cuda_attention_grad_f32";
    cpuOptions.attentionBf16 = "anvil_rt_cuda_attention_bf16";
    cpuOptions.attentionGradBf16 = "anvil_rt_cuda_attention_grad_bf16";
    cpuOptions.gemmBias = "anvil_rt_cuda_gemm_bias";
    cpuOptions.gemmBiasGelu = "anvil_rt_cuda_gemm_bias_gelu";
    cpuOptions.gemmDgeluBgrad = "anvil_rt_cuda_gemm_dgelu_bgrad";
    cpuOptions.gemmWeightBiasGrad = "anvil_rt_cuda_gemm_weight_bias_grad";
    cpuOptions.conv = "anvil_rt_cuda_conv";
    cpuOptions.embeddingGrad = "anvil_rt_cuda_embedding_grad_f32";
    Stage upTo = std::min(last, Stage::Bufferized);
    cpu::buildCPUPipeline(pm, shared(upTo),
                          after ? std::optional(shared(*after)) : std::nullopt,
                          cpuOptions);
  }
  if (last >= Stage::Kernels && (!after || *after < Stage::Kernels)) {
    AnvilCUDAMapDispatchesPassOptions map;
    map.blockSize = options.blockSize;
    map.warpReductions = options.warpReductions;
    pm.addPass(createAnvilCUDAMapDispatchesPass(map));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createGpuLaunchSinkIndexComputationsPass());
    pm.addPass(createGpuKernelOutliningPass());
    pm.addPass(createAnvilCUDAStepGraphPass());
  }
  if (last < Stage::LLVM)
    return;
  // 5. llvm: the kernels into a cubin in the module, the host to LLVM with
  // the launches as calls of MLIR's launch ABI.
  buildKernelToNVVMPipeline(pm, options.target);
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.target.toolkit.empty() ? defaultCUDAToolkit()
                                                      : options.target.toolkit;
  binary.compilationTarget = "bin";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  cpu::buildHostToLLVMPipeline(pm, /*finish=*/false);
  GpuToLLVMConversionPassOptions launches;
  launches.hostBarePtrCallConv = true;
  launches.kernelBarePtrCallConv = true;
  pm.addPass(createGpuToLLVMConversionPass(launches));
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::anvil::cuda::buildGridEmulationPipeline(OpPassManager &pm,
                                                   int64_t blockSize,
                                                   int64_t warpReductions,
                                                   bool reverseOrder) {
  AnvilCUDAMapDispatchesPassOptions map;
  map.blockSize = blockSize;
  map.warpReductions = warpReductions;
  pm.addPass(createAnvilCUDAMapDispatchesPass(map));
  AnvilCUDAEmulateLaunchesPassOptions emulate;
  emulate.reverseOrder = reverseOrder;
  pm.addPass(createAnvilCUDAEmulateLaunchesPass(emulate));
  pm.addPass(createCanonicalizerPass());
}

void mlir::anvil::cuda::buildKernelToNVVMPipeline(OpPassManager &pm,
                                                  const CUDATarget &target) {
  GpuNVVMAttachTargetOptions attach;
  attach.chip = target.chip;
  attach.features = target.features.empty() ? defaultPTXFeatures(target.chip)
                                            : target.features;

  attach.optLevel = target.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createAnvilCUDASmallGridOccupancyPass());
  kernels.addPass(createAnvilExpandF8CastsPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createReconcileUnrealizedCastsPass());
}

mlir::anvil::cpu::DeviceLibraries
mlir::anvil::cuda::deviceLibraries(StringRef toolkit) {
  std::string root = toolkit.empty() ? defaultCUDAToolkit() : toolkit.str();
  std::string lib = root + "/lib64";
  return {"libanvil_cuda.a",
          {"-L" + lib, "-Wl,-rpath," + lib, "-lcublasLt", "-lcublas",
           "-lcudart", "-ldl"}};
}

void mlir::anvil::cuda::registerCUDABackendDialects(DialectRegistry &registry) {
  cpu::registerCPUBackendDialects(registry);
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  // convert-gpu-to-nvvm lowers the other dialects of a kernel through their
  // ConvertToLLVMPatternInterface.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  // gpu-module-to-binary: the NVVM target, and the translations of the
  // kernels to LLVM IR.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  // The host module's gpu.binary and launches, translated to LLVM IR
  // (#gpu.select_object: the one cubin, loaded at start-up).
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}
