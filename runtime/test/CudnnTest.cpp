//===- CudnnTest.cpp - what cuDNN says of Anvil's problems, no GPU ------===//
//
// cuDNN's descriptors need no device: for each problem, the ones
// anvil_rt_cuda_conv makes must be accepted by cuDNN and give y's sizes
// (cudnnGetConvolutionNdForwardOutputDim), so the mapping of a problem onto
// cuDNN (the unit height of 1-D problems, the filter's C / groups channels,
// the group count, one padding per dimension) is checked on the build
// machine. Nor do cuDNN frontend's checks of the fused attention's graphs
// (for a given architecture). Skipped where libcudnn.so.9 is missing.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"

#include "AttentionCheck.h"
#include "ConvProblems.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

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

/// cuDNN's verdict on `s`'s forward and backward graphs for sm_90, or
/// nothing where cuDNN is missing.
std::optional<std::pair<Status, Status>>
cudnnAttentionVerdicts(const cuda::AttentionShape &s) {
  Status forward = cuda::cudnnAttentionSupport(s, false, 90);
  if (forward.code() == ErrorCode::Unavailable)
    return std::nullopt;
  return std::pair{forward, cuda::cudnnAttentionSupport(s, true, 90)};
}

// The graphs of anvil_rt_cuda_attention_f32 and its gradient pass cuDNN
// frontend's support checks for every shape the GPU tests run whose head
// widths are multiples of 8 (grouped heads, fewer queries than keys: the
// bottom-right diagonal, value dim != dim, causal or not), and for GPT-2's
// and Llama 3's shapes (and BERT-large's, with its padding mask's key
// bias; the cases with a key bias take theirs); a head width that is not is
// refused (Anvil's kernels run it), with cuDNN's reason, as is a key bias
// with the bottom-right diagonal.
TEST(CudnnAttention, TakesHeadWidthsThatAreMultiplesOf8) {
  std::vector<std::pair<std::string, cuda::AttentionShape>> shapes = {
      {"gpt2-124m", {8, 12, 12, 1024, 1024, 64, 64, 0.125f, true}},
      {"llama3-8b", {1, 32, 8, 8192, 8192, 128, 128, 0.0884f, true}},
      {"bert-large", {8, 16, 16, 512, 512, 64, 64, 0.125f, false, true}}};
  for (const anvil::test::AttentionCase &c : anvil::test::kAttentionCases)
    shapes.push_back({c.name,
                      {c.batch, c.heads, c.kvHeads, c.queries, c.keys, c.dim,
                       c.valueDim, 0.125f, c.causal, c.keyBias}});
  for (const auto &[name, s] : shapes) {
    auto verdicts = cudnnAttentionVerdicts(s);
    if (!verdicts)
      GTEST_SKIP() << "no cuDNN";
    auto [forward, backward] = *verdicts;
    if (s.keyBias && s.causal && s.keys != s.queries) {
      // The frontend takes no bias with the bottom-right diagonal.
      for (const Status &verdict : {forward, backward})
        EXPECT_NE(verdict.message().find("Bottom right causal mask is only "
                                         "supported with is_bias=False"),
                  std::string::npos)
            << name << ": " << verdict.message();
    } else if (s.dim % 8 == 0 && s.valueDim % 8 == 0) {
      EXPECT_TRUE(forward.isOk()) << name << ": " << forward.message();
      EXPECT_TRUE(backward.isOk()) << name << ": " << backward.message();
    } else {
      EXPECT_FALSE(forward.isOk()) << name;
      EXPECT_FALSE(backward.isOk()) << name;
      EXPECT_NE(forward.message().find("multiple of 8"), std::string::npos)
          << name << ": " << forward.message();
    }
  }
}

} // namespace
