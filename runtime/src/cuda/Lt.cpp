//===- Lt.cpp - the CUDA runtime's cuBLASLt handle ------------------------===//

#include "Lt.h"

#include "anvil/runtime/Cuda.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace anvil::rt::cuda::lt {

namespace {

using anvil::rt::cuda::failInStep;

} // namespace

const Handle &handle(const char *caller) {
  Status st = initialize();
  if (!st.isOk())
    failInStep(std::string(caller) + ": " + st.message());
  static std::once_flag once;
  static Handle h;
  std::call_once(once, [caller] {
    if (cublasStatus_t s = cublasLtCreate(&h.handle);
        s != CUBLAS_STATUS_SUCCESS)
      failInStep(std::string(caller) +
                 ": cublasLtCreate failed: " + cublasGetStatusName(s));
    if (cudaError_t e = cudaMalloc(&h.workspace, kWorkspaceBytes);
        e != cudaSuccess)
      failInStep(std::string(caller) +
                 ": cudaMalloc of the cuBLASLt workspace (" +
                 std::to_string(kWorkspaceBytes) +
                 " bytes) failed: " + cudaGetErrorString(e));
  });
  return h;
}

uint32_t alignment(const void *p) {
  uint32_t bytes = 256;
  while (reinterpret_cast<uintptr_t>(p) % bytes != 0)
    bytes /= 2;
  return bytes;
}

Descriptors::~Descriptors() {
  if (preference)
    cublasLtMatmulPreferenceDestroy(preference);
  for (cublasLtMatrixLayout_t l : {a, b, c, d})
    if (l)
      cublasLtMatrixLayoutDestroy(l);
  if (op)
    cublasLtMatmulDescDestroy(op);
}

} // namespace anvil::rt::cuda::lt
