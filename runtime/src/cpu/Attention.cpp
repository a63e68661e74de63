//===- Attention.cpp - fused attention on the CPU, row by row -------------===//
//
// anvil_rt_attention_f32 and its gradient (RuntimeABI.h) as the reference
// of the fused kernels: each query row's scores are computed, normalized
// and consumed in order, the probabilities never stored beyond the row.
// The arithmetic follows anvil.attention's decomposition: the products
// accumulate in f32 in key (or query) order; with `bf16`, their operands
// and results are rounded to bf16 (round to nearest even), the softmax is
// f32; a key bias is added to the scaled scores. Work is split over
// (batch, key/value head) pairs, so the query heads of a group add their dk
// and dv on one thread in a fixed order. Every 4-D tensor is read and
// written where its anvil_rt_attention_layout places it.
// The bf16 tensors' functions widen their operands into contiguous f32
// copies, run the f32 functions with `bf16`, and round the results (bf16
// values already) into place.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/DType.h"
#include "anvil/runtime/RuntimeABI.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace {

/// `x` rounded to the nearest bf16 (ties to even) and widened back; NaN
/// stays NaN.
float roundBF16(float x) {
  return anvil::rt::fromBF16Bits(anvil::rt::toBF16Bits(x));
}

struct Shape {
  int64_t batch, heads, kvHeads, queries, keys, dim, valueDim;
  float scale;
  bool causal, bf16;

  int64_t group() const { return heads / kvHeads; }
  /// Keys 0 .. lastKey(i) are visible to query i.
  int64_t visibleKeys(int64_t i) const {
    return causal ? std::min(keys, i + keys - queries + 1) : keys;
  }
  /// A product's operand or result as the product sees it: rounded to
  /// bf16 with `bf16`.
  float rounded(float x) const { return bf16 ? roundBF16(x) : x; }
};

/// One of the 4-D tensors where its layout places it.
template <typename T> struct Strided {
  T *data;
  int64_t batch, head, row;
  Strided(T *base, const anvil_rt_attention_layout &l)
      : data(base + l.offset), batch(l.batch), head(l.head), row(l.row) {}
  /// Row t of head h of batch b.
  T *at(int64_t b, int64_t h, int64_t t) const {
    return data + b * batch + h * head + t * row;
  }
};

/// Rows [first, first + n) of head (b, h) of `x`, `width` values each,
/// contiguous and rounded as a product's operands.
void operands(const Shape &s, const Strided<const float> &x, int64_t b,
              int64_t h, int64_t first, int64_t n, int64_t width,
              std::vector<float> &out) {
  out.resize(static_cast<size_t>(n * width));
  for (int64_t t = 0; t < n; ++t) {
    const float *row = x.at(b, h, first + t);
    for (int64_t d = 0; d < width; ++d)
      out[t * width + d] = s.rounded(row[d]);
  }
}

/// The scores of query row `qi` (dim values, already rounded) against the
/// first `visible` keys of `kh` (rounded): s_j = product(q . k_j) * scale
/// + bias_j (`bias`: the batch element's keys' bias, or null).
void scores(const Shape &s, const float *qi, const float *kh, const float *bias,
            int64_t visible, float *out) {
  for (int64_t j = 0; j < visible; ++j) {
    float dot = 0.0f;
    const float *kj = kh + j * s.dim;
    for (int64_t d = 0; d < s.dim; ++d)
      dot += qi[d] * kj[d];
    out[j] = s.rounded(dot) * s.scale;
    if (bias)
      out[j] += bias[j];
  }
}

/// Batch element b's row of `keyBias` (batch, keys), or null.
const float *biasRow(const Shape &s, const float *keyBias, int64_t b) {
  return keyBias ? keyBias + b * s.keys : nullptr;
}

struct Forward {
  Shape s;
  Strided<const float> q, k, v;
  const float *keyBias;
  Strided<float> out;
  float *lse;
};

void forwardChunk(void *ctx, int64_t lo, int64_t hi) {
  const Forward &f = *static_cast<const Forward *>(ctx);
  const Shape &s = f.s;
  std::vector<float> kh, vh, qi, row(static_cast<size_t>(s.keys)), acc;
  acc.resize(static_cast<size_t>(s.valueDim));
  for (int64_t pair = lo; pair < hi; ++pair) {
    int64_t b = pair / s.kvHeads, kvh = pair % s.kvHeads;
    operands(s, f.k, b, kvh, 0, s.keys, s.dim, kh);
    operands(s, f.v, b, kvh, 0, s.keys, s.valueDim, vh);
    for (int64_t h = kvh * s.group(); h < (kvh + 1) * s.group(); ++h) {
      int64_t head = b * s.heads + h;
      for (int64_t i = 0; i < s.queries; ++i) {
        int64_t visible = s.visibleKeys(i);
        operands(s, f.q, b, h, i, 1, s.dim, qi);
        scores(s, qi.data(), kh.data(), biasRow(s, f.keyBias, b), visible,
               row.data());
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < visible; ++j)
          max = std::max(max, row[j]);
        float sum = 0.0f;
        for (int64_t j = 0; j < visible; ++j) {
          row[j] = std::exp(row[j] - max);
          sum += row[j];
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = 0; j < visible; ++j) {
          float p = s.rounded(row[j] / sum);
          const float *vj = vh.data() + j * s.valueDim;
          for (int64_t d = 0; d < s.valueDim; ++d)
            acc[d] += p * vj[d];
        }
        float *o = f.out.at(b, h, i);
        for (int64_t d = 0; d < s.valueDim; ++d)
          o[d] = s.rounded(acc[d]);
        f.lse[head * s.queries + i] = max + std::log(sum);
      }
    }
  }
}

/// (The CPU sums dp p for each row; the forward's out, which a GPU reads
/// for the same sum, is not needed here.)
struct Backward {
  Shape s;
  Strided<const float> q, k, v, dOut;
  const float *keyBias;
  Strided<float> dq, dk, dv;
  const float *lse;
};

void backwardChunk(void *ctx, int64_t lo, int64_t hi) {
  const Backward &g = *static_cast<const Backward *>(ctx);
  const Shape &s = g.s;
  int64_t keys = s.keys, dim = s.dim, vdim = s.valueDim;
  std::vector<float> kh, vh, qh, gh, p(static_cast<size_t>(keys)),
      dp(static_cast<size_t>(keys)), dqRow(static_cast<size_t>(dim)),
      dkHead(static_cast<size_t>(keys * dim)),
      dvHead(static_cast<size_t>(keys * vdim)),
      dk(static_cast<size_t>(keys * dim)), dv(static_cast<size_t>(keys * vdim));
  for (int64_t pair = lo; pair < hi; ++pair) {
    int64_t b = pair / s.kvHeads, kvh = pair % s.kvHeads;
    operands(s, g.k, b, kvh, 0, keys, dim, kh);
    operands(s, g.v, b, kvh, 0, keys, vdim, vh);
    std::fill(dk.begin(), dk.end(), 0.0f);
    std::fill(dv.begin(), dv.end(), 0.0f);
    for (int64_t h = kvh * s.group(); h < (kvh + 1) * s.group(); ++h) {
      int64_t head = b * s.heads + h;
      operands(s, g.q, b, h, 0, s.queries, dim, qh);
      operands(s, g.dOut, b, h, 0, s.queries, vdim, gh);
      std::fill(dkHead.begin(), dkHead.end(), 0.0f);
      std::fill(dvHead.begin(), dvHead.end(), 0.0f);
      for (int64_t i = 0; i < s.queries; ++i) {
        int64_t visible = s.visibleKeys(i);
        const float *qi = qh.data() + i * dim, *gi = gh.data() + i * vdim;
        scores(s, qi, kh.data(), biasRow(s, g.keyBias, b), visible, p.data());
        float lse = g.lse[head * s.queries + i];
        float rowDot = 0.0f;
        for (int64_t j = 0; j < visible; ++j) {
          p[j] = std::exp(p[j] - lse);
          float dot = 0.0f;
          const float *vj = vh.data() + j * vdim;
          for (int64_t d = 0; d < vdim; ++d)
            dot += gi[d] * vj[d];
          dp[j] = s.rounded(dot);
          rowDot += dp[j] * p[j];
        }
        std::fill(dqRow.begin(), dqRow.end(), 0.0f);
        for (int64_t j = 0; j < visible; ++j) {
          // dv_j += p_ij g_i; ds_ij scaled, as an operand of dq and dk.
          float pj = s.rounded(p[j]);
          float *dvj = dvHead.data() + j * vdim;
          for (int64_t d = 0; d < vdim; ++d)
            dvj[d] += pj * gi[d];
          float ds = s.rounded(p[j] * (dp[j] - rowDot) * s.scale);
          const float *kj = kh.data() + j * dim;
          float *dkj = dkHead.data() + j * dim;
          for (int64_t d = 0; d < dim; ++d) {
            dqRow[d] += ds * kj[d];
            dkj[d] += ds * qi[d];
          }
        }
        float *dq = g.dq.at(b, h, i);
        for (int64_t d = 0; d < dim; ++d)
          dq[d] = s.rounded(dqRow[d]);
      }
      for (int64_t x = 0; x < keys * dim; ++x)
        dk[x] += s.rounded(dkHead[x]);
      for (int64_t x = 0; x < keys * vdim; ++x)
        dv[x] += s.rounded(dvHead[x]);
    }
    for (int64_t j = 0; j < keys; ++j) {
      std::copy_n(dk.data() + j * dim, dim, g.dk.at(b, kvh, j));
      std::copy_n(dv.data() + j * vdim, vdim, g.dv.at(b, kvh, j));
    }
  }
}

/// A (batch, heads, rows, width) tensor, contiguous.
anvil_rt_attention_layout contiguous(int64_t heads, int64_t rows,
                                     int64_t width) {
  return {0, heads * rows * width, rows * width, width};
}

/// The bf16 tensor `l` places at `base`, widened into a contiguous copy.
std::vector<float> widen(const uint16_t *base,
                         const anvil_rt_attention_layout &l, int64_t batch,
                         int64_t heads, int64_t rows, int64_t width) {
  std::vector<float> x(static_cast<size_t>(batch * heads * rows * width));
  Strided<const uint16_t> t(base, l);
  float *to = x.data();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        for (const uint16_t *row = t.at(b, h, r), *end = row + width;
             row != end;)
          *to++ = anvil::rt::fromBF16Bits(*row++);
  return x;
}

/// The contiguous `x` rounded to bf16 where `l` places it at `base`.
void narrow(const std::vector<float> &x, uint16_t *base,
            const anvil_rt_attention_layout &l, int64_t batch, int64_t heads,
            int64_t rows, int64_t width) {
  Strided<uint16_t> t(base, l);
  const float *from = x.data();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        for (uint16_t *row = t.at(b, h, r), *end = row + width; row != end;)
          *row++ = anvil::rt::toBF16Bits(*from++);
}

} // namespace

extern "C" void anvil_rt_attention_f32(
    const float *q, const float *k, const float *v, const float *keyBias,
    float *out, float *lse, int64_t batch, int64_t heads, int64_t kvHeads,
    int64_t queries, int64_t keys, int64_t dim, int64_t valueDim, float scale,
    int32_t causal, int32_t bf16, const anvil_rt_attention_layout *l) {
  Shape s{batch, heads,    kvHeads, queries,     keys,
          dim,   valueDim, scale,   causal != 0, bf16 != 0};
  Forward f{s, {q, l[0]}, {k, l[1]}, {v, l[2]}, keyBias, {out, l[3]}, lse};
  anvil_rt_parallel_for(batch * kvHeads, forwardChunk, &f);
}

extern "C" void anvil_rt_attention_grad_f32(
    const float *q, const float *k, const float *v, const float *keyBias,
    const float * /*out*/, const float *lse, const float *dOut, float *dq,
    float *dk, float *dv, int64_t batch, int64_t heads, int64_t kvHeads,
    int64_t queries, int64_t keys, int64_t dim, int64_t valueDim, float scale,
    int32_t causal, int32_t bf16, const anvil_rt_attention_layout *l) {
  Shape s{batch, heads,    kvHeads, queries,     keys,
          dim,   valueDim, scale,   causal != 0, bf16 != 0};
  Backward g{s,       {q, l[0]},  {k, l[1]},  {v, l[2]},  {dOut, l[4]},
             keyBias, {dq, l[5]}, {dk, l[6]}, {dv, l[7]}, lse};
  anvil_rt_parallel_for(batch * kvHeads, backwardChunk, &g);
}

extern "C" void
anvil_rt_attention_bf16(const uint16_t *q, const uint16_t *k, const uint16_t *v,
                        const float *keyBias, uint16_t *out, float *lse,
                        int64_t batch, int64_t heads, int64_t kvHeads,
                        int64_t queries, int64_t keys, int64_t dim,
                        int64_t valueDim, float scale, int32_t causal,
                        const anvil_rt_attention_layout *l) {
  std::vector<float> q32 = widen(q, l[0], batch, heads, queries, dim),
                     k32 = widen(k, l[1], batch, kvHeads, keys, dim),
                     v32 = widen(v, l[2], batch, kvHeads, keys, valueDim),
                     out32(static_cast<size_t>(batch * heads * queries *
                                               valueDim));
  anvil_rt_attention_layout at[4] = {contiguous(heads, queries, dim),
                                     contiguous(kvHeads, keys, dim),
                                     contiguous(kvHeads, keys, valueDim),
                                     contiguous(heads, queries, valueDim)};
  anvil_rt_attention_f32(q32.data(), k32.data(), v32.data(), keyBias,
                         out32.data(), lse, batch, heads, kvHeads, queries,
                         keys, dim, valueDim, scale, causal, /*bf16=*/1, at);
  narrow(out32, out, l[3], batch, heads, queries, valueDim);
}

extern "C" void anvil_rt_attention_grad_bf16(
    const uint16_t *q, const uint16_t *k, const uint16_t *v,
    const float *keyBias, const uint16_t * /*out*/, const float *lse,
    const uint16_t *dOut, uint16_t *dq, uint16_t *dk, uint16_t *dv,
    int64_t batch, int64_t heads, int64_t kvHeads, int64_t queries,
    int64_t keys, int64_t dim, int64_t valueDim, float scale, int32_t causal,
    const anvil_rt_attention_layout *l) {
  std::vector<float> q32 = widen(q, l[0], batch, heads, queries, dim),
                     k32 = widen(k, l[1], batch, kvHeads, keys, dim),
                     v32 = widen(v, l[2], batch, kvHeads, keys, valueDim),
                     dOut32 =
                         widen(dOut, l[4], batch, heads, queries, valueDim),
                     dq32(q32.size()), dk32(k32.size()), dv32(v32.size());
  anvil_rt_attention_layout qAt = contiguous(heads, queries, dim),
                            kAt = contiguous(kvHeads, keys, dim),
                            vAt = contiguous(kvHeads, keys, valueDim),
                            oAt = contiguous(heads, queries, valueDim);
  anvil_rt_attention_layout at[8] = {qAt, kAt, vAt, oAt, oAt, qAt, kAt, vAt};
  anvil_rt_attention_grad_f32(
      q32.data(), k32.data(), v32.data(), keyBias, nullptr, lse, dOut32.data(),
      dq32.data(), dk32.data(), dv32.data(), batch, heads, kvHeads, queries,
      keys, dim, valueDim, scale, causal, /*bf16=*/1, at);
  narrow(dq32, dq, l[5], batch, heads, queries, dim);
  narrow(dk32, dk, l[6], batch, kvHeads, keys, dim);
  narrow(dv32, dv, l[7], batch, kvHeads, keys, valueDim);
}
