//===- CudaTest.cpp - the CUDA device (label gpu) -------------------------===//
//
// Tests that need a GPU skip themselves where initialize() finds none (and
// say why); ctest counts them as skipped. The error formatting needs none.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/Dist.h"
#include "anvil/runtime/RuntimeABI.h"

#include "AttentionCheck.h"
#include "ConvProblems.h"
#include "NumericReference.h"
#include "ScaleKernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using namespace anvil::rt;
namespace check = anvil::test;
using anvil::test::decodeFp8;
using anvil::test::fromBF16;
using anvil::test::kScalePtx;
using anvil::test::launchScale;
using anvil::test::toBF16;

namespace {

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    Status st = cuda::initialize();                                            \
    if (!st.isOk())                                                            \
      GTEST_SKIP() << st.message();                                            \
  } while (0)

/// Skips unless the GPU has FP8 tensor cores (sm_89 or newer), which
/// cuBLASLt's FP8 GEMM needs.
#define SKIP_WITHOUT_FP8_GEMMS()                                               \
  do {                                                                         \
    SKIP_WITHOUT_GPU();                                                        \
    Expected<cuda::DeviceInfo> info = cuda::currentDevice();                   \
    ASSERT_TRUE(info.hasValue());                                              \
    if (info->computeMajor * 10 + info->computeMinor < 89)                     \
      GTEST_SKIP() << "FP8 GEMMs need sm_89 or newer; this is sm_"             \
                   << info->computeMajor << info->computeMinor;                \
  } while (0)

TEST(CudaDevice, InitializesOrSaysWhy) {
  Status st = cuda::initialize();
  if (!st.isOk()) {
    EXPECT_EQ(st.code(), ErrorCode::Unavailable);
    EXPECT_EQ(st.message().rfind("CUDA: ", 0), 0u) << st.message();
    GTEST_SKIP() << st.message();
  }
  Expected<cuda::DeviceInfo> info = cuda::currentDevice();
  ASSERT_TRUE(info.hasValue()) << info.status().message();
  EXPECT_FALSE(info->name.empty());
  EXPECT_GT(info->memoryBytes, 0);
  EXPECT_GE(info->computeMajor, 7);
  EXPECT_GT(info->multiprocessors, 0);
}

TEST(CudaDevice, DescribesDriverErrors) {
  cuda::setCurrentStep(12);
  std::string message =
      cuda::describeDriverError(1, "cuLaunchKernel", "kernel 'k'");
  cuda::setCurrentStep(-1);
  // CUDA_ERROR_INVALID_VALUE is 1; without a driver there is no name.
  EXPECT_TRUE(message.rfind("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE",
                            0) == 0 ||
              message.rfind("cuLaunchKernel failed: CUDA error 1", 0) == 0)
      << message;
  EXPECT_NE(message.find(", for kernel 'k', at step 12"), std::string::npos)
      << message;
  EXPECT_EQ(cuda::describeDriverError(1, "cuInit", "").find("step"),
            std::string::npos);
}

TEST(CudaDevice, LaunchesAKernel) {
  SKIP_WITHOUT_GPU();
  void *module = mgpuModuleLoad(const_cast<char *>(kScalePtx), 0);
  void *scale = mgpuModuleGetFunction(module, "scale");
  EXPECT_EQ(cuda::kernelName(scale), "scale");
  const int32_t n = 1000; // not a multiple of the block: the guard matters
  auto *x = static_cast<float *>(anvil_rt_cuda_alloc(n * sizeof(float)));
  for (int32_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i);
  launchScale(scale, x, 0.5f, n, (n + 255) / 256, 256);
  // Queued on the step stream (synchronized only with
  // ANVIL_CUDA_LAUNCHES=sync): wait before the host reads.
  ASSERT_TRUE(cuda::synchronizeStepStream("scale").isOk());
  for (int32_t i = 0; i < n; ++i)
    ASSERT_EQ(x[i], 0.5f * static_cast<float>(i)) << "at " << i;
  anvil_rt_cuda_free(x);
  mgpuModuleUnload(module);
}

TEST(CudaDevice, ReportsTheMemoryInUse) {
  if (Status st = cuda::initialize(); !st.isOk()) {
    EXPECT_EQ(anvil_rt_device_memory_used(), -1);
    GTEST_SKIP() << st.message();
  }
  int64_t before = anvil_rt_device_memory_used();
  ASSERT_GE(before, 0);
  // Device memory (cuMemAlloc) counts once allocated; managed memory only
  // once it lives on the device.
  constexpr int64_t kBytes = int64_t(64) << 20;
  void *workspace = anvil_rt_workspace_alloc(kBytes);
  int64_t during = anvil_rt_device_memory_used();
  anvil_rt_workspace_free(workspace);
  EXPECT_GE(during - before, kBytes);
}

/// Row-major reference of anvil_rt_sgemm's contract.
void referenceGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const std::vector<float> &a, int64_t lda, int64_t sa,
                   const std::vector<float> &b, int64_t ldb, int64_t sb,
                   std::vector<float> &c, int64_t ldc, int64_t sc,
                   int64_t batch, bool accumulate) {
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < n; ++col) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          float x = ta ? a[i * sa + p * lda + r] : a[i * sa + r * lda + p];
          float y = tb ? b[i * sb + col * ldb + p] : b[i * sb + p * ldb + col];
          sum += static_cast<double>(x) * y;
        }
        float &out = c[i * sc + r * ldc + col];
        out = (accumulate ? out : 0.0f) + static_cast<float>(sum);
      }
}

/// Checks a device GEMM with anvil_rt_sgemm's contract against the host's
/// for every transpose and a shared B, on random A, B and C (C += A B: the
/// old C counts), and overwriting a C of NaNs (accumulate 0: C = A B, the
/// old C not read). `Element` is what the device call reads (float, or the
/// bits of a bf16: the host reference multiplies the same values).
template <typename Element, typename Call>
void checkGemm(Call call, float tolerance) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto stored = [](float x) {
    if constexpr (std::is_same_v<Element, float>)
      return x;
    else
      return toBF16(x);
  };
  auto value = [](Element x) {
    if constexpr (std::is_same_v<Element, float>)
      return x;
    else
      return fromBF16(x);
  };
  const int64_t m = 37, n = 53, k = 29, batch = 3;
  for (int accumulate : {1, 0})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (bool sharedB : {false, true}) {
          int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
          int64_t sa = m * k, sb = sharedB ? 0 : k * n, sc = m * n;
          std::vector<Element> a(batch * sa), b(sharedB ? k * n : batch * sb);
          std::vector<float> wideA(a.size()), wideB(b.size()), c(batch * sc);
          for (size_t i = 0; i < a.size(); ++i)
            wideA[i] = value(a[i] = stored(dist(rng)));
          for (size_t i = 0; i < b.size(); ++i)
            wideB[i] = value(b[i] = stored(dist(rng)));
          for (float &v : c)
            v = accumulate ? dist(rng) : NAN;
          auto *da = static_cast<Element *>(
              anvil_rt_cuda_alloc(a.size() * sizeof(Element)));
          auto *db = static_cast<Element *>(
              anvil_rt_cuda_alloc(b.size() * sizeof(Element)));
          auto *dc = static_cast<float *>(anvil_rt_cuda_alloc(c.size() * 4));
          std::copy(a.begin(), a.end(), da);
          std::copy(b.begin(), b.end(), db);
          std::copy(c.begin(), c.end(), dc);
          call(ta, tb, m, n, k, da, lda, sa, db, ldb, sb, dc, ldc, sc, batch,
               accumulate);
          ASSERT_TRUE(cuda::synchronizeStepStream("GEMM").isOk());
          referenceGemm(ta, tb, m, n, k, wideA, lda, sa, wideB, ldb, sb, c, ldc,
                        sc, batch, accumulate);
          for (size_t i = 0; i < c.size(); ++i)
            ASSERT_NEAR(dc[i], c[i], tolerance)
                << "accumulate " << accumulate << " transA " << ta << " transB "
                << tb << " shared B " << sharedB << " at " << i;
          anvil_rt_cuda_free(da);
          anvil_rt_cuda_free(db);
          anvil_rt_cuda_free(dc);
        }
}

TEST(CudaDevice, SgemmMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  checkGemm<float>(anvil_rt_cuda_sgemm, 1e-4f);
}

/// cuda::setGemmFallback for a scope (off again at its end, an assertion's
/// early return included).
struct GemmFallback {
  explicit GemmFallback(bool on) { cuda::setGemmFallback(on); }
  ~GemmFallback() { cuda::setGemmFallback(false); }
  GemmFallback(const GemmFallback &) = delete;
  GemmFallback &operator=(const GemmFallback &) = delete;
};

TEST(CudaDevice, Bf16GemmMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  // The products of bf16 values are exact; the tensor cores accumulate in
  // f32, in their own order. On cuBLASLt, and on its fallback, cuBLAS.
  for (bool fallback : {false, true}) {
    SCOPED_TRACE(fallback ? "cuBLAS (the fallback)" : "cuBLASLt");
    GemmFallback path(fallback);
    checkGemm<uint16_t>(anvil_rt_cuda_gemm_bf16, 1e-4f);
  }
}

TEST(CudaDevice, Bf16GemmsRunOnCublasLt) {
  SKIP_WITHOUT_GPU();
  // An aligned bf16 GEMM is a cuBLASLt matmul; with the fallback forced,
  // cuBLAS's GEMM.
  const int64_t n = 64;
  uint16_t *a = nullptr, *b = nullptr, *c = nullptr;
  for (uint16_t **p : {&a, &b, &c}) {
    *p = static_cast<uint16_t *>(anvil_rt_cuda_alloc(n * n * 2));
    std::fill(*p, *p + n * n, toBF16(0.5f));
  }
  for (bool fallback : {false, true}) {
    GemmFallback path(fallback);
    int64_t before = cuda::bf16LtGemms();
    anvil_rt_cuda_gemm_bf16_rounded(0, 0, n, n, n, a, n, 0, b, n, 0, c, n, 0,
                                    1);
    ASSERT_TRUE(cuda::synchronizeStepStream("bf16 GEMM").isOk());
    EXPECT_EQ(cuda::bf16LtGemms() - before, fallback ? 0 : 1)
        << (fallback ? "cuBLAS (the fallback)" : "cuBLASLt");
    for (int64_t i = 0; i < n * n; ++i)
      ASSERT_EQ(fromBF16(c[i]), 16.0f) << "at " << i; // 64 x 0.25
  }
  for (uint16_t *p : {a, b, c})
    anvil_rt_cuda_free(p);
}

TEST(CudaDevice, Bf16RoundedGemmMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  // C written in bf16: each value the f32 product rounded to nearest even,
  // as the CPU's anvil_rt_gemm_bf16_rounded writes it. The two f32 sums
  // differ in order, so a value may round to the neighbouring bf16: within
  // one bf16 step (of the host's value's binade) of it.
  // On cuBLASLt, and on its fallback, cuBLAS.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t m = 37, n = 53, k = 29, batch = 3;
  for (int path = 0; path < 8; ++path) {
    bool fallback = path >= 4;
    int ta = path & 1, tb = (path >> 1) & 1;
    GemmFallback library(fallback);
    {
      int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
      std::vector<uint16_t> a(batch * m * k), b(batch * k * n),
          host(batch * m * n);
      for (uint16_t &x : a)
        x = toBF16(dist(rng));
      for (uint16_t &x : b)
        x = toBF16(dist(rng));
      auto *da = static_cast<uint16_t *>(anvil_rt_cuda_alloc(a.size() * 2));
      auto *db = static_cast<uint16_t *>(anvil_rt_cuda_alloc(b.size() * 2));
      auto *dc = static_cast<uint16_t *>(anvil_rt_cuda_alloc(host.size() * 2));
      std::copy(a.begin(), a.end(), da);
      std::copy(b.begin(), b.end(), db);
      std::fill(dc, dc + host.size(), uint16_t{0x7FC0}); // NaN: overwritten
      anvil_rt_cuda_gemm_bf16_rounded(ta, tb, m, n, k, da, lda, m * k, db, ldb,
                                      k * n, dc, ldc, m * n, batch);
      ASSERT_TRUE(cuda::synchronizeStepStream("bf16 GEMM").isOk());
      anvil_rt_gemm_bf16_rounded(ta, tb, m, n, k, a.data(), lda, m * k,
                                 b.data(), ldb, k * n, host.data(), ldc, m * n,
                                 batch);
      for (size_t i = 0; i < host.size(); ++i) {
        float want = fromBF16(host[i]), got = fromBF16(dc[i]);
        float step =
            want == 0.0f ? 1e-30f : std::ldexp(1.0f, std::ilogb(want) - 7);
        ASSERT_LE(std::abs(got - want), step)
            << (fallback ? "cuBLAS (the fallback)" : "cuBLASLt") << " transA "
            << ta << " transB " << tb << " at " << i;
      }
      anvil_rt_cuda_free(da);
      anvil_rt_cuda_free(db);
      anvil_rt_cuda_free(dc);
    }
  }
}

/// In step `step`, the scale kernel on one float with `threads` threads a
/// block (a death test's statement: the module and buffer are the child's).
void scaleInStep(int64_t step, int64_t threads) {
  void *module = mgpuModuleLoad(const_cast<char *>(kScalePtx), 0);
  void *scale = mgpuModuleGetFunction(module, "scale");
  auto *x = static_cast<float *>(anvil_rt_cuda_alloc(4));
  cuda::setCurrentStep(step);
  launchScale(scale, x, 2.0f, 1, 1, threads);
}

TEST(CudaDeviceDeathTest, ALaunchErrorNamesTheKernelAndTheStep) {
  SKIP_WITHOUT_GPU();
  // A child process of its own: CUDA does not survive fork.
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  EXPECT_DEATH(
      scaleInStep(7, 4096), // > 1024 threads per block
      "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE.*for kernel 'scale' "
      "\\(grid 1x1x1, block 4096x1x1\\), at step 7");
}

TEST(CudaDeviceDeathTest, ALibraryFailureNamesTheStepAndTheKernelBefore) {
  SKIP_WITHOUT_GPU();
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  // A library call's report (here, its arguments refused before the
  // device is touched) says at which step, after which kernel of the step.
  EXPECT_DEATH(
      {
        scaleInStep(3, 32);
        anvil_rt_cuda_attention_f32(nullptr, nullptr, nullptr, nullptr, nullptr,
                                    nullptr, 1, 2, 2, 8, 8, 256, 256, 1.0f, 0,
                                    1, nullptr);
      },
      "anvil_rt_cuda_attention_f32: dim and value dim from 1 to 128 are "
      "supported \\(.*\\), at step 3, after kernel 'scale'");
}

TEST(CudaNccl, AFailureLeavesTheHostCommunicator) {
  std::unique_ptr<Communicator> host = makeSelfCommunicator();
  if (cuda::initialize().isOk())
    GTEST_SKIP() << "a GPU is present: CudaNccl.CollectivesOnOneRank runs";
  Expected<std::unique_ptr<Communicator>> nccl =
      cuda::makeNCCLCommunicator(host, /*wanted=*/true);
  ASSERT_FALSE(nccl.hasValue());
  EXPECT_EQ(nccl.status().code(), ErrorCode::Unavailable);
  ASSERT_NE(host, nullptr) << "the host communicator was consumed";
  EXPECT_EQ(host->transport(), "self");
  // The default hook of the runtime keeps the axis; the CUDA library's
  // falls back to it, with a notice, when NCCL cannot start.
  std::unique_ptr<Communicator> axis =
      deviceAxisCommunicator(makeSelfCommunicator());
  ASSERT_NE(axis, nullptr);
  EXPECT_EQ(axis->transport(), "self");
}

TEST(CudaNccl, CollectivesOnOneRank) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Communicator> host = makeSelfCommunicator();
  Expected<std::unique_ptr<Communicator>> nccl =
      cuda::makeNCCLCommunicator(host, /*wanted=*/true);
  // A GPU machine without NCCL installed: nothing to test here.
  if (!nccl.hasValue() && nccl.status().message().find(
                              "libnccl.so.2 not found") != std::string::npos)
    GTEST_SKIP() << nccl.status().message();
  ASSERT_TRUE(nccl.hasValue()) << nccl.status().message();
  Communicator &c = **nccl;
  EXPECT_EQ(host, nullptr);
  EXPECT_EQ(c.transport().rfind("NCCL 2.", 0), 0u) << c.transport();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  const int64_t n = 1000;
  auto *x = static_cast<float *>(anvil_rt_cuda_alloc(n * sizeof(float)));
  auto *y = static_cast<float *>(anvil_rt_cuda_alloc(n * sizeof(float)));
  ASSERT_TRUE(cuda::isDeviceAddressable(x));
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.25f * static_cast<float>(i) - 7.0f;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max}) {
    ASSERT_TRUE(c.allReduce(x, n, op).isOk()) << reduceOpName(op);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(x[i], 0.25f * static_cast<float>(i) - 7.0f)
          << reduceOpName(op) << " at " << i;
  }
  ASSERT_TRUE(c.allGather(x, n, y).isOk());
  ASSERT_TRUE(c.reduceScatter(y, n, y, ReduceOp::Sum).isOk());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], x[i]) << "at " << i;
  // Host memory goes through the host communicator.
  std::vector<float> h(16, 3.0f);
  EXPECT_FALSE(cuda::isDeviceAddressable(h.data()));
  ASSERT_TRUE(c.allReduce(h.data(), 16, ReduceOp::Sum).isOk());
  EXPECT_EQ(h[7], 3.0f);
  anvil_rt_cuda_free(x);
  anvil_rt_cuda_free(y);
}

/// A random finite code of moderate size (no NaN codes, exponents in the
/// middle), so that every product is exact and the sums round alike.
uint8_t moderateFp8(std::mt19937 &rng, int32_t format) {
  uint8_t exponentBits = format == 1 ? 5 : 4;
  uint8_t mantissaBits = 7 - exponentBits;
  uint8_t exponent =
      static_cast<uint8_t>((1 << (exponentBits - 1)) - 3 + rng() % 6);
  uint8_t mantissa = static_cast<uint8_t>(rng() % (1u << mantissaBits));
  return static_cast<uint8_t>(((rng() & 1) << 7) | (exponent << mantissaBits) |
                              mantissa);
}

/// The f32 value of D's element `at`: f32, or bf16 bits with `dBf16`.
double elementOf(const void *d, bool dBf16, int64_t at) {
  if (!dBf16)
    return static_cast<const float *>(d)[at];
  uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t *>(d)[at])
                  << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The generated code's FP8 GEMM (anvil_rt_cuda_gemm_f8): D = sA sB A B^T
// with the scales as cuBLASLt's scale pointers (in device memory), E4M3 by
// E4M3 or E5M2, into f32 and into bf16 with a bias (the BIAS epilogue).
TEST(CudaGemmF8, ScalesIntoF32AndBf16) {
  SKIP_WITHOUT_FP8_GEMMS();
  const int64_t m = 64, n = 48, k = 96;
  for (int32_t bFormat : {0, 1})
    for (int32_t dBf16 : {0, 1}) {
      auto *a = static_cast<uint8_t *>(anvil_rt_cuda_alloc(m * k));
      auto *b = static_cast<uint8_t *>(anvil_rt_cuda_alloc(n * k));
      void *d = anvil_rt_cuda_alloc(m * n * 4);
      // The scales 16-byte aligned, as cuBLASLt's FP8 GEMM needs.
      auto *scales = static_cast<float *>(anvil_rt_cuda_alloc(8 * 4));
      std::mt19937 rng(8);
      auto pick = [&](int32_t format) { return moderateFp8(rng, format); };
      for (int64_t i = 0; i < m * k; ++i)
        a[i] = pick(0);
      for (int64_t i = 0; i < n * k; ++i)
        b[i] = pick(bFormat);
      scales[0] = 0.5f;
      scales[4] = 0.375f;
      // A bias for each column (j / 4 - 1, exact in bf16), in D's type, on
      // the bf16 runs.
      void *bias = dBf16 ? anvil_rt_cuda_alloc(n * 2) : nullptr;
      for (int64_t j = 0; bias && j < n; ++j)
        static_cast<uint16_t *>(bias)[j] =
            toBF16(static_cast<float>(j) / 4 - 1);
      anvil_rt_cuda_gemm_f8(0, 1, m, n, k, a, 0, k, 0, b, bFormat, k, 0, scales,
                            scales + 4, bias, d, dBf16, n, 0, 1);
      ASSERT_TRUE(cuda::synchronizeStepStream("FP8 GEMM").isOk());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, magnitude = 0;
          for (int64_t l = 0; l < k; ++l) {
            double p =
                decodeFp8(a[i * k + l], 0) * decodeFp8(b[j * k + l], bFormat);
            want += p;
            magnitude += std::abs(p);
          }
          want =
              want * 0.5 * 0.375 + (bias ? static_cast<double>(j) / 4 - 1 : 0);
          magnitude *= 0.5 * 0.375;
          // The tensor cores accumulate with fewer bits than f32 between
          // promotions (seen on an H200: 2.0e-4 of the products'
          // magnitude); bf16 adds half a step of its 8 bits.
          double rounding = dBf16 ? std::ldexp(std::abs(want), -8) : 0.0;
          ASSERT_NEAR(elementOf(d, dBf16, i * n + j), want,
                      1e-3 * magnitude + rounding + 1e-6)
              << "D[" << i << ", " << j << "], B in "
              << (bFormat ? "E5M2" : "E4M3") << ", D in "
              << (dBf16 ? "bf16" : "f32");
        }
      for (void *p : {static_cast<void *>(a), static_cast<void *>(b), d,
                      static_cast<void *>(scales), bias})
        if (p)
          anvil_rt_cuda_free(p);
    }
}

// Batches in the TN form: rows wider than K (lda = ldb = 2k), a batch of
// two with its own B, a B the batch shares with A's and D's rows stacked
// (one product of 2m rows) and not stacked (D's batch stride wider: one
// product per entry); D starts as NaN and is overwritten, f32 and bf16;
// E4M3 by E5M2.
TEST(CudaGemmF8, TakesStridedBatchesInTheTNForm) {
  SKIP_WITHOUT_FP8_GEMMS();
  const int64_t m = 32, n = 48, k = 64, ld = 2 * k, batch = 2;
  auto *scales = static_cast<float *>(anvil_rt_cuda_alloc(8 * 4));
  scales[0] = 2.0f;
  scales[4] = 0.25f;
  enum class B { PerEntry, SharedStacked, SharedApart };
  for (B form : {B::PerEntry, B::SharedStacked, B::SharedApart})
    for (int32_t dBf16 : {0, 1}) {
      const int64_t strideA = m * ld,
                    strideB = form == B::PerEntry ? n * ld : 0,
                    strideD = form == B::SharedApart ? (m + 8) * n : m * n;
      const int64_t bytes = dBf16 ? 2 : 4;
      auto *a = static_cast<uint8_t *>(anvil_rt_cuda_alloc(batch * strideA));
      auto *b = static_cast<uint8_t *>(anvil_rt_cuda_alloc(batch * n * ld));
      void *d = anvil_rt_cuda_alloc(batch * strideD * bytes);
      std::mt19937 rng(9);
      auto pick = [&](int32_t format) { return moderateFp8(rng, format); };
      for (int64_t i = 0; i < batch * strideA; ++i)
        a[i] = pick(0);
      for (int64_t i = 0; i < batch * n * ld; ++i)
        b[i] = pick(1);
      std::memset(d, 0xFF, batch * strideD * bytes); // NaN in both types
      anvil_rt_cuda_gemm_f8(0, 1, m, n, k, a, 0, ld, strideA, b, 1, ld, strideB,
                            scales, scales + 4, nullptr, d, dBf16, n, strideD,
                            batch);
      ASSERT_TRUE(cuda::synchronizeStepStream("FP8 GEMM").isOk());
      for (int64_t t = 0; t < batch; ++t)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0.0, magnitude = 0.0;
            for (int64_t l = 0; l < k; ++l) {
              double p = decodeFp8(a[t * strideA + i * ld + l], 0) *
                         decodeFp8(b[t * strideB + j * ld + l], 1);
              want += p;
              magnitude += std::abs(p);
            }
            want *= 0.5;
            magnitude *= 0.5;
            double rounding = dBf16 ? std::ldexp(std::abs(want), -8) : 0.0;
            ASSERT_NEAR(elementOf(d, dBf16, t * strideD + i * n + j), want,
                        1e-3 * magnitude + rounding + 1e-6)
                << "form " << static_cast<int>(form) << ", D in "
                << (dBf16 ? "bf16" : "f32") << ", D[" << t << ", " << i << ", "
                << j << "]";
          }
      for (void *p : {static_cast<void *>(a), static_cast<void *>(b), d})
        anvil_rt_cuda_free(p);
    }
  anvil_rt_cuda_free(scales);
}

// The FP8 linear layer with its GELU (anvil_rt_cuda_gemm_f8_gelu):
// cuBLASLt's GELU_AUX_BIAS epilogue into E4M3 codes scaled by D's scale
// pointer, the bf16 sum before the GELU, and AMAX_D. The amax starts far
// above the answer, so a GEMM that accumulated into it instead of setting
// it fails; the scale saturates the largest values.
TEST(CudaGemmF8, GeluEpilogueWritesCodesPreAndAmax) {
  SKIP_WITHOUT_FP8_GEMMS();
  const int64_t m = 64, n = 48, k = 96;
  auto *a = static_cast<uint8_t *>(anvil_rt_cuda_alloc(m * k));
  auto *b = static_cast<uint8_t *>(anvil_rt_cuda_alloc(n * k));
  auto *codes = static_cast<uint8_t *>(anvil_rt_cuda_alloc(m * n));
  auto *pre = static_cast<uint16_t *>(anvil_rt_cuda_alloc(m * n * 2));
  auto *bias = static_cast<uint16_t *>(anvil_rt_cuda_alloc(n * 2));
  // The scales, the output scale and the amax, each 16-byte aligned.
  auto *scalars = static_cast<float *>(anvil_rt_cuda_alloc(16 * 4));
  std::mt19937 rng(10);
  for (int64_t i = 0; i < m * k; ++i)
    a[i] = moderateFp8(rng, 0);
  for (int64_t i = 0; i < n * k; ++i)
    b[i] = moderateFp8(rng, 1);
  for (int64_t j = 0; j < n; ++j)
    bias[j] = toBF16(static_cast<float>(j) / 8 - 3);
  auto gelu = [](double x) {
    return 0.5 * x *
           (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  };
  // The reference in double: p, gelu(p) and the products' magnitude.
  std::vector<double> p(m * n), g(m * n), magnitude(m * n);
  double amax = 0.0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, size = 0.0;
      for (int64_t l = 0; l < k; ++l) {
        double t = decodeFp8(a[i * k + l], 0) * decodeFp8(b[j * k + l], 1);
        sum += t;
        size += std::abs(t);
      }
      const int64_t at = i * n + j;
      p[at] = sum * 0.5 * 0.375 + (static_cast<double>(j) / 8 - 3);
      g[at] = gelu(p[at]);
      magnitude[at] = size * 0.5 * 0.375;
      amax = std::max(amax, std::abs(g[at]));
    }
  const float outScale = static_cast<float>(1.25 * 448 / amax);
  scalars[0] = 0.5f;
  scalars[4] = 0.375f;
  scalars[8] = outScale;
  scalars[12] = 1e30f;
  anvil_rt_cuda_gemm_f8_gelu(1, m, n, k, a, 0, b, 1, scalars, scalars + 4, bias,
                             scalars + 8, codes, 0, pre, scalars + 12);
  ASSERT_TRUE(cuda::synchronizeStepStream("FP8 GEMM with GELU").isOk());
  int saturated = 0;
  for (int64_t at = 0; at < m * n; ++at) {
    // The tensor cores' accumulation (1e-3 of the products' magnitude, as
    // above; GELU's slope is at most 1.13), then half a step of bf16 for
    // pre and one step of E4M3 (3 mantissa bits) for the codes.
    double noise = 1e-3 * magnitude[at] + 1e-6;
    ASSERT_NEAR(fromBF16(pre[at]), p[at],
                noise + std::ldexp(std::abs(p[at]), -8))
        << "pre[" << at << "]";
    double want = std::clamp(g[at] * outScale, -448.0, 448.0);
    saturated += std::abs(g[at] * outScale) > 448.0;
    ASSERT_NEAR(decodeFp8(codes[at], 0), want,
                1.13 * noise * outScale + std::ldexp(std::abs(want), -3) +
                    std::ldexp(1.0, -9))
        << "code[" << at << "]";
  }
  // The scale saturates some of the reference's codes, so the comparison
  // above checked that the device's saturate too.
  EXPECT_GT(saturated, 0);
  EXPECT_NEAR(scalars[12], amax,
              1.13e-3 * *std::max_element(magnitude.begin(), magnitude.end()) +
                  1e-6)
      << "AMAX_D";
  for (void *ptr : {static_cast<void *>(a), static_cast<void *>(b),
                    static_cast<void *>(codes), static_cast<void *>(pre),
                    static_cast<void *>(bias), static_cast<void *>(scalars)})
    anvil_rt_cuda_free(ptr);
}

/// Runs `c` through anvil_rt_cuda_attention_f32 and its gradient with its
/// tensors placed by `placement`, in managed memory (AttentionCheck.h's
/// runOnDevice), and checks each device output against the CPU's within
/// `tolerance` and that nothing was written between the rows. Prints the
/// errors.
void checkAttention(const check::AttentionCase &c, bool bf16,
                    check::Placement placement,
                    const check::AttentionTolerance &tolerance) {
  SCOPED_TRACE(std::string(c.name) + (bf16 ? ", bf16, " : ", f32, ") +
               check::placementName(placement));
  check::DeviceMemory memory;
  memory.copy = [](const std::vector<float> &x) {
    auto *d = static_cast<float *>(anvil_rt_cuda_alloc(
        static_cast<int64_t>(std::max<size_t>(x.size(), 1) * sizeof(float))));
    std::copy(x.begin(), x.end(), d);
    return d;
  };
  memory.release = [](float *x) { anvil_rt_cuda_free(x); };
  memory.synchronize = [](const char *what) {
    ASSERT_TRUE(cuda::synchronizeStepStream(what).isOk()) << what;
  };
  check::AttentionDeviations d = check::runOnDevice(c, bf16, placement, memory);
  std::printf("[ attention] %s (%s, %s): max |device - CPU| / max |CPU|: out "
              "%.3g, lse %.3g, dq %.3g, dk %.3g, dv %.3g\n",
              c.name, bf16 ? "bf16" : "f32", check::placementName(placement),
              d.out.relative(), d.lse.relative(), d.dq.relative(),
              d.dk.relative(), d.dv.relative());
  EXPECT_EQ(d.failures(tolerance), "");
  EXPECT_EQ(d.writtenOutside, 0u) << "floats written between the rows";
}

TEST(CudaAttention, F32MatchesTheHost) {
  SKIP_WITHOUT_GPU();
  for (const check::AttentionCase &c : check::kAttentionCases)
    for (check::Placement placement : check::kPlacements)
      checkAttention(c, /*bf16=*/false, placement, check::kF32Tolerance);
}

/// Sets the attention library for a test's scope, then restores cuDNN
/// (ANVIL_CUDA_ATTENTION's default).
struct AttentionLibraryScope {
  explicit AttentionLibraryScope(cuda::AttentionLibrary library) {
    cuda::setAttentionLibrary(library);
  }
  ~AttentionLibraryScope() {
    cuda::setAttentionLibrary(cuda::AttentionLibrary::Cudnn);
  }
};

TEST(CudaAttention, Bf16MatchesTheHost) {
  SKIP_WITHOUT_GPU();
  AttentionLibraryScope anvilKernels(cuda::AttentionLibrary::Anvil);
  int64_t cudnnCalls = cuda::cudnnAttentionCalls();
  for (const check::AttentionCase &c : check::kAttentionCases)
    for (check::Placement placement : check::kPlacements)
      checkAttention(c, /*bf16=*/true, placement, check::kBf16Tolerance);
  EXPECT_EQ(cuda::cudnnAttentionCalls(), cudnnCalls);
}

/// Whether cuDNN must refuse case `c` (Anvil's kernels run it): head widths
/// that are not multiples of 8; a key bias with the bottom-right diagonal
/// (its frontend's rule), or whose rows are not 16-byte aligned.
bool cudnnRefuses(const check::AttentionCase &c) {
  return c.dim % 8 != 0 || c.valueDim % 8 != 0 ||
         (c.keyBias && ((c.causal && c.keys != c.queries) ||
                        (c.batch > 1 && c.keys % 4 != 0)));
}

// The same calls through cuDNN's fused attention (the default; the operands
// copied to bf16 from where their layouts place them, the results back),
// which must take the shapes whose q, k and v heads are as wide, a multiple
// of 8 (every transformer's), with a key bias (BERT's padding mask) too,
// and must refuse what cudnnRefuses says; Anvil's kernels run what it
// refuses. Which of the rest (value heads of another width) it took is
// printed.
TEST(CudaAttention, Bf16OnCudnnMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  AttentionLibraryScope cudnn(cuda::AttentionLibrary::Cudnn);
  for (const check::AttentionCase &c : check::kAttentionCases)
    for (check::Placement placement : check::kPlacements) {
      int64_t before = cuda::cudnnAttentionCalls();
      checkAttention(c, /*bf16=*/true, placement, check::kBf16Tolerance);
      int64_t calls = cuda::cudnnAttentionCalls() - before;
      std::printf("[ attention] %s: %lld of 2 calls on cuDNN\n", c.name,
                  static_cast<long long>(calls));
      if (cudnnRefuses(c))
        EXPECT_EQ(calls, 0) << c.name;
      else if (c.dim == c.valueDim)
        EXPECT_EQ(calls, 2) << c.name << ": cuDNN's calls (forward, gradient)";
    }
}

// The functions on bf16 tensors (anvil.flash_attention on bf16): cuDNN
// reads and writes the tensors where they lie when their starts and
// strides are 16-byte aligned (the contiguous placement; the (B, T, H, D)
// ones here have rows 4 or 3 elements apart) and the head widths are
// multiples of 8 (and, surely taken, as wide for q, k and v), as
// cudnnRefuses says; Anvil's kernels run the rest on f32 copies. Each against
// the CPU's reference within the bf16 tolerance, on cuDNN (the default) and on
// Anvil's kernels.
TEST(CudaAttention, Bf16TensorsMatchTheHost) {
  SKIP_WITHOUT_GPU();
  check::RawMemory memory{
      [](size_t bytes) {
        return anvil_rt_cuda_alloc(
            static_cast<int64_t>(std::max<size_t>(bytes, 1)));
      },
      [](void *p) { anvil_rt_cuda_free(p); },
      [](const char *what) {
        ASSERT_TRUE(cuda::synchronizeStepStream(what).isOk()) << what;
      }};
  for (cuda::AttentionLibrary library :
       {cuda::AttentionLibrary::Cudnn, cuda::AttentionLibrary::Anvil}) {
    AttentionLibraryScope scope(library);
    bool onCudnn = library == cuda::AttentionLibrary::Cudnn;
    for (const check::AttentionCase &c : check::kAttentionCases)
      for (check::Placement placement : check::kPlacements) {
        SCOPED_TRACE(std::string(c.name) + ", " +
                     check::placementName(placement) +
                     (onCudnn ? ", cuDNN" : ", Anvil's kernels"));
        int64_t before = cuda::cudnnAttentionCalls();
        check::AttentionDeviations d =
            check::runBf16(c, placement, memory, anvil_rt_cuda_attention_bf16,
                           anvil_rt_cuda_attention_grad_bf16);
        int64_t calls = cuda::cudnnAttentionCalls() - before;
        std::printf("[ attention] %s (bf16 tensors, %s, %s): max |device - "
                    "CPU| / max |CPU|: out %.3g, lse %.3g, dq %.3g, dk %.3g, "
                    "dv %.3g; %lld calls on cuDNN\n",
                    c.name, check::placementName(placement),
                    onCudnn ? "cuDNN" : "Anvil", d.out.relative(),
                    d.lse.relative(), d.dq.relative(), d.dk.relative(),
                    d.dv.relative(), static_cast<long long>(calls));
        EXPECT_EQ(d.failures(check::kBf16Tolerance), "");
        EXPECT_EQ(d.writtenOutside, 0u);
        bool aligned = placement == check::Placement::Contiguous &&
                       c.dim % 8 == 0 && c.valueDim % 8 == 0;
        if (!onCudnn || !aligned || cudnnRefuses(c))
          EXPECT_EQ(calls, 0);
        else if (c.dim == c.valueDim)
          EXPECT_EQ(calls, 2);
      }
  }
}

// The gradient's sums do not depend on scheduling, on cuDNN (its
// deterministic algorithm) as on Anvil's kernels: two runs of the same
// gradient agree bit for bit. Grouped heads (dK and dV summed over a
// group) and GPT-2's causal heads.
TEST(CudaAttention, Bf16GradientsAreTheSameEveryRun) {
  SKIP_WITHOUT_GPU();
  for (cuda::AttentionLibrary library :
       {cuda::AttentionLibrary::Cudnn, cuda::AttentionLibrary::Anvil}) {
    AttentionLibraryScope scope(library);
    for (const check::AttentionCase &c : check::kAttentionCases) {
      std::string name = c.name;
      if (name != "GroupedHeads" && name != "Gpt2HeadCausal")
        continue;
      check::AttentionReference r = check::referenceAttention(c, true);
      auto layouts = check::layoutsOf(c, check::Placement::Contiguous);
      auto copy = [](const std::vector<float> &x) {
        auto *d = static_cast<float *>(
            anvil_rt_cuda_alloc(static_cast<int64_t>(x.size() * 4)));
        std::copy(x.begin(), x.end(), d);
        return d;
      };
      float *q = copy(r.q), *k = copy(r.k), *v = copy(r.v), *out = copy(r.out),
            *lse = copy(r.lse), *dOut = copy(r.dOut);
      std::vector<std::vector<float>> runs;
      for (int run = 0; run < 2; ++run) {
        float *dq = copy(r.dq), *dk = copy(r.dk), *dv = copy(r.dv);
        anvil_rt_cuda_attention_grad_f32(q, k, v, nullptr, out, lse, dOut, dq,
                                         dk, dv, c.batch, c.heads, c.kvHeads,
                                         c.queries, c.keys, c.dim, c.valueDim,
                                         r.scale, c.causal, 1, layouts.data());
        ASSERT_TRUE(cuda::synchronizeStepStream("gradient").isOk());
        std::vector<float> all(dq, dq + r.dq.size());
        all.insert(all.end(), dk, dk + r.dk.size());
        all.insert(all.end(), dv, dv + r.dv.size());
        runs.push_back(std::move(all));
        for (float *x : {dq, dk, dv})
          anvil_rt_cuda_free(x);
      }
      EXPECT_EQ(std::memcmp(runs[0].data(), runs[1].data(),
                            runs[0].size() * sizeof(float)),
                0)
          << name
          << (library == cuda::AttentionLibrary::Cudnn ? " on cuDNN"
                                                       : " on Anvil's");
      for (float *x : {q, k, v, out, lse, dOut})
        anvil_rt_cuda_free(x);
    }
  }
}

TEST(CudaAttentionDeathTest, RejectsUnsupportedShapesWithTheCallAndShape) {
  // Checked before the device is touched: no GPU needed.
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  EXPECT_DEATH(anvil_rt_cuda_attention_f32(nullptr, nullptr, nullptr, nullptr,
                                           nullptr, nullptr, 1, 2, 2, 8, 8, 256,
                                           256, 1.0f, 0, 1, nullptr),
               "anvil_rt_cuda_attention_f32: dim and value dim from 1 to 128 "
               "are supported \\(batch 1, heads 2, kv heads 2, queries 8, "
               "keys 8, dim 256, value dim 256, not causal, bf16 products\\)");
  EXPECT_DEATH(anvil_rt_cuda_attention_grad_f32(
                   nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                   nullptr, nullptr, nullptr, nullptr, 1, 3, 2, 8, 8, 64, 64,
                   1.0f, 1, 0, nullptr),
               "anvil_rt_cuda_attention_grad_f32: heads must be a positive "
               "multiple of kv heads \\(batch 1, heads 3, kv heads 2");
  EXPECT_DEATH(anvil_rt_cuda_attention_f32(nullptr, nullptr, nullptr, nullptr,
                                           nullptr, nullptr, 1, 2, 2, 9, 8, 64,
                                           64, 1.0f, 1, 0, nullptr),
               "causal attention needs at least as many keys as queries");
  EXPECT_DEATH(anvil_rt_cuda_attention_f32(nullptr, nullptr, nullptr, nullptr,
                                           nullptr, nullptr, 1, 2, 2, 8, 8, 64,
                                           64, 1.0f, 1, 0, nullptr),
               "anvil_rt_cuda_attention_f32: no layouts");
  // In a step, the report names it (no kernel launched before).
  EXPECT_DEATH(
      {
        cuda::setCurrentStep(5);
        anvil_rt_cuda_attention_f32(nullptr, nullptr, nullptr, nullptr, nullptr,
                                    nullptr, 1, 2, 2, 8, 8, 64, 64, 1.0f, 1, 0,
                                    nullptr);
      },
      "anvil_rt_cuda_attention_f32: no layouts \\(.*\\), at step 5\n");
}

} // namespace

namespace {

/// A device (managed) copy of bf16 `host`, freed by anvil_rt_cuda_free.
template <typename T> T *deviceCopy(const std::vector<T> &host) {
  auto *d = static_cast<T *>(anvil_rt_cuda_alloc(host.size() * sizeof(T)));
  std::copy(host.begin(), host.end(), d);
  return d;
}

/// Checks bf16 `got` against the host's `want`: within two bf16 steps of
/// each value, plus 1e-3 of the largest (sums that cancel).
void expectCloseBF16(const std::vector<uint16_t> &want, const uint16_t *got,
                     const std::string &what) {
  float largest = 0;
  for (uint16_t w : want)
    largest = std::max(largest, std::abs(fromBF16(w)));
  for (size_t i = 0; i < want.size(); ++i) {
    float w = fromBF16(want[i]), v = fromBF16(got[i]);
    float step = w == 0.0f ? 0.0f : std::ldexp(1.0f, std::ilogb(w) - 7);
    ASSERT_LE(std::abs(v - w), 2 * step + 1e-3f * largest)
        << what << " at " << i;
  }
}

} // namespace

TEST(CudaDevice, GeluEpiloguesMatchTheHost) {
  SKIP_WITHOUT_GPU();
  // (Near the end of the file: a cuBLASLt call that fails aborts the
  // process, and the tests after it do not run.)
  // cuBLASLt's GELU_AUX_BIAS and DGELU_BGRAD against the CPU's functions
  // on the same bf16 inputs: the f32 sums differ in order and cuBLASLt's
  // tanh is its own, so a value may round a bf16 step or two away from the
  // host's (plus a little absolute slack where the values cross zero).
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> dist(-2, 2);
  const int64_t m = 37, n = 48, k = 29;
  for (int tb = 0; tb < 2; ++tb) {
    std::vector<uint16_t> a(m * k), b(k * n), bias(n), out(m * n), pre(m * n),
        dPre(m * n), dBias(n);
    for (std::vector<uint16_t> *v : {&a, &b, &bias})
      for (uint16_t &x : *v)
        x = toBF16(dist(rng));
    uint16_t *da = deviceCopy(a), *db = deviceCopy(b),
             *dbias = deviceCopy(bias);
    // NaN: every element must be overwritten.
    uint16_t *dout = deviceCopy(std::vector<uint16_t>(m * n, 0x7FC0)),
             *dpre = deviceCopy(std::vector<uint16_t>(m * n, 0x7FC0)),
             *ddPre = deviceCopy(std::vector<uint16_t>(m * n, 0x7FC0)),
             *ddBias = deviceCopy(std::vector<uint16_t>(n, 0x7FC0));
    anvil_rt_cuda_gemm_bias_gelu(tb, m, n, k, da, db, dbias, dout, dpre);
    ASSERT_TRUE(cuda::synchronizeStepStream("GELU_AUX_BIAS").isOk());
    anvil_rt_gemm_bias_gelu(tb, m, n, k, a.data(), b.data(), bias.data(),
                            out.data(), pre.data());
    std::string at = ", transB " + std::to_string(tb);
    expectCloseBF16(out, dout, "out" + at);
    expectCloseBF16(pre, dpre, "pre" + at);
    // The gradient through the host's pre, on both.
    std::copy(pre.begin(), pre.end(), dpre);
    anvil_rt_cuda_gemm_dgelu_bgrad(tb, m, n, k, da, db, dpre, ddPre, ddBias);
    ASSERT_TRUE(cuda::synchronizeStepStream("DGELU_BGRAD").isOk());
    anvil_rt_gemm_dgelu_bgrad(tb, m, n, k, a.data(), b.data(), pre.data(),
                              dPre.data(), dBias.data());
    expectCloseBF16(dPre, ddPre, "pre's gradient" + at);
    expectCloseBF16(dBias, ddBias, "bias's gradient" + at);
    for (uint16_t *p : {da, db, dbias, dout, dpre, ddPre, ddBias})
      anvil_rt_cuda_free(p);
  }
}

TEST(CudaDevice, BiasEpilogueMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  // cuBLASLt's BIAS against the CPU's function on the same bf16 inputs,
  // within a bf16 step or two (the f32 sums differ in order), for either
  // layout of b, 37 rows and 40 columns (a multiple of 8, as
  // anvil-gemm-epilogues fuses, but not of 16 or 32).
  std::mt19937 rng(15);
  std::uniform_real_distribution<float> dist(-2, 2);
  const int64_t m = 37, n = 40, k = 29;
  for (int tb = 0; tb < 2; ++tb) {
    std::vector<uint16_t> a(m * k), b(k * n), bias(n), out(m * n);
    for (std::vector<uint16_t> *v : {&a, &b, &bias})
      for (uint16_t &x : *v)
        x = toBF16(dist(rng));
    uint16_t *da = deviceCopy(a), *db = deviceCopy(b),
             *dbias = deviceCopy(bias),
             *dout = deviceCopy(std::vector<uint16_t>(m * n, 0x7FC0));
    anvil_rt_cuda_gemm_bias(tb, m, n, k, da, db, dbias, dout);
    ASSERT_TRUE(cuda::synchronizeStepStream("BIAS").isOk());
    anvil_rt_gemm_bias(tb, m, n, k, a.data(), b.data(), bias.data(),
                       out.data());
    expectCloseBF16(out, dout, "out, transB " + std::to_string(tb));
    for (uint16_t *p : {da, db, dbias, dout})
      anvil_rt_cuda_free(p);
  }
}

TEST(CudaDevice, EmbeddingGradMatchesTheHostBitForBit) {
  SKIP_WITHOUT_GPU();
  // GPT-2's shape (8192 tokens into 50257 rows of 768) with ids from a
  // small vocabulary (long runs: each id about 80 times) and a few out of
  // range, against the CPU's function: the same bits (each row summed in
  // position order from 0.0), and every row no id names 0.
  const int64_t count = 8192, rows = 50257, width = 768;
  std::mt19937 rng(19);
  std::uniform_int_distribution<int32_t> id(-3, 100);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<int32_t> ids(count);
  for (int32_t &x : ids)
    x = id(rng);
  ids[5] = static_cast<int32_t>(rows) + 3;
  std::vector<float> grad(count * width), table(rows * width);
  for (float &x : grad)
    x = dist(rng);
  int32_t *dids = deviceCopy(ids);
  float *dgrad = deviceCopy(grad),
        *dtable = deviceCopy(std::vector<float>(rows * width, NAN));
  anvil_rt_cuda_embedding_grad_f32(count, rows, width, dgrad, dids, dtable);
  ASSERT_TRUE(cuda::synchronizeStepStream("embedding grad").isOk());
  anvil_rt_embedding_grad_f32(count, rows, width, grad.data(), ids.data(),
                              table.data());
  for (int64_t i = 0; i < rows * width; ++i)
    ASSERT_EQ(std::memcmp(&table[i], &dtable[i], sizeof(float)), 0)
        << "row " << i / width << ", column " << i % width << ": " << dtable[i]
        << " for " << table[i];
  for (void *p : {static_cast<void *>(dids), static_cast<void *>(dgrad),
                  static_cast<void *>(dtable)})
    anvil_rt_cuda_free(p);
}

TEST(CudaDevice, WeightBiasGradMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  // cuBLASLt's BGRADA, and its fallback (a GEMM and a product with ones),
  // against the CPU's function: the weight's gradient and the bias's,
  // within a bf16 step or two (plus a little where sums cancel).
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (bool fallback : {false, true}) {
    GemmFallback library(fallback);
    const int64_t m = fallback ? 37 : 45, k = 24, n = 40;
    std::vector<uint16_t> x(m * k), g(m * n), dw(k * n), db(n);
    for (uint16_t &v : x)
      v = toBF16(dist(rng));
    for (uint16_t &v : g)
      v = toBF16(dist(rng));
    uint16_t *dx = deviceCopy(x), *dg = deviceCopy(g),
             *ddw = deviceCopy(std::vector<uint16_t>(k * n, 0x7FC0)),
             *ddb = deviceCopy(std::vector<uint16_t>(n, 0x7FC0));
    anvil_rt_cuda_gemm_weight_bias_grad(m, k, n, dx, dg, ddw, ddb);
    ASSERT_TRUE(cuda::synchronizeStepStream("BGRADA").isOk());
    anvil_rt_gemm_weight_bias_grad(m, k, n, x.data(), g.data(), dw.data(),
                                   db.data());
    std::string path = fallback ? " (fallback)" : "";
    expectCloseBF16(dw, ddw, "weight's gradient" + path);
    expectCloseBF16(db, ddb, "bias's gradient" + path);
    for (uint16_t *p : {dx, dg, ddw, ddb})
      anvil_rt_cuda_free(p);
  }
}

TEST(CudaDevice, ConvsMatchTheHost) {
  SKIP_WITHOUT_GPU();
  {
    std::vector<int64_t> p = anvil::test::convProblems().front();
    Expected<std::vector<int64_t>> dims =
        cuda::cudnnForwardDims(p.data(), false);
    if (!dims.hasValue() && dims.status().code() == ErrorCode::Unavailable)
      GTEST_SKIP() << dims.status().message();
  }
  // cuDNN's forward, data-gradient and filter-gradient convolutions
  // (anvil_rt_cuda_conv) against the CPU's reference (anvil_rt_conv) on the
  // same inputs, every problem of ConvProblems.h: f32 within 1e-5 of the
  // largest value (the same products summed in other orders, no TF32);
  // bf16 within a bf16 step or two.
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const std::vector<int64_t> &p : anvil::test::convProblems()) {
    anvil::test::ConvSizes n = anvil::test::convSizes(p);
    // (a, b, c) elements of each kind: (x, w, y), (dy, w, dx), (x, dy, dw).
    const int64_t sizes[3][3] = {
        {n.x, n.w, n.y}, {n.y, n.w, n.x}, {n.x, n.y, n.w}};
    for (int32_t kind = 0; kind < 3; ++kind)
      for (int32_t bf16 = 0; bf16 < 2; ++bf16) {
        std::string what = "kind " + std::to_string(kind) + " of a " +
                           std::to_string(p[0]) + "-D problem, C " +
                           std::to_string(p[2]) + ", groups " +
                           std::to_string(p[4]) + (bf16 ? ", bf16" : ", f32");
        const int64_t *size = sizes[kind];
        if (bf16) {
          std::vector<uint16_t> a(size[0]), b(size[1]), c(size[2]);
          for (uint16_t &v : a)
            v = toBF16(dist(rng));
          for (uint16_t &v : b)
            v = toBF16(dist(rng));
          uint16_t *da = deviceCopy(a), *db = deviceCopy(b),
                   *dc = deviceCopy(std::vector<uint16_t>(size[2], 0x7FC0));
          anvil_rt_cuda_conv(kind, 1, p.data(), da, db, dc);
          ASSERT_TRUE(cuda::synchronizeStepStream(what.c_str()).isOk());
          anvil_rt_conv(kind, 1, p.data(), a.data(), b.data(), c.data());
          expectCloseBF16(c, dc, what);
          for (uint16_t *q : {da, db, dc})
            anvil_rt_cuda_free(q);
          continue;
        }
        std::vector<float> a(size[0]), b(size[1]), c(size[2]);
        for (float &v : a)
          v = dist(rng);
        for (float &v : b)
          v = dist(rng);
        float *da = deviceCopy(a), *db = deviceCopy(b),
              *dc = deviceCopy(std::vector<float>(size[2], std::nanf("")));
        anvil_rt_cuda_conv(kind, 0, p.data(), da, db, dc);
        ASSERT_TRUE(cuda::synchronizeStepStream(what.c_str()).isOk());
        anvil_rt_conv(kind, 0, p.data(), a.data(), b.data(), c.data());
        float largest = 0;
        for (float v : c)
          largest = std::max(largest, std::abs(v));
        for (size_t i = 0; i < c.size(); ++i)
          ASSERT_LE(std::abs(dc[i] - c[i]), 1e-5f * largest)
              << what << " at " << i;
        for (float *q : {da, db, dc})
          anvil_rt_cuda_free(q);
      }
  }
}
