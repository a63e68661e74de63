//===- Fuse.cpp - elementwise fusion without recomputation ----------------===//
//
// 1. Decide each candidate fusion with `shouldFuse` (the rule of the pass
//    description: one use, and a permutation map unless the producer only
//    moves data).
// 2. Run upstream's elementwise fusion, reshape propagation by expansion
//    and linalg constant folding under that rule (with recompute-cheap,
//    also scalars of reductions: readsScalarOfReduction), with the
//    canonicalizations they rely on, to a fixed point.
// 3. With recompute-cheap, copy cheap producers of several readers into
//    each (duplicateCheapProducers, a few rounds of step 2); with
//    merge-cheap-readers, merge cheap readers into producers that stay
//    written; with recompute-cheap, then fuse per-channel statistics into
//    their broadcast readers (readsStatistic). Merge returned state into
//    its one reader (mergeReturnedProducers).
// 4. With merge-amax, make each cast and amax of the same tensor one
//    generic (mergeCastsAndAmaxes) and run step 2 again, which fuses the
//    tensor's producer into it.
//
//===----------------------------------------------------------------------===//

#include "anvil/Fusion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILFUSEPASS
#include "anvil/Fusion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// True when `op`'s body only yields inputs (a broadcast, transpose or
/// copy): re-reading its result costs a load, never a recomputation.
bool movesDataOnly(linalg::GenericOp op) {
  return op.getBody()->without_terminator().empty();
}

/// True when `op` broadcasts scalars (rank-0 inputs) and computes nothing:
/// a consumer reads the scalar itself instead of a tensor of copies.
bool broadcastsScalars(linalg::GenericOp op) {
  return movesDataOnly(op) &&
         llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *in) {
           return op.getMatchingIndexingMap(in).getNumResults() == 0;
         });
}

/// Whether `op` reads each point of `operand` once: its map a permutation
/// of the loops, but for loops of extent 1 it leaves out (a row
/// reduction's (B, T, 1, C) loops reading a (B, T, C) tensor).
bool readsEachPointOnce(linalg::LinalgOp op, OpOperand *operand) {
  AffineMap map = op.getMatchingIndexingMap(operand);
  if (map.isPermutation())
    return true;
  if (!map.isProjectedPermutation())
    return false;
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  for (unsigned d = 0, e = map.getNumDims(); d < e; ++d)
    if (!map.isFunctionOfDim(d) && extents[d] != 1)
      return false;
  return true;
}

bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer)
    return false;
  // A broadcast of scalars goes into every consumer (the learning rate and
  // bias corrections each optimizer update reads; CSE shares one among
  // the parameters of a shape): nothing is recomputed, and the tensor of
  // copies is never written.
  if (auto generic = dyn_cast<linalg::GenericOp>(producer);
      generic && broadcastsScalars(generic) &&
      isa<linalg::LinalgOp>(fused->getOwner()))
    return true;
  if (!producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!consumer)
    return true; // reshapes and the like: nothing is recomputed
  if (auto generic = dyn_cast<linalg::GenericOp>(producer);
      generic && movesDataOnly(generic))
    return true;
  return readsEachPointOnce(consumer, fused);
}

/// Whether `op` is an amax of its one input over all loops: every loop a
/// reduction, a rank-0 output, the input read through the identity, and
/// the body `maximumf(out, absf(in))`.
bool isAmax(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != op.getNumLoops() || op.getNumLoops() == 0 ||
      !op.getIndexingMapsArray()[0].isIdentity() ||
      op.getIndexingMapsArray()[1].getNumResults() != 0)
    return false;
  Block *body = op.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto max = yield.getOperand(0).getDefiningOp<arith::MaximumFOp>();
  if (!max || body->getOperations().size() != 3)
    return false;
  auto abs = max.getRhs().getDefiningOp<math::AbsFOp>();
  return max.getLhs() == body->getArgument(1) && abs &&
         abs.getOperand() == body->getArgument(0);
}

/// Whether `value` depends on `op`'s results (through ops in its block).
bool dependsOn(Value value, Operation *op) {
  SmallVector<Value> work = {value};
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != op->getBlock() || !seen.insert(def).second)
      continue;
    if (def == op)
      return true;
    work.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

/// Whether `v` is available before `point` (in its block), moving the
/// empty tensors, fills and constants it comes from there if need be.
bool availableBefore(Value v, Operation *point) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != point->getBlock() ||
      def->isBeforeInBlock(point))
    return true;
  if (!isa<tensor::EmptyOp, linalg::FillOp, arith::ConstantOp>(def) ||
      !llvm::all_of(def->getOperands(),
                    [&](Value in) { return availableBefore(in, point); }))
    return false;
  def->moveBefore(point);
  return true;
}

/// The elementwise op `codes` (the cast: all loops parallel, one output,
/// identity maps for it and for `x`) and the amax `amax` of the same `x` over
/// the same loops, as one generic: every loop a reduction, the codes's output
/// written at every point, the amax folded over all of them.
void mergeCastAndAmax(RewriterBase &rewriter, linalg::GenericOp codes,
                      linalg::GenericOp amax) {
  Value x = amax.getDpsInputs()[0];
  rewriter.setInsertionPoint(codes->isBeforeInBlock(amax) ? codes : amax);
  SmallVector<AffineMap> maps;
  for (OpOperand *in : codes.getDpsInputOperands())
    maps.push_back(codes.getMatchingIndexingMap(in));
  maps.push_back(codes.getIndexingMapsArray().back());
  maps.push_back(amax.getIndexingMapsArray().back());
  SmallVector<utils::IteratorType> iterators(codes.getNumLoops(),
                                             utils::IteratorType::reduction);
  SmallVector<Value> inits = {codes.getDpsInits()[0], amax.getDpsInits()[0]};
  auto merged = linalg::GenericOp::create(
      rewriter, codes.getLoc(),
      TypeRange{codes.getResult(0).getType(), amax.getResult(0).getType()},
      codes.getDpsInputs(), inits, maps, iterators);
  Block *castBody = codes.getBody();
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (BlockArgument arg : castBody->getArguments()) {
    argTypes.push_back(arg.getType());
    argLocs.push_back(arg.getLoc());
  }
  Type amaxType = amax.getBody()->getArgument(1).getType();
  argTypes.push_back(amaxType);
  argLocs.push_back(amax.getLoc());
  Block *body =
      rewriter.createBlock(&merged.getRegion(), {}, argTypes, argLocs);
  IRMapping map;
  for (auto [from, to] :
       llvm::zip(castBody->getArguments(), body->getArguments()))
    map.map(from, to);
  for (Operation &op : castBody->without_terminator())
    rewriter.clone(op, map);
  Value castValue = map.lookup(
      cast<linalg::YieldOp>(castBody->getTerminator()).getOperand(0));
  // The amax's body on the codes's argument for x.
  unsigned xIndex = 0;
  for (OpOperand *in : codes.getDpsInputOperands())
    if (in->get() == x)
      xIndex = in->getOperandNumber();
  IRMapping amaxMap;
  amaxMap.map(amax.getBody()->getArgument(0), body->getArgument(xIndex));
  amaxMap.map(amax.getBody()->getArgument(1), body->getArguments().back());
  for (Operation &op : amax.getBody()->without_terminator())
    rewriter.clone(op, amaxMap);
  Value amaxValue = amaxMap.lookup(
      cast<linalg::YieldOp>(amax.getBody()->getTerminator()).getOperand(0));
  linalg::YieldOp::create(rewriter, codes.getLoc(),
                          ValueRange{castValue, amaxValue});
  rewriter.replaceOp(codes, merged.getResult(0));
  rewriter.replaceOp(amax, merged.getResult(1));
}

/// Whether `op`'s body uses no value from above but constants (the
/// dependence and placement checks of the merges follow operands only).
bool capturesOnlyConstants(linalg::GenericOp op) {
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegion(0), captured);
  return llvm::all_of(captured, [](Value v) {
    Operation *def = v.getDefiningOp();
    return def && def->hasTrait<OpTrait::ConstantLike>();
  });
}

/// Whether `codes` and `amax`, the two readers of `x`, merge into one
/// generic (mergeCastAndAmax): `codes` is elementwise over the amax's
/// loops, reads `x` once through the identity, and neither depends on the
/// other (a codes by the delayed recipe's scale); what the CUDA mapping
/// runs on a grid (an f32 amax, static loops, a cast that does not read
/// its output), with no value captured from above but constants (the
/// dependence and placement checks follow operands only).
bool mergeable(linalg::GenericOp codes, linalg::GenericOp amax, Value x) {
  if (codes == amax || codes->getBlock() != amax->getBlock() ||
      codes.getNumDpsInits() != 1 ||
      codes.getNumParallelLoops() != codes.getNumLoops() ||
      codes.getStaticLoopRanges() != amax.getStaticLoopRanges() ||
      !codes.getIndexingMapsArray().back().isIdentity() ||
      llvm::count(codes.getDpsInputs(), x) != 1)
    return false;
  OpOperand *xUse = nullptr;
  for (OpOperand *in : codes.getDpsInputOperands())
    if (in->get() == x)
      xUse = in;
  return cast<RankedTensorType>(amax.getResult(0).getType())
             .getElementType()
             .isF32() &&
         llvm::none_of(amax.getStaticLoopRanges(), ShapedType::isDynamic) &&
         codes.getBody()->getArguments().back().use_empty() &&
         capturesOnlyConstants(codes) && capturesOnlyConstants(amax) &&
         codes.getMatchingIndexingMap(xUse).isIdentity() &&
         llvm::none_of(codes->getOperands(),
                       [&](Value v) { return dependsOn(v, amax); }) &&
         llvm::none_of(amax->getOperands(),
                       [&](Value v) { return dependsOn(v, codes); });
}

/// Whether `x` is read by exactly an amax and an op it merges with
/// (mergeable).
bool readByMergeablePair(Value x) {
  if (!x.hasNUses(2))
    return false;
  auto user = [&](int i) {
    return dyn_cast<linalg::GenericOp>(*std::next(x.user_begin(), i));
  };
  for (auto [amax, codes] : {std::pair{user(0), user(1)}, {user(1), user(0)}})
    if (amax && codes && amax.hasPureTensorSemantics() && isAmax(amax) &&
        amax.getDpsInputs()[0] == x && mergeable(codes, amax, x))
      return true;
  return false;
}

/// mergeCastAndAmax for every tensor read by exactly an amax and an
/// elementwise op it merges with (mergeable).
void mergeCastsAndAmaxes(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  SmallVector<std::pair<linalg::GenericOp, linalg::GenericOp>> pairs;
  module.walk([&](linalg::GenericOp amax) {
    if (!amax.hasPureTensorSemantics() || !isAmax(amax))
      return;
    Value x = amax.getDpsInputs()[0];
    if (!x.hasNUses(2))
      return;
    for (Operation *user : x.getUsers())
      if (auto codes = dyn_cast<linalg::GenericOp>(user);
          codes && mergeable(codes, amax, x))
        pairs.emplace_back(codes, amax);
  });
  // (A cast of two tensors, each with an amax, merges with the first.) The
  // merged generic goes where the earlier of the two was: what the later
  // one reads must be there already (or be an empty tensor, a fill or a
  // constant, moved there).
  DenseSet<Operation *> merged;
  for (auto [codes, amax] : pairs) {
    Operation *first = codes->isBeforeInBlock(amax) ? codes : amax;
    Operation *second = first == codes ? amax.getOperation() : codes;
    if (merged.contains(codes) ||
        !llvm::all_of(second->getOperands(),
                      [&](Value v) { return availableBefore(v, first); }))
      continue;
    merged.insert(codes);
    mergeCastAndAmax(rewriter, codes, amax);
  }
}

/// For an expand_shape that only adds unit dimensions (every group has at
/// most one dimension of its source's size, the rest 1), the expanded
/// dimension each source dimension becomes; nothing otherwise.
std::optional<SmallVector<unsigned>> unitExpansion(tensor::ExpandShapeOp op) {
  ArrayRef<int64_t> shape = op.getResultType().getShape();
  SmallVector<unsigned> carriers;
  for (ReassociationIndices group : op.getReassociationIndices()) {
    std::optional<unsigned> carrier;
    for (int64_t d : group)
      if (shape[d] != 1) {
        if (carrier)
          return std::nullopt;
        carrier = d;
      }
    carriers.push_back(carrier.value_or(group.front()));
  }
  return carriers;
}

/// Whether `use` is an input of a generic that reads each point of it
/// once (readsEachPointOnce).
bool readOnceByGeneric(OpOperand &use) {
  auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
  return generic && generic.isDpsInput(&use) &&
         readsEachPointOnce(generic, &use);
}

/// Whether `op` is a reshape whose only user is a generic reading it
/// once per point.
bool readOnceAfter(Operation *reshape) {
  Value reshaped = reshape->getResult(0);
  return reshaped.hasOneUse() && readOnceByGeneric(*reshaped.getUses().begin());
}

/// The source dimension each dimension of a unit expansion's result comes
/// from (unitExpansion's carriers, inverted), as a map from the expanded
/// dimensions to the source's.
AffineMap toSourceDims(tensor::ExpandShapeOp expand,
                       ArrayRef<unsigned> carriers) {
  MLIRContext *ctx = expand.getContext();
  SmallVector<AffineExpr> sources;
  for (unsigned d : carriers)
    sources.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(expand.getResultType().getRank(), 0, sources, ctx);
}

/// Whether a copy of `producer` built over the loops of `expand` (a unit
/// expansion of its result read once by one generic, through a
/// permutation) fuses into that generic: fusion keeps a loop bound only
/// where an operand still reads along it, which a reduction's loops need
/// (a broadcast of a scalar into a row sum does not fuse).
bool expansionFuses(linalg::GenericOp producer, tensor::ExpandShapeOp expand) {
  std::optional<SmallVector<unsigned>> carriers = unitExpansion(expand);
  if (!carriers || !expand->getResult(0).hasOneUse() ||
      !expand.getResultType().hasStaticShape())
    return false;
  // The copy renames the producer's loops after the expanded ones: its
  // result must be written through the identity, and its body must not
  // read loop indices (linalg.index would name the wrong loop).
  if (producer.getNumDpsInits() != 1 ||
      !producer.getMatchingIndexingMap(producer.getDpsInitOperand(0))
           .isIdentity() ||
      !producer.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  OpOperand &use = *expand->getResult(0).getUses().begin();
  auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!consumer || !consumer.isDpsInput(&use))
    return false;
  AffineMap consumerMap = consumer.getMatchingIndexingMap(&use);
  if (!consumerMap.isPermutation())
    return false;
  if (consumer.getNumReductionLoops() == 0)
    return true;
  llvm::BitVector covered(consumer.getNumLoops());
  auto cover = [&](AffineMap map) {
    for (AffineExpr e : map.getResults())
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        covered.set(dim.getPosition());
  };
  for (OpOperand &operand : consumer->getOpOperands())
    if (&operand != &use)
      cover(consumer.getMatchingIndexingMap(&operand));
  AffineMap toSource = toSourceDims(expand, *carriers);
  for (OpOperand *input : producer.getDpsInputOperands())
    cover(producer.getMatchingIndexingMap(input).compose(toSource).compose(
        consumerMap));
  return covered.all();
}

/// Whether `use` is read once per point by a generic that elementwise
/// fusion can take `use`'s producer into: an input of a generic through a
/// permutation of all its loops, or one reshape whose only user is such a
/// generic. Reshape propagation moves a reshape above the producer first,
/// which needs the producer's maps to be projected permutations; an
/// expansion by unit dimensions (a row reduction's (B, T, 1, C) view) gets
/// a copy built over the expanded loops instead (expandedCopy), whatever
/// its maps. A copy that does not fuse after all is merged back
/// (mergeUnfusedCopies).
bool fusableUse(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(owner)) {
    auto producer = use.get().getDefiningOp<linalg::GenericOp>();
    if (!producer || !readOnceAfter(owner))
      return false;
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(owner);
        expand && expansionFuses(producer, expand))
      return true;
    return llvm::all_of(producer.getIndexingMapsArray(),
                        [](AffineMap m) { return m.isProjectedPermutation(); });
  }
  return readOnceByGeneric(use);
}

/// `producer` (all loops parallel, its result written through the
/// identity) rebuilt over the loops of `expand`, an expansion of its result
/// by unit dimensions (unitExpansion): each source loop becomes its
/// expanded dimension, the new unit loops are read by no operand, and the
/// result has the expansion's type. Replaces the expansion, which it
/// feeds no more.
linalg::GenericOp expandedCopy(OpBuilder &b, linalg::GenericOp producer,
                               tensor::ExpandShapeOp expand) {
  AffineMap toSource = toSourceDims(expand, *unitExpansion(expand));
  unsigned rank = expand.getResultType().getRank();
  SmallVector<AffineMap> maps;
  for (OpOperand *input : producer.getDpsInputOperands())
    maps.push_back(producer.getMatchingIndexingMap(input).compose(toSource));
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Location loc = producer.getLoc();
  RankedTensorType type = expand.getResultType();
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  auto copy = linalg::GenericOp::create(
      b, loc, TypeRange{type}, producer.getDpsInputs(), ValueRange{init}, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
  IRMapping mapping;
  producer.getRegion().cloneInto(&copy.getRegion(), mapping);
  copy->setDiscardableAttrs(producer->getDiscardableAttrDictionary());
  expand.getResult().replaceAllUsesWith(copy->getResult(0));
  expand.erase();
  return copy;
}

/// The generic that reads `use` (through its reshape).
Operation *readerOf(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(owner))
    return owner->getResult(0).getUses().begin()->getOwner();
  return owner;
}

/// Marks the copies of one producer (and the producer) until they are
/// fused: copies that were not end up merged again.
constexpr StringLiteral kCopyOf = "anvil.recompute_copy_of";

/// What an op of a producer's body costs a point, in simple instructions:
/// an arith op or a rounding, sign or classification function 1, a
/// division, transcendental or root (exp, log, tanh, erf, sqrt, ...) 8;
/// nothing for
/// divisions and remainders (floating-point remainders loop; integer ones
/// are slow), powers and the like, which are not copied.
std::optional<int64_t> workOf(Operation &op) {
  if (isa<arith::RemFOp, arith::DivSIOp, arith::DivUIOp, arith::RemSIOp,
          arith::RemUIOp, arith::CeilDivSIOp, arith::CeilDivUIOp,
          arith::FloorDivSIOp>(op))
    return std::nullopt;
  if (isa<arith::DivFOp>(op))
    return 8; // an IEEE division: a reciprocal and its refinement
  if (isa<arith::ArithDialect>(op.getDialect()) || isa<linalg::IndexOp>(op))
    return 1;
  if (isa<math::AbsFOp, math::AbsIOp, math::CeilOp, math::FloorOp,
          math::RoundOp, math::RoundEvenOp, math::TruncOp, math::CopySignOp,
          math::FmaOp, math::IsNaNOp, math::IsInfOp, math::IsFiniteOp,
          math::IsNormalOp>(op))
    return 1;
  if (isa<math::ExpOp, math::Exp2Op, math::ExpM1Op, math::LogOp, math::Log2Op,
          math::Log10Op, math::Log1pOp, math::TanhOp, math::SinOp, math::CosOp,
          math::TanOp, math::AtanOp, math::ErfOp, math::SqrtOp, math::RsqrtOp,
          math::CbrtOp>(op))
    return 8;
  return std::nullopt;
}

/// What `op`'s body costs a point (workOf of each op); std::nullopt when
/// an op's cost is unbounded or unknown. An op equal to an earlier one (the
/// same operation, attributes and result types, on operands equal so) is
/// counted once: fusion copies a producer's body into each reader, and the
/// code generator (LLVM's CSE, at -O1 and above) computes it once (LAMB's
/// trust ratio, fused from two scalars of the same norms, has each root
/// three times here).
std::optional<int64_t> bodyWork(linalg::GenericOp op) {
  int64_t work = 0;
  // Each body value's first equal; the distinct ops so far, by name.
  llvm::DenseMap<Value, Value> first;
  llvm::DenseMap<OperationName, SmallVector<Operation *>> distinct;
  auto firstOf = [&](Value v) {
    Value equal = first.lookup(v);
    return equal ? equal : v;
  };
  for (Operation &bodyOp : op.getBlock()->without_terminator()) {
    Operation *equal = nullptr;
    SmallVector<Operation *> &sameName = distinct[bodyOp.getName()];
    if (bodyOp.getNumRegions() == 0)
      for (Operation *seen : sameName)
        if (OperationEquivalence::isEquivalentTo(
                &bodyOp, seen,
                [&](Value a, Value b) {
                  return success(firstOf(a) == firstOf(b));
                },
                /*markEquivalent=*/nullptr,
                OperationEquivalence::IgnoreLocations)) {
          equal = seen;
          break;
        }
    if (equal) {
      for (auto [mine, theirs] :
           llvm::zip(bodyOp.getResults(), equal->getResults()))
        first[mine] = theirs;
      continue;
    }
    sameName.push_back(&bodyOp);
    std::optional<int64_t> cost = workOf(bodyOp);
    if (!cost)
      return std::nullopt;
    work += *cost;
  }
  return work;
}

/// Gives each reader of a reshape of a generic's result a reshape of its
/// own, when every reader is a generic that reads each point once: the
/// generic then has one use per reader, each through a reshape read once,
/// which duplicateCheapProducers counts (a bf16 tensor widened to f32 and
/// viewed with its heads merged, read by an amax and by a cast to 8 bits).
/// Reshapes are views: nothing is computed twice. The views of one reshape
/// are marked as a group of copies (kCopyOf, numbered from `groups`), so
/// that those whose producer was not copied merge again
/// (mergeUnfusedCopies). With `keepAmaxPairs` (merge-amax), a reshape read
/// by an amax and a cast that merge with it stays shared: the merged
/// generic reads it once. Returns whether any was split.
bool splitSharedReshapes(Operation *root, bool keepAmaxPairs, int64_t &groups) {
  SmallVector<Operation *> shared;
  root->walk([&](Operation *op) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op) ||
        !op->getOperand(0).getDefiningOp<linalg::GenericOp>())
      return;
    Value reshaped = op->getResult(0);
    if (!reshaped.hasOneUse() && !reshaped.use_empty() &&
        llvm::all_of(reshaped.getUses(), readOnceByGeneric) &&
        !(keepAmaxPairs && readByMergeablePair(reshaped)))
      shared.push_back(op);
  });
  for (Operation *op : shared) {
    SmallVector<OpOperand *> uses = llvm::map_to_vector(
        op->getResult(0).getUses(), [](OpOperand &u) { return &u; });
    OpBuilder b(op);
    b.setInsertionPointAfter(op);
    op->setAttr(kCopyOf, b.getI64IntegerAttr(groups++));
    for (OpOperand *use : llvm::drop_begin(uses))
      use->set(b.clone(*op)->getResult(0));
  }
  return !shared.empty();
}

/// Gives each user of a cheap elementwise producer a copy of its own, so
/// that elementwise fusion computes it inside every consumer and it is
/// never written: the rounding of a bf16 GEMM's product (`extf(truncf(x))`
/// of the f32 C, read by a softmax's maximum and its subtraction), the
/// one-hot of a cross-entropy's labels (a compare of two broadcasts), a
/// subtraction of the row maximum, a tanh-GELU's gradient read by a cast
/// and a bias gradient's sum. Cheap: all loops parallel, one result, its
/// init unread, arith and math ops only, 2 to 8 users, each a fusable use,
/// no input transposed; recomputing reads no more than materializing
/// moves: with N users, reading its full-size (permutation-mapped) inputs
/// N times costs (N - 1) B_in <= (N + 1) B_out more than writing it once
/// and reading it N times (B: bits per point; broadcast inputs count 0);
/// and its work (an arith op 1, a math function 8) is at most 6, or the
/// copies' (N - 1) x work is at most the bits a point saves. A producer one of
/// whose readers is copied in the same round waits for the next (its readers,
/// and so its count, are about to change). Returns whether any producer was
/// copied.
bool duplicateCheapProducers(Operation *root, int64_t &groups) {
  SmallVector<linalg::GenericOp> candidates;
  root->walk([&](linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumResults() != 1 ||
        op.getNumParallelLoops() != op.getNumLoops() ||
        !op.getBlock()->getArguments().back().use_empty())
      return;
    // Its work per point (bodyWork); a body with an op of unbounded or
    // unknown cost is not copied, nor one of more than 64.
    std::optional<int64_t> bodyCost = bodyWork(op);
    if (!bodyCost || *bodyCost > 64)
      return;
    int64_t work = *bodyCost;
    Value result = op->getResult(0);
    int64_t users = std::distance(result.use_begin(), result.use_end());
    if (users < 2 || users > 8 || !llvm::all_of(result.getUses(), fusableUse))
      return;
    auto bits = [](Value v) {
      Type t = getElementTypeOrSelf(v.getType());
      return t.isIntOrFloat() ? std::max<int64_t>(t.getIntOrFloatBitWidth(), 8)
                              : 64;
    };
    // Its full-size inputs read in its own order (a transpose stays: its
    // consumers would read across memory), broadcasts counted 0.
    int64_t in = 0;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      if (map.isPermutation() && !map.isIdentity())
        return;
      if (map.isPermutation())
        in += bits(input->get());
    }
    // Bits a point saves: written once and read by each user, against its
    // inputs read once more by each extra user.
    int64_t saved = (users + 1) * bits(result) - (users - 1) * in;
    // The work the extra copies do, against what the bytes saved buy: up
    // to 6 ops outright, more while each extra op saves at least a bit
    // (an H200 issues about 7 f32 instructions in the time it moves a
    // byte: a bit each).
    if (saved < 0 || (work > 6 && (users - 1) * work > saved))
      return;
    candidates.push_back(op);
  });
  DenseSet<Operation *> chosen;
  for (linalg::GenericOp op : candidates)
    chosen.insert(op);
  bool copied = false;
  for (linalg::GenericOp op : candidates) {
    if (llvm::any_of(op->getResult(0).getUses(), [&](OpOperand &use) {
          return chosen.contains(readerOf(use));
        }))
      continue;
    OpBuilder b(op);
    b.setInsertionPointAfter(op);
    op->setAttr(kCopyOf, b.getI64IntegerAttr(groups));
    SmallVector<OpOperand *> uses = llvm::map_to_vector(
        op->getResult(0).getUses(), [](OpOperand &u) { return &u; });
    // Readers through a unit expansion get a copy over the expanded loops
    // (no reshape left to propagate); the others share the op and copies
    // of it. An expanded copy that does not fuse stays: it is not the same
    // op as the others.
    SmallVector<OpOperand *> plain;
    for (OpOperand *use : uses) {
      auto expand = dyn_cast<tensor::ExpandShapeOp>(use->getOwner());
      if (expand && expansionFuses(op, expand) &&
          !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) {
            return m.isProjectedPermutation();
          })) {
        OpBuilder at(expand);
        expandedCopy(at, op, expand)->removeAttr(kCopyOf);
        continue;
      }
      plain.push_back(use);
    }
    b.setInsertionPointAfter(op); // not before an expansion erased above
    for (size_t i = 1; i < plain.size(); ++i)
      plain[i]->set(b.clone(*op)->getResult(0));
    if (op->use_empty())
      op->erase();
    ++groups;
    copied = true;
  }
  return copied;
}

/// Merges the copies of a producer that did not fuse, and the views of a
/// split reshape whose producer was not copied (identical ops of the
/// same group: the first, which comes before the others, stays) and drops
/// the marks.
void mergeUnfusedCopies(Operation *root) {
  llvm::MapVector<int64_t, SmallVector<Operation *>> groups;
  root->walk([&](Operation *op) {
    if (auto group = op->getAttrOfType<IntegerAttr>(kCopyOf)) {
      groups[group.getInt()].push_back(op);
      op->removeAttr(kCopyOf);
    }
  });
  for (auto &[group, ops] : groups)
    for (size_t i = 1; i < ops.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (ops[j] && ops[i] && ops[j]->getBlock() == ops[i]->getBlock() &&
            ops[j]->isBeforeInBlock(ops[i]) &&
            OperationEquivalence::isEquivalentTo(
                ops[j], ops[i], OperationEquivalence::IgnoreLocations)) {
          ops[i]->replaceAllUsesWith(ops[j]);
          ops[i]->erase();
          ops[i] = nullptr;
          break;
        }
}

/// Whether `op` is elementwise over static loops: all loops parallel,
/// every output written through the identity and never read.
bool isElementwiseWrite(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isIdentity() ||
        !op.getMatchingBlockArgument(&init).use_empty())
      return false;
  return true;
}

/// `producer` and `consumer` (elementwise over the same loops, the
/// consumer reading the producer's results through the identity) as one
/// generic at the rewriter's insertion point, which must see every operand:
/// its results are the producer's, then the consumer's.
void mergeElementwise(IRRewriter &rewriter, linalg::GenericOp producer,
                      linalg::GenericOp consumer) {
  SmallVector<Value> inputs(producer.getDpsInputs());
  SmallVector<AffineMap> maps;
  for (OpOperand *in : producer.getDpsInputOperands())
    maps.push_back(producer.getMatchingIndexingMap(in));
  SmallVector<OpOperand *> consumerInputs;
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    if (in->get().getDefiningOp() == producer)
      continue;
    consumerInputs.push_back(in);
    inputs.push_back(in->get());
    maps.push_back(consumer.getMatchingIndexingMap(in));
  }
  SmallVector<Value> inits(producer.getDpsInits());
  llvm::append_range(inits, consumer.getDpsInits());
  maps.append(inits.size(),
              rewriter.getMultiDimIdentityMap(producer.getNumLoops()));
  SmallVector<Type> types(producer->getResultTypes());
  llvm::append_range(types, consumer->getResultTypes());
  auto fused =
      linalg::GenericOp::create(rewriter, consumer.getLoc(), types, inputs,
                                inits, maps, consumer.getIteratorTypesArray());
  // Arguments: the producer's inputs, the consumer's other inputs, the
  // producer's outputs, the consumer's outputs.
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value v : llvm::concat<Value>(inputs, inits)) {
    argTypes.push_back(getElementTypeOrSelf(v.getType()));
    argLocs.push_back(v.getLoc());
  }
  Block *body = rewriter.createBlock(&fused.getRegion(), {}, argTypes, argLocs);
  unsigned nIn = producer.getNumDpsInputs();
  unsigned nOtherIn = consumerInputs.size();
  unsigned nProducerOut = producer.getNumDpsInits();
  IRMapping map;
  Block *producerBody = producer.getBody();
  for (unsigned i = 0; i < nIn; ++i)
    map.map(producerBody->getArgument(i), body->getArgument(i));
  for (unsigned i = 0; i < nProducerOut; ++i)
    map.map(producerBody->getArgument(nIn + i),
            body->getArgument(nIn + nOtherIn + i));
  for (Operation &op : producerBody->without_terminator())
    rewriter.clone(op, map);
  SmallVector<Value> yields = llvm::map_to_vector(
      cast<linalg::YieldOp>(producerBody->getTerminator()).getOperands(),
      [&](Value v) { return map.lookupOrDefault(v); });
  Block *consumerBody = consumer.getBody();
  IRMapping consumerMap;
  unsigned next = nIn;
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    BlockArgument arg = consumer.getMatchingBlockArgument(in);
    if (auto result = dyn_cast<OpResult>(in->get());
        result && result.getOwner() == producer)
      consumerMap.map(arg, yields[result.getResultNumber()]);
    else
      consumerMap.map(arg, body->getArgument(next++));
  }
  for (OpOperand &init : consumer.getDpsInitsMutable())
    consumerMap.map(consumer.getMatchingBlockArgument(&init),
                    body->getArgument(nIn + nOtherIn + nProducerOut +
                                      init.getOperandNumber() -
                                      consumer.getNumDpsInputs()));
  for (Operation &op : consumerBody->without_terminator())
    rewriter.clone(op, consumerMap);
  for (Value v :
       cast<linalg::YieldOp>(consumerBody->getTerminator()).getOperands())
    yields.push_back(consumerMap.lookupOrDefault(v));
  linalg::YieldOp::create(rewriter, consumer.getLoc(), yields);
  rewriter.replaceOp(producer, fused->getResults().take_front(nProducerOut));
  rewriter.replaceOp(consumer, fused->getResults().drop_front(nProducerOut));
}

/// A generic whose loops are all parallel, whose results (each written
/// through the identity, statically shaped) are collapsed, all the same
/// way, and returned so (none returned uncollapsed: it would be returned
/// as a view and copied instead), with its loops collapsed so: it computes
/// the returned shape, which bufferization writes into the result's own
/// buffer, rather than a buffer of the uncollapsed shape the return then
/// copies (the optimizer's moments of a bias whose gradient comes as
/// (heads, head dim): a copy kernel each). Other readers read the collapsed
/// results expanded back (a view). Needs the collapsed loops contiguous in
/// every operand's map, and no input a slice (its collapse would be a
/// copy). Returns whether any collapsed.
bool collapseReturnedReshapes(Operation *root) {
  SmallVector<std::pair<linalg::GenericOp, SmallVector<ReassociationIndices>>>
      chosen;
  root->walk([&](linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumResults() == 0 ||
        op.getNumParallelLoops() != op.getNumLoops() ||
        llvm::any_of(op.getIndexingMapsArray(), [](AffineMap map) {
          return !map.isProjectedPermutation();
        }))
      return;
    // A slice's columns collapsed would be copied first (not contiguous).
    if (llvm::any_of(op.getDpsInputs(), [](Value input) {
          return input.getDefiningOp<tensor::ExtractSliceOp>();
        }))
      return;
    // The collapses of the results (one way), whether one is returned, and
    // whether a result is returned uncollapsed (it would be returned as a
    // view, and copied, instead).
    std::optional<SmallVector<ReassociationIndices>> shared;
    bool returnedCollapsed = false, returnedPlain = false;
    for (OpResult result : op->getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      if (!op.getIndexingMapMatchingResult(result).isIdentity() ||
          !type.hasStaticShape() || type.getEncoding())
        return;
      for (Operation *user : result.getUsers()) {
        if (user->hasTrait<OpTrait::IsTerminator>())
          returnedPlain = true;
        auto collapse = dyn_cast<tensor::CollapseShapeOp>(user);
        if (!collapse)
          continue; // another reader: it reads the result expanded back
        SmallVector<ReassociationIndices> reassociation =
            collapse.getReassociationIndices();
        if (shared && *shared != reassociation)
          return;
        shared = reassociation;
        returnedCollapsed |=
            llvm::any_of(collapse->getUsers(), [](Operation *u) {
              return u->hasTrait<OpTrait::IsTerminator>();
            });
      }
    }
    if (shared && returnedCollapsed && !returnedPlain &&
        linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), *shared))
      chosen.emplace_back(op, *shared);
  });
  IRRewriter rewriter(root->getContext());
  bool collapsed = false;
  for (auto &[op, reassociation] : chosen) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::CollapseResult> result = linalg::collapseOpIterationDims(
        cast<linalg::LinalgOp>(op.getOperation()), reassociation, rewriter);
    if (failed(result))
      continue;
    // An init collapsed from a tensor.empty is an empty of the collapsed
    // shape (else bufferization allocates the uncollapsed one, and the
    // result is a view of it: the copy again).
    for (OpOperand &init : result->collapsedOp.getDpsInitsMutable()) {
      auto collapse = init.get().getDefiningOp<tensor::CollapseShapeOp>();
      if (!collapse || !collapse.getSrc().getDefiningOp<tensor::EmptyOp>())
        continue;
      auto type = cast<RankedTensorType>(collapse.getType());
      rewriter.setInsertionPoint(result->collapsedOp);
      Value empty = tensor::EmptyOp::create(
          rewriter, collapse.getLoc(), type.getShape(), type.getElementType());
      rewriter.modifyOpInPlace(result->collapsedOp, [&] { init.set(empty); });
    }
    // Each returned collapse now is the collapsed result itself; other
    // readers read it expanded back.
    for (auto [old, collapsedResult, expanded] :
         llvm::zip(op->getResults(), result->collapsedOp->getResults(),
                   result->results))
      for (OpOperand &use : llvm::make_early_inc_range(old.getUses())) {
        auto collapse = dyn_cast<tensor::CollapseShapeOp>(use.getOwner());
        if (collapse && collapse.getReassociationIndices() == reassociation)
          rewriter.replaceOp(collapse, collapsedResult);
        else
          rewriter.modifyOpInPlace(
              use.getOwner(), [&, expanded = expanded] { use.set(expanded); });
      }
    rewriter.eraseOp(op);
    collapsed = true;
  }
  return collapsed;
}

/// An elementwise producer whose results the function returns (updated
/// state, which is written anyway) and one generic also reads, merged into
/// that generic as more results: the optimizer's m and v updates and the
/// parameter update that reads them become one kernel, which writes m, v
/// and the parameter and reads none of them back. Needs: the producer's
/// results used only by the consumer (once, through the identity) and by
/// the block's terminator; both elementwise over the same loops, the
/// consumer after the producer. Returns whether anything merged.
bool mergeReturnedProducers(Operation *root) {
  SmallVector<std::pair<linalg::GenericOp, linalg::GenericOp>> pairs;
  root->walk([&](linalg::GenericOp producer) {
    if (!isElementwiseWrite(producer))
      return;
    linalg::GenericOp consumer;
    bool returned = false;
    for (OpOperand &use : producer->getUses()) {
      Operation *user = use.getOwner();
      if (user->hasTrait<OpTrait::IsTerminator>()) {
        // The block's own terminator (one in a region between the two
        // would see the merged op only after it).
        if (user->getBlock() != producer->getBlock())
          return;
        returned = true;
        continue;
      }
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (!generic || (consumer && consumer != generic) ||
          !generic.isDpsInput(&use) ||
          !generic.getMatchingIndexingMap(&use).isIdentity())
        return;
      if (consumer) // read twice
        return;
      consumer = generic;
    }
    if (!returned || !consumer ||
        consumer->getBlock() != producer->getBlock() ||
        !producer->isBeforeInBlock(consumer) || !isElementwiseWrite(consumer) ||
        consumer.getStaticLoopRanges() != producer.getStaticLoopRanges())
      return;
    pairs.emplace_back(producer, consumer);
  });
  // One merge a consumer a round (its op is replaced).
  DenseSet<Operation *> touched;
  IRRewriter rewriter(root->getContext());
  bool merged = false;
  for (auto [producer, consumer] : pairs) {
    if (!touched.insert(producer).second || !touched.insert(consumer).second)
      continue;
    rewriter.setInsertionPoint(consumer);
    mergeElementwise(rewriter, producer, consumer);
    merged = true;
  }
  return merged;
}

/// A cheap elementwise reader of an elementwise producer that stays
/// written for its other readers (a layer norm's f32 gradient, read by the
/// residual's sum and a bias gradient, and cast to bf16 for a GEMM) merged
/// into the producer as one more result: the kernel that computes the
/// value also writes the cast, which no longer reads it back. Needs: the
/// reader elementwise over the same loops, after the producer in its block,
/// reading the producer's results only through the identity, its work at
/// most 2 (workOf), and whatever else it reads available where the producer
/// is (empty tensors, fills and constants are moved there). Returns whether
/// anything merged (one reader a producer a round).
bool mergeCheapReaders(Operation *root) {
  SmallVector<std::pair<linalg::GenericOp, linalg::GenericOp>> pairs;
  root->walk([&](linalg::GenericOp producer) {
    if (!isElementwiseWrite(producer) || producer->hasOneUse())
      return;
    for (Operation *user : producer->getUsers()) {
      auto reader = dyn_cast<linalg::GenericOp>(user);
      if (!reader || reader == producer || !isElementwiseWrite(reader) ||
          reader->getBlock() != producer->getBlock() ||
          !producer->isBeforeInBlock(reader) ||
          reader.getStaticLoopRanges() != producer.getStaticLoopRanges())
        continue;
      bool ok = true;
      for (OpOperand &operand : reader->getOpOperands())
        if (operand.get().getDefiningOp() == producer)
          ok &= reader.isDpsInput(&operand) &&
                reader.getMatchingIndexingMap(&operand).isIdentity();
      std::optional<int64_t> work = bodyWork(reader);
      if (ok && work && *work <= 2) {
        pairs.emplace_back(producer, reader);
        return;
      }
    }
  });
  DenseSet<Operation *> touched;
  IRRewriter rewriter(root->getContext());
  bool merged = false;
  for (auto [producer, reader] : pairs) {
    // What the reader's body uses from above must be there too.
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(reader.getRegion(), above);
    auto available = [&](Value v) {
      return v.getDefiningOp() == producer || availableBefore(v, producer);
    };
    if (touched.contains(producer) || touched.contains(reader) ||
        !llvm::all_of(reader->getOperands(), available) ||
        llvm::any_of(above, [&](Value v) {
          return v.getDefiningOp() == producer || !availableBefore(v, producer);
        }))
      continue;
    touched.insert(producer);
    touched.insert(reader);
    rewriter.setInsertionPoint(producer);
    mergeElementwise(rewriter, producer, reader);
    merged = true;
  }
  return merged;
}

/// `producer` (isElementwiseWrite) and `amax`, the amax of its result `r`
/// over the same loops, as one generic at the producer's place: every loop
/// a reduction, the producer's outputs written at every point as before,
/// the amax folded over result `r`'s values. What the amax's init reads
/// must be available there.
void mergeAmaxIntoProducer(RewriterBase &rewriter, linalg::GenericOp producer,
                           linalg::GenericOp amax, unsigned r) {
  Location loc = producer.getLoc();
  rewriter.setInsertionPoint(producer);
  SmallVector<AffineMap> maps = producer.getIndexingMapsArray();
  maps.push_back(
      AffineMap::get(producer.getNumLoops(), 0, rewriter.getContext()));
  SmallVector<Value> inits(producer.getDpsInits());
  inits.push_back(amax.getDpsInits()[0]);
  SmallVector<Type> types(producer->getResultTypes());
  types.push_back(amax.getResult(0).getType());
  auto merged = linalg::GenericOp::create(
      rewriter, loc, types, producer.getDpsInputs(), inits, maps,
      SmallVector<utils::IteratorType>(producer.getNumLoops(),
                                       utils::IteratorType::reduction));
  merged->setDiscardableAttrs(producer->getDiscardableAttrDictionary());
  Block *from = producer.getBody();
  SmallVector<Type> argTypes(from->getArgumentTypes());
  SmallVector<Location> argLocs(argTypes.size(), loc);
  argTypes.push_back(amax.getBody()->getArgument(1).getType());
  argLocs.push_back(amax.getLoc());
  Block *body =
      rewriter.createBlock(&merged.getRegion(), {}, argTypes, argLocs);
  IRMapping map;
  for (auto [old, now] : llvm::zip(from->getArguments(), body->getArguments()))
    map.map(old, now);
  for (Operation &op : from->without_terminator())
    rewriter.clone(op, map);
  SmallVector<Value> yielded = llvm::map_to_vector(
      cast<linalg::YieldOp>(from->getTerminator()).getOperands(),
      [&](Value v) { return map.lookupOrDefault(v); });
  IRMapping amaxMap;
  amaxMap.map(amax.getBody()->getArgument(0), yielded[r]);
  amaxMap.map(amax.getBody()->getArgument(1), body->getArguments().back());
  for (Operation &op : amax.getBody()->without_terminator())
    rewriter.clone(op, amaxMap);
  yielded.push_back(amaxMap.lookup(
      cast<linalg::YieldOp>(amax.getBody()->getTerminator()).getOperand(0)));
  linalg::YieldOp::create(rewriter, loc, yielded);
  rewriter.replaceOp(amax, merged->getResults().back());
  rewriter.replaceOp(producer, merged->getResults().drop_back());
}

/// With merge-amax: an amax of a tensor that an elementwise generic writes
/// and other ops read too (the current recipe's amax of a gradient that a
/// layer norm's backward writes for the residual, before the cast that
/// scales by it) becomes one more output of that generic: the kernel that
/// writes the tensor folds its amax too, and no pass reads the tensor for
/// it. The producer's maps must be what the CUDA mapping's grid-stride
/// loop reads (loop dimensions or constants), its static loops the
/// amax's. Returns whether any merged.
bool mergeAmaxesIntoProducers(Operation *root) {
  SmallVector<std::tuple<linalg::GenericOp, linalg::GenericOp, unsigned>> pairs;
  root->walk([&](linalg::GenericOp amax) {
    if (!amax.hasPureTensorSemantics() || !isAmax(amax))
      return;
    auto x = dyn_cast<OpResult>(amax.getDpsInputs()[0]);
    auto producer =
        x ? dyn_cast<linalg::GenericOp>(x.getOwner()) : linalg::GenericOp();
    if (!producer || !isElementwiseWrite(producer) ||
        producer->getBlock() != amax->getBlock() ||
        producer.getStaticLoopRanges() != amax.getStaticLoopRanges() ||
        !capturesOnlyConstants(producer) ||
        !cast<RankedTensorType>(amax.getResult(0).getType())
             .getElementType()
             .isF32())
      return;
    for (AffineMap map : producer.getIndexingMapsArray())
      if (!llvm::all_of(map.getResults(), [](AffineExpr e) {
            return isa<AffineDimExpr, AffineConstantExpr>(e);
          }))
        return;
    pairs.emplace_back(producer, amax, x.getResultNumber());
  });
  IRRewriter rewriter(root->getContext());
  DenseSet<Operation *> merged; // producers merged (and erased)
  for (auto [producer, amax, r] : pairs) {
    if (merged.contains(producer) ||
        !availableBefore(amax.getDpsInits()[0], producer))
      continue;
    merged.insert(producer);
    mergeAmaxIntoProducer(rewriter, producer, amax, r);
  }
  return !merged.empty();
}

/// A rank-1 integer constant whose values are their positions (0, 1, 2,
/// ...: the class ids a one-hot compares labels with), read by a generic
/// through one of its loops, is that loop's index: `linalg.index`, cast to
/// the element type, instead of a load a point (GPT-2's logits' gradient
/// read 4 bytes of a 201 KB table for each of its 411 million points). The
/// input, then unused, goes with the other unused operands.
struct IotaAsIndex : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    for (OpOperand *input : op.getDpsInputOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(input);
      DenseIntElementsAttr values;
      if (arg.use_empty() ||
          !(arg.getType().isSignlessInteger() || arg.getType().isIndex()) ||
          !matchPattern(input->get(), m_Constant(&values)) ||
          values.getType().getRank() != 1 || values.isSplat() ||
          values.getNumElements() < 2)
        continue;
      AffineMap map = op.getMatchingIndexingMap(input);
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(0));
      if (!dim)
        continue;
      int64_t position = 0;
      bool iota = llvm::all_of(values.getValues<APInt>(), [&](const APInt &v) {
        return v.getSignificantBits() <= 64 && v.getSExtValue() == position++;
      });
      if (!iota)
        continue;
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(op.getBody());
      Value index =
          linalg::IndexOp::create(rewriter, op.getLoc(), dim.getPosition());
      if (!arg.getType().isIndex())
        index = arith::IndexCastOp::create(rewriter, op.getLoc(), arg.getType(),
                                           index);
      rewriter.replaceAllUsesWith(arg, index);
      return success();
    }
    return failure();
  }
};

/// The most work (bodyWork) of a scalar readsScalarOfReduction recomputes:
/// LAMB's trust ratio (two roots and a division in f64, 32).
constexpr int64_t kScalarWork = 32;

/// Whether `fused` reads a cheap scalar of a whole-tensor reduction: a
/// generic without loops, its init unread, whose inputs are the rank-0
/// results of generics with reduction loops only (the FP8 current recipe's
/// scale, 448 / amax; LAMB's trust ratio, the root of the ratio of a
/// tensor's and its update's squared norms), whose body's work (bodyWork)
/// is at most kScalarWork, read by
/// a generic whose loops are all parallel (a reduction would compute it
/// again at every term). Such a scalar takes a kernel of its own, of one
/// thread, only because the reduction's blocks finish in no set order;
/// fused, every reader computes it again where it reads it (a GPU thread
/// once for its run of points: it depends on no loop).
bool readsScalarOfReduction(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  auto reader = dyn_cast<linalg::GenericOp>(fused->getOwner());
  if (!producer || producer.getNumLoops() != 0 ||
      !producer.hasPureTensorSemantics() || producer.getNumResults() != 1 ||
      producer.getNumDpsInputs() == 0 ||
      !producer.getBlock()->getArguments().back().use_empty() || !reader ||
      reader.getNumParallelLoops() != reader.getNumLoops())
    return false;
  for (Value input : producer.getDpsInputs()) {
    auto reduction = input.getDefiningOp<linalg::GenericOp>();
    if (!reduction || reduction.getNumLoops() == 0 ||
        reduction.getNumReductionLoops() != reduction.getNumLoops())
      return false;
  }
  std::optional<int64_t> work = bodyWork(producer);
  return work && *work <= kScalarWork;
}

/// The most points of a statistic readsStatistic recomputes: a batch
/// norm's channels (2048 at most in ResNet-50), not a row's (a layer norm's
/// 8192 rows keep their row groups, whose warps compute each row's
/// statistic once).
constexpr int64_t kStatisticPoints = 4096;

/// Whether `op` is a cheap per-channel statistic: its loops all parallel
/// over at most kStatisticPoints points, one result, its init unread, its
/// work (bodyWork) at most kScalarWork, its inputs read through the
/// identity, each a block argument or the result of a reduction with a
/// parallel loop inside a reduction loop, at least one such reduction (a
/// batch norm's sums over batch and pixels around the channel; not a row's,
/// whose reduction loops are innermost: a layer norm's, a group norm's,
/// which row groups take whole): a batch norm's mean (sum / N) and rstd
/// (rsqrt(var / N + eps)).
bool isStatistic(linalg::GenericOp op) {
  if (op.getNumLoops() == 0 || op.getNumParallelLoops() != op.getNumLoops() ||
      !op.hasPureTensorSemantics() || op.getNumResults() != 1 ||
      op.getNumDpsInputs() == 0 ||
      op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)))
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kStatisticPoints)
    return false;
  bool ofReduction = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!op.getMatchingIndexingMap(input).isIdentity())
      return false;
    if (isa<BlockArgument>(input->get()))
      continue;
    auto reduction = input->get().getDefiningOp<linalg::GenericOp>();
    if (!reduction || reduction.getNumReductionLoops() == 0)
      return false;
    SmallVector<utils::IteratorType> kinds = reduction.getIteratorTypesArray();
    auto firstReduction = llvm::find(kinds, utils::IteratorType::reduction);
    if (std::find(firstReduction, kinds.end(), utils::IteratorType::parallel) ==
        kinds.end())
      return false;
    ofReduction = true;
  }
  std::optional<int64_t> work = bodyWork(op);
  return ofReduction && work && *work <= kScalarWork;
}

/// The bits a point of `op` moves: each operand it reads or writes once a
/// point (readsEachPointOnce), by its element's width (at least 8); what it
/// reads at several points (a broadcast) counts 0.
int64_t bitsPerPoint(linalg::GenericOp op) {
  int64_t bits = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!readsEachPointOnce(op, &operand))
      continue;
    Type t = getElementTypeOrSelf(operand.get().getType());
    bits += t.isIntOrFloat() ? std::max<unsigned>(t.getIntOrFloatBitWidth(), 8)
                             : 64;
  }
  return bits;
}

/// Whether `fused` reads a statistic (isStatistic) that every one of its
/// users reads through a broadcast (a generic whose loops are all
/// parallel, reading an element at several points: not
/// readsEachPointOnce), so that, fused into all of them, its one-block
/// kernel goes (a statistic that a reduction or a return also reads keeps
/// its kernel, and is not computed again besides); and whose reader's work
/// with it stays within the bits the reader moves a point, or kScalarWork
/// (an H200 issues about 7 f32 instructions in the time it moves a byte: a
/// bit each; duplicateCheapProducers' rule). A batch norm's normalization,
/// reading the mean and rstd of each channel: each of its points computes
/// them again (divisions and a root), where a one-block kernel computed
/// them between the reduction and the readers.
bool readsStatistic(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  auto reader = dyn_cast<linalg::GenericOp>(fused->getOwner());
  if (!producer || !reader || !isStatistic(producer))
    return false;
  auto broadcastRead = [](OpOperand &use) {
    auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
    return user && user.getNumParallelLoops() == user.getNumLoops() &&
           llvm::is_contained(user.getDpsInputOperands(), &use) &&
           !readsEachPointOnce(user, &use);
  };
  if (!llvm::all_of(producer->getResult(0).getUses(), broadcastRead))
    return false;
  std::optional<int64_t> mine = bodyWork(producer), theirs = bodyWork(reader);
  return mine && theirs &&
         *mine + *theirs <= std::max(kScalarWork, bitsPerPoint(reader));
}

struct AnvilFusePass : mlir::anvil::impl::AnvilFusePassBase<AnvilFusePass> {
  using AnvilFusePassBase::AnvilFusePassBase;

  void runOnOperation() override {
    if (failed(fuse()))
      return signalPassFailure();
    // Returned results computed in the shape they are returned in, last
    // (the fusion's patterns would expand the generics again), then the
    // reshapes between folded.
    if (!collapseReturnedReshapes(getOperation()))
      return;
    MLIRContext *context = &getContext();
    RewritePatternSet cleanup(context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(cleanup, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(cleanup, context);
    tensor::EmptyOp::getCanonicalizationPatterns(cleanup, context);
    linalg::GenericOp::getCanonicalizationPatterns(cleanup, context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(cleanup))))
      signalPassFailure();
  }

  /// The fusion patterns under `control`, with the canonicalizations
  /// they rely on.
  FrozenRewritePatternSet fusionPatterns(linalg::ControlFusionFn control) {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    patterns.add<IotaAsIndex>(context);
    return FrozenRewritePatternSet(std::move(patterns));
  }

  /// Everything but collapseReturnedReshapes.
  LogicalResult fuse() {
    FrozenRewritePatternSet frozen = fusionPatterns([this](OpOperand *fused) {
      return shouldFuse(fused) ||
             (recomputeCheap && readsScalarOfReduction(fused));
    });
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(getOperation(), frozen, config)))
      return failure();
    // Cheap producers of several consumers: a copy each, fused again (a
    // producer whose reader was copied is looked at again in the next
    // round: a few rounds); copies left unfused merge again.
    int64_t groups = 0;
    for (int round = 0; recomputeCheap && round < 8; ++round) {
      splitSharedReshapes(getOperation(), mergeAmax, groups);
      if (!duplicateCheapProducers(getOperation(), groups))
        break;
      if (failed(applyPatternsGreedily(getOperation(), frozen, config)))
        return failure();
    }
    if (recomputeCheap)
      mergeUnfusedCopies(getOperation());
    // Cheap readers of producers that stay written, merged into them.
    for (int round = 0; mergeCheapReadersOption && round < 8; ++round)
      if (!mergeCheapReaders(getOperation()))
        break;
    // Then the per-channel statistics into the generics that read them
    // through a broadcast: after the copies, so that a producer copied into
    // its readers (a bottleneck's join, read by its ReLU and the backward's
    // mask) was judged on its own work, and each copy takes the statistics
    // where it went; and after the cheap readers' merges, which a reader
    // grown by the statistics would no longer pass.
    if (recomputeCheap &&
        failed(applyPatternsGreedily(getOperation(),
                                     fusionPatterns([](OpOperand *fused) {
                                       return shouldFuse(fused) ||
                                              readsScalarOfReduction(fused) ||
                                              readsStatistic(fused);
                                     }),
                                     config)))
      return failure();
    // Updated state and the update that reads it, one generic (a few
    // rounds: each merge can make the merged generic another's consumer),
    // then canonicalized (an input both read, such as the gradient, once).
    bool mergedState = false;
    for (int round = 0; round < 8; ++round) {
      if (!mergeReturnedProducers(getOperation()))
        break;
      mergedState = true;
    }
    if (mergedState &&
        failed(applyPatternsGreedily(getOperation(), frozen, config)))
      return failure();
    // The casts are whole once their scaling and broadcasts have fused;
    // merged with their amaxes, the tensors' producers fuse into them.
    if (!mergeAmax)
      return success();
    mergeCastsAndAmaxes(getOperation());
    if (failed(applyPatternsGreedily(getOperation(), frozen, config)))
      return failure();
    // The amaxes of tensors that stay written, in their producers' kernels.
    mergeAmaxesIntoProducers(getOperation());
    return success();
  }
};

} // namespace
