//===- GridMapping.h - dispatches onto a CUDA grid (private) ---*- C++ -*-===//
//
// What anvil-cuda-map-dispatches (MapDispatches.cpp) shares with the
// mappings of its own files: a launch, the alignment of a dispatch's
// buffers, a dispatch's single op, and the dispatches mapped by a kernel
// shape of their own (MapReductions.cpp: full and row reductions;
// MapTranspose.cpp: tiled transposes). Each mapping returns false, having
// changed nothing, when the dispatch is not of its form.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_LIB_TARGET_CUDA_GRIDMAPPING_H
#define ANVIL_LIB_TARGET_CUDA_GRIDMAPPING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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
