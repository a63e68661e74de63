//===- Lt.cpp - the CUDA runtime's cuBLASLt handle ------------------------===//

#include "Lt.h"

#include "anvil/runtime/Cuda.h"

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

namespace {

std::atomic<bool> forcedFallback{false};
/// The bf16 matmuls queued (bf16LtGemms).
std::atomic<int64_t> queued{0};

} // namespace

void anvil::rt::cuda::setGemmFallback(bool on) { forcedFallback = on; }
bool anvil::rt::cuda::gemmFallback() { return forcedFallback; }
int64_t anvil::rt::cuda::bf16LtGemms() { return queued; }

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

cublasStatus_t setStridedBatch(cublasLtMatrixLayout_t layout, int64_t batch,
                               int64_t stride) {
  int32_t count = static_cast<int32_t>(batch);
  if (cublasStatus_t s = cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
      s != CUBLAS_STATUS_SUCCESS)
    return s;
  return cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
      sizeof stride);
}

cublasStatus_t createPreference(cublasLtMatmulPreference_t *preference) {
  if (cublasStatus_t s = cublasLtMatmulPreferenceCreate(preference);
      s != CUBLAS_STATUS_SUCCESS)
    return s;
  size_t workspace = kWorkspaceBytes;
  return cublasLtMatmulPreferenceSetAttribute(
      *preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof workspace);
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

const char *epilogueName(cublasLtEpilogue_t epilogue) {
  switch (epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    return "DEFAULT";
  case CUBLASLT_EPILOGUE_BIAS:
    return "BIAS";
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    return "GELU_AUX_BIAS";
  case CUBLASLT_EPILOGUE_GELU_BIAS:
    return "GELU_BIAS";
  case CUBLASLT_EPILOGUE_BGRADA:
    return "BGRADA";
  case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    return "DGELU_BGRAD";
  default:
    return "another epilogue";
  }
}

bool bf16Gemm(const char *caller, const Bf16Gemm &g, bool mayFallBack,
              const std::function<std::string()> &what) {
  // A failure in a graph capture is recorded, and sets `failed` (the GEMM
  // then returns without queuing anything); otherwise it aborts.
  bool failed = false;
  auto check = [&](cublasStatus_t s, const char *call) {
    if (s == CUBLAS_STATUS_SUCCESS || failed)
      return;
    std::string message = std::string(call) +
                          " failed: " + cublasGetStatusName(s) + ", for " +
                          what();
    if (!recordCaptureFailure(message))
      failInStep(message);
    failed = true;
  };
  // cuBLASLt's rule for the auxiliary matrix's leading dimension.
  if (g.aux && g.rows % 8 != 0)
    failInStep(std::string(caller) +
               ": cuBLASLt's GELU epilogues need the product's columns (n = " +
               std::to_string(g.rows) + ") to be a multiple of 8, for " +
               what() + " (anvil-gemm-epilogues fuses only such GEMMs)");
  const Handle &h = handle(caller);
  Descriptors desc;
  check(cublasLtMatmulDescCreate(&desc.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  cudaDataType_t bf16 = CUDA_R_16BF;
  int64_t ldd = g.ldd ? g.ldd : g.rows;
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
  if (g.bias) {
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias,
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bf16, sizeof bf16,
        "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  }
  if (g.aux) {
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof g.aux,
        "cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_POINTER)");
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ldd, sizeof ldd,
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
  check(cublasLtMatrixLayoutCreate(&desc.d, g.dType, g.rows, g.cols, ldd),
        "cublasLtMatrixLayoutCreate(D)");
  // A strided batch: each layout's count and offset (C is D).
  if (g.batch != 1)
    for (auto [layout, stride] :
         {std::pair{desc.a, g.strideA}, std::pair{desc.b, g.strideB},
          std::pair{desc.d, g.strideD}})
      check(setStridedBatch(layout, g.batch, stride),
            "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT, "
            "STRIDED_BATCH_OFFSET)");
  check(createPreference(&desc.preference),
        "cublasLtMatmulPreferenceCreate(MAX_WORKSPACE_BYTES)");
  for (auto [attribute, pointer] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.a},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.b},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                  static_cast<const void *>(g.d)},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                  static_cast<const void *>(g.d)}}) {
    uint32_t bytes = alignment(pointer);
    check(cublasLtMatmulPreferenceSetAttribute(desc.preference, attribute,
                                               &bytes, sizeof bytes),
          "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  }
  if (failed)
    return true;
  // The heuristic's choice, once per form, shape and alignment: a step
  // runs the same GEMMs every time (and a graph capture must not run it).
  // An absent one is remembered too.
  std::array<int64_t, 22> key = {mayFallBack && gemmFallback(),
                                 static_cast<int64_t>(g.epilogue),
                                 g.opA,
                                 g.opB,
                                 g.rows,
                                 g.cols,
                                 g.depth,
                                 g.lda,
                                 g.ldb,
                                 ldd,
                                 g.strideA,
                                 g.strideB,
                                 g.strideD,
                                 g.batch,
                                 static_cast<int64_t>(g.dType),
                                 g.accumulate,
                                 g.bias != nullptr,
                                 alignment(g.a),
                                 alignment(g.b),
                                 alignment(g.d),
                                 alignment(g.aux),
                                 alignment(g.bias)};
  static std::mutex cacheMutex;
  static std::map<std::array<int64_t, 22>, std::optional<cublasLtMatmulAlgo_t>>
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
    // No heuristic for the configuration is no algorithm too, and so is
    // any failure of a GEMM with a fallback (a layout cuBLAS takes).
    if (status == CUBLAS_STATUS_NOT_SUPPORTED ||
        (mayFallBack && status != CUBLAS_STATUS_SUCCESS))
      found = 0;
    else
      check(status, "cublasLtMatmulAlgoGetHeuristic");
    if (failed)
      return true;
    // (setGemmFallback: as if there were none.)
    if (mayFallBack && gemmFallback())
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
  const float one = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
  auto start = std::chrono::steady_clock::now();
  check(cublasLtMatmul(h.handle, desc.op, &one, g.a, desc.a, g.b, desc.b, &beta,
                       g.d, desc.d, g.d, desc.d, &**cached, h.workspace,
                       kWorkspaceBytes,
                       static_cast<cudaStream_t>(stepStream())),
        "cublasLtMatmul");
  if (!failed)
    ++queued;
  if (failed || launchMode() != LaunchMode::Sync)
    return true; // queued on the step stream; the step's end waits for it
  if (Status st = synchronizeStepStream(what().c_str()); !st.isOk())
    failInStep(st.message());
  if (profiling())
    profileAdd(
        std::string("cuBLASLt ") + epilogueName(g.epilogue) +
            (g.dType == CUDA_R_32F ? " f32 D " : " bf16 D ") +
            (g.batch != 1 ? std::to_string(g.batch) + "x" : "") +
            std::to_string(g.cols) + "x" + std::to_string(g.rows) + "x" +
            std::to_string(g.depth),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  return true;
}

} // namespace anvil::rt::cuda::lt
