//===- Linker.cpp - link a module object with the runtime -----------------===//
//
// Runs the system C++ compiler driver (the one the runtime was built with
// is the safest choice; `c++` by default) on the module's object and the
// runtime's static libraries. The driver brings the C++ standard library
// and the platform's start files; Anvil adds OpenBLAS (the GEMMs), so a
// training executable depends only on libc, libm, libstdc++, pthreads and
// libopenblas.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CPU/CPUBackend.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;

LogicalResult mlir::anvil::cpu::linkExecutable(
    StringRef object, StringRef output, StringRef runtimeDir, StringRef cxx,
    bool distributed, std::string &log, const DeviceLibraries &device) {
  llvm::ErrorOr<std::string> driver = llvm::sys::findProgramByName(cxx);
  if (!driver) {
    log = "cannot find the C++ compiler driver '" + cxx.str() +
          "' on PATH (it links the executable; set --cxx)";
    return failure();
  }
  SmallString<256> trainer(runtimeDir), cpu(runtimeDir), runtime(runtimeDir),
      transport(runtimeDir);
  llvm::sys::path::append(trainer, "libanvil_trainer.a");
  llvm::sys::path::append(cpu, "libanvil_cpu.a");
  llvm::sys::path::append(runtime, "libanvil_runtime.a");
  // The collectives' transport: MPI for programs compiled with a mesh,
  // none (a world of one) otherwise, so those need no MPI.
  llvm::sys::path::append(transport,
                          distributed ? "libanvil_mpi.a" : "libanvil_single.a");
  SmallString<256> deviceLib(runtimeDir);
  if (!device.library.empty())
    llvm::sys::path::append(deviceLib, device.library);
  SmallVector<StringRef> libs = {trainer, transport, cpu, runtime};
  if (!device.library.empty())
    libs.insert(libs.begin() + 2, deviceLib);
  for (StringRef lib : libs)
    if (!llvm::sys::fs::exists(lib)) {
      log = "the runtime library '" + lib.str() + "' does not exist (" +
            (lib == transport && distributed
                 ? "this Anvil was built without MPI, which --mesh "
                   "executables need: install Open MPI (scripts/setup.sh) "
                   "and rebuild"
                 : "build Anvil's runtime, or set --runtime-dir") +
            ")";
      return failure();
    }
  SmallString<128> logFile;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("anvil-link", "log", logFile)) {
    log = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  // The device library first: its definitions of the weak buffer hooks
  // (RuntimeABI.h) must win over the CPU device's.
  SmallVector<StringRef> args = {*driver, object, "-o", output};
  args.append(libs.begin(), libs.end());
  SmallVector<StringRef> mpiLibs;
  if (distributed)
    StringRef(ANVIL_MPI_LIBRARIES).split(mpiLibs, ',', -1, false);
  args.append(mpiLibs.begin(), mpiLibs.end());
  for (const std::string &arg : device.linkArguments)
    args.push_back(arg);
  args.append({"-lopenblas", "-lm", "-pthread"});
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logFile),
                                          StringRef(logFile)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, redirects, 0,
                                     0, &execError);
  if (auto text = llvm::MemoryBuffer::getFile(logFile))
    log = (*text)->getBuffer().str();
  llvm::sys::fs::remove(logFile);
  if (rc != 0) {
    if (!execError.empty())
      log += execError;
    std::string command;
    for (StringRef a : args)
      command += (command.empty() ? "" : " ") + a.str();
    log = "link failed (" + command + "):\n" + log;
    return failure();
  }
  return success();
}
