//===- GemmEpilogue.cpp - bf16 GEMMs with bias and GELU epilogues ---------===//
//
// anvil_rt_cuda_gemm_bias_gelu and anvil_rt_cuda_gemm_dgelu_bgrad: one
// cuBLASLt matmul each, with the GELU_AUX_BIAS and DGELU_BGRAD epilogues
// (RuntimeABI.h's anvil_rt_gemm_bias_gelu and anvil_rt_gemm_dgelu_bgrad
// on device pointers). Row-major D (m x n) = A (m x k) op(B) is, read
// column-major, D^T = op(B)^T A^T: cuBLASLt's A is our B (k x n row-major
// is n x k column-major; with transB, n x k row-major is k x n, op T) and
// its B our A (k x m column-major), so the bias and its gradient run along
// D^T's rows, our columns, as the ops define them. The auxiliary matrix
// (`pre`, the GELU's input) has D's layout; without one, GELU_BIAS. bf16
// operands, bias and aux,
// f32 compute. The heuristic runs once per shape and alignment; the GEMM
// is queued on the step stream and waited for only in "sync" mode.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "Lt.h"

#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "anvil: %s\n", message.c_str());
  std::abort();
}

/// The name of an epilogue this file uses, for messages.
const char *epilogueName(cublasLtEpilogue_t epilogue) {
  switch (epilogue) {
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    return "GELU_AUX_BIAS";
  case CUBLASLT_EPILOGUE_GELU_BIAS:
    return "GELU_BIAS";
  default:
    return "DGELU_BGRAD";
  }
}

/// One GEMM with `epilogue` (GELU_AUX_BIAS: `bias` read, `aux` written;
/// GELU_BIAS: `bias` read, no `aux`; DGELU_BGRAD: `aux` read, `bias`
/// written), D = `d`. `caller` names the entry point in errors.
void epilogueGemm(const char *caller, cublasLtEpilogue_t epilogue,
                  int32_t transB, int64_t m, int64_t n, int64_t k,
                  const uint16_t *a, const uint16_t *b, const void *bias,
                  const void *aux, uint16_t *d) {
  // What the GEMM is, for messages (built only for one).
  auto what = [&] {
    return std::string("a bf16 GEMM with the ") + epilogueName(epilogue) +
           " epilogue (" + std::to_string(m) + " x " + std::to_string(k) +
           " by " +
           (transB
                ? std::to_string(n) + " x " + std::to_string(k) + " transposed"
                : std::to_string(k) + " x " + std::to_string(n)) +
           ")";
  };
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
      fail(message);
    failed = true;
  };
  // cuBLASLt's rule for the auxiliary matrix's leading dimension.
  if (n % 8 != 0)
    fail(std::string(caller) +
         ": cuBLASLt's GELU epilogues need the product's columns (n = " +
         std::to_string(n) + ") to be a multiple of 8, for " + what() +
         " (anvil-gemm-epilogues fuses only such GEMMs)");
  namespace lt = anvil::rt::cuda::lt;
  const lt::Handle &h = lt::handle(caller);
  lt::Descriptors desc;
  check(cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N, opB = CUBLAS_OP_N;
  cudaDataType_t bf16 = CUDA_R_16BF;
  int64_t auxLd = n;
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void *value,
                 size_t size, const char *call) {
    check(cublasLtMatmulDescSetAttribute(desc.op, attribute, value, size),
          call);
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA,
      "cublasLtMatmulDescSetAttribute(TRANSA)");
  set(CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB,
      "cublasLtMatmulDescSetAttribute(TRANSB)");
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue,
      "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias,
      "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bf16, sizeof bf16,
      "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  if (aux) {
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof auxLd,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &bf16, sizeof bf16,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_DATA_TYPE)");
  }
  // cuBLASLt's A is our B, its B our A.
  check(cublasLtMatrixLayoutCreate(&desc.a, CUDA_R_16BF, transB ? k : n,
                                   transB ? n : k, transB ? k : n),
        "cublasLtMatrixLayoutCreate(B)");
  check(cublasLtMatrixLayoutCreate(&desc.b, CUDA_R_16BF, k, m, k),
        "cublasLtMatrixLayoutCreate(A)");
  check(cublasLtMatrixLayoutCreate(&desc.d, CUDA_R_16BF, n, m, n),
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
                  static_cast<const void *>(b)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                  static_cast<const void *>(a)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                  static_cast<const void *>(d)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                  static_cast<const void *>(d)}}) {
    uint32_t bytes = lt::alignment(pointer);
    check(cublasLtMatmulPreferenceSetAttribute(desc.preference, attribute,
                                               &bytes, sizeof bytes),
          "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  }
  if (failed)
    return;
  // The heuristic's choice, once per shape and alignment: a step runs the
  // same GEMMs every time (and a graph capture must not run it).
  std::array<int64_t, 10> key = {static_cast<int64_t>(epilogue),
                                 transB,
                                 m,
                                 n,
                                 k,
                                 lt::alignment(a),
                                 lt::alignment(b),
                                 lt::alignment(d),
                                 lt::alignment(aux),
                                 lt::alignment(bias)};
  static std::mutex cacheMutex;
  static std::map<std::array<int64_t, 10>, cublasLtMatmulAlgo_t> cache;
  std::optional<cublasLtMatmulAlgo_t> algo;
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (auto it = cache.find(key); it != cache.end())
      algo = it->second;
  }
  if (!algo) {
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(h.handle, desc.op, desc.a, desc.b,
                                         desc.d, desc.d, desc.preference, 1,
                                         &heuristic, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (failed)
      return;
    if (found == 0)
      fail(std::string(caller) +
           ": cublasLtMatmulAlgoGetHeuristic found no algorithm, for " +
           what() +
           " (compile with --gemm-epilogues=off to run the epilogue as "
           "kernels of its own)");
    algo = heuristic.algo;
    std::lock_guard<std::mutex> lock(cacheMutex);
    cache.emplace(key, heuristic.algo);
  }
  const float one = 1.0f, zero = 0.0f;
  auto start = std::chrono::steady_clock::now();
  check(cublasLtMatmul(
            h.handle, desc.op, &one, b, desc.a, a, desc.b, &zero, d, desc.d, d,
            desc.d, &*algo, h.workspace, lt::kWorkspaceBytes,
            static_cast<cudaStream_t>(anvil::rt::cuda::stepStream())),
        "cublasLtMatmul");
  if (failed ||
      anvil::rt::cuda::launchMode() != anvil::rt::cuda::LaunchMode::Sync)
    return; // queued on the step stream; the step's end waits for it
  if (anvil::rt::Status st =
          anvil::rt::cuda::synchronizeStepStream(what().c_str());
      !st.isOk())
    fail(st.message());
  if (anvil::rt::cuda::profiling())
    anvil::rt::cuda::profileAdd(
        std::string("cuBLASLt ") + epilogueName(epilogue) + " " +
            std::to_string(m) + "x" + std::to_string(n) + "x" +
            std::to_string(k),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
}

} // namespace

extern "C" void anvil_rt_cuda_gemm_bias_gelu(
    int32_t transB, int64_t m, int64_t n, int64_t k, const uint16_t *a,
    const uint16_t *b, const uint16_t *bias, uint16_t *out, uint16_t *pre) {
  // Without `pre` (nothing reads it), the epilogue that keeps no aux.
  epilogueGemm("anvil_rt_cuda_gemm_bias_gelu",
               pre ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                   : CUBLASLT_EPILOGUE_GELU_BIAS,
               transB, m, n, k, a, b, bias, pre, out);
}

extern "C" void
anvil_rt_cuda_gemm_dgelu_bgrad(int32_t transB, int64_t m, int64_t n, int64_t k,
                               const uint16_t *a, const uint16_t *b,
                               const uint16_t *pre, uint16_t *preGrad,
                               uint16_t *biasGrad) {
  epilogueGemm("anvil_rt_cuda_gemm_dgelu_bgrad", CUBLASLT_EPILOGUE_DGELU_BGRAD,
               transB, m, n, k, a, b, biasGrad, pre, preGrad);
}
