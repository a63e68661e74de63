//===- KernelCall.h - the host side of the runtime's own kernels ----------===//
//
// What Attention.cu and EmbeddingGrad.cu share around their launches: a
// call's name and shape for its reports, the checks of the CUDA runtime's
// results (recorded in a graph capture, else fatal, naming the call, the
// kernel and the shape), the launch on the step stream, the wait and the
// profile of "sync" mode, and the dynamic shared memory declaration. With
// ANVIL_CUDA_EMULATION (runtime/test/cuda-emulation) the launches run on
// the CPU, before they return.
//
// Include it after the CUDA headers (or CudaEmulation.h).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_CUDA_KERNELCALL_H
#define ANVIL_RUNTIME_CUDA_KERNELCALL_H

#include "anvil/runtime/Cuda.h"

#include <chrono>
#include <string>

/// Declares `name` (unsigned char[] or *): the CTA's dynamic shared memory,
/// the launch's bytes, 16-byte aligned. A macro, not a function returning
/// the pointer: nvcc then addresses the tiles as it did before the hook
/// (a returned pointer changes the kernels' PTX and registers).
#ifdef ANVIL_CUDA_EMULATION
#define ANVIL_DYNAMIC_SHARED(name)                                             \
  unsigned char *name = anvil::cuda_emulation::dynamicSharedMemory()
#else
#define ANVIL_DYNAMIC_SHARED(name)                                             \
  extern __shared__ __align__(16) unsigned char name[]
#endif

namespace anvil::rt::cuda::kernel_call {

/// One call: its name, its shape in words, its name in the profile, when
/// it started.
struct Call {
  const char *name;
  std::string shape;
  std::string profileName;
  std::chrono::steady_clock::time_point start;
};

[[noreturn]] inline void failShape(const Call &c, const std::string &why) {
  failInStep(std::string(c.name) + ": " + why + " (" + c.shape + ")");
}

/// Aborts with the report of a failed CUDA runtime call (in a graph
/// capture, records it: cuda::recordCaptureFailure).
inline void check(cudaError_t e, const char *what, const Call &c,
                  const std::string &kernel = "") {
  if (e == cudaSuccess)
    return;
  std::string message = std::string(what) + " failed: " + cudaGetErrorName(e) +
                        " (" + cudaGetErrorString(e) + "), " +
                        (kernel.empty() ? "" : "for kernel '" + kernel + "' ") +
                        "of " + c.name + " (" + c.shape + ")";
  if (!recordCaptureFailure(message))
    failInStep(message);
}

/// The stream the step's work runs on.
inline cudaStream_t stepStream() {
  return static_cast<cudaStream_t>(cuda::stepStream());
}

/// kernel<<<grid, threads, smem>>>(args...) on the step stream (emulated:
/// run on the CPU before it returns).
template <typename Kernel, typename... Args>
void launchOnStepStream(Kernel kernel, dim3 grid, dim3 threads, size_t smem,
                        Args... args) {
#ifdef ANVIL_CUDA_EMULATION
  anvil::cuda_emulation::launch(kernel, grid, threads, smem, args...);
#else
  kernel<<<grid, threads, smem, stepStream()>>>(args...);
#endif
}

/// Waits for the step stream in "sync" mode and adds the call's time to
/// the profile.
inline void finish(const Call &c) {
  if (launchMode() != LaunchMode::Sync)
    return; // queued on the step stream; the step's end waits for it
  check(cudaStreamSynchronize(stepStream()), "cudaStreamSynchronize", c);
  if (profiling())
    profileAdd(c.profileName, std::chrono::duration<double>(
                                  std::chrono::steady_clock::now() - c.start)
                                  .count());
}

/// Initializes the device for the call.
inline void initialize(const Call &c) {
  Status st = cuda::initialize();
  if (!st.isOk())
    failInStep(std::string(c.name) + ": " + st.message());
  // The launches' checks read the runtime's last error: start from none.
  // A launch error of an earlier call was that call's to report; one left
  // by a graph capture that was dropped is not this call's.
  (void)cudaGetLastError();
}

} // namespace anvil::rt::cuda::kernel_call

#endif // ANVIL_RUNTIME_CUDA_KERNELCALL_H
