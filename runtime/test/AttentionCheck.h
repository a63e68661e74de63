//===- AttentionCheck.h - fused attention kernels against the CPU's -------===//
//
// What the GPU test (CudaTest.cpp) and the emulated one
// (cuda-emulation/AttentionEmulationTest.cpp) of Attention.cu's kernels
// share: the shapes both run, pseudo-random inputs with the CPU reference's
// results (anvil_rt_attention_f32, _grad_f32), the deviation of a device
// result from them and the tolerances.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TEST_ATTENTIONCHECK_H
#define ANVIL_RUNTIME_TEST_ATTENTIONCHECK_H

#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace anvil::test {

/// One attention problem.
struct AttentionCase {
  const char *name; ///< A test name: letters and digits.
  int64_t batch, heads, kvHeads, queries, keys, dim, valueDim;
  bool causal;
};

/// Batch, heads, kv heads, queries, keys, dim, value dim, causal: tails of
/// every tile (100, 257, 37 are no multiples of 16 or 64), grouped query
/// heads, fewer queries than keys, the tiny configs (gpt-tiny, llama-tiny:
/// dim 16), GPT-2's heads, dims padded to the next tile width (40 -> 64,
/// value dim 24 -> 64, 100 -> 128) and each tile width's own kernels.
inline const AttentionCase kAttentionCases[] = {
    {"GroupedHeads", 2, 4, 2, 100, 100, 32, 32, true},
    {"LlamaTiny", 4, 4, 2, 32, 32, 16, 16, true},
    {"GptTiny", 4, 4, 4, 32, 32, 16, 16, false},
    {"Gpt2Head", 1, 2, 2, 257, 257, 64, 64, false},
    {"Gpt2HeadCausal", 1, 2, 2, 257, 257, 64, 64, true},
    {"Queries64Keys192", 2, 3, 1, 64, 192, 64, 64, true},
    {"Dim128", 1, 2, 1, 130, 130, 128, 128, true},
    {"Dim100", 1, 2, 2, 33, 81, 100, 100, false},
    {"Dim40ValueDim24", 2, 2, 2, 37, 50, 40, 24, false},
};

/// f32: FMAs in another order than the CPU's (online softmax, tiles). bf16:
/// the device rounds the unnormalized probabilities where the CPU rounds the
/// normalized ones, and reads delta = dOut . out (out rounded) where the CPU
/// sums dp p: a few bf16 ulps, accumulated over the rows. A result agrees
/// when max |device - CPU| <= forward (out, lse) or gradient (dq, dk, dv)
/// times max |CPU|, plus floor.
struct AttentionTolerance {
  double forward, gradient, floor;
};
inline constexpr AttentionTolerance kF32Tolerance = {1e-5, 2e-5, 1e-6};
inline constexpr AttentionTolerance kBf16Tolerance = {2e-2, 5e-2, 1e-3};

/// A problem's inputs (pseudo-random in [-1, 1], seed 1234; scale
/// 1/sqrt(dim)) and the CPU's results.
struct AttentionReference {
  std::vector<float> q, k, v, dOut;
  float scale = 1;
  std::vector<float> out, lse, dq, dk, dv;
};

inline AttentionReference referenceAttention(const AttentionCase &c,
                                             bool bf16) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto random = [&](int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float &v : x)
      v = dist(rng);
    return x;
  };
  const int64_t rows = c.batch * c.heads * c.queries;
  const int64_t kvRows = c.batch * c.kvHeads * c.keys;
  AttentionReference r;
  r.q = random(rows * c.dim);
  r.k = random(kvRows * c.dim);
  r.v = random(kvRows * c.valueDim);
  r.dOut = random(rows * c.valueDim);
  r.scale = 1.0f / std::sqrt(static_cast<float>(c.dim));
  r.out.resize(static_cast<size_t>(rows * c.valueDim));
  r.lse.resize(static_cast<size_t>(rows));
  r.dq.resize(r.q.size());
  r.dk.resize(r.k.size());
  r.dv.resize(r.v.size());
  anvil_rt_attention_f32(r.q.data(), r.k.data(), r.v.data(), r.out.data(),
                         r.lse.data(), c.batch, c.heads, c.kvHeads, c.queries,
                         c.keys, c.dim, c.valueDim, r.scale, c.causal, bf16);
  anvil_rt_attention_grad_f32(
      r.q.data(), r.k.data(), r.v.data(), r.out.data(), r.lse.data(),
      r.dOut.data(), r.dq.data(), r.dk.data(), r.dv.data(), c.batch, c.heads,
      c.kvHeads, c.queries, c.keys, c.dim, c.valueDim, r.scale, c.causal, bf16);
  return r;
}

/// The largest |got - want| and the largest |want|; a value of `got` that
/// is not finite (a NaN left where nothing was written) is an infinite
/// error.
struct Deviation {
  double error = 0, magnitude = 0;
  size_t at = 0;
  double relative() const { return magnitude > 0 ? error / magnitude : error; }
  bool within(double tolerance, double floor) const {
    return error <= tolerance * magnitude + floor;
  }
};

inline Deviation deviation(const float *got, const std::vector<float> &want) {
  Deviation d;
  for (size_t i = 0; i < want.size(); ++i) {
    double e = std::isfinite(got[i])
                   ? std::abs(static_cast<double>(got[i]) - want[i])
                   : INFINITY;
    if (e > d.error) {
      d.error = e;
      d.at = i;
    }
    d.magnitude = std::max(d.magnitude, std::abs(static_cast<double>(want[i])));
  }
  return d;
}

/// A device's out, lse, dq, dk, dv against the CPU's.
struct AttentionDeviations {
  Deviation out, lse, dq, dk, dv;

  /// Each result with the tolerance it is held to, for reports.
  struct Named {
    const char *name;
    const Deviation &deviation;
    double tolerance;
  };
  std::vector<Named> named(const AttentionTolerance &t) const {
    return {{"out", out, t.forward},
            {"lse", lse, t.forward},
            {"dq", dq, t.gradient},
            {"dk", dk, t.gradient},
            {"dv", dv, t.gradient}};
  }
  bool within(const AttentionTolerance &t) const {
    for (const Named &n : named(t))
      if (!n.deviation.within(n.tolerance, t.floor))
        return false;
    return true;
  }
};

} // namespace anvil::test

#endif // ANVIL_RUNTIME_TEST_ATTENTIONCHECK_H
