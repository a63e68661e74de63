//===- NN.cpp - evaluators of normalizations, attention, conv and pooling -===//
//
// Each evaluator spells its op's formula out directly, in float64: the
// normalizations compute mean and biased variance in two passes, attention
// forms every score, convolutions sum over every tap.
//
//===----------------------------------------------------------------------===//

#include "Evaluators.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::interp {
namespace {

/// Normalizes each group of elements given by `groupOf` (group id per
/// linear index, `groups` in all): y = (x - mean) / sqrt(var + eps).
void normalizeGroups(const Buffer &x, int64_t groups, double epsilon,
                     const std::function<int64_t(int64_t)> &groupOf, Buffer &y,
                     std::vector<double> *means = nullptr,
                     std::vector<double> *variances = nullptr) {
  std::vector<double> sum(groups, 0.0), count(groups, 0.0), sq(groups, 0.0);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    sum[groupOf(i)] += x.data[i];
    count[groupOf(i)] += 1.0;
  }
  std::vector<double> mean(groups);
  for (int64_t g = 0; g < groups; ++g)
    mean[g] = sum[g] / count[g];
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double d = x.data[i] - mean[groupOf(i)];
    sq[groupOf(i)] += d * d;
  }
  std::vector<double> var(groups);
  for (int64_t g = 0; g < groups; ++g)
    var[g] = sq[g] / count[g];
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t g = groupOf(i);
    y.data[i] = (x.data[i] - mean[g]) / std::sqrt(var[g] + epsilon);
  }
  if (means)
    *means = mean;
  if (variances)
    *variances = var;
}

/// y = y * scale[c] + bias[c] with c = channelOf(i); either may be null.
void affine(Buffer &y, const Buffer *scale, const Buffer *bias,
            const std::function<int64_t(int64_t)> &channelOf) {
  for (int64_t i = 0; i < y.numElements(); ++i) {
    int64_t c = channelOf(i);
    if (scale)
      y.data[i] *= scale->data[c];
    if (bias)
      y.data[i] += bias->data[c];
  }
}

/// (N, C, spatial...): channel of a linear index, and spatial size.
struct Channels {
  int64_t n, c, spatial;
  explicit Channels(const Buffer &x)
      : n(x.shape[0]), c(x.shape[1]),
        spatial(x.numElements() /
                std::max<int64_t>(1, x.shape[0] * x.shape[1])) {}
  int64_t channel(int64_t i) const { return (i / spatial) % c; }
  int64_t sample(int64_t i) const { return i / (spatial * c); }
};

/// The spatial part of a multi-index, as a vector.
std::vector<int64_t> spatialShape(const Buffer &b) {
  return std::vector<int64_t>(b.shape.begin() + 2, b.shape.end());
}

/// Window geometry shared by convolutions and pooling: tap `kk` of the
/// window at `o` (a full multi-index; spatial dimensions from 2) sits at
/// o * stride - pad_low + kk * dilation in each spatial dimension.
struct Window {
  ArrayRef<int64_t> stride, padLow, dilation; ///< empty dilation: all 1

  /// Writes the tap's spatial position into `at` (from dimension 2) and
  /// returns false if it falls outside `shape`.
  bool tap(ArrayRef<int64_t> o, ArrayRef<int64_t> kk, ArrayRef<int64_t> shape,
           std::vector<int64_t> &at) const {
    for (size_t s = 0; s < kk.size(); ++s) {
      int64_t d = dilation.empty() ? 1 : dilation[s];
      at[s + 2] = o[s + 2] * stride[s] - padLow[s] + kk[s] * d;
      if (at[s + 2] < 0 || at[s + 2] >= shape[s + 2])
        return false;
    }
    return true;
  }
};

/// The rows of fused attention (anvil.flash_attention and its gradient).
struct AttentionRows {
  const Buffer &q, &k;
  const Buffer *keyBias; ///< (B, Tk), or null
  int64_t hq, hkv, tq, tk, d;
  double scale;
  bool causal;
  /// Row i of head (n, h): out[j] = exp(s_j - lse) when `lse` is given,
  /// else the scaled (biased) scores s_j (-inf where hidden).
  void scores(int64_t n, int64_t h, int64_t i, std::vector<double> &out,
              const double *lse = nullptr) const {
    int64_t kh = h / (hq / hkv);
    for (int64_t j = 0; j < tk; ++j) {
      double s = -std::numeric_limits<double>::infinity();
      if (!causal || j <= i + tk - tq) {
        s = 0.0;
        for (int64_t e = 0; e < d; ++e)
          s += q.at({n, h, i, e}) * k.at({n, kh, j, e});
        s *= scale;
        if (keyBias)
          s += keyBias->at({n, j});
      }
      out[j] = lse ? std::exp(s - *lse) : s;
    }
  }
};

/// `b` (rank 4) with dimensions 1 and 2 swapped: (B, T, H, D) <-> (B, H,
/// T, D).
Buffer swapHeadsAndSequence(const Buffer &b) {
  std::vector<int64_t> shape = b.shape;
  std::swap(shape[1], shape[2]);
  Buffer swapped(shape, b.elementType);
  forEachIndex(b.shape, [&](ArrayRef<int64_t> i) {
    swapped.at({i[0], i[2], i[1], i[3]}) = b.at(i);
  });
  return swapped;
}

/// Evaluates a flash attention op with `evaluate`, written for the (B, H,
/// T, D) layout; with `bshd`, its operands and results at `inputs` and
/// `outputs` (the 4-D ones) are swapped into that layout and back.
LogicalResult
inHeadsMajorLayout(bool bshd, ArrayRef<const Buffer *> in,
                   std::vector<Buffer> &out, ArrayRef<size_t> inputs,
                   ArrayRef<size_t> outputs,
                   llvm::function_ref<LogicalResult(ArrayRef<const Buffer *>,
                                                    std::vector<Buffer> &)>
                       evaluate) {
  if (!bshd)
    return evaluate(in, out);
  std::vector<Buffer> swappedIn;
  swappedIn.reserve(inputs.size());
  SmallVector<const Buffer *> operands(in.begin(), in.end());
  for (size_t i : inputs) {
    swappedIn.push_back(swapHeadsAndSequence(*in[i]));
    operands[i] = &swappedIn.back();
  }
  std::vector<Buffer> results = out;
  for (size_t i : outputs)
    results[i] = swapHeadsAndSequence(out[i]);
  if (failed(evaluate(operands, results)))
    return failure();
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = llvm::is_contained(outputs, i) ? swapHeadsAndSequence(results[i])
                                            : std::move(results[i]);
  return success();
}

/// `keyBias` is the op's key bias operand's buffer, or null.
template <typename OpTy>
AttentionRows attentionRows(OpTy op, const Buffer &q, const Buffer &k,
                            const Buffer *keyBias) {
  return AttentionRows{q,
                       k,
                       keyBias,
                       q.shape[1],
                       k.shape[1],
                       q.shape[2],
                       k.shape[2],
                       q.shape[3],
                       op.getScaleOrDefault(),
                       op.getCausal()};
}

} // namespace

void registerNNEvaluators(EvaluatorTable &t) {
  t.add<ad::LayerNormOp>([](ad::LayerNormOp op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    int64_t inner =
        numElements(ArrayRef<int64_t>(x.shape).drop_front(op.getAxis()));
    normalizeGroups(
        x, x.numElements() / inner, op.getEpsilon().convertToDouble(),
        [&](int64_t i) { return i / inner; }, out[0]);
    const Buffer *scale = op.getScale() ? in[1] : nullptr;
    const Buffer *bias = op.getBias() ? in[op.getScale() ? 2 : 1] : nullptr;
    affine(out[0], scale, bias, [&](int64_t i) { return i % inner; });
    return success();
  });

  t.add<ad::RMSNormOp>([](ad::RMSNormOp op, ArrayRef<const Buffer *> in,
                          std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    int64_t inner =
        numElements(ArrayRef<int64_t>(x.shape).drop_front(op.getAxis()));
    double eps = op.getEpsilon().convertToDouble();
    for (int64_t row = 0; row < x.numElements() / inner; ++row) {
      double sq = 0.0;
      for (int64_t j = 0; j < inner; ++j)
        sq += x.data[row * inner + j] * x.data[row * inner + j];
      double r = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
      for (int64_t j = 0; j < inner; ++j)
        out[0].data[row * inner + j] = x.data[row * inner + j] * r *
                                       (op.getScale() ? in[1]->data[j] : 1.0);
    }
    return success();
  });

  t.add<ad::GroupNormOp>([](ad::GroupNormOp op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    Channels ch(x);
    int64_t groups = op.getGroups(), perGroup = ch.c / groups;
    normalizeGroups(
        x, ch.n * groups, op.getEpsilon().convertToDouble(),
        [&](int64_t i) {
          return ch.sample(i) * groups + ch.channel(i) / perGroup;
        },
        out[0]);
    const Buffer *scale = op.getScale() ? in[1] : nullptr;
    const Buffer *bias = op.getBias() ? in[op.getScale() ? 2 : 1] : nullptr;
    affine(out[0], scale, bias, [&](int64_t i) { return ch.channel(i); });
    return success();
  });

  t.add<ad::InstanceNormOp>([](ad::InstanceNormOp op,
                               ArrayRef<const Buffer *> in,
                               std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    Channels ch(x);
    normalizeGroups(
        x, ch.n * ch.c, op.getEpsilon().convertToDouble(),
        [&](int64_t i) { return i / ch.spatial; }, out[0]);
    const Buffer *scale = op.getScale() ? in[1] : nullptr;
    const Buffer *bias = op.getBias() ? in[op.getScale() ? 2 : 1] : nullptr;
    affine(out[0], scale, bias, [&](int64_t i) { return ch.channel(i); });
    return success();
  });

  t.add<ad::BatchNormTrainOp>([](ad::BatchNormTrainOp op,
                                 ArrayRef<const Buffer *> in,
                                 std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    Channels ch(x);
    std::vector<double> mean, var;
    normalizeGroups(
        x, ch.c, op.getEpsilon().convertToDouble(),
        [&](int64_t i) { return ch.channel(i); }, out[0], &mean, &var);
    affine(out[0], in[1], in[2], [&](int64_t i) { return ch.channel(i); });
    out[1].data = mean;
    out[2].data = var;
    return success();
  });

  t.add<ad::BatchNormInferenceOp>([](ad::BatchNormInferenceOp op,
                                     ArrayRef<const Buffer *> in,
                                     std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    Channels ch(x);
    double eps = op.getEpsilon().convertToDouble();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t c = ch.channel(i);
      out[0].data[i] = (x.data[i] - in[3]->data[c]) /
                           std::sqrt(in[4]->data[c] + eps) * in[1]->data[c] +
                       in[2]->data[c];
    }
    return success();
  });

  // Pairs (a, b) = (x[i], x[i + D/2]), or (x[2i], x[2i+1]) interleaved,
  // become (a cos - b sin, a sin + b cos) with cos/sin[t, i].
  t.add<ad::RopeOp>(
      [](ad::RopeOp op, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        const Buffer &x = *in[0], &cos = *in[1], &sin = *in[2];
        int64_t d = x.shape.back(), tlen = x.shape[x.rank() - 2], half = d / 2;
        for (int64_t row = 0; row < x.numElements() / d; ++row) {
          int64_t tpos = row % tlen;
          const double *px = x.data.data() + row * d;
          double *py = out[0].data.data() + row * d;
          for (int64_t i = 0; i < half; ++i) {
            int64_t ia = op.getInterleaved() ? 2 * i : i;
            int64_t ib = op.getInterleaved() ? 2 * i + 1 : i + half;
            double c = cos.data[tpos * half + i], s = sin.data[tpos * half + i];
            py[ia] = px[ia] * c - px[ib] * s;
            py[ib] = px[ia] * s + px[ib] * c;
          }
        }
        return success();
      });

  // softmax(q k^T * scale + mask) v per (batch, query head); query head h
  // reads key/value head h / (Hq / Hkv); causal: key j visible to query i
  // iff j <= i + Tk - Tq.
  t.add<ad::AttentionOp>([](ad::AttentionOp op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) {
    const Buffer &q = *in[0], &k = *in[1], &v = *in[2];
    const Buffer *mask = op.getMask() ? in[3] : nullptr;
    int64_t b = q.shape[0], hq = q.shape[1], tq = q.shape[2], d = q.shape[3];
    int64_t hkv = k.shape[1], tk = k.shape[2], dv = v.shape[3];
    double scale = op.getScale() ? op.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(static_cast<double>(d));
    std::vector<double> scores(tk);
    for (int64_t n = 0; n < b; ++n)
      for (int64_t h = 0; h < hq; ++h) {
        int64_t kh = h / (hq / hkv);
        for (int64_t i = 0; i < tq; ++i) {
          double max = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < tk; ++j) {
            double s = 0.0;
            for (int64_t e = 0; e < d; ++e)
              s += q.at({n, h, i, e}) * k.at({n, kh, j, e});
            s *= scale;
            if (mask)
              s += mask->rank() == 2
                       ? mask->at({i, j})
                       : mask->at({mask->shape[0] == 1 ? 0 : n,
                                   mask->shape[1] == 1 ? 0 : h, i, j});
            if (op.getCausal() && j > i + tk - tq)
              s = -std::numeric_limits<double>::infinity();
            scores[j] = s;
            max = std::max(max, s);
          }
          double sum = 0.0;
          for (int64_t j = 0; j < tk; ++j) {
            scores[j] = std::exp(scores[j] - max);
            sum += scores[j];
          }
          for (int64_t e = 0; e < dv; ++e) {
            double acc = 0.0;
            for (int64_t j = 0; j < tk; ++j)
              acc += scores[j] / sum * v.at({n, kh, j, e});
            out[0].at({n, h, i, e}) = acc;
          }
        }
      }
    return success();
  });

  // The fused forms: the same attention without a mask (or with a key
  // bias), and each row's log-sum-exp of its scaled, masked scores; the
  // gradient recomputes the probabilities from it (as the fused kernels do),
  // all in f64. With `bshd` they run on their operands swapped into (B, H, T,
  // D).
  t.add<ad::FlashAttentionOp>([](ad::FlashAttentionOp op,
                                 ArrayRef<const Buffer *> operands,
                                 std::vector<Buffer> &results) {
    return inHeadsMajorLayout(
        op.getBshd(), operands, results, {0, 1, 2}, {0},
        [&](ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
          const Buffer &q = *in[0], &k = *in[1], &v = *in[2];
          AttentionRows rows =
              attentionRows(op, q, k, op.getKeyBias() ? in[3] : nullptr);
          int64_t dv = v.shape[3];
          std::vector<double> p(rows.tk);
          for (int64_t n = 0; n < q.shape[0]; ++n)
            for (int64_t h = 0; h < rows.hq; ++h)
              for (int64_t i = 0; i < rows.tq; ++i) {
                rows.scores(n, h, i, p);
                double max = *std::max_element(p.begin(), p.end()), sum = 0.0;
                for (double &x : p)
                  sum += (x = std::exp(x - max));
                int64_t kh = h / (rows.hq / rows.hkv);
                for (int64_t e = 0; e < dv; ++e) {
                  double acc = 0.0;
                  for (int64_t j = 0; j < rows.tk; ++j)
                    acc += p[j] / sum * v.at({n, kh, j, e});
                  out[0].at({n, h, i, e}) = acc;
                }
                out[1].at({n, h, i}) = max + std::log(sum);
              }
          return success();
        });
  });
  // With `packed_grads` the three (B, T, H, D) gradients are computed
  // apart, then laid side by side in each (B, T) row of the one result.
  t.add<ad::FlashAttentionGradOp>([](ad::FlashAttentionGradOp op,
                                     ArrayRef<const Buffer *> operands,
                                     std::vector<Buffer> &packedOrNot) {
    std::vector<Buffer> separate;
    if (op.getPackedGrads())
      for (size_t i = 0; i < 3; ++i)
        separate.emplace_back(operands[i]->shape, operands[i]->elementType);
    std::vector<Buffer> &results = op.getPackedGrads() ? separate : packedOrNot;
    LogicalResult computed = inHeadsMajorLayout(
        op.getBshd(), operands, results, {0, 1, 2, 3, 5}, {0, 1, 2},
        [&](ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
          const Buffer &q = *in[0], &k = *in[1], &v = *in[2], &lse = *in[4],
                       &g = *in[5];
          AttentionRows rows =
              attentionRows(op, q, k, op.getKeyBias() ? in[6] : nullptr);
          int64_t dv = v.shape[3], d = rows.d;
          for (Buffer &b : out)
            std::fill(b.data.begin(), b.data.end(), 0.0);
          std::vector<double> p(rows.tk), dp(rows.tk);
          for (int64_t n = 0; n < q.shape[0]; ++n)
            for (int64_t h = 0; h < rows.hq; ++h) {
              int64_t kh = h / (rows.hq / rows.hkv);
              for (int64_t i = 0; i < rows.tq; ++i) {
                double rowLse = lse.at({n, h, i});
                rows.scores(n, h, i, p, &rowLse);
                double rowDot = 0.0;
                for (int64_t j = 0; j < rows.tk; ++j) {
                  dp[j] = 0.0;
                  for (int64_t e = 0; e < dv; ++e)
                    dp[j] += g.at({n, h, i, e}) * v.at({n, kh, j, e});
                  rowDot += dp[j] * p[j];
                }
                for (int64_t j = 0; j < rows.tk; ++j) {
                  double ds = p[j] * (dp[j] - rowDot) * rows.scale;
                  for (int64_t e = 0; e < dv; ++e)
                    out[2].at({n, kh, j, e}) += p[j] * g.at({n, h, i, e});
                  for (int64_t e = 0; e < d; ++e) {
                    out[0].at({n, h, i, e}) += ds * k.at({n, kh, j, e});
                    out[1].at({n, kh, j, e}) += ds * q.at({n, h, i, e});
                  }
                }
              }
            }
          return success();
        });
    if (failed(computed) || !op.getPackedGrads())
      return computed;
    Buffer &packed = packedOrNot[0];
    int64_t row = packed.shape[2], column = 0;
    for (const Buffer &g : separate) {
      int64_t width = g.shape[2] * g.shape[3];
      for (int64_t bt = 0; bt < g.shape[0] * g.shape[1]; ++bt)
        std::copy_n(g.data.begin() + bt * width, width,
                    packed.data.begin() + bt * row + column);
      column += width;
    }
    return success();
  });

  // y[n, co, o...] = bias[co] + sum over ci in co's group and taps k of
  //   x[n, ci, o * stride - pad_low + k * dilation] * w[co, ci_local, k].
  t.add<ad::ConvOp>(
      [](ad::ConvOp op, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        const Buffer &x = *in[0], &w = *in[1];
        Buffer &y = out[0];
        ArrayRef<int64_t> stride = op.getStride(), pad = op.getPadLow(),
                          dil = op.getDilation();
        Window window{stride, pad, dil};
        int64_t groups = op.getGroups(), cinG = w.shape[1],
                coutG = w.shape[0] / groups;
        std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
        std::vector<int64_t> xi(x.rank()), wi(w.rank());
        forEachIndex(y.shape, [&](ArrayRef<int64_t> o) {
          int64_t n = o[0], co = o[1], g = co / coutG;
          double acc = op.getBias() ? in[2]->data[co] : 0.0;
          for (int64_t ci = 0; ci < cinG; ++ci)
            forEachIndex(kernel, [&](ArrayRef<int64_t> kk) {
              xi[0] = n;
              xi[1] = g * cinG + ci;
              if (!window.tap(o, kk, x.shape, xi))
                return;
              wi[0] = co;
              wi[1] = ci;
              for (size_t s = 0; s < kernel.size(); ++s)
                wi[s + 2] = kk[s];
              acc += x.at(xi) * w.at(wi);
            });
          y.at(o) = acc;
        });
        return success();
      });

  // The adjoint: each input element scatters into
  //   y[n, g*Cout/g + co, i * stride - pad_low + k * dilation]
  // with weight w[ci, co, k].
  t.add<ad::ConvTransposeOp>([](ad::ConvTransposeOp op,
                                ArrayRef<const Buffer *> in,
                                std::vector<Buffer> &out) {
    const Buffer &x = *in[0], &w = *in[1];
    Buffer &y = out[0];
    ArrayRef<int64_t> stride = op.getStride(), pad = op.getPadLow(),
                      dil = op.getDilation();
    Window window{stride, pad, dil};
    int64_t groups = op.getGroups(), cinG = x.shape[1] / groups,
            coutG = w.shape[1];
    std::vector<int64_t> kernel(w.shape.begin() + 2, w.shape.end());
    std::vector<int64_t> yi(y.rank()), wi(w.rank());
    forEachIndex(x.shape, [&](ArrayRef<int64_t> i) {
      int64_t n = i[0], ci = i[1], g = ci / cinG;
      double xv = x.at(i);
      for (int64_t co = 0; co < coutG; ++co)
        forEachIndex(kernel, [&](ArrayRef<int64_t> kk) {
          yi[0] = n;
          yi[1] = g * coutG + co;
          if (!window.tap(i, kk, y.shape, yi))
            return;
          wi[0] = ci;
          wi[1] = co;
          for (size_t s = 0; s < kernel.size(); ++s)
            wi[s + 2] = kk[s];
          y.at(yi) += xv * w.at(wi);
        });
    });
    if (op.getBias()) {
      Channels ch(y);
      for (int64_t j = 0; j < y.numElements(); ++j)
        y.data[j] += in[2]->data[ch.channel(j)];
    }
    return success();
  });

  // dw[co, ci, k] = sum over n, o of g[n, co, o] x[n, grp Cin/groups + ci,
  // o * stride - pad_low + k * dilation] (in-bounds taps only).
  t.add<ad::ConvFilterGradOp>([](ad::ConvFilterGradOp op,
                                 ArrayRef<const Buffer *> in,
                                 std::vector<Buffer> &out) {
    const Buffer &x = *in[0], &g = *in[1];
    Buffer &dw = out[0];
    ArrayRef<int64_t> stride = op.getStride(), pad = op.getPadLow(),
                      dil = op.getDilation();
    Window window{stride, pad, dil};
    int64_t groups = op.getGroups(), cinG = dw.shape[1],
            coutG = dw.shape[0] / groups;
    std::vector<int64_t> kernel(dw.shape.begin() + 2, dw.shape.end());
    std::vector<int64_t> xi(x.rank()), wi(dw.rank());
    forEachIndex(g.shape, [&](ArrayRef<int64_t> o) {
      int64_t n = o[0], co = o[1], grp = co / coutG;
      double gv = g.at(o);
      for (int64_t ci = 0; ci < cinG; ++ci)
        forEachIndex(kernel, [&](ArrayRef<int64_t> kk) {
          xi[0] = n;
          xi[1] = grp * cinG + ci;
          if (!window.tap(o, kk, x.shape, xi))
            return;
          wi[0] = co;
          wi[1] = ci;
          for (size_t s = 0; s < kernel.size(); ++s)
            wi[s + 2] = kk[s];
          dw.at(wi) += gv * x.at(xi);
        });
    });
    return success();
  });

  // Each window's gradient goes to its first maximum.
  t.add<ad::MaxPoolGradOp>([](ad::MaxPoolGradOp op, ArrayRef<const Buffer *> in,
                              std::vector<Buffer> &out) {
    const Buffer &x = *in[0], &g = *in[1];
    ArrayRef<int64_t> stride = op.getStride(), pad = op.getPadLow();
    Window window{stride, pad, {}};
    std::vector<int64_t> win(op.getWindow().begin(), op.getWindow().end());
    std::vector<int64_t> xi(x.rank()), best;
    forEachIndex(g.shape, [&](ArrayRef<int64_t> o) {
      double max = -std::numeric_limits<double>::infinity();
      best.clear();
      forEachIndex(win, [&](ArrayRef<int64_t> kk) {
        xi[0] = o[0];
        xi[1] = o[1];
        if (!window.tap(o, kk, x.shape, xi))
          return;
        if (best.empty() || x.at(xi) > max) {
          max = x.at(xi);
          best = xi;
        }
      });
      if (!best.empty())
        out[0].at(best) += g.at(o);
    });
    return success();
  });

  // Windows over the padded spatial dimensions; padding never wins a max
  // and counts toward an average only with count_include_pad.
  auto pool = [](Operation *op, const Buffer &x, Buffer &y,
                 ArrayRef<int64_t> windowSize, ArrayRef<int64_t> stride,
                 ArrayRef<int64_t> pad, bool isMax, bool countPad) {
    Window window{stride, pad, {}};
    std::vector<int64_t> xi(x.rank());
    std::vector<int64_t> win(windowSize.begin(), windowSize.end());
    forEachIndex(y.shape, [&](ArrayRef<int64_t> o) {
      double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
      double count = 0.0;
      forEachIndex(win, [&](ArrayRef<int64_t> kk) {
        xi[0] = o[0];
        xi[1] = o[1];
        if (!window.tap(o, kk, x.shape, xi))
          return;
        double v = x.at(xi);
        acc = isMax
                  ? (std::isnan(v) || std::isnan(acc) ? NAN : std::max(acc, v))
                  : acc + v;
        count += 1.0;
      });
      y.at(o) = isMax ? acc
                      : acc / (countPad ? static_cast<double>(numElements(win))
                                        : count);
    });
    (void)op;
  };
  t.add<ad::MaxPoolOp>([pool](ad::MaxPoolOp op, ArrayRef<const Buffer *> in,
                              std::vector<Buffer> &out) {
    pool(op, *in[0], out[0], op.getWindow(), op.getStride(), op.getPadLow(),
         /*isMax=*/true, false);
    return success();
  });
  t.add<ad::AvgPoolOp>([pool](ad::AvgPoolOp op, ArrayRef<const Buffer *> in,
                              std::vector<Buffer> &out) {
    pool(op, *in[0], out[0], op.getWindow(), op.getStride(), op.getPadLow(),
         /*isMax=*/false, op.getCountIncludePad());
    return success();
  });
}

} // namespace anvil::interp
