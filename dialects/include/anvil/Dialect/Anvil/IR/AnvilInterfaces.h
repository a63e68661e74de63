//===- AnvilInterfaces.h - op interfaces of the anvil dialect -*- C++ -*-===//
//
// The cost interface (FLOPs and bytes moved per op) and the helpers its
// default implementations use; the VJP interface; the sharding-rule
// interface and the types it speaks in.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_H
#define ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::anvil {

/// Number of elements of a statically shaped tensor type (1 for a scalar
/// tensor, 0 for anything that is not a static tensor).
int64_t getNumElements(Type type);

/// Storage bytes of one element: i1 and the 8-bit floats take one byte.
int64_t getElementBytes(Type elementType);

/// Bytes of a statically shaped tensor type.
int64_t getTensorBytes(Type type);

/// Bytes of all tensor operands plus all tensor results of `op`.
int64_t getOperandAndResultBytes(Operation *op);

/// How a value is split over a mesh axis: replicated (dim < 0), or
/// dimension `dim` viewed as [groups, size / groups] with the inner part cut
/// into one block per rank (each rank holds its block of every group).
struct AxisSplit {
  int64_t dim = -1;
  int64_t groups = 1;
  bool split() const { return dim >= 0; }
  bool operator==(const AxisSplit &o) const {
    return dim == o.dim && groups == o.groups;
  }
  /// "replicated", "split on dimension 2 in 3 groups".
  std::string describe() const;
};

/// What a sharding rule may depend on besides its operands.
struct ShardingContext {
  int64_t ranks = 1;             ///< Ranks of the axis.
  bool sequenceParallel = false; ///< Megatron's sequence parallelism.
  int64_t sequenceDim = 1;       ///< The activations' sequence dimension.
};

/// An op's tensor-parallel rule for given operand splits (see
/// ShardingRuleOpInterface).
struct ShardingRule {
  /// Non-empty: the op cannot take these splits, and why.
  std::string error;
  /// One per result.
  llvm::SmallVector<AxisSplit> results;
  /// Operands split on the sequence that the op needs whole.
  llvm::SmallVector<unsigned> gathers;
  /// Replicated operands to cut to this rank's block of the results' split
  /// dimension.
  llvm::SmallVector<unsigned> blocks;
  /// The results are partial sums over the ranks.
  bool partial = false;
  /// Ops the partitioner replaces by another form.
  enum class Expansion {
    None,
    VocabParallelEmbedding,
    VocabParallelCrossEntropy,
    /// Dropout of a split value with the whole tensor's mask, of which each
    /// rank applies its block: every mesh drops what one process drops.
    SplitDropout
  };
  Expansion expansion = Expansion::None;

  static ShardingRule failure(std::string why) {
    ShardingRule r;
    r.error = std::move(why);
    return r;
  }
};

/// The rule of ops with the Elementwise trait (and casts): split operands
/// must agree; replicated ones are cut to the rank's block.
ShardingRule getElementwiseShardingRule(Operation *op,
                                        llvm::ArrayRef<AxisSplit> operands);

/// Attaches the sharding rules of the non-elementwise ops that have one.
void registerShardingRuleExternalModels(DialectRegistry &registry);

} // namespace mlir::anvil

namespace mlir::OpTrait::anvil {
/// Marks ops whose results carry no gradient (comparisons, argmax).
template <typename ConcreteType>
class NonDifferentiable : public TraitBase<ConcreteType, NonDifferentiable> {};
} // namespace mlir::OpTrait::anvil

namespace mlir::anvil {
/// Whether a float tensor argument of the enclosing block (a parameter, or
/// an input differentiated with anvil-autodiff's wrt-inputs) may reach
/// `value` through ops that pass gradients: a conservative form of
/// anvil-autodiff's activity, for ops whose VJP gives an operand no
/// gradient. Values that are not float tensors carry none, and neither do
/// anvil.stop_gradient's and NonDifferentiable ops' results.
bool mayDependOnFloatArgument(Value value);
} // namespace mlir::anvil

#include "anvil/Dialect/Anvil/IR/AnvilInterfaces.h.inc"

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_H
