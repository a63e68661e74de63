//===- AttentionCheck.h - fused attention kernels against the CPU's -------===//
//
// What the GPU test (CudaTest.cpp) and the emulated one
// (cuda-emulation/AttentionEmulationTest.cpp) of Attention.cu's kernels
// share: the shapes both run, pseudo-random inputs with the CPU reference's
// results (anvil_rt_attention_f32, _grad_f32), the placements of the
// tensors in device memory (contiguous, or (B, T, H, D) with gaps between
// rows), a run of the device entry points (anvil_rt_cuda_attention_f32,
// _grad_f32: the GPU's or the emulated ones) on them, the deviation of a
// device result from the CPU's and the tolerances.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TEST_ATTENTIONCHECK_H
#define ANVIL_RUNTIME_TEST_ATTENTIONCHECK_H

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/DType.h"
#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace anvil::test {

/// One attention problem.
struct AttentionCase {
  const char *name; ///< A test name: letters and digits.
  int64_t batch, heads, kvHeads, queries, keys, dim, valueDim;
  bool causal;
  /// Whether the scores get a (batch, keys) bias (referenceAttention's).
  bool keyBias = false;
};

/// Batch, heads, kv heads, queries, keys, dim, value dim, causal: tails of
/// every tile (100, 257, 37 are no multiples of 16 or 64), grouped query
/// heads, fewer queries than keys, the tiny configs (gpt-tiny, llama-tiny:
/// dim 16), GPT-2's heads, dims padded to the next tile width (40 -> 64,
/// value dim 24 -> 64, 100 -> 128) and each tile width's own kernels; and
/// with a key bias: bert-tiny's heads, tails of key blocks (BERT's padding
/// mask), causal and grouped heads, and dim 128.
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
    {"KeyBiasBertTiny", 4, 4, 4, 32, 32, 16, 16, false, true},
    {"KeyBiasTails", 3, 2, 2, 70, 130, 64, 64, false, true},
    {"KeyBiasCausalGrouped", 2, 4, 2, 65, 80, 32, 32, true, true},
    {"KeyBiasDim128", 1, 2, 1, 40, 100, 128, 128, false, true},
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

/// How a problem's 4-D tensors lie in memory (RuntimeABI.h's
/// anvil_rt_attention_layout).
enum class Placement {
  Contiguous,    ///< (B, H, T, D), row-major
  Bshd,          ///< (B, T, H, D), 4 floats between rows, 8 before the first
  BshdUnaligned, ///< (B, T, H, D), 3 floats between rows, 1 before the first
};
inline constexpr Placement kPlacements[] = {
    Placement::Contiguous, Placement::Bshd, Placement::BshdUnaligned};
inline const char *placementName(Placement p) {
  return p == Placement::Contiguous ? "Contiguous"
         : p == Placement::Bshd     ? "Bshd"
                                    : "BshdUnaligned";
}

/// A (batch, heads, rows, width) tensor placed: its layout and the floats
/// its buffer spans.
struct Placed {
  anvil_rt_attention_layout layout;
  int64_t batch, heads, rows, width;
  size_t size;

  int64_t index(int64_t b, int64_t h, int64_t t, int64_t d) const {
    return layout.offset + b * layout.batch + h * layout.head + t * layout.row +
           d;
  }
  /// Calls fn(contiguous index, placed index) for every element.
  template <typename Fn> void forEach(Fn fn) const {
    int64_t i = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t t = 0; t < rows; ++t)
          for (int64_t d = 0; d < width; ++d)
            fn(i++, index(b, h, t, d));
  }
};

inline Placed place(Placement p, int64_t batch, int64_t heads, int64_t rows,
                    int64_t width) {
  if (p == Placement::Contiguous)
    return {{0, heads * rows * width, rows * width, width},
            batch,
            heads,
            rows,
            width,
            static_cast<size_t>(batch * heads * rows * width)};
  int64_t gap = p == Placement::Bshd ? 4 : 3, offset = gap == 4 ? 8 : 1;
  int64_t row = heads * width + gap;
  return {{offset, rows * row, width, row},
          batch,
          heads,
          rows,
          width,
          static_cast<size_t>(offset + batch * rows * row)};
}

/// q, k, v, out, dOut, dq, dk, dv of `c` placed by `p` (RuntimeABI.h's
/// order for the gradient; the forward's q, k, v, out are the first four).
inline std::array<Placed, 8> placeAll(const AttentionCase &c, Placement p) {
  Placed q = place(p, c.batch, c.heads, c.queries, c.dim);
  Placed k = place(p, c.batch, c.kvHeads, c.keys, c.dim);
  Placed v = place(p, c.batch, c.kvHeads, c.keys, c.valueDim);
  Placed out = place(p, c.batch, c.heads, c.queries, c.valueDim);
  return {q, k, v, out, out, q, k, v};
}

inline std::array<anvil_rt_attention_layout, 8>
layoutsOf(const AttentionCase &c, Placement p) {
  std::array<anvil_rt_attention_layout, 8> layouts;
  std::array<Placed, 8> placed = placeAll(c, p);
  for (size_t i = 0; i < 8; ++i)
    layouts[i] = placed[i].layout;
  return layouts;
}

/// A buffer holding contiguous `x` where `p` places it, `fill` elsewhere.
inline std::vector<float> scatter(const Placed &p, const std::vector<float> &x,
                                  float fill) {
  std::vector<float> buffer(std::max<size_t>(p.size, 1), fill);
  p.forEach([&](int64_t i, int64_t at) { buffer[at] = x[i]; });
  return buffer;
}

/// The placed tensor of `buffer`, contiguous.
inline std::vector<float> gather(const Placed &p, const float *buffer) {
  std::vector<float> x(
      static_cast<size_t>(p.batch * p.heads * p.rows * p.width));
  p.forEach([&](int64_t i, int64_t at) { x[i] = buffer[at]; });
  return x;
}

/// Elements of `buffer` (f32, or bf16 bits) outside the placed tensor that
/// are no longer `fill`.
template <typename T>
size_t changedOutside(const Placed &p, const T *buffer, T fill) {
  std::vector<bool> inside(p.size, false);
  p.forEach([&](int64_t, int64_t at) { inside[at] = true; });
  size_t changed = 0;
  for (size_t i = 0; i < p.size; ++i)
    changed += !inside[i] && buffer[i] != fill;
  return changed;
}

/// A problem's inputs (pseudo-random in [-1, 1], seed 1234; scale
/// 1/sqrt(dim)) and the CPU's results, all contiguous. With a key bias,
/// `keyBias` (batch, keys): values in [-2, 2], BERT's padding (-10000) on
/// the last 7 b + 5 keys of batch element b (but key 0), and -inf on key 1
/// (a mask of -inf).
struct AttentionReference {
  std::vector<float> q, k, v, dOut, keyBias;
  float scale = 1;
  std::vector<float> out, lse, dq, dk, dv;
  /// The key bias as the functions take it: null without one.
  const float *bias() const {
    return keyBias.empty() ? nullptr : keyBias.data();
  }
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
  if (c.keyBias) {
    r.keyBias = random(c.batch * c.keys);
    for (int64_t b = 0; b < c.batch; ++b) {
      float *row = r.keyBias.data() + b * c.keys;
      for (int64_t j = 0; j < c.keys; ++j) {
        row[j] *= 2.0f;
        if (j > 0 && j >= c.keys - (7 * b + 5))
          row[j] = -10000.0f;
      }
      if (c.keys > 2)
        row[1] = -INFINITY;
    }
  }
  r.scale = 1.0f / std::sqrt(static_cast<float>(c.dim));
  r.out.resize(static_cast<size_t>(rows * c.valueDim));
  r.lse.resize(static_cast<size_t>(rows));
  r.dq.resize(r.q.size());
  r.dk.resize(r.k.size());
  r.dv.resize(r.v.size());
  auto layouts = layoutsOf(c, Placement::Contiguous);
  anvil_rt_attention_f32(r.q.data(), r.k.data(), r.v.data(), r.bias(),
                         r.out.data(), r.lse.data(), c.batch, c.heads,
                         c.kvHeads, c.queries, c.keys, c.dim, c.valueDim,
                         r.scale, c.causal, bf16, layouts.data());
  anvil_rt_attention_grad_f32(
      r.q.data(), r.k.data(), r.v.data(), r.bias(), r.out.data(), r.lse.data(),
      r.dOut.data(), r.dq.data(), r.dk.data(), r.dv.data(), c.batch, c.heads,
      c.kvHeads, c.queries, c.keys, c.dim, c.valueDim, r.scale, c.causal, bf16,
      layouts.data());
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

inline Deviation deviation(const std::vector<float> &got,
                           const std::vector<float> &want) {
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
  bool within(const AttentionTolerance &t) const { return failures(t).empty(); }
  /// A line for each of the results outside tolerance `t` (empty when all
  /// are within it): its name, the largest error, where, and the CPU's
  /// largest magnitude.
  std::string failures(const AttentionTolerance &t) const {
    std::string lines;
    for (const Named &n : named(t))
      if (!n.deviation.within(n.tolerance, t.floor))
        lines += std::string(n.name) + ": max |device - CPU| " +
                 std::to_string(n.deviation.error) + " at flat index " +
                 std::to_string(n.deviation.at) + ", max |CPU| " +
                 std::to_string(n.deviation.magnitude) + "\n";
    return lines;
  }
  /// Floats the device wrote outside out, dq, dk and dv (in the gaps of
  /// their placements).
  size_t writtenOutside = 0;
};

/// Memory the device entry points read and write: the GPU's (managed) or
/// the emulator's.
struct DeviceMemory {
  std::function<float *(const std::vector<float> &)> copy;
  std::function<void(float *)> release;
  std::function<void(const char *)> synchronize;
};

/// Runs `c` through anvil_rt_cuda_attention_f32 and its gradient with every
/// 4-D tensor placed by `placement` and compares with the CPU's contiguous
/// results. Inputs' gaps hold NaN (a read of one spoils a result); each
/// output starts as NaN (it must be overwritten everywhere) with a sentinel
/// in its gaps (which must stay). The gradient starts from the CPU's out
/// and lse.
inline AttentionDeviations runOnDevice(const AttentionCase &c, bool bf16,
                                       Placement placement,
                                       const DeviceMemory &memory) {
  AttentionReference r = referenceAttention(c, bf16);
  std::array<Placed, 8> at = placeAll(c, placement);
  auto layouts = layoutsOf(c, placement);
  const float sentinel = 12345.0f;
  auto nans = [](size_t n) { return std::vector<float>(n, NAN); };
  auto input = [&](const Placed &p, const std::vector<float> &x) {
    return memory.copy(scatter(p, x, NAN));
  };
  auto output = [&](const Placed &p, size_t n) {
    return memory.copy(scatter(p, nans(n), sentinel));
  };
  float *q = input(at[0], r.q), *k = input(at[1], r.k), *v = input(at[2], r.v),
        *out = output(at[3], r.out.size()),
        *lse = memory.copy(nans(r.lse.size())),
        *bias = c.keyBias ? memory.copy(r.keyBias) : nullptr;
  anvil_rt_cuda_attention_f32(q, k, v, bias, out, lse, c.batch, c.heads,
                              c.kvHeads, c.queries, c.keys, c.dim, c.valueDim,
                              r.scale, c.causal, bf16, layouts.data());
  memory.synchronize("attention");
  AttentionDeviations d;
  d.out = deviation(gather(at[3], out), r.out);
  d.lse = deviation(std::vector<float>(lse, lse + r.lse.size()), r.lse);
  d.writtenOutside += changedOutside(at[3], out, sentinel);

  float *hostOut = input(at[3], r.out), *hostLse = memory.copy(r.lse),
        *dOut = input(at[4], r.dOut), *dq = output(at[5], r.dq.size()),
        *dk = output(at[6], r.dk.size()), *dv = output(at[7], r.dv.size());
  anvil_rt_cuda_attention_grad_f32(q, k, v, bias, hostOut, hostLse, dOut, dq,
                                   dk, dv, c.batch, c.heads, c.kvHeads,
                                   c.queries, c.keys, c.dim, c.valueDim,
                                   r.scale, c.causal, bf16, layouts.data());
  memory.synchronize("attention gradient");
  d.dq = deviation(gather(at[5], dq), r.dq);
  d.dk = deviation(gather(at[6], dk), r.dk);
  d.dv = deviation(gather(at[7], dv), r.dv);
  for (auto [p, x] : {std::pair{at[5], dq}, {at[6], dk}, {at[7], dv}})
    d.writtenOutside += changedOutside(p, x, sentinel);
  for (float *x : {q, k, v, out, lse, hostOut, hostLse, dOut, dq, dk, dv})
    memory.release(x);
  if (bias)
    memory.release(bias);
  return d;
}

/// Memory the bf16 entry points read and write, by bytes: the host's, the
/// GPU's (managed) or the emulator's.
struct RawMemory {
  std::function<void *(size_t)> allocate;
  std::function<void(void *)> release;
  std::function<void(const char *)> synchronize;
};

/// Runs `c` through bf16-tensor entry points with anvil_rt_attention_bf16's
/// and _grad_bf16's signatures (the CPU's, or a device's) with every 4-D
/// tensor placed by `placement`, and compares with the CPU's contiguous
/// results of the f32 functions with bf16 products (referenceAttention),
/// which round the same operands, rounded to bf16 (they are bf16 values
/// already but for dk and dv of grouped heads: sums of the group's bf16
/// products, which a bf16 tensor holds rounded once more). Inputs are
/// rounded to bf16, their gaps NaN; each output starts as NaN with a
/// sentinel in its gaps (which must stay). The gradient starts from the
/// CPU's out and lse.
template <typename Forward, typename Backward>
AttentionDeviations runBf16(const AttentionCase &c, Placement placement,
                            const RawMemory &memory, Forward forward,
                            Backward backward) {
  using anvil::rt::fromBF16Bits;
  using anvil::rt::toBF16Bits;
  AttentionReference r = referenceAttention(c, /*bf16=*/true);
  std::array<Placed, 8> at = placeAll(c, placement);
  auto layouts = layoutsOf(c, placement);
  const uint16_t nan = 0x7fc0, sentinel = 0x1234;
  std::vector<void *> buffers;
  // A buffer of `p`'s span: `fill` in its gaps, x rounded (or NaN) inside.
  auto buffer = [&](const Placed &p, const std::vector<float> *x,
                    uint16_t fill) {
    size_t n = std::max<size_t>(p.size, 1);
    auto *d = static_cast<uint16_t *>(memory.allocate(n * sizeof(uint16_t)));
    std::fill(d, d + n, fill);
    p.forEach(
        [&](int64_t i, int64_t a) { d[a] = x ? toBF16Bits((*x)[i]) : nan; });
    buffers.push_back(d);
    return d;
  };
  auto floats = [&](const std::vector<float> &x) {
    auto *d = static_cast<float *>(
        memory.allocate(std::max<size_t>(x.size(), 1) * sizeof(float)));
    std::copy(x.begin(), x.end(), d);
    buffers.push_back(d);
    return d;
  };
  auto widened = [](const Placed &p, const uint16_t *d) {
    std::vector<float> x(
        static_cast<size_t>(p.batch * p.heads * p.rows * p.width));
    p.forEach([&](int64_t i, int64_t a) { x[i] = fromBF16Bits(d[a]); });
    return x;
  };
  uint16_t *q = buffer(at[0], &r.q, nan), *k = buffer(at[1], &r.k, nan),
           *v = buffer(at[2], &r.v, nan),
           *out = buffer(at[3], nullptr, sentinel);
  float *lse = floats(std::vector<float>(r.lse.size(), NAN));
  float *bias = c.keyBias ? floats(r.keyBias) : nullptr;
  forward(q, k, v, bias, out, lse, c.batch, c.heads, c.kvHeads, c.queries,
          c.keys, c.dim, c.valueDim, r.scale, c.causal, layouts.data());
  memory.synchronize("attention (bf16 tensors)");
  AttentionDeviations d;
  d.out = deviation(widened(at[3], out), r.out);
  d.lse = deviation(std::vector<float>(lse, lse + r.lse.size()), r.lse);
  d.writtenOutside += changedOutside(at[3], out, sentinel);

  uint16_t *hostOut = buffer(at[3], &r.out, nan),
           *dOut = buffer(at[4], &r.dOut, nan),
           *dq = buffer(at[5], nullptr, sentinel),
           *dk = buffer(at[6], nullptr, sentinel),
           *dv = buffer(at[7], nullptr, sentinel);
  float *hostLse = floats(r.lse);
  backward(q, k, v, bias, hostOut, hostLse, dOut, dq, dk, dv, c.batch, c.heads,
           c.kvHeads, c.queries, c.keys, c.dim, c.valueDim, r.scale, c.causal,
           layouts.data());
  memory.synchronize("attention gradient (bf16 tensors)");
  auto rounded = [](std::vector<float> x) {
    for (float &e : x)
      e = fromBF16Bits(toBF16Bits(e));
    return x;
  };
  d.dq = deviation(widened(at[5], dq), rounded(r.dq));
  d.dk = deviation(widened(at[6], dk), rounded(r.dk));
  d.dv = deviation(widened(at[7], dv), rounded(r.dv));
  for (auto [p, x] : {std::pair{at[5], dq}, {at[6], dk}, {at[7], dv}})
    d.writtenOutside += changedOutside(p, x, sentinel);
  for (void *x : buffers)
    memory.release(x);
  return d;
}

} // namespace anvil::test

#endif // ANVIL_RUNTIME_TEST_ATTENTIONCHECK_H
