//===- AnvilGemmEpilogueOps.td - GEMMs with epilogues -------*- tablegen -*-===//
//
// The linear layers' GEMMs with their bias, GELU and gradients fused, in
// the forms of cuBLASLt's GELU_AUX_BIAS, BIAS, DGELU_BGRAD and BGRADA epilogues
// (anvil-gemm-epilogues makes them; anvil-decompose the FP8 GELU_AUX_BIAS
// form). Included by AnvilOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILGEMMEPILOGUEOPS_TD
#define ANVIL_DIALECT_ANVIL_IR_ANVILGEMMEPILOGUEOPS_TD

include "anvil/Dialect/Anvil/IR/AnvilBase.td"

def Anvil_LinearGeluOp : Anvil_CostedOp<"linear_gelu",
                                          [Anvil_VJP, InferTypeOpAdaptor]> {
  let summary = "A bf16 linear layer with its bias and tanh GELU fused";
  let description = [{
    `p = lhs rhs + bias` on bf16 operands: `lhs` is `(..., M, K)`, `rhs`
    the shared `(K, N)` weight (`(N, K)` with `transpose_rhs`) and `bias`
    the `(N)` vector (bf16, as cuBLASLt takes a bf16 GEMM's bias). The
    products are exact and accumulate in f32, and the bias is added to the
    f32 sum; `result` is `gelu_tanh(p)` and `pre` is `p`, each rounded to
    bf16 once. `pre` is what the gradient reads (`anvil.gelu_bias_grad`).
    Operands and results share one element type: bf16 for the backends
    (which call cuBLASLt, or a CPU function, for it), f64 in the
    interpreter's tests.

    It is the forward half of cuBLASLt's `GELU_AUX_BIAS` epilogue:
    `anvil-gemm-epilogues` makes it of `gelu(cast(matmul) + broadcast(bias))`
    when the GELU's readers round it to bf16, and the backends call one
    GEMM for it (`anvil_rt_gemm_bias_gelu`): the sum, the bias and the GELU
    are never stored in f32.

    ```mlir
    %y, %pre = anvil.linear_gelu %x, %w, %b
        : (tensor<8x1024x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16>)
        -> (tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$lhs, Anvil_FloatTensor:$rhs,
                       Anvil_FloatTensor:$bias, UnitAttr:$transpose_rhs);
  let results = (outs Anvil_FloatTensor:$result, Anvil_FloatTensor:$pre);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_LinearOp : Anvil_CostedOp<"linear", [InferTypeOpAdaptor]> {
  let summary = "A bf16 linear layer with its bias fused";
  let description = [{
    `result = lhs rhs + bias` on operands of one element type: `lhs` is
    `(..., M, K)`, `rhs` the shared `(K, N)` weight (`(N, K)` with
    `transpose_rhs`) and `bias` the `(N)` vector. The products are exact
    and accumulate in f32, the bias is added to the f32 sum, and the sum is
    rounded to the result's type once. bf16 for the backends (which call
    cuBLASLt, or a CPU function, for it), f64 in the interpreter's tests.

    It is cuBLASLt's `BIAS` epilogue: `anvil-gemm-epilogues` makes it, on
    the training step (it has no VJP), of `cast<bf16>(cast<f32>(matmul) +
    broadcast(bias))` (GPT's q, k and v projection, which attention reads in
    bf16), and the backends call one GEMM for it (`anvil_rt_gemm_bias`):
    the product is never stored before its bias is added.

    ```mlir
    %qkv = anvil.linear %x, %w, %b
        : (tensor<8x1024x768xbf16>, tensor<768x2304xbf16>, tensor<2304xbf16>)
        -> tensor<8x1024x2304xbf16>
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$lhs, Anvil_FloatTensor:$rhs,
                       Anvil_FloatTensor:$bias, UnitAttr:$transpose_rhs);
  let results = (outs Anvil_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_GeluBiasGradOp : Anvil_CostedOp<"gelu_bias_grad",
                                           [InferTypeOpAdaptor]> {
  let summary = "The gradient of anvil.linear_gelu's GELU and bias";
  let description = [{
    From the gradient `grad` of `anvil.linear_gelu`'s result and its `pre`,
    both `(..., N)` and of its element type: `d = grad gelu_tanh'(pre)` in f32; `pre_grad`
    is `d` rounded to bf16 (what the layer's two backward GEMMs read) and
    `bias_grad` the `(N)` sum of `d` over every other dimension, summed in
    f32 and rounded to bf16 (the bias's type, as cuBLASLt gives it). The
    VJP of `anvil.linear_gelu` makes it; `anvil-gemm-epilogues` folds the
    GEMM that produces `grad` into it (`anvil.matmul_gelu_bias_grad`).

    ```mlir
    %dpre, %db = anvil.gelu_bias_grad %g, %pre
        : (tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>)
        -> (tensor<8x1024x3072xbf16>, tensor<3072xbf16>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$grad, Anvil_FloatTensor:$pre);
  let results = (outs Anvil_FloatTensor:$pre_grad,
                      Anvil_FloatTensor:$bias_grad);
  let assemblyFormat = "$grad `,` $pre attr-dict `:` functional-type(operands, results)";
}

def Anvil_MatmulGeluBiasGradOp : Anvil_CostedOp<"matmul_gelu_bias_grad",
                                                 [InferTypeOpAdaptor]> {
  let summary = "A bf16 GEMM whose product feeds anvil.gelu_bias_grad, fused";
  let description = [{
    `anvil.gelu_bias_grad` of the product `g = lhs rhs` (bf16 `(..., M, K)`
    times the shared `(K, N)`, or `(N, K)` with `transpose_rhs`), with `g`
    kept in f32 rather than rounded to bf16 first: `d = g
    gelu_tanh'(pre)`, `pre_grad = bf16(d)`, `bias_grad` the sum of `d` over
    the rows (in f32, rounded to bf16). It is cuBLASLt's `DGELU_BGRAD`
    epilogue:
    `anvil-gemm-epilogues` makes it of an `anvil.gelu_bias_grad` whose
    gradient is a bf16 `anvil.matmul` read by nothing else, and the
    backends call one GEMM for it (`anvil_rt_gemm_dgelu_bgrad`): the
    product's gradient is never stored.

    ```mlir
    %dpre, %db = anvil.matmul_gelu_bias_grad %dy, %w2, %pre {transpose_rhs}
        : (tensor<8x1024x768xbf16>, tensor<3072x768xbf16>, tensor<8x1024x3072xbf16>)
        -> (tensor<8x1024x3072xbf16>, tensor<3072xbf16>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$lhs, Anvil_FloatTensor:$rhs,
                       Anvil_FloatTensor:$pre, UnitAttr:$transpose_rhs);
  let results = (outs Anvil_FloatTensor:$pre_grad,
                      Anvil_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $pre attr-dict `:` functional-type(operands, results)
  }];
}

def Anvil_MatmulBiasGradOp : Anvil_CostedOp<"matmul_bias_grad",
                                            [InferTypeOpAdaptor]> {
  let summary = "A linear layer's weight gradient with its bias's, fused";
  let description = [{
    From the rows of a linear layer's input `lhs` `(M, K)` and of its
    output's gradient `grad` `(M, N)`: `weight_grad = lhs^T grad` `(K, N)`
    (products exact, accumulated in f32, rounded once) and `bias_grad`
    `(N)`, the sum of `grad` over the rows in f32, rounded once. Operands
    and results share one element type: bf16 for the backends, f64 in the
    interpreter's tests. It is cuBLASLt's `BGRADA` epilogue (the bias's
    gradient read off the GEMM's operand): `anvil-gemm-epilogues` makes it
    of the layer's `dW = anvil.matmul {transpose_lhs}` of the bf16 gradient
    and the `anvil.reduce_sum` of that gradient in f32 over its rows, so
    the bias's gradient is summed from the bf16 values the GEMM reads.

    ```mlir
    %dw, %db = anvil.matmul_bias_grad %x, %g
        : (tensor<8192x768xbf16>, tensor<8192x2304xbf16>)
        -> (tensor<768x2304xbf16>, tensor<2304xbf16>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$lhs, Anvil_FloatTensor:$grad);
  let results = (outs Anvil_FloatTensor:$weight_grad,
                      Anvil_FloatTensor:$bias_grad);
  let assemblyFormat = "$lhs `,` $grad attr-dict `:` functional-type(operands, results)";
}

def Anvil_LinearGeluF8Op : Anvil_CostedOp<"linear_gelu_f8"> {
  let summary = "An FP8 linear layer with its bias and tanh GELU fused, "
                "writing the GELU's 8-bit codes and their amax";
  let description = [{
    The FP8 form of `anvil.linear_gelu` whose result is quantized at once
    with a scale known before the GEMM (the delayed recipe's). With `s` the
    sum over K of the 8-bit products (exact in f32, accumulated in f32, as
    `anvil.matmul_f8`'s) of `lhs` `(..., M, K)` and the shared weight
    `rhs` `(N, K)` with `transpose_rhs` or `(K, N)`:

    - `p = s (lhs_scale rhs_scale) + bias`, in f32, `bias` the bf16 `(N)`
      vector added per column;
    - `pre` is `p` rounded to bf16 (what the gradient reads);
    - `result` is `gelu_tanh(p) out_scale` cast to its 8-bit format (round
      to nearest even, saturating as `anvil.cast` does);
    - `amax` is the largest `|gelu_tanh(p)|`, before `out_scale`: the
      amax that the delayed recipe's history records for the quantized
      tensor.

    It is cuBLASLt's FP8 GEMM with the `GELU_AUX_BIAS` epilogue, a bf16
    auxiliary output, an FP8 D with `out_scale` as its D scale pointer and
    the `AMAX_D` pointer: the GELU is never stored in bf16, and neither its
    cast nor its amax is a pass of its own. anvil-decompose makes it
    (`fp8-gelu-epilogue`) of a product of two quantizations with bf16
    results, plus a broadcast f32 bias, through a tanh GELU whose forward
    quantization has a given scale, and the amax of that GELU; the
    backends call one runtime function for it (`anvil_rt_gemm_f8_gelu`).

    ```mlir
    %y8, %pre, %amax = anvil.linear_gelu_f8 %x8, %w8 scales(%ux, %uw) bias(%b) out_scale(%s) {transpose_rhs}
        : (tensor<8x1024x768xf8E4M3FN>, tensor<3072x768xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<3072xbf16>, tensor<f32>)
        -> (tensor<8x1024x3072xf8E4M3FN>, tensor<8x1024x3072xbf16>, tensor<f32>)
    ```
  }];
  let arguments = (ins Anvil_FloatTensor:$lhs, Anvil_FloatTensor:$rhs,
                       0DTensorOf<[F32]>:$lhs_scale,
                       0DTensorOf<[F32]>:$rhs_scale,
                       Anvil_FloatTensor:$bias,
                       0DTensorOf<[F32]>:$out_scale,
                       UnitAttr:$transpose_rhs);
  let results = (outs Anvil_FloatTensor:$result, Anvil_FloatTensor:$pre,
                      0DTensorOf<[F32]>:$amax);
  let assemblyFormat = [{
    $lhs `,` $rhs `scales` `(` $lhs_scale `,` $rhs_scale `)`
    `bias` `(` $bias `)` `out_scale` `(` $out_scale `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILGEMMEPILOGUEOPS_TD
