//===- NumericReference.h - the tests' own float encodings ----------------===//
//
// Straight from the formats' definitions, independent of the runtime's
// tables, so the runtime's GEMM tests (CPU and GPU) check its widening
// against these.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TEST_NUMERICREFERENCE_H
#define ANVIL_RUNTIME_TEST_NUMERICREFERENCE_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace anvil::test {

/// The value of a finite E4M3 (format 0) or E5M2 (1) code.
inline double decodeFp8(uint8_t code, int32_t format) {
  int mantissaBits = format == 1 ? 2 : 3, bias = format == 1 ? 15 : 7;
  int exponent = (code >> mantissaBits) & ((1 << (7 - mantissaBits)) - 1);
  int mantissa = code & ((1 << mantissaBits) - 1);
  double v = exponent == 0
                 ? std::ldexp(mantissa, 1 - bias - mantissaBits)
                 : std::ldexp(1.0 + std::ldexp(mantissa, -mantissaBits),
                              exponent - bias);
  return code & 0x80 ? -v : v;
}

/// The code of finite `x` in E4M3 (format 0) or E5M2 (1) as anvil.cast
/// writes it: the nearest finite value, ties to the even code, beyond the
/// largest magnitude that one; by search over the codes' values.
inline uint8_t encodeFp8(double x, int32_t format) {
  const int largest = format == 1 ? 0x7B : 0x7E;
  const double magnitude = std::fabs(x);
  int best = 0;
  for (int code = 1; code <= largest; ++code) {
    double d = std::fabs(decodeFp8(static_cast<uint8_t>(code), format) -
                         magnitude),
           bestD = std::fabs(decodeFp8(static_cast<uint8_t>(best), format) -
                             magnitude);
    if (d < bestD || (d == bestD && code % 2 == 0))
      best = code;
  }
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

/// `x` rounded to bf16, to nearest even: its 16 bits (infinities and
/// NaNs keep their class).
inline uint16_t toBF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

/// The f32 value of bf16 bits: they are its high half.
inline float fromBF16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

} // namespace anvil::test

#endif // ANVIL_RUNTIME_TEST_NUMERICREFERENCE_H
