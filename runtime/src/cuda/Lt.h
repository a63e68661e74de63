//===- Lt.h - the CUDA runtime's cuBLASLt handle (private) ------*- C++ -*-===//
//
// One cuBLASLt handle and one workspace per process, shared by every
// cuBLASLt GEMM (FP8, and bf16 with or without epilogues): they run one at a
// time on the step stream, so one workspace serves them all; and the bf16
// matmul those of bf16 (Gemm.cpp's, GemmEpilogue.cpp's) share.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_SRC_CUDA_LT_H
#define ANVIL_RUNTIME_SRC_CUDA_LT_H

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

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

/// Makes `layout` a strided batch of `batch` matrices `stride` elements
/// apart (its BATCH_COUNT, int32, and STRIDED_BATCH_OFFSET, int64): the
/// first failure's status.
cublasStatus_t setStridedBatch(cublasLtMatrixLayout_t layout, int64_t batch,
                               int64_t stride);

/// Creates `*preference` with kWorkspaceBytes as the most workspace the
/// matmul may take (the handle's workspace): the first failure's status.
cublasStatus_t createPreference(cublasLtMatmulPreference_t *preference);

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

/// One cuBLASLt matmul of bf16 operands, f32 compute, in its own
/// (column-major) terms: D (rows x cols, leading dimension ldd, rows when
/// 0) = op(A) op(B) (+ D with `accumulate`), op(A) rows x depth and op(B)
/// depth x cols, each stored column-major with its leading dimension;
/// `batch` such products at the strides (in elements; 0: one matrix for
/// every product); D bf16 or f32 (`dType`); the epilogue's bias vector and
/// auxiliary matrix (D's layout; null: none), both bf16.
struct Bf16Gemm {
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  cublasOperation_t opA = CUBLAS_OP_N, opB = CUBLAS_OP_N;
  int64_t rows = 0, cols = 0, depth = 0;
  const void *a = nullptr;
  int64_t lda = 0, strideA = 0;
  const void *b = nullptr;
  int64_t ldb = 0, strideB = 0;
  const void *bias = nullptr, *aux = nullptr;
  void *d = nullptr;
  int64_t ldd = 0, strideD = 0;
  cudaDataType_t dType = CUDA_R_16BF;
  int64_t batch = 1;
  bool accumulate = false;
};

/// The name of an epilogue, for messages and the profile.
const char *epilogueName(cublasLtEpilogue_t epilogue);

/// Queues `g` on the step stream (the heuristic's algorithm, chosen once
/// per form, shape and alignment). Returns false, having queued nothing,
/// when cuBLASLt has no algorithm for it and `mayFallBack` (or, with
/// setGemmFallback, always then); fails, naming `caller` and `what()` and
/// the step, on any other error (recorded instead during a graph capture).
bool bf16Gemm(const char *caller, const Bf16Gemm &g, bool mayFallBack,
              const std::function<std::string()> &what);

} // namespace anvil::rt::cuda::lt

#endif // ANVIL_RUNTIME_SRC_CUDA_LT_H
