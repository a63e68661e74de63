//===- Safetensors.h - checkpoint files in the safetensors format -*- C++
//-*-===//
//
// The format (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data section) plus an optional "__metadata__" object of string values,
// then the data section. Anvil writes tensors in the order given, aligned to
// 8 bytes, and writes files atomically (see File.h).
//
// Reading validates everything before any byte is used: the header length
// against the file size, the JSON, every dtype, shape and offset range, and
// that tensors do not overlap. Errors name the file and the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_SAFETENSORS_H
#define ANVIL_RUNTIME_SAFETENSORS_H

#include "anvil/runtime/DType.h"
#include "anvil/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace anvil::rt {

/// What a tensor is: its name, element type and shape.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// A tensor to write: its spec and its bytes (dtypeSize * numElements).
struct TensorRef {
  TensorSpec spec;
  std::span<const std::byte> data;
};

/// Writes `tensors` and `metadata` to `path` atomically.
Status writeSafetensors(const std::string &path,
                        std::span<const TensorRef> tensors,
                        const std::map<std::string, std::string> &metadata);

/// A safetensors file read into memory and validated.
class SafetensorsFile {
public:
  static Expected<SafetensorsFile> read(const std::string &path);

  // Move-only: the tensors' spans point into the owned bytes.
  SafetensorsFile() = default;
  SafetensorsFile(SafetensorsFile &&) = default;
  SafetensorsFile &operator=(SafetensorsFile &&) = default;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const std::string &path() const { return path_; }
  /// Tensors in file order (by data offset).
  const std::vector<TensorRef> &tensors() const { return tensors_; }
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// The tensor `name`, or nullptr.
  const TensorRef *find(const std::string &name) const;

  /// Checks that the file holds exactly the tensors of `expected` (names,
  /// dtypes, shapes), e.g. "checkpoint 'c.safetensors': tensor 'h.0.w' has
  /// shape [768,2304], the model expects [768,2305]".
  Status matches(std::span<const TensorSpec> expected) const;

private:
  std::string path_;
  std::vector<std::byte> bytes_;
  std::vector<TensorRef> tensors_;
  std::map<std::string, std::string> metadata_;
  std::unordered_map<std::string, size_t> byName_; ///< Index into tensors_.
};

/// "[768,2304]".
std::string formatShape(std::span<const int64_t> shape);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_SAFETENSORS_H
