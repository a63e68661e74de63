//===- Blas.cpp - GEMMs of generated code through OpenBLAS ----------------===//
//
// The CPU backend turns every f32 matmul and batch matmul into one call of
// anvil_rt_sgemm; this forwards each batch entry to cblas_sgemm, whose
// kernels are tuned per microarchitecture and threaded over the cores. A
// GEMM of 8-bit float operands (anvil_rt_gemm_f8) or of bf16 operands
// (anvil_rt_gemm_bf16) widens them to f32 first.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/DType.h"
#include "anvil/runtime/RuntimeABI.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

extern "C" void anvil_rt_sgemm(int32_t transA, int32_t transB, int64_t m,
                               int64_t n, int64_t k, const float *a,
                               int64_t lda, int64_t strideA, const float *b,
                               int64_t ldb, int64_t strideB, float *c,
                               int64_t ldc, int64_t strideC, int64_t batch,
                               int32_t accumulate) {
  const float beta = accumulate ? 1.0f : 0.0f;
  for (int64_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), 1.0f,
                a + i * strideA, static_cast<blasint>(lda), b + i * strideB,
                static_cast<blasint>(ldb), beta, c + i * strideC,
                static_cast<blasint>(ldc));
}

namespace {

/// The f32 value of every code of an 8-bit format: E4M3 (`f8E4M3FN`: bias
/// 7, 3 mantissa bits, no infinities, S.1111.111 NaN) or E5M2 (bias 15, 2
/// mantissa bits, IEEE infinities and NaNs).
std::array<float, 256> decodeTable(int32_t format) {
  std::array<float, 256> table{};
  int mantissaBits = format == 1 ? 2 : 3, bias = format == 1 ? 15 : 7;
  int exponentMax = format == 1 ? 31 : 15;
  for (int code = 0; code < 256; ++code) {
    int sign = code >> 7;
    int exponent = (code >> mantissaBits) & exponentMax;
    int mantissa = code & ((1 << mantissaBits) - 1);
    float magnitude;
    if (format == 0 && exponent == 15 && mantissa == 7)
      magnitude = NAN;
    else if (format == 1 && exponent == 31)
      magnitude = mantissa ? NAN : INFINITY;
    else if (exponent == 0)
      magnitude =
          std::ldexp(static_cast<float>(mantissa), 1 - bias - mantissaBits);
    else
      magnitude = std::ldexp(static_cast<float>(mantissa + (1 << mantissaBits)),
                             exponent - bias - mantissaBits);
    table[code] = sign ? -magnitude : magnitude;
  }
  return table;
}

/// The elements an operand of `batch` matrices of `rows` x `cols` (as
/// stored, row stride `ld`, batch stride `stride`) spans: 0 when empty.
int64_t spanOf(int64_t rows, int64_t cols, int64_t ld, int64_t stride,
               int64_t batch) {
  if (rows <= 0 || cols <= 0 || batch <= 0)
    return 0;
  int64_t span = (rows - 1) * ld + cols;
  return stride == 0 || batch == 1 ? span : (batch - 1) * stride + span;
}

/// The f32 value of every code of `format` (0 E4M3, 1 E5M2).
const std::array<float, 256> &valuesOf(int32_t format) {
  static const std::array<float, 256> e4m3 = decodeTable(0),
                                      e5m2 = decodeTable(1);
  return format == 1 ? e5m2 : e4m3;
}

/// `x`'s code in `format`, as anvil.cast writes it: to nearest, ties to
/// the even code; a magnitude beyond the largest finite one (infinities
/// too) is that one; NaN is the format's NaN; the sign is kept (-0 too).
uint8_t encodeF8(float x, int32_t format) {
  const std::array<float, 256> &values = valuesOf(format);
  const uint8_t largest = format == 1 ? 0x7B : 0x7E,
                nan = format == 1 ? 0x7E : 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x))
    return static_cast<uint8_t>(sign | nan);
  float magnitude = std::fabs(x);
  if (magnitude >= values[largest])
    return static_cast<uint8_t>(sign | largest);
  // Codes 0 to `largest` are the non-negative values in increasing order.
  auto above =
      std::upper_bound(values.begin(), values.begin() + largest + 1, magnitude);
  auto hi = static_cast<uint8_t>(above - values.begin());
  auto lo = static_cast<uint8_t>(hi - 1);
  // The midpoint of two neighbouring codes' values is exact in double.
  double mid = (static_cast<double>(values[lo]) + values[hi]) / 2;
  uint8_t code = magnitude < mid ? lo
                 : magnitude > mid
                     ? hi
                     : (lo % 2 == 0 ? lo : hi); // the even mantissa
  return static_cast<uint8_t>(sign | code);
}

/// An 8-bit operand (see spanOf) widened to f32 in `out` at the same
/// offsets.
void widen(const void *x, int32_t format, int64_t rows, int64_t cols,
           int64_t ld, int64_t stride, int64_t batch, std::vector<float> &out) {
  const std::array<float, 256> &table = valuesOf(format);
  out.resize(static_cast<size_t>(spanOf(rows, cols, ld, stride, batch)));
  const auto *codes = static_cast<const uint8_t *>(x);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = table[codes[i]];
}

/// A bf16 operand (see spanOf) widened to f32 in `out`: a bf16 value's bits
/// are the high half of the f32 with the same value.
void widenBF16(const uint16_t *x, int64_t rows, int64_t cols, int64_t ld,
               int64_t stride, int64_t batch, std::vector<float> &out) {
  out.resize(static_cast<size_t>(spanOf(rows, cols, ld, stride, batch)));
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(&out[i], &bits, sizeof bits);
  }
}

} // namespace

extern "C" void anvil_rt_gemm_f8(int32_t transA, int32_t transB, int64_t m,
                                 int64_t n, int64_t k, const void *a,
                                 int32_t aFormat, int64_t lda, int64_t strideA,
                                 const void *b, int32_t bFormat, int64_t ldb,
                                 int64_t strideB, const float *scaleA,
                                 const float *scaleB, const void *bias, void *d,
                                 int32_t dBf16, int64_t ldd, int64_t strideD,
                                 int64_t batch) {
  // The widened operands: the products of 8-bit values are exact in f32,
  // so BLAS on them computes the 8-bit GEMM with f32 accumulation.
  thread_local std::vector<float> wideA, wideB, sums;
  widen(a, aFormat, transA ? k : m, transA ? m : k, lda, strideA, batch, wideA);
  widen(b, bFormat, transB ? n : k, transB ? k : n, ldb, strideB, batch, wideB);
  // The sums in D itself (f32) or, for a bf16 D, in (batch, m, n).
  float *c = static_cast<float *>(d);
  int64_t ldc = ldd, strideC = strideD;
  if (dBf16) {
    sums.resize(static_cast<size_t>(batch * m * n));
    c = sums.data();
    ldc = n;
    strideC = m * n;
  }
  anvil_rt_sgemm(transA, transB, m, n, k, wideA.data(), lda, strideA,
                 wideB.data(), ldb, strideB, c, ldc, strideC, batch,
                 /*accumulate=*/0);
  const float scale = *scaleA * *scaleB;
  // Column j's bias (bf16; 0 without one).
  auto biasOf = [&](int64_t j) {
    return bias
               ? anvil::rt::fromBF16Bits(static_cast<const uint16_t *>(bias)[j])
               : 0.0f;
  };
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) {
        float x = c[i * strideC + r * ldc + j] * scale + biasOf(j);
        if (dBf16)
          static_cast<uint16_t *>(d)[i * strideD + r * ldd + j] =
              anvil::rt::toBF16Bits(x);
        else
          c[i * strideC + r * ldc + j] = x;
      }
}

namespace {

/// The scratch of bf16Panels, one per thread.
struct PanelScratch {
  std::vector<float> wideA, wideB, panel;
};
PanelScratch &panelScratch() {
  thread_local PanelScratch scratch;
  return scratch;
}

/// The f32 products of `batch` pairs of bf16 operands (anvil_rt_sgemm's
/// layouts), widened exactly, a panel of rows at a time (at most 4M floats
/// of scratch): `epilogue(i, row0, rows, panel)` for each panel of batch
/// entry i, the panel (rows x n) contiguous.
template <typename Epilogue>
void bf16Panels(int32_t transA, int32_t transB, int64_t m, int64_t n, int64_t k,
                const uint16_t *a, int64_t lda, int64_t strideA,
                const uint16_t *b, int64_t ldb, int64_t strideB, int64_t batch,
                Epilogue epilogue) {
  auto &[wideA, wideB, panel] = panelScratch();
  widenBF16(a, transA ? k : m, transA ? m : k, lda, strideA, batch, wideA);
  widenBF16(b, transB ? n : k, transB ? k : n, ldb, strideB, batch, wideB);
  const int64_t rows = std::clamp<int64_t>(
      (int64_t{1} << 22) / std::max<int64_t>(n, 1), 1, std::max<int64_t>(m, 1));
  panel.resize(static_cast<size_t>(rows * n));
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r0 = 0; r0 < m; r0 += rows) {
      int64_t h = std::min(rows, m - r0);
      // Rows r0.. of A: row r0 of (m, k), or column r0 of (k, m).
      const float *a0 = wideA.data() + i * strideA + (transA ? r0 : r0 * lda);
      anvil_rt_sgemm(transA, transB, h, n, k, a0, lda, 0,
                     wideB.data() + i * strideB, ldb, 0, panel.data(), n, 0, 1,
                     /*accumulate=*/0);
      epilogue(i, r0, h, panel.data());
    }
}

} // namespace

extern "C" void anvil_rt_gemm_bf16_rounded(int32_t transA, int32_t transB,
                                           int64_t m, int64_t n, int64_t k,
                                           const uint16_t *a, int64_t lda,
                                           int64_t strideA, const uint16_t *b,
                                           int64_t ldb, int64_t strideB,
                                           uint16_t *c, int64_t ldc,
                                           int64_t strideC, int64_t batch) {
  // Each value of the f32 product rounded (toBF16Bits) as the generated
  // code's truncf rounds (anvil-expand-f8-casts{bf16}).
  bf16Panels(transA, transB, m, n, k, a, lda, strideA, b, ldb, strideB, batch,
             [&](int64_t i, int64_t r0, int64_t rows, const float *panel) {
               for (int64_t r = 0; r < rows; ++r)
                 for (int64_t j = 0; j < n; ++j)
                   c[i * strideC + (r0 + r) * ldc + j] =
                       anvil::rt::toBF16Bits(panel[r * n + j]);
             });
}

extern "C" void anvil_rt_gemm_bf16(int32_t transA, int32_t transB, int64_t m,
                                   int64_t n, int64_t k, const uint16_t *a,
                                   int64_t lda, int64_t strideA,
                                   const uint16_t *b, int64_t ldb,
                                   int64_t strideB, float *c, int64_t ldc,
                                   int64_t strideC, int64_t batch,
                                   int32_t accumulate) {
  // Products of two bf16 values (8 significant bits each) are exact in f32.
  thread_local std::vector<float> wideA, wideB;
  widenBF16(a, transA ? k : m, transA ? m : k, lda, strideA, batch, wideA);
  widenBF16(b, transB ? n : k, transB ? k : n, ldb, strideB, batch, wideB);
  anvil_rt_sgemm(transA, transB, m, n, k, wideA.data(), lda, strideA,
                 wideB.data(), ldb, strideB, c, ldc, strideC, batch,
                 accumulate);
}

namespace {

/// GELU's tanh approximation in f32, in the order of operations of the
/// generated code's anvil.gelu.
float geluTanh(float x) {
  float u = x + x * (x * x) * 0.044715f;
  return x * 0.5f * (1.0f + std::tanh(u * 0.7978845608028654f));
}

/// Its derivative, in the order of anvil.gelu's VJP:
/// (1 + t) / 2 + x (1 - t^2) c (1 + 3 a x^2) / 2, t = tanh(c (x + a x^3)).
float geluTanhDerivative(float x) {
  const float c = 0.7978845608028654f, a = 0.044715f;
  float x2 = x * x;
  float t = std::tanh((x + x2 * x * a) * c);
  float du = (1.0f + x2 * (3.0f * a)) * c;
  return 0.5f * (1.0f + t) + (0.5f * x) * ((1.0f - t * t) * du);
}

} // namespace

extern "C" void anvil_rt_gemm_bias(int32_t transB, int64_t m, int64_t n,
                                   int64_t k, const uint16_t *a,
                                   const uint16_t *b, const uint16_t *bias,
                                   uint16_t *out) {
  bf16Panels(0, transB, m, n, k, a, k, 0, b, transB ? k : n, 0, 1,
             [&](int64_t, int64_t r0, int64_t rows, const float *panel) {
               for (int64_t r = 0; r < rows; ++r)
                 for (int64_t j = 0; j < n; ++j)
                   out[(r0 + r) * n + j] = anvil::rt::toBF16Bits(
                       panel[r * n + j] + anvil::rt::fromBF16Bits(bias[j]));
             });
}

extern "C" void anvil_rt_gemm_bias_gelu(int32_t transB, int64_t m, int64_t n,
                                        int64_t k, const uint16_t *a,
                                        const uint16_t *b, const uint16_t *bias,
                                        uint16_t *out, uint16_t *pre) {
  bf16Panels(0, transB, m, n, k, a, k, 0, b, transB ? k : n, 0, 1,
             [&](int64_t, int64_t r0, int64_t rows, const float *panel) {
               for (int64_t r = 0; r < rows; ++r)
                 for (int64_t j = 0; j < n; ++j) {
                   float x =
                       panel[r * n + j] + anvil::rt::fromBF16Bits(bias[j]);
                   if (pre)
                     pre[(r0 + r) * n + j] = anvil::rt::toBF16Bits(x);
                   out[(r0 + r) * n + j] = anvil::rt::toBF16Bits(geluTanh(x));
                 }
             });
}

extern "C" void anvil_rt_gemm_dgelu_bgrad(int32_t transB, int64_t m, int64_t n,
                                          int64_t k, const uint16_t *a,
                                          const uint16_t *b,
                                          const uint16_t *pre,
                                          uint16_t *preGrad,
                                          uint16_t *biasGrad) {
  // The bias's gradient summed in f32, in row order, then rounded.
  thread_local std::vector<float> sums;
  sums.assign(static_cast<size_t>(n), 0.0f);
  bf16Panels(0, transB, m, n, k, a, k, 0, b, transB ? k : n, 0, 1,
             [&](int64_t, int64_t r0, int64_t rows, const float *panel) {
               for (int64_t r = 0; r < rows; ++r)
                 for (int64_t j = 0; j < n; ++j) {
                   int64_t at = (r0 + r) * n + j;
                   float d =
                       panel[r * n + j] *
                       geluTanhDerivative(anvil::rt::fromBF16Bits(pre[at]));
                   preGrad[at] = anvil::rt::toBF16Bits(d);
                   sums[j] += d;
                 }
             });
  for (int64_t j = 0; j < n; ++j)
    biasGrad[j] = anvil::rt::toBF16Bits(sums[j]);
}

extern "C" void anvil_rt_gemm_weight_bias_grad(int64_t m, int64_t k, int64_t n,
                                               const uint16_t *x,
                                               const uint16_t *grad,
                                               uint16_t *weightGrad,
                                               uint16_t *biasGrad) {
  // x^T grad: x stored (m, k) is A transposed.
  anvil_rt_gemm_bf16_rounded(1, 0, k, n, m, x, k, 0, grad, n, 0, weightGrad, n,
                             0, 1);
  // The bias's gradient summed in f32, in row order, then rounded.
  std::vector<float> sums(static_cast<size_t>(n), 0.0f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j)
      sums[j] += anvil::rt::fromBF16Bits(grad[r * n + j]);
  for (int64_t j = 0; j < n; ++j)
    biasGrad[j] = anvil::rt::toBF16Bits(sums[j]);
}

extern "C" void anvil_rt_gemm_f8_gelu(int32_t transB, int64_t m, int64_t n,
                                      int64_t k, const void *a, int32_t aFormat,
                                      const void *b, int32_t bFormat,
                                      const float *scaleA, const float *scaleB,
                                      const void *bias, const float *outScale,
                                      void *out, int32_t outFormat, void *pre,
                                      float *amax) {
  // The scaled sums, in f32: the FP8 GEMM's.
  thread_local std::vector<float> scaled;
  scaled.resize(static_cast<size_t>(m * n));
  anvil_rt_gemm_f8(0, transB, m, n, k, a, aFormat, k, 0, b, bFormat,
                   transB ? k : n, 0, scaleA, scaleB, /*bias=*/nullptr,
                   scaled.data(), /*dBf16=*/0, n, 0, 1);
  const float s = *outScale;
  const auto *biasBits = static_cast<const uint16_t *>(bias);
  auto *codes = static_cast<uint8_t *>(out);
  auto *preBits = static_cast<uint16_t *>(pre);
  float largest = 0.0f;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      int64_t at = r * n + j;
      float p = scaled[at] + anvil::rt::fromBF16Bits(biasBits[j]);
      float g = geluTanh(p);
      preBits[at] = anvil::rt::toBF16Bits(p);
      codes[at] = encodeF8(g * s, outFormat);
      float magnitude = std::fabs(g);
      if (!std::isnan(largest) && !(magnitude <= largest))
        largest = magnitude; // a larger magnitude, or NaN (which stays)
    }
  *amax = largest;
}
