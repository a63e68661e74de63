//===- GridMapping.h - dispatches onto a CUDA grid (private) ---*- C++ -*-===//
//
// What anvil-cuda-map-dispatches (MapDispatches.cpp) shares with the
// mappings of its own files: a launch, the alignment of a dispatch's
// buffers, a dispatch's single op, a generic's code on a warp per row, and
// the dispatches mapped by a kernel shape of their own (MapReductions.cpp:
// full and row reductions; MapRowGroups.cpp: row groups;
// MapTranspose.cpp: tiled transposes). Each mapping returns false, having
// changed nothing, when the dispatch is not of its form.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_LIB_TARGET_CUDA_GRIDMAPPING_H
#define ANVIL_LIB_TARGET_CUDA_GRIDMAPPING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

#include <cstdint>

namespace mlir::anvil::cuda::grid {

/// A launch of `blocks` x `threads` (1-D), its body ended by gpu.terminator
/// and the builder's insertion point at the start of the body.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads);

/// Whether `memref` is an argument of the dispatch `fn` whose rows are
/// aligned to `width` elements (MapDispatches.cpp: alignedRows), a buffer,
/// not a constant global that every call passes (`constants`).
bool alignedArgument(Value memref, func::FuncOp fn,
                     ArrayRef<memref::GlobalOp> constants, int64_t width);

/// The one `OpTy` of `fn`, whose body is that op and constants; null
/// otherwise.
template <typename OpTy> OpTy soleOp(func::FuncOp fn) {
  OpTy op;
  for (Operation &o : fn.front().without_terminator()) {
    if (o.hasTrait<OpTrait::ConstantLike>())
      continue;
    auto only = dyn_cast<OpTy>(o);
    if (!only || op)
      return nullptr;
    op = only;
  }
  return op;
}

/// A launch of a warp per row: whole warps of a block of at most
/// `blockSize` threads, as many as `rows`. In its body: the warp's number,
/// the thread's lane in it, and the warp's row (the last row for a warp
/// past it, which must compute but store nothing); the builder after them.
struct WarpLaunch {
  Value warpIndex, lane, row;
};
WarpLaunch createWarpLaunch(OpBuilder &b, Location loc, int64_t rows,
                            int64_t blockSize);

/// How a warp folds each output of a reduction (warpFolds): output r as
/// `out = combines[r](out, v)` from `identities[r]`, or, where `maxOf[r]`
/// is an output p (not -1), as a row's online sum of exponentials
/// (OnlineLogSumExp.cpp): the sum of exp(v - m), rescaled whenever output
/// p's maximum m of the terms v grows; `combines[r]` is then the body's
/// select that yields it, and its terms are p's.
struct WarpFolds {
  SmallVector<Operation *> combines;
  SmallVector<APFloat> identities;
  SmallVector<int> maxOf;
};

/// A linalg.generic's code where a warp computes a row of it
/// (MapReductions.cpp's row reductions, MapRowGroups.cpp's row groups):
/// `ivs` holds the loop indices of the point the code is at, set by the
/// caller or by `delinearize`; `zero` is the index 0, which the caller
/// makes where it wants it.
class WarpRow {
public:
  WarpRow(OpBuilder &b, linalg::GenericOp op)
      : b(b), loc(op.getLoc()), op(op), ranges(op.getStaticLoopRanges()),
        ivs(ranges.size()) {}

  /// The index `v`.
  Value index(int64_t v);
  /// Sets the indices of the loops `dims` from `linear` (the last fastest).
  void delinearize(Value linear, ArrayRef<unsigned> dims);
  /// Where `operand` is read or written at the point: its map's results
  /// (a constant result is 0).
  SmallVector<Value> at(OpOperand &operand);
  /// combine(acc, v) or combine(v, acc), as the body folds its r-th output,
  /// with its flags.
  Value fold(Operation *combine, unsigned r, Value acc, Value v);
  /// Every output's folds `a` and `b` of two parts of a row, combined into
  /// the fold of both (an online sum rescales each part's to their common
  /// maximum).
  SmallVector<Value> combine(const WarpFolds &folds, ArrayRef<Value> a,
                             ArrayRef<Value> b);
  /// The body at the point: the inputs loaded (`alignment` gives a load's
  /// claimed alignment in bytes, 0 for none) but those `map` has, then the
  /// body's ops but `skip`; maps the body's values to the point's, from
  /// `map` (what the caller gives the outputs' block arguments, or an input
  /// it loaded once for many points).
  IRMapping point(ArrayRef<Operation *> skip,
                  function_ref<int64_t(OpOperand *)> alignment,
                  IRMapping map = {});
  /// The row's fold, the same value in every lane of the warp: lane `lane`
  /// folds points lane, lane + 32, ... of the `length` points of the loops
  /// `reduction` (runs of `run` consecutive points from run * lane, then
  /// 32 runs on, the first load of each run of an `alignable` input
  /// aligned to the run; the last `length % run` points, one each, by
  /// lanes 0, 1, ...) from the identities, then the lanes' partials fold by
  /// a butterfly of xor shuffles. `folds` are warpFolds'.
  /// Whether a row of `length` points whose innermost reduction loop has
  /// extent `inner` folds in runs of `width`: the row divides into them
  /// and so does that loop (no run across two of its rows), or the row is
  /// that loop alone, at least a run a lane long (its last points then
  /// fold one a lane).
  static bool foldsInRuns(int64_t length, int64_t inner, int64_t width) {
    if (width <= 1)
      return false;
    if (length % width == 0)
      return inner % width == 0;
    return length == inner && length >= 32 * width;
  }
  SmallVector<Value> foldOnWarp(Value lane, ArrayRef<unsigned> reduction,
                                int64_t length, int64_t run,
                                function_ref<bool(OpOperand *)> alignable,
                                const WarpFolds &folds);

  OpBuilder &b;
  Location loc;
  linalg::GenericOp op;
  SmallVector<int64_t> ranges;
  SmallVector<Value> ivs;
  Value zero;
};

/// Whether every output of `op` is a reduction a warp can fold in any
/// order: `out = combine(out, v)`, `v` computed without the outputs or
/// another output's fold, `combine` an f32 addf, maximumf or minimumf
/// (whose identities, the value x combined with which gives x back, are
/// -0, -inf, +inf); or an online sum of exponentials and the maximum it
/// is taken against, as OnlineLogSumExp.cpp writes them (identities +0
/// and -FLT_MAX, the fills it gives them: a maximum filled with -inf
/// instead would, for a row of -inf terms, store -FLT_MAX and a sum of 0
/// where a fold in order gives -inf and NaN). Sets `folds` by output.
bool warpFolds(linalg::GenericOp op, WarpFolds &folds);

/// Whether `op` writes all of `buffer` (an output whose map's results are
/// distinct loops, or 0 along a dimension of 1) and does not read it as an
/// input: a constant fill of `buffer` just before can fold into it.
bool writesWhole(linalg::GenericOp op, Value buffer);

/// Whether every input of `op` that reads along the loops `reduction`
/// reads the last of them as its innermost, unit-stride dimension: rows of
/// contiguous terms, which a warp reads in coalesced lines.
bool readsRowsContiguously(linalg::GenericOp op, ArrayRef<unsigned> reduction);

/// A dispatch that is a row group (anvil-row-groups' ops over the same
/// rows) on a warp per row, the ops one after another (MapRowGroups.cpp).
bool mapRowGroup(func::FuncOp fn, int64_t blockSize, int64_t minLength,
                 int64_t width, ArrayRef<memref::GlobalOp> constants);

/// A dispatch that is one linalg.transpose moving its input's innermost
/// dimension away, through 32 x 32 tiles in shared memory
/// (MapTranspose.cpp).
bool mapTranspose(func::FuncOp fn, int64_t blockSize);

/// A dispatch that is one full amax reduction, folded per thread, per warp
/// by shuffles and into the output atomically (MapReductions.cpp).
bool mapFullReduction(func::FuncOp fn, int64_t blockSize);

/// A dispatch that reduces rows of at least `minLength` contiguous terms,
/// on a warp per row, after fills of its outputs or not
/// (MapReductions.cpp).
bool mapRowReductions(func::FuncOp fn, int64_t blockSize, int64_t minLength,
                      int64_t width, ArrayRef<memref::GlobalOp> constants);

} // namespace mlir::anvil::cuda::grid

#endif // ANVIL_LIB_TARGET_CUDA_GRIDMAPPING_H
