//===- EmulatedAttention.cpp - Attention.cu compiled for the emulator -----===//
//
// runtime/src/cuda/Attention.cu, kernels and host side, as plain C++ over
// CudaEmulation.h (ANVIL_CUDA_EMULATION, set by the test's CMake target):
// anvil_rt_cuda_attention_f32 and _grad_f32 here run their kernels on the
// CPU. Included rather than listed as a source so that the .cu file keeps
// its CUDA language in anvil_cuda. Also the functions of the CUDA device
// (Device.cpp) that Attention.cu's host side calls, for a device that is
// always there, launches synchronously (never in a graph capture), keeps
// no profile and reports failures outside any step.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CUDA_EMULATION
#error "compile with ANVIL_CUDA_EMULATION defined"
#endif

#include "../../src/cuda/Attention.cu"

namespace anvil::rt::cuda {

Status initialize() { return Status::ok(); }
LaunchMode launchMode() { return LaunchMode::Sync; }
void *stepStream() { return nullptr; }
bool recordCaptureFailure(const std::string &) { return false; }
bool profiling() { return false; }
void profileAdd(const std::string &, double) {}
std::string whereInStep() { return ""; }
void failInStep(const std::string &message) {
  std::fprintf(stderr, "anvil: %s\n", message.c_str());
  std::abort();
}

} // namespace anvil::rt::cuda
