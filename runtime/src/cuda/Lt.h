//===- Lt.h - the CUDA runtime's cuBLASLt handle (private) ------*- C++ -*-===//
//
// One cuBLASLt handle and one workspace per process, shared by every
// cuBLASLt GEMM (FP8, and bf16 with epilogues): they run one at a time on
// the step stream, so one workspace serves them all.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_SRC_CUDA_LT_H
#define ANVIL_RUNTIME_SRC_CUDA_LT_H

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

namespace anvil::rt::cuda::lt {

/// The workspace: NVIDIA's recommendation for Hopper.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

struct Handle {
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
};

/// The process's handle and workspace, created on first use with the
/// device's primary context current on the calling thread; a failure
/// aborts, naming `caller`.
const Handle &handle(const char *caller);

/// The largest power of two, at most 256, that divides `p`'s address: what
/// cuBLASLt may assume of it (the memory plan places buffers 64 bytes
/// apart; cuBLASLt assumes 256 unless told).
uint32_t alignment(const void *p);

/// A matmul's descriptors, destroyed at the end of the scope.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors &) = delete;
  Descriptors &operator=(const Descriptors &) = delete;
  ~Descriptors();
};

} // namespace anvil::rt::cuda::lt

#endif // ANVIL_RUNTIME_SRC_CUDA_LT_H
