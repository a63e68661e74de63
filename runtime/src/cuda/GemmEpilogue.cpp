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
// bias and aux,
// f32 compute. The heuristic runs once per shape and alignment; the GEMM
// is queued on the step stream and waited for only in "sync" mode.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "Lt.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace {

std::atomic<bool> forcedFallback{false};

} // namespace

void anvil::rt::cuda::setEpilogueFallback(bool on) { forcedFallback = on; }
bool anvil::rt::cuda::epilogueFallback() { return forcedFallback; }

namespace {

using anvil::rt::cuda::failInStep;

/// The name of an epilogue this file uses, for messages.
const char *epilogueName(cublasLtEpilogue_t epilogue) {
  switch (epilogue) {
  case CUBLASLT_EPILOGUE_BIAS:
    return "BIAS";
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    return "GELU_AUX_BIAS";
  case CUBLASLT_EPILOGUE_GELU_BIAS:
    return "GELU_BIAS";
  case CUBLASLT_EPILOGUE_BGRADA:
    return "BGRADA";
  default:
    return "DGELU_BGRAD";
  }
}

/// One cuBLASLt matmul in its own (column-major) terms: D (rows x cols, ld
/// rows) = op(A) op(B), op(A) rows x depth and op(B) depth x cols, each
/// stored column-major with its leading dimension; the epilogue's bias
/// vector and auxiliary matrix (D's layout; null: none).
struct LtGemm {
  cublasLtEpilogue_t epilogue;
  cublasOperation_t opA, opB;
  int64_t rows, cols, depth;
  const uint16_t *a;
  int64_t lda;
  const uint16_t *b;
  int64_t ldb;
  const void *bias, *aux;
  uint16_t *d;
};

/// Queues `g` on the step stream. Returns false, having queued nothing,
/// when cuBLASLt has no algorithm for it and `mayFallBack`; fails, naming
/// `caller` and `what()`, on any other error (recorded instead during a
/// graph capture).
template <typename What>
bool ltGemm(const char *caller, const LtGemm &g, bool mayFallBack, What what) {
  // A failure in a graph capture is recorded, and sets `failed` (the GEMM
  // then returns without queuing anything); otherwise it aborts.
  bool failed = false;
  auto check = [&](cublasStatus_t s, const char *call) {
    if (s == CUBLAS_STATUS_SUCCESS || failed)
      return;
    std::string message = std::string(call) +
                          " failed: " + cublasGetStatusName(s) + ", for " +
                          what();
    if (!anvil::rt::cuda::recordCaptureFailure(message))
      failInStep(message);
    failed = true;
  };
  // cuBLASLt's rule for the auxiliary matrix's leading dimension.
  if (g.aux && g.rows % 8 != 0)
    failInStep(std::string(caller) +
               ": cuBLASLt's GELU epilogues need the product's columns (n = " +
               std::to_string(g.rows) + ") to be a multiple of 8, for " +
               what() + " (anvil-gemm-epilogues fuses only such GEMMs)");
  namespace lt = anvil::rt::cuda::lt;
  const lt::Handle &h = lt::handle(caller);
  lt::Descriptors desc;
  check(cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  cudaDataType_t bf16 = CUDA_R_16BF;
  int64_t auxLd = g.rows;
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void *value,
                 size_t size, const char *call) {
    check(cublasLtMatmulDescSetAttribute(desc.op, attribute, value, size),
          call);
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, &g.opA, sizeof g.opA,
      "cublasLtMatmulDescSetAttribute(TRANSA)");
  set(CUBLASLT_MATMUL_DESC_TRANSB, &g.opB, sizeof g.opB,
      "cublasLtMatmulDescSetAttribute(TRANSB)");
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue, sizeof g.epilogue,
      "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias,
      "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bf16, sizeof bf16,
      "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  if (g.aux) {
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof g.aux,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof auxLd,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &bf16, sizeof bf16,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_DATA_TYPE)");
  }
  bool ta = g.opA == CUBLAS_OP_T, tb = g.opB == CUBLAS_OP_T;
  check(cublasLtMatrixLayoutCreate(&desc.a, CUDA_R_16BF, ta ? g.depth : g.rows,
                                   ta ? g.rows : g.depth, g.lda),
        "cublasLtMatrixLayoutCreate(A)");
  check(cublasLtMatrixLayoutCreate(&desc.b, CUDA_R_16BF, tb ? g.cols : g.depth,
                                   tb ? g.depth : g.cols, g.ldb),
        "cublasLtMatrixLayoutCreate(B)");
  check(
      cublasLtMatrixLayoutCreate(&desc.d, CUDA_R_16BF, g.rows, g.cols, g.rows),
      "cublasLtMatrixLayoutCreate(D)");
  check(cublasLtMatmulPreferenceCreate(&desc.preference),
        "cublasLtMatmulPreferenceCreate");
  size_t workspace = lt::kWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(
            desc.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            &workspace, sizeof workspace),
        "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  for (auto [attribute, pointer] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                  static_cast<const void *>(g.a)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                  static_cast<const void *>(g.b)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                  static_cast<const void *>(g.d)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                  static_cast<const void *>(g.d)}}) {
    uint32_t bytes = lt::alignment(pointer);
    check(cublasLtMatmulPreferenceSetAttribute(desc.preference, attribute,
                                               &bytes, sizeof bytes),
          "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  }
  if (failed)
    return true;
  // The heuristic's choice, once per form, shape and alignment: a step
  // runs the same GEMMs every time (and a graph capture must not run it).
  // An absent one is remembered too.
  std::array<int64_t, 14> key = {mayFallBack &&
                                     anvil::rt::cuda::epilogueFallback(),
                                 static_cast<int64_t>(g.epilogue),
                                 g.opA,
                                 g.opB,
                                 g.rows,
                                 g.cols,
                                 g.depth,
                                 g.lda,
                                 g.ldb,
                                 lt::alignment(g.a),
                                 lt::alignment(g.b),
                                 lt::alignment(g.d),
                                 lt::alignment(g.aux),
                                 lt::alignment(g.bias)};
  static std::mutex cacheMutex;
  static std::map<std::array<int64_t, 14>, std::optional<cublasLtMatmulAlgo_t>>
      cache;
  std::optional<std::optional<cublasLtMatmulAlgo_t>> cached;
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (auto it = cache.find(key); it != cache.end())
      cached = it->second;
  }
  if (!cached) {
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        h.handle, desc.op, desc.a, desc.b, desc.d, desc.d, desc.preference, 1,
        &heuristic, &found);
    // No heuristic for the configuration is no algorithm too.
    if (status == CUBLAS_STATUS_NOT_SUPPORTED)
      found = 0;
    else
      check(status, "cublasLtMatmulAlgoGetHeuristic");
    if (failed)
      return true;
    // (anvil::rt::cuda::setEpilogueFallback: as if there were none.)
    if (mayFallBack && anvil::rt::cuda::epilogueFallback())
      found = 0;
    cached = found ? std::optional(heuristic.algo) : std::nullopt;
    std::lock_guard<std::mutex> lock(cacheMutex);
    cache.emplace(key, *cached);
  }
  if (!*cached) {
    if (mayFallBack)
      return false;
    failInStep(
        std::string(caller) +
        ": cublasLtMatmulAlgoGetHeuristic found no algorithm, for " + what() +
        " (compile with --gemm-epilogues=off to run the epilogue as kernels "
        "of its own)");
  }
  const float one = 1.0f, zero = 0.0f;
  auto start = std::chrono::steady_clock::now();
  check(cublasLtMatmul(
            h.handle, desc.op, &one, g.a, desc.a, g.b, desc.b, &zero, g.d,
            desc.d, g.d, desc.d, &**cached, h.workspace, lt::kWorkspaceBytes,
            static_cast<cudaStream_t>(anvil::rt::cuda::stepStream())),
        "cublasLtMatmul");
  if (failed ||
      anvil::rt::cuda::launchMode() != anvil::rt::cuda::LaunchMode::Sync)
    return true; // queued on the step stream; the step's end waits for it
  if (anvil::rt::Status st =
          anvil::rt::cuda::synchronizeStepStream(what().c_str());
      !st.isOk())
    failInStep(st.message());
  if (anvil::rt::cuda::profiling())
    anvil::rt::cuda::profileAdd(
        std::string("cuBLASLt ") + epilogueName(g.epilogue) + " " +
            std::to_string(g.cols) + "x" + std::to_string(g.rows) + "x" +
            std::to_string(g.depth),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  return true;
}

/// An epilogue with a bias (or the bias's gradient) of the row-major
/// product a (m x k) b (k x n, or n x k with `transB`): D^T = op(b)^T a^T,
/// cuBLASLt's A our b, its B our a.
void biasGemm(const char *caller, cublasLtEpilogue_t epilogue, int32_t transB,
              int64_t m, int64_t n, int64_t k, const uint16_t *a,
              const uint16_t *b, const void *bias, const void *aux,
              uint16_t *d) {
  LtGemm g{epilogue,
           transB ? CUBLAS_OP_T : CUBLAS_OP_N,
           CUBLAS_OP_N,
           n,
           m,
           k,
           b,
           transB ? k : n,
           a,
           k,
           bias,
           aux,
           d};
  ltGemm(caller, g, /*mayFallBack=*/false, [&] {
    return std::string("a bf16 GEMM with the ") + epilogueName(epilogue) +
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
  LtGemm g{CUBLASLT_EPILOGUE_BGRADA,
           CUBLAS_OP_N,
           CUBLAS_OP_T,
           n,
           k,
           m,
           grad,
           n,
           x,
           k,
           biasGrad,
           nullptr,
           weightGrad};
  if (ltGemm("anvil_rt_cuda_gemm_weight_bias_grad", g, /*mayFallBack=*/true,
             [&] {
               return "a weight's gradient with the BGRADA epilogue (" +
                      std::to_string(m) + " rows of " + std::to_string(k) +
                      " by " + std::to_string(n) + ")";
             }))
    return;
  // No BGRADA for the shape: the GEMM, and the same sums as the product of
  // a row of ones and grad (f32 accumulation, rounded once).
  anvil_rt_cuda_gemm_bf16_rounded(1, 0, k, n, m, x, k, 0, grad, n, 0,
                                  weightGrad, n, 0, 1);
  anvil_rt_cuda_gemm_bf16_rounded(0, 0, 1, n, m, ones(m), m, 0, grad, n, 0,
                                  biasGrad, n, 0, 1);
}
