//===- Init.cpp - deterministic parameter initialization ------------------===//
//
// Mirrors randomArgument() in compiler/lib/Interp/Interpreter.cpp; the
// InitParity unit test holds the two to bit equality.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Init.h"

#include "anvil/runtime/TokenData.h" // mix64

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

namespace anvil::rt {

namespace {

struct KindName {
  const char *name;
  InitKind kind;
};
constexpr KindName kKinds[] = {
    {"zeros", InitKind::Zeros},
    {"ones", InitKind::Ones},
    {"constant", InitKind::Constant},
    {"normal", InitKind::Normal},
    {"truncated_normal", InitKind::TruncatedNormal},
    {"uniform", InitKind::Uniform},
    {"xavier_uniform", InitKind::XavierUniform},
    {"xavier_normal", InitKind::XavierNormal},
    {"kaiming_uniform", InitKind::KaimingUniform},
    {"kaiming_normal", InitKind::KaimingNormal},
};

/// Draws of one argument's stream.
class Stream {
public:
  explicit Stream(uint64_t key) : key_(key) {}
  double uniform() {
    uint64_t bits = mix64(key_ ^ mix64(counter_++));
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
  }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log1p(-u1)) *
           std::cos(2.0 * 3.14159265358979323846 * u2);
  }

private:
  uint64_t key_, counter_ = 0;
};

/// The interpreter's rounding to a signed integer type: truncation toward
/// zero, saturating at the type's range, NaN to 0.
double toInteger(double x, int width) {
  if (std::isnan(x))
    return 0.0;
  double lo = -std::ldexp(1.0, width - 1);
  double hi = std::ldexp(1.0, width - 1) - 1.0;
  return std::min(std::max(std::trunc(x), lo), hi);
}

} // namespace

Expected<InitKind> parseInitKind(std::string_view name) {
  std::string known;
  for (const KindName &k : kKinds) {
    if (name == k.name)
      return k.kind;
    known += known.empty() ? "" : ", ";
    known += k.name;
  }
  return Status::error(ErrorCode::InvalidArgument, "unknown initializer '" +
                                                       std::string(name) +
                                                       "'; known: " + known);
}

Status initialize(const InitSpec &spec, uint64_t seed, uint64_t index,
                  std::span<const int64_t> shape, DType dtype,
                  std::span<std::byte> out) {
  Expected<int64_t> bytes = numBytes(shape, dtype);
  if (!bytes)
    return bytes.status();
  Expected<int64_t> n = numElements(shape);
  if (out.size() != static_cast<uint64_t>(*bytes))
    return Status::error(
        ErrorCode::InvalidArgument,
        "initialize: the buffer has " + std::to_string(out.size()) +
            " bytes, " + std::to_string(*n) + " elements of " +
            std::string(dtypeName(dtype)) + " need " + std::to_string(*bytes));
  bool constantKind = spec.kind == InitKind::Zeros ||
                      spec.kind == InitKind::Ones ||
                      spec.kind == InitKind::Constant;
  if (dtype != DType::F32 && dtype != DType::F64 &&
      (isFloat(dtype) || !constantKind))
    return Status::error(ErrorCode::Unavailable,
                         "initializing " + std::string(dtypeName(dtype)) +
                             " state with this initializer is not "
                             "supported; state is f32 or f64 (integers "
                             "take zeros, ones or constant)");

  if (spec.kind == InitKind::TruncatedNormal &&
      !(spec.arg("lower", -2.0) < spec.arg("upper", 2.0)))
    return Status::error(ErrorCode::InvalidArgument,
                         "truncated_normal needs lower < upper");

  double fanIn = 1, fanOut = 1;
  if (!shape.empty()) {
    double receptive = 1;
    for (size_t i = 2; i < shape.size(); ++i)
      receptive *= static_cast<double>(shape[i]);
    fanIn = shape.size() > 1 ? static_cast<double>(shape[1]) * receptive
                             : static_cast<double>(shape[0]);
    fanOut = static_cast<double>(shape[0]) * receptive;
  }
  double fan = spec.fanOut ? fanOut : fanIn;
  Stream rng(mix64(seed) ^ mix64(0x5EED0000ULL + index));

  auto next = [&]() -> double {
    switch (spec.kind) {
    case InitKind::Zeros:
      return 0.0;
    case InitKind::Ones:
      return 1.0;
    case InitKind::Constant:
      return spec.arg("value", 0.0);
    case InitKind::Normal:
      return spec.arg("mean", 0.0) + spec.arg("std", 1.0) * rng.normal();
    case InitKind::TruncatedNormal: {
      double lower = spec.arg("lower", -2.0), upper = spec.arg("upper", 2.0);
      double z;
      do
        z = rng.normal();
      while (z < lower || z > upper);
      return spec.arg("mean", 0.0) + spec.arg("std", 1.0) * z;
    }
    case InitKind::Uniform: {
      double lo = spec.arg("low", 0.0), hi = spec.arg("high", 1.0);
      return lo + (hi - lo) * rng.uniform();
    }
    case InitKind::XavierUniform: {
      double a = spec.arg("gain", 1.0) * std::sqrt(6.0 / (fanIn + fanOut));
      return (2.0 * rng.uniform() - 1.0) * a;
    }
    case InitKind::XavierNormal:
      return spec.arg("gain", 1.0) * std::sqrt(2.0 / (fanIn + fanOut)) *
             rng.normal();
    case InitKind::KaimingUniform: {
      double bound = spec.arg("gain", std::sqrt(2.0)) * std::sqrt(3.0 / fan);
      return (2.0 * rng.uniform() - 1.0) * bound;
    }
    case InitKind::KaimingNormal:
      return spec.arg("gain", std::sqrt(2.0)) / std::sqrt(fan) * rng.normal();
    }
    return 0.0;
  };

  for (int64_t i = 0; i < *n; ++i) {
    double x = next();
    std::byte *p = out.data() + i * dtypeSize(dtype);
    switch (dtype) {
    case DType::F64:
      std::memcpy(p, &x, 8);
      break;
    case DType::F32: {
      float f = static_cast<float>(x);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::I64: {
      // 2^63 - 1 rounds to 2^63 as a double, which int64 cannot hold.
      double d = toInteger(x, 64);
      int64_t v = d >= 0x1p63 ? INT64_MAX : static_cast<int64_t>(d);
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::I32: {
      int32_t v = static_cast<int32_t>(toInteger(x, 32));
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::I1:
      *p = std::byte{x != 0.0};
      break;
    default:
      break; // rejected above
    }
  }
  return Status::ok();
}

} // namespace anvil::rt
