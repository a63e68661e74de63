//===- MapReductions.cpp - reductions onto a CUDA grid -------------------===//
//
// anvil-cuda-map-dispatches' reductions with kernel shapes of their own: a
// full amax reduction (grid-stride partials, warp shuffles, one atomic max
// a warp) and rows of contiguous terms on a warp each (lanes' partials
// folded by shuffles), optionally after fills of their outputs. See
// GridMapping.h.
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
#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::anvil::cuda::grid;

bool mlir::anvil::cuda::grid::writesWhole(linalg::GenericOp op, Value buffer) {
  if (llvm::is_contained(op.getDpsInputs(), buffer))
    return false;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (init.get() != buffer)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&init);
    auto shape = cast<MemRefType>(buffer.getType()).getShape();
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return false;
    for (auto [i, e] : llvm::enumerate(map.getResults()))
      if (isa<AffineConstantExpr>(e) && shape[i] != 1)
        return false;
    return true;
  }
  return false;
}

namespace {

/// The one linalg.generic of `fn`, whose body is that generic and
/// constants; null otherwise.
linalg::GenericOp soleGeneric(func::FuncOp fn) {
  return soleOp<linalg::GenericOp>(fn);
}

/// The generic of a dispatch that is fills of some of its outputs with
/// constants and then the generic (anvil-outline-dispatches
/// fills-into-reductions), and those fills; null when `fn`'s body is
/// anything else but constants.
linalg::GenericOp genericAfterFills(func::FuncOp fn,
                                    SmallVectorImpl<linalg::FillOp> &fills) {
  linalg::GenericOp generic;
  for (Operation &o : fn.front().without_terminator()) {
    if (o.hasTrait<OpTrait::ConstantLike>())
      continue;
    auto fill = dyn_cast<linalg::FillOp>(o);
    if (fill && !generic && fill.hasPureBufferSemantics() &&
        fill.getInputs()[0].getDefiningOp<arith::ConstantOp>()) {
      fills.push_back(fill);
      continue;
    }
    auto op = dyn_cast<linalg::GenericOp>(o);
    if (!op || generic)
      return nullptr;
    generic = op;
  }
  if (!generic)
    return nullptr;
  for (linalg::FillOp fill : fills)
    if (!writesWhole(generic, fill.getOutputs()[0]))
      return nullptr;
  return generic;
}

/// The combining op of the reduction body `op` yields as result `r`, when
/// it folds each value into that output as an amax does, `out =
/// maximumf(out, |v|)` (v computed without `out`): null otherwise.
Operation *amaxCombiner(linalg::GenericOp op, unsigned r) {
  Block *body = op.getBlock();
  Value out = body->getArgument(op.getNumDpsInputs() + r);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto combine = yield.getOperand(r).getDefiningOp<arith::MaximumFOp>();
  if (!combine || combine->getBlock() != body)
    return nullptr;
  Value lhs = combine.getLhs(), rhs = combine.getRhs();
  if ((lhs == out) == (rhs == out))
    return nullptr;
  if (!(lhs == out ? rhs : lhs).getDefiningOp<math::AbsFOp>())
    return nullptr;
  // Nothing else reads the output.
  for (OpOperand &use : out.getUses())
    if (use.getOwner() != combine)
      return nullptr;
  return combine;
}

} // namespace

/// A dispatch that is one full amax reduction (FP8's: `max(out, |x|)` over
/// a whole tensor) on a grid: each thread folds its elements (grid-stride,
/// so a warp reads consecutive elements) from -inf with maximumf, the warp
/// folds its lanes' partials by shuffles, and lane 0 folds the warp's into
/// the output with an atomic signed-integer max of the bits. A partial is
/// -inf (no elements), +0 or more, or a NaN with a clear sign, and among
/// such values (and against any output that is not a NaN with its sign
/// set: a fill's -inf or 0) the bits order as the floats do, a NaN above
/// every number; maximumf is associative
/// and commutative (NaN propagating, -0 below +0), so any order gives the
/// sequential result bit for bit. Other outputs the generic writes at every
/// point (anvil-fuse's merge-amax: FP8's codes of the same tensor, or the
/// tensor itself and its producer's other outputs) are stored as each point is
/// visited. `fn`'s body must be `op` and constants.
bool mlir::anvil::cuda::grid::mapFullReduction(func::FuncOp fn,
                                               int64_t blockSize) {
  linalg::GenericOp op = soleGeneric(fn);
  // Each input read at loop indices or constants (a row statistic's
  // (d0, d1, 0)).
  auto atIndices = [](AffineMap m) {
    return llvm::all_of(m.getResults(), [](AffineExpr e) {
      return isa<AffineDimExpr, AffineConstantExpr>(e);
    });
  };
  if (!op || !op.hasPureBufferSemantics() || op.getNumLoops() == 0 ||
      llvm::any_of(op.getIteratorTypesArray(),
                   [](utils::IteratorType t) {
                     return t != utils::IteratorType::reduction;
                   }) ||
      !llvm::all_of(op.getIndexingMapsArray(), atIndices))
    return false;
  // One rank-0 f32 amax output; any other output written at every point
  // (identity map, its old value unread).
  Value output;
  Operation *combine = nullptr;
  Block *body = op.getBlock();
  for (OpOperand &init : op.getDpsInitsMutable()) {
    unsigned r = init.getOperandNumber() - op.getNumDpsInputs();
    auto type = dyn_cast<MemRefType>(init.get().getType());
    if (!type)
      return false;
    if (type.getRank() == 0) {
      if (output || !type.getElementType().isF32() ||
          !(combine = amaxCombiner(op, r)))
        return false;
      output = init.get();
    } else if (!op.getMatchingIndexingMap(&init).isIdentity() ||
               !body->getArgument(op.getNumDpsInputs() + r).use_empty()) {
      return false;
    }
  }
  if (!output)
    return false;
  // The other outputs' values must not read the running maximum (a point
  // would store a thread's partial, not the sequential prefix).
  auto yieldOp = cast<linalg::YieldOp>(body->getTerminator());
  for (auto [r, init] : llvm::enumerate(op.getDpsInits())) {
    if (init == output)
      continue;
    SmallVector<Value> work = {yieldOp.getOperand(r)};
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != body || !seen.insert(def).second)
        continue;
      if (def == combine)
        return false;
      work.append(def->operand_begin(), def->operand_end());
    }
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t total = 1;
  for (int64_t r : ranges) {
    if (ShapedType::isDynamic(r) || r <= 0)
      return false;
    total *= r;
  }

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  // At least 16 elements a thread, at most 2048 blocks: one atomic per
  // warp (its lanes' partials folded by shuffles first), at most 16384.
  int64_t threads = std::min(blockSize, (total + 31) / 32 * 32);
  int64_t blocks =
      std::clamp<int64_t>((total + threads * 16 - 1) / (threads * 16), 1, 2048);
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  Value first = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x, index(threads)),
      launch.getThreadIds().x);
  Value identity =
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-INFINITY));
  auto loop = scf::ForOp::create(b, loc, first, index(total),
                                 index(blocks * threads), ValueRange{identity});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    // Delinearize, innermost loop fastest.
    SmallVector<Value> ivs(ranges.size());
    Value rest = loop.getInductionVar();
    for (int64_t d = static_cast<int64_t>(ranges.size()) - 1; d >= 0; --d) {
      ivs[d] = d > 0 ? arith::RemUIOp::create(b, loc, rest, index(ranges[d]))
                           .getResult()
                     : rest;
      if (d > 0)
        rest = arith::DivUIOp::create(b, loc, rest, index(ranges[d]));
    }
    IRMapping map;
    for (auto [i, input] : llvm::enumerate(op.getDpsInputs())) {
      if (!isa<MemRefType>(input.getType())) {
        map.map(body->getArgument(i), input); // a scalar
        continue;
      }
      SmallVector<Value> at;
      for (AffineExpr e : op.getIndexingMapsArray()[i].getResults())
        at.push_back(isa<AffineConstantExpr>(e)
                         ? index(cast<AffineConstantExpr>(e).getValue())
                         : ivs[cast<AffineDimExpr>(e).getPosition()]);
      map.map(body->getArgument(i),
              memref::LoadOp::create(b, loc, input, at).getResult());
    }
    unsigned amaxIndex = 0;
    for (OpOperand &init : op.getDpsInitsMutable())
      if (init.get() == output)
        amaxIndex = init.getOperandNumber() - op.getNumDpsInputs();
    map.map(body->getArgument(op.getNumDpsInputs() + amaxIndex),
            loop.getRegionIterArgs()[0]);
    for (Operation &bodyOp : body->without_terminator()) {
      // The loops' indices are the point's.
      if (auto index = dyn_cast<linalg::IndexOp>(bodyOp)) {
        map.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      b.clone(bodyOp, map);
    }
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    for (auto [r, init] : llvm::enumerate(op.getDpsInits()))
      if (init != output)
        memref::StoreOp::create(
            b, loc, map.lookupOrDefault(yield.getOperand(r)), init, ivs);
    scf::YieldOp::create(b, loc, map.lookup(combine->getResult(0)));
  }
  // The output's address: its aligned base plus its offset (a view into
  // the step's arena).
  auto i64 = b.getI64Type();
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, output);
  Value base = arith::IndexCastOp::create(
      b, loc, i64,
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, output));
  Value offset = arith::IndexCastOp::create(b, loc, i64, metadata.getOffset());
  Value address = arith::AddIOp::create(
      b, loc, base,
      arith::MulIOp::create(b, loc, offset,
                            arith::ConstantIntOp::create(b, loc, 4, 64)));
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), address);
  // The warp's partials folded by a butterfly of shuffles (xor 16 ... 1:
  // every lane ends with the warp's maximum; `threads` is whole warps),
  // then lane 0 folds it into the output.
  Value partial = loop.getResult(0);
  for (int32_t offset = 16; offset >= 1; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, loc, partial, offset, 32,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = arith::MaximumFOp::create(b, loc, partial, other);
  }
  Value firstLane = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, launch.getThreadIds().x, index(32)),
      index(0));
  auto guard = scf::IfOp::create(b, loc, firstLane, /*withElseRegion=*/false);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), partial);
  LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::max, pointer, bits,
                            LLVM::AtomicOrdering::monotonic);
  op.erase();
  return true;
}

namespace {

/// The value `x` combined with which by `combine` gives x back, for the
/// combiners a warp can fold in any order: f32 addf (-0: x + -0 = x for
/// every x, +0 and NaN included), maximumf (-inf) and minimumf (+inf).
std::optional<APFloat> combinerIdentity(Operation *combine) {
  if (!combine->getResult(0).getType().isF32())
    return std::nullopt;
  const llvm::fltSemantics &f32 = APFloat::IEEEsingle();
  if (isa<arith::AddFOp>(combine))
    return APFloat::getZero(f32, /*Negative=*/true);
  if (isa<arith::MaximumFOp>(combine))
    return APFloat::getInf(f32, /*Negative=*/true);
  if (isa<arith::MinimumFOp>(combine))
    return APFloat::getInf(f32, /*Negative=*/false);
  return std::nullopt;
}

} // namespace

Value WarpRow::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v).getResult();
}

void WarpRow::delinearize(Value linear, ArrayRef<unsigned> dims) {
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    int64_t extent = ranges[dims[i]];
    if (i == 0) {
      ivs[dims[i]] = linear;
      break;
    }
    ivs[dims[i]] = arith::RemUIOp::create(b, loc, linear, index(extent));
    linear = arith::DivUIOp::create(b, loc, linear, index(extent));
  }
}

SmallVector<Value> WarpRow::at(OpOperand &operand) {
  return llvm::map_to_vector(op.getMatchingIndexingMap(&operand).getResults(),
                             [&](AffineExpr e) -> Value {
                               auto dim = dyn_cast<AffineDimExpr>(e);
                               return dim ? ivs[dim.getPosition()] : zero;
                             });
}

Value WarpRow::fold(Operation *combine, unsigned r, Value acc, Value v) {
  Value out = op.getBlock()->getArgument(op.getNumDpsInputs() + r);
  IRMapping operands;
  operands.map(out, acc);
  for (Value operand : combine->getOperands())
    if (operand != out)
      operands.map(operand, v);
  return b.clone(*combine, operands)->getResult(0);
}

IRMapping WarpRow::point(ArrayRef<Operation *> skip,
                         function_ref<int64_t(OpOperand *)> alignment,
                         IRMapping map) {
  Block *body = op.getBlock();
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = body->getArgument(input->getOperandNumber());
    if (map.contains(arg))
      continue;                 // the caller's
    Value value = input->get(); // a scalar, used as it is
    if (isa<MemRefType>(value.getType())) {
      auto load = memref::LoadOp::create(b, loc, value, at(*input));
      if (int64_t bytes = alignment(input))
        load.setAlignment(bytes);
      value = load.getResult();
    }
    map.map(body->getArgument(input->getOperandNumber()), value);
  }
  for (Operation &bodyOp : body->without_terminator()) {
    if (llvm::is_contained(skip, &bodyOp))
      continue;
    if (auto idx = dyn_cast<linalg::IndexOp>(bodyOp)) {
      map.map(idx.getResult(), ivs[idx.getDim()]);
      continue;
    }
    b.clone(bodyOp, map);
  }
  return map;
}

SmallVector<Value> WarpRow::combine(const WarpFolds &folds, ArrayRef<Value> a,
                                    ArrayRef<Value> b) {
  SmallVector<Value> both;
  for (auto [r, combine] : llvm::enumerate(folds.combines)) {
    int p = folds.maxOf[r];
    if (p < 0) {
      both.push_back(fold(combine, r, a[r], b[r]));
      continue;
    }
    // s_a exp(m_a - m) + s_b exp(m_b - m), m the larger maximum.
    Value m = arith::MaximumFOp::create(this->b, loc, a[p], b[p]);
    auto rescaled = [&](Value sum, Value max) {
      Value shift = arith::SubFOp::create(this->b, loc, max, m);
      Value scale = math::ExpOp::create(this->b, loc, shift);
      return arith::MulFOp::create(this->b, loc, sum, scale).getResult();
    };
    Value sa = rescaled(a[r], a[p]);
    Value sb = rescaled(b[r], b[p]);
    both.push_back(arith::AddFOp::create(this->b, loc, sa, sb));
  }
  return both;
}

SmallVector<Value>
WarpRow::foldOnWarp(Value lane, ArrayRef<unsigned> reduction, int64_t length,
                    int64_t run, function_ref<bool(OpOperand *)> alignable,
                    const WarpFolds &folds) {
  constexpr int64_t warp = 32;
  Block *body = op.getBlock();
  // The body's ops that read the outputs: the folds, which the code below
  // makes itself.
  SmallVector<Operation *> folding;
  {
    DenseSet<Value> fromOutputs(body->getArguments().begin() +
                                    op.getNumDpsInputs(),
                                body->getArguments().end());
    for (Operation &bodyOp : body->without_terminator())
      if (llvm::any_of(bodyOp.getOperands(),
                       [&](Value v) { return fromOutputs.contains(v); })) {
        folding.push_back(&bodyOp);
        fromOutputs.insert(bodyOp.result_begin(), bodyOp.result_end());
      }
  }
  // The value a combine folds in: its operand that is not the output.
  // (An online sum's terms are its maximum's.)
  auto termOf = [&](unsigned r) {
    unsigned q = folds.maxOf[r] < 0 ? r : folds.maxOf[r];
    Operation *combine = folds.combines[q];
    Value arg = body->getArgument(op.getNumDpsInputs() + q);
    return combine->getOperand(0) == arg ? combine->getOperand(1)
                                         : combine->getOperand(0);
  };
  SmallVector<Value> inits;
  for (const APFloat &identity : folds.identities)
    inits.push_back(arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(identity.convertToFloat())));
  // The fold of the point at reduction index `k` into `accs` (its loads
  // claiming the run's alignment when `aligned`).
  auto step = [&](Value k, ArrayRef<Value> accs, bool aligned) {
    delinearize(k, reduction);
    IRMapping map = point(folding, [&](OpOperand *input) -> int64_t {
      if (!aligned || !alignable(input))
        return 0;
      return run *
             cast<MemRefType>(input->get().getType()).getElementTypeBitWidth() /
             8;
    });
    SmallVector<Value> next;
    for (auto [r, combine] : llvm::enumerate(folds.combines)) {
      Value v = map.lookupOrDefault(termOf(r));
      int p = folds.maxOf[r];
      if (p < 0) {
        next.push_back(fold(combine, r, accs[r], v));
        continue;
      }
      // The online sum's step (OnlineLogSumExp.cpp), against the
      // maximum before it: s' = v > m ? s e + 1 : s + e, with e =
      // exp(min(m, v) - max(m, v)).
      Value m = accs[p], sum = accs[r];
      Value high = arith::MaximumFOp::create(b, loc, m, v);
      Value low = arith::MinimumFOp::create(b, loc, m, v);
      Value shift = arith::SubFOp::create(b, loc, low, high);
      Value e = math::ExpOp::create(b, loc, shift);
      Value grew =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, v, m);
      Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0));
      Value scaled = arith::MulFOp::create(b, loc, sum, e);
      Value rescaled = arith::AddFOp::create(b, loc, scaled, one);
      Value added = arith::AddFOp::create(b, loc, sum, e);
      next.push_back(arith::SelectOp::create(b, loc, grew, rescaled, added));
    }
    return next;
  };
  // Whole runs over the row's first `whole` points; a row whose length is
  // not a multiple of the run (GPT-2's logits: 50257, in rows padded to
  // 50304) leaves its last `length - whole` points, fewer than a warp, to
  // lanes 0, 1, ... one each.
  int64_t whole = length / run * run;
  Value first =
      run == 1 ? lane
               : arith::MulIOp::create(b, loc, lane, index(run)).getResult();
  auto loop =
      scf::ForOp::create(b, loc, first, index(whole), index(warp * run), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> accs(loop.getRegionIterArgs());
    for (int64_t j = 0; j < run; ++j) {
      Value k = loop.getInductionVar();
      if (j > 0)
        k = arith::AddIOp::create(b, loc, k, index(j));
      accs = step(k, accs, /*aligned=*/j == 0 && run > 1);
    }
    scf::YieldOp::create(b, loc, accs);
  }
  SmallVector<Value> partials(loop.getResults());
  if (whole < length) {
    Value inTail = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         lane, index(length - whole));
    auto tail = scf::IfOp::create(b, loc, TypeRange(ValueRange(partials)),
                                  inTail, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tail.thenBlock());
    Value k = arith::AddIOp::create(b, loc, lane, index(whole));
    scf::YieldOp::create(b, loc, step(k, partials, /*aligned=*/false));
    b.setInsertionPointToStart(tail.elseBlock());
    scf::YieldOp::create(b, loc, partials);
    partials = SmallVector<Value>(tail.getResults());
  }
  // The butterfly: after the step of offset o, each lane holds the fold of
  // the lanes whose numbers differ from its own only in bits o and above,
  // the same value in all of them; after offset 1, the fold of all 32.
  for (int32_t offset = warp / 2; offset >= 1; offset /= 2) {
    SmallVector<Value> others;
    for (Value partial : partials)
      others.push_back(gpu::ShuffleOp::create(b, loc, partial, offset, warp,
                                              gpu::ShuffleMode::XOR)
                           .getShuffleResult());
    partials = combine(folds, partials, others);
  }
  return partials;
}

WarpLaunch mlir::anvil::cuda::grid::createWarpLaunch(OpBuilder &b, Location loc,
                                                     int64_t rows,
                                                     int64_t blockSize) {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  constexpr int64_t warp = 32;
  int64_t threads = std::min(blockSize, rows * warp);
  int64_t blocks = (rows * warp + threads - 1) / threads;
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  Value tid = launch.getThreadIds().x;
  // One statement an op: the IR's order does not depend on the C++
  // compiler's order of evaluating arguments.
  Value firstWarp = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                          index(threads / warp));
  Value warpInBlock = arith::DivUIOp::create(b, loc, tid, index(warp));
  WarpLaunch w;
  w.warpIndex = arith::AddIOp::create(b, loc, firstWarp, warpInBlock);
  w.lane = arith::RemUIOp::create(b, loc, tid, index(warp));
  w.row = arith::MinUIOp::create(b, loc, w.warpIndex, index(rows - 1));
  return w;
}

bool mlir::anvil::cuda::grid::readsRowsContiguously(
    linalg::GenericOp op, ArrayRef<unsigned> reduction) {
  unsigned inner = reduction.back();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (llvm::none_of(reduction,
                      [&](unsigned d) { return map.isFunctionOfDim(d); }))
      continue;
    auto type = dyn_cast<MemRefType>(input->get().getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!type || map.getNumResults() == 0 ||
        map.getResults().back() != getAffineDimExpr(inner, op.getContext()) ||
        failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return false;
  }
  return true;
}

namespace {

/// `a` and `b` are `op`'s operands, in either order.
bool operandsAre(Operation *op, Value a, Value b) {
  return op && op->getNumOperands() == 2 &&
         ((op->getOperand(0) == a && op->getOperand(1) == b) ||
          (op->getOperand(0) == b && op->getOperand(1) == a));
}

/// The output of the maximum that output `r` of `op`, a row's online sum
/// of exponentials as OnlineLogSumExp.cpp writes it, is taken against:
///   yield r:  select(cmpf ogt(v, m), addf(mulf(s, e), 1), addf(s, e))
///   yield p:  next = maximumf(m, v)
///   e = exp(subf(minimumf(m, v), next))
/// with s and m the block arguments of outputs r and p, every value used
/// only there (v aside); -1 when it is not one.
int onlineSumMax(linalg::GenericOp op, unsigned r) {
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  unsigned inputs = op.getNumDpsInputs();
  Value s = body->getArgument(inputs + r);
  auto select = yield.getOperand(r).getDefiningOp<arith::SelectOp>();
  if (!select || !select->hasOneUse() || !s.getType().isF32())
    return -1;
  auto grew = select.getCondition().getDefiningOp<arith::CmpFOp>();
  auto rescaled = select.getTrueValue().getDefiningOp<arith::AddFOp>();
  auto added = select.getFalseValue().getDefiningOp<arith::AddFOp>();
  if (!grew || grew.getPredicate() != arith::CmpFPredicate::OGT || !rescaled ||
      !added || !grew->hasOneUse() || !rescaled->hasOneUse() ||
      !added->hasOneUse())
    return -1;
  Value v = grew.getLhs(), m = grew.getRhs();
  auto mArg = dyn_cast<BlockArgument>(m);
  if (!mArg || mArg.getOwner() != body || mArg.getArgNumber() < inputs ||
      mArg.getArgNumber() == inputs + r)
    return -1;
  unsigned p = mArg.getArgNumber() - inputs;
  auto next = yield.getOperand(p).getDefiningOp<arith::MaximumFOp>();
  if (!next || !operandsAre(next, m, v))
    return -1;
  // e: added's other operand.
  Value e = added.getLhs() == s ? added.getRhs() : added.getLhs();
  auto exp = e.getDefiningOp<math::ExpOp>();
  auto shift =
      exp ? exp.getOperand().getDefiningOp<arith::SubFOp>() : arith::SubFOp();
  auto low = shift ? shift.getLhs().getDefiningOp<arith::MinimumFOp>()
                   : arith::MinimumFOp();
  if (!operandsAre(added, s, e) || !exp || !shift || !low ||
      shift.getRhs() != next.getResult() || !operandsAre(low, m, v) ||
      !shift->hasOneUse() || !low->hasOneUse() ||
      std::distance(e.use_begin(), e.use_end()) != 2)
    return -1;
  // rescaled = s e + 1: one operand the constant 1, the other the product.
  auto isOne = [](Value v) {
    FloatAttr one;
    return matchPattern(v, m_Constant(&one)) &&
           one.getValue().isExactlyValue(1.0);
  };
  Value product = isOne(rescaled.getRhs())   ? rescaled.getLhs()
                  : isOne(rescaled.getLhs()) ? rescaled.getRhs()
                                             : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul || !mul->hasOneUse() || !operandsAre(mul, s, e) ||
      std::distance(s.use_begin(), s.use_end()) != 2 ||
      std::distance(m.use_begin(), m.use_end()) != 3 ||
      std::distance(next->use_begin(), next->use_end()) != 2)
    return -1;
  return static_cast<int>(p);
}

} // namespace

bool mlir::anvil::cuda::grid::warpFolds(linalg::GenericOp op,
                                        WarpFolds &folds) {
  unsigned outputs = op.getNumDpsInits();
  if (outputs == 0)
    return false;
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  unsigned inputs = op.getNumDpsInputs();
  folds.combines.assign(outputs, nullptr);
  folds.identities.assign(outputs, APFloat::getZero(APFloat::IEEEsingle()));
  folds.maxOf.assign(outputs, -1);
  // The online sums first: their maxima read their outputs more than once.
  SmallVector<bool> pairedMax(outputs, false);
  for (unsigned r = 0; r < outputs; ++r) {
    int p = onlineSumMax(op, r);
    if (p < 0)
      continue;
    if (pairedMax[p])
      return false;
    pairedMax[p] = true;
    folds.maxOf[r] = p;
    folds.combines[r] = yield.getOperand(r).getDefiningOp();
    folds.identities[r] = APFloat::getZero(APFloat::IEEEsingle());
  }
  for (unsigned r = 0; r < outputs; ++r) {
    if (folds.maxOf[r] >= 0)
      continue;
    Value out = body->getArgument(inputs + r);
    Operation *combine = yield.getOperand(r).getDefiningOp();
    if (pairedMax[r]) {
      // OnlineLogSumExp.cpp's maximum, from its fill's -FLT_MAX.
      folds.combines[r] = combine;
      folds.identities[r] = APFloat::getLargest(APFloat::IEEEsingle(),
                                                /*Negative=*/true);
      continue;
    }
    if (!combine || combine->getBlock() != body ||
        combine->getNumOperands() != 2 || !out.hasOneUse() ||
        out.getUses().begin()->getOwner() != combine ||
        !combine->getResult(0).hasOneUse())
      return false;
    std::optional<APFloat> identity = combinerIdentity(combine);
    if (!identity)
      return false;
    folds.combines[r] = combine;
    folds.identities[r] = *identity;
  }
  // The values folded in read neither output nor another fold.
  for (unsigned r = 0; r < outputs; ++r) {
    if (folds.maxOf[r] >= 0)
      continue; // its terms are its maximum's
    Operation *combine = folds.combines[r];
    Value out = body->getArgument(inputs + r);
    SmallVector<Value> work = {combine->getOperand(0) == out
                                   ? combine->getOperand(1)
                                   : combine->getOperand(0)};
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() == body && arg.getArgNumber() >= inputs)
          return false;
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != body || !seen.insert(def).second)
        continue;
      if (llvm::is_contained(folds.combines, def))
        return false;
      work.append(def->operand_begin(), def->operand_end());
    }
  }
  return true;
}

/// A dispatch that reduces rows of at least `minLength` consecutive
/// elements (the innermost reduction dimension is every read operand's
/// innermost, unit-stride dimension: softmax's and the norms' rows, the
/// cross-entropy's logits) on a warp per row: lane l folds the row's
/// elements l, l + 32, l + 64, ... (a warp's loads are one coalesced
/// 128-byte line) from the combiner's identity, then the 32 partials fold
/// by a butterfly of shuffles (xor 16, 8, 4, 2, 1: every lane ends with the
/// same value, since a + b == b + a) and lane 0 folds that into the output.
/// One thread a row, the default, reads 32 rows 4 bytes apart per warp
/// load and has few threads: 8192 rows fill 32 blocks. The sums'
/// order is not the sequential one (the CPU's): a fixed tree, the same on
/// every run. Every output must be such a reduction (`out = combine(out,
/// v)`, v computed without the outputs), f32, with addf, maximumf or
/// minimumf. A warp past the last row computes the last row again and
/// stores nothing, so that every lane of every warp takes part in the
/// shuffles. Where the row (and its innermost dimension) divides into runs
/// of `width` and an operand's rows are aligned to them (`alignedRows`, a
/// buffer argument, not a constant global: `constants`), lane l folds runs
/// of `width` instead, elements width l ... width l + width - 1, then 32
/// runs on, the first access of each run carrying the run's alignment (a
/// warp's load is then 512 bytes: ld.global.v4). `fn`'s body must be the
/// generic and constants, after fills of some of its outputs with
/// constants (anvil-outline-dispatches fills-into-reductions): lane 0 then
/// folds a filled output's row into the fill's value where it would have
/// read the output, the same value, and the fills go.
bool mlir::anvil::cuda::grid::mapRowReductions(
    func::FuncOp fn, int64_t blockSize, int64_t minLength, int64_t width,
    ArrayRef<memref::GlobalOp> constants) {
  if (minLength <= 0)
    return false;
  SmallVector<linalg::FillOp> fills;
  linalg::GenericOp op = genericAfterFills(fn, fills);
  // Operands indexed by loop dimensions, or 0 (a per-row value broadcast
  // along the row: the cross-entropy's maximum, of shape [rows, 1]).
  auto dimsOrZeros = [](AffineMap m) {
    return llvm::all_of(m.getResults(), [](AffineExpr e) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      return isa<AffineDimExpr>(e) || (c && c.getValue() == 0);
    });
  };
  if (!op || !op.hasPureBufferSemantics() || op.getNumDpsInits() == 0 ||
      !llvm::all_of(op.getIndexingMapsArray(), dimsOrZeros))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> parallel, reduction;
  int64_t rows = 1, length = 1;
  for (auto [d, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (ShapedType::isDynamic(ranges[d]) || ranges[d] <= 0)
      return false;
    if (iterator == utils::IteratorType::parallel) {
      parallel.push_back(d);
      rows *= ranges[d];
    } else {
      reduction.push_back(d);
      length *= ranges[d];
    }
  }
  if (reduction.empty() || length < std::max<int64_t>(minLength, 32))
    return false;
  unsigned inner = reduction.back();
  if (!readsRowsContiguously(op, reduction))
    return false;
  // Each output indexed by every parallel dimension and no reduction one:
  // each row its own output element.
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (llvm::any_of(reduction,
                     [&](unsigned d) { return map.isFunctionOfDim(d); }) ||
        !llvm::all_of(parallel,
                      [&](unsigned d) { return map.isFunctionOfDim(d); }))
      return false;
  }
  WarpFolds folds;
  if (!warpFolds(op, folds))
    return false;

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto [warpIndex, lane, row] = createWarpLaunch(b, loc, rows, blockSize);
  WarpRow code(b, op);
  code.delinearize(row, parallel);
  code.zero = index(0);
  // Runs of `width` where the rows divide into them and some operand's
  // rows are aligned to them.
  auto alongRows = [&](OpOperand *input) {
    AffineMap map = op.getMatchingIndexingMap(input);
    return llvm::any_of(reduction,
                        [&](unsigned d) { return map.isFunctionOfDim(d); });
  };
  auto alignable = [&](OpOperand *input) {
    return alongRows(input) &&
           alignedArgument(input->get(), fn, constants, width);
  };
  int64_t run = 1;
  if (WarpRow::foldsInRuns(length, ranges[inner], width) &&
      llvm::any_of(op.getDpsInputOperands(), alignable))
    run = width;
  SmallVector<Value> partials =
      code.foldOnWarp(lane, reduction, length, run, alignable, folds);
  // Lane 0 of a warp that has a row folds the row's value into the output.
  Value hasRow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       warpIndex, index(rows));
  Value firstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, code.zero);
  Value store = arith::AndIOp::create(b, loc, hasRow, firstLane);
  auto guard = scf::IfOp::create(b, loc, store, /*withElseRegion=*/false);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  SmallVector<Value> olds;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    // The output's value before the reduction: its fill's, or read.
    Value old;
    for (linalg::FillOp fill : fills)
      if (fill.getOutputs()[0] == init.get())
        old = b.clone(*fill.getInputs()[0].getDefiningOp())->getResult(0);
    if (!old)
      old = memref::LoadOp::create(b, loc, init.get(), code.at(init));
    olds.push_back(old);
  }
  for (auto [init, result] : llvm::zip_equal(
           op.getDpsInitsMutable(), code.combine(folds, olds, partials)))
    memref::StoreOp::create(b, loc, result, init.get(), code.at(init));
  op.erase();
  for (linalg::FillOp fill : fills)
    fill.erase();
  return true;
}
