//===- Losses.cpp - evaluators of the loss ops ----------------------------===//
//
// Per-element losses, then the reduction: `mean` divides by the number of
// contributing elements (non-ignored positions for cross-entropy), `sum`
// adds, `none` returns them.
//
//===----------------------------------------------------------------------===//

#include "Evaluators.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::interp {

void reduceLoss(ad::Reduction reduction, const std::vector<double> &losses,
                double count, Buffer &out) {
  if (reduction == ad::Reduction::none) {
    out.data = losses;
    return;
  }
  double sum = 0.0;
  for (double l : losses)
    sum += l;
  out.data[0] = reduction == ad::Reduction::sum ? sum : sum / count;
}

namespace {
/// max(x, 0) - x t + log(1 + exp(-|x|)): BCE on a logit, stable.
double bceWithLogits(double x, double t) {
  return std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::abs(x)));
}
} // namespace

void registerLossEvaluators(EvaluatorTable &t) {
  // -((1 - s) log p[label] + s / C sum_c log p[c]), log p = log_softmax.
  t.add<ad::CrossEntropyOp>([](ad::CrossEntropyOp op,
                               ArrayRef<const Buffer *> in,
                               std::vector<Buffer> &out) -> LogicalResult {
    const Buffer &logits = *in[0], &labels = *in[1];
    int64_t c = logits.shape.back(), rows = labels.numElements();
    double s = op.getLabelSmoothing().convertToDouble();
    int64_t ignore = op.getIgnoreIndex();
    std::vector<double> losses(rows, 0.0);
    double count = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      auto label = static_cast<int64_t>(labels.data[r]);
      if (label == ignore)
        continue;
      if (label < 0 || label >= c)
        return op.emitError("anvil-interp: label ")
               << label << " at position " << r << " is out of range [0, " << c
               << ") and is not the ignore_index " << ignore;
      const double *z = logits.data.data() + r * c;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < c; ++j)
        max = std::max(max, z[j]);
      double sum = 0.0;
      for (int64_t j = 0; j < c; ++j)
        sum += std::exp(z[j] - max);
      double logZ = max + std::log(sum);
      double allLogP = 0.0;
      for (int64_t j = 0; j < c; ++j)
        allLogP += z[j] - logZ;
      losses[r] = -((1.0 - s) * (z[label] - logZ) +
                    s / static_cast<double>(c) * allLogP);
      count += 1.0;
    }
    // max(count, 1): a batch whose labels are all ignored has loss 0.
    reduceLoss(op.getReduction(), losses, std::max(count, 1.0), out[0]);
    return success();
  });

  t.add<ad::MSELossOp>([](ad::MSELossOp op, ArrayRef<const Buffer *> in,
                          std::vector<Buffer> &out) {
    std::vector<double> losses(in[0]->numElements());
    for (size_t i = 0; i < losses.size(); ++i) {
      double d = in[0]->data[i] - in[1]->data[i];
      losses[i] = d * d;
    }
    reduceLoss(op.getReduction(), losses, losses.size(), out[0]);
    return success();
  });

  t.add<ad::BCEWithLogitsLossOp>([](ad::BCEWithLogitsLossOp op,
                                    ArrayRef<const Buffer *> in,
                                    std::vector<Buffer> &out) {
    std::vector<double> losses(in[0]->numElements());
    for (size_t i = 0; i < losses.size(); ++i)
      losses[i] = bceWithLogits(in[0]->data[i], in[1]->data[i]);
    reduceLoss(op.getReduction(), losses, losses.size(), out[0]);
    return success();
  });

  // alpha_t (1 - p_t)^gamma bce(x, t), p = sigmoid(x).
  t.add<ad::FocalLossOp>([](ad::FocalLossOp op, ArrayRef<const Buffer *> in,
                            std::vector<Buffer> &out) {
    double alpha = op.getAlpha().convertToDouble();
    double gamma = op.getGamma().convertToDouble();
    std::vector<double> losses(in[0]->numElements());
    for (size_t i = 0; i < losses.size(); ++i) {
      double x = in[0]->data[i], tt = in[1]->data[i];
      double p = 1.0 / (1.0 + std::exp(-x));
      double pt = p * tt + (1.0 - p) * (1.0 - tt);
      double l = bceWithLogits(x, tt) * std::pow(1.0 - pt, gamma);
      if (alpha >= 0.0)
        l *= alpha * tt + (1.0 - alpha) * (1.0 - tt);
      losses[i] = l;
    }
    reduceLoss(op.getReduction(), losses, losses.size(), out[0]);
    return success();
  });

  // Per (n, c): 1 - (2 sum(p t) + smooth) / (sum p + sum t + smooth).
  t.add<ad::DiceLossOp>([](ad::DiceLossOp op, ArrayRef<const Buffer *> in,
                           std::vector<Buffer> &out) {
    const Buffer &p = *in[0], &tt = *in[1];
    int64_t nc = p.shape[0] * p.shape[1], spatial = p.numElements() / nc;
    double smooth = op.getSmooth().convertToDouble();
    std::vector<double> losses(nc);
    for (int64_t g = 0; g < nc; ++g) {
      double inter = 0.0, sp = 0.0, st = 0.0;
      for (int64_t i = g * spatial; i < (g + 1) * spatial; ++i) {
        inter += p.data[i] * tt.data[i];
        sp += p.data[i];
        st += tt.data[i];
      }
      losses[g] = 1.0 - (2.0 * inter + smooth) / (sp + st + smooth);
    }
    reduceLoss(op.getReduction(), losses, static_cast<double>(nc), out[0]);
    return success();
  });
}

} // namespace anvil::interp
