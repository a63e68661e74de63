//===- AnvilInterfaces.td - interfaces of anvil ops ------------*- tablegen -*-===//
//
// Op interfaces through which passes reach every anvil op without a switch
// over op names: the cost, the VJP rule and the tensor-parallel sharding
// rule.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_TD
#define ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_TD

include "mlir/IR/OpBase.td"

def Anvil_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::anvil";
  let description = [{
    The static cost of one execution of an op: the floating-point (or
    integer) operations it performs and the minimal bytes it must move.

    FLOPs count a multiply-add as two. Elementwise ops cost a nominal number
    of FLOPs per result element (declared with the op); contractions
    (matmul, convolution, attention) cost what the textbook formulas say.
    Bytes are those of a standalone kernel: every operand read once and every
    result written once, at the storage size of the element type (i1 and the
    8-bit floats take one byte). Ops that read only part of an operand
    (slice, gather, the embeddings) count only the elements they read.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"FLOPs of one execution of this op.",
      /*retTy=*/"int64_t", /*methodName=*/"getFlops", /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::anvil::getNumElements($_op->getResult(0).getType()) *
               ConcreteOp::kFlopsPerElement;
      }]>,
    InterfaceMethod<
      /*desc=*/"Minimal bytes moved: operands read once, results written once.",
      /*retTy=*/"int64_t", /*methodName=*/"getBytesMoved", /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::anvil::getOperandAndResultBytes($_op);
      }]>,
  ];
}

def Anvil_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::mlir::anvil";
  let description = [{
    The vector-Jacobian product of an op: given the gradients of the loss
    with respect to the op's results, build (at the builder's insertion
    point, after the op) the gradients with respect to its operands. The
    rules reuse the op's operands and results rather than recomputing them.

    A null result gradient means no gradient flows into that result (zero).
    `operandGrads` receives one value per operand: the gradient, or null
    for an operand that takes none (integer operands, seeds, indices, or an
    operand the rule does not differentiate). Ops without this interface
    cannot be differentiated through; ops with the `NonDifferentiable` trait
    (comparisons, argmax) stop gradients by definition.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Builds the gradients of the operands from those of the results.",
      /*retTy=*/"::llvm::LogicalResult", /*methodName=*/"buildVJP",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def Anvil_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::anvil";
  let description = [{
    Tensor parallelism's rule for an op: given how each operand is split
    over a mesh axis (`AxisSplit`: replicated, or a dimension split in
    groups), how the results are split, and what the partitioner
    (anvil-partition) builds around the op: operands to all-gather first
    (sequence parallelism), replicated operands to cut to the rank's block,
    results that are partial sums over the ranks, or an expansion into
    Megatron's vocabulary-parallel forms. A rule that cannot take the
    operands' splits says why in `ShardingRule::error`.

    Elementwise ops (the `Elementwise` trait) share one rule
    (`getElementwiseShardingRule`); the others attach theirs as external
    models (`registerShardingRuleExternalModels`, AnvilSharding.cpp). An op
    whose operands are all replicated needs no rule: its results are
    replicated.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"The results' splits and the partitioner's work for these "
               "operand splits.",
      /*retTy=*/"::mlir::anvil::ShardingRule", /*methodName=*/"getShardingRule",
      /*args=*/(ins "::llvm::ArrayRef<::mlir::anvil::AxisSplit>":$operands,
                    "const ::mlir::anvil::ShardingContext &":$context)>,
  ];
}

// Ops whose results carry no gradient at all (comparisons, argmax).
def Anvil_NonDifferentiable : NativeOpTrait<"anvil::NonDifferentiable"> {
  let cppNamespace = "::mlir::OpTrait";
}

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_TD
