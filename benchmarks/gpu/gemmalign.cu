//===- gemmalign.cu - cuBLAS bf16 GEMMs at odd and padded leading dims ----===//
//
// What anvil-cpu-pad-gemm-rows buys: GPT-2 124M's head runs three bf16
// GEMMs over the logits (8192 tokens x 50257 words x 768), each with the
// logits' row stride as a leading dimension. At 50257 (2-byte aligned rows)
// cuBLAS cannot use its 16-byte-aligned kernels; the pass pads the rows to
// 50304. This times each GEMM as the generated code calls it
// (cublasGemmStridedBatchedEx_64, bf16 operands and result, f32 compute,
// the runtime's anvil_rt_cuda_gemm_bf16_rounded), with the logits' leading
// dimension 50257 and then 50304 (the same m, n, k), each the median of 20
// launches after 3 warm-up launches, and prints TFLOP/s and the ratio
// padded / unpadded time measured in the same run:
//
//   logits   logits = x W^T        (8192 x 50257, k 768; C's ld)
//   dx       dx = dlogits W         (8192 x 768, k 50257; A's ld)
//   dw       dW = dlogits^T x       (50257 x 768, k 8192; A's ld)
//
//   nvcc -O3 -arch=sm_90 gemmalign.cu -lcublas -o gemmalign && ./gemmalign
//
//===----------------------------------------------------------------------===//
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return;
  std::fprintf(stderr, "gemmalign: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

void check(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return;
  std::fprintf(stderr, "gemmalign: %s: cuBLAS status %d\n", what,
               static_cast<int>(s));
  std::exit(1);
}

constexpr int64_t kTokens = 8192, kVocab = 50257, kPadded = 50304, kWidth = 768;

/// Row-major C (m x n) = op(A) op(B), as the runtime calls cuBLAS (column
/// major: C^T = op(B)^T op(A)^T).
struct Gemm {
  const char *name;
  bool transA, transB;
  int64_t m, n, k;
  const void *a;
  int64_t lda;
  const void *b;
  int64_t ldb;
  void *c;
  int64_t ldc;
};

double millis(cublasHandle_t handle, const Gemm &g) {
  const float one = 1.0f, zero = 0.0f;
  auto run = [&] {
    check(cublasGemmStridedBatchedEx_64(
              handle, g.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
              g.transA ? CUBLAS_OP_T : CUBLAS_OP_N, g.n, g.m, g.k, &one, g.b,
              CUDA_R_16BF, g.ldb, 0, g.a, CUDA_R_16BF, g.lda, 0, &zero, g.c,
              CUDA_R_16BF, g.ldc, 0, 1, CUBLAS_COMPUTE_32F,
              CUBLAS_GEMM_DEFAULT),
          g.name);
  };
  for (int i = 0; i < 3; ++i)
    run();
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> times;
  for (int i = 0; i < 20; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main() {
  cublasHandle_t handle;
  check(cublasCreate(&handle), "cublasCreate");
  // bf16 buffers of random bits in [-1, 1): x, W, and the logits (or their
  // gradient) at the padded size, which both leading dimensions fit.
  auto buffer = [](int64_t elements) {
    void *p = nullptr;
    check(cudaMalloc(&p, elements * 2), "cudaMalloc");
    std::vector<uint16_t> host(elements);
    uint32_t state = 12345;
    for (uint16_t &v : host) {
      state = state * 1664525u + 1013904223u;
      // A bf16 of magnitude below 1: sign, exponent 0x70-0x7e, mantissa.
      v = static_cast<uint16_t>(((state >> 16) & 0x807f) |
                                ((0x70 + (state >> 8) % 15) << 7));
    }
    check(cudaMemcpy(p, host.data(), elements * 2, cudaMemcpyHostToDevice),
          "cudaMemcpy");
    return p;
  };
  void *x = buffer(kTokens * kWidth), *w = buffer(kVocab * kWidth);
  void *logits = buffer(kTokens * kPadded), *dx = buffer(kTokens * kWidth);
  void *dw = buffer(kVocab * kWidth);
  std::printf("gemmalign: cuBLAS bf16 GEMMs of GPT-2 124M's head, the "
              "logits' leading dimension %lld against %lld\n",
              static_cast<long long>(kVocab), static_cast<long long>(kPadded));
  double total[2] = {0, 0};
  for (int64_t ld : {kVocab, kPadded}) {
    const Gemm gemms[] = {
        {"logits", false, true, kTokens, kVocab, kWidth, x, kWidth, w, kWidth,
         logits, ld},
        {"dx", false, false, kTokens, kWidth, kVocab, logits, ld, w, kWidth, dx,
         kWidth},
        {"dw", true, false, kVocab, kWidth, kTokens, logits, ld, x, kWidth, dw,
         kWidth},
    };
    for (const Gemm &g : gemms) {
      double ms = millis(handle, g);
      total[ld == kPadded] += ms;
      std::printf("gemmalign: %-6s ld %5lld: %8.3f ms, %6.1f TFLOP/s\n", g.name,
                  static_cast<long long>(ld), ms,
                  2.0 * g.m * g.n * g.k / (ms * 1e-3) / 1e12);
    }
  }
  std::printf("ratio: head GEMMs, padded rows / odd rows (time) = %.3f\n",
              total[1] / total[0]);
  cublasDestroy(handle);
  return 0;
}
