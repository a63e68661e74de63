//===- GemmEpilogue.cpp - bf16 GEMMs with bias and GELU epilogues ---------===//
//
// anvil_rt_cuda_gemm_bias, anvil_rt_cuda_gemm_bias_gelu,
// anvil_rt_cuda_gemm_dgelu_bgrad and anvil_rt_cuda_gemm_weight_bias_grad:
// one cuBLASLt matmul each, with the BIAS, GELU_AUX_BIAS, DGELU_BGRAD and
// BGRADA epilogues (RuntimeABI.h's anvil_rt_gemm_bias, _bias_gelu,
// _dgelu_bgrad and _weight_bias_grad on device pointers). Row-major D (m x n) =
// A (m x k) op(B) is, read column-major, D^T = op(B)^T A^T: cuBLASLt's A is our
// B (k x n row-major is n x k column-major; with transB, n x k row-major is k x
// n, op T) and its B our A (k x m column-major), so the bias and its gradient
// run along D^T's rows, our columns, as the ops define them. The auxiliary
// matrix
// (`pre`, the GELU's input) has D's layout; without one, GELU_BIAS. A
// weight's gradient x^T g (k x n) is, column-major, g^T x: cuBLASLt's A is
// g (n x m, not transposed), its B x (k x m, transposed), and BGRADA sums
// A over the contraction, g's rows: the bias's gradient. bf16 operands,
// bias and aux, f32 compute: Lt.h's bf16Gemm, whose heuristic runs once
// per shape and alignment; the GEMM is queued on the step stream and
// waited for only in "sync" mode.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "Lt.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace lt = anvil::rt::cuda::lt;
using anvil::rt::cuda::failInStep;

/// An epilogue with a bias (or the bias's gradient) of the row-major
/// product a (m x k) b (k x n, or n x k with `transB`): D^T = op(b)^T a^T,
/// cuBLASLt's A our b, its B our a.
void biasGemm(const char *caller, cublasLtEpilogue_t epilogue, int32_t transB,
              int64_t m, int64_t n, int64_t k, const uint16_t *a,
              const uint16_t *b, const void *bias, const void *aux,
              uint16_t *d) {
  lt::Bf16Gemm g;
  g.epilogue = epilogue;
  g.opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  g.rows = n;
  g.cols = m;
  g.depth = k;
  g.a = b;
  g.lda = transB ? k : n;
  g.b = a;
  g.ldb = k;
  g.bias = bias;
  g.aux = aux;
  g.d = d;
  lt::bf16Gemm(caller, g, /*mayFallBack=*/false, [&] {
    return std::string("a bf16 GEMM with the ") + lt::epilogueName(epilogue) +
           " epilogue (" + std::to_string(m) + " x " + std::to_string(k) +
           " by " +
           (transB
                ? std::to_string(n) + " x " + std::to_string(k) + " transposed"
                : std::to_string(k) + " x " + std::to_string(n)) +
           ")";
  });
}

/// A device vector of `count` bf16 ones, made on first use and kept (like
/// cuBLAS's workspace, outside the step's memory). The first use is an
/// eager call (a step's first run per set of buffers is never captured);
/// the copy is queued on the step stream, ahead of the GEMM that reads it,
/// from host memory that stays alive.
const uint16_t *ones(int64_t count) {
  static std::mutex mutex;
  static std::map<int64_t, std::pair<uint16_t *, std::vector<uint16_t>>>
      vectors;
  std::lock_guard<std::mutex> lock(mutex);
  auto &[device, host] = vectors[count];
  if (!device) {
    host.assign(static_cast<size_t>(count), 0x3F80); // 1.0
    void *raw = nullptr;
    if (cudaError_t e = cudaMalloc(&raw, host.size() * 2); e != cudaSuccess)
      failInStep(std::string("cudaMalloc of a vector of ones failed: ") +
                 cudaGetErrorString(e));
    device = static_cast<uint16_t *>(raw);
    if (cudaError_t e = cudaMemcpyAsync(
            device, host.data(), host.size() * 2, cudaMemcpyHostToDevice,
            static_cast<cudaStream_t>(anvil::rt::cuda::stepStream()));
        e != cudaSuccess)
      failInStep(std::string("cudaMemcpyAsync of a vector of ones failed: ") +
                 cudaGetErrorString(e));
  }
  return device;
}

} // namespace

extern "C" void anvil_rt_cuda_gemm_bias(int32_t transB, int64_t m, int64_t n,
                                        int64_t k, const uint16_t *a,
                                        const uint16_t *b, const uint16_t *bias,
                                        uint16_t *out) {
  biasGemm("anvil_rt_cuda_gemm_bias", CUBLASLT_EPILOGUE_BIAS, transB, m, n, k,
           a, b, bias, nullptr, out);
}

extern "C" void anvil_rt_cuda_gemm_bias_gelu(
    int32_t transB, int64_t m, int64_t n, int64_t k, const uint16_t *a,
    const uint16_t *b, const uint16_t *bias, uint16_t *out, uint16_t *pre) {
  // Without `pre` (nothing reads it), the epilogue that keeps no aux.
  biasGemm("anvil_rt_cuda_gemm_bias_gelu",
           pre ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS,
           transB, m, n, k, a, b, bias, pre, out);
}

extern "C" void
anvil_rt_cuda_gemm_dgelu_bgrad(int32_t transB, int64_t m, int64_t n, int64_t k,
                               const uint16_t *a, const uint16_t *b,
                               const uint16_t *pre, uint16_t *preGrad,
                               uint16_t *biasGrad) {
  biasGemm("anvil_rt_cuda_gemm_dgelu_bgrad", CUBLASLT_EPILOGUE_DGELU_BGRAD,
           transB, m, n, k, a, b, biasGrad, pre, preGrad);
}

extern "C" void
anvil_rt_cuda_gemm_weight_bias_grad(int64_t m, int64_t k, int64_t n,
                                    const uint16_t *x, const uint16_t *grad,
                                    uint16_t *weightGrad, uint16_t *biasGrad) {
  // weightGrad^T (n x k) = grad^T x: cuBLASLt's A is grad (n x m, ld n),
  // its B x (stored k x m, ld k, transposed), BGRADA summing A over m.
  lt::Bf16Gemm g;
  g.epilogue = CUBLASLT_EPILOGUE_BGRADA;
  g.opB = CUBLAS_OP_T;
  g.rows = n;
  g.cols = k;
  g.depth = m;
  g.a = grad;
  g.lda = n;
  g.b = x;
  g.ldb = k;
  g.bias = biasGrad;
  g.d = weightGrad;
  if (lt::bf16Gemm("anvil_rt_cuda_gemm_weight_bias_grad", g,
                   /*mayFallBack=*/true, [&] {
                     return "a weight's gradient with the BGRADA epilogue (" +
                            std::to_string(m) + " rows of " +
                            std::to_string(k) + " by " + std::to_string(n) +
                            ")";
                   }))
    return;
  // No BGRADA for the shape: the GEMM, and the same sums as the product of
  // a row of ones and grad (f32 accumulation, rounded once).
  anvil_rt_cuda_gemm_bf16_rounded(1, 0, k, n, m, x, k, 0, grad, n, 0,
                                  weightGrad, n, 0, 1);
  anvil_rt_cuda_gemm_bf16_rounded(0, 0, 1, n, m, ones(m), m, 0, grad, n, 0,
                                  biasGrad, n, 0, 1);
}
