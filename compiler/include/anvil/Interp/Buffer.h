//===- Buffer.h - tensors of the reference interpreter -----------*- C++
//-*-===//
//
// The interpreter holds every tensor as float64 values in row-major order,
// whatever its element type: integers and booleans are exact as doubles up
// to 2^53, which covers every index and label a model uses.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_INTERP_BUFFER_H
#define ANVIL_INTERP_BUFFER_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace anvil::interp {

struct Buffer {
  std::vector<int64_t> shape;
  std::vector<double> data;
  /// The element type the values stand for (f32, bf16, i32, ...).
  mlir::Type elementType;

  Buffer() = default;
  Buffer(std::vector<int64_t> shape, mlir::Type elementType, double fill = 0.0);
  /// A zero-filled buffer of a tensor type.
  static Buffer of(mlir::RankedTensorType type, double fill = 0.0);

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const { return static_cast<int64_t>(data.size()); }
  /// Row-major strides of `shape`.
  std::vector<int64_t> strides() const;
  /// The linear offset of a multi-index.
  int64_t offset(llvm::ArrayRef<int64_t> index) const;
  double &at(llvm::ArrayRef<int64_t> index) { return data[offset(index)]; }
  double at(llvm::ArrayRef<int64_t> index) const { return data[offset(index)]; }
};

/// Number of elements of `shape` (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// Calls `fn(index)` for every multi-index of `shape` in row-major order.
template <typename Fn> void forEachIndex(llvm::ArrayRef<int64_t> shape, Fn fn) {
  int64_t n = numElements(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(llvm::ArrayRef<int64_t>(index));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// Rounds `value` to the nearest value of `type`: round-to-nearest-even for
/// the floats (f16 and bf16 overflow to infinity; the 8-bit floats saturate
/// at their largest finite value); integers truncate toward zero and
/// saturate at the type's range, NaN becoming 0; i1 is `value != 0`.
double roundToType(double value, mlir::Type type);

} // namespace anvil::interp

#endif // ANVIL_INTERP_BUFFER_H
