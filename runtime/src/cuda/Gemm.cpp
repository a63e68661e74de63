//===- Gemm.cpp - anvil_rt_cuda_sgemm and the bf16 GEMMs -----------------===//
//
// Row-major C (m x n) += op(A) op(B) (beta = 1; `accumulate` 0: C =, beta
// = 0) is, read column-major, C^T += op(B)^T
// op(A)^T: the library multiplies B then A with the transposes as given, n
// and m swapped. The bf16 GEMMs (f32 or bf16 C) are cuBLASLt matmuls
// (Lt.h's bf16Gemm, strided batches as its layouts' batch attributes);
// where cuBLASLt has no algorithm for one (or setGemmFallback), it runs on
// cuBLAS's cublasGemmStridedBatchedEx_64, as the f32 sgemm does on
// cublasSgemmStridedBatched_64. One cuBLAS handle per process, on the step
// stream with the generated code's kernels (cuda::stepStream), with a
// workspace of its own (cuBLASLt's: Lt.h) so that a graph capture of the
// step needs no allocation; a GEMM returns once queued (synchronized in
// "sync" mode: LaunchMode).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "Lt.h"

#include <chrono>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

const char *cublasName(cublasStatus_t status) {
  return cublasGetStatusName(status);
}

using anvil::rt::cuda::failInStep;

/// cuBLAS's workspace: NVIDIA's recommendation for Hopper (32 MiB; 4 MiB
/// suffices before).
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

/// The process's cuBLAS handle, with the device's primary context current
/// on the calling thread: the CUDA runtime under cuBLAS then works on the
/// device the driver side opened (LOCAL_RANK's), not device 0.
cublasHandle_t handle() {
  anvil::rt::Status st = anvil::rt::cuda::initialize();
  if (!st.isOk())
    failInStep("anvil_rt_cuda_sgemm: " + st.message());
  static std::once_flag once;
  static cublasHandle_t h = nullptr;
  std::call_once(once, [] {
    if (cublasStatus_t s = cublasCreate(&h); s != CUBLAS_STATUS_SUCCESS)
      failInStep(std::string("cublasCreate failed: ") + cublasName(s));
    if (cublasStatus_t s = cublasSetStream(
            h, static_cast<cudaStream_t>(anvil::rt::cuda::stepStream()));
        s != CUBLAS_STATUS_SUCCESS)
      failInStep(std::string("cublasSetStream failed: ") + cublasName(s));
    // After cublasSetStream, which resets the workspace to cuBLAS's pool.
    void *workspace = nullptr;
    if (cudaError_t e = cudaMalloc(&workspace, kWorkspaceBytes);
        e != cudaSuccess)
      failInStep(std::string("cudaMalloc failed: ") + cudaGetErrorName(e) +
                 ", for cuBLAS's workspace of " +
                 std::to_string(kWorkspaceBytes) + " bytes");
    if (cublasStatus_t s = cublasSetWorkspace(h, workspace, kWorkspaceBytes);
        s != CUBLAS_STATUS_SUCCESS)
      failInStep(std::string("cublasSetWorkspace failed: ") + cublasName(s));
  });
  return h;
}

/// Synchronizes after a GEMM of `what` ("sgemm", "bf16 GEMM") that
/// returned `s`, in "sync" mode, failing with `call` and the shape; adds
/// its time to the profile.
void finish(cublasStatus_t s, const char *call, const char *what,
            std::chrono::steady_clock::time_point start, int64_t m, int64_t n,
            int64_t k, int64_t batch) {
  auto shape = [&] {
    return "a " + std::to_string(batch) + " x (" + std::to_string(m) + " x " +
           std::to_string(k) + ") (" + std::to_string(k) + " x " +
           std::to_string(n) + ") " + what;
  };
  using anvil::rt::cuda::LaunchMode;
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::string message =
        std::string(call) + " failed: " + cublasName(s) + ", for " + shape();
    if (anvil::rt::cuda::recordCaptureFailure(message))
      return;
    failInStep(message);
  }
  if (anvil::rt::cuda::launchMode() != LaunchMode::Sync)
    return; // queued on the step stream; the step's end waits for it
  if (cudaError_t e = cudaStreamSynchronize(
          static_cast<cudaStream_t>(anvil::rt::cuda::stepStream()));
      e != cudaSuccess)
    failInStep(std::string("cudaStreamSynchronize failed: ") +
               cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
               "), after " + shape());
  if (anvil::rt::cuda::profiling())
    anvil::rt::cuda::profileAdd(
        std::string("cuBLAS ") + what + " " + std::to_string(batch) + "x" +
            std::to_string(m) + "x" + std::to_string(n) + "x" +
            std::to_string(k),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
}

/// The row-major bf16 GEMM of anvil_rt_cuda_gemm_bf16(_rounded) as a
/// cuBLASLt matmul (C^T = op(B)^T op(A)^T: cuBLASLt's A our B, its B our A);
/// false, having queued nothing, where cuBLASLt has no algorithm for it.
bool ltGemm(const char *caller, int32_t transA, int32_t transB, int64_t m,
            int64_t n, int64_t k, const uint16_t *a, int64_t lda,
            int64_t strideA, const uint16_t *b, int64_t ldb, int64_t strideB,
            void *c, cudaDataType_t cType, int64_t ldc, int64_t strideC,
            int64_t batch, int32_t accumulate) {
  // An empty product (cuBLAS's no-op, or C scaled by beta) stays cuBLAS's.
  if (m == 0 || n == 0 || k == 0 || batch == 0)
    return false;
  namespace lt = anvil::rt::cuda::lt;
  lt::Bf16Gemm g;
  g.opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  g.opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  g.rows = n;
  g.cols = m;
  g.depth = k;
  g.a = b;
  g.lda = ldb;
  g.strideA = strideB;
  g.b = a;
  g.ldb = lda;
  g.strideB = strideA;
  g.d = c;
  g.ldd = ldc;
  g.strideD = strideC;
  g.dType = cType;
  g.batch = batch;
  g.accumulate = accumulate != 0;
  return lt::bf16Gemm(caller, g, /*mayFallBack=*/true, [&] {
    return "a " + std::to_string(batch) + " x (" + std::to_string(m) + " x " +
           std::to_string(k) + ") (" + std::to_string(k) + " x " +
           std::to_string(n) + ") bf16 GEMM" +
           (cType == CUDA_R_16BF ? ", bf16 result" : "");
  });
}

} // namespace

extern "C" void anvil_rt_cuda_sgemm(int32_t transA, int32_t transB, int64_t m,
                                    int64_t n, int64_t k, const float *a,
                                    int64_t lda, int64_t strideA,
                                    const float *b, int64_t ldb,
                                    int64_t strideB, float *c, int64_t ldc,
                                    int64_t strideC, int64_t batch,
                                    int32_t accumulate) {
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  auto start = std::chrono::steady_clock::now();
  cublasStatus_t s = cublasSgemmStridedBatched_64(
      handle(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b, ldb, strideB, a,
      lda, strideA, &beta, c, ldc, strideC, batch);
  finish(s, "cublasSgemmStridedBatched_64", "sgemm", start, m, n, k, batch);
}

extern "C" void anvil_rt_cuda_gemm_bf16(int32_t transA, int32_t transB,
                                        int64_t m, int64_t n, int64_t k,
                                        const uint16_t *a, int64_t lda,
                                        int64_t strideA, const uint16_t *b,
                                        int64_t ldb, int64_t strideB, float *c,
                                        int64_t ldc, int64_t strideC,
                                        int64_t batch, int32_t accumulate) {
  // bf16 operands on the tensor cores, f32 accumulation and C.
  if (ltGemm("anvil_rt_cuda_gemm_bf16", transA, transB, m, n, k, a, lda,
             strideA, b, ldb, strideB, c, CUDA_R_32F, ldc, strideC, batch,
             accumulate))
    return;
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  auto start = std::chrono::steady_clock::now();
  cublasStatus_t s = cublasGemmStridedBatchedEx_64(
      handle(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_16BF, ldb,
      strideB, a, CUDA_R_16BF, lda, strideA, &beta, c, CUDA_R_32F, ldc, strideC,
      batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  finish(s, "cublasGemmStridedBatchedEx_64", "bf16 GEMM", start, m, n, k,
         batch);
}

extern "C" void
anvil_rt_cuda_gemm_bf16_rounded(int32_t transA, int32_t transB, int64_t m,
                                int64_t n, int64_t k, const uint16_t *a,
                                int64_t lda, int64_t strideA, const uint16_t *b,
                                int64_t ldb, int64_t strideB, uint16_t *c,
                                int64_t ldc, int64_t strideC, int64_t batch) {
  // bf16 operands on the tensor cores, f32 accumulation, C written in bf16.
  if (ltGemm("anvil_rt_cuda_gemm_bf16_rounded", transA, transB, m, n, k, a, lda,
             strideA, b, ldb, strideB, c, CUDA_R_16BF, ldc, strideC, batch,
             /*accumulate=*/false))
    return;
  const float one = 1.0f, zero = 0.0f;
  auto start = std::chrono::steady_clock::now();
  cublasStatus_t s = cublasGemmStridedBatchedEx_64(
      handle(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_16BF, ldb,
      strideB, a, CUDA_R_16BF, lda, strideA, &zero, c, CUDA_R_16BF, ldc,
      strideC, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  finish(s, "cublasGemmStridedBatchedEx_64", "bf16 GEMM, bf16 result", start, m,
         n, k, batch);
}
