//===- AttentionEmulationTest.cpp - Attention.cu's kernels, run on the CPU ===//
//
// anvil_rt_cuda_attention_f32 and _grad_f32 (Attention.cu: its kernels,
// tiling, grids and shared-memory sizes, unchanged) run by the emulator of
// CudaEmulation.h and checked against the CPU's anvil_rt_attention_f32 and
// _grad_f32 with CudaTest.cpp's tolerances: no GPU needed. The shapes are
// CudaTest.cpp's and a few more: causal and not, grouped query heads, fewer
// queries than keys, none, tails of every tile, the tile widths 16, 32, 64
// and 128 and padded dims; each in f32 and with bf16 products. Then proof
// that the checks catch what they are for: faults the emulator injects (a
// CTA left out, a barrier ignored) fail them, and the emulator's own checks
// (deadlocks, diverged warps, out-of-bounds accesses, launch limits)
// report.
//
//===----------------------------------------------------------------------===//

#include "../../src/cuda/CudnnAttention.h"
#include "AttentionCheck.h"
#include "CudaEmulation.h"

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/RuntimeABI.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace check = anvil::test;
namespace emu = anvil::cuda_emulation;

namespace {

//===- Attention against the CPU ------------------------------------------===//

/// Runs `c` through the emulated anvil_rt_cuda_attention_f32 and its
/// gradient with its tensors placed by `placement` (AttentionCheck.h), in
/// emulated device memory (emu::allocate: it ends at an inaccessible page).
check::AttentionDeviations
runAttention(const check::AttentionCase &c, bool bf16,
             check::Placement placement = check::Placement::Contiguous) {
  check::DeviceMemory memory;
  memory.copy = [](const std::vector<float> &x) {
    auto *d = static_cast<float *>(
        emu::allocate(std::max<size_t>(x.size(), 1) * sizeof(float)));
    std::copy(x.begin(), x.end(), d);
    return d;
  };
  memory.release = [](float *x) { emu::release(x); };
  memory.synchronize = [](const char *) {}; // launches run as they are made
  return check::runOnDevice(c, bf16, placement, memory);
}

/// Batch, heads, kv heads, queries, keys, dim, value dim, causal. 70, 37,
/// 100, 33, 50 are no multiples of 16 or 64; dims 16, 24 (-> 32), 16 with
/// value dim 32, 64 and 128 pick each tile width (and unpadded and padded
/// loads); dim 128 also the smaller f32 tiles and over 48 KB of shared
/// memory (within sm_86's 99 KB: Options::sharedMemoryOptin). Then the cases
/// the GPU runs (AttentionCheck.h).
std::vector<check::AttentionCase> cases() {
  std::vector<check::AttentionCase> all = {
      {"GroupedHeadsCausalDim16", 1, 4, 2, 70, 70, 16, 16, true},
      {"FewerQueriesCausalDim64", 1, 2, 1, 37, 100, 64, 64, true},
      {"NotCausalDim64", 1, 2, 2, 65, 80, 64, 64, false},
      {"OneQueryCausal", 2, 2, 1, 1, 70, 32, 32, true},
      {"Dim16ValueDim32", 1, 2, 2, 20, 33, 16, 32, false},
      {"Dim24Causal", 1, 2, 1, 50, 50, 24, 24, true},
      {"Dim128Causal", 1, 1, 1, 70, 70, 128, 128, true},
      {"NoQueries", 1, 2, 1, 0, 70, 16, 16, false}, // dk = dv = 0
  };
  all.insert(all.end(), std::begin(check::kAttentionCases),
             std::end(check::kAttentionCases));
  return all;
}

class AttentionEmulation
    : public ::testing::TestWithParam<
          std::tuple<check::AttentionCase, bool, check::Placement>> {};

TEST_P(AttentionEmulation, MatchesTheCPU) {
  const auto &[c, bf16, placement] = GetParam();
  check::AttentionDeviations d = runAttention(c, bf16, placement);
  std::printf("[ attention] %s (%s, %s): max |device - CPU| / max |CPU|: out "
              "%.3g, lse %.3g, dq %.3g, dk %.3g, dv %.3g\n",
              c.name, bf16 ? "bf16" : "f32", check::placementName(placement),
              d.out.relative(), d.lse.relative(), d.dq.relative(),
              d.dk.relative(), d.dv.relative());
  EXPECT_EQ(d.writtenOutside, 0u) << "floats written between the rows";
  const check::AttentionTolerance &tolerance =
      bf16 ? check::kBf16Tolerance : check::kF32Tolerance;
  EXPECT_EQ(d.failures(tolerance), "");
  // The CTAs last first: each output is written by one CTA, so the results
  // are the same (a CTA writing into another's rows would differ).
  emu::options().reverseGrid = true;
  check::AttentionDeviations reversed = runAttention(c, bf16, placement);
  emu::options().reverseGrid = false;
  auto forward = d.named(tolerance), backward = reversed.named(tolerance);
  for (size_t i = 0; i < forward.size(); ++i)
    EXPECT_EQ(forward[i].deviation.error, backward[i].deviation.error)
        << forward[i].name << " depends on the order of the CTAs";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionEmulation,
    ::testing::Combine(::testing::ValuesIn(cases()), ::testing::Bool(),
                       ::testing::ValuesIn(check::kPlacements)),
    [](const ::testing::TestParamInfo<AttentionEmulation::ParamType> &info) {
      return std::string(std::get<0>(info.param).name) +
             (std::get<1>(info.param) ? "Bf16" : "F32") +
             check::placementName(std::get<2>(info.param));
    });

/// Batches whose tensors span more than 2^31 elements run in several
/// launches of a few batch elements each (the kernels index in 32 bits):
/// with the bound lowered to a little over one batch element's span, each
/// launch takes one, and every result is the same as in one launch; with a
/// key bias too (each launch reads its batch element's row: the padding
/// differs from row to row).
TEST(AttentionEmulation, LargeBatchesRunInChunksWithTheSameResults) {
  const check::AttentionCase cases[] = {
      {"Chunks", 3, 2, 1, 40, 40, 16, 16, true},
      {"ChunksKeyBias", 3, 2, 1, 40, 40, 16, 16, true, true}};
  for (const check::AttentionCase &c : cases)
    for (bool bf16 : {false, true})
      for (check::Placement placement : check::kPlacements) {
        SCOPED_TRACE(std::string(c.name) + (bf16 ? " bf16 " : " f32 ") +
                     check::placementName(placement));
        check::AttentionDeviations whole = runAttention(c, bf16, placement);
        // The largest batch element: q's or out's, heads x queries x 16 plus
        // the gaps between rows.
        int64_t span = 0;
        for (const check::Placed &p : check::placeAll(c, placement))
          span = std::max(span, p.index(0, p.heads - 1, p.rows - 1, 0) +
                                    p.width - p.layout.offset);
        emu::options().attentionIndexLimit = span;
        check::AttentionDeviations chunked = runAttention(c, bf16, placement);
        emu::options().attentionIndexLimit = INT_MAX;
        auto a = whole.named(check::kBf16Tolerance),
             b = chunked.named(check::kBf16Tolerance);
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].deviation.error, b[i].deviation.error) << a[i].name;
          EXPECT_EQ(a[i].deviation.magnitude, b[i].deviation.magnitude)
              << a[i].name;
        }
        EXPECT_TRUE(chunked.within(bf16 ? check::kBf16Tolerance
                                        : check::kF32Tolerance));
        EXPECT_EQ(chunked.writtenOutside, 0u);
      }
}

TEST(AttentionEmulationDeathTest, ABatchElementBeyondTheIndexBoundFails) {
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  const check::AttentionCase c = {"TooLarge", 2, 2, 1, 40, 40, 16, 16, true};
  EXPECT_DEATH(
      {
        emu::options().attentionIndexLimit = 1000; // q: 2 x 40 x 16 = 1280
        runAttention(c, false);
      },
      "anvil_rt_cuda_attention_f32: q: one batch element spans more than "
      "1000 elements \\(batch 2, heads 2");
}

/// The CPU's reference reads and writes the placed tensors: the same
/// arithmetic in the same order, so the same bits as contiguous.
TEST(AttentionLayouts, TheCpuGivesTheSameBitsInEveryPlacement) {
  for (const check::AttentionCase &c : check::kAttentionCases)
    for (bool bf16 : {false, true}) {
      check::AttentionReference r = check::referenceAttention(c, bf16);
      for (check::Placement placement : check::kPlacements) {
        SCOPED_TRACE(std::string(c.name) + (bf16 ? " bf16 " : " f32 ") +
                     check::placementName(placement));
        auto at = check::placeAll(c, placement);
        auto layouts = check::layoutsOf(c, placement);
        // Inputs' gaps NaN, outputs all -1 (the gaps must stay so).
        std::vector<float> q = check::scatter(at[0], r.q, NAN),
                           k = check::scatter(at[1], r.k, NAN),
                           v = check::scatter(at[2], r.v, NAN),
                           dOut = check::scatter(at[4], r.dOut, NAN),
                           out(at[3].size, -1.0f), dq(at[5].size, -1.0f),
                           dk(at[6].size, -1.0f), dv(at[7].size, -1.0f),
                           lse(r.lse.size());
        anvil_rt_attention_f32(q.data(), k.data(), v.data(), r.bias(),
                               out.data(), lse.data(), c.batch, c.heads,
                               c.kvHeads, c.queries, c.keys, c.dim, c.valueDim,
                               r.scale, c.causal, bf16, layouts.data());
        anvil_rt_attention_grad_f32(
            q.data(), k.data(), v.data(), r.bias(), out.data(), lse.data(),
            dOut.data(), dq.data(), dk.data(), dv.data(), c.batch, c.heads,
            c.kvHeads, c.queries, c.keys, c.dim, c.valueDim, r.scale, c.causal,
            bf16, layouts.data());
        EXPECT_EQ(check::gather(at[3], out.data()), r.out);
        EXPECT_EQ(lse, r.lse);
        EXPECT_EQ(check::gather(at[5], dq.data()), r.dq);
        EXPECT_EQ(check::gather(at[6], dk.data()), r.dk);
        EXPECT_EQ(check::gather(at[7], dv.data()), r.dv);
        for (auto [p, x] :
             {std::pair{at[3], &out}, {at[5], &dq}, {at[6], &dk}, {at[7], &dv}})
          EXPECT_EQ(check::changedOutside(p, x->data(), -1.0f), 0u);
      }
    }
}

//===- Attention on bf16 tensors ------------------------------------------===//

/// The emulator's memory (each allocation ends at an inaccessible page).
check::RawMemory emulatedMemory() {
  return {[](size_t bytes) { return emu::allocate(bytes); },
          [](void *p) { emu::release(p); }, [](const char *) {}};
}

// The CPU's functions on bf16 tensors give the f32 functions' results with
// bf16 products (bf16 values) bit for bit, wherever the tensors lie, and
// write nothing between their rows.
TEST(AttentionBf16Tensors, TheCpuGivesTheF32FunctionsResults) {
  for (const check::AttentionCase &c : check::kAttentionCases)
    for (check::Placement placement : check::kPlacements) {
      SCOPED_TRACE(std::string(c.name) + ", " +
                   check::placementName(placement));
      check::AttentionDeviations d =
          check::runBf16(c, placement, emulatedMemory(),
                         anvil_rt_attention_bf16, anvil_rt_attention_grad_bf16);
      for (const auto &n : d.named(check::kBf16Tolerance))
        EXPECT_EQ(n.deviation.error, 0.0)
            << n.name << " at flat index " << n.deviation.at;
      EXPECT_EQ(d.writtenOutside, 0u);
    }
}

// The CUDA functions on bf16 tensors where cuDNN does not run them (here:
// the emulator has no cuDNN): Anvil's kernels on widened copies, the
// results rounded back into place, within the bf16 tolerance of the CPU.
TEST(AttentionBf16Tensors, AnvilsKernelsMatchTheCPU) {
  for (const check::AttentionCase &c : check::kAttentionCases)
    for (check::Placement placement : check::kPlacements) {
      SCOPED_TRACE(std::string(c.name) + ", " +
                   check::placementName(placement));
      check::AttentionDeviations d = check::runBf16(
          c, placement, emulatedMemory(), anvil_rt_cuda_attention_bf16,
          anvil_rt_cuda_attention_grad_bf16);
      EXPECT_EQ(d.failures(check::kBf16Tolerance), "");
      EXPECT_EQ(d.writtenOutside, 0u);
    }
}

//===- The copies to and from cuDNN's bf16 tensors ------------------------===//

/// `x` rounded to bf16 (to nearest even; no NaN here): its bits.
uint16_t bf16Bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

// The copies cuDNN's attention path makes (CudnnAttention.h): a strided
// (batch, heads, rows, width) tensor, gaps between its rows, into contiguous
// bf16, each element rounded to nearest even; and back into the same
// layout, widened, leaving the gaps alone. More than one CTA of rows
// (kRows = 64), a width that is no multiple of anything; then with the
// 32-bit index bound lowered so that each batch element is a launch of
// its own (batchChunk).
class AttentionCopies : public testing::TestWithParam<int> {};

TEST_P(AttentionCopies, ToAndFromContiguousBf16) {
  const int64_t batch = 3, heads = 3, rows = 70, width = 21;
  const anvil_rt_attention_layout layout = {5, rows * (heads * width + 7),
                                            width, heads * width + 7};
  const size_t span = static_cast<size_t>(layout.offset + batch * layout.batch);
  auto *src = static_cast<float *>(emu::allocate(span * sizeof(float)));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (size_t i = 0; i < span; ++i)
    src[i] = normal(rng);
  const size_t n = static_cast<size_t>(batch * heads * rows * width);
  auto *bf16 = static_cast<uint16_t *>(emu::allocate(n * sizeof(uint16_t)));
  emu::options().attentionIndexLimit = GetParam();
  anvil::rt::cuda::copyAttentionTensorToBf16(src, layout, batch, heads, rows,
                                             width, bf16, "test");
  auto *back = static_cast<float *>(emu::allocate(span * sizeof(float)));
  std::fill(back, back + span, 1234.5f);
  anvil::rt::cuda::copyAttentionTensorFromBf16(bf16, back, layout, batch, heads,
                                               rows, width, "test");
  emu::options().attentionIndexLimit = INT_MAX;
  std::vector<bool> placed(span, false);
  size_t flat = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < width; ++c, ++flat) {
          size_t at = static_cast<size_t>(layout.offset + b * layout.batch +
                                          h * layout.head + r * layout.row + c);
          uint16_t want = bf16Bits(src[at]);
          ASSERT_EQ(bf16[flat], want) << "element " << flat;
          uint32_t widened = static_cast<uint32_t>(want) << 16;
          float wantBack;
          std::memcpy(&wantBack, &widened, sizeof(wantBack));
          ASSERT_EQ(back[at], wantBack) << "element " << flat;
          placed[at] = true;
        }
  for (size_t i = 0; i < span; ++i) {
    if (!placed[i]) {
      ASSERT_EQ(back[i], 1234.5f) << "written between the rows at " << i;
    }
  }
  for (void *p : {static_cast<void *>(src), static_cast<void *>(bf16),
                  static_cast<void *>(back)})
    emu::release(p);
}

// One launch for the whole batch; one per batch element (a batch element
// spans 70 rows of 3 * 21 + 7 floats).
INSTANTIATE_TEST_SUITE_P(IndexBounds, AttentionCopies,
                         testing::Values(INT_MAX, 70 * 70));

//===- The checks catch faults --------------------------------------------===//

const check::AttentionCase kFaultCase = {"Faults", 1,  2,  1,   70,
                                         70,       16, 16, true};

TEST(AttentionEmulationFaults, UnwrittenOutputsAreCaught) {
  // Without each launch's last CTA, its rows stay NaN: an infinite error.
  for (bool bf16 : {false, true}) {
    emu::InjectedFault fault(emu::Fault::SkipLastBlock);
    check::AttentionDeviations d = runAttention(kFaultCase, bf16);
    for (const check::Deviation &x : {d.out, d.lse, d.dq, d.dk, d.dv})
      EXPECT_TRUE(std::isinf(x.error)) << (bf16 ? "bf16" : "f32");
  }
}

TEST(AttentionEmulationFaults, MissingSyncthreadsIsCaught) {
  // Threads read tiles that others have not loaded yet: NaN (the shared
  // memory's fill) or stale values.
  for (bool bf16 : {false, true}) {
    emu::InjectedFault fault(emu::Fault::IgnoreSyncthreads);
    check::AttentionDeviations d = runAttention(kFaultCase, bf16);
    EXPECT_FALSE(d.within(check::kBf16Tolerance)) << (bf16 ? "bf16" : "f32");
  }
}

TEST(AttentionEmulationFaults, MissingSyncwarpIsCaughtWithF32Products) {
  // With f32 products a lane reads the whole row of P (dS) that its quad's
  // other lanes wrote. (The bf16 A fragments read exactly what the lane
  // wrote itself, the C fragment's elements: no __syncwarp is needed there.)
  emu::InjectedFault fault(emu::Fault::IgnoreSyncwarp);
  check::AttentionDeviations d = runAttention(kFaultCase, /*bf16=*/false);
  EXPECT_FALSE(d.within(check::kF32Tolerance));
}

//===- The emulator's own checks ------------------------------------------===//

__global__ void shuffleKernel(float *out, int laneMask) {
  out[threadIdx.x] =
      __shfl_xor_sync(0xffffffffu, static_cast<float>(threadIdx.x), laneMask);
}

TEST(CudaEmulation, ShuffleXorExchangesLanes) {
  std::vector<float> out(64, NAN);
  for (int laneMask : {1, 2, 16}) {
    emu::launch(shuffleKernel, dim3(1), dim3(64), 0, out.data(), laneMask);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    for (int i = 0; i < 64; ++i)
      EXPECT_EQ(out[i], static_cast<float>(i ^ laneMask)) << i;
  }
}

/// One warp: d (16 x 8) = a (16 x 16, bf16) b (16 x 8, bf16) + c, the
/// fragments loaded per the PTX ISA's tables.
__global__ void mmaKernel(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                          const float *c, float *d) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  auto pair = [](__nv_bfloat16 lo, __nv_bfloat16 hi) {
    return uint32_t{__bfloat16_as_ushort(lo)} |
           uint32_t{__bfloat16_as_ushort(hi)} << 16;
  };
  uint32_t af[4], bf[2];
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
    af[r] = pair(a[row * 16 + col], a[row * 16 + col + 1]);
  }
  for (int r = 0; r < 2; ++r) {
    int row = 2 * t + 8 * r;
    bf[r] = pair(b[row * 8 + g], b[(row + 1) * 8 + g]);
  }
  float acc[4];
  for (int e = 0; e < 4; ++e)
    acc[e] = c[(g + 8 * (e / 2)) * 8 + 2 * t + e % 2];
  emu::mmaM16N8K16Bf16(acc, af, bf);
  for (int e = 0; e < 4; ++e)
    d[(g + 8 * (e / 2)) * 8 + 2 * t + e % 2] = acc[e];
}

TEST(CudaEmulation, MmaComputesTheProduct) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-8, 8);
  // Small integers: every sum is exact, whatever the order.
  std::vector<__nv_bfloat16> a(16 * 16), b(16 * 8);
  std::vector<float> c(16 * 8), d(16 * 8, NAN);
  for (auto &x : a)
    x = __float2bfloat16_rn(static_cast<float>(small(rng)));
  for (auto &x : b)
    x = __float2bfloat16_rn(static_cast<float>(small(rng)));
  for (float &x : c)
    x = static_cast<float>(small(rng));
  emu::launch(mmaKernel, dim3(1), dim3(32), 0, a.data(), b.data(), c.data(),
              d.data());
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float want = c[i * 8 + j];
      for (int k = 0; k < 16; ++k)
        want +=
            __bfloat162float(a[i * 16 + k]) * __bfloat162float(b[k * 8 + j]);
      EXPECT_EQ(d[i * 8 + j], want) << i << ", " << j;
    }
}

/// Thread 0 writes shared memory that thread blockDim.x - 1 reads, without
/// a barrier in between.
__global__ void raceKernel(float *seen) {
  float *shared = reinterpret_cast<float *>(emu::dynamicSharedMemory());
  if (threadIdx.x == 0)
    shared[0] = 1.0f;
  if (threadIdx.x == blockDim.x - 1)
    seen[blockIdx.x] = shared[0];
}

TEST(CudaEmulation, AMissingBarrierShowsInOneOfTwoBlocks) {
  // Even blocks run their threads in increasing order, odd ones in
  // decreasing order: the read comes after the write only in the former.
  std::vector<float> seen(2, 0.0f);
  emu::launch(raceKernel, dim3(2), dim3(128), sizeof(float), seen.data());
  EXPECT_EQ(seen[0], 1.0f);
  EXPECT_TRUE(std::isnan(seen[1]));
}

__global__ void fillKernel(float *out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

TEST(CudaEmulation, LaunchErrorsAreCudas) {
  std::vector<float> out(2048);
  emu::launch(fillKernel, dim3(1), dim3(2048), 0, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  emu::launch(fillKernel, dim3(1, 65536), dim3(32), 0, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  // Over 48 KB of dynamic shared memory needs the kernel's attribute, up to
  // the device's opt-in limit.
  emu::launch(fillKernel, dim3(1), dim3(32), 60 * 1024, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFuncSetAttribute(fillKernel,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 emu::options().sharedMemoryOptin + 1),
            cudaErrorInvalidValue);
  ASSERT_EQ(cudaFuncSetAttribute(fillKernel,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 60 * 1024),
            cudaSuccess);
  emu::launch(fillKernel, dim3(2), dim3(32), 60 * 1024, out.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(std::count(out.begin(), out.begin() + 64, 1.0f), 64);
  EXPECT_EQ(out[64], 0.0f);
}

__global__ void exitBeforeBarrierKernel() {
  if (threadIdx.x < 64)
    return;
  __syncthreads();
}

__global__ void divergedWarpKernel() {
  if (threadIdx.x < 16)
    __syncwarp();
  else
    __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

__global__ void sharedOverrunKernel(int bytes) {
  if (blockIdx.x == 1 && threadIdx.x == 5)
    emu::dynamicSharedMemory()[bytes] = 0;
}

__global__ void globalOverrunKernel(float *x, int n) {
  if (threadIdx.x == 3)
    x[n + 3] = 0.0f;
}

TEST(CudaEmulationDeathTest, ReportsDeadlocksDivergenceAndOverruns) {
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  EXPECT_DEATH(emu::launch(exitBeforeBarrierKernel, dim3(1), dim3(128), 0),
               "deadlock in block \\(0, 0, 0\\): threads 0-63 exited, "
               "64-127 at __syncthreads");
  EXPECT_DEATH(emu::launch(divergedWarpKernel, dim3(1), dim3(32), 0),
               "warp 0 of block \\(0, 0, 0\\) diverged: thread 16 arrives at "
               "__shfl_xor_sync while others wait at __syncwarp");
  EXPECT_EXIT(emu::launch(sharedOverrunKernel, dim3(2), dim3(32), 100, 112),
              ::testing::KilledBySignal(SIGSEGV),
              "segmentation fault at address 0x[0-9a-f]+ in block \\(1, 0, "
              "0\\), thread \\(5, 0, 0\\)");
  EXPECT_EXIT(
      {
        auto *x = static_cast<float *>(emu::allocate(10 * sizeof(float)));
        emu::launch(globalOverrunKernel, dim3(1), dim3(32), 0, x, 10);
      },
      ::testing::KilledBySignal(SIGSEGV),
      "segmentation fault .* thread \\(3, 0, 0\\)");
}

} // namespace
