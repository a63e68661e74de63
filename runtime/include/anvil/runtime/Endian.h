//===- Endian.h - little-endian integers in file formats ----------*- C++
//-*-===//
//
// safetensors, .npy and llm.c token shards store their lengths, headers and
// tokens little-endian; these read and write them byte by byte, so the
// formats come out the same on any host.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_ENDIAN_H
#define ANVIL_RUNTIME_ENDIAN_H

#include <cstddef>
#include <cstdint>

namespace anvil::rt {

/// The unsigned little-endian integer in the `n` (at most 8) bytes at `p`.
inline uint64_t loadLE(const std::byte *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;)
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

/// Writes the low `n` (at most 8) bytes of `v` to `p`, little-endian.
inline void storeLE(std::byte *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_ENDIAN_H
