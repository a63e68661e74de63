//===- CudaGraphTest.cpp - the step stream and the step's CUDA graphs ----===//
//
// anvil_rt_run_step in each launch mode (ANVIL_CUDA_LAUNCHES), on whatever
// libcuda.so.1 the process finds: a GPU's driver (label gpu; skipped
// without one), or the mock driver of cuda-mock/MockDriver.cpp (label
// runtime; ctest runs the tests once per mode), which runs the test's
// kernel on the host, holds captures to the driver's rules and reports how
// the work ran (eagerly or as graphs).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/RuntimeABI.h"

#include "ScaleKernel.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace anvil::rt;
using anvil::test::kScalePtx;
using anvil::test::launchScale;

namespace {

/// What the mock driver ran so far; nothing on a real driver.
struct MockCounts {
  int64_t kernelsRun = 0, graphLaunches = 0, captures = 0;
};
std::optional<MockCounts> mockCounts() {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver)
    return std::nullopt;
  auto counts = reinterpret_cast<void (*)(int64_t *, int64_t *, int64_t *)>(
      dlsym(driver, "anvilMockCounts"));
  dlclose(driver);
  if (!counts)
    return std::nullopt;
  MockCounts c;
  counts(&c.kernelsRun, &c.graphLaunches, &c.captures);
  return c;
}

/// The bytes the mock driver prefetched so far; nothing on a real driver.
std::optional<int64_t> mockPrefetchedBytes() {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver)
    return std::nullopt;
  auto bytes = reinterpret_cast<int64_t (*)()>(
      dlsym(driver, "anvilMockPrefetchedBytes"));
  dlclose(driver);
  if (!bytes)
    return std::nullopt;
  return bytes();
}

/// The step's kernel and what the step did.
struct StepContext {
  void *scale = nullptr;
  int32_t n = 0;
  int64_t calls = 0; ///< Calls of the step function (host code runs).
} context;

/// What the test steps do, shaped like generated code: args[0] *= factor
/// (a kernel), then results[0] = args[0] (a copy on the step stream;
/// generated code's copies are kernels, runtime functions' are this call),
/// optionally waiting for the device in between, or copying through a
/// buffer allocated and freed in the step. A graph can hold neither of the
/// last two (a wait; an address it would keep after the free).
enum class Extra { None, Wait, Scratch };
void scaleAndCopy(void **args, void **results, float factor, Extra extra) {
  ++context.calls;
  auto *x = static_cast<float *>(args[0]);
  uint64_t bytes = static_cast<uint64_t>(context.n) * sizeof(float);
  void *scratch =
      extra == Extra::Scratch ? anvil_rt_buffer_alloc(256, bytes) : nullptr;
  launchScale(context.scale, x, factor, context.n, (context.n + 255) / 256,
              256);
  if (extra == Extra::Wait)
    anvil_rt_device_synchronize();
  if (scratch) {
    anvil_rt_device_copy(scratch, x, bytes);
    anvil_rt_device_copy(results[0], scratch, bytes);
    anvil_rt_buffer_free(scratch);
  } else {
    anvil_rt_device_copy(results[0], x, bytes);
  }
}

/// The step functions (anvil_rt_step_fn) of the tests.
void halveAndCopy(void **args, void **results, void *) {
  scaleAndCopy(args, results, 0.5f, Extra::None);
}
void doubleAndCopy(void **args, void **results, void *) {
  scaleAndCopy(args, results, 2.0f, Extra::None);
}
void halveWaitAndCopy(void **args, void **results, void *) {
  scaleAndCopy(args, results, 0.5f, Extra::Wait);
}
void halveThroughScratch(void **args, void **results, void *) {
  scaleAndCopy(args, results, 0.5f, Extra::Scratch);
}

class CudaGraph : public ::testing::Test {
public:
  static constexpr int32_t kN = 1000; // not a multiple of the block

  void SetUp() override {
    Status st = cuda::initialize();
    if (!st.isOk())
      GTEST_SKIP() << st.message();
    module = mgpuModuleLoad(const_cast<char *>(kScalePtx), 0);
    context = StepContext{mgpuModuleGetFunction(module, "scale"), kN, 0};
  }
  void TearDown() override {
    if (module)
      mgpuModuleUnload(module);
  }

  /// Runs `steps` steps as the trainer does, alternating between `sets`
  /// sets of buffers (the trainer's state has two generations), and checks
  /// every step's buffers.
  void runSteps(int sets, int steps, int32_t capturable,
                anvil_rt_step_fn stepFn = halveAndCopy) {
    std::vector<float *> xs, ys;
    for (int s = 0; s < sets; ++s) {
      auto alloc = [] {
        return static_cast<float *>(anvil_rt_buffer_alloc(256, kN * 4));
      };
      xs.push_back(alloc());
      ys.push_back(alloc());
      for (int32_t i = 0; i < kN; ++i)
        xs[s][i] = static_cast<float>((s + 1) * (i + 1));
    }
    std::vector<int> halvings(sets, 0);
    for (int step = 0; step < steps; ++step) {
      int s = step % sets;
      void *args[] = {xs[s]}, *results[] = {ys[s]};
      anvil_rt_begin_step(step + 1);
      anvil_rt_run_step(stepFn, args, 1, results, 1, nullptr, capturable);
      anvil_rt_begin_step(-1);
      // Timed on the device, between events around the step.
      EXPECT_GE(anvil_rt_device_step_seconds(), 0.0) << "step " << step;
      float factor = std::ldexp(1.0f, -++halvings[s]);
      for (int32_t i = 0; i < kN; ++i) {
        float want = static_cast<float>((s + 1) * (i + 1)) * factor;
        ASSERT_EQ(xs[s][i], want) << "step " << step << ", x[" << i << "]";
        ASSERT_EQ(ys[s][i], want) << "step " << step << ", y[" << i << "]";
      }
    }
    for (int s = 0; s < sets; ++s) {
      anvil_rt_buffer_free(xs[s]);
      anvil_rt_buffer_free(ys[s]);
    }
  }

  void *module = nullptr;
};

bool graphs() { return cuda::launchMode() == cuda::LaunchMode::Graph; }

TEST_F(CudaGraph, ReplaysTheStepForEachSetOfBuffers) {
  std::optional<MockCounts> before = mockCounts();
  runSteps(/*sets=*/2, /*steps=*/8, /*capturable=*/1);
  // Graphs: each set's first step runs as it is, its second is captured
  // (and launched), the rest replay without the host code.
  EXPECT_EQ(context.calls, graphs() ? 4 : 8);
  if (std::optional<MockCounts> after = mockCounts()) {
    EXPECT_EQ(after->captures - before->captures, graphs() ? 2 : 0);
    EXPECT_EQ(after->graphLaunches - before->graphLaunches, graphs() ? 6 : 0);
    EXPECT_EQ(after->kernelsRun - before->kernelsRun, graphs() ? 2 : 8);
  }
}

// Two step functions on the same buffers (a training and another step):
// each has its own graph, and neither replays the other's.
TEST_F(CudaGraph, KeepsAGraphPerStepFunction) {
  auto *x = static_cast<float *>(anvil_rt_buffer_alloc(256, kN * 4));
  auto *y = static_cast<float *>(anvil_rt_buffer_alloc(256, kN * 4));
  for (int32_t i = 0; i < kN; ++i)
    x[i] = static_cast<float>(i + 1);
  float factor = 1.0f;
  for (int step = 0; step < 8; ++step) {
    bool halve = step % 2 == 0;
    void *args[] = {x}, *results[] = {y};
    anvil_rt_begin_step(step + 1);
    anvil_rt_run_step(halve ? halveAndCopy : doubleAndCopy, args, 1, results, 1,
                      nullptr, 1);
    anvil_rt_begin_step(-1);
    factor *= halve ? 0.5f : 2.0f;
    for (int32_t i = 0; i < kN; ++i) {
      ASSERT_EQ(x[i], static_cast<float>(i + 1) * factor)
          << "step " << step << ", x[" << i << "]";
      ASSERT_EQ(y[i], x[i]) << "step " << step << ", y[" << i << "]";
    }
  }
  // Each function: run, then captured; the rest replayed.
  EXPECT_EQ(context.calls, graphs() ? 4 : 8);
  anvil_rt_buffer_free(x);
  anvil_rt_buffer_free(y);
}

// A batch the host wrote goes to the device on the step stream, ahead of
// the step (outside a capture: between steps).
TEST_F(CudaGraph, StagesABatchOnTheDevice) {
  auto *batch = static_cast<int32_t *>(anvil_rt_buffer_alloc(256, 4096));
  for (int32_t i = 0; i < 1024; ++i)
    batch[i] = i;
  std::optional<int64_t> before = mockPrefetchedBytes();
  anvil_rt_device_stage(batch, 4096);
  if (std::optional<int64_t> after = mockPrefetchedBytes())
    EXPECT_EQ(*after - *before, 4096);
  ASSERT_TRUE(cuda::synchronizeStepStream("the batch's move").isOk());
  for (int32_t i = 0; i < 1024; ++i)
    ASSERT_EQ(batch[i], i);
  anvil_rt_buffer_free(batch);
}

TEST_F(CudaGraph, RunsAStepTheCompilerDidNotFindCapturable) {
  std::optional<MockCounts> before = mockCounts();
  runSteps(/*sets=*/1, /*steps=*/4, /*capturable=*/0);
  EXPECT_EQ(context.calls, 4);
  if (std::optional<MockCounts> after = mockCounts())
    EXPECT_EQ(after->graphLaunches - before->graphLaunches, 0);
}

/// Runs 4 steps of `step`, which a graph cannot hold, with `capturable` 1
/// (a compiler that missed it): the capture fails and is dropped, the step
/// runs again as it is, and so does every later one; the results are the
/// same. `why` is what the log must say.
void checkFallback(CudaGraph &test, anvil_rt_step_fn step,
                   const std::string &why) {
  std::optional<MockCounts> before = mockCounts();
  ::testing::internal::CaptureStderr();
  test.runSteps(/*sets=*/1, /*steps=*/4, /*capturable=*/1, step);
  std::string log = ::testing::internal::GetCapturedStderr();
  if (graphs()) {
    // The first step, the capture that failed (nothing ran), the same step
    // run again, then two more steps without a graph.
    EXPECT_EQ(context.calls, 5);
    EXPECT_NE(log.find("the training step could not be captured as a CUDA "
                       "graph (" +
                       why),
              std::string::npos)
        << log;
  } else {
    EXPECT_EQ(context.calls, 4);
    EXPECT_EQ(log, "");
  }
  // (A driver may have made a graph, which the runtime dropped.)
  if (std::optional<MockCounts> after = mockCounts())
    EXPECT_EQ(after->graphLaunches - before->graphLaunches, 0);
}

TEST_F(CudaGraph, RunsAStepThatWaitsWithoutAGraph) {
  checkFallback(*this, halveWaitAndCopy, "a wait for the device in the step");
}

TEST_F(CudaGraph, RunsAStepThatAllocatesWithoutAGraph) {
  checkFallback(*this, halveThroughScratch,
                "an allocation in the step (4000 bytes)");
}

} // namespace
