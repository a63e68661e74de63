//===- CudnnTest.cpp - anvil_rt_cuda_conv's cuDNN descriptors, no GPU -----===//
//
// cuDNN's descriptors need no device: for each problem, the ones
// anvil_rt_cuda_conv makes must be accepted by cuDNN and give y's sizes
// (cudnnGetConvolutionNdForwardOutputDim), so the mapping of a problem onto
// cuDNN (the unit height of 1-D problems, the filter's C / groups channels,
// the group count, one padding per dimension) is checked on the build
// machine. Skipped where libcudnn.so.9 is missing.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "ConvProblems.h"

#include <gtest/gtest.h>

using namespace anvil::rt;

namespace {

TEST(Cudnn, DescriptorsGiveTheProblemsOutputSizes) {
  for (const std::vector<int64_t> &p : anvil::test::convProblems())
    for (bool bf16 : {false, true}) {
      Expected<std::vector<int64_t>> dims =
          cuda::cudnnForwardDims(p.data(), bf16);
      if (!dims.hasValue() && dims.status().code() == ErrorCode::Unavailable)
        GTEST_SKIP() << dims.status().message();
      ASSERT_TRUE(dims.hasValue()) << dims.status().message();
      std::vector<int64_t> want = {p[1], p[3]};
      if (p[0] == 1)
        want.push_back(1);
      for (int64_t i = 0; i < p[0]; ++i)
        want.push_back(p[6 + 6 * i]);
      EXPECT_EQ(*dims, want)
          << "problem of " << p[0] << " dimensions, C " << p[2] << ", groups "
          << p[4] << (bf16 ? ", bf16" : ", f32");
    }
}

TEST(Cudnn, RefusesAFilterThatDoesNotSplitTheChannels) {
  // C 4 in 3 groups: cuDNN's filter of C / groups = 1 channel does not
  // cover x's 4.
  std::vector<int64_t> p = {2, 1, 4, 3, 3, 5, 5, 1, 1, 0, 1, 5, 5, 1, 1, 0, 1};
  Expected<std::vector<int64_t>> dims = cuda::cudnnForwardDims(p.data(), false);
  if (!dims.hasValue() && dims.status().code() == ErrorCode::Unavailable)
    GTEST_SKIP() << dims.status().message();
  ASSERT_FALSE(dims.hasValue());
  EXPECT_NE(dims.status().message().find("failed"), std::string::npos)
      << dims.status().message();
}

} // namespace
