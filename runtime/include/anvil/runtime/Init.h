//===- Init.h - deterministic parameter initialization -----------*- C++
//-*-===//
//
// The initializers of `#anvil.init` (zeros, ones, constant, normal,
// truncated_normal, uniform, xavier_*, kaiming_*), computed exactly as the
// reference interpreter computes them, so an executable's initial state is
// bit-identical to anvil-interp's for the same seed:
//
// - state argument `index` draws from the stream keyed
//   mix64(seed) ^ mix64(0x5EED0000 + index); draw k of a stream is
//   mix64(key ^ mix64(k)) >> 11 scaled to [0, 1) (53 bits);
// - normals use Box-Muller with one (u1, u2) pair per value;
// - values are computed in double and rounded once to the element type;
// - fans follow PyTorch: for (out, in, k...), fan_in = in * prod(k) and
//   fan_out = out * prod(k); "mode = fan_out" selects fan_out for kaiming.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_INIT_H
#define ANVIL_RUNTIME_INIT_H

#include "anvil/runtime/DType.h"
#include "anvil/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace anvil::rt {

enum class InitKind {
  Zeros,
  Ones,
  Constant,
  Normal,
  TruncatedNormal,
  Uniform,
  XavierUniform,
  XavierNormal,
  KaimingUniform,
  KaimingNormal,
};

/// An initializer: its kind, numeric arguments ("std", "gain", ...) and
/// whether fan-based kinds use fan_out.
struct InitSpec {
  InitKind kind = InitKind::Zeros;
  std::map<std::string, double> args;
  bool fanOut = false;

  double arg(const std::string &name, double fallback) const {
    auto it = args.find(name);
    return it == args.end() ? fallback : it->second;
  }
};

/// Parses the dialect's spelling of a kind ("kaiming_uniform").
Expected<InitKind> parseInitKind(std::string_view name);

/// Fills `out` (numElements(shape) elements of `dtype`) with the initial
/// value of state argument `index` of a run seeded `seed`. Floats are
/// f32 or f64; integer and i1 types take zeros, ones and constant only.
Status initialize(const InitSpec &spec, uint64_t seed, uint64_t index,
                  std::span<const int64_t> shape, DType dtype,
                  std::span<std::byte> out);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_INIT_H
