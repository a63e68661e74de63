//===- AssembleKernels.cpp - every kernel through ptxas -v ---------------===//
//
// The kernels of a module at the `kernels` stage, lowered to NVVM (a copy;
// the module is left as it was), serialized to PTX by MLIR's NVVM target
// and assembled one gpu.module at a time by the toolkit's ptxas with -v,
// whose report of each entry function is parsed:
//
//   ptxas info    : Compiling entry function 'k' for 'sm_90'
//   ptxas info    : Function properties for k
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 14 registers, used 0 barriers, 480 bytes cmem[0]
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/CUDABackend.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::anvil::cuda;

void mlir::anvil::cuda::parsePtxasLog(StringRef log, StringRef module,
                                      std::vector<KernelResources> &out) {
  llvm::Regex entry("Compiling entry function '([^']+)'");
  llvm::Regex frame("([0-9]+) bytes stack frame, ([0-9]+) bytes spill "
                    "stores, ([0-9]+) bytes spill loads");
  llvm::Regex used("Used ([0-9]+) registers");
  llvm::Regex shared("([0-9]+) bytes smem");
  SmallVector<StringRef> lines, groups;
  log.split(lines, '\n');
  KernelResources *current = nullptr;
  auto number = [](StringRef s) {
    int64_t v = 0;
    s.getAsInteger(10, v);
    return v;
  };
  for (StringRef line : lines) {
    if (entry.match(line, &groups)) {
      out.push_back({module.str(), groups[1].str()});
      current = &out.back();
    } else if (current && frame.match(line, &groups)) {
      current->stackFrameBytes = number(groups[1]);
      current->spillStoreBytes = number(groups[2]);
      current->spillLoadBytes = number(groups[3]);
    } else if (current && used.match(line, &groups)) {
      current->registers = number(groups[1]);
      if (shared.match(line, &groups))
        current->sharedBytes = number(groups[1]);
    }
  }
}

namespace {

/// Writes `text` to a new temporary file with `suffix`.
FailureOr<std::string> writeTemporary(StringRef text, StringRef suffix) {
  SmallString<128> path;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("anvil-kernels", suffix, fd, path))
    return failure();
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return std::string(path);
}

} // namespace

FailureOr<std::vector<KernelResources>>
mlir::anvil::cuda::assembleKernels(ModuleOp module, const CUDATarget &target) {
  std::string toolkit =
      target.toolkit.empty() ? defaultCUDAToolkit() : target.toolkit;
  SmallString<256> ptxas(toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (toolkit.empty() || !llvm::sys::fs::can_execute(ptxas))
    return module.emitError("no CUDA toolkit with ptxas")
               << (toolkit.empty()
                       ? std::string(" (Anvil was configured without "
                                     "one; give its root)")
                       : " at '" + toolkit + "'"),
           failure();

  // Lower and serialize a copy to PTX.
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  PassManager pm(module.getContext());
  buildKernelToNVVMPipeline(pm, target);
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = toolkit;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(pm.run(*copy)))
    return failure();

  // The launch shapes, from the host's launches.
  llvm::StringMap<std::pair<int64_t, int64_t>> shapes;
  module.walk([&](gpu::LaunchFuncOp launch) {
    auto size = [](Value v) { return getConstantIntValue(v).value_or(0); };
    shapes[(launch.getKernelModuleName().getValue() +
            "::" + launch.getKernelName().getValue())
               .str()] = {
        size(launch.getGridSizeX()) * size(launch.getGridSizeY()) *
            size(launch.getGridSizeZ()),
        size(launch.getBlockSizeX()) * size(launch.getBlockSizeY()) *
            size(launch.getBlockSizeZ())};
  });

  std::vector<KernelResources> kernels;
  for (auto binaryOp : copy->getOps<gpu::BinaryOp>()) {
    for (Attribute attr : binaryOp.getObjects()) {
      StringRef ptx = cast<gpu::ObjectAttr>(attr).getObject().getValue();
      FailureOr<std::string> ptxPath = writeTemporary(ptx, "ptx");
      FailureOr<std::string> logPath = writeTemporary("", "log");
      if (failed(ptxPath) || failed(logPath))
        return module.emitError("cannot create a temporary file for ptxas"),
               failure();
      llvm::scope_exit remove([&] {
        llvm::sys::fs::remove(*ptxPath);
        llvm::sys::fs::remove(*logPath);
      });
      std::string arch = "-arch=" + target.chip;
      SmallVector<StringRef> args = {ptxas,    "-v", arch,
                                     *ptxPath, "-o", "/dev/null"};
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(*logPath),
                                              StringRef(*logPath)};
      std::string message;
      int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                         /*SecondsToWait=*/0,
                                         /*MemoryLimit=*/0, &message);
      auto log = llvm::MemoryBuffer::getFile(*logPath);
      StringRef text = log ? (*log)->getBuffer() : StringRef();
      if (rc != 0)
        return module.emitError("ptxas rejected the kernels of '")
                   << binaryOp.getName() << "' for " << target.chip << ": "
                   << (text.empty() ? StringRef(message) : text.trim()),
               failure();
      size_t first = kernels.size();
      parsePtxasLog(text, binaryOp.getName(), kernels);
      // The module's vector accesses of global memory (one kernel a module).
      auto count = [&](StringRef what) {
        int64_t n = 0;
        for (StringRef rest = ptx; !rest.empty();) {
          size_t at = rest.find(what);
          if (at == StringRef::npos)
            break;
          ++n;
          rest = rest.drop_front(at + what.size());
        }
        return n;
      };
      int64_t loads = count("ld.global.v2.") + count("ld.global.v4.") +
                      count("ld.global.nc.v2.") + count("ld.global.nc.v4.");
      int64_t stores = count("st.global.v2.") + count("st.global.v4.");
      for (size_t i = first; i < kernels.size(); ++i) {
        kernels[i].vectorLoads = loads;
        kernels[i].vectorStores = stores;
        auto it = shapes.find(kernels[i].module + "::" + kernels[i].kernel);
        if (it != shapes.end())
          std::tie(kernels[i].blocks, kernels[i].threadsPerBlock) = it->second;
      }
    }
  }
  return kernels;
}
