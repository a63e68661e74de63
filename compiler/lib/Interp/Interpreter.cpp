//===- Interpreter.cpp - the reference interpreter of the anvil dialect ---===//
//
// 1. Bind the function's arguments to buffers, checking their shapes.
// 2. For each op in order, look up its evaluator, give it the operand
//    buffers and zero-filled result buffers, and (with roundResults) round
//    what it computed to the results' element types.
// 3. Return the buffers of func.return's operands.
//
//===----------------------------------------------------------------------===//

#include "anvil/Interp/Interpreter.h"

#include "Evaluators.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::interp {

//===----------------------------------------------------------------------===//
// Buffer
//===----------------------------------------------------------------------===//

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Buffer::Buffer(std::vector<int64_t> shape, Type elementType, double fill)
    : shape(std::move(shape)), elementType(elementType) {
  data.assign(interp::numElements(this->shape), fill);
}

Buffer Buffer::of(RankedTensorType type, double fill) {
  return Buffer(
      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
      type.getElementType(), fill);
}

std::vector<int64_t> Buffer::strides() const {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = rank() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

int64_t Buffer::offset(ArrayRef<int64_t> index) const {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    off = off * shape[d] + index[d];
  return off;
}

//===----------------------------------------------------------------------===//
// Rounding
//===----------------------------------------------------------------------===//

static double roundFloat(double value, const llvm::fltSemantics &semantics,
                         bool saturate) {
  if (std::isnan(value))
    return value;
  llvm::APFloat largest = llvm::APFloat::getLargest(semantics);
  bool losesInfo;
  largest.convert(llvm::APFloat::IEEEdouble(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  double max = largest.convertToDouble();
  if (saturate && std::abs(value) > max && !std::isinf(value)) {
    // Round first: values that round down to `max` are not an overflow.
    llvm::APFloat f(value);
    llvm::APFloat::opStatus status =
        f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    if (status & llvm::APFloat::opOverflow || f.isNaN() || f.isInfinity())
      return std::copysign(max, value);
  }
  if (saturate && std::isinf(value))
    return std::copysign(max, value);
  llvm::APFloat f(value);
  f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return f.convertToDouble();
}

double roundToType(double value, Type type) {
  if (auto f = dyn_cast<FloatType>(type)) {
    if (f.isF64())
      return value;
    if (f.isF32())
      return static_cast<double>(static_cast<float>(value));
    bool eightBit = f.getWidth() == 8;
    return roundFloat(value, f.getFloatSemantics(), /*saturate=*/eightBit);
  }
  auto i = cast<IntegerType>(type);
  if (i.getWidth() == 1)
    return value != 0.0 ? 1.0 : 0.0;
  if (std::isnan(value))
    return 0.0;
  double t = std::trunc(value);
  double lo = -std::ldexp(1.0, i.getWidth() - 1);
  double hi = std::ldexp(1.0, i.getWidth() - 1) - 1.0;
  return std::min(std::max(t, lo), hi);
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

static const EvaluatorTable &evaluators() {
  static const EvaluatorTable table = [] {
    EvaluatorTable t;
    registerElementwiseEvaluators(t);
    registerShapeEvaluators(t);
    registerNNEvaluators(t);
    registerLossEvaluators(t);
    return t;
  }();
  return table;
}

bool hasEvaluator(OperationName name) {
  return evaluators().lookup(name) != nullptr;
}

/// The largest tensor the interpreter holds: 2^30 doubles (8 GiB).
static constexpr int64_t kMaxElements = int64_t(1) << 30;

static bool isSupportedElementType(Type t) {
  return t.isF64() || t.isF32() || t.isF16() || t.isBF16() ||
         isa<Float8E4M3FNType, Float8E5M2Type>(t) || t.isSignlessInteger(1) ||
         t.isSignlessInteger(32) || t.isSignlessInteger(64);
}

/// Checks that `type` is a tensor the interpreter can hold.
static LogicalResult checkType(Operation *op, Type type, StringRef what) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return op->emitError("anvil-interp: ")
           << what << " has type " << type << ", expected a ranked tensor";
  if (!t.hasStaticShape())
    return op->emitError("anvil-interp: ")
           << what << " has the dynamic shape " << type
           << "; the interpreter needs static shapes";
  // Sizes: no empty tensors (nothing to evaluate, and every formula would
  // need a special case) and nothing larger than kMaxElements doubles.
  int64_t count = 1;
  for (int64_t d : t.getShape()) {
    if (d < 1)
      return op->emitError("anvil-interp: ")
             << what << " of type " << type
             << " has no elements; the interpreter evaluates non-empty "
                "tensors only";
    if (llvm::MulOverflow(count, d, count) || count > kMaxElements)
      return op->emitError("anvil-interp: ")
             << what << " of type " << type << " has more than " << kMaxElements
             << " elements, too many for the interpreter";
  }
  if (!isSupportedElementType(t.getElementType()))
    return op->emitError("anvil-interp: ")
           << what << " has the unsupported element type " << t.getElementType()
           << " (supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i1, i32, "
              "i64)";
  return success();
}

static LogicalResult checkOp(Operation &op) {
  if (isa<func::ReturnOp>(op))
    return success();
  if (!evaluators().lookup(op.getName()))
    return op.emitError("anvil-interp: no evaluator for '")
           << op.getName() << "'";
  for (auto [i, t] : llvm::enumerate(op.getOperandTypes()))
    if (failed(checkType(&op, t, "operand #" + std::to_string(i))))
      return failure();
  for (auto [i, t] : llvm::enumerate(op.getResultTypes()))
    if (failed(checkType(&op, t, "result #" + std::to_string(i))))
      return failure();
  return success();
}

LogicalResult check(FunctionOpInterface function) {
  if (function.isExternal())
    return function.emitError("anvil-interp: function @")
           << function.getName() << " has no body";
  Region &body = function.getFunctionBody();
  if (!body.hasOneBlock())
    return function.emitError("anvil-interp: function @")
           << function.getName() << " must have a single block";
  for (auto [i, t] : llvm::enumerate(function.getArgumentTypes()))
    if (failed(checkType(function, t, "argument #" + std::to_string(i))))
      return failure();
  for (Operation &op : body.front())
    if (failed(checkOp(op)))
      return failure();
  return success();
}

LogicalResult
convertArgument(Buffer &buffer,
                llvm::function_ref<InFlightDiagnostic()> emitError) {
  Type type = buffer.elementType;
  bool integer = isa<IntegerType>(type);
  for (auto [i, v] : llvm::enumerate(buffer.data)) {
    if (!integer) {
      v = roundToType(v, type);
      continue;
    }
    if (!std::isfinite(v) || v != std::trunc(v) || std::abs(v) > 0x1.0p53)
      return emitError() << "element " << i << " = " << v
                         << " is not an integer of at most 2^53 in magnitude"
                         << " (the " << type << " values the interpreter holds"
                         << " exactly)";
    if (v != roundToType(v, type))
      return emitError() << "element " << i << " = " << v
                         << " does not fit the element type " << type;
  }
  return success();
}

FailureOr<std::vector<Buffer>> run(FunctionOpInterface function,
                                   ArrayRef<Buffer> arguments,
                                   const Options &options) {
  if (failed(check(function)))
    return failure();
  Block &block = function.getFunctionBody().front();
  if (arguments.size() != block.getNumArguments())
    return function.emitError("anvil-interp: @")
           << function.getName() << " takes " << block.getNumArguments()
           << " arguments, got " << arguments.size();

  llvm::DenseMap<Value, Buffer> values;
  for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (!llvm::equal(arguments[i].shape, type.getShape()) ||
        arguments[i].numElements() != type.getNumElements())
      return function.emitError("anvil-interp: argument #")
             << i << " has shape [" << llvm::interleaved(arguments[i].shape)
             << "] and " << arguments[i].numElements()
             << " values, the function expects " << type;
    Buffer b = arguments[i];
    b.elementType = type.getElementType();
    if (failed(convertArgument(b, [&] {
          return function.emitError("anvil-interp: argument #") << i << ": ";
        })))
      return failure();
    values[arg] = std::move(b);
  }

  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Buffer> out;
      for (Value v : ret.getOperands())
        out.push_back(values.lookup(v));
      return out;
    }
    SmallVector<const Buffer *> operands;
    for (Value v : op.getOperands())
      operands.push_back(&values.find(v)->second);
    std::vector<Buffer> results;
    for (Type t : op.getResultTypes())
      results.push_back(Buffer::of(cast<RankedTensorType>(t)));
    if (failed((*evaluators().lookup(op.getName()))(&op, operands, results)))
      return failure();
    for (auto [result, buffer] : llvm::zip(op.getResults(), results)) {
      if (options.roundResults)
        for (double &x : buffer.data)
          x = roundToType(x, buffer.elementType);
      values[result] = std::move(buffer);
    }
  }
  return function.emitError("anvil-interp: @")
         << function.getName() << " does not end with func.return";
}

//===----------------------------------------------------------------------===//
// Random numbers and initializers
//===----------------------------------------------------------------------===//

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

double uniform01(uint64_t seed, uint64_t counter) {
  uint64_t bits = splitmix64(seed ^ splitmix64(counter));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

std::optional<std::string> argumentName(FunctionOpInterface function,
                                        unsigned index) {
  if (auto p = function.getArgAttrOfType<ad::ParamAttr>(
          index, ad::AnvilDialect::kParamAttrName))
    return p.getName().str();
  if (auto state = function.getArgAttrOfType<ad::StateAttr>(
          index, ad::AnvilDialect::kStateAttrName))
    return state.getName().str();
  if (auto in = function.getArgAttrOfType<ad::InputAttr>(
          index, ad::AnvilDialect::kInputAttrName))
    return in.getName().str();
  return std::nullopt;
}

namespace {
/// A stream of deterministic random numbers.
class Stream {
public:
  explicit Stream(uint64_t seed) : seed_(seed) {}
  double uniform() { return uniform01(seed_, counter_++); }
  /// Standard normal (Box-Muller).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log1p(-u1)) *
           std::cos(2.0 * 3.14159265358979323846 * u2);
  }

private:
  uint64_t seed_, counter_ = 0;
};

/// PyTorch's fans of a weight (out, in, k...): in * prod(k), out * prod(k);
/// 1 for a scalar (the verifier allows fan-based initializers only from
/// rank 2 on).
std::pair<double, double> fans(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return {1.0, 1.0};
  double receptive = 1;
  for (int64_t d : shape.drop_front(std::min<size_t>(2, shape.size())))
    receptive *= d;
  double fanIn = shape.size() > 1 ? shape[1] * receptive : shape[0];
  double fanOut = shape[0] * receptive;
  return {fanIn, fanOut};
}
} // namespace

Buffer randomArgument(FunctionOpInterface function, unsigned index,
                      uint64_t seed, int64_t intHigh) {
  auto type = cast<RankedTensorType>(function.getArgumentTypes()[index]);
  Buffer b = Buffer::of(type);
  Stream rng(splitmix64(seed) ^ splitmix64(0x5EED0000ULL + index));
  // Parameters and training state follow their initializers.
  ad::InitializerAttr init;
  if (auto param = function.getArgAttrOfType<ad::ParamAttr>(
          index, ad::AnvilDialect::kParamAttrName))
    init = param.getInit();
  else if (auto state = function.getArgAttrOfType<ad::StateAttr>(
               index, ad::AnvilDialect::kStateAttrName))
    init = state.getInit();
  Type et = type.getElementType();
  if (!init) {
    for (double &x : b.data) {
      if (isa<FloatType>(et))
        x = rng.normal();
      else if (et.isSignlessInteger(1))
        x = rng.uniform() < 0.5 ? 0.0 : 1.0;
      else
        x = std::floor(rng.uniform() * static_cast<double>(intHigh));
    }
    for (double &x : b.data)
      x = roundToType(x, et);
    return b;
  }
  auto [fanIn, fanOut] = fans(type.getShape());
  double fan = init.usesFanOut() ? fanOut : fanIn;
  for (double &x : b.data) {
    switch (init.getKind()) {
    case ad::InitKind::zeros:
      x = 0.0;
      break;
    case ad::InitKind::ones:
      x = 1.0;
      break;
    case ad::InitKind::constant:
      x = init.getArg("value", 0.0);
      break;
    case ad::InitKind::normal:
      x = init.getArg("mean", 0.0) + init.getArg("std", 1.0) * rng.normal();
      break;
    case ad::InitKind::truncated_normal: {
      double lower = init.getArg("lower", -2.0),
             upper = init.getArg("upper", 2.0);
      double z;
      do
        z = rng.normal();
      while (z < lower || z > upper);
      x = init.getArg("mean", 0.0) + init.getArg("std", 1.0) * z;
      break;
    }
    case ad::InitKind::uniform: {
      double lo = init.getArg("low", 0.0), hi = init.getArg("high", 1.0);
      x = lo + (hi - lo) * rng.uniform();
      break;
    }
    case ad::InitKind::xavier_uniform: {
      double a = init.getArg("gain", 1.0) * std::sqrt(6.0 / (fanIn + fanOut));
      x = (2.0 * rng.uniform() - 1.0) * a;
      break;
    }
    case ad::InitKind::xavier_normal:
      x = init.getArg("gain", 1.0) * std::sqrt(2.0 / (fanIn + fanOut)) *
          rng.normal();
      break;
    case ad::InitKind::kaiming_uniform: {
      double bound = init.getArg("gain", std::sqrt(2.0)) * std::sqrt(3.0 / fan);
      x = (2.0 * rng.uniform() - 1.0) * bound;
      break;
    }
    case ad::InitKind::kaiming_normal:
      x = init.getArg("gain", std::sqrt(2.0)) / std::sqrt(fan) * rng.normal();
      break;
    }
    x = roundToType(x, et);
  }
  return b;
}

} // namespace anvil::interp
