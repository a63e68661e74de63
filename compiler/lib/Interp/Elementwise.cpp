//===- Elementwise.cpp - evaluators of elementwise anvil ops --------------===//
//
// Arithmetic, math, activations, comparisons, select, casts, constants and
// dropout. Each is a scalar function applied at every index.
//
//===----------------------------------------------------------------------===//

#include "Evaluators.h"

#include "anvil/Interp/Interpreter.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::interp {
namespace {

template <typename OpTy>
void unary(EvaluatorTable &table, double (*fn)(double)) {
  table.add<OpTy>(
      [fn](OpTy, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        for (int64_t i = 0; i < out[0].numElements(); ++i)
          out[0].data[i] = fn(in[0]->data[i]);
        return success();
      });
}

template <typename OpTy>
void binary(EvaluatorTable &table, double (*fn)(double, double)) {
  table.add<OpTy>(
      [fn](OpTy, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        for (int64_t i = 0; i < out[0].numElements(); ++i)
          out[0].data[i] = fn(in[0]->data[i], in[1]->data[i]);
        return success();
      });
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double geluErf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

/// max/min that propagate NaN.
double nanMax(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
double nanMin(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
}

} // namespace

double geluTanh(double x) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

double geluTanhDerivative(double x) {
  // u = c (x + a x^3), t = tanh(u): (1 + t) / 2 + x (1 - t^2) c (1 + 3 a
  // x^2) / 2.
  const double c = std::sqrt(2.0 / 3.14159265358979323846), a = 0.044715;
  double t = std::tanh(c * (x + a * x * x * x));
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * a * x * x);
}

void registerElementwiseEvaluators(EvaluatorTable &t) {
  binary<ad::AddOp>(t, [](double a, double b) { return a + b; });
  binary<ad::SubOp>(t, [](double a, double b) { return a - b; });
  binary<ad::MulOp>(t, [](double a, double b) { return a * b; });
  binary<ad::PowOp>(t, [](double a, double b) { return std::pow(a, b); });
  binary<ad::MaxOp>(t, nanMax);
  binary<ad::MinOp>(t, nanMin);
  // Integer division truncates toward zero; division by zero is an error.
  t.add<ad::DivOp>([](ad::DivOp op, ArrayRef<const Buffer *> in,
                      std::vector<Buffer> &out) -> LogicalResult {
    bool integer = isa<IntegerType>(out[0].elementType);
    for (int64_t i = 0; i < out[0].numElements(); ++i) {
      double a = in[0]->data[i], b = in[1]->data[i];
      if (integer && b == 0.0)
        return op.emitError("anvil-interp: integer division by zero at "
                            "element ")
               << i;
      out[0].data[i] = integer ? std::trunc(a / b) : a / b;
    }
    return success();
  });

  unary<ad::NegOp>(t, [](double x) { return -x; });
  unary<ad::AbsOp>(t, [](double x) { return std::abs(x); });
  unary<ad::ExpOp>(t, [](double x) { return std::exp(x); });
  unary<ad::LogOp>(t, [](double x) { return std::log(x); });
  unary<ad::SqrtOp>(t, [](double x) { return std::sqrt(x); });
  unary<ad::RsqrtOp>(t, [](double x) { return 1.0 / std::sqrt(x); });
  unary<ad::TanhOp>(t, [](double x) { return std::tanh(x); });
  unary<ad::CosOp>(t, [](double x) { return std::cos(x); });
  unary<ad::SinOp>(t, [](double x) { return std::sin(x); });
  unary<ad::ErfOp>(t, [](double x) { return std::erf(x); });
  unary<ad::SigmoidOp>(t, sigmoid);
  unary<ad::SiluOp>(t, [](double x) { return x * sigmoid(x); });
  unary<ad::StopGradientOp>(t, [](double x) { return x; });
  // The interpreter is one process: a world of one rank, where every
  // all-reduce returns its operand.
  unary<ad::AllReduceOp>(t, [](double x) { return x; });
  unary<ad::AxisCopyOp>(t, [](double x) { return x; });
  // The other collectives split or join tensors among the ranks of an
  // axis; the interpreter has only a world of one to give them (an axis
  // of one rank, or a module without a mesh), where they return their
  // operand.
  auto worldOfOne = [](Operation *op, StringRef axis, const Buffer &in,
                       Buffer &out) -> LogicalResult {
    int64_t ranks = ad::meshAxisSize(op, axis);
    if (ranks != 1)
      return op->emitError("anvil-interp: runs one process; '")
             << op->getName() << "' over axis '" << axis << "' needs its "
             << ranks << " ranks (compile the program and run it with "
             << "anvil-run)";
    out.data = in.data;
    return success();
  };
  t.add<ad::AxisIndexOp>([](ad::AxisIndexOp op, ArrayRef<const Buffer *>,
                            std::vector<Buffer> &out) -> LogicalResult {
    int64_t ranks = ad::meshAxisSize(op, op.getAxis());
    if (ranks != 1)
      return op->emitError("anvil-interp: runs one process; '")
             << op->getName() << "' over axis '" << op.getAxis()
             << "' needs its " << ranks << " ranks";
    out[0].data[0] = 0;
    return success();
  });
  t.add<ad::AllGatherOp>([worldOfOne](ad::AllGatherOp op,
                                      ArrayRef<const Buffer *> in,
                                      std::vector<Buffer> &out) {
    return worldOfOne(op, op.getAxis(), *in[0], out[0]);
  });
  t.add<ad::ReduceScatterOp>([worldOfOne](ad::ReduceScatterOp op,
                                          ArrayRef<const Buffer *> in,
                                          std::vector<Buffer> &out) {
    return worldOfOne(op, op.getAxis(), *in[0], out[0]);
  });
  t.add<ad::AxisSliceOp>([worldOfOne](ad::AxisSliceOp op,
                                      ArrayRef<const Buffer *> in,
                                      std::vector<Buffer> &out) {
    return worldOfOne(op, op.getAxis(), *in[0], out[0]);
  });
  unary<ad::ReluOp>(t,
                    [](double x) { return x > 0.0 ? x : (x == x ? 0.0 : x); });
  t.add<ad::GeluOp>([](ad::GeluOp op, ArrayRef<const Buffer *> in,
                       std::vector<Buffer> &out) {
    auto fn = op.getApproximation() == ad::GeluApproximation::tanh ? geluTanh
                                                                   : geluErf;
    for (int64_t i = 0; i < out[0].numElements(); ++i)
      out[0].data[i] = fn(in[0]->data[i]);
    return success();
  });

  t.add<ad::CompareOp>([](ad::CompareOp op, ArrayRef<const Buffer *> in,
                          std::vector<Buffer> &out) {
    for (int64_t i = 0; i < out[0].numElements(); ++i) {
      double a = in[0]->data[i], b = in[1]->data[i];
      bool r = false;
      switch (op.getDirection()) {
      case ad::ComparisonDirection::eq:
        r = a == b;
        break;
      case ad::ComparisonDirection::ne:
        r = a != b;
        break;
      case ad::ComparisonDirection::lt:
        r = a < b;
        break;
      case ad::ComparisonDirection::le:
        r = a <= b;
        break;
      case ad::ComparisonDirection::gt:
        r = a > b;
        break;
      case ad::ComparisonDirection::ge:
        r = a >= b;
        break;
      }
      out[0].data[i] = r ? 1.0 : 0.0;
    }
    return success();
  });

  t.add<ad::SelectOp>([](ad::SelectOp, ArrayRef<const Buffer *> in,
                         std::vector<Buffer> &out) {
    for (int64_t i = 0; i < out[0].numElements(); ++i)
      out[0].data[i] = in[0]->data[i] != 0.0 ? in[1]->data[i] : in[2]->data[i];
    return success();
  });

  // A cast always converts, whether or not results are rounded.
  t.add<ad::CastOp>(
      [](ad::CastOp, ArrayRef<const Buffer *> in, std::vector<Buffer> &out) {
        for (int64_t i = 0; i < out[0].numElements(); ++i)
          out[0].data[i] = roundToType(in[0]->data[i], out[0].elementType);
        return success();
      });

  t.add<ad::ConstantOp>([](ad::ConstantOp op, ArrayRef<const Buffer *>,
                           std::vector<Buffer> &out) -> LogicalResult {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense)
      return op.emitError("anvil-interp: only dense constants are supported");
    int64_t i = 0;
    if (isa<FloatType>(dense.getElementType())) {
      for (APFloat v : dense.getValues<APFloat>()) {
        bool losesInfo;
        v.convert(llvm::APFloat::IEEEdouble(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
        out[0].data[i++] = v.convertToDouble();
      }
    } else {
      bool isBool = dense.getElementType().isSignlessInteger(1);
      for (APInt v : dense.getValues<APInt>())
        out[0].data[i++] = isBool ? static_cast<double>(v.getBoolValue())
                                  : static_cast<double>(v.getSExtValue());
    }
    return success();
  });

  // Element i is kept iff uniform01(seed, i) >= rate, then scaled by
  // 1 / (1 - rate): a pure function of (seed, index, rate).
  t.add<ad::DropoutOp>([](ad::DropoutOp op, ArrayRef<const Buffer *> in,
                          std::vector<Buffer> &out) {
    double rate = op.getRate().convertToDouble();
    auto seed = static_cast<uint64_t>(static_cast<int64_t>(in[1]->data[0]));
    for (int64_t i = 0; i < out[0].numElements(); ++i)
      out[0].data[i] = uniform01(seed, static_cast<uint64_t>(i)) >= rate
                           ? in[0]->data[i] / (1.0 - rate)
                           : 0.0;
    return success();
  });

  // The scale goes to the format's range (the tensor's amax to its largest
  // finite value, or the given scale), or per block a power of two (MX);
  // the cast rounds (saturating) as anvil.cast does.
  t.add<ad::Fp8QuantizeOp>([](ad::Fp8QuantizeOp op, ArrayRef<const Buffer *> in,
                              std::vector<Buffer> &out) {
    const Buffer &x = *in[0];
    std::optional<Type> format = op.getForward();
    int64_t n = out[0].numElements();
    if (!format) {
      for (int64_t i = 0; i < n; ++i)
        out[0].data[i] = x.data[i];
      return success();
    }
    const llvm::fltSemantics &semantics =
        cast<FloatType>(*format).getFloatSemantics();
    double largest = llvm::APFloat::getLargest(semantics).convertToDouble();
    auto absMax = [&](double amax, double v) {
      return std::isnan(amax) || std::isnan(v) ? NAN
                                               : std::max(amax, std::abs(v));
    };
    // The scale and the scaled value in the operand's type, as the op's
    // definition (and its decomposition) computes them: the 8-bit rounding
    // then sees the same value on every backend.
    Type element = out[0].elementType;
    if (std::optional<int64_t> size = op.getBlockSize()) {
      // Blocks of `size` along dimension `dim`: element i's block is its
      // index with the dimension's coordinate rounded down to the block.
      int64_t dim = *op.getBlockDim();
      int64_t inner = 1;
      for (int64_t d = dim + 1; d < x.rank(); ++d)
        inner *= x.shape[d];
      int64_t extent = x.shape[dim];
      int emax = std::ilogb(largest); // 8 for E4M3, 15 for E5M2
      for (int64_t outer = 0; outer < n / (inner * extent); ++outer)
        for (int64_t b = 0; b < extent; b += *size)
          for (int64_t j = 0; j < inner; ++j) {
            auto at = [&](int64_t k) {
              return (outer * extent + b + k) * inner + j;
            };
            double amax = 0.0;
            for (int64_t k = 0; k < *size; ++k)
              amax = absMax(amax, x.data[at(k)]);
            double scale = NAN;
            if (std::isfinite(amax)) {
              int exponent = amax > 0 ? std::ilogb(amax) - emax : -127;
              scale = std::ldexp(1.0, std::clamp(exponent, -127, 127));
            }
            for (int64_t k = 0; k < *size; ++k)
              out[0].data[at(k)] = roundToType(
                  roundToType(roundToType(x.data[at(k)] / scale, element),
                              *format) *
                      scale,
                  element);
          }
      return success();
    }
    double scale;
    if (op.getScale()) {
      scale = in[1]->data[0];
    } else {
      double amax = 0.0;
      for (int64_t i = 0; i < n; ++i)
        amax = absMax(amax, x.data[i]);
      scale = amax > 0 ? roundToType(largest / amax, element) : 1.0;
    }
    for (int64_t i = 0; i < n; ++i)
      out[0].data[i] =
          roundToType(roundToType(x.data[i] * scale, element), *format) / scale;
    return success();
  });
}

} // namespace anvil::interp
