//===- Partition.cpp - one rank's program of a tensor-parallel model ------===//
//
// anvil-partition turns @forward, whose parameters carry the model's
// tensor-parallel layout (`anvil.sharding = {split_axis = "tp", split_dim,
// split_groups}`), into the program one rank of that axis runs. Where the
// upstream shard dialect covers the function, its propagation and
// partitioning do it (ShardDialectPartitioner below, over the models of
// ShardingModels.cpp); elsewhere anvil's rules (Partitioner), in three steps:
//
// 1. Propagation. Every value gets a sharding over the axis: replicated
//    (every rank holds all of it), or split (dimension d, in g groups, each
//    rank holding its block of every group). The parameters' layouts are
//    the seeds; each op's rule (ShardingRuleOpInterface, the rules in
//    dialects/.../AnvilSharding.cpp; elementwise ops share one) gives its
//    results' shardings from its operands', or fails naming the op and the
//    sharding it cannot take. An op whose operands are all replicated
//    computes replicated results, so only ops on the tensor-parallel path
//    need a rule. test/Transforms/partition-upstream.mlir shows where the
//    shard dialect stops and these rules take over.
// 2. Collectives, Megatron's way. A matmul contracting a split dimension
//    produces partial sums: an `anvil.all_reduce sum` follows it (its
//    gradient passes through). A replicated value that enters computation
//    producing split values (the input of a column-parallel matmul) goes
//    through `anvil.axis_copy`, whose gradient is the sum over the ranks.
//    Differentiating the partitioned program then gives each rank's
//    gradients with the communication of the backward pass included.
// 3. Types. Split values and parameters take their local shapes (the split
//    dimension divided by the ranks); shape attributes follow (the sizes of
//    an `anvil.split`). The parameters' `anvil.sharding` gains the whole
//    shape, which the manifest, initialization and checkpoints use.
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilEmit.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Transforms/ShardingModels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILPARTITIONPASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

using Spec = AxisSplit;

/// The split over `axis` that argument `i` of `fn` has yet to take: its
/// `anvil.sharding` on that axis, still without a whole shape.
std::optional<Spec> pendingSplit(func::FuncOp fn, unsigned i, StringRef axis) {
  auto s =
      fn.getArgAttrOfType<DictionaryAttr>(i, AnvilDialect::kShardingAttrName);
  auto splitAxis = s ? s.getAs<StringAttr>("split_axis") : StringAttr();
  if (!splitAxis || splitAxis.getValue() != axis || s.get("global_shape"))
    return std::nullopt;
  return Spec{s.getAs<IntegerAttr>("split_dim").getInt(),
              s.getAs<IntegerAttr>("split_groups").getInt()};
}

/// `anvil.sharding` of argument `i` with its whole shape recorded.
DictionaryAttr withWholeShape(func::FuncOp fn, unsigned i) {
  NamedAttrList attrs(
      fn.getArgAttrOfType<DictionaryAttr>(i, AnvilDialect::kShardingAttrName));
  Builder b(fn.getContext());
  attrs.set("global_shape",
            b.getDenseI64ArrayAttr(
                cast<RankedTensorType>(fn.getArgumentTypes()[i]).getShape()));
  return attrs.getDictionary(fn.getContext());
}

/// How errors name argument `i`: its parameter's name, or its number.
std::string argumentName(func::FuncOp fn, unsigned i) {
  if (auto p = fn.getArgAttrOfType<ParamAttr>(i, AnvilDialect::kParamAttrName))
    return "'" + p.getName().str() + "'";
  return "argument #" + std::to_string(i);
}
using Rule = ShardingRule;

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

class Partitioner {
public:
  Partitioner(func::FuncOp fn, StringRef axis, int64_t ranks,
              bool sequenceParallel, int64_t seqDim)
      : fn(fn), axis(axis), ranks(ranks), sequenceParallel(sequenceParallel),
        seqDim(seqDim) {}

  LogicalResult run();

private:
  Spec of(Value v) const { return specs.lookup(v); }
  FailureOr<Rule> ruleFor(Operation *op);
  /// `ids` (an integer tensor of whole-tensor indices along a dimension of
  /// `size` split over the axis) minus this rank's first index.
  Value localIndices(OpBuilder &b, Location loc, Value ids, int64_t size);
  FailureOr<SmallVector<Value>> vocabParallelEmbedding(OpBuilder &b,
                                                       EmbeddingOp op);
  FailureOr<SmallVector<Value>> vocabParallelCrossEntropy(OpBuilder &b,
                                                          CrossEntropyOp op);
  FailureOr<SmallVector<Value>> splitDropout(OpBuilder &b, DropoutOp op,
                                             Spec split);
  /// The sharding of the sum over the ranks of partial values like `v`:
  /// replicated, or split on the sequence under sequence parallelism.
  Spec sumSpec(Value v) const {
    if (sequenceParallel && rankOf(v) > seqDim + 1)
      return Spec{seqDim, 1};
    return Spec{};
  }
  /// The sum over the ranks of `partial`: an all-reduce, or under sequence
  /// parallelism a reduce-scatter along the sequence (each rank keeps its
  /// part of the sequence).
  FailureOr<Value> sumOverRanks(OpBuilder &b, Operation *op, Value partial);
  /// `x`, split on `dim`, all-gathered (whole on every rank).
  Value gatherAlong(OpBuilder &b, Location loc, Value x, int64_t dim);
  /// This rank's block of the replicated `x` along `dim`.
  Value localBlock(OpBuilder &b, Location loc, Value x, int64_t dim);
  InFlightDiagnostic fail(Operation *op, const Twine &why) {
    return op->emitError("anvil-partition: '")
           << op->getName() << "' over mesh axis '" << axis << "' (" << ranks
           << " ranks): " << why;
  }
  /// The local type of `v` under `s`.
  Type localType(Type type, Spec s) const {
    if (!s.split())
      return type;
    auto t = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(t.getShape());
    shape[s.dim] /= ranks;
    return t.clone(shape);
  }

  func::FuncOp fn;
  std::string axis;
  int64_t ranks;
  bool sequenceParallel;
  int64_t seqDim;
  DenseMap<Value, Spec> specs;
  /// A split value gathered, or a replicated one entering split
  /// computation, once for all its users (the q, k and v projections of one
  /// input share its all-gather, and in the backward pass one collective).
  DenseMap<std::pair<Value, int64_t>, Value> gathered;
  DenseMap<Value, Value> copied;
};

FailureOr<Rule> Partitioner::ruleFor(Operation *op) {
  SmallVector<Spec> in;
  for (Value v : op->getOperands())
    in.push_back(of(v));
  ShardingContext ctx{ranks, sequenceParallel, seqDim};
  std::optional<Rule> rule;
  if (auto withRule = dyn_cast<ShardingRuleOpInterface>(op))
    rule = withRule.getShardingRule(in, ctx);
  else if (op->hasTrait<OpTrait::Elementwise>() || isa<CastOp>(op))
    rule = getElementwiseShardingRule(op, in);
  if (!rule) {
    std::string d;
    for (auto [i, s] : llvm::enumerate(in))
      d += (i ? ", " : "") + std::string("#") + std::to_string(i) + " " +
           s.describe();
    return fail(op, "no tensor-parallel rule for operands " + d), failure();
  }
  if (!rule->error.empty())
    return fail(op, rule->error), failure();
  return *rule;
}

/// Moves dimension `dim` of `x` to the front (or back): the collectives
/// work on blocks of dimension 0.
static Value swapToFront(OpBuilder &b, Location loc, Value x, int64_t dim) {
  if (dim == 0)
    return x;
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rankOf(x)));
  std::swap(perm[0], perm[dim]);
  return TransposeOp::create(b, loc, x, perm);
}

FailureOr<Value> Partitioner::sumOverRanks(OpBuilder &b, Operation *op,
                                           Value partial) {
  Location loc = op->getLoc();
  Spec s = sumSpec(partial);
  if (!s.split())
    return Value(AllReduceOp::create(b, loc, CollectiveOp::sum, partial, axis));
  auto type = cast<RankedTensorType>(partial.getType());
  if (type.getDimSize(s.dim) % ranks != 0)
    return fail(op, "sequence parallelism: the sequence (dimension " +
                        Twine(s.dim) + " of its result, " +
                        Twine(type.getDimSize(s.dim)) +
                        ") does not divide by the axis's ranks"),
           failure();
  Value front = swapToFront(b, loc, partial, s.dim);
  auto frontType = cast<RankedTensorType>(front.getType());
  SmallVector<int64_t> shape(frontType.getShape());
  shape[0] /= ranks;
  Value mine = ReduceScatterOp::create(b, loc, frontType.clone(shape),
                                       CollectiveOp::sum, front, axis);
  Value back = swapToFront(b, loc, mine, s.dim);
  specs[back] = s;
  return back;
}

Value Partitioner::gatherAlong(OpBuilder &b, Location loc, Value x,
                               int64_t dim) {
  Value front = swapToFront(b, loc, x, dim);
  auto frontType = cast<RankedTensorType>(front.getType());
  SmallVector<int64_t> shape(frontType.getShape());
  shape[0] *= ranks;
  Value all = AllGatherOp::create(b, loc, frontType.clone(shape), front, axis);
  return swapToFront(b, loc, all, dim);
}

/// This rank's block of `x` (the same on every rank of `axis`, `ranks`
/// ranks) along `dim`: a gather of its rows, whose gradient puts the
/// rank's block back in place.
static Value blockOf(OpBuilder &b, Location loc, Value x, int64_t dim,
                     StringRef axis, int64_t ranks) {
  Emit e{b, loc};
  auto type = cast<RankedTensorType>(x.getType());
  int64_t block = type.getDimSize(dim) / ranks;
  auto i64 = b.getI64Type();
  auto scalar = RankedTensorType::get({}, i64);
  auto indexType = RankedTensorType::get({block}, i64);
  SmallVector<Attribute> iota;
  for (int64_t i = 0; i < block; ++i)
    iota.push_back(b.getI64IntegerAttr(i));
  Value first = e.mul(AxisIndexOp::create(b, loc, scalar, axis),
                      e.splat(scalar, static_cast<double>(block)));
  Value indices =
      e.add(ConstantOp::create(b, loc, indexType,
                               DenseElementsAttr::get(indexType, iota)),
            e.broadcast(first, indexType, {}));
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = block;
  return GatherOp::create(b, loc, type.clone(shape), x, indices, dim);
}

Value Partitioner::localBlock(OpBuilder &b, Location loc, Value x,
                              int64_t dim) {
  return blockOf(b, loc, x, dim, axis, ranks);
}

Value Partitioner::localIndices(OpBuilder &b, Location loc, Value ids,
                                int64_t size) {
  // An input of indices keeps its whole range for the manifest (which
  // would otherwise infer it from the split table or classes).
  if (auto arg = dyn_cast<BlockArgument>(ids);
      arg && arg.getOwner()->getParentOp() == fn)
    if (auto in = fn.getArgAttrOfType<InputAttr>(arg.getArgNumber(),
                                                 AnvilDialect::kInputAttrName);
        in && !in.getRange())
      fn.setArgAttr(arg.getArgNumber(), AnvilDialect::kInputAttrName,
                    InputAttr::get(fn.getContext(), in.getName(), size));
  Emit e{b, loc};
  auto type = e.typeOf(ids);
  auto scalar = RankedTensorType::get({}, b.getI64Type());
  Value first = e.mul(AxisIndexOp::create(b, loc, scalar, axis),
                      e.splat(scalar, static_cast<double>(size / ranks)));
  auto scalarOfIds = scalar.clone(type.getElementType());
  if (scalarOfIds != scalar)
    first = CastOp::create(b, loc, scalarOfIds, first);
  return e.sub(ids, e.broadcast(first, type, {}));
}

/// Megatron's vocabulary-parallel embedding: rank r holds rows [r V/n,
/// (r + 1) V/n) of the table; it looks up the indices in its range (the
/// others read row 0 and are zeroed), and the ranks' lookups sum.
FailureOr<SmallVector<Value>>
Partitioner::vocabParallelEmbedding(OpBuilder &b, EmbeddingOp op) {
  Location loc = op.getLoc();
  Emit e{b, loc};
  Value table = op.getTable(), ids = op.getIndices();
  int64_t rows = cast<RankedTensorType>(table.getType()).getDimSize(0);
  auto idsType = e.typeOf(ids);
  Value local = localIndices(b, loc, ids, rows * ranks);
  // 0 <= local < rows: (local >= 0) ? (local < rows) : false.
  Value nonNegative = e.cmp(ComparisonDirection::ge, local, e.like(local, 0));
  Value inRange = e.select(nonNegative,
                           e.cmp(ComparisonDirection::lt, local,
                                 e.like(local, static_cast<double>(rows))),
                           nonNegative);
  Value safe = e.select(inRange, local, e.like(local, 0));
  auto resultType = cast<RankedTensorType>(op.getType());
  Value rowsOut = EmbeddingOp::create(b, loc, resultType, table, safe);
  SmallVector<int64_t> dims =
      llvm::to_vector(llvm::seq<int64_t>(0, idsType.getRank()));
  Value mask = e.broadcast(
      CastOp::create(b, loc, idsType.clone(resultType.getElementType()),
                     inRange),
      resultType, dims);
  FailureOr<Value> sum = sumOverRanks(b, op, e.mul(rowsOut, mask));
  if (failed(sum))
    return failure();
  return SmallVector<Value>{*sum};
}

/// Megatron's vocabulary-parallel cross-entropy on logits whose classes are
/// split over the ranks: the maximum, the sum of exponentials and the
/// target's logit each reduce over the ranks, so no rank gathers the
/// logits. The maximum only stabilizes (no gradient flows through it).
FailureOr<SmallVector<Value>>
Partitioner::vocabParallelCrossEntropy(OpBuilder &b, CrossEntropyOp op) {
  Location loc = op.getLoc();
  Emit e{b, loc};
  Value logits = op.getLogits(), labels = op.getLabels();
  auto type = e.typeOf(logits);
  int64_t last = type.getRank() - 1, classes = type.getDimSize(last);
  auto rowsType = cast<RankedTensorType>(labels.getType())
                      .clone(type.getElementType()); // (B, T) in float
  SmallVector<int64_t> rowDims = llvm::to_vector(llvm::seq<int64_t>(0, last));
  Value localMax = StopGradientOp::create(
      b, loc, ReduceMaxOp::create(b, loc, logits, {last}, false));
  Value max = StopGradientOp::create(
      b, loc, AllReduceOp::create(b, loc, CollectiveOp::max, localMax, axis));
  Value z = e.sub(logits, e.broadcast(max, type, rowDims));
  Value sumExp =
      AllReduceOp::create(b, loc, CollectiveOp::sum,
                          e.sum(ExpOp::create(b, loc, z), {last}, false), axis);
  // The target's logit: the class of this rank's range equal to the label.
  auto labelType = cast<RankedTensorType>(labels.getType());
  Value local = localIndices(b, loc, labels, classes * ranks);
  auto iotaType = RankedTensorType::get({classes}, labelType.getElementType());
  SmallVector<Attribute> iota;
  for (int64_t c = 0; c < classes; ++c)
    iota.push_back(b.getIntegerAttr(labelType.getElementType(), c));
  Value classIds = ConstantOp::create(b, loc, iotaType,
                                      DenseElementsAttr::get(iotaType, iota));
  auto wideLabels = type.clone(labelType.getElementType());
  Value hit =
      e.cmp(ComparisonDirection::eq, e.broadcast(classIds, wideLabels, {last}),
            e.broadcast(local, wideLabels, rowDims));
  Value target = AllReduceOp::create(
      b, loc, CollectiveOp::sum,
      e.sum(e.mul(z, CastOp::create(b, loc, type, hit)), {last}, false), axis);
  Value perRow = e.sub(LogOp::create(b, loc, sumExp), target);
  // Labels equal to the ignore index count for nothing.
  // (I64Attr's getter is unsigned: the default of -100 wraps.)
  auto ignore = static_cast<int64_t>(op.getIgnoreIndex());
  Value valid =
      CastOp::create(b, loc, rowsType,
                     e.cmp(ComparisonDirection::ne, labels,
                           e.like(labels, static_cast<double>(ignore))));
  perRow = e.mul(perRow, valid);
  auto resultType = cast<RankedTensorType>(op.getType());
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, last));
  Value loss;
  switch (op.getReduction()) {
  case Reduction::none:
    loss = perRow;
    break;
  case Reduction::sum:
    loss = e.sum(perRow, all, false);
    break;
  case Reduction::mean:
    loss = e.div(e.sum(perRow, all, false), e.sum(valid, all, false));
    break;
  }
  if (loss.getType() != resultType)
    return fail(
               op, "the vocabulary-parallel loss has type " +
                       [&] {
                         std::string t;
                         llvm::raw_string_ostream os(t);
                         os << loss.getType();
                         return t;
                       }()),
           failure();
  return SmallVector<Value>{loss};
}

/// Dropout of a split value: the mask of the whole tensor (the dropout of
/// a tensor of ones, as one process draws it), the rank's block of it, and
/// the product. The mask takes no gradient, so the backward pass scales by
/// the same block.
FailureOr<SmallVector<Value>>
Partitioner::splitDropout(OpBuilder &b, DropoutOp op, Spec split) {
  Location loc = op.getLoc();
  Emit e{b, loc};
  // (The op still has the whole tensor's type; its operand is local.)
  Value ones = e.splat(op.getType(), 1.0);
  Value mask = DropoutOp::create(b, loc, ones, op.getSeed(), op.getRate());
  Value mine = localBlock(b, loc, mask, split.dim);
  return SmallVector<Value>{e.mul(op.getOperand(), mine)};
}

LogicalResult Partitioner::run() {
  MLIRContext *ctx = fn.getContext();
  OpBuilder b(ctx);
  // 1. The parameters' layouts.
  SmallVector<Type> argTypes(fn.getArgumentTypes());
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    std::optional<Spec> split = pendingSplit(fn, i, axis);
    if (!split)
      continue;
    Spec s = *split;
    auto type = cast<RankedTensorType>(argTypes[i]);
    int64_t size = type.getDimSize(s.dim);
    if (size % (s.groups * ranks) != 0)
      return fn.emitError("anvil-partition: dimension ")
             << s.dim << " of " << argumentName(fn, i) << " (" << size
             << (s.groups > 1 ? " in " + std::to_string(s.groups) + " groups"
                              : std::string())
             << ") does not divide by mesh axis '" << axis << "' of " << ranks
             << " ranks";
    specs[fn.getArgument(i)] = s;
    fn.setArgAttr(i, AnvilDialect::kShardingAttrName, withWholeShape(fn, i));
    argTypes[i] = localType(type, s);
    fn.getArgument(i).setType(argTypes[i]);
  }
  fn.setType(b.getFunctionType(argTypes, fn.getResultTypes()));

  // 2-3. Each op in order: its rule, collectives, local types.
  for (Operation &opRef :
       llvm::make_early_inc_range(fn.getBody().front().without_terminator())) {
    Operation *op = &opRef;
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return of(v).split(); }))
      continue;
    if (op->getNumRegions() != 0)
      return fail(op, "ops with regions are not partitioned");
    FailureOr<Rule> rule = ruleFor(op);
    if (failed(rule))
      return failure();
    b.setInsertionPoint(op);
    if (rule->expansion != Rule::Expansion::None) {
      FailureOr<SmallVector<Value>> values;
      switch (rule->expansion) {
      case Rule::Expansion::VocabParallelEmbedding:
        values = vocabParallelEmbedding(b, cast<EmbeddingOp>(op));
        break;
      case Rule::Expansion::VocabParallelCrossEntropy:
        values = vocabParallelCrossEntropy(b, cast<CrossEntropyOp>(op));
        break;
      case Rule::Expansion::SplitDropout:
        values = splitDropout(b, cast<DropoutOp>(op), rule->results[0]);
        break;
      case Rule::Expansion::None:
        break;
      }
      if (failed(values))
        return failure();
      for (auto [i, v] : llvm::enumerate(*values))
        specs[v] = i < rule->results.size() ? rule->results[i] : Spec{};
      op->replaceAllUsesWith(*values);
      op->erase();
      continue;
    }
    // Replicated operands of an op with split results feed computation
    // that differs by rank: their gradients sum over the ranks.
    bool splitResults =
        llvm::any_of(rule->results, [](Spec s) { return s.split(); });
    for (unsigned i = 0, e = op->getNumOperands(); i < e; ++i) {
      Value v = op->getOperand(i);
      if (llvm::is_contained(rule->gathers, i)) {
        Value &all = gathered[{v, of(v).dim}];
        if (!all)
          all = gatherAlong(b, op->getLoc(), v, of(v).dim);
        op->setOperand(i, all);
        continue;
      }
      bool isFloat =
          isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
      if (of(v).split() || !splitResults || !isFloat)
        continue;
      if (llvm::is_contained(rule->blocks, i)) {
        int64_t dim = rule->results[0].dim;
        // A broadcast (a bias, a position table) is cut before it
        // broadcasts: its operand is copied, and blocked where it maps to
        // the split dimension, then broadcast to the local shape.
        if (auto bc = v.getDefiningOp<BroadcastOp>()) {
          ArrayRef<int64_t> dims = bc.getDimensions();
          Value small =
              AxisCopyOp::create(b, op->getLoc(), bc.getOperand(), axis);
          if (const int64_t *at = llvm::find(dims, dim); at != dims.end())
            small = localBlock(b, op->getLoc(), small, at - dims.begin());
          op->setOperand(
              i, BroadcastOp::create(b, op->getLoc(),
                                     localType(v.getType(), Spec{dim, 1}),
                                     small, dims));
          continue;
        }
        v = AxisCopyOp::create(b, op->getLoc(), v, axis);
        v = localBlock(b, op->getLoc(), v, dim);
      } else {
        Value &copy = copied[v];
        if (!copy)
          copy = AxisCopyOp::create(b, op->getLoc(), v, axis);
        v = copy;
      }
      op->setOperand(i, v);
    }
    for (auto [result, s] : llvm::zip(op->getResults(), rule->results)) {
      result.setType(localType(result.getType(), s));
      specs[result] = s;
    }
    if (auto split = dyn_cast<SplitOp>(op);
        split && rule->results[0].split() &&
        static_cast<int64_t>(split.getDim()) == rule->results[0].dim) {
      SmallVector<int64_t> sizes;
      for (int64_t n : split.getSizes())
        sizes.push_back(n / ranks);
      split.setSizes(sizes);
    }
    if (rule->partial) {
      b.setInsertionPointAfter(op);
      for (Value result : op->getResults()) {
        // The uses to redirect are the ones before the sum's own ops.
        SmallPtrSet<Operation *, 8> users(result.getUsers().begin(),
                                          result.getUsers().end());
        FailureOr<Value> sum = sumOverRanks(b, op, result);
        if (failed(sum))
          return failure();
        result.replaceUsesWithIf(*sum, [&](OpOperand &use) {
          return users.contains(use.getOwner());
        });
      }
    }
  }
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (of(v).split())
      return fail(ret, "result #" + Twine(i) + " is " + of(v).describe() +
                           "; results must be replicated");
  return success();
}

/// anvil-partition through the upstream shard dialect: the parameters'
/// splits become `shard.shard` annotations, `sharding-propagation` and
/// `shard-partition` make one rank's program over the models of
/// ShardingModels.cpp, and what they leave of the shard dialect becomes
/// anvil's: `shard.all_reduce` an `anvil.all_reduce`, `shard.all_slice` the
/// rank's block of an axis copy. Replicated values entering split
/// computation go through `anvil.axis_copy`, as in anvil's rules, so that
/// differentiation gives the backward pass its sums. The work is done on a
/// copy of the function, which replaces it only when every step succeeds.
class ShardDialectPartitioner {
public:
  using RunPipeline = function_ref<LogicalResult(OpPassManager &, Operation *)>;

  ShardDialectPartitioner(ModuleOp module, func::FuncOp fn, StringRef axis,
                          int64_t ranks, RunPipeline runPipeline)
      : module(module), fn(fn), axis(axis), ranks(ranks),
        runPipeline(runPipeline) {}

  /// Partitions `fn`; on failure `fn` is as it was and `whyNot` says why
  /// the shard dialect does not cover it.
  LogicalResult run(std::string &whyNot);

private:
  /// Why `fn` is outside what the shard dialect covers, before trying.
  std::string precheck();
  LogicalResult annotate(func::FuncOp copy, std::string &whyNot);
  LogicalResult markCopiesAndCheck(func::FuncOp copy, std::string &whyNot);
  void normalize(func::FuncOp copy);
  /// What shard-partition takes for granted (it asserts, in debug builds
  /// only): every ranked argument's one use and every result's is a
  /// `shard.shard`, and every operand comes from one.
  LogicalResult checkAnnotated(func::FuncOp copy, std::string &whyNot);
  LogicalResult toAnvil(func::FuncOp copy, std::string &whyNot);
  Value sharding(OpBuilder &b, Location loc, int64_t rank,
                 std::optional<int64_t> splitDim);
  static std::string where(Operation *op) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "'" << op->getName() << "' at " << op->getLoc();
    return s;
  }

  ModuleOp module;
  func::FuncOp fn;
  std::string axis;
  int64_t ranks;
  RunPipeline runPipeline;
  StringAttr grid;
  /// The split parameters' `anvil.sharding` with their whole shapes.
  SmallVector<std::pair<unsigned, DictionaryAttr>> wholeShapes;
};

/// The attribute that carries, from propagation through partitioning, the
/// operands of an op that enter its split computation replicated.
constexpr StringLiteral kCopyOperands = "__anvil_partition_copy_operands";

/// The sharding of `v` as its users see it: that of the `shard.shard` it
/// comes from, or replicated.
static bool isSplit(Value v) {
  auto shardOp = v.getDefiningOp<shard::ShardOp>();
  return shardOp &&
         !shard::isFullReplication(shard::Sharding(shardOp.getSharding()));
}

/// Whether `result` is annotated split by its producer.
static bool isSplitResult(Value result) {
  return llvm::any_of(result.getUsers(), [](Operation *user) {
    auto shardOp = dyn_cast<shard::ShardOp>(user);
    return shardOp && !shardOp.getAnnotateForUsers() &&
           !shard::isFullReplication(shard::Sharding(shardOp.getSharding()));
  });
}

static bool isShardable(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.getRank() > 0;
}

std::string ShardDialectPartitioner::precheck() {
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    std::optional<Spec> split = pendingSplit(fn, i, axis);
    if (!split)
      continue;
    std::string name = argumentName(fn, i);
    if (split->groups > 1)
      return name + " splits dimension " + std::to_string(split->dim) + " in " +
             std::to_string(split->groups) +
             " groups, which a shard.sharding (even blocks) cannot express";
    if (cast<RankedTensorType>(fn.getArgumentTypes()[i])
                .getDimSize(split->dim) %
            ranks !=
        0)
      return "dimension " + std::to_string(split->dim) + " of " + name +
             " does not divide by the axis's ranks";
    for (Operation *user : fn.getArgument(i).getUsers())
      if (!hasShardLoopModel(user))
        return where(user) + " takes " + name +
               " split, and the shard dialect has no loops for it";
  }
  return {};
}

Value ShardDialectPartitioner::sharding(OpBuilder &b, Location loc,
                                        int64_t rank,
                                        std::optional<int64_t> splitDim) {
  SmallVector<shard::GridAxesAttr> axes(
      splitDim ? *splitDim + 1 : 1,
      shard::GridAxesAttr::get(b.getContext(), ArrayRef<int16_t>{}));
  if (splitDim)
    axes[*splitDim] = shard::GridAxesAttr::get(b.getContext(), {int16_t(0)});
  return shard::ShardingOp::create(b, loc, FlatSymbolRefAttr::get(grid), axes);
}

LogicalResult ShardDialectPartitioner::annotate(func::FuncOp copy,
                                                std::string &whyNot) {
  MLIRContext *ctx = copy.getContext();
  OpBuilder b(ctx);
  Block &body = copy.getBody().front();
  b.setInsertionPointToStart(&body);
  for (BlockArgument arg : copy.getArguments()) {
    if (!isShardable(arg.getType()))
      continue;
    unsigned i = arg.getArgNumber();
    std::optional<int64_t> dim;
    if (std::optional<Spec> split = pendingSplit(copy, i, axis)) {
      dim = split->dim;
      // (Recorded once the argument has its local type.)
      wholeShapes.push_back({i, withWholeShape(copy, i)});
    }
    Value s = sharding(b, arg.getLoc(),
                       cast<RankedTensorType>(arg.getType()).getRank(), dim);
    auto annotated = shard::ShardOp::create(b, arg.getLoc(), arg, s);
    arg.replaceAllUsesExcept(annotated, annotated);
  }
  // Results are whole on every rank.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  for (OpOperand &result : ret->getOpOperands()) {
    if (!isShardable(result.get().getType()))
      continue;
    Value s = sharding(b, ret.getLoc(), 0, std::nullopt);
    result.set(shard::ShardOp::create(b, ret.getLoc(), result.get(), s,
                                      /*annotate_for_users=*/true));
  }
  (void)whyNot;
  return success();
}

LogicalResult ShardDialectPartitioner::markCopiesAndCheck(func::FuncOp copy,
                                                          std::string &whyNot) {
  Builder b(copy.getContext());
  for (Operation &op : copy.getBody().front().without_terminator()) {
    if (isa<shard::ShardOp, shard::ShardingOp>(op))
      continue;
    bool splitResults = llvm::any_of(op.getResults(), isSplitResult);
    bool splitOperands = llvm::any_of(op.getOperands(), isSplit);
    if ((splitResults || splitOperands) && !hasShardLoopModel(&op)) {
      whyNot = where(&op) + " would take split values, and the shard "
                            "dialect has no loops for it";
      return failure();
    }
    // A broadcast that expands a dimension of size 1 reads element 0 of
    // it for every index: its model maps that dimension to the loop, which
    // a split would cut to nothing.
    if (auto bc = dyn_cast<BroadcastOp>(op); bc && isSplit(bc.getOperand())) {
      auto annotated = bc.getOperand().getDefiningOp<shard::ShardOp>();
      ArrayRef<shard::GridAxesAttr> axes =
          shard::Sharding(annotated.getSharding()).getSplitAxes();
      auto in = cast<RankedTensorType>(bc.getOperand().getType());
      for (auto [d, split] : llvm::enumerate(axes))
        if (!split.empty() && in.getDimSize(d) == 1 &&
            bc.getType().getDimSize(bc.getDimensions()[d]) != 1) {
          whyNot = where(&op) + " expands dimension " + std::to_string(d) +
                   " of size 1, which the shard dialect would split";
          return failure();
        }
    }
    if (!splitResults)
      continue;
    SmallVector<int64_t> copies;
    for (auto [i, v] : llvm::enumerate(op.getOperands())) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (t && isa<FloatType>(t.getElementType()) && !isSplit(v))
        copies.push_back(i);
    }
    if (!copies.empty())
      op.setAttr(kCopyOperands, b.getDenseI64ArrayAttr(copies));
  }
  return success();
}

void ShardDialectPartitioner::normalize(func::FuncOp copy) {
  // shard-partition reads a value's sharding from its one `shard.shard`
  // user and an operand's from its defining `shard.shard`: values that
  // propagation left alone are replicated.
  OpBuilder b(copy.getContext());
  for (Operation &op : llvm::make_early_inc_range(
           copy.getBody().front().without_terminator())) {
    if (isa<shard::ShardOp, shard::ShardingOp>(op))
      continue;
    for (Value result : op.getResults()) {
      if (!isShardable(result.getType()) || result.use_empty())
        continue;
      shard::ShardOp producer;
      for (Operation *user : result.getUsers())
        if (auto s = dyn_cast<shard::ShardOp>(user);
            s && !s.getAnnotateForUsers())
          producer = s;
      if (!producer) {
        b.setInsertionPointAfter(&op);
        Value s = sharding(b, op.getLoc(), 0, std::nullopt);
        producer = shard::ShardOp::create(b, op.getLoc(), result, s);
      }
      result.replaceAllUsesExcept(producer, producer);
    }
  }
}

LogicalResult ShardDialectPartitioner::checkAnnotated(func::FuncOp copy,
                                                      std::string &whyNot) {
  auto annotatedBy = [](Value v) {
    return v.hasOneUse() && isa<shard::ShardOp>(*v.getUsers().begin()) &&
           !cast<shard::ShardOp>(*v.getUsers().begin()).getAnnotateForUsers();
  };
  for (BlockArgument arg : copy.getArguments())
    if (isShardable(arg.getType()) && !annotatedBy(arg)) {
      whyNot = "argument #" + std::to_string(arg.getArgNumber()) +
               " is not annotated once";
      return failure();
    }
  for (Operation &op : copy.getBody().front()) {
    if (isa<shard::ShardOp, shard::ShardingOp>(op))
      continue;
    for (Value v : op.getOperands())
      if (isShardable(v.getType()) && !v.getDefiningOp<shard::ShardOp>()) {
        whyNot = where(&op) + " has an operand without a sharding";
        return failure();
      }
    for (Value v : op.getResults())
      if (isShardable(v.getType()) && !annotatedBy(v)) {
        whyNot = where(&op) + " has a result not annotated once";
        return failure();
      }
  }
  return success();
}

LogicalResult ShardDialectPartitioner::toAnvil(func::FuncOp copy,
                                               std::string &whyNot) {
  OpBuilder b(copy.getContext());
  for (Operation &op : llvm::make_early_inc_range(
           copy.getBody().front().without_terminator())) {
    b.setInsertionPoint(&op);
    if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
      // Partial sums of float values (a split contraction's): anvil's
      // all_reduce sum, whose gradient passes through.
      auto type = dyn_cast<RankedTensorType>(reduce.getType());
      if (reduce.getReduction() != shard::ReductionKind::Sum || !type ||
          !isa<FloatType>(type.getElementType()) ||
          reduce.getInput().getType() != reduce.getType()) {
        whyNot = where(&op) + " is not a sum of float partial values";
        return failure();
      }
      op.replaceAllUsesWith(AllReduceOp::create(b, op.getLoc(),
                                                CollectiveOp::sum,
                                                reduce.getInput(), axis)
                                ->getResults());
      op.erase();
      continue;
    }
    if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
      Value whole = slice.getInput();
      if (isa<FloatType>(
              cast<RankedTensorType>(whole.getType()).getElementType()))
        whole = AxisCopyOp::create(b, op.getLoc(), whole, axis);
      op.replaceAllUsesWith(ValueRange{
          blockOf(b, op.getLoc(), whole, slice.getSliceAxis().getSExtValue(),
                  axis, ranks)});
      op.erase();
      continue;
    }
    if (!isa_and_nonnull<AnvilDialect>(op.getDialect())) {
      whyNot = "the shard dialect's partitioning made " + where(&op) +
               (isa<shard::AllGatherOp>(op)
                    ? ", which gathers a split value whole; anvil's rules "
                      "keep such values split"
                    : ", which anvil does not lower");
      return failure();
    }
  }
  // The replicated operands of split computation.
  DenseMap<Value, Value> copied;
  for (Operation &op : copy.getBody().front().without_terminator()) {
    auto copies = op.getAttrOfType<DenseI64ArrayAttr>(kCopyOperands);
    if (!copies)
      continue;
    op.removeAttr(kCopyOperands);
    for (int64_t i : copies.asArrayRef()) {
      Value v = op.getOperand(i);
      Value &c = copied[v];
      if (!c) {
        b.setInsertionPointAfterValue(v);
        c = AxisCopyOp::create(b, op.getLoc(), v, axis);
      }
      op.setOperand(i, c);
    }
  }
  return success();
}

LogicalResult ShardDialectPartitioner::run(std::string &whyNot) {
  whyNot = precheck();
  if (!whyNot.empty())
    return failure();
  MLIRContext *ctx = module.getContext();
  // Errors of the upstream passes say why they do not apply; they are
  // kept, not reported.
  ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && whyNot.empty()) {
      llvm::raw_string_ostream os(whyNot);
      os << d.getLocation() << ": " << d.str();
    }
    return success();
  });
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  SymbolTable symbols(module);
  std::string gridName = "anvil_" + axis;
  for (int n = 0; symbols.lookup(gridName); ++n)
    gridName = "anvil_" + axis + "_" + std::to_string(n);
  auto gridOp = shard::GridOp::create(b, fn.getLoc(), gridName, {ranks});
  grid = gridOp.getSymNameAttr();
  b.setInsertionPointAfter(fn);
  auto copy = cast<func::FuncOp>(b.clone(*fn));
  std::string copyName = gridName + "_partitioned";
  for (int n = 0; symbols.lookup(copyName); ++n)
    copyName = gridName + "_partitioned_" + std::to_string(n);
  copy.setName(copyName);
  auto cleanUp = [&] {
    if (whyNot.empty())
      whyNot = "the shard dialect's passes failed";
    copy.erase();
    gridOp.erase();
    return failure();
  };
  // Unused values get no annotation from propagation, which
  // shard-partition needs on every value. (Users before producers.)
  SmallVector<Operation *> ops;
  for (Operation &op : copy.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();

  OpPassManager propagate(func::FuncOp::getOperationName());
  propagate.addPass(shard::createShardingPropagation());
  OpPassManager partition(func::FuncOp::getOperationName());
  partition.addPass(shard::createPartition());
  if (failed(annotate(copy, whyNot)) || failed(runPipeline(propagate, copy)) ||
      failed(markCopiesAndCheck(copy, whyNot)))
    return cleanUp();
  normalize(copy);
  if (failed(checkAnnotated(copy, whyNot)) ||
      failed(runPipeline(partition, copy)) || failed(toAnvil(copy, whyNot)) ||
      failed(verify(copy)))
    return cleanUp();
  gridOp.erase();
  for (auto [i, sharding] : wholeShapes)
    copy.setArgAttr(i, AnvilDialect::kShardingAttrName, sharding);
  copy.setName(fn.getName());
  fn.erase();
  fn = copy;
  copy->setAttr(AnvilDialect::kPartitionerAttrName, b.getStringAttr("shard"));
  return success();
}

struct AnvilPartitionPass
    : mlir::anvil::impl::AnvilPartitionPassBase<AnvilPartitionPass> {
  using AnvilPartitionPassBase::AnvilPartitionPassBase;
  void getDependentDialects(DialectRegistry &registry) const override {
    AnvilPartitionPassBase::getDependentDialects(registry);
    registerShardingRuleExternalModels(registry);
    registerUpstreamShardingModels(registry);
    // What the shard dialect's passes create (a dynamic pipeline does not
    // load its passes' dialects).
    registry.insert<arith::ArithDialect, shard::ShardDialect,
                    tensor::TensorDialect>();
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    if (!fn) {
      module.emitError("anvil-partition: no function @") << function;
      return signalPassFailure();
    }
    int64_t ranks = meshAxisSize(fn, axis);
    if (ranks < 0) {
      module.emitError("anvil-partition: the module's mesh has no axis '")
          << axis << "'";
      return signalPassFailure();
    }
    if (engine != "auto" && engine != "shard" && engine != "anvil") {
      module.emitError("anvil-partition: engine=")
          << engine << ": the partitioners are auto, shard and anvil";
      return signalPassFailure();
    }
    if (ranks == 1)
      return;
    if (engine != "anvil") {
      std::string whyNot = sequenceParallel
                               ? "sequence parallelism has anvil's rules only"
                               : std::string();
      if (whyNot.empty()) {
        ShardDialectPartitioner upstream(module, fn, axis, ranks,
                                         [&](OpPassManager &pm, Operation *op) {
                                           return runPipeline(pm, op);
                                         });
        if (succeeded(upstream.run(whyNot)))
          return;
      }
      if (engine == "shard") {
        fn.emitError("anvil-partition: the shard dialect does not partition @")
            << function << ": " << whyNot;
        return signalPassFailure();
      }
    }
    if (failed(
            Partitioner(fn, axis, ranks, sequenceParallel, sequenceDim).run()))
      return signalPassFailure();
    fn->setAttr(AnvilDialect::kPartitionerAttrName,
                StringAttr::get(&getContext(), "anvil"));
  }
};

} // namespace
