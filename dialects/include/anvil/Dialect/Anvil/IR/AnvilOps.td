//===- AnvilOps.td - the ops of the anvil dialect --------------*- tablegen -*-===//
//
// Graph-level ops on statically shaped tensors. Elementwise and pure data
// movement ops come first, then contractions, normalizations, the
// transformer ops, convolutions and pooling, and the losses. Each op infers
// its result type where operands and attributes determine it; ops whose
// result shape is free (reshape, broadcast, cast) check it instead.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILOPS_TD
#define ANVIL_DIALECT_ANVIL_IR_ANVILOPS_TD

include "anvil/Dialect/Anvil/IR/AnvilBase.td"
include "anvil/Dialect/Anvil/IR/AnvilAttrs.td"

//===----------------------------------------------------------------------===//
// Constants and casts
//===----------------------------------------------------------------------===//

def Anvil_ConstantOp : Anvil_CostedOp<"constant", [ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A tensor constant";
  let description = [{
    ```mlir
    %zero = anvil.constant dense<0.0> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Anvil_CastOp : Anvil_Op<"cast", [Anvil_VJP, Elementwise,
                                     SameOperandsAndResultShape]> {
  let summary = "Element type conversion";
  let description = [{
    Converts each element to the result's element type: floats round to
    nearest even (saturating to the largest finite value for the 8-bit
    floats), floats to integers truncate toward zero, and any non-zero value
    becomes `true` in `i1`. The result type is chosen, not inferred.

    A float widened exactly and cast back is itself: the folder removes
    such a pair, and the canonicalizer a pair with a reshape between them
    (`cast(reshape(cast(x)))` is `reshape(x)`).

    ```mlir
    %h = anvil.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `to` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    static constexpr int64_t kFlopsPerElement = 0;
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic and math
//===----------------------------------------------------------------------===//

def Anvil_AddOp : Anvil_BinaryElementwiseOp<"add", 1, Anvil_NumericTensor,
                                            [Commutative]> {
  let summary = "Elementwise addition";
  let description = [{
    ```mlir
    %y = anvil.add %a, %b : tensor<4x8xf32>
    ```
  }];
  let hasFolder = 1;
}

def Anvil_SubOp : Anvil_BinaryElementwiseOp<"sub", 1> {
  let summary = "Elementwise subtraction";
  let description = [{
    ```mlir
    %y = anvil.sub %a, %b : tensor<4x8xf32>
    ```
  }];
  let hasFolder = 1;
}

def Anvil_MulOp : Anvil_BinaryElementwiseOp<"mul", 1, Anvil_NumericTensor,
                                            [Commutative]> {
  let summary = "Elementwise multiplication";
  let description = [{
    ```mlir
    %y = anvil.mul %a, %b : tensor<4x8xf32>
    ```
  }];
  let hasFolder = 1;
}

def Anvil_DivOp : Anvil_BinaryElementwiseOp<"div", 1> {
  let summary = "Elementwise division (integers truncate toward zero)";
  let description = [{
    ```mlir
    %y = anvil.div %a, %b : tensor<4x8xf32>
    ```
  }];
  let hasFolder = 1;
}

def Anvil_PowOp : Anvil_BinaryElementwiseOp<"pow", 1, Anvil_FloatTensor> {
  let summary = "Elementwise power `lhs ^ rhs`";
  let description = [{
    ```mlir
    %y = anvil.pow %a, %b : tensor<4x8xf32>
    ```
  }];
}

def Anvil_MaxOp : Anvil_BinaryElementwiseOp<"max", 1, Anvil_NumericTensor,
                                            [Commutative]> {
  let summary = "Elementwise maximum (NaN propagates)";
  let description = [{
    ```mlir
    %y = anvil.max %a, %b : tensor<4x8xf32>
    ```
  }];
}

def Anvil_MinOp : Anvil_BinaryElementwiseOp<"min", 1, Anvil_NumericTensor,
                                            [Commutative]> {
  let summary = "Elementwise minimum (NaN propagates)";
  let description = [{
    ```mlir
    %y = anvil.min %a, %b : tensor<4x8xf32>
    ```
  }];
}

def Anvil_NegOp : Anvil_UnaryElementwiseOp<"neg", 1, Anvil_NumericTensor> {
  let summary = "Elementwise negation";
  let description = [{
    ```mlir
    %y = anvil.neg %x : tensor<4x8xf32>
    ```
  }];
  let hasFolder = 1;
}

def Anvil_AbsOp : Anvil_UnaryElementwiseOp<"abs", 1, Anvil_NumericTensor> {
  let summary = "Elementwise absolute value";
  let description = [{
    ```mlir
    %y = anvil.abs %x : tensor<4x8xf32>
    ```
  }];
}

class Anvil_FloatUnaryOp<string mnemonic, int flops, string formula>
    : Anvil_UnaryElementwiseOp<mnemonic, flops> {
  let summary = "Elementwise " # formula;
  let description = [{
    Computes }] # formula # [{ of each element.

    ```mlir
    %y = anvil.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
}

def Anvil_ExpOp : Anvil_FloatUnaryOp<"exp", 1, "`exp(x)`">;
def Anvil_LogOp : Anvil_FloatUnaryOp<"log", 1, "the natural logarithm `log(x)`">;
def Anvil_SqrtOp : Anvil_FloatUnaryOp<"sqrt", 1, "`sqrt(x)`">;
def Anvil_RsqrtOp : Anvil_FloatUnaryOp<"rsqrt", 1, "`1 / sqrt(x)`">;
def Anvil_TanhOp : Anvil_FloatUnaryOp<"tanh", 1, "`tanh(x)`">;
def Anvil_CosOp : Anvil_FloatUnaryOp<"cos", 1, "`cos(x)`">;
def Anvil_SinOp : Anvil_FloatUnaryOp<"sin", 1, "`sin(x)`">;
def Anvil_ErfOp : Anvil_FloatUnaryOp<"erf", 1, "the error function `erf(x)`">;
def Anvil_SigmoidOp : Anvil_FloatUnaryOp<"sigmoid", 3,
                                         "the logistic `1 / (1 + exp(-x))`">;
def Anvil_SiluOp : Anvil_FloatUnaryOp<"silu", 4, "SiLU (swish) `x * sigmoid(x)`">;
def Anvil_ReluOp : Anvil_FloatUnaryOp<"relu", 1, "`max(x, 0)`">;

def Anvil_GeluOp : Anvil_ElementwiseOp<"gelu", 8, [Anvil_VJP, SameOperandsAndResultType,
                                                   InferTypeOpInterface]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `erf`:  `0.5 x (1 + erf(x / sqrt 2))`.
    `tanh`: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (GPT-2's form).

    ```mlir
    %y = anvil.gelu tanh %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Anvil_GeluApproximation:$approximation,
                       Anvil_FloatTensor:$operand);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = "$approximation $operand attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Comparisons and selection
//===----------------------------------------------------------------------===//

def Anvil_CompareOp : Anvil_ElementwiseOp<"compare", 1, [Anvil_NonDifferentiable, 
    DeclareOpInterfaceMethods<InferTypeOpInterface>, AllTypesMatch<["lhs", "rhs"]>,
    TypesMatchWith<"result is an i1 tensor of the operands' shape", "lhs",
                   "result", "::mlir::anvil::getBoolTensorType($_self)">]> {
  let summary = "Elementwise comparison";
  let description = [{
    ```mlir
    %m = anvil.compare lt, %a, %b : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Anvil_ComparisonDirection:$direction,
                       Anvil_Tensor:$lhs, Anvil_Tensor:$rhs);
  let results = (outs Anvil_BoolTensor:$result);
  let assemblyFormat = "$direction `,` $lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Anvil_SelectOp : Anvil_ElementwiseOp<"select", 1, [Anvil_VJP, 
    DeclareOpInterfaceMethods<InferTypeOpInterface>, AllTypesMatch<["on_true", "on_false", "result"]>,
    TypesMatchWith<"condition is an i1 tensor of the result's shape", "result",
                   "condition", "::mlir::anvil::getBoolTensorType($_self)">]> {
  let summary = "Elementwise `condition ? on_true : on_false`";
  let description = [{
    ```mlir
    %y = anvil.select %m, %a, %b : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Anvil_BoolTensor:$condition, Anvil_Tensor:$on_true,
                       Anvil_Tensor:$on_false);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat =
      "$condition `,` $on_true `,` $on_false attr-dict `:` type($result)";
}

def Anvil_StopGradientOp : Anvil_ElementwiseOp<"stop_gradient", 0, [
    SameOperandsAndResultType, InferTypeOpInterface, Anvil_VJP]> {
  let summary = "Identity whose operand receives no gradient";
  let description = [{
    Returns its operand unchanged; differentiation treats the result as a
    constant, so nothing flows back into the operand.

    ```mlir
    %t = anvil.stop_gradient %target : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Anvil_ReshapeOp : Anvil_CostedOp<"reshape",
                                     [Anvil_VJP, SameOperandsAndResultElementType]> {
  let summary = "Reinterprets a tensor with a new shape of the same size";
  let description = [{
    Row-major order is kept; the element counts must agree.

    ```mlir
    %y = anvil.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Anvil_TransposeOp : Anvil_CostedOp<"transpose", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is operand dimension `permutation[i]`.

    ```mlir
    %y = anvil.transpose %x, [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $permutation attr-dict `:` type($operand) `->` type($result)
  }];
  let hasFolder = 1;
}

def Anvil_BroadcastOp : Anvil_CostedOp<"broadcast",
                                       [Anvil_VJP, SameOperandsAndResultElementType]> {
  let summary = "Broadcasts a tensor to a larger shape";
  let description = [{
    Operand dimension `i` becomes result dimension `dimensions[i]`; it must
    equal that result dimension or be 1 (then it is repeated). `dimensions`
    is strictly increasing; result dimensions it does not name are new.

    ```mlir
    %y = anvil.broadcast %bias, dims = [2] : tensor<768xf32> -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand, DenseI64ArrayAttr:$dimensions);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $dimensions attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Anvil_SliceOp : Anvil_GatheringOp<"slice", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "A strided slice `operand[start:limit:stride]` per dimension";
  let description = [{
    ```mlir
    %y = anvil.slice %x [0:2:1, 4:8:2] : tensor<4x8xf32> -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = [{
    $operand custom<SliceRanges>($start, $limit, $stride) attr-dict
    `:` type($operand) `->` type($result)
  }];
}

def Anvil_ConcatOp : Anvil_CostedOp<"concat", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Concatenates tensors along one dimension";
  let description = [{
    ```mlir
    %y = anvil.concat %a, %b dim = 1 : (tensor<4x2xf32>, tensor<4x6xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Anvil_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Anvil_Tensor:$result);
  let hasCanonicalizer = 1;
  let assemblyFormat = [{
    $inputs `dim` `=` $dim attr-dict `:` functional-type($inputs, $result)
  }];
}

def Anvil_SplitOp : Anvil_CostedOp<"split", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Splits a tensor along one dimension into pieces of given sizes";
  let description = [{
    ```mlir
    %q, %k, %v = anvil.split %qkv dim = 2 sizes [768, 768, 768]
        : tensor<8x128x2304xf32> -> tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand, I64Attr:$dim,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Anvil_Tensor>:$results);
  let assemblyFormat = [{
    $operand `dim` `=` $dim `sizes` $sizes attr-dict `:` type($operand) `->` type($results)
  }];
}

def Anvil_PadOp : Anvil_CostedOp<"pad", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Pads a tensor with a constant";
  let description = [{
    Adds `low[i]` elements before and `high[i]` after dimension `i`, all
    equal to `value` (converted to the element type).

    ```mlir
    %y = anvil.pad %x low [0, 1] high [0, 2] {value = -1.0} : tensor<4x8xf32> -> tensor<4x11xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = [{
    $operand `low` $low `high` $high attr-dict `:` type($operand) `->` type($result)
  }];
}

def Anvil_GatherOp : Anvil_GatheringOp<"gather", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Selects slices along one axis by index (`numpy.take`)";
  let description = [{
    The result shape is `operand.shape[:axis] + indices.shape +
    operand.shape[axis+1:]`. Indices must lie in `[0, operand.shape[axis])`.

    ```mlir
    %y = anvil.gather %x[%idx] axis = 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Anvil_Tensor:$operand, Anvil_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Anvil_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $indices `]` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Anvil_ReduceOp<string mnemonic, string what, Type tensorType>
    : Anvil_CostedOp<mnemonic, [Anvil_VJP, InferTypeOpAdaptor,
                                SameOperandsAndResultElementType]> {
  let summary = what # " over the given dimensions";
  let description = [{
    Reduces the dimensions listed in `dims` (increasing, no repeats). With
    `keep_dims` they stay as size 1, otherwise they are removed.

    ```mlir
    %y = anvil.}] # mnemonic # [{ %x dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins tensorType:$operand, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs tensorType:$result);
  let assemblyFormat = [{
    $operand `dims` $dims (`keep_dims` $keep_dims^)? attr-dict `:` type($operand) `->` type($result)
  }];
}

def Anvil_ReduceSumOp : Anvil_ReduceOp<"reduce_sum", "Sum", Anvil_NumericTensor>;
def Anvil_ReduceMeanOp : Anvil_ReduceOp<"reduce_mean", "Arithmetic mean",
                                        Anvil_FloatTensor>;
def Anvil_ReduceMaxOp : Anvil_ReduceOp<"reduce_max", "Maximum", Anvil_NumericTensor>;
def Anvil_ReduceMinOp : Anvil_ReduceOp<"reduce_min", "Minimum", Anvil_NumericTensor>;

def Anvil_ArgmaxOp : Anvil_CostedOp<"argmax", [Anvil_NonDifferentiable, InferTypeOpAdaptor]> {
  let summary = "Index of the largest element along one dimension";
  let description = [{
    Ties resolve to the smallest index. The result has `i64` elements.

    ```mlir
    %i = anvil.argmax %logits dim = 1 : tensor<4x8xf32> -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Anvil_NumericTensor:$operand, I64Attr:$dim,
                       UnitAttr:$keep_dims);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = [{
    $operand `dim` `=` $dim (`keep_dims` $keep_dims^)? attr-dict `:` type($operand) `->` type($result)
  }];
}

def Anvil_SoftmaxOp : Anvil_CostedOp<"softmax", [Anvil_VJP, SameOperandsAndResultType,
                                                 InferTypeOpInterface]> {
  let summary = "Softmax along one dimension";
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along `dim`.

    ```mlir
    %p = anvil.softmax %x dim = 1 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, I64Attr:$dim);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = "$operand `dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Anvil_LogSoftmaxOp : Anvil_CostedOp<"log_softmax",
    [Anvil_VJP, SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = "Logarithm of the softmax along one dimension";
  let description = [{
    `x - max(x) - log(sum(exp(x - max(x))))` along `dim`.

    ```mlir
    %p = anvil.log_softmax %x dim = 1 : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, I64Attr:$dim);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = "$operand `dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Anvil_MatmulOp : Anvil_CostedOp<"matmul", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Batched matrix product with optional transposes";
  let description = [{
    Multiplies the trailing two dimensions: `(..., M, K) x (..., K, N) ->
    (..., M, N)`, after transposing the last two dimensions of `lhs` or `rhs`
    when `transpose_lhs` / `transpose_rhs` is set. Either both operands have
    the same batch dimensions, or `rhs` is a matrix shared by every batch
    (the usual `x @ W` of a linear layer).

    On `bf16` or `f16` operands the products are exact and accumulate in
    `f32`; the result is rounded to the element type once (what a tensor
    core GEMM with f32 accumulation computes; anvil-bf16 makes them).

    ```mlir
    %y = anvil.matmul %x, %w : (tensor<8x128x768xf32>, tensor<768x3072xf32>) -> tensor<8x128x3072xf32>
    %s = anvil.matmul %q, %k {transpose_rhs} : (tensor<8x12x128x64xf32>, tensor<8x12x128x64xf32>) -> tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins Anvil_NumericTensor:$lhs, Anvil_NumericTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Anvil_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Anvil_MatmulF8Op : Anvil_CostedOp<"matmul_f8"> {
  let summary = "Scaled matrix product of 8-bit float operands, accumulated in f32";
  let description = [{
    `anvil.matmul`'s product (the same shapes and transposes) of operands
    stored in 8 bits (`f8E4M3FN` or `f8E5M2`, not both `f8E5M2`), times the
    product of two scalars: `(lhs_scale rhs_scale) sum_k lhs rhs`. Every
    product of two 8-bit floats is exact in `f32` and the products are
    accumulated in `f32` (on the CPU; Hopper's FP8 tensor cores keep fewer
    bits between cuBLASLt's promotions to `f32`); the `f32` sum is
    multiplied by the two scales' `f32` product, and a `bf16` result is
    that `f32` value rounded to nearest even (what cuBLASLt's FP8 GEMM
    computes with the scales as its A and B scale pointers and D of that
    type). With a `bias` (bf16, one per column; the result bf16 too), the
    bias is added to the scaled sum before the rounding (cuBLASLt's `BIAS`
    epilogue).

    anvil-decompose makes it, after differentiation (it has no VJP), of an
    `anvil.matmul` whose operands are both tensorwise `anvil.fp8_quantize`
    results: the GEMM reads the 8-bit codes (a quarter of the bytes), and
    the scales are their dequantization factors, `1 / s`. Each backend
    calls one runtime function for it (anvil-bufferize): the CPU's widens
    the codes and calls BLAS; the CUDA backend's is cuBLASLt's FP8 GEMM,
    which takes both operands with K innermost (`transpose_rhs`, no
    `transpose_lhs`).

    ```mlir
    %y = anvil.matmul_f8 %x8, %w8 scales(%ux, %uw) {transpose_rhs} : (tensor<128x768xf8E4M3FN>, tensor<3072x768xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<128x3072xbf16>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$lhs, Anvil_FloatTensor:$rhs,
                       0DTensorOf<[F32]>:$lhs_scale,
                       0DTensorOf<[F32]>:$rhs_scale,
                       Optional<Anvil_FloatTensor>:$bias,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `scales` `(` $lhs_scale `,` $rhs_scale `)`
    (`bias` `(` $bias^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// The GEMMs with cuBLASLt's epilogues (anvil-gemm-epilogues).
include "anvil/Dialect/Anvil/IR/AnvilGemmEpilogueOps.td"

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

def Anvil_LayerNormOp : Anvil_CostedOp<"layer_norm", [Anvil_VJP, InferTypeOpAdaptor,
                                                      AttrSizedOperandSegments]> {
  let summary = "Layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over dimensions `[axis, rank)` with the biased variance:
    `(x - mean) / sqrt(var + epsilon) * scale + bias`. `scale` and `bias` are
    optional and have the shape `operand.shape[axis:]`.

    ```mlir
    %y = anvil.layer_norm %x scale(%g) bias(%b) axis = 2 {epsilon = 1.0e-05}
        : (tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand,
                       Optional<Anvil_FloatTensor>:$scale,
                       Optional<Anvil_FloatTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`scale` `(` $scale^ `)`)? (`bias` `(` $bias^ `)`)? `axis` `=` $axis
    attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_RMSNormOp : Anvil_CostedOp<"rms_norm", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Root-mean-square normalization over the trailing dimensions";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale` over dimensions `[axis, rank)`.

    ```mlir
    %y = anvil.rms_norm %x scale(%g) axis = 2 {epsilon = 1.0e-05}
        : (tensor<8x128x4096xf32>, tensor<4096xf32>) -> tensor<8x128x4096xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand,
                       Optional<Anvil_FloatTensor>:$scale, I64Attr:$axis,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`scale` `(` $scale^ `)`)? `axis` `=` $axis attr-dict
    `:` functional-type(operands, results)
  }];
}

def Anvil_GroupNormOp : Anvil_CostedOp<"group_norm", [Anvil_VJP, InferTypeOpAdaptor,
                                                      AttrSizedOperandSegments]> {
  let summary = "Group normalization of `(N, C, spatial...)` activations";
  let description = [{
    Splits the `C` channels into `groups` groups and normalizes each
    `(n, group)` over its channels and all spatial positions; `scale` and
    `bias` have shape `(C)`.

    ```mlir
    %y = anvil.group_norm %x scale(%g) bias(%b) groups = 32
        : (tensor<2x320x64x64xf32>, tensor<320xf32>, tensor<320xf32>) -> tensor<2x320x64x64xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand,
                       Optional<Anvil_FloatTensor>:$scale,
                       Optional<Anvil_FloatTensor>:$bias, I64Attr:$groups,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`scale` `(` $scale^ `)`)? (`bias` `(` $bias^ `)`)? `groups` `=` $groups
    attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_InstanceNormOp : Anvil_CostedOp<"instance_norm",
    [Anvil_VJP, InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "Instance normalization of `(N, C, spatial...)` activations";
  let description = [{
    Normalizes each `(n, c)` over the spatial positions; `scale` and `bias`
    have shape `(C)`.

    ```mlir
    %y = anvil.instance_norm %x scale(%g) bias(%b)
        : (tensor<2x32x16x16x16xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x32x16x16x16xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand,
                       Optional<Anvil_FloatTensor>:$scale,
                       Optional<Anvil_FloatTensor>:$bias,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`scale` `(` $scale^ `)`)? (`bias` `(` $bias^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_BatchNormTrainOp : Anvil_CostedOp<"batch_norm_train",
                                            [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Batch normalization with batch statistics (training)";
  let description = [{
    Normalizes `(N, C, spatial...)` activations per channel with the mean and
    biased variance over `N` and the spatial positions, then applies
    `scale` and `bias` (shape `(C)`). Also returns the batch mean and biased
    variance (shape `(C)`) from which the training step updates the running
    statistics.

    ```mlir
    %y, %mean, %var = anvil.batch_norm_train %x, %g, %b {epsilon = 1.0e-05}
        : (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, Anvil_FloatTensor:$scale,
                       Anvil_FloatTensor:$bias,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Anvil_FloatTensor:$result, Anvil_FloatTensor:$batch_mean,
                      Anvil_FloatTensor:$batch_variance);
  let assemblyFormat = [{
    $operand `,` $scale `,` $bias attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_BatchNormInferenceOp : Anvil_CostedOp<"batch_norm_inference",
                                                [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Batch normalization with given (running) statistics";
  let description = [{
    `(x - mean) / sqrt(variance + epsilon) * scale + bias` per channel of
    `(N, C, spatial...)` activations; the other operands have shape `(C)`.

    ```mlir
    %y = anvil.batch_norm_inference %x, %g, %b, %mean, %var
        : (tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64x56x56xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, Anvil_FloatTensor:$scale,
                       Anvil_FloatTensor:$bias, Anvil_FloatTensor:$mean,
                       Anvil_FloatTensor:$variance,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $scale `,` $bias `,` $mean `,` $variance attr-dict
    `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

def Anvil_DropoutOp : Anvil_CostedOp<"dropout", [Anvil_VJP, 
    AllTypesMatch<["operand", "result"]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Seeded inverted dropout";
  let description = [{
    Zeroes each element with probability `rate` and scales the others by
    `1 / (1 - rate)`. The mask is a pure function of `seed`, the element's
    row-major index `i` and `rate`, so the backward pass regenerates it and
    every backend draws the same mask: element `i` is kept iff
    `u(seed, i) >= rate`, where `u(s, i) = (m(s ^ m(i)) >> 11) * 2^-53` and
    `m` is splitmix64 (`x += 0x9E3779B97F4A7C15`, then
    `x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9`,
    `x = (x ^ (x >> 27)) * 0x94D049BB133111EB`, `x ^ (x >> 31)`).

    ```mlir
    %y = anvil.dropout %x, %seed rate = 1.0e-01 : tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, Anvil_SeedTensor:$seed,
                       F64Attr:$rate);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $seed `rate` `=` $rate attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Anvil_Fp8QuantizeOp : Anvil_Op<"fp8_quantize", [Anvil_VJP,
    AllTypesMatch<["operand", "result"]>,
    OptionalTypesMatchWith<"scale is a scalar of the operand's element type",
        "result", "scale",
        "::mlir::RankedTensorType::get({}, ::mlir::getElementTypeOrSelf($_self))">,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "FP8 quantization (tensorwise or MX block scaling)";
  let description = [{
    The value an FP8 GEMM sees, in the operand's type: with `forward`
    (`f8E4M3FN` or `f8E5M2`), the tensor is scaled, cast to the format
    (round to nearest even, saturating) and back, and unscaled:

      y = cast(cast(x * s, forward), f32) / s

    The scale `s` is, by the operand form:
    - tensorwise, current scaling (the default): the format's largest
      finite value over the tensor's largest magnitude,
      `s = (amax > 0 ? fmax / amax : 1)`;
    - tensorwise, given: the `scale` operand (a scalar; the delayed
      recipe's scale from an amax history, see anvil-fp8-delayed-scaling);
    - MX block scaling (`block N dim d`): each run of N consecutive elements
      along dimension d has its own power-of-two scale, the OCP MX rule
      with an E8M0 shared exponent: `y = cast(x / X, forward) * X` with
      `X = 2^clamp(floor(log2 amax_block) - emax, -127, 127)`, emax the
      exponent of the format's largest value (8 for E4M3, 15 for E5M2);
      a block whose amax is not finite is NaN.

    Without `forward` the forward value is `x`. The gradient is quantized
    the same way with `backward` (none: passed through), Transformer
    Engine's recipe: E4M3 for weights and activations in the forward pass,
    E5M2 for the gradients of the backward GEMMs. The gradient's
    quantization has the op's blocks (along the gradient's dimension d) or
    is tensorwise with current scaling; its amax history, for the delayed
    recipe, is `history` (or `<history>.grad` when the op quantizes its
    forward value too). The quantization itself is not differentiated (a
    straight-through estimator): finite differences see a step function, so
    test/Training checks the rule.

    With `amax_axis`, the operand is one rank's part of a tensor split over
    that mesh axis (tensor parallelism): the amax is the maximum over the
    axis's ranks, so every rank scales its part as the whole tensor would
    be scaled.

    `history` names the tensor's amax history under the delayed recipe.
    Until anvil-fp8-delayed-scaling gives the training step its histories
    (and the op a `scale`), and in evaluation, the op scales by the current
    amax.

    ```mlir
    %xq = anvil.fp8_quantize %x forward f8E4M3FN : tensor<8x64xf32>
    %yq = anvil.fp8_quantize %y backward f8E5M2 : tensor<8x64xf32>
    %wq = anvil.fp8_quantize %w scale %s forward f8E4M3FN : tensor<64x64xf32>
    %mx = anvil.fp8_quantize %x forward f8E4M3FN block 32 dim 1 : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand,
                       Optional<Anvil_FloatTensor>:$scale,
                       OptionalAttr<TypeAttr>:$forward,
                       OptionalAttr<TypeAttr>:$backward,
                       OptionalAttr<I64Attr>:$block_size,
                       OptionalAttr<I64Attr>:$block_dim,
                       OptionalAttr<StrAttr>:$amax_axis,
                       OptionalAttr<StrAttr>:$history);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand (`scale` $scale^)? (`forward` $forward^)? (`backward` $backward^)?
    (`block` $block_size^ `dim` $block_dim)? (`amax_axis` $amax_axis^)?
    (`history` $history^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // max, divide, two casts, multiply, divide.
    static constexpr int64_t kFlopsPerElement = 6;

    /// The quantization of this op's gradient (its `backward` format), at
    /// `builder`'s insertion point: the op's blocks along the gradient's
    /// dimension, its amax axis and its gradient history.
    Value quantizeGradient(OpBuilder &builder, Value gradient);
  }];
}

def Anvil_EmbeddingOp : Anvil_GatheringOp<"embedding", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Looks up rows of an embedding table";
  let description = [{
    `table` is `(V, C)`; the result is `indices.shape + (C)`.

    ```mlir
    %e = anvil.embedding %wte[%tokens] : (tensor<50304x768xf32>, tensor<8x128xi32>) -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$table, Anvil_IndexTensor:$indices);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_EmbeddingGradOp : Anvil_CostedOp<"embedding_grad",
                                            [InferTypeOpAdaptor]> {
  let summary = "Sums gradient rows into a table (the VJP of embedding)";
  let description = [{
    `grad` is `indices.shape + (C)`; the result is the `(rows, C)` table
    whose row `r` is the sum of the `grad` rows whose index is `r` (zero for
    rows never indexed): a scatter-add.

    ```mlir
    %dwte = anvil.embedding_grad %g[%tokens] rows = 50304 : (tensor<8x128x768xf32>, tensor<8x128xi32>) -> tensor<50304x768xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$grad, Anvil_IndexTensor:$indices,
                       I64Attr:$rows);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `[` $indices `]` `rows` `=` $rows attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_EmbeddingBagOp : Anvil_GatheringOp<"embedding_bag",
                                             [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Sums or averages fixed-size bags of embedding rows";
  let description = [{
    `table` is `(V, C)`, `indices` is `(B, L)`: each of the `B` bags holds `L`
    row indices; the result `(B, C)` is their sum or mean.

    ```mlir
    %e = anvil.embedding_bag sum %table[%ids] : (tensor<1000x128xf32>, tensor<64x3xi64>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = (ins Anvil_BagMode:$mode, Anvil_FloatTensor:$table,
                       Anvil_IndexTensor:$indices);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $mode $table `[` $indices `]` attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_RopeOp : Anvil_CostedOp<"rope", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Rotary position embedding";
  let description = [{
    `operand` is `(..., T, D)` with `D` even, `cos` and `sin` are `(T, D/2)`.
    Each pair `(a, b)` of the last dimension becomes
    `(a cos - b sin, a sin + b cos)`. Pairs are `(i, i + D/2)` (the
    Llama/NeoX layout) or, with `interleaved`, `(2i, 2i + 1)` (GPT-J).

    ```mlir
    %y = anvil.rope %q, %cos, %sin : (tensor<8x32x128x128xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<8x32x128x128xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, Anvil_FloatTensor:$cos,
                       Anvil_FloatTensor:$sin, UnitAttr:$interleaved);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $cos `,` $sin attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_AttentionOp : Anvil_CostedOp<"attention", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Scaled dot-product attention (causal, grouped-query, masked, cross)";
  let description = [{
    `query` is `(B, Hq, Tq, D)`, `key` is `(B, Hkv, Tk, D)`, `value` is
    `(B, Hkv, Tk, Dv)` with `Hq` a multiple of `Hkv` (query head `h` uses
    key/value head `h / (Hq / Hkv)`); the result is `(B, Hq, Tq, Dv)`:

    `softmax(query @ key^T * scale + mask) @ value`

    `scale` defaults to `1 / sqrt(D)`. The optional additive `mask` is
    `(Tq, Tk)` or `(B|1, Hq|1, Tq, Tk)`. With `causal`, query `i` sees keys
    `j <= i + Tk - Tq` (aligned at the bottom right).

    With `bf16_gemms` (set by `anvil-bf16`, mixed precision), the op's
    products, `query @ key^T` and `probabilities @ value` and the four of
    its gradient, read bf16 copies of their operands and accumulate in f32,
    each product rounded to bf16 (`anvil.matmul`'s contract for bf16) and
    widened back to the op's type; the softmax and the result stay in that
    type. The interpreter computes them exactly.

    ```mlir
    %o = anvil.attention %q, %k, %v {causal}
        : (tensor<8x32x128x128xbf16>, tensor<8x8x128x128xbf16>, tensor<8x8x128x128xbf16>) -> tensor<8x32x128x128xbf16>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$query, Anvil_FloatTensor:$key,
                       Anvil_FloatTensor:$value,
                       Optional<Anvil_FloatTensor>:$mask, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale, UnitAttr:$bf16_gemms);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
}

def Anvil_FlashAttentionOp : Anvil_CostedOp<"flash_attention",
                                             [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Fused attention that keeps each row's log-sum-exp for its gradient";
  let description = [{
    `anvil.attention` without a mask, or with a mask that depends only on
    the batch element and the key (a padding mask), computed as one fused
    kernel: the `(B, Hq, Tq, Tk)` scores and probabilities are never
    stored. Operands, `causal`, `scale` (default `1 / sqrt(D)`) and
    `bf16_gemms` mean what they mean on `anvil.attention`, and `result` is
    its result. The optional `key_bias` `(B, Tk)` is that mask: it is
    added to every query's scaled scores of its batch element,
    `softmax(query @ key^T * scale + key_bias[b])`. Its element type is the
    op's, f32 with bf16 tensors. No gradient flows into it: the op's VJP
    refuses a key bias that a float argument of the function reaches
    (`anvil-flash-attention` fuses only masks made from data, such as
    BERT's from its integer `attention_mask`). `lse`
    `(B, Hq, Tq)` is each row's log-sum-exp of the scaled (masked) scores,
    from which the gradient (`anvil.flash_attention_grad`) recomputes the
    probabilities. `anvil-flash-attention` makes it from `anvil.attention`.
    The element type is f32 (the backends' fused kernels), f64 (the
    interpreter) or, with `bf16_gemms`, bf16: the operands and the result
    in bf16 (the result is the rounded product P V either way), `lse` in
    f32.

    `bshd` lays the query, key, value and result out as `(B, T, H, D)`
    (batch, sequence, heads, head dimension) instead of `(B, H, T, D)`:
    the layout a projection writes, so that no transpose is needed before
    or after the op (`anvil-flash-attention` chooses it when that removes
    transposes). `lse` is `(B, Hq, Tq)` in both layouts.

    ```mlir
    %o, %lse = anvil.flash_attention %q, %k, %v {causal}
        : (tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>)
        -> (tensor<8x12x1024x64xf32>, tensor<8x12x1024xf32>)
    %o2, %lse2 = anvil.flash_attention %q2, %k2, %v2 {bshd, causal}
        : (tensor<8x1024x12x64xf32>, tensor<8x1024x12x64xf32>, tensor<8x1024x12x64xf32>)
        -> (tensor<8x1024x12x64xf32>, tensor<8x12x1024xf32>)
    %o3, %lse3 = anvil.flash_attention %q3, %k3, %v3 key_bias(%padding)
        : (tensor<8x16x512x64xf32>, tensor<8x16x512x64xf32>, tensor<8x16x512x64xf32>, tensor<8x512xf32>)
        -> (tensor<8x16x512x64xf32>, tensor<8x16x512xf32>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$query, Anvil_FloatTensor:$key,
                       Anvil_FloatTensor:$value,
                       Optional<Anvil_FloatTensor>:$key_bias, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale, UnitAttr:$bf16_gemms,
                       UnitAttr:$bshd);
  let results = (outs Anvil_FloatTensor:$result, Anvil_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`key_bias` `(` $key_bias^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// `scale`, or its default 1 / sqrt(D).
    double getScaleOrDefault();
  }];
}

def Anvil_FlashAttentionGradOp : Anvil_CostedOp<"flash_attention_grad",
                                                [InferTypeOpAdaptor]> {
  let summary = "The gradient of anvil.flash_attention";
  let description = [{
    From the forward op's operands and results and the result's gradient
    `result_grad`, the gradients of `query`, `key` and `value` (the forward
    op's `key_bias`, when it has one, is an operand here too, after
    `result_grad`; it gets no gradient). With
    `P = exp(S - lse)` (S the scaled, masked scores):
    `dV = P^T dO`, `dP = dO V^T`, `dS = P (dP - rowsum(dP P))`,
    `dQ = dS K scale`, `dK = dS^T Q scale`; under grouped-query attention
    `dK` and `dV` sum over the query heads that share a key/value head.
    `bf16_gemms` runs the five products on bf16 operands as the forward
    op does. Attributes must be the forward op's; with `bshd`, the
    gradients are laid out as their operands, `(B, T, H, D)`.

    `packed_grads` (with `bshd`, as many keys as queries) gives the three
    gradients as one result `(B, T, Hq D + Hkv D + Hkv Dv)`: dQ, dK and dV
    side by side in each row, as a fused q/k/v projection's output
    gradient is laid out. The canonicalizer makes it of an
    `anvil.concat` of the three gradients reshaped to `(B, T, H D)`, in
    order along dimension 2 (the VJP of that projection's split), so the
    kernels write into the concatenation and nothing copies them there.

    ```mlir
    %dq, %dk, %dv = anvil.flash_attention_grad %q, %k, %v, %o, %lse, %do {causal}
        : (tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>,
           tensor<8x12x1024x64xf32>, tensor<8x12x1024xf32>, tensor<8x12x1024x64xf32>)
        -> (tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$query, Anvil_FloatTensor:$key,
                       Anvil_FloatTensor:$value, Anvil_FloatTensor:$result,
                       Anvil_FloatTensor:$lse, Anvil_FloatTensor:$result_grad,
                       Optional<Anvil_FloatTensor>:$key_bias,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale,
                       UnitAttr:$bf16_gemms, UnitAttr:$bshd,
                       UnitAttr:$packed_grads);
  // The query's, key's and value's gradients, or with `packed_grads` the
  // three in one tensor.
  let results = (outs Variadic<Anvil_FloatTensor>:$grads);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $lse `,` $result_grad
    (`key_bias` `(` $key_bias^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// `scale`, or its default 1 / sqrt(D).
    double getScaleOrDefault();
  }];
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, upsampling
//===----------------------------------------------------------------------===//

def Anvil_ConvOp : Anvil_CostedOp<"conv", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "1-D, 2-D or 3-D convolution with groups";
  let description = [{
    `input` is `(N, Cin, spatial...)`, `filter` is `(Cout, Cin/groups, k...)`
    and the optional `bias` is `(Cout)`. Output size per spatial dimension:
    `(in + pad_low + pad_high - dilation * (k - 1) - 1) / stride + 1`.

    ```mlir
    %y = anvil.conv %x, %w, %b stride [2, 2] pad_low [3, 3] pad_high [3, 3] dilation [1, 1]
        : (tensor<8x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<8x64x112x112xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$input, Anvil_FloatTensor:$filter,
                       Optional<Anvil_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad_low,
                       DenseI64ArrayAttr:$pad_high, DenseI64ArrayAttr:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? `stride` $stride `pad_low` $pad_low
    `pad_high` $pad_high `dilation` $dilation attr-dict
    `:` functional-type(operands, results)
  }];
}

def Anvil_ConvFilterGradOp : Anvil_CostedOp<"conv_filter_grad",
                                             [InferTypeOpAdaptor]> {
  let summary = "The filter gradient of a convolution";
  let description = [{
    For `anvil.conv` with these attributes, the gradient of the filter:
    `dw[co, ci, k] = sum over n and output positions o of
    grad[n, co, o] * input[n, g * Cin/groups + ci, o * stride - pad_low + k * dilation]`
    (taps outside the input contribute nothing), with `g = co / (Cout/groups)`.
    The result is `(Cout, Cin/groups, kernel...)`, `Cout` read from `grad`.

    ```mlir
    %dw = anvil.conv_filter_grad %x, %g kernel [3, 3] stride [1, 1] pad_low [1, 1] pad_high [1, 1] dilation [1, 1]
        : (tensor<8x64x56x56xf32>, tensor<8x64x56x56xf32>) -> tensor<64x64x3x3xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$input, Anvil_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$pad_low, DenseI64ArrayAttr:$pad_high,
                       DenseI64ArrayAttr:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `kernel` $kernel `stride` $stride `pad_low` $pad_low
    `pad_high` $pad_high `dilation` $dilation attr-dict
    `:` functional-type(operands, results)
  }];
}

def Anvil_MaxPoolGradOp : Anvil_CostedOp<"max_pool_grad", [InferTypeOpAdaptor]> {
  let summary = "The operand gradient of a max pooling";
  let description = [{
    Routes `grad[n, c, o]` to the position of the maximum of window `o` of
    `operand` (the first one in row-major window order on ties), summing
    where windows overlap. The result has the operand's type.

    ```mlir
    %dx = anvil.max_pool_grad %x, %g window [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1]
        : (tensor<8x64x112x112xf32>, tensor<8x64x56x56xf32>) -> tensor<8x64x112x112xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, Anvil_FloatTensor:$grad,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$pad_low, DenseI64ArrayAttr:$pad_high);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `,` $grad `window` $window `stride` $stride `pad_low` $pad_low
    `pad_high` $pad_high attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_ConvTransposeOp : Anvil_CostedOp<"conv_transpose", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Transposed convolution (the adjoint of `anvil.conv`)";
  let description = [{
    `input` is `(N, Cin, spatial...)`, `filter` is `(Cin, Cout/groups, k...)`
    as in PyTorch, `bias` is `(Cout)`. Output size per spatial dimension:
    `(in - 1) * stride - pad_low - pad_high + dilation * (k - 1) + output_padding + 1`.

    ```mlir
    %y = anvil.conv_transpose %x, %w stride [2, 2, 2] pad_low [0, 0, 0] pad_high [0, 0, 0]
        dilation [1, 1, 1] output_padding [0, 0, 0]
        : (tensor<2x64x8x8x8xf32>, tensor<64x32x2x2x2xf32>) -> tensor<2x32x16x16x16xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$input, Anvil_FloatTensor:$filter,
                       Optional<Anvil_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad_low,
                       DenseI64ArrayAttr:$pad_high, DenseI64ArrayAttr:$dilation,
                       DenseI64ArrayAttr:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? `stride` $stride `pad_low` $pad_low
    `pad_high` $pad_high `dilation` $dilation `output_padding` $output_padding
    attr-dict `:` functional-type(operands, results)
  }];
}

class Anvil_PoolOp<string mnemonic, string what> : Anvil_CostedOp<mnemonic,
    [Anvil_VJP, InferTypeOpAdaptor, SameOperandsAndResultElementType]> {
  let summary = what # " pooling over the spatial dimensions";
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `window` $window `stride` $stride `pad_low` $pad_low `pad_high` $pad_high
    attr-dict `:` type($operand) `->` type($result)
  }];
}

def Anvil_MaxPoolOp : Anvil_PoolOp<"max_pool", "Max"> {
  let description = [{
    `operand` is `(N, C, spatial...)`; padding never wins the maximum.
    Output size: `(in + pad_low + pad_high - window) / stride + 1`.

    ```mlir
    %y = anvil.max_pool %x window [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1]
        : tensor<8x64x112x112xf32> -> tensor<8x64x56x56xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, DenseI64ArrayAttr:$window,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad_low,
                       DenseI64ArrayAttr:$pad_high);
}

def Anvil_AvgPoolOp : Anvil_PoolOp<"avg_pool", "Average"> {
  let description = [{
    `operand` is `(N, C, spatial...)`. Windows are divided by the window size
    with `count_include_pad`, otherwise by the number of non-padding elements.

    ```mlir
    %y = anvil.avg_pool %x window [7, 7] stride [1, 1] pad_low [0, 0] pad_high [0, 0]
        : tensor<8x2048x7x7xf32> -> tensor<8x2048x1x1xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, DenseI64ArrayAttr:$window,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad_low,
                       DenseI64ArrayAttr:$pad_high, UnitAttr:$count_include_pad);
}

def Anvil_UpsampleNearestOp : Anvil_CostedOp<"upsample_nearest",
    [Anvil_VJP, InferTypeOpAdaptor, SameOperandsAndResultElementType]> {
  let summary = "Nearest-neighbour upsampling by integer factors";
  let description = [{
    Repeats each spatial element of `(N, C, spatial...)` `scale[i]` times
    along spatial dimension `i`.

    ```mlir
    %y = anvil.upsample_nearest %x scale [2, 2] : tensor<2x320x32x32xf32> -> tensor<2x320x64x64xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, DenseI64ArrayAttr:$scale);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `scale` $scale attr-dict `:` type($operand) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Anvil_CrossEntropyOp : Anvil_CostedOp<"cross_entropy", [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "Softmax cross-entropy with ignore index and label smoothing";
  let description = [{
    `logits` is `(..., C)` and `labels` is `(...)` of class indices. With
    label smoothing `s` the target puts `1 - s + s/C` on the label and `s/C`
    elsewhere. Positions whose label equals `ignore_index` contribute
    nothing, and `mean` divides by the number of the others (at least 1, so
    that a batch of ignored labels has loss 0). The result is a scalar, or
    `labels`-shaped with `none`.

    ```mlir
    %loss = anvil.cross_entropy mean %logits, %labels {ignore_index = -100 : i64}
        : (tensor<8x128x50304xf32>, tensor<8x128xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Anvil_Reduction:$reduction, Anvil_FloatTensor:$logits,
                       Anvil_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
}

class Anvil_PairLossOp<string mnemonic, string what, list<Trait> traits = []>
    : Anvil_CostedOp<mnemonic, !listconcat([InferTypeOpAdaptor], traits)> {
  let summary = what;
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $input `,` $target attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_MSELossOp : Anvil_PairLossOp<"mse_loss", "Mean squared error",
                                       [Anvil_VJP]> {
  let description = [{
    `(input - target)^2`, reduced. Both operands have one type.

    ```mlir
    %loss = anvil.mse_loss mean %pred, %noise : (tensor<2x4x64x64xf32>, tensor<2x4x64x64xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Anvil_Reduction:$reduction, Anvil_FloatTensor:$input,
                       Anvil_FloatTensor:$target);
}

def Anvil_BCEWithLogitsLossOp : Anvil_PairLossOp<"bce_with_logits",
    "Binary cross-entropy on logits", [Anvil_VJP]> {
  let description = [{
    `max(x, 0) - x * t + log(1 + exp(-|x|))` for logits `x` (`input`) and
    targets `t` in [0, 1], reduced.

    ```mlir
    %loss = anvil.bce_with_logits mean %logits, %clicks : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Anvil_Reduction:$reduction, Anvil_FloatTensor:$input,
                       Anvil_FloatTensor:$target);
}

def Anvil_FocalLossOp : Anvil_PairLossOp<"focal_loss",
    "Sigmoid focal loss (RetinaNet)", [Anvil_VJP]> {
  let description = [{
    With `p = sigmoid(x)`, `p_t = p t + (1 - p)(1 - t)` and
    `alpha_t = alpha t + (1 - alpha)(1 - t)`, each element contributes
    `alpha_t (1 - p_t)^gamma * bce_with_logits(x, t)`. A negative `alpha`
    disables the weighting.

    ```mlir
    %loss = anvil.focal_loss sum %logits, %targets {alpha = 2.5e-01, gamma = 2.0}
        : (tensor<2x1000x264xf32>, tensor<2x1000x264xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Anvil_Reduction:$reduction, Anvil_FloatTensor:$input,
                       Anvil_FloatTensor:$target,
                       DefaultValuedAttr<F64Attr, "0.25">:$alpha,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "2.0">:$gamma);
  let hasVerifier = 1;
}

def Anvil_DiceLossOp : Anvil_PairLossOp<"dice_loss", "Soft Dice loss (3D U-Net)",
                                        [Anvil_VJP]> {
  let description = [{
    `input` holds probabilities and `target` one-hot labels, both
    `(N, C, spatial...)`. Per `(n, c)`:
    `1 - (2 sum(p t) + smooth) / (sum(p) + sum(t) + smooth)`, then reduced
    over `(N, C)` (`none` returns the `(N, C)` values).

    ```mlir
    %loss = anvil.dice_loss mean %probs, %onehot {smooth = 1.0e-06}
        : (tensor<2x3x64x64x64xf32>, tensor<2x3x64x64x64xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Anvil_Reduction:$reduction, Anvil_FloatTensor:$input,
                       Anvil_FloatTensor:$target,
                       DefaultValuedAttr<Anvil_NonNegativeF64Attr, "1.0e-6">:$smooth);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def Anvil_AllReduceOp : Op<Anvil_Dialect, "all_reduce", [
    DeclareOpInterfaceMethods<Anvil_CostOpInterface, ["getFlops"]>,
    SameOperandsAndResultType, Anvil_VJP]> {
  let summary = "Reduces a tensor over the ranks of a mesh axis";
  let description = [{
    Every rank of the mesh axis `axis` (say `dp`, the data-parallel ranks)
    passes its `operand`; each gets back their elementwise sum, mean or
    maximum. A collective: every rank must reach the same all-reduces in
    the same order, so the op is not pure (it is never removed, merged or
    moved). In a world of one rank it returns its operand.

    Differentiation follows the convention of a result that is the same on
    every rank of the axis (a tensor-parallel layer's output after the
    row-parallel matmul's partial sums): each rank's gradient of the
    operand is the result's gradient (sum), or that over the number of
    ranks (mean); `max` has no gradient.

    ```mlir
    %g = anvil.all_reduce mean %grad axis "dp" : tensor<768x2304xf32>
    ```
  }];
  let arguments = (ins Anvil_CollectiveOp:$op, Anvil_FloatTensor:$operand,
                       StrAttr:$axis);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $op $operand `axis` $axis attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Anvil_AxisCopyOp : Op<Anvil_Dialect, "axis_copy", [
    SameOperandsAndResultType, Anvil_VJP]> {
  let summary = "A value every rank of an axis holds, used differently by each";
  let description = [{
    Returns its operand. It marks where a value that is the same on every
    rank of mesh axis `axis` enters computation that differs by rank (the
    input of a column-parallel matmul under tensor parallelism: Megatron's
    "copy to the tensor-parallel region"): the operand's gradient is the
    sum over the ranks of the result's gradients, an `anvil.all_reduce
    sum`. Not pure, so that it stays where the partitioner put it.

    ```mlir
    %x = anvil.axis_copy %h axis "tp" : tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, StrAttr:$axis);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = "$operand `axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Anvil_AxisIndexOp : Op<Anvil_Dialect, "axis_index", [Pure]> {
  let summary = "This rank's position on a mesh axis";
  let description = [{
    The rank's position (0 to n - 1) on mesh axis `axis`; 0 in a world of
    one. A vocabulary-parallel embedding uses it to find the rows of the
    table its rank holds.

    ```mlir
    %i = anvil.axis_index axis "tp" : tensor<i64>
    ```
  }];
  let arguments = (ins StrAttr:$axis);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "`axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Anvil_AllGatherOp : Op<Anvil_Dialect, "all_gather", [Anvil_VJP]> {
  let summary = "Concatenates every rank's tensor along dimension 0";
  let description = [{
    The ranks of mesh axis `axis` each pass an `operand` of the same type;
    each gets back their concatenation along dimension 0, in the order of
    the ranks' positions on the axis: the result has `n` times the
    operand's leading dimension, where `n` is the axis's size in the
    module's `anvil.mesh` (1 without one, where the result is the
    operand). A collective, never removed, merged or moved. ZeRO gathers
    the updated parameter shards with it; sequence parallelism gathers a
    layer's input before its column-parallel matmul, so its gradient is a
    `reduce_scatter sum` of the ranks' (different) gradients of the result.

    ```mlir
    %p = anvil.all_gather %shard axis "dp" : tensor<6144xf32> -> tensor<12288xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, StrAttr:$axis);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Anvil_ReduceScatterOp : Op<Anvil_Dialect, "reduce_scatter", [
    DeclareOpInterfaceMethods<Anvil_CostOpInterface, ["getFlops"]>,
    Anvil_VJP]> {
  let summary = "Reduces a tensor over a mesh axis and keeps this rank's block";
  let description = [{
    The ranks of mesh axis `axis` each pass an `operand` whose leading
    dimension divides into the axis's `n` ranks; rank `i` gets block `i`
    (along dimension 0) of their elementwise sum, mean or maximum. Equal
    to `all_reduce` followed by `axis_slice`, with a `1 / n` of the
    traffic. ZeRO reduces the gradients with it; sequence parallelism the
    partial sums of a row-parallel matmul. The operand's gradient is the
    `all_gather` of the results' gradients (over the ranks for a mean);
    `max` has none.

    ```mlir
    %g = anvil.reduce_scatter mean %grad axis "dp" : tensor<12288xf32> -> tensor<6144xf32>
    ```
  }];
  let arguments = (ins Anvil_CollectiveOp:$op, Anvil_FloatTensor:$operand,
                       StrAttr:$axis);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $op $operand `axis` $axis attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Anvil_AxisSliceOp : Op<Anvil_Dialect, "axis_slice", [Pure]> {
  let summary = "This rank's block of a tensor along dimension 0";
  let description = [{
    Splits `operand` along dimension 0 into as many equal blocks as mesh
    axis `axis` has ranks, and returns the block of this rank's position
    on the axis. No communication: every rank holds the whole operand.
    ZeRO takes each rank's shard of a replicated parameter with it.

    ```mlir
    %s = anvil.axis_slice %p axis "dp" : tensor<12288xf32> -> tensor<6144xf32>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$operand, StrAttr:$axis);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis attr-dict `:` type($operand) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILOPS_TD
