//===- HorizontalFuse.cpp - independent dispatches over one domain merged -===//
//
// anvil-horizontal-fuse: after anvil-fuse, each top-level linalg op is a
// dispatch (a kernel launch on a GPU). Many are independent of each other
// and iterate over the same domain: the optimizer's update of each of a
// model's same-shaped parameters, the delayed recipe's per-tensor scales.
// Those become one linalg.generic with every member's operands and
// results, each member's body computed in turn at each point: one launch
// instead of several, each computing what it did. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "anvil/Fusion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <functional>
#include <map>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILHORIZONTALFUSEPASS
#include "anvil/Fusion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// The most terms a reduction over every loop may fold and still join a
/// group: anvil-split-reductions (at its default min-length) leaves shorter
/// sums whole and runs longer ones in two stages, and a grid runs one on a
/// warp or a thread, whose loads of the members' terms at each step are
/// independent.
constexpr int64_t kMaxFullSumTerms = 4096;

/// Whether `op` reduces over every loop (at least one) at most
/// kMaxFullSumTerms f32 terms, each input read through the identity, into
/// rank-0 f32 outputs, each output `out = f(out, v)` with `f` an addf,
/// maximumf or minimumf and `v` computed without the outputs, its body
/// free of nested regions: the squared norms of LAMB's small parameters
/// and updates, a split sum's second stage, the maximum of an FP8 tensor's
/// amax history. Such ops of one domain take the same path through
/// anvil-cuda-map-dispatches merged as alone: one warp (from 256 terms) or
/// one thread folds every member's outputs, each in a fixed order, the one
/// it had alone unless the merged inputs' alignment lets the warp's lanes
/// read runs of four where a member alone read single elements (a maximum
/// or minimum is the same in any order). An amax (maximumf of |x|, folded
/// atomically by a grid) is not such a reduction.
bool isSmallFullReduction(linalg::GenericOp op) {
  if (op.getNumLoops() == 0 || op.getNumParallelLoops() != 0)
    return false;
  int64_t terms = 1;
  for (int64_t r : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(r))
      return false;
    terms *= r;
  }
  if (terms > kMaxFullSumTerms)
    return false;
  Block *body = op.getBlock();
  auto f32 = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getElementType().isF32();
  };
  if (llvm::any_of(op.getDpsInputOperands(),
                   [&](OpOperand *in) {
                     return !f32(in->get()) ||
                            !op.getMatchingIndexingMap(in).isIdentity();
                   }) ||
      llvm::any_of(body->getOperations(),
                   [](Operation &o) { return o.getNumRegions() != 0; }))
    return false;
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  // Whether `v` is computed in the body from an output.
  auto readsOutput = [&](Value v) {
    SmallVector<Value> work{v};
    llvm::SmallPtrSet<Operation *, 8> seen;
    while (!work.empty()) {
      Value x = work.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(x)) {
        if (arg.getOwner() == body &&
            arg.getArgNumber() >= op.getNumDpsInputs())
          return true;
        continue;
      }
      Operation *def = x.getDefiningOp();
      if (def->getBlock() == body && seen.insert(def).second)
        llvm::append_range(work, def->getOperands());
    }
    return false;
  };
  for (OpOperand &init : op.getDpsInitsMutable()) {
    auto type = dyn_cast<RankedTensorType>(init.get().getType());
    if (!type || type.getRank() != 0 || !type.getElementType().isF32())
      return false;
    unsigned r = init.getOperandNumber() - op.getNumDpsInputs();
    BlockArgument out = op.getMatchingBlockArgument(&init);
    Operation *combine = yield.getOperand(r).getDefiningOp();
    if (!combine ||
        !isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp>(combine) ||
        combine->getBlock() != body || !out.hasOneUse() ||
        (combine->getOperand(0) != out && combine->getOperand(1) != out))
      return false;
    Value v = combine->getOperand(combine->getOperand(0) == out ? 1 : 0);
    if (readsOutput(v) ||
        (!isa<arith::AddFOp>(combine) && v.getDefiningOp<math::AbsFOp>()))
      return false;
  }
  return true;
}

/// The types of `op`'s operands and of the tensors its regions read from
/// above (a gathered concatenation's inputs): what a kernel of it takes.
SmallVector<Type> readTypes(Operation *op) {
  SmallVector<Type> types(op->getOperandTypes());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value v : captured)
    if (isa<RankedTensorType>(v.getType()))
      types.push_back(v.getType());
  return types;
}

/// Whether every tensor type of `types` is static with at most `elements`
/// elements.
bool tensorsAtMost(ArrayRef<Type> types, int64_t elements) {
  return llvm::all_of(types, [&](Type t) {
    auto shaped = dyn_cast<RankedTensorType>(t);
    return !shaped ||
           (shaped.hasStaticShape() && shaped.getNumElements() <= elements);
  });
}

/// `ops` (in block order, each after what it reads) by level: first those
/// that read none of the others (`producers` gives the others an op reads),
/// then those that read only those, and so on, in block order within a
/// level. Moved in this order, each op of a kind that reads nothing of its
/// own level comes before the next level's readers, where those of a
/// domain merge.
SmallVector<Operation *> inLevelOrder(
    ArrayRef<Operation *> ops,
    function_ref<void(Operation *, SmallVectorImpl<Operation *> &)> producers) {
  DenseMap<Operation *, unsigned> level;
  std::map<unsigned, SmallVector<Operation *>> byLevel;
  for (Operation *op : ops) {
    SmallVector<Operation *> defs;
    producers(op, defs);
    unsigned l = 0;
    for (Operation *def : defs)
      l = std::max(l, level.lookup(def) + 1);
    level[op] = l;
    byLevel[l].push_back(op);
  }
  SmallVector<Operation *> ordered;
  for (auto &[l, atLevel] : byLevel)
    llvm::append_range(ordered, atLevel);
  return ordered;
}

/// Whether `op` may join a horizontal group: a linalg.generic on tensors
/// over a static domain whose loops (if any: a scalar's has none) are all
/// parallel, or include a parallel one (a reduction over rows or columns,
/// which a merged op folds output by output in the same order; not a
/// GEMM), or a small reduction over every loop (isSmallFullReduction; not an
/// amax, whose grid folds into one output atomically), with no attributes
/// beyond its own (nothing a later pass reads off it).
bool isCandidate(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() ||
      (op.getNumLoops() != 0 && op.getNumParallelLoops() == 0 &&
       !isSmallFullReduction(op)))
    return false;
  // A product with m, n and k loops (a batched GEMM) stays alone: a
  // backend runs it as a library GEMM (GemmToBlas takes those). A sum of
  // products over shared loops (a norm's weight gradient, sum(dy x) over
  // the rows) is a reduction like any other.
  if (op.getNumReductionLoops() != 0 &&
      linalg::isaContractionOpInterface(
          cast<linalg::LinalgOp>(op.getOperation()))) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) ||
        (!dims->m.empty() && !dims->n.empty() && !dims->k.empty()))
      return false;
  }
  if (llvm::any_of(op.getStaticLoopRanges(),
                   [](int64_t r) { return ShapedType::isDynamic(r); }))
    return false;
  return op->getDiscardableAttrDictionary().empty();
}

/// Ops merged into one; `operands` counts their inputs and outputs,
/// `elements` the elements those hold.
struct Group {
  SmallVector<int64_t> domain;
  SmallVector<utils::IteratorType> iterators;
  SmallVector<linalg::GenericOp> members;
  int64_t operands = 0;
  int64_t elements = 0;
  bool open = true;
};

/// Whether something reads a result of `member` at or before `op` (in
/// `op`'s block): then the merged op, placed at the group's last member,
/// would come after a reader, and `op` may depend on `member`.
bool readBefore(linalg::GenericOp member, Operation *op) {
  Block *block = op->getBlock();
  for (Operation *user : member->getUsers()) {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || ancestor == op || ancestor->isBeforeInBlock(op))
      return true;
  }
  return false;
}

/// Whether `a` and `b` are the same tensor: one value, or the results of
/// two equal reshapes of the same tensor (the members' own views of it,
/// such as a split sum's expand of its own collapse).
bool sameTensor(Value a, Value b) {
  if (a == b)
    return true;
  Operation *da = a.getDefiningOp(), *db = b.getDefiningOp();
  return da && db && isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(da) &&
         OperationEquivalence::isEquivalentTo(
             da, db, [](Value x, Value y) { return success(sameTensor(x, y)); },
             /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

/// Whether `x` (through map `mx`) and `y` (through `my`) read the same
/// elements at each point: one tensor, or equal reshapes of it, through
/// the same map.
bool sameRead(Value x, AffineMap mx, Value y, AffineMap my) {
  return mx == my && sameTensor(x, y);
}

/// Whether `a` and `b` read an input the same way.
bool shareInput(linalg::GenericOp a, linalg::GenericOp b) {
  for (OpOperand *x : a.getDpsInputOperands())
    for (OpOperand *y : b.getDpsInputOperands())
      if (sameRead(x->get(), a.getMatchingIndexingMap(x), y->get(),
                   b.getMatchingIndexingMap(y)))
        return true;
  return false;
}

/// The generic computing every member of `members` at the last member's
/// place; the members' results are replaced by its results. An input that
/// an earlier member reads the same way (the same tensor through the same
/// map) is read once: its block argument stands for both.
void merge(RewriterBase &rewriter, ArrayRef<linalg::GenericOp> members) {
  SmallVector<Value> ins, outs;
  SmallVector<AffineMap> inMaps, outMaps;
  SmallVector<Type> resultTypes;
  // For each member's input, the merged input it reads.
  SmallVector<unsigned> inputOf;
  for (linalg::GenericOp m : members) {
    for (OpOperand *in : m.getDpsInputOperands()) {
      AffineMap map = m.getMatchingIndexingMap(in);
      auto same =
          llvm::find_if(llvm::seq<unsigned>(0, ins.size()), [&](unsigned i) {
            return sameRead(ins[i], inMaps[i], in->get(), map);
          });
      if (same != llvm::seq<unsigned>(0, ins.size()).end()) {
        inputOf.push_back(*same);
        continue;
      }
      inputOf.push_back(ins.size());
      ins.push_back(in->get());
      inMaps.push_back(map);
    }
    llvm::append_range(outs, m.getDpsInits());
    for (OpOperand &out : m.getDpsInitsMutable())
      outMaps.push_back(m.getMatchingIndexingMap(&out));
    resultTypes.append(m->getResultTypes().begin(), m->getResultTypes().end());
  }
  SmallVector<AffineMap> maps(inMaps);
  maps.append(outMaps);
  linalg::GenericOp last = members.back();
  // A fill that only a member's output starts (a row reduction's) moves to
  // the merged op, as it sat before its member: anvil-outline-dispatches
  // folds the fills before a reduction into its launch.
  for (Value out : outs)
    if (auto fill = out.getDefiningOp<linalg::FillOp>();
        fill && fill->hasOneUse() && fill->getBlock() == last->getBlock())
      rewriter.moveOpBefore(fill, last);
  rewriter.setInsertionPoint(last);
  auto merged =
      linalg::GenericOp::create(rewriter, last.getLoc(), resultTypes, ins, outs,
                                maps, last.getIteratorTypesArray());
  // The block's arguments: the merged inputs (each as its first reader
  // has it), then every member's outputs, in member order.
  SmallVector<BlockArgument> inArgs, outArgs, firstArgs;
  for (linalg::GenericOp m : members) {
    llvm::append_range(inArgs, m.getRegionInputArgs());
    llvm::append_range(outArgs, m.getRegionOutputArgs());
  }
  for (auto [arg, input] : llvm::zip_equal(inArgs, inputOf))
    if (input == firstArgs.size())
      firstArgs.push_back(arg);
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (BlockArgument a : llvm::concat<BlockArgument>(firstArgs, outArgs)) {
    argTypes.push_back(a.getType());
    argLocs.push_back(a.getLoc());
  }
  Block *body =
      rewriter.createBlock(&merged.getRegion(), {}, argTypes, argLocs);
  IRMapping map;
  for (auto [from, input] : llvm::zip_equal(inArgs, inputOf))
    map.map(from, body->getArgument(input));
  for (auto [from, to] :
       llvm::zip_equal(outArgs, body->getArguments().drop_front(ins.size())))
    map.map(from, to);
  SmallVector<Value> yielded;
  for (linalg::GenericOp m : members) {
    for (Operation &op : m.getBody()->without_terminator())
      rewriter.clone(op, map);
    for (Value v : m.getBody()->getTerminator()->getOperands())
      yielded.push_back(map.lookupOrDefault(v));
  }
  linalg::YieldOp::create(rewriter, last.getLoc(), yielded);
  unsigned next = 0;
  for (linalg::GenericOp m : members) {
    unsigned n = m->getNumResults();
    rewriter.replaceOp(m, merged->getResults().slice(next, n));
    next += n;
  }
}

struct AnvilHorizontalFusePass
    : mlir::anvil::impl::AnvilHorizontalFusePassBase<AnvilHorizontalFusePass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](FunctionOpInterface fn) {
      if (fn.isExternal())
        return;
      for (Block &block : fn.getFunctionBody()) {
        if (copyStateReads)
          copyStateReadElsewhere(fn, block);
        if (hoistArgumentOnly)
          hoistReadingArguments(block);
        hoistFullReductionFills(rewriter, block);
        if (sinkSmallReaders)
          sinkReadersBetweenSharers(block);
        if (orderUpdates)
          orderByLevels(block);
        fuseBlock(rewriter, block);
      }
    });
  }

  /// Each tensor that a generic returned as tied state (its result marked
  /// `anvil.tied_to` an argument) reads inside its body (tensor.extract at
  /// indices of its own making) from that argument, or from a slice of it
  /// of a static shape, is read from a copy made by a generic right before
  /// it: the
  /// delayed FP8 recipe's history roll, whose point i reads the old
  /// history's point i - 1. Written in place, such an update needs the old
  /// values copied first; bufferization would copy each slice where it is
  /// taken (the history's FP8 tensor, in the forward pass), one launch
  /// each, where an explicit copy is a small candidate like the roll: the
  /// copies move with the rolls (order-updates) and merge. The copy is the
  /// one bufferization would make: the same bytes, moved elsewhere. Not
  /// where something reads the state after the update (then it is not
  /// updated in place). (No canonicalization may run between this pass and
  /// anvil-bufferize: it would erase the identity generic.)
  void copyStateReadElsewhere(FunctionOpInterface fn, Block &block) {
    if (!block.mightHaveTerminator() || !block.isEntryBlock())
      return;
    Operation *terminator = block.getTerminator();
    if (!terminator->hasTrait<OpTrait::ReturnLike>() ||
        terminator->getNumOperands() != fn.getNumResults())
      return;
    for (auto [r, returned] : llvm::enumerate(terminator->getOperands())) {
      auto tied = fn.getResultAttrOfType<IntegerAttr>(r, "anvil.tied_to");
      auto update = returned.getDefiningOp<linalg::GenericOp>();
      if (!tied || !update || update->getBlock() != &block ||
          tied.getInt() < 0 ||
          tied.getInt() >= static_cast<int64_t>(block.getNumArguments()))
        continue;
      Value state = block.getArgument(tied.getInt());
      // Read after the update (through slices and reshapes too), the state
      // is not updated in place: bufferization writes the update elsewhere,
      // and a copy here would be one more.
      std::function<bool(Value)> readAfter = [&](Value v) {
        return llvm::any_of(v.getUsers(), [&](Operation *user) {
          Operation *op = block.findAncestorOpInBlock(*user);
          if (!op || update->isBeforeInBlock(op))
            return true;
          return isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
                     tensor::CollapseShapeOp>(user) &&
                 readAfter(user->getResult(0));
        });
      };
      if (readAfter(state))
        continue;
      // The tensors its body extracts from above that are the state or a
      // slice of it of a static shape.
      SetVector<Value> read;
      update.getBody()->walk([&](tensor::ExtractOp extract) {
        Value t = extract.getTensor();
        if (t.getParentRegion()->isProperAncestor(&update.getRegion()) &&
            (t == state ||
             (t.getDefiningOp<tensor::ExtractSliceOp>() &&
              t.getDefiningOp<tensor::ExtractSliceOp>().getSource() ==
                  state)) &&
            cast<RankedTensorType>(t.getType()).hasStaticShape())
          read.insert(t);
      });
      for (Value t : read) {
        auto type = cast<RankedTensorType>(t.getType());
        OpBuilder b(update);
        Location loc = update.getLoc();
        Value empty = tensor::EmptyOp::create(
            b, loc, type.getShape(), type.getElementType(), type.getEncoding());
        AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
        auto copy = linalg::GenericOp::create(
            b, loc, type, t, empty, SmallVector<AffineMap>(2, identity),
            SmallVector<utils::IteratorType>(type.getRank(),
                                             utils::IteratorType::parallel),
            [](OpBuilder &nb, Location l, ValueRange args) {
              linalg::YieldOp::create(nb, l, args.front());
            });
        replaceAllUsesInRegionWith(t, copy.getResult(0), update.getRegion());
      }
    }
  }

  /// The fills that start reductions over every loop (the atomic amaxes of
  /// FP8's tensors and histories) or across rows (column sums: the layers'
  /// bias and norm-weight gradients, whose merged sums take no fill into
  /// their launch), by shape, into one generic each at the start of the
  /// block: with static shapes of at most `maxHoistedElements` elements,
  /// constant values and fresh `tensor.empty` destinations, they depend on
  /// nothing, and such a reduction's grid must find its output filled by an
  /// earlier launch anyway. A fill that starts a row reduction stays where
  /// it is (anvil-outline-dispatches folds it into that reduction's
  /// launch).
  void hoistFullReductionFills(RewriterBase &rewriter, Block &block) {
    llvm::MapVector<Type, SmallVector<linalg::FillOp>> byType;
    for (auto fill : block.getOps<linalg::FillOp>()) {
      auto type = dyn_cast<RankedTensorType>(fill.getResult(0).getType());
      Value value = fill.getInputs()[0];
      if (!type || !type.hasStaticShape() ||
          type.getNumElements() > maxHoistedElements ||
          !value.getDefiningOp<arith::ConstantOp>() ||
          !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() ||
          !fill->hasOneUse())
        continue;
      auto reduction = dyn_cast<linalg::GenericOp>(*fill->user_begin());
      if (!reduction || reduction.getNumLoops() == 0 ||
          reduction.getNumReductionLoops() == 0)
        continue;
      // Over every loop, or across rows (the innermost loop parallel: a
      // column sum, whose thread-per-output kernel takes one fill's value
      // at most); a row reduction's fill folds into its own launch.
      SmallVector<utils::IteratorType> iterators =
          reduction.getIteratorTypesArray();
      if (reduction.getNumReductionLoops() != reduction.getNumLoops() &&
          iterators.back() != utils::IteratorType::parallel)
        continue;
      byType[type].push_back(fill);
    }
    for (auto &[type, fills] : byType) {
      if (fills.size() < 2)
        continue;
      auto shaped = cast<RankedTensorType>(type);
      for (size_t first = 0; first < fills.size(); first += maxOperands) {
        SmallVector<linalg::FillOp> group(
            fills.begin() + first,
            fills.begin() +
                std::min<size_t>(first + maxOperands, fills.size()));
        if (group.size() < 2)
          continue;
        rewriter.setInsertionPointToStart(&block);
        SmallVector<Value> outs;
        for (size_t i = 0; i < group.size(); ++i)
          outs.push_back(tensor::EmptyOp::create(rewriter, group[i].getLoc(),
                                                 shaped.getShape(),
                                                 shaped.getElementType()));
        auto identity = rewriter.getMultiDimIdentityMap(shaped.getRank());
        auto merged = linalg::GenericOp::create(
            rewriter, group.front().getLoc(),
            SmallVector<Type>(group.size(), type), ValueRange{}, outs,
            SmallVector<AffineMap>(group.size(), identity),
            SmallVector<utils::IteratorType>(shaped.getRank(),
                                             utils::IteratorType::parallel),
            [&](OpBuilder &b, Location loc, ValueRange) {
              SmallVector<Value> values;
              for (linalg::FillOp fill : group)
                values.push_back(b.clone(*fill.getInputs()[0].getDefiningOp())
                                     ->getResult(0));
              linalg::YieldOp::create(b, loc, values);
            });
        for (auto [i, fill] : llvm::enumerate(group))
          rewriter.replaceOp(fill, merged.getResult(i));
      }
    }
  }

  /// The candidates that read only the block's arguments (a step's casts
  /// of its f32 weights to bf16, interleaved with the GEMMs that read
  /// them, each read before the next cast comes; the maxima of FP8's amax
  /// histories), or, with every tensor of at most order-elements elements,
  /// also what such moved candidates compute (FP8's next scales from those
  /// maxima), where two or more share a domain and loop kinds (and what
  /// they read moves too): moved to the start of the block by level, with
  /// the constants, static `tensor.empty`s and fills of constants into them
  /// that they use, so that each such set merges into one generic there. Moved
  /// earlier, they compute the same values; their results live from the block's
  /// start (a weight's bf16 copy, which the backward pass reads again, lives
  /// through the peak anyway; the small ones hold a few KB).
  void hoistReadingArguments(Block &block) {
    // The ops `op` needs moved with it, what they use first; false if one
    // is anything but a constant, a static tensor.empty or a fill of a
    // constant into one (a reduction's start) defined in the block, or an
    // op of `chosen` (which moves too: `from` collects those).
    DenseSet<Operation *> chosen;
    std::function<bool(Operation *, SmallVectorImpl<Operation *> &,
                       SmallVectorImpl<Operation *> &)>
        movable = [&](Operation *op, SmallVectorImpl<Operation *> &with,
                      SmallVectorImpl<Operation *> &from) {
          WalkResult walk = op->walk([&](Operation *inner) {
            for (Value v : inner->getOperands()) {
              if (auto arg = dyn_cast<BlockArgument>(v)) {
                if (arg.getOwner() != &block &&
                    !op->isAncestor(arg.getOwner()->getParentOp()))
                  return WalkResult::interrupt();
                continue;
              }
              Operation *def = v.getDefiningOp();
              if (op->isAncestor(def))
                continue;
              if (def->getBlock() != &block)
                continue; // from outside the block: there before it
              if (chosen.contains(def)) {
                if (!llvm::is_contained(from, def))
                  from.push_back(def);
                continue;
              }
              if (llvm::is_contained(with, def))
                continue;
              auto empty = dyn_cast<tensor::EmptyOp>(def);
              auto fill = dyn_cast<linalg::FillOp>(def);
              if (fill && fill.hasPureTensorSemantics() &&
                  fill.getInputs()[0].getDefiningOp<arith::ConstantOp>() &&
                  fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()) {
                if (!movable(fill, with, from))
                  return WalkResult::interrupt();
              } else if (!isa<arith::ConstantOp>(def) &&
                         !(empty && empty.getType().hasStaticShape())) {
                return WalkResult::interrupt();
              }
              with.push_back(def);
            }
            return WalkResult::advance();
          });
          return !walk.wasInterrupted();
        };
    // A candidate that reads the block's arguments, constants, empties and
    // fills (any size), or also, with every tensor of at most
    // order-elements elements, what such candidates compute (an FP8
    // tensor's next scale from its amax history's maximum).
    struct Chosen {
      linalg::GenericOp op;
      SmallVector<Operation *> with, from;
      unsigned bucket;
      bool alive = true;
    };
    struct Bucket {
      SmallVector<int64_t> domain;
      SmallVector<utils::IteratorType> iterators;
      unsigned alive = 0;
    };
    SmallVector<Chosen> entries;
    SmallVector<Bucket> buckets;
    DenseMap<Operation *, unsigned> entryOf;
    for (auto op : block.getOps<linalg::GenericOp>()) {
      SmallVector<Operation *> with, from;
      if (!isCandidate(op) || !movable(op, with, from) ||
          (!from.empty() && !smallTensors(op)))
        continue;
      SmallVector<int64_t> domain = op.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      auto *bucket = llvm::find_if(buckets, [&](const Bucket &b) {
        return b.domain == domain && b.iterators == iterators;
      });
      if (bucket == buckets.end())
        bucket = &buckets.emplace_back(Bucket{domain, iterators, 0});
      ++bucket->alive;
      chosen.insert(op);
      entryOf[op] = entries.size();
      entries.push_back({op, std::move(with), std::move(from),
                         unsigned(bucket - buckets.begin())});
    }
    // Only where two or more of a domain move (they merge there), and only
    // with what they read moving too.
    for (bool changed = true; changed;) {
      changed = false;
      for (Chosen &e : entries) {
        if (!e.alive)
          continue;
        if (buckets[e.bucket].alive >= 2 &&
            llvm::all_of(e.from, [&](Operation *def) {
              return entries[entryOf.lookup(def)].alive;
            }))
          continue;
        e.alive = false;
        --buckets[e.bucket].alive;
        changed = true;
      }
    }
    // Each moved op goes right after the last one moved (the block's start
    // first), what it uses before it (one already there stays), by level:
    // first those that read no other moved op, then those that read only
    // those, and so on, in block order within a level, so that an FP8
    // scale's reader does not sit between two maxima.
    SmallVector<Operation *> alive;
    for (Chosen &e : entries)
      if (e.alive)
        alive.push_back(e.op);
    Operation *last = nullptr;
    auto moveUp = [&](Operation *op) {
      if (last && (op == last || op->isBeforeInBlock(last)))
        return;
      if (last)
        op->moveAfter(last);
      else if (op != &block.front())
        op->moveBefore(&block.front());
      last = op;
    };
    for (Operation *op : inLevelOrder(
             alive, [&](Operation *op, SmallVectorImpl<Operation *> &defs) {
               llvm::append_range(defs, entries[entryOf.lookup(op)].from);
             })) {
      for (Operation *def : entries[entryOf.lookup(op)].with)
        moveUp(def);
      moveUp(op);
    }
  }

  /// For each candidate, the nearest of the last kLookBack earlier
  /// candidates of its domain and loop kinds that reads an input the same
  /// way (a layer norm's dgamma and
  /// dbeta partial sums, both over dy): the readers of the earlier one's
  /// results that lie between the two, which would close its group before
  /// the later one comes (a split sum's second stage sits right after its
  /// first), move to just after the later one, in order, so that the two
  /// merge and read the shared input once. Only readers free of memory
  /// effects, read by nothing at or before the later candidate, whose
  /// tensor inputs hold at most `maxSunkElements` elements each (a second
  /// stage's 64 x 768 partial sums), move: moved later, each computes the
  /// same values; its inputs live a little longer. Otherwise nothing moves.
  void sinkReadersBetweenSharers(Block &block) {
    // The candidates by domain and loop kinds, in block order; each looks
    // back over the last few of its own (a layer norm's two sums are
    // neighbours), which keeps this linear in a step's thousands.
    constexpr size_t kLookBack = 8;
    std::map<std::pair<SmallVector<int64_t>, SmallVector<utils::IteratorType>>,
             SmallVector<linalg::GenericOp>>
        byDomain;
    auto small = [&](Operation *reader) {
      return tensorsAtMost(llvm::to_vector(reader->getOperandTypes()),
                           maxSunkElements);
    };
    SmallVector<linalg::GenericOp> candidates;
    for (auto op : block.getOps<linalg::GenericOp>())
      if (isCandidate(op))
        candidates.push_back(op);
    for (linalg::GenericOp op : candidates) {
      SmallVector<linalg::GenericOp> &same =
          byDomain[{op.getStaticLoopRanges(), op.getIteratorTypesArray()}];
      SmallVector<linalg::GenericOp, kLookBack> recent(
          ArrayRef<linalg::GenericOp>(same).take_back(kLookBack));
      same.push_back(op);
      for (linalg::GenericOp earlier : llvm::reverse(recent)) {
        if (!shareInput(earlier, op))
          continue;
        // The readers of `earlier` at or before `op`, in block order.
        SmallVector<Operation *> readers;
        bool movable = true;
        for (Operation *user : earlier->getUsers()) {
          Operation *reader = block.findAncestorOpInBlock(*user);
          if (!reader || reader == op) {
            movable = false;
            break;
          }
          if (!reader->isBeforeInBlock(op) ||
              llvm::is_contained(readers, reader))
            continue;
          movable = isMemoryEffectFree(reader) && small(reader) &&
                    llvm::none_of(reader->getUsers(), [&](Operation *u) {
                      Operation *a = block.findAncestorOpInBlock(*u);
                      return !a || a == op || a->isBeforeInBlock(op);
                    });
          if (!movable)
            break;
          readers.push_back(reader);
        }
        if (movable) {
          llvm::sort(readers, [](Operation *a, Operation *b) {
            return a->isBeforeInBlock(b);
          });
          Operation *after = op;
          for (Operation *reader : readers) {
            reader->moveAfter(after);
            after = reader;
          }
        }
        break;
      }
    }
  }

  /// Whether a group of `iterators` may grow to `operands` operands
  /// holding `elements` elements in all: up to max-operands, or, with every
  /// loop parallel, up to max-small-operands while they hold at most
  /// small-elements, where the launch costs more than the kernel's work (a
  /// merged reduction's threads would each fold every member's terms in
  /// turn: longer, on as few threads).
  bool withinLimits(ArrayRef<utils::IteratorType> iterators, int64_t operands,
                    int64_t elements) const {
    if (operands <= maxOperands)
      return true;
    return llvm::all_of(iterators,
                        [](utils::IteratorType t) {
                          return t == utils::IteratorType::parallel;
                        }) &&
           operands <= maxSmallOperands && elements <= smallElements;
  }

  /// Whether every tensor `op` reads or writes is static and holds at most
  /// order-elements elements.
  bool smallTensors(Operation *op) const {
    return tensorsAtMost(readTypes(op), orderElements);
  }

  /// Whether `op` has loops and every tensor it reads or writes is static
  /// and holds at most order-elements elements (order-updates moves it: its
  /// inputs and results live longer or shorter, a few KB each). Scalars
  /// (no loops) stay: moved, they merge worse where they go.
  bool isSmall(linalg::GenericOp op) const {
    return op.getNumLoops() != 0 && smallTensors(op);
  }

  /// Whether `op` has loops, only the block's terminator reads its results
  /// (an update of state the step returns), and every tensor it reads is
  /// static and holds at most order-elements elements or has the type of a
  /// result (the parameter's own: its gradient, moments, update direction).
  bool isStateUpdate(linalg::GenericOp op) const {
    Block *block = op->getBlock();
    if (op.getNumLoops() == 0 || op->getNumResults() == 0 ||
        llvm::any_of(op->getUsers(), [&](Operation *user) {
          return user->getBlock() != block ||
                 !user->hasTrait<OpTrait::ReturnLike>();
        }))
      return false;
    return llvm::all_of(readTypes(op), [&](Type t) {
      auto shaped = dyn_cast<RankedTensorType>(t);
      return !shaped || (shaped.hasStaticShape() &&
                         (shaped.getNumElements() <= orderElements ||
                          llvm::is_contained(op->getResultTypes(), t)));
    });
  }

  /// The optimizer's ops by level (see Passes.td, order-updates): the
  /// generics free of memory effects that are small candidates or state
  /// updates, whose loops are all parallel or all reductions, and whose
  /// results only such ops and the terminator read (the largest such set),
  /// move to the end of the block, before its terminator: first those that
  /// read none of the others, then those that read only those, and so on,
  /// in block order within a level. Each reads what it read, computed
  /// before it, and computes the same values. A reduction over some loops
  /// only (the second stage of a split bias or norm-weight gradient) stays:
  /// moved away, it would let its first stages, each reading a layer's
  /// activation-sized gradient, merge across layers, and those merged
  /// kernels then sit between the members of row groups, whose planned
  /// buffers they touch, so that some of those no longer form (BERT-large:
  /// 0.1 GB more a step).
  void orderByLevels(Block &block) {
    if (!block.mightHaveTerminator())
      return;
    Operation *terminator = block.getTerminator();
    if (!terminator->hasTrait<OpTrait::ReturnLike>())
      return;
    SmallVector<Operation *> candidates;
    for (auto op : block.getOps<linalg::GenericOp>())
      if (isMemoryEffectFree(op) &&
          (op.getNumParallelLoops() == op.getNumLoops() ||
           op.getNumReductionLoops() == op.getNumLoops()) &&
          ((isCandidate(op) && isSmall(op)) || isStateUpdate(op)))
        candidates.push_back(op);
    // Less the ops whose results something else reads: one sweep from the
    // last, since every reader comes after what it reads.
    DenseSet<Operation *> set(candidates.begin(), candidates.end());
    for (Operation *op : llvm::reverse(candidates))
      if (llvm::any_of(op->getUsers(), [&](Operation *user) {
            return user != terminator && !set.contains(user);
          }))
        set.erase(op);
    SmallVector<Operation *> moved;
    for (Operation *op : candidates)
      if (set.contains(op))
        moved.push_back(op);
    for (Operation *op : inLevelOrder(
             moved, [&](Operation *op, SmallVectorImpl<Operation *> &defs) {
               for (Value v : op->getOperands())
                 if (Operation *def = v.getDefiningOp();
                     def && set.contains(def))
                   defs.push_back(def);
             }))
      op->moveBefore(terminator);
  }

  /// Generics join the first open group of their domain; each group
  /// becomes one generic at its last member (see Passes.td).
  void fuseBlock(RewriterBase &rewriter, Block &block) {
    SmallVector<Group> groups;
    for (auto op : block.getOps<linalg::GenericOp>()) {
      if (!isCandidate(op))
        continue;
      SmallVector<int64_t> domain = op.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      // Its operands and the tensors its body reads from above, each a
      // parameter of the merged kernel.
      SmallVector<Type> reads = readTypes(op);
      int64_t operands = reads.size();
      int64_t elements = 0;
      for (Type t : reads) {
        auto type = dyn_cast<RankedTensorType>(t);
        elements += type && type.hasStaticShape() ? type.getNumElements() : 1;
      }
      Group *joined = nullptr;
      for (Group &g : groups) {
        if (!g.open || g.domain != domain || g.iterators != iterators)
          continue;
        // A group whose results something reads by now takes nothing
        // after: every later op comes after that reader too.
        if (llvm::any_of(g.members, [&](linalg::GenericOp m) {
              return readBefore(m, op);
            })) {
          g.open = false;
          continue;
        }
        if (!withinLimits(iterators, g.operands + operands,
                          g.elements + elements))
          continue;
        joined = &g;
        break;
      }
      if (!joined) {
        groups.push_back({domain, iterators, {}, 0, 0, true});
        joined = &groups.back();
      }
      joined->members.push_back(op);
      joined->operands += operands;
      joined->elements += elements;
    }
    for (Group &g : groups)
      if (g.members.size() > 1)
        merge(rewriter, g.members);
  }
};

} // namespace
