//===- Blas.cpp - GEMMs of generated code through OpenBLAS ----------------===//
//
// The CPU backend turns every f32 matmul and batch matmul into one call of
// anvil_rt_sgemm; this forwards each batch entry to cblas_sgemm, whose
// kernels are tuned per microarchitecture and threaded over the cores.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/RuntimeABI.h"

#include <cblas.h>

extern "C" void anvil_rt_sgemm(int32_t transA, int32_t transB, int64_t m,
                               int64_t n, int64_t k, const float *a,
                               int64_t lda, int64_t strideA, const float *b,
                               int64_t ldb, int64_t strideB, float *c,
                               int64_t ldc, int64_t strideC, int64_t batch) {
  for (int64_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), 1.0f,
                a + i * strideA, static_cast<blasint>(lda), b + i * strideB,
                static_cast<blasint>(ldb), 1.0f, c + i * strideC,
                static_cast<blasint>(ldc));
}
