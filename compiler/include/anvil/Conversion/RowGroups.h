//===- RowGroups.h - dispatches that run a warp per row ---------*- C++ -*-===//
//
// A row group is a dispatch of several linalg ops (generics, and fills of a
// buffer with a constant) whose leading loops are the same parallel rows,
// which touch what the group writes only within a row, and which a GPU runs
// as one kernel of a warp per row, the ops one after another (a layer
// norm: the row sums, the statistics, the normalized rows). What
// anvil-row-groups checks when it forms one (it also checks the buffers'
// aliasing, which only the host function sees) and anvil-cuda-map-dispatches
// checks again when it maps one (the dispatch function carries
// AnvilDialect::kRowGroupAttrName).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CONVERSION_ROWGROUPS_H
#define ANVIL_CONVERSION_ROWGROUPS_H

#include "mlir/IR/Operation.h"

#include <cstdint>
#include <optional>

namespace mlir::anvil::rows {

/// Whether `op`, in a bufferized function's body, is a dispatch region: a
/// linalg op, or an op without results holding linalg ops (a loop around a
/// scatter, a row group).
bool isDispatchRegion(Operation *op);

/// The loops of a possible member: a linalg.generic's (static, positive
/// ranges; every operand indexed by loop dimensions or 0), or those of a
/// fill of a statically shaped buffer with a constant (its shape, all
/// parallel). std::nullopt for any other op.
struct Loops {
  SmallVector<int64_t> ranges;
  SmallVector<bool> reduction; // per loop
};
std::optional<Loops> memberLoops(Operation *op);

/// The rows of `ops`' members: the longest common prefix of their leading
/// parallel loops' ranges, without trailing ranges of 1.
SmallVector<int64_t> rowExtents(ArrayRef<Operation *> ops);

/// Whether `operand` of the member `op` is accessed within rows: a
/// statically shaped, contiguous row-major buffer whose leading dimensions
/// are `rows`, indexed there by the loops of the rows, in order.
bool rowLocal(Operation *op, OpOperand &operand, ArrayRef<int64_t> rows);

/// Whether `op` can be a member of a group over `rows`: its leading loops
/// are parallel over `rows`, each output is `rowLocal`, a reduction writes
/// one element per row (its outputs' other indices 0 or loops of range 1),
/// and its loops within a row number at most `maxColumns` points.
bool fitsRows(Operation *op, ArrayRef<int64_t> rows, int64_t maxColumns);

} // namespace mlir::anvil::rows

#endif // ANVIL_CONVERSION_ROWGROUPS_H
