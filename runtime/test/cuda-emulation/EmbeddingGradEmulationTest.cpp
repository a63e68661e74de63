//===- EmbeddingGradEmulationTest.cpp - EmbeddingGrad.cu, run on the CPU --===//
//
// anvil_rt_cuda_embedding_grad_f32 (EmbeddingGrad.cu: its kernels, grids
// and shared-memory sizes, unchanged) run by the emulator of
// CudaEmulation.h and compared bit for bit with the CPU's
// anvil_rt_embedding_grad_f32, which the loop of anvil-convert-to-linalg
// equals: repeated ids, ids out of range (clamped), rows no id names,
// runs longer than a CTA's chunk, more positions than the rank kernel's
// tile, columns not a multiple of a CTA's, no positions. Then proof that
// the comparison catches what it is for: a CTA left out, a barrier
// ignored.
//
//===----------------------------------------------------------------------===//

#include "CudaEmulation.h"

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/RuntimeABI.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace emu = anvil::cuda_emulation;

namespace {

struct Problem {
  int64_t count, rows, width;
  std::vector<int32_t> ids;
  std::vector<float> grad;
};

/// `count` positions of ids drawn from [-2, rows + 2) (a few out of range
/// at both ends), every fourth one `common` (a long run), and gradients
/// from [-1, 1).
Problem makeProblem(int64_t count, int64_t rows, int64_t width, int32_t common,
                    unsigned seed) {
  Problem p{count, rows, width, {}, {}};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> id(-2, static_cast<int32_t>(rows) + 1);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int64_t n = 0; n < count; ++n)
    p.ids.push_back(n % 4 == 0 ? common : id(gen));
  for (int64_t i = 0; i < count * width; ++i)
    p.grad.push_back(value(gen));
  return p;
}

/// The table the CPU's function writes.
std::vector<float> onCpu(const Problem &p) {
  std::vector<float> table(p.rows * p.width, -7.0f);
  anvil_rt_embedding_grad_f32(p.count, p.rows, p.width, p.grad.data(),
                              p.ids.data(), table.data());
  return table;
}

/// The table the emulated CUDA function writes, from emulated device
/// memory (each buffer ends at an inaccessible page; the table starts as
/// NaNs).
std::vector<float> onEmulatedGpu(const Problem &p) {
  auto copy = [](const auto &host) {
    using T = typename std::decay_t<decltype(host)>::value_type;
    auto *d = static_cast<T *>(
        emu::allocate(std::max<size_t>(host.size(), 1) * sizeof(T)));
    std::copy(host.begin(), host.end(), d);
    return d;
  };
  float *grad = copy(p.grad);
  int32_t *ids = copy(p.ids);
  auto *table = static_cast<float *>(
      emu::allocate(std::max<int64_t>(p.rows * p.width, 1) * sizeof(float)));
  std::memset(table, 0xFF, p.rows * p.width * sizeof(float));
  anvil_rt_cuda_embedding_grad_f32(p.count, p.rows, p.width, grad, ids, table);
  std::vector<float> out(table, table + p.rows * p.width);
  emu::release(grad);
  emu::release(ids);
  emu::release(table);
  return out;
}

/// Whether the two tables hold the same bits.
bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
  const char *name;
  int64_t count, rows, width;
};

class EmbeddingGradEmulation : public ::testing::TestWithParam<Shape> {};

TEST_P(EmbeddingGradEmulation, MatchesTheCpuBitForBit) {
  const Shape &s = GetParam();
  Problem p = makeProblem(s.count, s.rows, s.width, /*common=*/3, 11);
  std::vector<float> cpu = onCpu(p);
  EXPECT_TRUE(sameBits(onEmulatedGpu(p), cpu));
  // CTAs in the other order write the same table (each output is one
  // CTA's).
  emu::options().reverseGrid = true;
  EXPECT_TRUE(sameBits(onEmulatedGpu(p), cpu));
  emu::options().reverseGrid = false;
}

// 1100 positions: more than the rank kernel's tile (1024) and not a
// multiple of a CTA's 128; a quarter (275) on one row: a run over two
// chunks of 128. 200 columns: a second CTA of columns, partly idle. 70
// rows: some no id names (left 0). One row of 256 positions: a run that
// ends with its second chunk (the next chunk stages nothing).
INSTANTIATE_TEST_SUITE_P(
    Shapes, EmbeddingGradEmulation,
    ::testing::Values(Shape{"TilesRunsAndTails", 1100, 70, 200},
                      Shape{"OneColumn", 300, 5, 1},
                      Shape{"OnePosition", 1, 4, 130},
                      Shape{"NoPositions", 0, 3, 8},
                      Shape{"OneRow", 260, 1, 16},
                      Shape{"OneRunOfTwoChunks", 256, 1, 16}),
    [](const ::testing::TestParamInfo<Shape> &info) {
      return info.param.name;
    });

TEST(EmbeddingGradEmulation, RowsStartFromZeroInPositionOrder) {
  // Row 1 gets 1, then 1e8, then -1e8, in that order: 0 from the left
  // (1 + 1e8 rounds to 1e8); the reverse order (-1e8 + 1e8 + 1) gives 1.
  Problem p{3, 2, 1, {1, 1, 1}, {1.0f, 1e8f, -1e8f}};
  std::vector<float> cpu = onCpu(p);
  EXPECT_EQ(cpu[0], 0.0f);
  EXPECT_EQ(cpu[1], 0.0f);
  EXPECT_TRUE(sameBits(onEmulatedGpu(p), cpu));
}

TEST(EmbeddingGradEmulationFaults, ALeftOutCtaIsCaught) {
  Problem p = makeProblem(1100, 70, 200, 3, 5);
  std::vector<float> cpu = onCpu(p);
  emu::InjectedFault fault(emu::Fault::SkipLastBlock);
  EXPECT_FALSE(sameBits(onEmulatedGpu(p), cpu));
}

TEST(EmbeddingGradEmulationFaults, AMissingBarrierIsCaught) {
  // Threads read positions and rows of a tile no thread has staged yet.
  Problem p = makeProblem(1100, 70, 200, 3, 5);
  std::vector<float> cpu = onCpu(p);
  emu::InjectedFault fault(emu::Fault::IgnoreSyncthreads);
  EXPECT_FALSE(sameBits(onEmulatedGpu(p), cpu));
}

} // namespace
