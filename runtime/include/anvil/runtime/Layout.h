//===- Layout.h - where a rank's piece of a tensor lies in the whole ----*- C++
//-*-===//
//
// A sharded program's rank holds pieces of the model's tensors. A
// `PieceLayout` says which elements of the whole tensor a piece holds, in
// the piece's own (row-major) order:
//
//   whole  every element;
//   flat   elements [begin, end) of the flattened tensor (ZeRO's blocks of
//          optimizer state);
//   split  dimension `dim` viewed as [groups, size / groups], the inner
//          part cut into `parts` equal blocks, and the piece block `index`
//          of every group (tensor parallelism: a column-parallel linear's
//          [in, out / parts] weight is split {dim 1, groups 1}; a fused
//          q/k/v weight keeps each rank's heads of q, k and v with groups
//          3); with `blockOfPart`, only elements [begin, end) of that
//          part, in its order (ZeRO's block of a tensor-parallel part).
//
// Initialization, checkpoints and resumption all go through the same runs
// of contiguous elements, so a piece written by one mesh is read back by
// any other.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_LAYOUT_H
#define ANVIL_RUNTIME_LAYOUT_H

#include "anvil/runtime/Json.h"
#include "anvil/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace anvil::rt {

struct PieceLayout {
  enum class Kind { Whole, Flat, Split };
  Kind kind = Kind::Whole;
  std::vector<int64_t> shape;                        ///< The whole tensor's.
  int64_t begin = 0, end = 0;                        ///< Flat.
  int64_t dim = 0, groups = 1, parts = 1, index = 0; ///< Split.
  /// Split, and only elements [begin, end) of that part in its own order
  /// (ZeRO's block of a tensor-parallel part).
  bool blockOfPart = false;

  static PieceLayout whole(std::vector<int64_t> shape);

  /// Elements of the whole tensor, and of this piece.
  int64_t wholeElements() const;
  int64_t elements() const;
  /// Calls fn(wholeOffset, pieceOffset, count) for every run of contiguous
  /// elements, in piece order.
  void
  forEachRun(const std::function<void(int64_t, int64_t, int64_t)> &fn) const;

  /// Copies the piece's elements (each `elementSize` bytes) out of the whole
  /// tensor, or into it.
  void extract(std::span<const std::byte> whole, std::span<std::byte> piece,
               size_t elementSize) const;
  void insert(std::span<const std::byte> piece, std::span<std::byte> whole,
              size_t elementSize) const;

  /// {"shape": [...], "begin": b, "end": e}, {"shape": [...], "split":
  /// {"dim", "groups", "parts", "index"}} or both (a block of a part); no
  /// "shape" for a whole tensor's layout: the tensor's own shape says it.
  JsonValue toJson() const;
  /// The layout `json` describes; errors say what is wrong with it. A
  /// piece of `pieceElements` elements must fit it.
  static Expected<PieceLayout> fromJson(const JsonValue &json,
                                        int64_t pieceElements);
};

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_LAYOUT_H
