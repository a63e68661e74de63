//===- anvil-opt.cpp - run Anvil and upstream passes on MLIR files --------===//
//
// The `mlir-opt` of Anvil: parses a file with the anvil dialect and the
// upstream dialects the compiler lowers to, runs the requested passes and
// prints the result. Every pipeline stage can be run and inspected alone.
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Fusion/Passes.h"
#include "anvil/Target/CPU/Passes.h"
#include "anvil/Target/CUDA/CUDABackend.h"
#include "anvil/Target/CUDA/Passes.h"
#include "anvil/Training/Passes.h"
#include "anvil/Transforms/Passes.h"
#include "anvil/Transforms/ShardingModels.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"

#include <optional>
#include <string>
#include <vector>

/// Checks the plugins of --load-pass-plugin and --load-dialect-plugin before
/// MlirOptMain loads them (it would go on without one it cannot load), and
/// makes a path relative to the current directory absolute (dlopen would
/// search the library path for it). Returns the arguments to use, or
/// nothing after printing the error.
static std::optional<std::vector<std::string>> checkPlugins(int argc,
                                                            char **argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    for (auto [option, entry] :
         {std::pair<llvm::StringRef, const char *>{"load-pass-plugin",
                                                   "mlirGetPassPluginInfo"},
          {"load-dialect-plugin", "mlirGetDialectPluginInfo"}}) {
      // -option=value, --option=value, or the value as the next argument.
      llvm::StringRef name(args[i]);
      if (!name.consume_front("--"))
        name.consume_front("-");
      auto [flag, value] = name.split('=');
      if (flag != option)
        continue;
      bool inlineValue = name.contains('=');
      size_t at = i;
      if (!inlineValue) {
        if (i + 1 == args.size())
          break; // cl reports the missing value.
        at = ++i;
      }
      std::string given = inlineValue ? value.str() : args[at];
      llvm::SmallString<256> path(given);
      if (llvm::sys::fs::exists(path))
        llvm::sys::fs::make_absolute(path);
      std::string message;
      auto library = llvm::sys::DynamicLibrary::getPermanentLibrary(
          path.c_str(), &message);
      if (library.isValid() && !library.getAddressOfSymbol(entry))
        message = std::string("the library has no entry point ") + entry +
                  " (is it a plugin built with anvil_add_plugin?)";
      if (!message.empty()) {
        llvm::WithColor::error(llvm::errs(), "anvil-opt")
            << "--" << option << "=" << given << ": " << message << "\n";
        return std::nullopt;
      }
      args[at] =
          inlineValue ? ("--" + option + "=" + path).str() : std::string(path);
      break;
    }
  }
  return args;
}

int main(int argc, char **argv) {
  std::optional<std::vector<std::string>> args = checkPlugins(argc, argv);
  if (!args)
    return 1;
  std::vector<char *> argvChecked;
  for (std::string &arg : *args)
    argvChecked.push_back(arg.data());
  argvChecked.push_back(nullptr);
  argc = static_cast<int>(args->size());
  argv = argvChecked.data();

  mlir::DialectRegistry registry;
  registry.insert<mlir::anvil::AnvilDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::func::FuncDialect, mlir::gpu::GPUDialect,
                  mlir::linalg::LinalgDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::mpi::MPIDialect, mlir::NVVM::NVVMDialect,
                  mlir::scf::SCFDialect, mlir::shard::ShardDialect,
                  mlir::tensor::TensorDialect, mlir::vector::VectorDialect>();

  // One-shot bufferization of the upstream ops the lowering produces.
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);
  // The anvil ops as the upstream shard dialect's propagation and
  // partitioning see them.
  mlir::anvil::registerUpstreamShardingModels(registry);
  // The CUDA backend's kernels: the NVVM lowering and serialization.
  mlir::anvil::cuda::registerCUDABackendDialects(registry);

  // Upstream generic passes (canonicalize, cse, inline, symbol-dce, ...) and
  // those of the dialects the pipeline lowers through.
  mlir::registerTransformsPasses();
  mlir::registerLinalgPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::shard::registerShardPasses();
  // The CUDA kernels' lowering (cuda::buildKernelToNVVMPipeline).
  mlir::registerGPUPasses();
  mlir::registerConvertGpuOpsToNVVMOps();
  mlir::registerLowerAffinePass();
  mlir::registerSCFToControlFlowPass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::memref::registerExpandStridedMetadataPass();
  mlir::anvil::registerAnvilConversionPasses();
  mlir::anvil::registerAnvilCPUPasses();
  mlir::anvil::registerAnvilCUDAPasses();
  mlir::anvil::registerAnvilFusionPasses();
  mlir::anvil::registerAnvilTrainingPasses();
  mlir::anvil::registerAnvilTransformsPasses();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Anvil optimizer driver: runs Anvil and MLIR passes\n",
      registry));
}
