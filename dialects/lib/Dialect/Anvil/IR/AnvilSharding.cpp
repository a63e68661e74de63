//===- AnvilSharding.cpp - tensor-parallel sharding rules of anvil ops ----===//
//
// One rule per op kind (ShardingRuleOpInterface): how the results are split
// over a mesh axis given the operands' splits, and what anvil-partition
// builds around the op. Elementwise ops share getElementwiseShardingRule;
// the others are attached as external models by
// registerShardingRuleExternalModels.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::anvil;

std::string AxisSplit::describe() const {
  if (!split())
    return "replicated";
  std::string d = "split on dimension " + std::to_string(dim);
  if (groups > 1)
    d += " in " + std::to_string(groups) + " groups";
  return d;
}

namespace {

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Every result split as `s`.
ShardingRule all(Operation *op, AxisSplit s) {
  ShardingRule r;
  r.results.assign(op->getNumResults(), s);
  return r;
}

ShardingRule broadcastRule(BroadcastOp op, ArrayRef<AxisSplit> in,
                           const ShardingContext &) {
  AxisSplit s = in[0];
  s.dim = op.getDimensions()[s.dim];
  return all(op, s);
}

ShardingRule transposeRule(TransposeOp op, ArrayRef<AxisSplit> in,
                           const ShardingContext &) {
  ArrayRef<int64_t> perm = op.getPermutation();
  AxisSplit s = in[0];
  s.dim = std::find(perm.begin(), perm.end(), in[0].dim) - perm.begin();
  return all(op, s);
}

/// The split dimension's blocks stay contiguous runs of the rows before it
/// when a result dimension starts at the same element and divides.
ShardingRule reshapeRule(ReshapeOp op, ArrayRef<AxisSplit> in,
                         const ShardingContext &ctx) {
  AxisSplit s = in[0];
  auto from = cast<RankedTensorType>(op.getOperand().getType());
  auto to = cast<RankedTensorType>(op.getType());
  if (s.groups != 1)
    return ShardingRule::failure("reshaping a value " + s.describe() +
                                 " is not supported");
  int64_t outer = 1;
  for (int64_t d = 0; d < s.dim; ++d)
    outer *= from.getDimSize(d);
  int64_t acc = 1;
  for (int64_t e = 0; e < to.getRank(); ++e) {
    if (acc == outer && to.getDimSize(e) % ctx.ranks == 0 &&
        to.getDimSize(e) > 1) {
      s.dim = e;
      return all(op, s);
    }
    acc *= to.getDimSize(e);
  }
  return ShardingRule::failure(
      "no dimension of the result keeps the blocks of the operand's "
      "dimension " +
      std::to_string(in[0].dim));
}

/// Pieces along a dimension split in g groups: g equal pieces, each a plain
/// split.
ShardingRule splitRule(SplitOp op, ArrayRef<AxisSplit> in,
                       const ShardingContext &) {
  AxisSplit s = in[0];
  int64_t dim = op.getDim();
  if (s.dim != dim)
    return all(op, s);
  ArrayRef<int64_t> sizes = op.getSizes();
  if (static_cast<int64_t>(sizes.size()) != s.groups ||
      llvm::any_of(sizes, [&](int64_t n) { return n != sizes.front(); }))
    return ShardingRule::failure(
        "splitting dimension " + std::to_string(dim) + ", which is split in " +
        std::to_string(s.groups) + " groups, into other than " +
        std::to_string(s.groups) + " equal pieces");
  return all(op, AxisSplit{dim, 1});
}

ShardingRule sliceRule(SliceOp op, ArrayRef<AxisSplit> in,
                       const ShardingContext &) {
  AxisSplit s = in[0];
  auto from = cast<RankedTensorType>(op.getOperand().getType());
  if (op.getStart()[s.dim] != 0 ||
      op.getLimit()[s.dim] != from.getDimSize(s.dim) ||
      op.getStride()[s.dim] != 1)
    return ShardingRule::failure("slicing the split dimension " +
                                 std::to_string(s.dim));
  return all(op, s);
}

/// Megatron's linears against a shared [K, N] (or [N, K]) weight.
ShardingRule matmulRule(MatmulOp op, ArrayRef<AxisSplit> in,
                        const ShardingContext &ctx) {
  int64_t lr = rankOf(op.getLhs()), rr = rankOf(op.getRhs());
  int64_t lhsK = op.getTransposeLhs() ? lr - 2 : lr - 1;
  AxisSplit a = in[0], b = in[1];
  ShardingRule r;
  if (rr == 2) {
    int64_t rhsK = op.getTransposeRhs() ? 1 : 0, rhsN = 1 - rhsK;
    // Column-parallel: whole rows (all-gathered first when split on the
    // sequence) against the rank's columns.
    bool wholeRows =
        !a.split() || (ctx.sequenceParallel && a.dim == ctx.sequenceDim &&
                       a.groups == 1 && a.dim != lhsK);
    if (wholeRows && b.dim == rhsN) {
      if (a.split())
        r.gathers.push_back(0);
      r.results.push_back(AxisSplit{lr - 1, b.groups});
      return r;
    }
    // Row-parallel: the contraction's split halves give partial sums.
    if (a.dim == lhsK && b.dim == rhsK && a.groups == b.groups) {
      r.partial = true;
      r.results.push_back(AxisSplit{});
      return r;
    }
    // Rows split, a replicated weight: each rank its rows.
    if (a.split() && a.dim != lhsK && !b.split()) {
      r.results.push_back(a);
      return r;
    }
  }
  return ShardingRule::failure("no rule for a matmul of a left operand " +
                               a.describe() + " and a right operand " +
                               b.describe());
}

/// Split by heads: each rank attends with its heads (of the query and of
/// the grouped keys and values).
ShardingRule attentionRule(AttentionOp op, ArrayRef<AxisSplit> in,
                           const ShardingContext &) {
  AxisSplit q = in[0];
  bool heads = q.dim == 1 && q.groups == 1 && in[1] == q && in[2] == q &&
               (!op.getMask() || !in[3].split());
  if (!heads)
    return ShardingRule::failure(
        "attention needs its query, key and value split by heads (dimension "
        "1), got " +
        q.describe() + ", " + in[1].describe() + ", " + in[2].describe());
  return all(op, q);
}

/// Normalizations over trailing dimensions: any other may be split.
template <typename NormOp>
ShardingRule normRule(NormOp op, ArrayRef<AxisSplit> in,
                      const ShardingContext &) {
  if (in[0].dim >= static_cast<int64_t>(op.getAxis()) ||
      llvm::any_of(in.drop_front(), [](AxisSplit s) { return s.split(); }))
    return ShardingRule::failure("normalizing over a split dimension");
  return all(op, in[0]);
}

/// (B, H, T, D) rotated by (T, D/2) tables: split by heads.
ShardingRule ropeRule(RopeOp op, ArrayRef<AxisSplit> in,
                      const ShardingContext &) {
  if (in[0].dim != 1 || in[0].groups != 1 || in[1].split() || in[2].split())
    return ShardingRule::failure("rotary embeddings need their input split by "
                                 "heads (dimension 1) and whole tables");
  return all(op, in[0]);
}

/// A table split by rows: Megatron's vocabulary-parallel embedding, whose
/// sum over the ranks is replicated (split on the sequence under sequence
/// parallelism).
ShardingRule embeddingRule(EmbeddingOp op, ArrayRef<AxisSplit> in,
                           const ShardingContext &ctx) {
  if (in[0].dim != 0 || in[0].groups != 1 || in[1].split())
    return ShardingRule::failure("an embedding needs its table split by rows "
                                 "and whole indices");
  ShardingRule r;
  r.expansion = ShardingRule::Expansion::VocabParallelEmbedding;
  r.results.push_back(ctx.sequenceParallel && rankOf(op) > ctx.sequenceDim + 1
                          ? AxisSplit{ctx.sequenceDim, 1}
                          : AxisSplit{});
  return r;
}

/// Classes split over the ranks: Megatron's vocabulary-parallel
/// cross-entropy (the loss is replicated).
ShardingRule crossEntropyRule(CrossEntropyOp op, ArrayRef<AxisSplit> in,
                              const ShardingContext &) {
  if (in[0].dim != rankOf(op.getLogits()) - 1 || in[0].groups != 1 ||
      in[1].split())
    return ShardingRule::failure("a cross-entropy needs its classes split "
                                 "(the last dimension) and whole labels");
  if (!op.getLabelSmoothing().isZero())
    return ShardingRule::failure("label smoothing over split classes is not "
                                 "supported yet");
  ShardingRule r;
  r.expansion = ShardingRule::Expansion::VocabParallelCrossEntropy;
  r.results.push_back(AxisSplit{});
  return r;
}

/// A value split on a dimension (in one group): the single-process mask,
/// cut to the rank's block.
ShardingRule dropoutRule(DropoutOp op, ArrayRef<AxisSplit> in,
                         const ShardingContext &) {
  if (in[0].groups != 1 || in[1].split())
    return ShardingRule::failure("dropout needs its operand split in one "
                                 "group and a whole seed");
  ShardingRule r;
  r.expansion = ShardingRule::Expansion::SplitDropout;
  r.results.push_back(in[0]);
  return r;
}

template <typename OpTy, auto Rule>
struct RuleModel
    : ShardingRuleOpInterface::ExternalModel<RuleModel<OpTy, Rule>, OpTy> {
  ShardingRule getShardingRule(Operation *op, ArrayRef<AxisSplit> operands,
                               const ShardingContext &context) const {
    return Rule(cast<OpTy>(op), operands, context);
  }
};

} // namespace

ShardingRule
mlir::anvil::getElementwiseShardingRule(Operation *op,
                                        ArrayRef<AxisSplit> operands) {
  AxisSplit s;
  for (AxisSplit o : operands) {
    if (!o.split())
      continue;
    if (s.split() && !(s == o))
      return ShardingRule::failure("its operands are split differently");
    s = o;
  }
  ShardingRule r = all(op, s);
  for (auto [i, o] : llvm::enumerate(operands))
    if (!o.split()) {
      if (s.groups != 1)
        return ShardingRule::failure("operand #" + std::to_string(i) +
                                     " is replicated and another is " +
                                     s.describe());
      r.blocks.push_back(static_cast<unsigned>(i));
    }
  return r;
}

void mlir::anvil::registerShardingRuleExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AnvilDialect *) {
    BroadcastOp::attachInterface<RuleModel<BroadcastOp, broadcastRule>>(*ctx);
    TransposeOp::attachInterface<RuleModel<TransposeOp, transposeRule>>(*ctx);
    ReshapeOp::attachInterface<RuleModel<ReshapeOp, reshapeRule>>(*ctx);
    SplitOp::attachInterface<RuleModel<SplitOp, splitRule>>(*ctx);
    SliceOp::attachInterface<RuleModel<SliceOp, sliceRule>>(*ctx);
    MatmulOp::attachInterface<RuleModel<MatmulOp, matmulRule>>(*ctx);
    AttentionOp::attachInterface<RuleModel<AttentionOp, attentionRule>>(*ctx);
    LayerNormOp::attachInterface<RuleModel<LayerNormOp, normRule<LayerNormOp>>>(
        *ctx);
    RMSNormOp::attachInterface<RuleModel<RMSNormOp, normRule<RMSNormOp>>>(*ctx);
    RopeOp::attachInterface<RuleModel<RopeOp, ropeRule>>(*ctx);
    EmbeddingOp::attachInterface<RuleModel<EmbeddingOp, embeddingRule>>(*ctx);
    CrossEntropyOp::attachInterface<
        RuleModel<CrossEntropyOp, crossEntropyRule>>(*ctx);
    DropoutOp::attachInterface<RuleModel<DropoutOp, dropoutRule>>(*ctx);
  });
}
