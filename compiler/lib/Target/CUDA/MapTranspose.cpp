//===- MapTranspose.cpp - tiled transposes onto a CUDA grid --------------===//
//
// anvil-cuda-map-dispatches' transposes: a dispatch that moves its input's
// innermost dimension away runs 32 x 32 tiles through shared memory, so a
// warp's reads and writes are both coalesced. See GridMapping.h.
//
//===----------------------------------------------------------------------===//

#include "GridMapping.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

/// A dispatch that only transposes (one linalg.transpose between
/// contiguous row-major buffers of 1-, 2- or 4-byte elements) and moves the
/// input's innermost dimension away from the output's innermost one (an
/// FP8 GEMM's operand laid out with K innermost): tiles of 32 x 32 through
/// shared memory, so that both the reads and the writes of a warp are 32
/// consecutive elements. Output dimension q holds the input's innermost
/// dimension, L is the output's innermost; both must be multiples of 32.
/// Block b takes tile (q0, l0) of one point of the other dimensions;
/// thread (tx, ty), tx in [0, 32), ty in [0, R) for R rows a pass, reads
/// the input at (q0 + tx, l0 + ty + R k) into the tile's row ty + R k,
/// column tx, waits at a barrier, and writes the tile's column ty + R k,
/// row tx to the output at (q0 + ty + R k, l0 + tx). A row of the tile is
/// 33 elements long (the bank of a column's elements differ).
bool mlir::anvil::cuda::grid::mapTranspose(func::FuncOp fn, int64_t blockSize) {
  auto op = soleOp<linalg::TransposeOp>(fn);
  if (!op || !op.hasPureBufferSemantics())
    return false;
  auto inType = dyn_cast<MemRefType>(op.getInput().getType());
  auto outType = dyn_cast<MemRefType>(op.getInit().getType());
  auto rowMajor = [](MemRefType t) {
    return t && t.hasStaticShape() && t.getLayout().isIdentity();
  };
  if (!rowMajor(inType) || !rowMajor(outType) ||
      !inType.getElementType().isIntOrFloat() ||
      !llvm::is_contained({8u, 16u, 32u}, inType.getElementTypeBitWidth()))
    return false;
  ArrayRef<int64_t> perm = op.getPermutation();
  ArrayRef<int64_t> shape = outType.getShape();
  int64_t rank = outType.getRank(), last = rank - 1;
  int64_t q = llvm::find(perm, last) - perm.begin();
  constexpr int64_t kTile = 32;
  if (rank < 2 || q == last || shape[q] % kTile != 0 ||
      shape[last] % kTile != 0)
    return false;
  // R rows a pass: whole warps, a power of two up to 8, within the block.
  int64_t rows = 1;
  while (rows < 8 && kTile * rows * 2 <= blockSize)
    rows *= 2;
  SmallVector<int64_t> others;
  int64_t points = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d != q && d != last) {
      others.push_back(d);
      points *= shape[d];
    }
  int64_t tilesQ = shape[q] / kTile, tilesL = shape[last] / kTile;

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto tileType = MemRefType::get(
      {kTile, kTile + 1}, inType.getElementType(), AffineMap(),
      gpu::AddressSpaceAttr::get(b.getContext(),
                                 gpu::GPUDialect::getWorkgroupAddressSpace()));
  Value one = index(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, index(tilesQ * tilesL * points), one, one, index(kTile * rows),
      one, one, /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, TypeRange{tileType});
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value tile = launch.getWorkgroupAttributions()[0];
  // The block's tile and point of the other dimensions, tiles along L
  // fastest.
  Value block = launch.getBlockIds().x;
  Value l0 = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, block, index(tilesL)),
      index(kTile));
  Value rest = arith::DivUIOp::create(b, loc, block, index(tilesL));
  Value q0 = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, rest, index(tilesQ)),
      index(kTile));
  rest = arith::DivUIOp::create(b, loc, rest, index(tilesQ));
  SmallVector<Value> at(rank);
  for (int64_t i = static_cast<int64_t>(others.size()) - 1; i >= 0; --i) {
    int64_t d = others[i];
    at[d] =
        i > 0
            ? arith::RemUIOp::create(b, loc, rest, index(shape[d])).getResult()
            : rest;
    if (i > 0)
      rest = arith::DivUIOp::create(b, loc, rest, index(shape[d]));
  }
  Value tid = launch.getThreadIds().x;
  Value tx = arith::RemUIOp::create(b, loc, tid, index(kTile));
  Value ty = arith::DivUIOp::create(b, loc, tid, index(kTile));
  // The input's indices of output point `at` (output dimension d is input
  // dimension perm[d]).
  auto inputAt = [&](ArrayRef<Value> out) {
    SmallVector<Value> in(rank);
    for (int64_t d = 0; d < rank; ++d)
      in[perm[d]] = out[d];
    return in;
  };
  for (int64_t k = 0; k < kTile / rows; ++k) {
    Value row = arith::AddIOp::create(b, loc, ty, index(rows * k));
    at[q] = arith::AddIOp::create(b, loc, q0, tx);
    at[last] = arith::AddIOp::create(b, loc, l0, row);
    Value v = memref::LoadOp::create(b, loc, op.getInput(), inputAt(at));
    memref::StoreOp::create(b, loc, v, tile, ValueRange{row, tx});
  }
  gpu::BarrierOp::create(b, loc);
  for (int64_t k = 0; k < kTile / rows; ++k) {
    Value row = arith::AddIOp::create(b, loc, ty, index(rows * k));
    Value v = memref::LoadOp::create(b, loc, tile, ValueRange{tx, row});
    at[q] = arith::AddIOp::create(b, loc, q0, row);
    at[last] = arith::AddIOp::create(b, loc, l0, tx);
    memref::StoreOp::create(b, loc, v, op.getInit(), at);
  }
  op.erase();
  return true;
}
