//===- ShardingModels.cpp - anvil ops in the upstream shard dialect -------===//
//
// The upstream shard dialect describes an op to its propagation and SPMD
// partitioning (`sharding-propagation`, `shard-partition`) by loops and
// indexing maps (shard::ShardingInterface). The anvil ops that are such a
// loop nest get that description here:
//
// - every elementwise op (OpTrait::Elementwise): one parallel loop per
//   dimension, identity maps (upstream's own ElementwiseShardingInterface);
// - anvil.matmul: the batch loops, m and n parallel and k a sum reduction,
//   with the maps of its transposes and of a weight shared by every batch; a
//   split contraction gives each rank a partial product, all-reduced;
// - anvil.transpose (a permuted map) and anvil.broadcast (the operand's map
//   keeps its dimensions' loops).
//
// Every other anvil op (attention, the norms, embedding, the losses, the
// shape ops, ...) gets a model that takes whole tensors only: propagation
// passes through it without deciding anything, and partitioning clones it
// where its operands are replicated and fails, naming it, where one is split.
// anvil-partition uses these models where they cover a function
// (Partition.cpp); Anvil's own rules (AnvilSharding.cpp) cover the rest.
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/ShardingModels.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::anvil;
using shard::Sharding;
using utils::IteratorType;

namespace {

/// anvil.matmul: loops (batch..., m, n, k); k is a sum.
struct MatmulModel
    : shard::ShardingInterface::ExternalModel<MatmulModel, MatmulOp> {
  static int64_t batchRank(Operation *op) {
    return cast<RankedTensorType>(op->getResult(0).getType()).getRank() - 2;
  }

  SmallVector<IteratorType> getLoopIteratorTypes(Operation *op) const {
    SmallVector<IteratorType> types(batchRank(op) + 2, IteratorType::parallel);
    types.push_back(IteratorType::reduction);
    return types;
  }

  SmallVector<shard::ReductionKind>
  getReductionLoopIteratorKinds(Operation *) const {
    return {shard::ReductionKind::Sum};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto matmul = cast<MatmulOp>(op);
    MLIRContext *ctx = op->getContext();
    int64_t nb = batchRank(op);
    SmallVector<AffineExpr> batch;
    for (int64_t i = 0; i < nb; ++i)
      batch.push_back(getAffineDimExpr(i, ctx));
    AffineExpr m = getAffineDimExpr(nb, ctx), n = getAffineDimExpr(nb + 1, ctx),
               k = getAffineDimExpr(nb + 2, ctx);
    auto map = [&](bool batched, AffineExpr a, AffineExpr b) {
      SmallVector<AffineExpr> exprs;
      if (batched)
        exprs.append(batch);
      exprs.push_back(a);
      exprs.push_back(b);
      return AffineMap::get(nb + 3, 0, exprs, ctx);
    };
    bool rhsBatched =
        cast<RankedTensorType>(matmul.getRhs().getType()).getRank() > 2;
    return {matmul.getTransposeLhs() ? map(true, k, m) : map(true, m, k),
            matmul.getTransposeRhs() ? map(rhsBatched, n, k)
                                     : map(rhsBatched, k, n),
            map(true, m, n)};
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    SmallVector<IteratorType> loops = getLoopIteratorTypes(op);
    shard::ShardingArray axes = shard::getGridAxisAssignmentForLoopIterators(
        operandShardings, resultShardings, loops, getIndexingMaps(op));
    shard::partitionTriviallyShardableOperation(
        *op, partitionedOperands, operandShardings, resultShardings,
        partitionMap, symbolTable, builder);
    if (!shard::isAtLeastOneReductionIteratorSharded(loops, axes))
      return success();
    // Each rank multiplies its blocks of the contraction: the products
    // sum over the ranks (as upstream's linalg models do).
    Value partial = partitionMap.lookup(op->getResult(0));
    Value sum = shard::AllReduceOp::create(
        builder, op->getLoc(), partial, resultShardings[0].getGrid(),
        shard::getReductionGridAxes(loops, axes), shard::ReductionKind::Sum);
    partitionMap.map(op->getResult(0), sum);
    return success();
  }
};

/// A data movement whose loops are its result's dimensions, all parallel:
/// each rank moves its block (`Model` gives the operand's map).
template <typename Model, typename Op>
struct ResultLoopsModel : shard::ShardingInterface::ExternalModel<Model, Op> {
  SmallVector<IteratorType> getLoopIteratorTypes(Operation *op) const {
    return SmallVector<IteratorType>(
        cast<RankedTensorType>(op->getResult(0).getType()).getRank(),
        IteratorType::parallel);
  }
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    shard::partitionTriviallyShardableOperation(
        *op, partitionedOperands, operandShardings, resultShardings,
        partitionMap, symbolTable, builder);
    return success();
  }
};

/// anvil.transpose: result dimension i is operand dimension perm[i].
struct TransposeModel : ResultLoopsModel<TransposeModel, TransposeOp> {
  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    ArrayRef<int64_t> perm = cast<TransposeOp>(op).getPermutation();
    MLIRContext *ctx = op->getContext();
    // Operand dimension perm[i] is loop i.
    SmallVector<AffineExpr> operand(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      operand[p] = getAffineDimExpr(i, ctx);
    return {AffineMap::get(perm.size(), 0, operand, ctx),
            AffineMap::getMultiDimIdentityMap(perm.size(), ctx)};
  }
};

/// anvil.broadcast: the operand's dimension i is loop dimensions[i].
struct BroadcastModel : ResultLoopsModel<BroadcastModel, BroadcastOp> {
  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto bc = cast<BroadcastOp>(op);
    MLIRContext *ctx = op->getContext();
    int64_t rank = bc.getType().getRank();
    SmallVector<AffineExpr> operand;
    for (int64_t d : bc.getDimensions())
      operand.push_back(getAffineDimExpr(d, ctx));
    return {AffineMap::get(rank, 0, operand, ctx),
            AffineMap::getMultiDimIdentityMap(rank, ctx)};
  }
};

/// An op the shard dialect cannot describe: it takes whole tensors.
/// Propagation decides nothing at it (an empty option); partitioning
/// clones it where its operands are replicated.
template <typename Op>
struct WholeTensorsModel
    : shard::ShardingInterface::ExternalModel<WholeTensorsModel<Op>, Op> {
  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *, ArrayRef<Sharding>, ArrayRef<Sharding>) const {
    return shard::ShardingOption::makeEmpty();
  }
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    for (auto [i, s] : llvm::enumerate(operandShardings))
      if (s && !shard::isFullReplication(s))
        return op->emitOpError()
               << "has no loop description for the shard dialect, and its "
                  "operand #"
               << i << " is split";
    for (auto [i, s] : llvm::enumerate(resultShardings))
      if (s && !shard::isFullReplication(s))
        return op->emitOpError()
               << "has no loop description for the shard dialect, and its "
                  "result #"
               << i << " is wanted split";
    shard::partitionFullyReplicatedOperation(
        *op, partitionedOperands, operandShardings, resultShardings,
        partitionMap, symbolTable, builder);
    return success();
  }
};

template <typename Op> void attachOne(MLIRContext *ctx) {
  if constexpr (std::is_same_v<Op, MatmulOp>)
    Op::template attachInterface<MatmulModel>(*ctx);
  else if constexpr (std::is_same_v<Op, TransposeOp>)
    Op::template attachInterface<TransposeModel>(*ctx);
  else if constexpr (std::is_same_v<Op, BroadcastOp>)
    Op::template attachInterface<BroadcastModel>(*ctx);
  else if constexpr (Op::template hasTrait<OpTrait::Elementwise>())
    Op::template attachInterface<shard::ElementwiseShardingInterface<Op>>(*ctx);
  else
    Op::template attachInterface<WholeTensorsModel<Op>>(*ctx);
}

template <typename... Ops> void attachAll(MLIRContext *ctx) {
  (attachOne<Ops>(ctx), ...);
}

} // namespace

bool mlir::anvil::hasShardLoopModel(Operation *op) {
  return isa<MatmulOp, TransposeOp, BroadcastOp>(op) ||
         (isa_and_nonnull<AnvilDialect>(op->getDialect()) &&
          op->hasTrait<OpTrait::Elementwise>());
}

void mlir::anvil::registerUpstreamShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AnvilDialect *) {
    ctx->getOrLoadDialect<shard::ShardDialect>();
    attachAll<
#define GET_OP_LIST
#include "anvil/Dialect/Anvil/IR/AnvilOps.cpp.inc"
        >(ctx);
  });
}
