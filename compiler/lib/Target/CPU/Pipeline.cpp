//===- Pipeline.cpp - the CPU backend's pass pipeline ---------------------===//
//
// anvil IR -> LLVM dialect:
//
// 1. linalg:     [anvil-library-convs, with libraryConvs: the
//                convolutions a library takes stay ops, for one call each],
//                anvil-decompose, canonicalize, cse (at the graph level),
//                anvil-convert-to-linalg. No cse after the conversion: it
//                would merge the identical zero-filled inits of different
//                matmuls and reductions, and bufferization would then copy
//                them apart again.
// 2. fused:      anvil-fuse: producer generics merge into their consumers
//                where nothing is recomputed, so chains of elementwise ops,
//                broadcasts and the producers of reductions become one loop
//                nest (a dispatch region).
// 3. bufferized: anvil-bufferize (one-shot, across functions), results
//                turned into out-parameters written in place (public
//                functions too: they are the ABI), the static memory plan
//                (one workspace argument per entry point), ownership-based
//                deallocation of anything left; f32 matmuls become calls of the
//                runtime's BLAS (anvil_rt_sgemm), and each remaining dispatch
//                region is outlined into its own function.
// 4. llvm:       linalg to loops, affine and scf to cf, math to LLVM
//                intrinsics or libm, memref/arith/index/func/cf to LLVM
//                (bare pointers at function boundaries; allocations through
//                the runtime's counting allocator).
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CPU/CPUBackend.h"

#include "anvil/Conversion/Passes.h"
#include "anvil/Fusion/Passes.h"
#include "anvil/Target/CPU/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::anvil::cpu::registerCPUBackendDialects(DialectRegistry &registry) {
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void mlir::anvil::cpu::buildCPUPipeline(OpPassManager &pm, Stage last,
                                        std::optional<Stage> after,
                                        const CPUPipelineOptions &options) {
  auto wants = [&](Stage s) { return (!after || s > *after) && s <= last; };
  // 1. linalg
  if (wants(Stage::Linalg)) {
    if (options.libraryConvs)
      pm.addPass(createAnvilLibraryConvsPass());
    AnvilDecomposePassOptions decompose;
    decompose.fp8Gemms = options.fp8Gemms;
    decompose.fp8GemmResult = options.fp8GemmResult;
    decompose.fp8GeluEpilogue = options.fp8GeluEpilogue;
    pm.addPass(createAnvilDecomposePass(decompose));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    AnvilConvertToLinalgPassOptions toLinalg;
    toLinalg.onlineLogSumExp = options.onlineLogSumExp;
    toLinalg.libraryEmbeddingGrads = options.libraryEmbeddingGrads;
    pm.addPass(createAnvilConvertToLinalgPass(toLinalg));
    pm.addPass(createCanonicalizerPass());
  }

  // 2. fused
  if (wants(Stage::Fused)) {
    if (options.fuse)
      pm.addPass(createAnvilFusePass(
          AnvilFusePassOptions{options.mergeAmax, options.mergeCheapReaders,
                               options.recomputeCheap}));
    if (options.splitReductions > 0) {
      AnvilSplitReductionsPassOptions split;
      split.minLength = options.splitReductions;
      pm.addPass(createAnvilSplitReductionsPass(split));
    }
    pm.addPass(createCanonicalizerPass());
    if (options.horizontalFuse)
      pm.addPass(createAnvilHorizontalFusePass());
  }

  // 3. bufferized
  if (wants(Stage::Bufferized)) {
    AnvilBufferizePassOptions bufferize;
    bufferize.attentionCallee = options.attention;
    bufferize.attentionGradCallee = options.attentionGrad;
    bufferize.attentionBf16Callee = options.attentionBf16;
    bufferize.attentionGradBf16Callee = options.attentionGradBf16;
    bufferize.gemmBiasCallee = options.gemmBias;
    bufferize.gemmBiasGeluCallee = options.gemmBiasGelu;
    bufferize.gemmDgeluBgradCallee = options.gemmDgeluBgrad;
    bufferize.gemmWeightBiasGradCallee = options.gemmWeightBiasGrad;
    bufferize.gemmF8Callee = options.gemmF8;
    bufferize.gemmF8GeluCallee = options.gemmF8Gelu;
    bufferize.convCallee = options.conv;
    bufferize.embeddingGradCallee = options.embeddingGrad;
    bufferize.copyGlobals = options.copyGlobals;
    pm.addPass(createAnvilBufferizePass(bufferize));
    pm.addPass(createCanonicalizerPass());
    bufferization::BufferResultsToOutParamsPassOptions outParams;
    outParams.hoistStaticAllocs = true;
    outParams.modifyPublicFunctions = true;
    pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
    if (options.padGemmRows)
      pm.addPass(createAnvilCPUPadGemmRowsPass());
    AnvilCPUGemmToBlasPassOptions gemm;
    gemm.callee = options.sgemm;
    gemm.calleeBF16 = options.gemmBF16;
    gemm.calleeBF16Rounded = options.gemmBF16Rounded;
    pm.addPass(createAnvilCPUGemmToBlasPass(gemm));
    if (options.rowGroups > 0) {
      AnvilRowGroupsPassOptions rowGroups;
      rowGroups.minRows = options.rowGroups;
      pm.addPass(createAnvilRowGroupsPass(rowGroups));
    }
    pm.addPass(createAnvilPlanMemoryPass());
    bufferization::buildBufferDeallocationPipeline(pm);
    pm.addPass(createConvertBufferizationToMemRefPass());
    pm.addPass(createCanonicalizerPass());
    AnvilOutlineDispatchesPassOptions outline;
    outline.fillsIntoReductions = options.fillsIntoReductions;
    pm.addPass(createAnvilOutlineDispatchesPass(outline));
    if (options.threadChunks)
      pm.addPass(createAnvilCPUParallelDispatchesPass());
  }

  // 4. llvm
  if (!wants(Stage::LLVM))
    return;
  buildHostToLLVMPipeline(pm);
}

void mlir::anvil::cpu::buildHostToLLVMPipeline(OpPassManager &pm, bool finish) {
  pm.addPass(createConvertLinalgToLoopsPass());
  // LLVM has no 8-bit floats: their conversions become integer code (after
  // the named ops became loops: a linalg.matmul of 8-bit operands widens
  // them in a body whose form it checks); so do bf16's, so that every host
  // rounds them alike (subnormals kept, as on the GPU).
  AnvilExpandF8CastsPassOptions casts;
  casts.bf16 = true;
  pm.addPass(createAnvilExpandF8CastsPass(casts));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(math::createMathExpandOpsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // The emulated grid's kernels store aligned runs as vectors
  // (anvil-cuda-map-dispatches).
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // Any allocation the memory plan left goes through the runtime, which
  // counts it (the measured peak of a step).
  FinalizeMemRefToLLVMConversionPassOptions memref;
  memref.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memref));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions func;
  func.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(func));
  pm.addPass(createConvertControlFlowToLLVMPass());
  if (!finish)
    return;
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}
