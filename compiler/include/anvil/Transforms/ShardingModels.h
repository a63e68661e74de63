//===- ShardingModels.h - anvil ops in the upstream shard dialect -*- C++ -*-//
//
// registerUpstreamShardingModels attaches the upstream shard dialect's
// ShardingInterface to every anvil op: loops and indexing maps for the
// elementwise ops, matmul, transpose and broadcast; whole tensors only for
// the rest (ShardingModels.cpp says which and why).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRANSFORMS_SHARDINGMODELS_H
#define ANVIL_TRANSFORMS_SHARDINGMODELS_H

namespace mlir {
class DialectRegistry;
class Operation;
namespace anvil {

void registerUpstreamShardingModels(DialectRegistry &registry);

/// Whether `op`'s model describes it by loops and indexing maps (it can
/// take split values), rather than taking whole tensors only.
bool hasShardLoopModel(Operation *op);

} // namespace anvil
} // namespace mlir

#endif // ANVIL_TRANSFORMS_SHARDINGMODELS_H
