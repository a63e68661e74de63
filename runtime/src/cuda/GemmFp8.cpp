//===- GemmFp8.cpp - FP8 GEMMs on cuBLASLt --------------------------------===//
//
// FP8 GEMMs take cuBLASLt's "TN" form only: column-major, the first operand
// transposed, the second not. Row-major D (m x n) = A (m x k) B^T with B
// stored n x k (a linear layer's [out, in] weight, or any operand laid out
// with k innermost) is, read column-major, D^T = (B as k x n)^T (A as
// k x m): exactly that form, with no copy. The dequantization scales are
// the descriptor's A/B scale pointers (device memory: the step computes
// them); accumulation is FP32, D is f32 or bf16, overwritten (beta = 0), a
// batch in one strided-batched call. The FP8 linear layer with its GELU
// (anvil_rt_cuda_gemm_f8_gelu) writes an FP8 D through the GELU_AUX_BIAS
// epilogue, with D's scale pointer, AMAX_D and a bf16 auxiliary output. One
// handle and one 32 MiB workspace per process (Lt.h); each GEMM is queued on
// the step stream with the generated code's kernels (cuda::stepStream) and
// waited for only in "sync" mode (LaunchMode).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "Lt.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace {

using anvil::rt::cuda::lt::kWorkspaceBytes;

using anvil::rt::cuda::failInStep;

cudaDataType_t fp8Type(int32_t format) {
  return format == 1 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

const char *formatName(int32_t format) { return format == 1 ? "E5M2" : "E4M3"; }

/// What an FP8 GEMM writes: row-major D (m x n, row stride ld) of `type`
/// (f32, bf16, or FP8 codes with the GELU), and its epilogue's operands.
struct Output {
  void *d = nullptr;
  cudaDataType_t type = CUDA_R_32F;
  int64_t ld = 0;
  const void *bias = nullptr; ///< bf16, one per column (the BIAS epilogue)
  /// The GELU_AUX_BIAS epilogue: D = gelu(p) scale, `pre` = bf16(p) (m x n,
  /// row stride ld), `amax` = max |gelu(p)| (AMAX_D); FP8 D only.
  void *pre = nullptr;
  const float *scale = nullptr;
  float *amax = nullptr;
};

const char *typeName(cudaDataType_t t) {
  return t == CUDA_R_32F       ? "f32"
         : t == CUDA_R_16BF    ? "bf16"
         : t == CUDA_R_8F_E5M2 ? "E5M2 codes"
                               : "E4M3 codes";
}

/// Bytes of one element of `t`.
int64_t bytesOf(cudaDataType_t t) {
  return t == CUDA_R_32F ? 4 : t == CUDA_R_16BF ? 2 : 1;
}

/// Row-major `out` (see Output) = scaleA scaleB A B^T (+ the bf16 bias of
/// each column when `out.bias` is not null, with a bf16 D: the BIAS
/// epilogue; or through the bias and the GELU into FP8 codes with
/// `out.pre`), A m x k and B n x k row-major with row strides lda and ldb
/// (bytes: one per element), through cuBLASLt's TN form; `batch` such
/// products at the given element strides, in one call. `caller` names the
/// entry point in errors.
void ltGemm(const char *caller, int64_t m, int64_t n, int64_t k, const void *a,
            int32_t aFormat, int64_t lda, const void *b, int32_t bFormat,
            int64_t ldb, const float *scaleA, const float *scaleB,
            const Output &out, int64_t batch, int64_t strideA, int64_t strideB,
            int64_t strideD) {
  const bool gelu = out.pre != nullptr;
  const void *bias = out.bias;
  void *d = out.d;
  const int64_t ldd = out.ld;
  std::string what = "an FP8 GEMM (" + std::to_string(m) + " x " +
                     std::to_string(k) + " " + formatName(aFormat) + " by " +
                     std::to_string(n) + " x " + std::to_string(k) + " " +
                     formatName(bFormat) + " into " + typeName(out.type) +
                     (gelu   ? " through the bias and GELU"
                      : bias ? " with a bias"
                             : "") +
                     ")";
  // A failure in a graph capture is recorded, and sets `failed` (the GEMM
  // then returns without queuing anything); otherwise it aborts.
  bool failed = false;
  auto check = [&](cublasStatus_t s, const char *call) {
    if (s == CUBLAS_STATUS_SUCCESS)
      return;
    std::string message = std::string(call) +
                          " failed: " + cublasGetStatusName(s) + ", for " +
                          what;
    if (!anvil::rt::cuda::recordCaptureFailure(message))
      failInStep(message);
    failed = true;
  };
  const bool eightBitD = bytesOf(out.type) == 1;
  if (bias && !gelu && out.type != CUDA_R_16BF)
    failInStep(
        std::string(caller) +
        ": a bias needs a bf16 D (cuBLASLt's FP8 GEMM adds a bf16 bias), "
        "for " +
        what);
  if (gelu != eightBitD || (gelu && (!bias || !out.scale || !out.amax)))
    failInStep(
        std::string(caller) +
        ": the GELU epilogue writes FP8 codes from a bias, a scale and an "
        "amax, and only it does, for " +
        what);
  if (aFormat == 1 && bFormat == 1)
    failInStep(std::string(caller) +
               ": cuBLASLt has no E5M2 x E5M2 product, for " + what);
  // FP8 kernels read and write 16-byte aligned rows and batch entries.
  auto aligned = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
  };
  const int64_t perRow = 16 / bytesOf(out.type); // D's elements in 16 bytes
  if (k % 16 != 0 || lda % 16 != 0 || ldb % 16 != 0 || ldd % perRow != 0 ||
      strideA % 16 != 0 || strideB % 16 != 0 || strideD % perRow != 0 ||
      !aligned(a) || !aligned(b) || !aligned(d) || !aligned(scaleA) ||
      !aligned(scaleB) || (bias && !aligned(bias)) ||
      (gelu &&
       (!aligned(out.pre) || !aligned(out.scale) || !aligned(out.amax))))
    failInStep(
        std::string(caller) +
        ": cuBLASLt's FP8 GEMM needs 16-byte aligned operands, scales, bias, "
        "rows "
        "and batch entries (k, the 8-bit row and batch strides multiples of "
        "16, D's of " +
        std::to_string(perRow) + "), for " + what + " with lda " +
        std::to_string(lda) + ", ldb " + std::to_string(ldb) + ", ldd " +
        std::to_string(ldd));
  const anvil::rt::cuda::lt::Handle &h =
      anvil::rt::cuda::lt::handle("cuBLASLt FP8 GEMM");
  anvil::rt::cuda::lt::Descriptors desc;
  check(cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void *value,
                 size_t size, const char *call) {
    check(cublasLtMatmulDescSetAttribute(desc.op, attribute, value, size),
          call);
  };
  cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  set(CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof transposed,
      "cublasLtMatmulDescSetAttribute(TRANSA)");
  set(CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain,
      "cublasLtMatmulDescSetAttribute(TRANSB)");
  // cuBLASLt's A is our B, its B our A.
  set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scaleB, sizeof scaleB,
      "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
  set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scaleA, sizeof scaleA,
      "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
  if (bias) {
    // cuBLASLt's D is our D transposed (n x m column-major): our columns'
    // bias runs along its rows, as its BIAS epilogue adds it.
    cublasLtEpilogue_t epilogue =
        gelu ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS;
    cudaDataType_t biasType = CUDA_R_16BF;
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue,
        "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias,
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof biasType,
        "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  }
  if (gelu) {
    // The sum before the GELU, in bf16, laid out as D (n x m column-major).
    cudaDataType_t auxType = CUDA_R_16BF;
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &out.pre, sizeof out.pre,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ldd, sizeof ldd,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &auxType, sizeof auxType,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_DATA_TYPE)");
    // D = the GELU times D's scale, in 8 bits; AMAX_D the GELU's largest
    // magnitude before the scale.
    set(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &out.scale, sizeof out.scale,
        "cublasLtMatmulDescSetAttribute(D_SCALE_POINTER)");
    set(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &out.amax, sizeof out.amax,
        "cublasLtMatmulDescSetAttribute(AMAX_D_POINTER)");
  }
  check(cublasLtMatrixLayoutCreate(&desc.a, fp8Type(bFormat), k, n, ldb),
        "cublasLtMatrixLayoutCreate(B)");
  check(cublasLtMatrixLayoutCreate(&desc.b, fp8Type(aFormat), k, m, lda),
        "cublasLtMatrixLayoutCreate(A)");
  check(cublasLtMatrixLayoutCreate(&desc.d, out.type, n, m, ldd),
        "cublasLtMatrixLayoutCreate(D)");
  // C (not read: beta = 0) is described as D, but in bf16 for an FP8 D,
  // which cuBLASLt requires (C's type that of the bias).
  cublasLtMatrixLayout_t cLayout = desc.d;
  if (eightBitD) {
    check(cublasLtMatrixLayoutCreate(&desc.c, CUDA_R_16BF, n, m, ldd),
          "cublasLtMatrixLayoutCreate(C)");
    cLayout = desc.c;
  }
  if (batch > 1)
    // cuBLASLt's A is our B, its B our A.
    for (auto [layout, stride] :
         {std::pair{desc.a, strideB}, std::pair{desc.b, strideA},
          std::pair{desc.d, strideD}, std::pair{desc.c, strideD}})
      if (layout) // (no C of its own)
        check(anvil::rt::cuda::lt::setStridedBatch(layout, batch, stride),
              "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT, "
              "STRIDED_BATCH_OFFSET)");
  check(anvil::rt::cuda::lt::createPreference(&desc.preference),
        "cublasLtMatmulPreferenceCreate(MAX_WORKSPACE_BYTES)");
  using anvil::rt::cuda::lt::alignment;
  // The heuristic's choice, once per shape, layout and alignment: a step
  // runs the same GEMMs every time.
  std::array<int64_t, 20> key = {m,
                                 n,
                                 k,
                                 lda,
                                 ldb,
                                 ldd,
                                 aFormat,
                                 bFormat,
                                 out.type,
                                 bias != nullptr,
                                 gelu,
                                 gelu ? alignment(out.pre) : 0,
                                 batch,
                                 strideA,
                                 strideB,
                                 strideD,
                                 alignment(a),
                                 alignment(b),
                                 alignment(d),
                                 bias ? alignment(bias) : 0};
  static std::mutex cacheMutex;
  static std::map<std::array<int64_t, 20>, cublasLtMatmulAlgo_t> cache;
  std::optional<cublasLtMatmulAlgo_t> cached;
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (auto it = cache.find(key); it != cache.end())
      cached = it->second;
  }
  for (auto [attribute, pointer] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, b},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, a},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                  static_cast<const void *>(d)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                  static_cast<const void *>(d)}}) {
    uint32_t bytes = alignment(pointer);
    check(cublasLtMatmulPreferenceSetAttribute(desc.preference, attribute,
                                               &bytes, sizeof bytes),
          "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  }
  if (failed)
    return;
  if (!cached) {
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(h.handle, desc.op, desc.a, desc.b,
                                         cLayout, desc.d, desc.preference, 1,
                                         &heuristic, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (failed)
      return;
    if (found == 0)
      failInStep("cublasLtMatmulAlgoGetHeuristic found no algorithm, for " +
                 what);
    cached = heuristic.algo;
    std::lock_guard<std::mutex> lock(cacheMutex);
    cache.emplace(key, heuristic.algo);
  }
  const float one = 1.0f, beta = 0.0f;
  auto start = std::chrono::steady_clock::now();
  // No C for an FP8 D (cuBLASLt accumulates into none).
  const void *c = eightBitD ? nullptr : d;
  check(
      cublasLtMatmul(h.handle, desc.op, &one, b, desc.a, a, desc.b, &beta, c,
                     cLayout, d, desc.d, &*cached, h.workspace, kWorkspaceBytes,
                     static_cast<cudaStream_t>(anvil::rt::cuda::stepStream())),
      "cublasLtMatmul");
  if (failed)
    return;
  if (anvil::rt::cuda::launchMode() != anvil::rt::cuda::LaunchMode::Sync)
    return; // queued on the step stream; the step's end waits for it
  if (anvil::rt::Status st =
          anvil::rt::cuda::synchronizeStepStream(what.c_str());
      !st.isOk())
    failInStep(st.message());
  if (anvil::rt::cuda::profiling())
    anvil::rt::cuda::profileAdd(
        std::string(gelu ? "cuBLASLt FP8 GELU " : "cuBLASLt FP8 ") +
            std::to_string(batch) + "x" + std::to_string(m) + "x" +
            std::to_string(n) + "x" + std::to_string(k),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
}

} // namespace

extern "C" void anvil_rt_cuda_gemm_f8(
    int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k,
    const void *a, int32_t aFormat, int64_t lda, int64_t strideA, const void *b,
    int32_t bFormat, int64_t ldb, int64_t strideB, const float *scaleA,
    const float *scaleB, const void *bias, void *d, int32_t dBf16, int64_t ldd,
    int64_t strideD, int64_t batch) {
  if (transA || !transB)
    failInStep("anvil_rt_cuda_gemm_f8: cuBLASLt's FP8 GEMM takes both operands "
               "with K innermost (A m x k, B n x k, row-major); got A" +
               std::string(transA ? " transposed" : "") + " and B" +
               std::string(transB ? "" : " not transposed") +
               " (anvil-decompose fp8-gemms=f8-k-inner lays them out so)");
  const char *caller = "anvil_rt_cuda_gemm_f8";
  Output out{d, dBf16 ? CUDA_R_16BF : CUDA_R_32F, ldd, bias};
  if (batch > 1 && strideB == 0) {
    // A B shared by the batch: one product of the batch's rows stacked,
    // when they lie one after another.
    if (strideA == m * lda && strideD == m * ldd) {
      ltGemm(caller, m * batch, n, k, a, aFormat, lda, b, bFormat, ldb, scaleA,
             scaleB, out, 1, 0, 0, 0);
      return;
    }
    const int64_t bytes = dBf16 ? 2 : 4;
    for (int64_t i = 0; i < batch; ++i) {
      Output entry = out;
      entry.d = static_cast<uint8_t *>(d) + i * strideD * bytes;
      ltGemm(caller, m, n, k, static_cast<const uint8_t *>(a) + i * strideA,
             aFormat, lda, b, bFormat, ldb, scaleA, scaleB, entry, 1, 0, 0, 0);
    }
    return;
  }
  ltGemm(caller, m, n, k, a, aFormat, lda, b, bFormat, ldb, scaleA, scaleB, out,
         batch, strideA, strideB, strideD);
}

extern "C" void anvil_rt_cuda_gemm_f8_gelu(
    int32_t transB, int64_t m, int64_t n, int64_t k, const void *a,
    int32_t aFormat, const void *b, int32_t bFormat, const float *scaleA,
    const float *scaleB, const void *bias, const float *outScale, void *out,
    int32_t outFormat, void *pre, float *amax) {
  if (!transB)
    failInStep("anvil_rt_cuda_gemm_f8_gelu: cuBLASLt's FP8 GEMM takes B with K "
               "innermost (n x k, row-major), got k x n (anvil-decompose "
               "fp8-gemms=f8-k-inner lays it out so)");
  if (!bias || !pre || !outScale || !amax)
    failInStep(
        "anvil_rt_cuda_gemm_f8_gelu: the bias, pre, the output scale and "
        "the amax are all required");
  if (m <= 0 || n <= 0)
    failInStep("anvil_rt_cuda_gemm_f8_gelu: an empty product (" +
               std::to_string(m) + " x " + std::to_string(n) +
               ") has no amax for AMAX_D to write");
  if (outFormat == 1 && aFormat != 1 && bFormat != 1)
    failInStep(
        "anvil_rt_cuda_gemm_f8_gelu: cuBLASLt's FP8 GEMM writes E5M2 codes "
        "only from an E5M2 operand; both are E4M3");
  Output o{out, fp8Type(outFormat), n, bias, pre, outScale, amax};
  ltGemm("anvil_rt_cuda_gemm_f8_gelu", m, n, k, a, aFormat, k, b, bFormat, k,
         scaleA, scaleB, o, 1, 0, 0, 0);
}
