//===- Shape.cpp - evaluators of data-movement, reduction and matmul ops --===//
//
// Reshape, transpose, broadcast, slice, concat, split, pad, gather,
// embeddings, upsampling, reductions, argmax, the softmaxes and matmul.
// Each loops over the result's indices and reads the operand element it
// comes from, which is the definition of the op.
//
//===----------------------------------------------------------------------===//

#include "Evaluators.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::interp {
namespace {

/// Splits `shape` around `dim` into (outer, size, inner) element counts.
struct Around {
  int64_t outer = 1, size = 1, inner = 1;
  Around(ArrayRef<int64_t> shape, int64_t dim) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      (d < dim ? outer : d == dim ? size : inner) *= shape[d];
  }
};

/// Reads an integer index, checking that it lies in [0, bound).
LogicalResult readIndex(Operation *op, double value, int64_t bound,
                        StringRef what, int64_t &index) {
  index = static_cast<int64_t>(value);
  if (index < 0 || index >= bound)
    return op->emitError("anvil-interp: ")
           << what << " " << index << " is out of range [0, " << bound << ")";
  return success();
}

template <typename OpTy>
void reduction(EvaluatorTable &t, double init,
               double (*combine)(double, double), bool mean) {
  t.add<OpTy>(
      [=](OpTy op, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        const Buffer &x = *in[0];
        ArrayRef<int64_t> dims = op.getDims();
        std::fill(out[0].data.begin(), out[0].data.end(), init);
        std::vector<int64_t> outIndex;
        int64_t count = 1;
        for (int64_t d : dims)
          count *= x.shape[d];
        forEachIndex(x.shape, [&](ArrayRef<int64_t> idx) {
          outIndex.clear();
          for (int64_t d = 0; d < x.rank(); ++d) {
            if (!llvm::is_contained(dims, d))
              outIndex.push_back(idx[d]);
            else if (op.getKeepDims())
              outIndex.push_back(0);
          }
          double &acc = out[0].at(outIndex);
          acc = combine(acc, x.at(idx));
        });
        if (mean)
          for (double &v : out[0].data)
            v /= static_cast<double>(count);
        return success();
      });
}

double nanMax(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
double nanMin(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
}

/// Softmax or log-softmax along `dim`, max-subtracted.
void softmaxAlong(const Buffer &x, int64_t dim, bool logarithm, Buffer &out) {
  Around a(x.shape, dim);
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i) {
      auto at = [&](int64_t k) { return (o * a.size + k) * a.inner + i; };
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < a.size; ++k)
        max = nanMax(max, x.data[at(k)]);
      double sum = 0.0;
      for (int64_t k = 0; k < a.size; ++k)
        sum += std::exp(x.data[at(k)] - max);
      for (int64_t k = 0; k < a.size; ++k)
        out.data[at(k)] = logarithm ? x.data[at(k)] - max - std::log(sum)
                                    : std::exp(x.data[at(k)] - max) / sum;
    }
}

} // namespace

/// C (batches of m x n) = op(A) op(B) for `batches` (..., m, k) x (...,
/// k, n) products after the transposes; a rank-2 `b` is shared.
static void product(const Buffer &a, const Buffer &b, bool tl, bool tr,
                    int64_t m, int64_t n, int64_t k, int64_t batches,
                    double *c) {
  bool sharedRhs = b.rank() == 2;
  for (int64_t bt = 0; bt < batches; ++bt) {
    const double *pa = a.data.data() + bt * m * k;
    const double *pb = b.data.data() + (sharedRhs ? 0 : bt * k * n);
    double *pc = c + bt * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          double x = tl ? pa[p * m + i] : pa[i * k + p];
          double y = tr ? pb[j * k + p] : pb[p * n + j];
          sum += x * y;
        }
        pc[i * n + j] = sum;
      }
  }
}

template <typename MatmulLike>
static LogicalResult matmul(MatmulLike op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) {
  const Buffer &a = *in[0];
  Buffer &c = out[0];
  int64_t m = c.shape[c.rank() - 2], n = c.shape[c.rank() - 1];
  int64_t k =
      op.getTransposeLhs() ? a.shape[a.rank() - 2] : a.shape[a.rank() - 1];
  product(a, *in[1], op.getTransposeLhs(), op.getTransposeRhs(), m, n, k,
          c.numElements() / (m * n), c.data.data());
  return success();
}

/// The f64 product `lhs rhs` of a fused linear layer (`rhs` the shared
/// (K, N) matrix, (N, K) when `tr`), as rows x n.
static std::vector<double> linearProduct(const Buffer &lhs, const Buffer &rhs,
                                         bool tr, int64_t n) {
  int64_t k = lhs.shape.back(), rows = lhs.numElements() / k;
  std::vector<double> p(rows * n, 0.0);
  product(lhs, rhs, /*tl=*/false, tr, rows, n, k, /*batches=*/1, p.data());
  return p;
}

/// The epilogue of anvil.linear_gelu and its FP8 form: with p = product
/// scale + bias (per column), gelu_tanh(p) outScale into out[0] and p into
/// out[1]; returns the largest |gelu_tanh(p)|. Exact, like every op here:
/// the interpreter rounds the results to their types once (roundResults),
/// as the ops round them.
static double geluEpilogue(ArrayRef<double> product, double scale,
                           const Buffer &bias, double outScale,
                           std::vector<Buffer> &out) {
  int64_t n = bias.numElements();
  double amax = 0.0;
  for (size_t i = 0; i < product.size(); ++i) {
    double x = product[i] * scale + bias.data[i % n];
    double g = geluTanh(x);
    out[0].data[i] = g * outScale;
    out[1].data[i] = x;
    amax = nanMax(amax, std::abs(g));
  }
  return amax;
}

/// The epilogue of anvil.gelu_bias_grad and anvil.matmul_gelu_bias_grad:
/// d = g gelu_tanh'(pre) into out[0] (rounded to bf16 by the interpreter)
/// and its column sums into out[1].
static void geluBiasGrad(ArrayRef<double> g, const Buffer &pre,
                         std::vector<Buffer> &out) {
  int64_t n = pre.shape.back();
  std::vector<double> sums(n, 0.0);
  for (int64_t i = 0; i < pre.numElements(); ++i) {
    double d = g[i] * geluTanhDerivative(pre.data[i]);
    out[0].data[i] = d;
    sums[i % n] += d;
  }
  out[1].data = std::move(sums);
}

void registerShapeEvaluators(EvaluatorTable &t) {
  t.add<ad::MatmulBiasGradOp>([](ad::MatmulBiasGradOp,
                                 ArrayRef<const Buffer *> in,
                                 std::vector<Buffer> &out) {
    const Buffer &x = *in[0], &g = *in[1];
    int64_t m = x.shape[0], k = x.shape[1], n = g.shape[1];
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t r = 0; r < m; ++r)
          sum += x.data[r * k + i] * g.data[r * n + j];
        out[0].data[i * n + j] = sum;
      }
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t r = 0; r < m; ++r)
        sum += g.data[r * n + j];
      out[1].data[j] = sum;
    }
    return success();
  });
  // The product plus the bias per column, exact (rounded once, to the
  // result's type, by roundResults).
  t.add<ad::LinearOp>([](ad::LinearOp op, ArrayRef<const Buffer *> in,
                         std::vector<Buffer> &out) {
    const Buffer &bias = *in[2];
    int64_t n = bias.numElements();
    out[0].data = linearProduct(*in[0], *in[1], op.getTransposeRhs(), n);
    for (size_t i = 0; i < out[0].data.size(); ++i)
      out[0].data[i] += bias.data[i % n];
    return success();
  });
  t.add<ad::LinearGeluOp>([](ad::LinearGeluOp op, ArrayRef<const Buffer *> in,
                             std::vector<Buffer> &out) {
    std::vector<double> p = linearProduct(*in[0], *in[1], op.getTransposeRhs(),
                                          out[0].shape.back());
    geluEpilogue(p, 1.0, *in[2], 1.0, out);
    return success();
  });
  // Its FP8 form: the 8-bit products times the scales, plus the bias; the
  // codes are the scaled GELU, rounded (with roundResults) to their format,
  // and the amax is taken of the GELU before its scale.
  t.add<ad::LinearGeluF8Op>([](ad::LinearGeluF8Op op,
                               ArrayRef<const Buffer *> in,
                               std::vector<Buffer> &out) {
    std::vector<double> p = linearProduct(*in[0], *in[1], op.getTransposeRhs(),
                                          out[0].shape.back());
    out[2].data[0] = geluEpilogue(p, in[2]->data[0] * in[3]->data[0], *in[4],
                                  in[5]->data[0], out);
    return success();
  });
  t.add<ad::GeluBiasGradOp>([](ad::GeluBiasGradOp, ArrayRef<const Buffer *> in,
                               std::vector<Buffer> &out) {
    geluBiasGrad(in[0]->data, *in[1], out);
    return success();
  });
  t.add<ad::MatmulGeluBiasGradOp>([](ad::MatmulGeluBiasGradOp op,
                                     ArrayRef<const Buffer *> in,
                                     std::vector<Buffer> &out) {
    std::vector<double> g = linearProduct(*in[0], *in[1], op.getTransposeRhs(),
                                          out[0].shape.back());
    geluBiasGrad(g, *in[2], out);
    return success();
  });

  t.add<ad::ReshapeOp>(
      [](ad::ReshapeOp, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        out[0].data = in[0]->data;
        return success();
      });

  t.add<ad::TransposeOp>([](ad::TransposeOp op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) {
    ArrayRef<int64_t> perm = op.getPermutation();
    std::vector<int64_t> src(perm.size());
    forEachIndex(out[0].shape, [&](ArrayRef<int64_t> idx) {
      for (size_t i = 0; i < perm.size(); ++i)
        src[perm[i]] = idx[i];
      out[0].at(idx) = in[0]->at(src);
    });
    return success();
  });

  t.add<ad::BroadcastOp>([](ad::BroadcastOp op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) {
    ArrayRef<int64_t> dims = op.getDimensions();
    const Buffer &x = *in[0];
    std::vector<int64_t> src(x.rank());
    forEachIndex(out[0].shape, [&](ArrayRef<int64_t> idx) {
      for (int64_t i = 0; i < x.rank(); ++i)
        src[i] = x.shape[i] == 1 ? 0 : idx[dims[i]];
      out[0].at(idx) = x.at(src);
    });
    return success();
  });

  t.add<ad::SliceOp>([](ad::SliceOp op, ArrayRef<const Buffer *> in,
                        std::vector<Buffer> &out) {
    ArrayRef<int64_t> start = op.getStart(), stride = op.getStride();
    std::vector<int64_t> src(start.size());
    forEachIndex(out[0].shape, [&](ArrayRef<int64_t> idx) {
      for (size_t i = 0; i < start.size(); ++i)
        src[i] = start[i] + idx[i] * stride[i];
      out[0].at(idx) = in[0]->at(src);
    });
    return success();
  });

  t.add<ad::ConcatOp>([](ad::ConcatOp op, ArrayRef<const Buffer *> in,
                         std::vector<Buffer> &out) {
    int64_t dim = op.getDim(), offset = 0;
    std::vector<int64_t> dst;
    for (const Buffer *x : in) {
      forEachIndex(x->shape, [&](ArrayRef<int64_t> idx) {
        dst.assign(idx.begin(), idx.end());
        dst[dim] += offset;
        out[0].at(dst) = x->at(idx);
      });
      offset += x->shape[dim];
    }
    return success();
  });

  t.add<ad::SplitOp>([](ad::SplitOp op, ArrayRef<const Buffer *> in,
                        std::vector<Buffer> &out) {
    int64_t dim = op.getDim(), offset = 0;
    std::vector<int64_t> src;
    for (Buffer &piece : out) {
      forEachIndex(piece.shape, [&](ArrayRef<int64_t> idx) {
        src.assign(idx.begin(), idx.end());
        src[dim] += offset;
        piece.at(idx) = in[0]->at(src);
      });
      offset += piece.shape[dim];
    }
    return success();
  });

  t.add<ad::PadOp>(
      [](ad::PadOp op, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        std::fill(out[0].data.begin(), out[0].data.end(),
                  op.getValue().convertToDouble());
        ArrayRef<int64_t> low = op.getLow();
        std::vector<int64_t> dst;
        forEachIndex(in[0]->shape, [&](ArrayRef<int64_t> idx) {
          dst.assign(idx.begin(), idx.end());
          for (size_t i = 0; i < dst.size(); ++i)
            dst[i] += low[i];
          out[0].at(dst) = in[0]->at(idx);
        });
        return success();
      });

  t.add<ad::GatherOp>([](ad::GatherOp op, ArrayRef<const Buffer *> in,
                         std::vector<Buffer> &out) -> LogicalResult {
    const Buffer &x = *in[0], &indices = *in[1];
    int64_t axis = op.getAxis(), k = indices.rank();
    std::vector<int64_t> src(x.rank());
    LogicalResult status = success();
    forEachIndex(out[0].shape, [&](ArrayRef<int64_t> idx) {
      if (failed(status))
        return;
      // result[pre, j..., post] = x[pre, indices[j...], post]
      for (int64_t d = 0; d < axis; ++d)
        src[d] = idx[d];
      int64_t row;
      status = readIndex(op, indices.at(idx.slice(axis, k)), x.shape[axis],
                         "gather index", row);
      src[axis] = row;
      for (int64_t d = axis + 1; d < x.rank(); ++d)
        src[d] = idx[d - 1 + k];
      if (succeeded(status))
        out[0].at(idx) = x.at(src);
    });
    return status;
  });

  t.add<ad::EmbeddingOp>([](ad::EmbeddingOp op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) -> LogicalResult {
    const Buffer &table = *in[0], &ids = *in[1];
    int64_t v = table.shape[0], c = table.shape[1];
    for (int64_t i = 0; i < ids.numElements(); ++i) {
      int64_t row;
      if (failed(readIndex(op, ids.data[i], v, "embedding index", row)))
        return failure();
      for (int64_t j = 0; j < c; ++j)
        out[0].data[i * c + j] = table.data[row * c + j];
    }
    return success();
  });

  t.add<ad::EmbeddingGradOp>([](ad::EmbeddingGradOp op,
                                ArrayRef<const Buffer *> in,
                                std::vector<Buffer> &out) -> LogicalResult {
    const Buffer &grad = *in[0], &ids = *in[1];
    int64_t rows = out[0].shape[0], c = out[0].shape[1];
    for (int64_t i = 0; i < ids.numElements(); ++i) {
      int64_t row;
      if (failed(readIndex(op, ids.data[i], rows, "embedding_grad index", row)))
        return failure();
      for (int64_t j = 0; j < c; ++j)
        out[0].data[row * c + j] += grad.data[i * c + j];
    }
    return success();
  });

  t.add<ad::EmbeddingBagOp>([](ad::EmbeddingBagOp op,
                               ArrayRef<const Buffer *> in,
                               std::vector<Buffer> &out) -> LogicalResult {
    const Buffer &table = *in[0], &ids = *in[1];
    int64_t v = table.shape[0], c = table.shape[1];
    int64_t bags = ids.shape[0], size = ids.shape[1];
    for (int64_t b = 0; b < bags; ++b) {
      for (int64_t l = 0; l < size; ++l) {
        int64_t row;
        if (failed(readIndex(op, ids.data[b * size + l], v,
                             "embedding_bag index", row)))
          return failure();
        for (int64_t j = 0; j < c; ++j)
          out[0].data[b * c + j] += table.data[row * c + j];
      }
      if (op.getMode() == ad::BagMode::mean)
        for (int64_t j = 0; j < c; ++j)
          out[0].data[b * c + j] /= static_cast<double>(size);
    }
    return success();
  });

  t.add<ad::UpsampleNearestOp>([](ad::UpsampleNearestOp op,
                                  ArrayRef<const Buffer *> in,
                                  std::vector<Buffer> &out) {
    ArrayRef<int64_t> scale = op.getScale();
    std::vector<int64_t> src;
    forEachIndex(out[0].shape, [&](ArrayRef<int64_t> idx) {
      src.assign(idx.begin(), idx.end());
      for (size_t i = 0; i < scale.size(); ++i)
        src[i + 2] = idx[i + 2] / scale[i];
      out[0].at(idx) = in[0]->at(src);
    });
    return success();
  });

  reduction<ad::ReduceSumOp>(
      t, 0.0, [](double a, double b) { return a + b; }, false);
  reduction<ad::ReduceMeanOp>(
      t, 0.0, [](double a, double b) { return a + b; }, true);
  reduction<ad::ReduceMaxOp>(t, -std::numeric_limits<double>::infinity(),
                             nanMax, false);
  reduction<ad::ReduceMinOp>(t, std::numeric_limits<double>::infinity(), nanMin,
                             false);

  // The first index of the maximum; a NaN counts as the maximum.
  t.add<ad::ArgmaxOp>([](ad::ArgmaxOp op, ArrayRef<const Buffer *> in,
                         std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    Around a(x.shape, op.getDim());
    for (int64_t o = 0; o < a.outer; ++o)
      for (int64_t i = 0; i < a.inner; ++i) {
        int64_t best = 0;
        double bestValue = x.data[o * a.size * a.inner + i];
        for (int64_t k = 1; k < a.size && !std::isnan(bestValue); ++k) {
          double v = x.data[(o * a.size + k) * a.inner + i];
          if (v > bestValue || std::isnan(v)) {
            best = k;
            bestValue = v;
          }
        }
        out[0].data[o * a.inner + i] = static_cast<double>(best);
      }
    return success();
  });

  t.add<ad::SoftmaxOp>([](ad::SoftmaxOp op, ArrayRef<const Buffer *> in,
                          std::vector<Buffer> &out) {
    softmaxAlong(*in[0], op.getDim(), /*logarithm=*/false, out[0]);
    return success();
  });
  t.add<ad::LogSoftmaxOp>([](ad::LogSoftmaxOp op, ArrayRef<const Buffer *> in,
                             std::vector<Buffer> &out) {
    softmaxAlong(*in[0], op.getDim(), /*logarithm=*/true, out[0]);
    return success();
  });

  // (..., M, K) x (..., K, N), transposes applied to the last two dims; a
  // rank-2 rhs is shared by every batch.
  t.add<ad::MatmulOp>(matmul<ad::MatmulOp>);
  // matmul_f8's operands hold 8-bit values already (products exact): the
  // sums times the scales' product, plus the bias (rounded to the result's
  // type with roundResults, as every result is).
  t.add<ad::MatmulF8Op>([](ad::MatmulF8Op op, ArrayRef<const Buffer *> in,
                           std::vector<Buffer> &out) {
    if (failed(matmul(op, in, out)))
      return failure();
    double scale = in[2]->data[0] * in[3]->data[0];
    for (double &x : out[0].data)
      x *= scale;
    if (op.getBias()) {
      const Buffer &bias = *in[4];
      int64_t n = bias.numElements();
      for (size_t i = 0; i < out[0].data.size(); ++i)
        out[0].data[i] += bias.data[i % n];
    }
    return success();
  });
}

} // namespace anvil::interp
