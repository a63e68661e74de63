//===- GemmF8Test.cpp - anvil_rt_gemm_f8 and _gemm_bf16 on the CPU --------===//
//
// The CPU's 8-bit GEMM widens its operands exactly: every code's value
// (the formats' edges: zeros, subnormals, the largest finite values,
// infinities and NaNs), and the layouts anvil_rt_sgemm takes (transposes,
// row strides wider than the matrix, batches, a B shared by the batch); it
// scales the sums and writes them as f32 or rounded to bf16.
// The bf16 GEMM widens its operands the same way. The GEMMs with GELU
// epilogues match their formulas; the FP8 one's codes round as anvil.cast
// does, at every code, midpoint and beyond the largest.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/RuntimeABI.h"

#include "NumericReference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

using anvil::test::decodeFp8;
using anvil::test::encodeFp8;
using anvil::test::fromBF16;
using anvil::test::toBF16;

/// d = a * b for one code each (1 x 1 x 1, scales 1). (BLAS's sums do not
/// keep the sign of a zero.)
float product(uint8_t a, int32_t aFormat, uint8_t b, int32_t bFormat) {
  float d = 0.0f, one = 1.0f;
  anvil_rt_gemm_f8(0, 0, 1, 1, 1, &a, aFormat, 1, 0, &b, bFormat, 1, 0, &one,
                   &one, /*bias=*/nullptr, &d, /*dBf16=*/0, 1, 0, 1);
  return d;
}

constexpr uint8_t kOneE4M3 = 0x38, kOneE5M2 = 0x3C;

TEST(GemmF8, WidensEveryEdgeOfE4M3) {
  auto value = [](uint8_t code) { return product(code, 0, kOneE5M2, 1); };
  EXPECT_EQ(value(0x00), 0.0f);
  EXPECT_EQ(value(0xB8), -1.0f);
  EXPECT_EQ(value(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  EXPECT_EQ(value(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(value(0x08), std::ldexp(1.0f, -6)); // smallest normal
  EXPECT_EQ(value(kOneE4M3), 1.0f);
  EXPECT_EQ(value(0x7E), 448.0f); // largest finite
  EXPECT_EQ(value(0xFE), -448.0f);
  EXPECT_TRUE(std::isnan(value(0x7F)));
  EXPECT_TRUE(std::isnan(value(0xFF)));
}

TEST(GemmF8, WidensEveryEdgeOfE5M2) {
  auto value = [](uint8_t code) { return product(kOneE4M3, 0, code, 1); };
  EXPECT_EQ(value(0x01), std::ldexp(1.0f, -16)); // smallest subnormal
  EXPECT_EQ(value(0x04), std::ldexp(1.0f, -14)); // smallest normal
  EXPECT_EQ(value(kOneE5M2), 1.0f);
  EXPECT_EQ(value(0x7B), 57344.0f); // largest finite
  EXPECT_EQ(value(0x7C), INFINITY);
  EXPECT_EQ(value(0xFC), -INFINITY);
  EXPECT_TRUE(std::isnan(value(0x7D)));
  EXPECT_TRUE(std::isnan(value(0xFF)));
}

/// One of the layouts anvil_rt_sgemm takes for `batch` products of m x k
/// by k x n: each transpose, a B shared by the batch or not, rows stored 3
/// elements wider than needed.
struct Layout {
  int transA, transB;
  bool sharedB;
  int64_t lda, ldb, ldc, strideA, strideB, strideC;
  size_t aSize, bSize, cSize; ///< Elements each buffer holds.
  /// Where op(A)[t][i][l], op(B)[t][l][j] and C[t][i][j] are stored.
  int64_t a(int64_t t, int64_t i, int64_t l) const {
    return t * strideA + (transA ? l * lda + i : i * lda + l);
  }
  int64_t b(int64_t t, int64_t l, int64_t j) const {
    return t * strideB + (transB ? j * ldb + l : l * ldb + j);
  }
  int64_t c(int64_t t, int64_t i, int64_t j) const {
    return t * strideC + i * ldc + j;
  }
};

std::vector<Layout> everyLayout(int64_t m, int64_t n, int64_t k,
                                int64_t batch) {
  std::vector<Layout> layouts;
  for (int transA : {0, 1})
    for (int transB : {0, 1})
      for (bool sharedB : {false, true}) {
        Layout l{transA, transB, sharedB};
        int64_t aRows = transA ? k : m, aCols = transA ? m : k;
        int64_t bRows = transB ? n : k, bCols = transB ? k : n;
        l.lda = aCols + 3;
        l.ldb = bCols + 3;
        l.ldc = n + 3;
        l.strideA = aRows * l.lda;
        l.strideB = sharedB ? 0 : bRows * l.ldb;
        l.strideC = m * l.ldc;
        l.aSize = static_cast<size_t>(batch * l.strideA);
        l.bSize = static_cast<size_t>(batch * bRows * l.ldb);
        l.cSize = static_cast<size_t>(batch * l.strideC);
        layouts.push_back(l);
      }
  return layouts;
}

/// Runs `gemm` (anvil_rt_sgemm's arguments, operands stored as `T`) in
/// every layout; accumulating (C 0.5 before: C += A B) and not (C NaN
/// before, not read: C = A B). `draw(isB)` makes each stored element of A
/// (isB false) or B and `value(x, isB)` its value; C is checked against a
/// float64 sum of the same values.
template <typename T, typename Draw, typename Value, typename Gemm>
void checkLayouts(Draw draw, Value value, Gemm gemm) {
  const int64_t m = 5, n = 7, k = 9, batch = 3;
  for (int accumulate : {1, 0})
    for (const Layout &l : everyLayout(m, n, k, batch)) {
      std::vector<T> a(l.aSize), b(l.bSize);
      for (T &x : a)
        x = draw(false);
      for (T &x : b)
        x = draw(true);
      std::vector<float> c(l.cSize, accumulate ? 0.5f : NAN);
      gemm(l.transA, l.transB, m, n, k, a.data(), l.lda, l.strideA, b.data(),
           l.ldb, l.strideB, c.data(), l.ldc, l.strideC, batch, accumulate);
      for (int64_t t = 0; t < batch; ++t)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = accumulate ? 0.5 : 0.0;
            for (int64_t p = 0; p < k; ++p)
              want += static_cast<double>(value(a[l.a(t, i, p)], false)) *
                      value(b[l.b(t, p, j)], true);
            ASSERT_NEAR(c[l.c(t, i, j)], want, 1e-5 * (std::abs(want) + 1.0))
                << "accumulate " << accumulate << " transA " << l.transA
                << " transB " << l.transB << (l.sharedB ? " shared B" : "")
                << ", C[" << t << ", " << i << ", " << j << "]";
          }
    }
}

/// A finite code of moderate size: the products are exact and the sums
/// round alike. E4M3 (format 0) or E5M2 (1).
uint8_t moderateCode(std::mt19937 &rng, int32_t format) {
  int exponentBits = format == 1 ? 5 : 4, mantissaBits = 7 - exponentBits;
  int exponent = (1 << (exponentBits - 1)) - 3 + static_cast<int>(rng() % 6);
  int mantissa = static_cast<int>(rng() % (1u << mantissaBits));
  return static_cast<uint8_t>(((rng() & 1) << 7) | (exponent << mantissaBits) |
                              mantissa);
}

// D = sA sB op(A) op(B) (+ a bf16 bias per column, into bf16) in every
// layout anvil_rt_sgemm takes (each transpose, a B shared by the batch or
// not, rows stored wider than needed), into f32 and into bf16 (the scaled
// f32 sum plus the bias rounded to bf16); D starts as NaN and is
// overwritten; the columns past n are not written. A in E4M3, B in E5M2.
TEST(GemmF8, ScalesAndRoundsInEveryLayout) {
  std::mt19937 rng(3);
  const int64_t m = 5, n = 7, k = 9, batch = 3;
  const float scaleA = 0.5f, scaleB = 0.375f;
  // Column j's bias: j / 4 - 1, exact in bf16.
  std::vector<float> bias32(n);
  std::vector<uint16_t> bias16(n);
  for (int64_t j = 0; j < n; ++j) {
    bias32[j] = static_cast<float>(j) / 4 - 1;
    bias16[j] = toBF16(bias32[j]);
  }
  // (A bias only with a bf16 D.)
  for (auto [dBf16, withBias] :
       {std::pair{0, false}, std::pair{1, false}, std::pair{1, true}})
    for (const Layout &l : everyLayout(m, n, k, batch)) {
      const void *bias = withBias ? bias16.data() : nullptr;
      std::vector<uint8_t> a(l.aSize), b(l.bSize);
      for (uint8_t &x : a)
        x = moderateCode(rng, 0);
      for (uint8_t &x : b)
        x = moderateCode(rng, 1);
      std::vector<float> d32(l.cSize, NAN);
      std::vector<uint16_t> d16(l.cSize, 0x7FC0);
      void *d = dBf16 ? static_cast<void *>(d16.data()) : d32.data();
      anvil_rt_gemm_f8(l.transA, l.transB, m, n, k, a.data(), 0, l.lda,
                       l.strideA, b.data(), 1, l.ldb, l.strideB, &scaleA,
                       &scaleB, bias, d, dBf16, l.ldc, l.strideC, batch);
      for (int64_t t = 0; t < batch; ++t)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < l.ldc; ++j) {
            int64_t at = l.c(t, i, j);
            SCOPED_TRACE(::testing::Message()
                         << (dBf16 ? "bf16" : "f32") << " D"
                         << (withBias ? " with a bias" : "") << ", transA "
                         << l.transA << " transB " << l.transB
                         << (l.sharedB ? " shared B" : "") << ", D[" << t
                         << ", " << i << ", " << j << "]");
            if (j >= n) { // between the rows: untouched
              if (dBf16)
                EXPECT_EQ(d16[at], 0x7FC0);
              else
                EXPECT_TRUE(std::isnan(d32[at]));
              continue;
            }
            double sum = 0.0;
            for (int64_t p = 0; p < k; ++p)
              sum +=
                  decodeFp8(a[l.a(t, i, p)], 0) * decodeFp8(b[l.b(t, p, j)], 1);
            double want = sum * (scaleA * scaleB) + (withBias ? bias32[j] : 0);
            if (dBf16) // the f32 value rounded: half a bf16 step
              ASSERT_NEAR(fromBF16(d16[at]), want,
                          std::ldexp(std::abs(want), -8) + 1e-6);
            else
              ASSERT_NEAR(d32[at], want, 1e-5 * (std::abs(want) + 1.0));
          }
    }
}

// The bf16 D is the scaled f32 value rounded to nearest even, ties to the
// even significand: 1 + 2^-8 (halfway between 1 and 1 + 2^-7) to 1, and
// 1 + 3 * 2^-8 (halfway between 1 + 2^-7 and 1 + 2^-6) to 1 + 2^-6.
TEST(GemmF8, RoundsTheScaledSumOnceToBf16) {
  // A = [1, 2^-8] (E4M3 1 = 0x38, 2^-8 = 0x02: subnormal 2 * 2^-9), B = 1.
  uint8_t a[2] = {0x38, 0x02}, b[2] = {0x3C, 0x3C};
  float two = 2.0f, half = 0.5f;
  uint16_t d = 0;
  anvil_rt_gemm_f8(0, 1, 1, 1, 2, a, 0, 2, 0, b, 1, 2, 0, &two, &half, nullptr,
                   &d, 1, 1, 0, 1);
  EXPECT_EQ(fromBF16(d), 1.0f); // 1 + 2^-8 is the tie between 1 and 1 + 2^-7
  a[1] = 0x06;                  // 3 * 2^-8 = 6 * 2^-9
  anvil_rt_gemm_f8(0, 1, 1, 1, 2, a, 0, 2, 0, b, 1, 2, 0, &two, &half, nullptr,
                   &d, 1, 1, 0, 1);
  EXPECT_EQ(fromBF16(d), 1.0f + std::ldexp(1.0f, -6));
  // A bias is added before the rounding: 1 + 2^-8 - 2^-9 (the bias -2^-9,
  // bf16) is below the tie, so 1; + 2^-9 above it, so 1 + 2^-7.
  a[1] = 0x02;
  for (auto [biasValue, want] :
       {std::pair{-std::ldexp(1.0f, -9), 1.0f},
        {std::ldexp(1.0f, -9), 1.0f + std::ldexp(1.0f, -7)}}) {
    uint16_t bias = toBF16(biasValue);
    anvil_rt_gemm_f8(0, 1, 1, 1, 2, a, 0, 2, 0, b, 1, 2, 0, &two, &half, &bias,
                     &d, 1, 1, 0, 1);
    EXPECT_EQ(fromBF16(d), want) << "bias " << biasValue;
  }
}

TEST(GemmBF16, WidensExactly) {
  // 1 x 1 x 1 products of edge values: each operand must reach BLAS as
  // exactly the f32 value of its bits.
  auto product = [](float a, float b) {
    uint16_t ha = toBF16(a), hb = toBF16(b);
    float c = 0.0f;
    anvil_rt_gemm_bf16(0, 0, 1, 1, 1, &ha, 1, 0, &hb, 1, 0, &c, 1, 0, 1,
                       /*accumulate=*/1);
    return c;
  };
  EXPECT_EQ(product(1.0f, -2.0f), -2.0f);
  // The smallest subnormal and the largest finite bf16.
  EXPECT_EQ(product(std::ldexp(1.0f, -133), 1.0f), std::ldexp(1.0f, -133));
  float largest = std::ldexp(255.0f, 120);
  EXPECT_EQ(product(largest, 1.0f), largest);
  EXPECT_EQ(product(INFINITY, 1.0f), INFINITY);
  EXPECT_TRUE(std::isnan(product(NAN, 1.0f)));
  // 8 significant bits each: the product's 16 are exact in f32.
  float x = 1.0f + std::ldexp(127.0f, -7), y = 1.0f + std::ldexp(1.0f, -7);
  EXPECT_EQ(product(x, y), x * y);
}

TEST(GemmBF16, TakesSgemmLayouts) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-2, 2);
  checkLayouts<uint16_t>([&](bool) { return toBF16(dist(rng)); },
                         [](uint16_t h, bool) { return fromBF16(h); },
                         anvil_rt_gemm_bf16);
}

/// The f32 value `x` rounded to bf16 bits, to nearest even, subnormals
/// kept: what anvil_rt_gemm_bf16_rounded must write (computed in double).
uint16_t roundedBits(float x) {
  if (std::isnan(x))
    return 0x7FC0;
  if (std::isinf(x) || x == 0.0f)
    return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16);
  int e = std::max(std::ilogb(x), -126); // subnormals: the fixed quantum
  double step = std::ldexp(1.0, e - 7);
  double r = std::nearbyint(static_cast<double>(x) / step) * step; // even
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(r)) >>
                               16);
}

TEST(GemmBF16Rounded, RoundsToNearestEvenKeepingSubnormals) {
  // 1 x 1 x 1 products: the f32 product rounded once to bf16.
  auto rounded = [](float a, float b) {
    uint16_t ha = toBF16(a), hb = toBF16(b), c = 0xFFFF;
    anvil_rt_gemm_bf16_rounded(0, 0, 1, 1, 1, &ha, 1, 0, &hb, 1, 0, &c, 1, 0,
                               1);
    return c;
  };
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14: below halfway, down to 1 + 2^-6.
  float x = 1.0f + std::ldexp(1.0f, -7);
  EXPECT_EQ(fromBF16(rounded(x, x)), 1.0f + std::ldexp(1.0f, -6));
  // Exact ties go to the even neighbour: 1.5 (1 + 2^-7) = 1.1000001|1 in
  // binary rounds up to 1.1000010; 1.5 (1 + 3 2^-7) = 1.1000100|1 down to
  // 1.1000100.
  EXPECT_EQ(fromBF16(rounded(1.5f, x)), 1.5f + std::ldexp(1.0f, -6));
  EXPECT_EQ(fromBF16(rounded(1.5f, 1.0f + std::ldexp(3.0f, -7))),
            1.5f + std::ldexp(1.0f, -5));
  // Subnormal products (2^-130 is a bf16 subnormal): kept, not flushed.
  float tiny = std::ldexp(1.0f, -70), tinier = std::ldexp(3.0f, -62);
  EXPECT_EQ(rounded(tiny, tinier), roundedBits(tiny * tinier));
  EXPECT_NE(rounded(tiny, tinier), 0);
  EXPECT_EQ(fromBF16(rounded(tiny, tinier)), std::ldexp(3.0f, -132));
  // Overflow past the largest finite bf16 rounds to infinity.
  float big = std::ldexp(255.0f, 120);
  EXPECT_EQ(rounded(big, 1.0f + std::ldexp(1.0f, -7)), 0x7F80);
  EXPECT_TRUE(std::isnan(fromBF16(rounded(NAN, 1.0f))));
}

TEST(GemmBF16Rounded, MatchesTheRoundedF32ProductInEveryLayout) {
  // Against anvil_rt_gemm_bf16's f32 C, rounded: transposes, a shared B,
  // batches, and a C with wider rows and batch strides whose gaps stay.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-2, 2);
  const int64_t m = 7, n = 5, k = 9, batch = 2, ldc = n + 3,
                strideC = m * ldc + 4;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (bool shared : {false, true}) {
        int64_t lda = ta ? m : k, ldb = tb ? k : n;
        std::vector<uint16_t> a(batch * m * k), b((shared ? 1 : batch) * k * n);
        for (uint16_t &v : a)
          v = toBF16(dist(rng));
        for (uint16_t &v : b)
          v = toBF16(dist(rng));
        int64_t strideB = shared ? 0 : k * n;
        std::vector<float> wide(batch * m * n);
        anvil_rt_gemm_bf16(ta, tb, m, n, k, a.data(), lda, m * k, b.data(), ldb,
                           strideB, wide.data(), n, m * n, batch, 0);
        std::vector<uint16_t> c(batch * strideC, 0xABCD);
        anvil_rt_gemm_bf16_rounded(ta, tb, m, n, k, a.data(), lda, m * k,
                                   b.data(), ldb, strideB, c.data(), ldc,
                                   strideC, batch);
        for (int64_t i = 0; i < batch; ++i)
          for (int64_t r = 0; r < m; ++r)
            for (int64_t j = 0; j < ldc; ++j) {
              uint16_t got = c[i * strideC + r * ldc + j];
              if (j < n)
                EXPECT_EQ(got, roundedBits(wide[(i * m + r) * n + j]))
                    << ta << tb << shared << " at " << i << "," << r << ","
                    << j;
              else
                EXPECT_EQ(got, 0xABCD) << "a gap was written";
            }
      }
}

} // namespace

namespace {

double geluTanh(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

double geluTanhDerivative(double x) {
  const double c = std::sqrt(2 / M_PI), a = 0.044715;
  double t = std::tanh(c * (x + a * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * a * x * x);
}

/// One bf16 step at `x`'s binade: how far a value computed in another
/// order (f32 sums against double) may round from it.
double bf16Step(double x) {
  return x == 0 ? 1e-30 : std::ldexp(1.0, std::ilogb(x) - 7);
}

} // namespace

// The GEMMs with GELU epilogues against the formulas in double: the f32
// sums round to within one bf16 step of the double's rounding (two for the
// GELU, whose f32 tanh adds its own error), the bias's gradient summed over
// the rows likewise.
TEST(GemmEpilogues, MatchTheFormulasInDouble) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t m = 13, n = 16, k = 11;
  for (int tb = 0; tb < 2; ++tb) {
    std::vector<uint16_t> a(m * k), b(k * n), bias(n), pre(m * n), out(m * n),
        dPre(m * n), dBias(n);
    for (std::vector<uint16_t> *v : {&a, &b, &bias, &pre})
      for (uint16_t &x : *v)
        x = toBF16(2 * dist(rng));
    auto product = [&](int64_t i, int64_t j) {
      double sum = 0;
      for (int64_t q = 0; q < k; ++q)
        sum += double(fromBF16(a[i * k + q])) *
               fromBF16(tb ? b[j * k + q] : b[q * n + j]);
      return sum;
    };
    // (dPre holds the forward's pre here.)
    anvil_rt_gemm_bias_gelu(tb, m, n, k, a.data(), b.data(), bias.data(),
                            out.data(), dPre.data());
    std::vector<double> sums(n, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double p = product(i, j) + fromBF16(bias[j]);
        ASSERT_LE(std::abs(fromBF16(dPre[i * n + j]) - p), bf16Step(p))
            << "pre, transB " << tb << " at " << i << ", " << j;
        double y = geluTanh(p);
        ASSERT_LE(std::abs(fromBF16(out[i * n + j]) - y),
                  2 * bf16Step(y) + 1e-6)
            << "out, transB " << tb << " at " << i << ", " << j;
      }
    // The gradient, through the `pre` drawn above.
    anvil_rt_gemm_dgelu_bgrad(tb, m, n, k, a.data(), b.data(), pre.data(),
                              dPre.data(), dBias.data());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double d = product(i, j) * geluTanhDerivative(fromBF16(pre[i * n + j]));
        sums[j] += d;
        ASSERT_LE(std::abs(fromBF16(dPre[i * n + j]) - d),
                  2 * bf16Step(d) + 1e-6)
            << "pre's gradient, transB " << tb << " at " << i << ", " << j;
      }
    for (int64_t j = 0; j < n; ++j)
      ASSERT_LE(std::abs(fromBF16(dBias[j]) - sums[j]),
                2 * bf16Step(sums[j]) + 1e-5)
          << "bias's gradient, transB " << tb << " at " << j;
  }
}

// The bias alone (anvil_rt_gemm_bias): a b + bias within a bf16 step of
// the double sum, for either layout of b and a width that is not a
// multiple of 8 (the CPU's function takes any; the compiler calls it for
// multiples of 8, as cuBLASLt's).
TEST(GemmEpilogues, BiasMatchesDouble) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t m = 13, n = 12, k = 11;
  for (int tb = 0; tb < 2; ++tb) {
    std::vector<uint16_t> a(m * k), b(k * n), bias(n), out(m * n, 0xFFFF);
    for (std::vector<uint16_t> *v : {&a, &b, &bias})
      for (uint16_t &x : *v)
        x = toBF16(2 * dist(rng));
    anvil_rt_gemm_bias(tb, m, n, k, a.data(), b.data(), bias.data(),
                       out.data());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double p = fromBF16(bias[j]);
        for (int64_t q = 0; q < k; ++q)
          p += double(fromBF16(a[i * k + q])) *
               fromBF16(tb ? b[j * k + q] : b[q * n + j]);
        ASSERT_LE(std::abs(fromBF16(out[i * n + j]) - p), bf16Step(p))
            << "transB " << tb << " at " << i << ", " << j;
      }
  }
}

// A weight's gradient with its bias's: x^T g within a bf16 step of the
// double product, and the rows' sums likewise.
TEST(GemmEpilogues, WeightAndBiasGradientsMatchDouble) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t m = 19, k = 7, n = 12;
  std::vector<uint16_t> x(m * k), g(m * n), dw(k * n), db(n);
  for (uint16_t &v : x)
    v = toBF16(dist(rng));
  for (uint16_t &v : g)
    v = toBF16(dist(rng));
  anvil_rt_gemm_weight_bias_grad(m, k, n, x.data(), g.data(), dw.data(),
                                 db.data());
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t r = 0; r < m; ++r)
        want += double(fromBF16(x[r * k + i])) * fromBF16(g[r * n + j]);
      ASSERT_LE(std::abs(fromBF16(dw[i * n + j]) - want), bf16Step(want))
          << i << ", " << j;
    }
  for (int64_t j = 0; j < n; ++j) {
    double want = 0;
    for (int64_t r = 0; r < m; ++r)
      want += fromBF16(g[r * n + j]);
    ASSERT_LE(std::abs(fromBF16(db[j]) - want), bf16Step(want)) << j;
  }
}

// The FP8 linear layer with its GELU (anvil_rt_gemm_f8_gelu) on
// InterpTest.LinearGeluF8's values: E4M3 A (2 x 2) times E5M2 B^T, scales
// 0.5 and 0.375, bias (-1, 0.5): p = (-0.34375, 168.6875, -0.90625,
// -335.40625); pre in bf16; the codes of 3 gelu(p) in E4M3 (-0.377 to
// -0.375, 506 saturated to 448, -0.496 to -0.5, gelu(-335.4) = -0); the
// amax of gelu(p), before the scale.
TEST(GemmF8Gelu, ScalesAddsTheBiasAndQuantizesTheGelu) {
  const uint8_t a[4] = {kOneE4M3, 0x40, 0x30, 0xC8}; // 1, 2, 0.5, -4
  const uint8_t b[4] = {0x42, 0x34, kOneE5M2, 0x5F}; // 3, 0.25, 1, 448
  const float scaleA = 0.5f, scaleB = 0.375f, outScale = 3.0f;
  const uint16_t bias[2] = {toBF16(-1.0f), toBF16(0.5f)};
  uint8_t codes[4];
  uint16_t pre[4];
  float amax = -1.0f;
  anvil_rt_gemm_f8_gelu(1, 2, 2, 2, a, 0, b, 1, &scaleA, &scaleB, bias,
                        &outScale, codes, 0, pre, &amax);
  const float expectedPre[4] = {-0.34375f, 169.0f, -0.90625f, -336.0f};
  const double expectedCodes[4] = {-0.375, 448, -0.5, 0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(fromBF16(pre[i]), expectedPre[i]) << i;
    EXPECT_EQ(decodeFp8(codes[i], 0), expectedCodes[i]) << i;
  }
  EXPECT_EQ(codes[3], 0x80); // -0
  EXPECT_EQ(amax, 168.6875f);
}

// Every code's value, every midpoint between neighbouring codes and the
// bf16 values on either side of it, and magnitudes beyond the largest, as
// biases of a GEMM whose sums are 0: gelu is the identity there (p >= 8:
// tanh rounds to 1), and the output scale (a power of two) brings p to
// the code's range exactly, so each code is the cast's of p outScale.
TEST(GemmF8Gelu, RoundsToNearestEvenAndSaturatesLikeTheCast) {
  for (int32_t format : {0, 1}) {
    SCOPED_TRACE(format == 0 ? "E4M3" : "E5M2");
    const int largest = format == 1 ? 0x7B : 0x7E;
    const float up = format == 1 ? 0x1p20f : 0x1p16f;
    std::vector<float> targets;
    for (int code = 0; code <= largest; ++code) {
      double v = decodeFp8(static_cast<uint8_t>(code), format);
      targets.push_back(static_cast<float>(v));
      double next = code < largest
                        ? decodeFp8(static_cast<uint8_t>(code + 1), format)
                        : 2 * v;
      float mid = static_cast<float>((v + next) / 2);
      targets.push_back(mid);
      // bf16's neighbours of the midpoint (of p = mid up).
      float p = mid * up;
      targets.push_back(fromBF16(static_cast<uint16_t>(toBF16(p) - 1)) / up);
      targets.push_back(fromBF16(static_cast<uint16_t>(toBF16(p) + 1)) / up);
    }
    targets.push_back(static_cast<float>(
        1024 * decodeFp8(static_cast<uint8_t>(largest), format)));
    const int64_t n = static_cast<int64_t>(targets.size()), k = 16;
    std::vector<uint16_t> bias(n);
    for (int64_t j = 0; j < n; ++j) {
      bias[j] = toBF16(targets[j] * up);
      ASSERT_EQ(fromBF16(bias[j]), targets[j] * up) << j; // exact in bf16
    }
    std::vector<uint8_t> a(k, 0), b(n * k, 0), codes(n);
    std::vector<uint16_t> pre(n);
    const float one = 1.0f, down = 1.0f / up;
    float amax = -1.0f;
    anvil_rt_gemm_f8_gelu(1, 1, n, k, a.data(), 0, b.data(), 0, &one, &one,
                          bias.data(), &down, codes.data(), format, pre.data(),
                          &amax);
    float largestTarget = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(codes[j], encodeFp8(targets[j], format))
          << "target " << targets[j];
      EXPECT_EQ(pre[j], bias[j]);
      largestTarget = std::max(largestTarget, targets[j] * up);
    }
    EXPECT_EQ(amax, largestTarget);
  }
}
