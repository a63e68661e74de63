//===- KernelReport.cpp - anvil-compile's --kernel-report -----------------===//
//
// See KernelReport.h.
//
//===----------------------------------------------------------------------===//

#include "KernelReport.h"

#include "anvil/Target/CUDA/CUDABackend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <functional>
#include <set>
#include <string>

using namespace llvm;
using mlir::LogicalResult;

namespace anvil::compile {

namespace {

int error(const Twine &message) {
  WithColor::error(errs(), "anvil-compile") << message << "\n";
  return 1;
}

/// The CUDA runtime's own kernels that `module`'s library calls launch, as
/// named in their ptxas report: the embedding gradient's three, the
/// flash-attention kernels of the head widths (padded to 16, 32, 64 or
/// 128) and precisions its calls pass, and the copies around them: for f32
/// tensors with bf16 products (which cuDNN may run) to and from bf16, for
/// bf16 tensors (which Anvil's kernels may run) to and from f32.
std::set<std::string> libraryKernelsCalled(mlir::ModuleOp module) {
  std::set<std::string> names;
  module.walk([&](mlir::func::CallOp call) {
    StringRef callee = call.getCallee();
    if (callee == "anvil_rt_cuda_embedding_grad_f32") {
      for (const char *kernel :
           {"embeddingRanks(", "embeddingOrder(", "embeddingSums("})
        names.insert(kernel);
      return;
    }
    bool bf16Tensors = callee == "anvil_rt_cuda_attention_bf16" ||
                       callee == "anvil_rt_cuda_attention_grad_bf16";
    bool forward = callee == "anvil_rt_cuda_attention_f32" ||
                   callee == "anvil_rt_cuda_attention_bf16";
    if (!forward && !bf16Tensors &&
        callee != "anvil_rt_cuda_attention_grad_f32")
      return;
    // The buffers (the key bias among them), then batch, heads, kvHeads,
    // queries, keys, dim, valueDim, scale, causal, bf16 (RuntimeABI.h).
    unsigned dims = forward ? 11 : 15;
    auto constant = [&](unsigned i) -> int64_t {
      mlir::IntegerAttr value;
      if (i < call.getNumOperands() &&
          mlir::matchPattern(call.getOperand(i), mlir::m_Constant(&value)))
        return value.getInt();
      return -1;
    };
    int64_t width = std::max(constant(dims), constant(dims + 1));
    // (The bf16 tensors' functions have no bf16 flag: their products are.)
    int64_t bf16 = bf16Tensors ? 1 : constant(dims + 4);
    if (width < 1 || bf16 < 0)
      return;
    std::string tile = std::to_string(width <= 16   ? 16
                                      : width <= 32 ? 32
                                      : width <= 64 ? 64
                                                    : 128) +
                       (bf16 ? ", true>(" : ", false>(");
    if (bf16Tensors) { // Anvil's kernels run on f32 copies
      names.insert("attentionWidenBf16(");
      names.insert("attentionNarrowToBf16(");
    } else if (bf16) { // cuDNN runs on bf16 copies
      names.insert("attentionToBf16(");
      names.insert("attentionFromBf16(");
    }
    if (forward) {
      names.insert("attentionForward<" + tile);
    } else {
      names.insert("attentionDelta(");
      names.insert("attentionKeyGrad<" + tile);
      names.insert("attentionQueryGrad<" + tile);
    }
  });
  return names;
}

} // namespace

StepLaunches countStepLaunches(mlir::func::FuncOp step) {
  mlir::SymbolTableCollection symbols;
  // Per function, once: a function that calls itself (directly or not)
  // counts its own launches once.
  DenseMap<mlir::Operation *, StepLaunches> counted;
  std::function<StepLaunches(mlir::func::FuncOp)> count =
      [&](mlir::func::FuncOp fn) {
        if (auto it = counted.find(fn); it != counted.end())
          return it->second;
        counted[fn] = {};
        StepLaunches n;
        fn.walk([&](mlir::Operation *op) {
          if (isa<mlir::gpu::LaunchFuncOp>(op)) {
            ++n.kernels;
            return;
          }
          auto call = dyn_cast<mlir::func::CallOp>(op);
          if (!call)
            return;
          auto callee = symbols.lookupNearestSymbolFrom<mlir::func::FuncOp>(
              call, call.getCalleeAttr());
          if (!callee)
            return;
          if (callee.isDeclaration()) {
            n.runtimeCalls += callee.getSymName().starts_with("anvil_rt_");
            return;
          }
          StepLaunches inner = count(callee);
          n.kernels += inner.kernels;
          n.runtimeCalls += inner.runtimeCalls;
        });
        return counted[fn] = n;
      };
  return count(step);
}

LogicalResult writeKernelReport(mlir::ModuleOp module, StringRef cudaArch,
                                StringRef cudaToolkit, StringRef kernelReport,
                                StringRef runtimeLibDir) {
  mlir::anvil::cuda::CUDATarget cudaTarget;
  cudaTarget.chip = cudaArch.str();
  cudaTarget.features = mlir::anvil::cuda::defaultPTXFeatures(cudaArch);
  cudaTarget.toolkit = cudaToolkit.str();
  auto kernels = mlir::anvil::cuda::assembleKernels(module, cudaTarget);
  if (failed(kernels))
    return error("--kernel-report: the kernels do not assemble for " +
                 cudaArch + " (see above)"),
           mlir::failure();
  json::Array rows;
  int64_t maxRegisters = 0, spilling = 0, oneThread = 0, vectorized = 0;
  for (const mlir::anvil::cuda::KernelResources &k : *kernels) {
    rows.push_back(json::Object{{"module", k.module},
                                {"kernel", k.kernel},
                                {"registers", k.registers},
                                {"stack_frame_bytes", k.stackFrameBytes},
                                {"spill_store_bytes", k.spillStoreBytes},
                                {"spill_load_bytes", k.spillLoadBytes},
                                {"shared_bytes", k.sharedBytes},
                                {"vector_loads", k.vectorLoads},
                                {"vector_stores", k.vectorStores},
                                {"blocks", k.blocks},
                                {"threads_per_block", k.threadsPerBlock}});
    maxRegisters = std::max(maxRegisters, k.registers);
    spilling += k.spillStoreBytes + k.spillLoadBytes > 0;
    oneThread += k.blocks == 1 && k.threadsPerBlock == 1;
    vectorized += k.vectorLoads + k.vectorStores > 0;
  }
  json::Object report{{"chip", cudaArch.str()},
                      {"kernels", static_cast<int64_t>(kernels->size())},
                      {"max_registers", maxRegisters},
                      {"kernels_with_spills", spilling},
                      {"single_thread_kernels", oneThread},
                      {"vectorized_kernels", vectorized},
                      {"per_kernel", std::move(rows)}};
  std::set<std::string> called = libraryKernelsCalled(module);
  if (!called.empty()) {
    // The report of the machine code this chip runs (sm_80's on sm_86 and
    // sm_89, sm_90's on sm_90a).
    std::string machine = mlir::anvil::cuda::runtimeKernelChip(cudaArch);
    SmallString<256> path(runtimeLibDir);
    llvm::sys::path::append(path, "anvil_cuda_kernels." + machine + ".txt");
    auto log = machine.empty()
                   ? llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>>(
                         std::make_error_code(std::errc::invalid_argument))
                   : llvm::MemoryBuffer::getFile(path);
    json::Array library;
    int64_t librarySpilling = 0;
    std::set<std::string> found;
    if (log) {
      std::vector<mlir::anvil::cuda::KernelResources> all;
      mlir::anvil::cuda::parsePtxasLog((*log)->getBuffer(), "runtime", all);
      for (const mlir::anvil::cuda::KernelResources &k : all) {
        std::string name = llvm::demangle(k.kernel);
        auto match = llvm::find_if(called, [&](const std::string &prefix) {
          return StringRef(name).contains("::" + prefix);
        });
        if (match == called.end())
          continue;
        found.insert(*match);
        library.push_back(json::Object{{"kernel", name},
                                       {"registers", k.registers},
                                       {"stack_frame_bytes", k.stackFrameBytes},
                                       {"spill_store_bytes", k.spillStoreBytes},
                                       {"spill_load_bytes", k.spillLoadBytes}});
        librarySpilling += k.spillStoreBytes + k.spillLoadBytes > 0;
      }
      // Called but not reported: a runtime built from other sources.
      json::Array absent;
      for (const std::string &kernel : called)
        if (!found.count(kernel))
          absent.push_back(kernel.substr(0, kernel.size() - 1));
      if (!absent.empty())
        report["library_kernels_not_in_report"] = std::move(absent);
    } else {
      report["library_report_missing"] =
          machine.empty()
              ? "the runtime's kernels have no machine code for " +
                    cudaArch.str() +
                    " (built for sm_80 and sm_90; newer GPUs compile their "
                    "compute_90 PTX when the library loads): no ptxas report"
              : "no " + std::string(path) +
                    ": the runtime was built without CUDA, or installed "
                    "without its kernels' report";
    }
    report["library_kernels"] = static_cast<int64_t>(library.size());
    report["library_kernels_with_spills"] = librarySpilling;
    report["per_library_kernel"] = std::move(library);
  }
  std::string message;
  auto file = mlir::openOutputFile(kernelReport, &message);
  if (!file)
    return error("--kernel-report: " + message), mlir::failure();
  file->os() << formatv("{0:2}", json::Value(std::move(report))) << "\n";
  file->keep();
  return mlir::success();
}

} // namespace anvil::compile
