//===- DType.cpp - element types known to the runtime ---------------------===//
//
// One table describes every element type; the lookups below read it.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/DType.h"

#include <array>
#include <cctype>
#include <limits>
#include <string>

namespace anvil::rt {
namespace {
struct DTypeInfo {
  DType type;
  size_t size;
  bool isFloat;
  std::string_view mlirName;
  std::string_view safetensorsName;
};

constexpr std::array<DTypeInfo, 9> kDTypes = {{
    {DType::F64, 8, true, "f64", "F64"},
    {DType::F32, 4, true, "f32", "F32"},
    {DType::F16, 2, true, "f16", "F16"},
    {DType::BF16, 2, true, "bf16", "BF16"},
    {DType::F8E4M3FN, 1, true, "f8E4M3FN", "F8_E4M3"},
    {DType::F8E5M2, 1, true, "f8E5M2", "F8_E5M2"},
    {DType::I1, 1, false, "i1", "BOOL"},
    {DType::I32, 4, false, "i32", "I32"},
    {DType::I64, 8, false, "i64", "I64"},
}};

const DTypeInfo &info(DType type) { return kDTypes[static_cast<size_t>(type)]; }
} // namespace

size_t dtypeSize(DType type) { return info(type).size; }
bool isFloat(DType type) { return info(type).isFloat; }
std::string_view dtypeName(DType type) { return info(type).mlirName; }
std::string_view dtypeSafetensorsName(DType type) {
  return info(type).safetensorsName;
}

Expected<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &entry : kDTypes)
    if (name == entry.mlirName || name == entry.safetensorsName)
      return entry.type;
  std::string accepted;
  for (const DTypeInfo &entry : kDTypes) {
    if (!accepted.empty())
      accepted += ", ";
    accepted +=
        std::string(entry.mlirName) + "/" + std::string(entry.safetensorsName);
  }
  return Status::error(ErrorCode::InvalidArgument,
                       "unknown element type '" + std::string(name) +
                           "'; expected one of " + accepted);
}

Expected<int64_t> numElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d < 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "dimension " + std::to_string(i) + " is negative (" +
                               std::to_string(d) + ")");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return Status::error(ErrorCode::InvalidArgument,
                           "shape has more than 2^63 elements");
    n *= d;
  }
  return n;
}

Expected<int64_t> numBytes(std::span<const int64_t> shape, DType type) {
  Expected<int64_t> n = numElements(shape);
  if (!n)
    return n;
  int64_t size = static_cast<int64_t>(dtypeSize(type));
  if (*n > std::numeric_limits<int64_t>::max() / size)
    return Status::error(ErrorCode::InvalidArgument,
                         "shape needs more than 2^63 bytes");
  return *n * size;
}

} // namespace anvil::rt
