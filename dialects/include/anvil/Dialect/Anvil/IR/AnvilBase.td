//===- AnvilBase.td - the anvil dialect, its types and op bases -*- tablegen -*-===//
//
// The dialect definition, the tensor type constraints every op uses, the
// enumerations, and the base classes from which all anvil ops derive.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILBASE_TD
#define ANVIL_DIALECT_ANVIL_IR_ANVILBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "anvil/Dialect/Anvil/IR/AnvilInterfaces.td"

def Anvil_Dialect : Dialect {
  let name = "anvil";
  let cppNamespace = "::mlir::anvil";
  let summary = "Anvil's graph-level dialect for training neural networks";
  let description = [{
    The `anvil` dialect is the level at which models are written,
    differentiated, given an optimizer and sharded. Every op works on ranked,
    statically shaped tensors, infers its result type where the operands and
    attributes determine it, and reports its cost (FLOPs and bytes moved)
    through `CostOpInterface`.

    Broadcasting is never implicit: elementwise ops take operands of one type,
    and `anvil.broadcast` makes shapes agree. Dimensions are numbered from 0;
    negative dimensions are not accepted. Layouts follow PyTorch: activations
    of convolutions and pooling are `(N, C, spatial...)`, attention takes
    `(B, H, T, D)`.

    A model's forward graph is a `func.func @forward` whose arguments carry
    `anvil.param` (parameters: name, initializer, trainable flag) or
    `anvil.input` (batch inputs) attributes.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Argument attribute naming a parameter: `#anvil.param<...>`.
    static constexpr ::llvm::StringLiteral kParamAttrName = "anvil.param";
    /// Argument attribute naming a batch input: `#anvil.input<...>`.
    static constexpr ::llvm::StringLiteral kInputAttrName = "anvil.input";
    /// On a module: its device mesh, {axis = ranks} ({dp = 8}).
    static constexpr ::llvm::StringLiteral kMeshAttrName = "anvil.mesh";
    /// Argument attribute of a sharded program's state: which part of a
    /// whole tensor the argument holds, `{global_shape = array<i64: ...>,
    /// flat_axis = "dp"}` (ZeRO: block i of the flattened tensor, padded
    /// to a multiple of the axis's ranks, at position i on the axis).
    static constexpr ::llvm::StringLiteral kShardingAttrName =
        "anvil.sharding";
    /// Argument attribute naming training state: `#anvil.state<...>`.
    static constexpr ::llvm::StringLiteral kStateAttrName = "anvil.state";
    /// Result attribute naming the argument a gradient belongs to.
    static constexpr ::llvm::StringLiteral kGradAttrName = "anvil.grad";
    /// Result attribute: the index of the argument this result replaces
    /// (state updated in place).
    static constexpr ::llvm::StringLiteral kTiedAttrName = "anvil.tied_to";
    /// On a result that is a named scalar metric of a step ("lr").
    static constexpr ::llvm::StringLiteral kMetricAttrName = "anvil.metric";
    /// On an anvil.matmul that anvil-fp8 runs in FP8: the recipe
    /// ("current").
    static constexpr ::llvm::StringLiteral kFP8AttrName = "anvil.fp8";
    /// On a partitioned function: which partitioner made it ("shard", the
    /// upstream shard dialect's, or "anvil", anvil's own rules).
    static constexpr ::llvm::StringLiteral kPartitionerAttrName =
        "anvil.partitioner";
    /// On an exported function of the CUDA backend's host code
    /// (anvil-cuda-step-graph): a CUDA graph can replay it (unit), or why
    /// not (a string).
    static constexpr ::llvm::StringLiteral kGraphCapturableAttrName =
        "anvil.graph_capturable";
    static constexpr ::llvm::StringLiteral kGraphBlockerAttrName =
        "anvil.graph_blocker";
    /// On an anvil.reduce_sum that a broadcast's VJP made (a bias's
    /// gradient, say): anvil-gemm-epilogues may take the sum from the
    /// GEMM that reads the same gradient (unit; a hint, safe to drop).
    static constexpr ::llvm::StringLiteral kBroadcastGradAttrName =
        "anvil.broadcast_grad";
    /// On an anvil.conv, anvil.conv_transpose or anvil.conv_filter_grad
    /// that runs as one call of a convolution library (cuDNN on CUDA):
    /// anvil-library-convs sets it, anvil-decompose and
    /// anvil-convert-to-linalg leave the op, anvil-bufferize makes the call
    /// (unit). On an anvil.embedding_grad that the runtime computes
    /// (anvil-convert-to-linalg's library-embedding-grads sets it, and
    /// leaves the op to anvil-bufferize's call).
    static constexpr ::llvm::StringLiteral kLibraryCallAttrName =
        "anvil.library_call";
    /// On an scf.execute_region of ops over the same rows that
    /// anvil-row-groups made, having checked that their buffers touch what
    /// the ops write only within a row, and on the dispatch function
    /// anvil-outline-dispatches makes of it: anvil-cuda-map-dispatches
    /// runs it as one kernel of a warp per row (unit; a hint, safe to
    /// drop).
    static constexpr ::llvm::StringLiteral kRowGroupAttrName =
        "anvil.row_group";

  private:
    void registerAttributes();
  public:
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Anvil_FloatElement : AnyTypeOf<[F64, F32, F16, BF16, F8E4M3FN, F8E5M2]>;
def Anvil_IntElement : AnyTypeOf<[I1, I32, I64]>;
def Anvil_IndexElement : AnyTypeOf<[I32, I64]>;

def Anvil_Tensor : StaticShapeTensorOf<[F64, F32, F16, BF16, F8E4M3FN, F8E5M2,
                                        I1, I32, I64]>;
def Anvil_FloatTensor : StaticShapeTensorOf<[F64, F32, F16, BF16, F8E4M3FN,
                                             F8E5M2]>;
def Anvil_NumericTensor : StaticShapeTensorOf<[F64, F32, F16, BF16, F8E4M3FN,
                                               F8E5M2, I32, I64]>;
def Anvil_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Anvil_BoolTensor : StaticShapeTensorOf<[I1]>;
def Anvil_SeedTensor : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;

// Attribute constraints for epsilons, smoothing terms and exponents.
def Anvil_NonNegativeF64Attr : ConfinedAttr<F64Attr, [AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValueAsDouble() >= 0.0">,
    "whose value is non-negative">]>;

//===----------------------------------------------------------------------===//
// Enumerations (printed as bare keywords in op assembly)
//===----------------------------------------------------------------------===//

def Anvil_ComparisonDirection : I32EnumAttr<"ComparisonDirection",
    "comparison direction", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::anvil";
}

def Anvil_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU formula", [
      I32EnumAttrCase<"erf", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::mlir::anvil";
}

def Anvil_Reduction : I32EnumAttr<"Reduction", "loss reduction", [
      I32EnumAttrCase<"mean", 0>, I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"none", 2>]> {
  let cppNamespace = "::mlir::anvil";
}

def Anvil_CollectiveOp : I32EnumAttr<"CollectiveOp", "collective reduction", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>,
      I32EnumAttrCase<"max", 2>]> {
  let cppNamespace = "::mlir::anvil";
}

def Anvil_BagMode : I32EnumAttr<"BagMode", "embedding bag pooling", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>]> {
  let cppNamespace = "::mlir::anvil";
}

def Anvil_InitKind : I32EnumAttr<"InitKind", "parameter initializer", [
      I32EnumAttrCase<"zeros", 0>, I32EnumAttrCase<"ones", 1>,
      I32EnumAttrCase<"constant", 2>, I32EnumAttrCase<"normal", 3>,
      I32EnumAttrCase<"truncated_normal", 4>, I32EnumAttrCase<"uniform", 5>,
      I32EnumAttrCase<"xavier_uniform", 6>, I32EnumAttrCase<"xavier_normal", 7>,
      I32EnumAttrCase<"kaiming_uniform", 8>,
      I32EnumAttrCase<"kaiming_normal", 9>]> {
  let cppNamespace = "::mlir::anvil";
  let genSpecializedAttr = 0;
}

// Ops with a VJP rule declare it with this trait and define
// `buildVJP` in AnvilVJP.cpp.
def Anvil_VJP : DeclareOpInterfaceMethods<Anvil_VJPOpInterface>;

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

// Every anvil op is pure tensor code and reports its cost.
class Anvil_Op<string mnemonic, list<Trait> traits = []>
    : Op<Anvil_Dialect, mnemonic,
         !listconcat([Pure, Anvil_CostOpInterface], traits)>;

// Ops whose cost is not elementwise implement `getFlops` themselves, and
// `getBytesMoved` too when they read only part of an operand (gathers).
class Anvil_CostedOp<string mnemonic, list<Trait> traits = [],
                     list<string> costMethods = ["getFlops"]>
    : Op<Anvil_Dialect, mnemonic,
         !listconcat([Pure, DeclareOpInterfaceMethods<Anvil_CostOpInterface,
                                                      costMethods>],
                     traits)>;
class Anvil_GatheringOp<string mnemonic, list<Trait> traits = []>
    : Anvil_CostedOp<mnemonic, traits, ["getFlops", "getBytesMoved"]>;

// `flops` is the nominal FLOP count per result element (see
// docs/cost.md): 1 for an add or a compare, more for composite
// functions such as GELU.
class Anvil_ElementwiseOp<string mnemonic, int flops, list<Trait> traits = []>
    : Anvil_Op<mnemonic, !listconcat([Elementwise], traits)> {
  let extraClassDeclaration = [{
    static constexpr int64_t kFlopsPerElement = }] # flops # [{;
  }];
}

class Anvil_UnaryElementwiseOp<string mnemonic, int flops,
                               Type tensorType = Anvil_FloatTensor,
                               list<Trait> traits = []>
    : Anvil_ElementwiseOp<mnemonic, flops,
                          !listconcat([SameOperandsAndResultType,
                                       InferTypeOpInterface,
                                       Anvil_VJP], traits)> {
  let arguments = (ins tensorType:$operand);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

class Anvil_BinaryElementwiseOp<string mnemonic, int flops,
                                Type tensorType = Anvil_NumericTensor,
                                list<Trait> traits = []>
    : Anvil_ElementwiseOp<mnemonic, flops,
                          !listconcat([SameOperandsAndResultType,
                                       InferTypeOpInterface,
                                       Anvil_VJP], traits)> {
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILBASE_TD
