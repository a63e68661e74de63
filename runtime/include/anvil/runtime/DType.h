//===- DType.h - element types known to the runtime --------------*- C++
//-*-===//
//
// The element types a manifest may name, with their storage sizes and the
// spellings used by the compiler (MLIR: "f32", "bf16", "f8E4M3FN") and by
// checkpoints (safetensors: "F32", "BF16", "F8_E4M3").
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_DTYPE_H
#define ANVIL_RUNTIME_DTYPE_H

#include "anvil/runtime/Status.h"

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace anvil::rt {

enum class DType : uint8_t {
  F64,
  F32,
  F16,
  BF16,
  F8E4M3FN,
  F8E5M2,
  I1,
  I32,
  I64,
};

/// Bytes one element occupies in memory (i1 takes a whole byte).
size_t dtypeSize(DType type);

/// True for the floating-point types.
bool isFloat(DType type);

/// The MLIR spelling: "f32", "bf16", "f8E4M3FN", "i1", ...
std::string_view dtypeName(DType type);

/// The safetensors spelling: "F32", "BF16", "F8_E4M3", "BOOL", ...
std::string_view dtypeSafetensorsName(DType type);

/// Parses either spelling; the error lists the accepted names.
Expected<DType> parseDType(std::string_view name);

/// Number of elements of a shape (1 for a scalar); an error if it overflows
/// or a dimension is negative.
Expected<int64_t> numElements(std::span<const int64_t> shape);

/// Bytes a tensor of `shape` and `type` occupies; an error if that
/// overflows int64 (sizes from file headers are untrusted).
Expected<int64_t> numBytes(std::span<const int64_t> shape, DType type);

/// The bits of `x` rounded to bf16: to nearest, ties to even, subnormals
/// kept, overflow to infinity, NaN a quiet NaN of the same sign (as
/// arith.truncf and the GPU's cvt.rn.bf16.f32 round).
inline uint16_t toBF16Bits(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits = std::isnan(x) ? (bits | 0x00400000u)
                       : bits + 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// The f32 value of bf16 bits.
inline float fromBF16Bits(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_DTYPE_H
