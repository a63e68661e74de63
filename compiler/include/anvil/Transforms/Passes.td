//===- Passes.td - graph-level analysis and transform passes -*- tablegen -*-===//
//
// Passes that work on anvil-dialect graphs without changing what they
// compute. Flags are `anvil-` prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TRANSFORMS_PASSES_TD
#define ANVIL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilCostReportPass : Pass<"anvil-cost-report", "mlir::ModuleOp"> {
  let summary = "Reports FLOPs, bytes moved and parameter counts per function";
  let description = [{
    Sums `CostOpInterface` over every function and prints one line per
    function to stderr (the IR on stdout is unchanged), or a JSON array with
    `json=true`. Parameters are the arguments marked `anvil.param`.

    Input:
    ```mlir
    func.func @forward(%x: tensor<8x768xf32> {anvil.input = #anvil.input<name = "x">},
                       %w: tensor<768x3072xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>})
        -> tensor<8x3072xf32> {
      %y = anvil.matmul %x, %w : (tensor<8x768xf32>, tensor<768x3072xf32>) -> tensor<8x3072xf32>
      return %y : tensor<8x3072xf32>
    }
    ```
    Output (stderr):
    ```
    anvil-cost-report: @forward: 1 ops, 37748736 FLOPs, 9560064 bytes, 2359296 parameters (1 tensors)
    ```
  }];
  let options = [
    Option<"json", "json", "bool", /*default=*/"false",
           "Print a JSON array instead of text lines">,
    Option<"perOp", "per-op", "bool", /*default=*/"false",
           "Also print one line per op with its FLOPs and bytes">,
  ];
}

def AnvilPartitionPass : Pass<"anvil-partition", "mlir::ModuleOp"> {
  let summary = "Partitions @forward into one rank's program of a "
                "tensor-parallel mesh axis";
  let description = [{
    The parameters of the function carry the model's tensor-parallel
    layout, `anvil.sharding = {split_axis = "tp", split_dim = d,
    split_groups = g}` (Megatron's: column-parallel linears split their
    output dimension, row-parallel ones their input; a fused q/k/v weight
    splits in 3 groups so that each rank keeps its heads of q, k and v).
    Shardings propagate through the ops (each op kind has a rule; ops whose
    operands are all replicated need none); matmuls that contract a split
    dimension are followed by `anvil.all_reduce sum`, and replicated values
    entering split computation go through `anvil.axis_copy`, so that
    differentiating the result gives the backward pass its collectives too.
    Split values and parameters take their local shapes, and each split
    parameter's `anvil.sharding` records its whole shape. A mesh axis of
    one rank leaves the function as it is.

    Input (tp = 2):
    ```mlir
    %h = anvil.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
    %y = anvil.matmul %h, %w2 : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
    ```
    (`%w1` split on dimension 1, `%w2` on dimension 0.) Output:
    ```mlir
    %c = anvil.axis_copy %x axis "tp" : tensor<8x64xf32>
    %h = anvil.matmul %c, %w1 : (tensor<8x64xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
    %p = anvil.matmul %h, %w2 : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
    %y = anvil.all_reduce sum %p axis "tp" : tensor<8x64xf32>
    ```
    Errors name the op and the shardings it cannot take, or the parameter,
    dimension and axis that do not divide.

    Two partitioners: the upstream `shard` dialect's (`sharding-propagation`
    and `shard-partition`, over the loop descriptions that ShardingModels.cpp
    gives the elementwise ops, matmul, transpose and broadcast, with its
    `shard.all_reduce` and `shard.all_slice` turned into anvil's collectives
    and the axis copies added), and anvil's own rules
    (ShardingRuleOpInterface), which also cover attention, the norms,
    vocabulary-parallel embeddings and cross-entropy, splits in groups and
    sequence parallelism. `engine=auto` takes the shard dialect's where it
    covers the function (anvil ops only, every split in even blocks, every
    op that sees a split value described by loops, no value gathered whole
    or moved to another split dimension) and anvil's rules elsewhere;
    `engine=shard` fails saying why where it does not cover it;
    `engine=anvil` takes anvil's rules. The function's `anvil.partitioner`
    says which ran.
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"tp\"",
           "The mesh axis to partition over (its size comes from the "
           "module's anvil.mesh)">,
    Option<"function", "function", "std::string", /*default=*/"\"forward\"",
           "The function to partition">,
    Option<"sequenceParallel", "sequence-parallel", "bool", /*default=*/"false",
           "Megatron's sequence parallelism: what runs between the "
           "tensor-parallel regions (norms, residual adds, dropout) runs on "
           "each rank's part of the sequence; row-parallel sums become "
           "reduce-scatters along it and column-parallel inputs are "
           "all-gathered">,
    Option<"sequenceDim", "sequence-dim", "int64_t", /*default=*/"1",
           "The sequence dimension of the activations ((B, T, C): 1)">,
    Option<"engine", "engine", "std::string", /*default=*/"\"auto\"",
           "Which partitioner: auto (the upstream shard dialect's where it "
           "covers the function, anvil's rules elsewhere), shard, or anvil">,
  ];
}

def AnvilGemmEpiloguesPass : Pass<"anvil-gemm-epilogues", "mlir::ModuleOp"> {
  let summary = "Fuses bf16 linear layers' bias and GELU into their GEMMs";
  let description = [{
    Gives cuBLASLt's GEMM epilogues what they can do, as ops the backends
    call one GEMM for:

    - On the forward graph (after `anvil-bf16`, before the training step is
      built): `gelu_tanh(cast<f32>(matmul(x, w)) + broadcast(b))`, with `x`
      and `w` bf16, `w` a shared matrix, `b` an f32 bias over the last
      dimension, that dimension a multiple of 8 (cuBLASLt's rule for the
      auxiliary matrix), and every reader of the GELU rounding it to bf16 (the next
      GEMM's operand), becomes `anvil.linear_gelu` (`GELU_AUX_BIAS`) of `x`,
      `w` and `b` rounded to bf16: its result replaces those roundings, and
      its `pre` is what the gradient reads. Its VJP is
      `anvil.gelu_bias_grad` and the layer's two GEMMs.
    - On the training step: an `anvil.gelu_bias_grad` whose gradient is a
      bf16 `anvil.matmul` read by nothing else becomes
      `anvil.matmul_gelu_bias_grad` (`DGELU_BGRAD`).
    - On the training step: a linear layer's bias gradient (the f32
      `anvil.reduce_sum` of its output's gradient `g` over every dimension
      but the last, marked `anvil.broadcast_grad` by the bias broadcast's
      VJP) and its weight gradient (a bf16 `anvil.matmul {transpose_lhs}`
      of the input's rows and `g` rounded to bf16, as rows) become one
      `anvil.matmul_bias_grad` (`BGRADA`), made at the earliest such GEMM
      that comes before the sum's readers. A weight stored `(out, in)`
      (BERT's), whose gradient is `g^T x`, is not of this form (`BGRADB`).
    - On the training step: `cast<bf16>(cast<f32>(matmul(x, w)) +
      broadcast(b))`, each value read by the next alone, with `x` and `w`
      bf16, `w` a shared matrix and `b` an f32 bias over the last dimension
      (GPT's q, k and v projection, which attention reads in bf16), becomes
      `anvil.linear` (`BIAS`) of `x`, `w` and `b` rounded to bf16. The op has
      no VJP: it is made once the step is differentiated.

    `forward` runs the first form (anvil-compile: in the `precision`
    stage), `backward` the other three (once the training step is built).

    Rounding changes (cuBLASLt's types for a bf16 GEMM): the bias is
    rounded to bf16 and added to the f32 sum before the one rounding to
    bf16 (not to the product rounded), the backward GEMM's product reaches
    the GELU derivative in f32, the gradient reads bf16 `pre`, a bias's
    gradient is summed from the bf16 values the weight's GEMM reads, and
    the bias's gradient is rounded to bf16 before it is widened back. The
    GELU's f32 input and output are no longer stored. Run it after
    `anvil-partition` (the ops have no sharding rule). `anvil-compile` runs it for `--target=cuda` (and
    `--emulate-cuda-grid`) unless `--gemm-epilogues=off`.

    ```mlir
    %p = anvil.matmul %x, %w : (tensor<8x1024x768xbf16>, tensor<768x3072xbf16>) -> tensor<8x1024x3072xbf16>
    %w32 = anvil.cast %p : tensor<8x1024x3072xbf16> to tensor<8x1024x3072xf32>
    %bb = anvil.broadcast %b, dims = [2] : tensor<3072xf32> -> tensor<8x1024x3072xf32>
    %h = anvil.add %w32, %bb : tensor<8x1024x3072xf32>
    %g = anvil.gelu tanh %h : tensor<8x1024x3072xf32>
    %y = anvil.cast %g : tensor<8x1024x3072xf32> to tensor<8x1024x3072xbf16>
    // becomes
    %b16 = anvil.cast %b : tensor<3072xf32> to tensor<3072xbf16>
    %y, %pre = anvil.linear_gelu %x, %w, %b16 : (...) -> (tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>)

    %db = anvil.reduce_sum %g dims [0, 1] {anvil.broadcast_grad} : tensor<8x1024x768xf32> -> tensor<768xf32>
    %g16 = anvil.cast %g : tensor<8x1024x768xf32> to tensor<8x1024x768xbf16>
    %rows = anvil.reshape %g16 : tensor<8x1024x768xbf16> -> tensor<8192x768xbf16>
    %dw = anvil.matmul %x, %rows {transpose_lhs} : (tensor<8192x768xbf16>, tensor<8192x768xbf16>) -> tensor<768x768xbf16>
    // becomes
    %dw, %db16 = anvil.matmul_bias_grad %x, %rows : (...) -> (tensor<768x768xbf16>, tensor<768xbf16>)
    %db = anvil.cast %db16 : tensor<768xbf16> to tensor<768xf32>
    ```
  }];
  let options = [
    Option<"forward", "forward", "bool", /*default=*/"true",
           "Fuse linear layers' bias and GELU (the forward graph)">,
    Option<"backward", "backward", "bool", /*default=*/"true",
           "Fuse the GELU's gradient, biases' gradients and biases alone into "
           "GEMMs (the training step)">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

def AnvilFlashAttentionPass : Pass<"anvil-flash-attention", "mlir::ModuleOp"> {
  let summary = "Runs attention as fused kernels that store no probabilities";
  let description = [{
    On the forward graph, before the training step is built (and after
    `anvil-bf16`, whose `bf16_gemms` the fused op keeps): each f32
    `anvil.attention` without a mask, or with a key bias for a mask, whose
    head dimensions are at most `max-head-dim` becomes
    `anvil.flash_attention`, whose second result,
    each query row's log-sum-exp, is what the gradient
    (`anvil.flash_attention_grad`, the op's VJP) recomputes the
    probabilities from. Neither op is decomposed: `anvil-bufferize` turns
    them into calls of the runtime's fused kernels (Anvil's flash
    attention on CUDA, a row-at-a-time loop on the CPU), so the step never
    stores the `(B, H, Tq, Tk)` scores or probabilities.

    A mask is a key bias when it is an `anvil.broadcast` of one row of keys
    per batch element (or one for all) over the heads and queries, and no
    float argument reaches it (`mayDependOnFloatArgument`: the fused
    gradient gives it none): BERT's padding mask, `(1 - attention_mask) *
    -10000` broadcast from `(B, 1, 1, T)`. The op takes that row as its
    `(B, Tk)` `key_bias` (reshaped, and broadcast over the batch if
    shared). Attention with another mask, of another element type, or of
    wider heads stays `anvil.attention` (decomposed as before). Run it after
    `anvil-partition`: the fused ops have no sharding rule (a
    tensor-parallel program's attention is already per rank by then).

    With `fold-transposes` (the default), an op whose operands are
    transposes (`[0, 2, 1, 3]`) of `(B, T, H, D)` tensors and whose result
    is transposed back, as a transformer's projections give them, takes
    and gives those tensors directly (`bshd`) when that removes more
    transposes than it adds (an operand transposed for other users too
    removes none; an operand or result without one needs one); its
    gradient is built in that layout too, so neither pass of the step
    moves the heads.

    ```mlir
    %o = anvil.attention %q, %k, %v {causal} : (...) -> tensor<8x12x1024x64xf32>
    // becomes
    %o, %lse = anvil.flash_attention %q, %k, %v {causal}
        : (...) -> (tensor<8x12x1024x64xf32>, tensor<8x12x1024xf32>)

    %q = anvil.transpose %x, [0, 2, 1, 3] : tensor<8x1024x12x64xf32> -> tensor<8x12x1024x64xf32>
    ...
    %a = anvil.attention %q, %k, %v {causal} : (...) -> tensor<8x12x1024x64xf32>
    %y = anvil.transpose %a, [0, 2, 1, 3] : tensor<8x12x1024x64xf32> -> tensor<8x1024x12x64xf32>
    // becomes
    %y, %lse = anvil.flash_attention %x, ... {bshd, causal}
        : (...) -> (tensor<8x1024x12x64xf32>, tensor<8x12x1024xf32>)
    ```

    With `bf16-tensors` (the CUDA backend's and the emulated grid's), an
    op with `bf16_gemms` then takes bf16 tensors and gives a bf16 result
    (widened back for its users; `lse` stays f32): the values its kernels
    read and write are bf16 anyway. Each operand is cast where it is made:
    above the reshapes and slices between it and the value they start from
    (a fused q/k/v projection's output), when nothing else reads that
    value, so that its producer writes bf16 and the runtime reads the
    slices in place; otherwise at the operand. A bf16 GEMM's cast of the
    widened result folds away (`anvil.cast`'s canonicalization), and the
    gradient (the op's VJP) is on bf16 tensors too.
  }];
  let options = [
    Option<"maxHeadDim", "max-head-dim", "int64_t", /*default=*/"128",
           "The widest query/key and value heads fused (0: any)">,
    Option<"foldTransposes", "fold-transposes", "bool", /*default=*/"true",
           "Take (B, T, H, D) operands (bshd) where that removes "
           "transposes">,
    Option<"bf16Tensors", "bf16-tensors", "bool", /*default=*/"false",
           "Ops with bf16 products take bf16 tensors, cast where they are "
           "made">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

def AnvilBF16Pass : Pass<"anvil-bf16", "mlir::ModuleOp"> {
  let summary = "Runs chosen GEMMs (and attention's products) in bf16 (mixed precision)";
  let description = [{
    On the forward graph, before the training step is built: each chosen
    f32 `anvil.matmul` reads bf16 casts of its operands (a cast per GEMM
    operand: the cse after autodiff merges the casts of one value),
    multiplies them in bf16 (exact products, f32 accumulation, the product
    rounded to bf16: anvil.matmul's contract) and is widened back to f32
    for its users. Autodiff's VJPs of the casts then round each GEMM's
    output gradient to bf16 and widen its input gradients, so the backward
    GEMMs read bf16 operands as well and the gradients of a value several
    GEMMs read are summed in f32: automatic mixed precision's numerics,
    with f32 master weights, f32 optimizer state and f32 for every op that
    is not a GEMM. The backward pass keeps the bf16 copies, not the f32
    values, of what the GEMMs read.
    On the CPU the GEMMs call `anvil_rt_gemm_bf16` (the operands widened
    exactly for OpenBLAS); on CUDA `anvil_rt_cuda_gemm_bf16` (cuBLAS on the
    tensor cores).

    Chosen: every f32 matmul, or those in `modules` (prefixes of the ops'
    module paths, e.g. `h.0.mlp`). FP8 GEMMs (anvil-fp8's) are left to FP8.
    Chosen f32 `anvil.attention` ops get `bf16_gemms`: their products
    (scores, probabilities times values, and the four of the backward
    pass) read bf16 operands the same way, their softmax stays f32.

    ```mlir
    %y = anvil.matmul %x, %w : (tensor<8x768xf32>, tensor<768x3072xf32>) -> tensor<8x3072xf32>
    // becomes
    %x16 = anvil.cast %x : tensor<8x768xf32> to tensor<8x768xbf16>
    %w16 = anvil.cast %w : tensor<768x3072xf32> to tensor<768x3072xbf16>
    %p = anvil.matmul %x16, %w16 : (tensor<8x768xbf16>, tensor<768x3072xbf16>) -> tensor<8x3072xbf16>
    %y = anvil.cast %p : tensor<8x3072xbf16> to tensor<8x3072xf32>
    ```
  }];
  let options = [
    ListOption<"modules", "modules", "std::string",
               "Module-path prefixes whose matmuls run in bf16 (default: "
               "every f32 matmul)">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

def AnvilFP8Pass : Pass<"anvil-fp8", "mlir::ModuleOp"> {
  let summary = "Runs chosen GEMMs in FP8 (Transformer Engine's recipes)";
  let description = [{
    On the forward graph, before the training step is built: each chosen
    `anvil.matmul` takes its operands through `anvil.fp8_quantize` with
    E4M3 (`forward f8E4M3FN`) and its result through one that quantizes
    the gradient to E5M2 (`backward f8E5M2`), so that autodiff's backward
    GEMMs (dX = dY W^T, dW = X^T dY) read E5M2 gradients and E4M3 operands.
    Products of 8-bit values are exact in f32, so a GEMM on the quantized
    values with f32 accumulation is what an FP8 GEMM computes; the CPU
    backend runs exactly that (the casts of anvil-expand-f8-casts).

    Chosen: the matmuls in `modules` (prefixes of the ops' module paths,
    e.g. `h.0.mlp`), by default the linear layers of the transformer
    blocks (a module path with a numbered block: `h.3.attn.c_attn`,
    `model.layers.0.mlp.up_proj`, `bert.encoder.layer.1...`). Each chosen
    matmul is marked `anvil.fp8 = "<recipe>"` (--report lists them).

    Recipes:
    - `current`: tensorwise, the scale from this tensor's amax now.
    - `delayed`: tensorwise, the scale from an amax history kept as
      training state. This pass names each quantization's history
      (`history "<module path>.input|weight|grad_output"`); after the
      training step is built, anvil-fp8-delayed-scaling gives
      @train_step the histories and the scales. Until then, and in
      evaluation, the quantizations scale by the current amax.
    - `mxfp8`: MX block scaling, blocks of `block-size` (32) elements, each
      with a power-of-two (E8M0) scale: the forward GEMM's operands along
      its contraction K, the output gradient along its last dimension N
      (the contraction of dX = dY W^T). The backward GEMMs read those same
      quantized values: W blocked along K in dX (whose contraction is N),
      X and dY blocked along K and N in dW = X^T dY (whose contraction is
      the tokens). Transformer Engine quantizes those operands a second
      time along the other dimension; Anvil does not yet. A dimension the
      blocks do not divide fails naming the GEMM, the operand and the
      dimension.

    In a program partitioned over a tensor-parallel axis, `amax-axis=tp`
    reduces every tensorwise amax over its ranks (a split operand is then
    scaled as the whole).
  }];
  let options = [
    Option<"recipe", "recipe", "std::string", /*default=*/"\"current\"",
           "Scaling recipe: current, delayed or mxfp8">,
    ListOption<"modules", "modules", "std::string",
               "Module-path prefixes whose matmuls run in FP8 (default: the "
               "transformer blocks' linear layers)">,
    Option<"amaxAxis", "amax-axis", "std::string", /*default=*/"\"\"",
           "Mesh axis over whose ranks each amax is reduced (the "
           "tensor-parallel axis of a partitioned program; none: local)">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"32",
           "mxfp8: the elements that share one scale">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

def AnvilFP8DelayedScalingPass
    : Pass<"anvil-fp8-delayed-scaling", "mlir::ModuleOp"> {
  let summary = "Gives the training step the delayed recipe's amax histories";
  let description = [{
    Transformer Engine's delayed scaling, on the differentiated training
    step (after anvil-optimizer; anvil-fp8 with `recipe=delayed` named the
    histories): every `anvil.fp8_quantize` of `function` with a `history`
    and a forward format gets

    - state arguments `fp8.amax_history.<history>`, `tensor<Lxf32>` of
      zeros (L = `history-length`), and `fp8.scale.<history>`, a scalar
      starting at 1, checkpointed with the rest of the state; a name used
      twice gets `.1`, `.2`, ...;
    - the scale `fmax / a / 2^margin`, where `a` is the history's maximum
      (`amax-compute=max`) or its newest entry (`most_recent`); where `a`
      is zero or not finite, or that scale would not be finite, the
      previous step's scale stays (Transformer Engine's rule; 1 at the
      start). The op takes it as its `scale` operand, and it is the new
      value of `fp8.scale.<history>`;
    - the updated history as a result tied to the argument: this step's
      amax first (reduced with `max` over every axis of the module's
      anvil.mesh, so that all ranks keep the same history and scale), then
      the first L - 1 entries of the old one. A non-finite amax (an
      overflowing step) is recorded as it is, as Transformer Engine does:
      under `max` it holds the scale where it was for L steps.

    The quantization of step t thus uses the amaxes of steps t - L ... t - 1.
    The gradient's quantizations (built by autodiff from the forward
    graph's `backward` formats) are among them: their histories are
    updated by the backward pass of the same step.
  }];
  let options = [
    Option<"function", "function", "std::string",
           /*default=*/"\"train_step\"", "The training step to give state">,
    Option<"historyLength", "history-length", "int64_t", /*default=*/"1024",
           "Entries of each amax history (Transformer Engine: 1024)">,
    Option<"amaxCompute", "amax-compute", "std::string",
           /*default=*/"\"max\"",
           "The amax a scale is computed from: max (of the history) or "
           "most_recent">,
    Option<"margin", "margin", "int64_t", /*default=*/"0",
           "Powers of two of headroom below the format's largest value">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

#endif // ANVIL_TRANSFORMS_PASSES_TD
