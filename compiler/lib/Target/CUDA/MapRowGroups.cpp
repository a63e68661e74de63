//===- MapRowGroups.cpp - a row group on a warp per row -------------------===//
//
// anvil-cuda-map-dispatches' row groups (anvil-row-groups): one launch of a
// warp per row, which runs the group's ops on its row one after another,
// a block barrier between two (what a lane wrote, the next op's lanes
// read). See GridMapping.h.
//
//===----------------------------------------------------------------------===//

#include "GridMapping.h"

#include "anvil/Conversion/RowGroups.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::anvil::cuda::grid;

namespace {

/// Whether the `map`'s last result is loop `dim` and no other result uses
/// it: the accesses of consecutive points of `dim` are consecutive
/// elements (of a buffer whose innermost stride is 1).
bool innermostAlong(AffineMap map, unsigned dim, MLIRContext *ctx) {
  if (map.getNumResults() == 0 ||
      map.getResults().back() != getAffineDimExpr(dim, ctx))
    return false;
  return llvm::none_of(map.getResults().drop_back(),
                       [&](AffineExpr e) { return e.isFunctionOfDim(dim); });
}

} // namespace

/// A row group (`anvil.row_group`; anvil-row-groups checked that its ops
/// touch what they write only within a row): one launch of a warp per row
/// (a warp past the last row computes the last row again and stores
/// nothing, so that every lane of a block reaches the barriers). The warp
/// runs the ops in order on its row, each
/// - a reduction over rows of at least `minLength` (and 32) points whose
///   folds a warp can take in any order (warpFolds): folded on the warp as
///   a row reduction of its own is (mapRowReductions), lane 0 folding the
///   row's value into the output, or the fill's constant just before;
/// - another reduction: lane 0 folds the row in order, from the output's
///   value (or the fill's), as a thread of its own would;
/// - an elementwise op (or a fill that no reduction folds): lane l
///   computes the row's points l, l + 32, ..., in runs of `width` where the
///   row divides into them and an access along the innermost loop can be
///   aligned (alignedArgument), the run's first access carrying that;
/// with a block barrier between two ops. Sums over a warp are a fixed
/// tree, as a row reduction's; every other value is the sequential one.
/// False, `fn` unchanged, when `fn` is not a row group or its ops no longer
/// fit their rows (RowGroups.h).
bool mlir::anvil::cuda::grid::mapRowGroup(
    func::FuncOp fn, int64_t blockSize, int64_t minLength, int64_t width,
    ArrayRef<memref::GlobalOp> constants) {
  if (!fn->hasAttr(AnvilDialect::kRowGroupAttrName))
    return false;
  SmallVector<Operation *> members;
  for (Operation &o : fn.front().without_terminator()) {
    if (o.hasTrait<OpTrait::ConstantLike>())
      continue;
    if (!isa<linalg::GenericOp, linalg::FillOp>(o))
      return false;
    members.push_back(&o);
  }
  SmallVector<int64_t> rowRanges = rows::rowExtents(members);
  if (members.size() < 2 || rowRanges.empty() ||
      !llvm::all_of(members, [&](Operation *m) {
        return rows::fitsRows(m, rowRanges,
                              std::numeric_limits<int64_t>::max());
      }))
    return false;
  int64_t rowCount = 1;
  for (int64_t r : rowRanges)
    rowCount *= r;
  unsigned rowLoops = rowRanges.size();

  OpBuilder b(members.front());
  Location loc = members.front()->getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  constexpr int64_t warp = 32;
  auto [warpIndex, lane, row] = createWarpLaunch(b, loc, rowCount, blockSize);
  Value hasRow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       warpIndex, index(rowCount));
  Value firstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
  Value rowLane = arith::AndIOp::create(b, loc, hasRow, firstLane);
  SmallVector<unsigned> rowDims =
      llvm::to_vector(llvm::seq<unsigned>(0, rowLoops));

  // The fill just before the member, folded into it: its buffer and
  // constant (the member, a reduction, starts from it).
  Value filledBuffer;
  Operation *filledWith = nullptr, *startFrom = nullptr;
  // The output's value before a reduction folds a row into it.
  auto before = [&](WarpRow &code, OpOperand &init) -> Value {
    if (startFrom && init.get() == filledBuffer)
      return b.clone(*startFrom)->getResult(0);
    return memref::LoadOp::create(b, loc, init.get(), code.at(init));
  };
  bool emitted = false;
  for (auto [i, member] : llvm::enumerate(members)) {
    if (auto fill = dyn_cast<linalg::FillOp>(member)) {
      auto next = i + 1 < members.size()
                      ? dyn_cast<linalg::GenericOp>(members[i + 1])
                      : linalg::GenericOp();
      // (anvil-row-groups refused a member that reads its output's bytes
      // through another buffer.)
      if (next && next.getNumReductionLoops() != 0 &&
          writesWhole(next, fill.getOutputs()[0])) {
        filledBuffer = fill.getOutputs()[0];
        filledWith = fill.getInputs()[0].getDefiningOp();
        continue;
      }
    }
    // A fill folds into the member right after it only.
    startFrom = filledWith;
    filledWith = nullptr;
    if (emitted)
      gpu::BarrierOp::create(b, loc);
    emitted = true;

    if (auto fill = dyn_cast<linalg::FillOp>(member)) {
      // Lane l stores points l, l + 32, ... of the row.
      auto type = cast<MemRefType>(fill.getOutputs()[0].getType());
      int64_t columns = type.getNumElements() / rowCount;
      auto guard = scf::IfOp::create(b, loc, hasRow, false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      auto loop = scf::ForOp::create(b, loc, lane, index(columns), index(warp));
      b.setInsertionPoint(loop.getBody()->getTerminator());
      // The point's indices: the row's, then the rest of the shape's.
      SmallVector<Value> where(type.getRank());
      Value rest = loop.getInductionVar();
      for (int64_t d = type.getRank() - 1; d >= 0; --d) {
        if (d < static_cast<int64_t>(rowLoops))
          break;
        where[d] =
            arith::RemUIOp::create(b, loc, rest, index(type.getDimSize(d)));
        rest = arith::DivUIOp::create(b, loc, rest, index(type.getDimSize(d)));
      }
      Value linear = row;
      for (int64_t d = rowLoops - 1; d >= 0; --d) {
        where[d] =
            d > 0 ? arith::RemUIOp::create(b, loc, linear, index(rowRanges[d]))
                        .getResult()
                  : linear;
        if (d > 0)
          linear = arith::DivUIOp::create(b, loc, linear, index(rowRanges[d]));
      }
      Value value = b.clone(*fill.getInputs()[0].getDefiningOp())->getResult(0);
      memref::StoreOp::create(b, loc, value, fill.getOutputs()[0], where);
      continue;
    }

    auto op = cast<linalg::GenericOp>(member);
    WarpRow code(b, op);
    code.delinearize(row, rowDims);
    code.zero = index(0);
    SmallVector<unsigned> reduction, columns;
    int64_t length = 1, points = 1;
    for (auto [d, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
      if (d < rowLoops)
        continue;
      if (iterator == utils::IteratorType::reduction) {
        reduction.push_back(d);
        length *= code.ranges[d];
      } else {
        columns.push_back(d);
        points *= code.ranges[d];
        code.ivs[d] = code.zero; // a reduction's: of range 1 (fitsRows)
      }
    }
    Block *body = op.getBlock();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    MLIRContext *ctx = op.getContext();

    if (!reduction.empty()) {
      // Into lane 0 of the row's warp (the caller's insertion guard keeps
      // the builder's place after): the outputs' values before the fold.
      auto onRowLane = [&] {
        auto guard = scf::IfOp::create(b, loc, rowLane, false);
        b.setInsertionPoint(guard.thenBlock()->getTerminator());
        SmallVector<Value> olds;
        for (OpOperand &init : op.getDpsInitsMutable())
          olds.push_back(before(code, init));
        return olds;
      };
      WarpFolds folds;
      // On the warp where a reduction of its own would be
      // (mapRowReductions): the same tree of sums.
      auto everyParallelLoop = [&](OpOperand &init) {
        AffineMap map = op.getMatchingIndexingMap(&init);
        for (auto [d, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
          if (iterator == utils::IteratorType::parallel &&
              !map.isFunctionOfDim(d))
            return false;
        return true;
      };
      if (minLength > 0 && length >= std::max<int64_t>(minLength, warp) &&
          readsRowsContiguously(op, reduction) &&
          llvm::all_of(op.getDpsInitsMutable(), everyParallelLoop) &&
          warpFolds(op, folds)) {
        unsigned inner = reduction.back();
        auto alignable = [&](OpOperand *input) {
          return innermostAlong(op.getMatchingIndexingMap(input), inner, ctx) &&
                 alignedArgument(input->get(), fn, constants, width);
        };
        int64_t run = 1;
        if (WarpRow::foldsInRuns(length, code.ranges[inner], width) &&
            llvm::any_of(op.getDpsInputOperands(), alignable))
          run = width;
        SmallVector<Value> partials =
            code.foldOnWarp(lane, reduction, length, run, alignable, folds);
        OpBuilder::InsertionGuard g(b);
        SmallVector<Value> olds = onRowLane();
        for (auto [init, result] : llvm::zip_equal(
                 op.getDpsInitsMutable(), code.combine(folds, olds, partials)))
          memref::StoreOp::create(b, loc, result, init.get(), code.at(init));
        continue;
      }
      // Lane 0 folds the row in order.
      OpBuilder::InsertionGuard g(b);
      SmallVector<Value> olds = onRowLane();
      auto loop =
          scf::ForOp::create(b, loc, index(0), index(length), index(1), olds);
      {
        OpBuilder::InsertionGuard inLoop(b);
        b.setInsertionPointToStart(loop.getBody());
        code.delinearize(loop.getInductionVar(), reduction);
        IRMapping outs;
        for (auto [r, acc] : llvm::enumerate(loop.getRegionIterArgs()))
          outs.map(body->getArgument(op.getNumDpsInputs() + r), acc);
        IRMapping map = code.point(
            {}, [](OpOperand *) -> int64_t { return 0; }, outs);
        scf::YieldOp::create(
            b, loc, llvm::map_to_vector(yield.getOperands(), [&](Value v) {
              return map.lookupOrDefault(v);
            }));
      }
      for (auto [r, init] : llvm::enumerate(op.getDpsInitsMutable()))
        memref::StoreOp::create(b, loc, loop.getResult(r), init.get(),
                                code.at(init));
      continue;
    }

    // Elementwise: lane l computes the row's points l, l + 32, ... (runs;
    // lane 0 the row's one point when the op has no loops but the rows').
    auto alignable = [&](OpOperand *operand) {
      return !columns.empty() &&
             innermostAlong(op.getMatchingIndexingMap(operand), columns.back(),
                            ctx) &&
             alignedArgument(operand->get(), fn, constants, width);
    };
    int64_t run = 1;
    if (width > 1 && !columns.empty() && points % width == 0 &&
        code.ranges[columns.back()] % width == 0 &&
        llvm::any_of(op->getOpOperands(),
                     [&](OpOperand &o) { return alignable(&o); }))
      run = width;
    auto guard = scf::IfOp::create(b, loc, hasRow, false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    // The inputs read at the row alone (its statistics), once: in the loop,
    // the stores between would keep LLVM from proving them the same.
    IRMapping rowInputs;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      if (!isa<MemRefType>(input->get().getType()) ||
          llvm::is_contained(op.getDpsInits(), input->get()) ||
          llvm::any_of(columns,
                       [&](unsigned d) { return map.isFunctionOfDim(d); }))
        continue;
      rowInputs.map(
          op.getMatchingBlockArgument(input),
          memref::LoadOp::create(b, loc, input->get(), code.at(*input))
              .getResult());
    }
    Value first =
        run == 1 ? lane
                 : arith::MulIOp::create(b, loc, lane, index(run)).getResult();
    auto loop =
        scf::ForOp::create(b, loc, first, index(points), index(warp * run));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    // An aligned output's values over the run, and where the run starts:
    // stored as one vector after it (left to LLVM, its SLP vectorizer packs
    // bf16 points in pairs, and the load/store vectorizer then cannot join
    // a [1, 2, 1] run). The points are the generic's parallel iterations,
    // which no order binds.
    SmallVector<SmallVector<Value>> runValues(op.getNumDpsInits());
    SmallVector<SmallVector<Value>> runStart(op.getNumDpsInits());
    for (int64_t j = 0; j < run; ++j) {
      Value k = loop.getInductionVar();
      if (j > 0)
        k = arith::AddIOp::create(b, loc, k, index(j));
      code.delinearize(k, columns);
      auto alignment = [&](OpOperand *operand) -> int64_t {
        if (j != 0 || run == 1 || !alignable(operand))
          return 0;
        return run *
               cast<MemRefType>(operand->get().getType())
                   .getElementTypeBitWidth() /
               8;
      };
      // An output's old value, where the body reads it.
      IRMapping outs = rowInputs;
      for (OpOperand &init : op.getDpsInitsMutable()) {
        BlockArgument arg = op.getMatchingBlockArgument(&init);
        if (arg.use_empty())
          continue;
        auto load = memref::LoadOp::create(b, loc, init.get(), code.at(init));
        if (int64_t bytes = alignment(&init))
          load.setAlignment(bytes);
        outs.map(arg, load.getResult());
      }
      IRMapping map = code.point({}, alignment, outs);
      for (auto [r, init] : llvm::enumerate(op.getDpsInitsMutable())) {
        Value value = map.lookupOrDefault(yield.getOperand(r));
        if (run > 1 && alignable(&init)) {
          if (j == 0)
            runStart[r] = code.at(init);
          runValues[r].push_back(value);
          continue;
        }
        memref::StoreOp::create(b, loc, value, init.get(), code.at(init));
      }
    }
    for (auto [r, init] : llvm::enumerate(op.getDpsInitsMutable())) {
      if (runValues[r].empty())
        continue;
      auto type = cast<MemRefType>(init.get().getType());
      Value values = vector::FromElementsOp::create(
          b, loc, VectorType::get({run}, type.getElementType()), runValues[r]);
      vector::StoreOp::create(
          b, loc, values, init.get(), runStart[r], /*nontemporal=*/false,
          llvm::MaybeAlign(run * type.getElementTypeBitWidth() / 8));
    }
  }
  for (Operation *member : llvm::reverse(members))
    member->erase();
  return true;
}
