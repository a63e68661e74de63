//===- Passes.td - lowering anvil graphs to upstream dialects -*- tablegen -*-===//
//
// The first steps of every backend: composite anvil ops are rewritten into
// primitive ones, then the primitives become linalg, tensor, arith and math
// on tensors. Flags are `anvil-` prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CONVERSION_PASSES_TD
#define ANVIL_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilDecomposePass : Pass<"anvil-decompose", "mlir::ModuleOp"> {
  let summary = "Rewrites composite anvil ops into primitive anvil ops";
  let description = [{
    Softmax, log-softmax, layer and RMS normalization, attention and
    cross-entropy become reductions, broadcasts, matmuls and elementwise
    ops with the same meaning (max-subtracted exponentials, biased
    variance, `max(count, 1)` for a mean over kept labels). The result is
    still anvil IR, so the reference interpreter checks every rule by
    running the graph before and after.

    Input:
    ```mlir
    %p = anvil.softmax %x dim = 1 : tensor<4x8xf32>
    ```
    Output:
    ```mlir
    %m = anvil.reduce_max %x dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
    %mb = anvil.broadcast %m, dims = [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
    %e = anvil.exp (anvil.sub %x, %mb)
    %s = anvil.reduce_sum %e dims [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
    %p = anvil.div %e, (anvil.broadcast %s ...)
    ```

    A tensorwise `anvil.fp8_quantize` becomes its definition: `x * s` cast
    to the 8-bit format and back, over `s`. A matmul of two of them
    (`fp8-gemms=f8`, the default) becomes an FP8 GEMM instead:
    `anvil.matmul_f8` of the 8-bit codes scaled by `(1 / s_a) (1 / s_b)`,
    with an f32 result or, with `fp8-gemm-result=bf16` (`--precision=fp8`,
    whose other GEMMs are bf16), a bf16 one widened for its users;
    `fp8-gemms=f8-k-inner` also lays both operands out with K innermost
    (the CUDA backend's choice: cuBLASLt's FP8 GEMM takes them so, with K a
    multiple of 16 and rows of results a multiple of 16 bytes, N a multiple
    of 4 for f32 and of 8 for bf16; other GEMMs stay dequantized), and
    `fp8-gemms=dequantized` multiplies the dequantized f32 values instead.
    With `fp8-gelu-epilogue` and bf16 results, the first linear layer of
    an FP8 MLP whose GELU is quantized with a given scale (the delayed
    recipe's), `gelu_tanh(product + broadcast(bias))`, becomes
    `anvil.linear_gelu_f8`: the GEMM writes the GELU's 8-bit codes, their
    amax (replacing the history's `reduce_max` of the GELU's magnitudes)
    and the bf16 sum before the GELU, which every other reader of the sum
    (the GELU's gradient) reads widened; its N must be a multiple of 16
    (rows of codes 16-byte aligned), and E5M2 codes need an E5M2 operand
    (as cuBLASLt's FP8 GEMM writes them). Each
    quantization is computed once for all the GEMMs that read it; its
    other users read its dequantized codes. matmul_f8 has no VJP: run this
    after the training step is built.
  }];
  let options = [
    Option<"fp8Gemms", "fp8-gemms", "std::string", /*default=*/"\"f8\"",
           "GEMMs of two tensorwise FP8 quantizations: f8 (anvil.matmul_f8 "
           "of the 8-bit codes), f8-k-inner (the same with K innermost in "
           "both operands), or dequantized (an f32 GEMM of the dequantized "
           "values)">,
    Option<"fp8GemmResult", "fp8-gemm-result", "std::string",
           /*default=*/"\"f32\"",
           "The FP8 GEMMs' result type: f32, or bf16 (rounded once, as "
           "bf16 mixed precision's GEMMs are)">,
    Option<"fp8GeluEpilogue", "fp8-gelu-epilogue", "bool",
           /*default=*/"false",
           "With bf16 results: an FP8 GEMM plus a bias through a tanh GELU "
           "that is quantized with a given scale (the delayed recipe) "
           "becomes anvil.linear_gelu_f8, which writes the GELU's codes, "
           "their amax and the bf16 pre-activation (cuBLASLt's "
           "GELU_AUX_BIAS epilogue with an FP8 D and AMAX_D)">,
  ];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

def AnvilLibraryConvsPass : Pass<"anvil-library-convs", "mlir::ModuleOp"> {
  let summary = "Marks the convolutions that run as one library call";
  let description = [{
    Each `anvil.conv`, `anvil.conv_transpose` and `anvil.conv_filter_grad`
    that a convolution library takes as one call gets
    `anvil.library_call`: 1 to 3 spatial dimensions, f32 or bf16 operands
    and result of one element type, and padding that is the same on both
    sides as far as the sizes tell (the convolution with `pad_low` on both
    sides has the sizes the op has: PyTorch's padding, or a `pad_high`
    whose difference only falls into a stride's remainder, so that no
    output reads it). A bias is split off into a broadcast add, which
    fuses with what follows (for bf16 after the call's rounding: the bias
    rounds a second time, where the linalg lowering rounds once).
    `anvil-decompose` and `anvil-convert-to-linalg` leave a marked op;
    `anvil-bufferize` makes it one call of its `conv` function
    (RuntimeABI.h's `anvil_rt_conv` problem: the CPU's reference by
    default, cuDNN with the CUDA backend).
    Every other convolution is lowered to linalg as before.

    Input:
    ```mlir
    %y = anvil.conv %x, %w, %b stride [1, 1] pad_low [1, 1] pad_high [1, 1] dilation [1, 1]
        : (tensor<8x64x56x56xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<8x64x56x56xf32>
    ```
    Output:
    ```mlir
    %c = anvil.conv %x, %w stride [1, 1] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {anvil.library_call}
        : (tensor<8x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<8x64x56x56xf32>
    %bb = anvil.broadcast %b, dims = [1] : tensor<64xf32> -> tensor<8x64x56x56xf32>
    %y = anvil.add %c, %bb : tensor<8x64x56x56xf32>
    ```
  }];
  let dependentDialects = ["mlir::anvil::AnvilDialect"];
}

def AnvilConvertToLinalgPass : Pass<"anvil-convert-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lowers primitive anvil ops to linalg, tensor, arith and math";
  let description = [{
    Each anvil op becomes upstream ops on tensors: `linalg.matmul` and
    `linalg.batch_matmul` (transposes and shared weights through their
    indexing maps), `linalg.transpose`, `linalg.generic` for elementwise
    ops, broadcasts and reductions, `tensor.extract_slice` /
    `insert_slice` / `collapse_shape` / `expand_shape` for data movement,
    and gathers as generics that `tensor.extract` their rows (indices are
    clamped into range). Composite ops must have been decomposed first
    (`anvil-decompose`); an op without a lowering is an error naming it.

    With `online-logsumexp`, a row's log-sum-exp (`lse = m + log(s)` of
    `m = reduce_max(z)` and `s = reduce_sum(exp(z - m))` over the last
    dimension, kept: anvil-decompose's and the cross-entropy VJP's) becomes
    one `linalg.generic` that reads `z` once, folding each row's maximum
    and its sum of exponentials together: `m' = max(m, v)`, `e = exp(min(m,
    v) - m')`, `s' = v > m ? s e + 1 : s + e`, from `m = -FLT_MAX` and `s
    = 0` (a row of `-inf` gives `-inf`, where the two passes give NaN).
    The sum differs from the two passes' in rounding.

    `anvil.embedding_grad` (a scatter-add of gradient rows into a zeroed
    table) becomes a loop over the positions, each adding its row into its
    table row in turn. With `library-embedding-grads`, one of f32
    gradients, i32 ids and static shapes is marked `anvil.library_call`
    instead and stays for `anvil-bufferize`, which calls the runtime's
    `anvil_rt_embedding_grad_f32` (or the device's function the
    bufferizer's `embedding-grad` option names: CUDA's sums the rows in
    parallel, with the loop's values bit for bit, NaN payloads aside). On
    a GPU the loop is a thread per
    column that adds every position's row in turn: GPT-2's 8192 tokens
    make that thousands of dependent read-modify-writes of global memory
    in a row.

    Other dialects join through `ConvertToLinalgDialectInterface`
    (`anvil/Conversion/ConvertToLinalgInterface.h`): the patterns of every
    loaded dialect that attaches it run with Anvil's, and that dialect's
    ops must be gone afterwards too. A plugin's dialect lowers its own ops
    this way (`examples/pass-plugin`).

    Input:
    ```mlir
    %y = anvil.add %a, %b : tensor<4x8xf32>
    ```
    Output:
    ```mlir
    %e = tensor.empty() : tensor<4x8xf32>
    %y = linalg.generic {indexing_maps = [#id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
        ins(%a, %b : ...) outs(%e : ...) {
      ^bb0(%x: f32, %z: f32, %out: f32):
        %s = arith.addf %x, %z : f32
        linalg.yield %s : f32
    } -> tensor<4x8xf32>
    ```
  }];
  let options = [
    Option<"onlineLogSumExp", "online-logsumexp", "bool", /*default=*/"false",
           "A row's log-sum-exp as one generic that folds the maximum and "
           "the sum of exponentials together, reading the row once (the "
           "CUDA backend's choice)">,
    Option<"libraryEmbeddingGrads", "library-embedding-grads", "bool",
           /*default=*/"false",
           "Leave each anvil.embedding_grad of f32 with i32 ids to a runtime "
           "call (marked anvil.library_call; the CUDA backend's choice) "
           "instead of a loop">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect"
  ];
}

def AnvilBufferizePass : Pass<"anvil-bufferize", "mlir::ModuleOp"> {
  let summary = "One-shot bufferization of a lowered module, across functions";
  let description = [{
    Runs upstream one-shot bufferization over the whole module with
    function boundaries bufferized (identity layouts, so each argument and
    result is a plain contiguous buffer the runtime can pass as a pointer)
    and every copy it needs materialized as `linalg.copy`, which the
    backends lower like any other linalg op rather than through a library
    call. The `anvil.*` argument and result attributes are dropped first:
    they describe tensors, and the manifest has recorded them.

    `anvil.flash_attention` and `anvil.flash_attention_grad` write new
    buffers through a runtime call each (`attention`, `attention-grad`;
    on bf16 tensors `attention-bf16`, `attention-grad-bf16`: the CPU's
    reference functions by default, a device's with its backend). Their 4-D buffers are passed where they lie, strided views
    included (the `(B, T, H, D)` slices of a projection under `bshd`),
    with each one's offset and strides in a constant global
    (`__anvil_attention_layouts_N`, RuntimeABI.h's
    `anvil_rt_attention_layout`); one without static strides or with a
    strided innermost dimension is copied first.

    `anvil.linear`, `anvil.linear_gelu`, `anvil.matmul_gelu_bias_grad` and
    `anvil.matmul_bias_grad` write new buffers through one GEMM call each
    (`gemm-bias`, `gemm-bias-gelu`, `gemm-dgelu-bgrad`,
    `gemm-weight-bias-grad`: RuntimeABI.h's `anvil_rt_gemm_bias`,
    `anvil_rt_gemm_bias_gelu`, `anvil_rt_gemm_dgelu_bgrad` and
    `anvil_rt_gemm_weight_bias_grad` by default, cuBLASLt's epilogues with
    the CUDA backend), every buffer passed as a pointer to its first
    element (one that is not contiguous is copied first).

    `anvil.matmul_f8` writes a new buffer through one call of `gemm-f8`
    (RuntimeABI.h's `anvil_rt_gemm_f8`: the transposes, M, N, K, each 8-bit
    operand's pointer, format, row and batch strides, the two scales'
    pointers, the bias's (null without one), and the result's pointer, type
    (f32 or bf16), row and batch strides, and the batch; cuBLASLt's FP8
    GEMM with the scales as its scale pointers and the bias as its BIAS
    epilogue's with the CUDA backend). `anvil.linear_gelu_f8` writes its
    three new buffers (codes, pre, amax) through one call of `gemm-f8-gelu`
    (`anvil_rt_gemm_f8_gelu`: the rhs's transpose, M (the lhs's rows), N,
    K, the operands' pointers and formats, the scales', bias's and
    output scale's pointers, the codes' pointer and format, and pre's and
    the amax's; cuBLASLt's FP8 GEMM with the GELU_AUX_BIAS epilogue, an FP8
    D and AMAX_D with the CUDA backend).

    A convolution marked `anvil.library_call` (`anvil-library-convs`)
    writes a new buffer through one call of `conv` (RuntimeABI.h's
    `anvil_rt_conv`: the kind, bf16 or not, the problem in a constant
    global `__anvil_conv_problem_N`, and the three buffers, made contiguous,
    as pointers); the CUDA backend's is cuDNN's.

    An `anvil.embedding_grad` marked `anvil.library_call`
    (`anvil-convert-to-linalg`'s `library-embedding-grads`) writes a new
    table through one call of `embedding-grad` (RuntimeABI.h's
    `anvil_rt_embedding_grad_f32`: positions, rows, width, then the
    gradient, the ids, made contiguous, and the table, as pointers); the
    CUDA backend's sums each row's gradients in parallel with the same
    bits (`anvil_rt_cuda_embedding_grad_f32`).

    Input:
    ```mlir
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %e = tensor.empty() : tensor<4xf32>
      %y = linalg.generic ... ins(%x) outs(%e) ...
      return %y : tensor<4xf32>
    }
    ```
    Output:
    ```mlir
    func.func @f(%x: memref<4xf32>) -> memref<4xf32> {
      %a = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
      linalg.generic ... ins(%x) outs(%a) ...
      return %a : memref<4xf32>
    }
    ```
  }];
  let options = [
    Option<"attentionCallee", "attention", "std::string",
           /*default=*/"\"anvil_rt_attention_f32\"",
           "The runtime function anvil.flash_attention calls">,
    Option<"attentionGradCallee", "attention-grad", "std::string",
           /*default=*/"\"anvil_rt_attention_grad_f32\"",
           "The runtime function anvil.flash_attention_grad calls">,
    Option<"attentionBf16Callee", "attention-bf16", "std::string",
           /*default=*/"\"anvil_rt_attention_bf16\"",
           "The runtime function anvil.flash_attention on bf16 tensors "
           "calls">,
    Option<"attentionGradBf16Callee", "attention-grad-bf16", "std::string",
           /*default=*/"\"anvil_rt_attention_grad_bf16\"",
           "The runtime function anvil.flash_attention_grad on bf16 "
           "tensors calls">,
    Option<"gemmBiasCallee", "gemm-bias", "std::string",
           /*default=*/"\"anvil_rt_gemm_bias\"",
           "The runtime function anvil.linear calls">,
    Option<"gemmBiasGeluCallee", "gemm-bias-gelu", "std::string",
           /*default=*/"\"anvil_rt_gemm_bias_gelu\"",
           "The runtime function anvil.linear_gelu calls">,
    Option<"gemmDgeluBgradCallee", "gemm-dgelu-bgrad", "std::string",
           /*default=*/"\"anvil_rt_gemm_dgelu_bgrad\"",
           "The runtime function anvil.matmul_gelu_bias_grad calls">,
    Option<"gemmF8Callee", "gemm-f8", "std::string",
           /*default=*/"\"anvil_rt_gemm_f8\"",
           "The runtime function anvil.matmul_f8 calls">,
    Option<"gemmF8GeluCallee", "gemm-f8-gelu", "std::string",
           /*default=*/"\"anvil_rt_gemm_f8_gelu\"",
           "The runtime function anvil.linear_gelu_f8 calls">,
    Option<"gemmWeightBiasGradCallee", "gemm-weight-bias-grad", "std::string",
           /*default=*/"\"anvil_rt_gemm_weight_bias_grad\"",
           "The runtime function anvil.matmul_bias_grad calls">,
    Option<"convCallee", "conv", "std::string",
           /*default=*/"\"anvil_rt_conv\"",
           "The runtime function a convolution marked anvil.library_call "
           "calls">,
    Option<"copyGlobals", "copy-globals", "bool", /*default=*/"false",
           "Copy a library call's operands that are globals (constants: "
           "the host's memory) into planned buffers first (the CUDA "
           "backend's and its emulation: its calls run on the device)">,
    Option<"embeddingGradCallee", "embedding-grad", "std::string",
           /*default=*/"\"anvil_rt_embedding_grad_f32\"",
           "The runtime function an anvil.embedding_grad marked "
           "anvil.library_call calls">,
  ];
  let dependentDialects = [
    "mlir::bufferization::BufferizationDialect", "mlir::linalg::LinalgDialect",
    "mlir::memref::MemRefDialect", "mlir::LLVM::LLVMDialect"
  ];
}

def AnvilOutlineDispatchesPass : Pass<"anvil-outline-dispatches", "mlir::ModuleOp"> {
  let summary = "Outlines each dispatch region of a bufferized function";
  let description = [{
    After fusion and bufferization, every top-level linalg op of a function
    (and every loop that contains linalg ops, such as a scatter-add) is one
    dispatch region: one kernel of the step. This pass moves each into a
    private function `<function>__dispatch_<n>` and calls it, so a backend
    compiles, schedules and profiles kernels one by one (LLVM optimizes
    many small functions far faster than one function holding the whole
    step). Constants the region uses are cloned into it; the buffers it
    reads and writes become the outlined function's arguments. Functions
    that come out identical (a deep model's layers repeat their kernels)
    are merged into one, which all their calls use.

    With `fills-into-reductions` (the CUDA backend's and its emulation), a
    `linalg.fill` of a buffer with a constant and the next dispatch, when
    that is a `linalg.generic` with parallel and reduction loops that
    writes the buffer and does not read it (past ops free of memory effects
    and constant fills of the generic's other outputs only: a merged
    reduction's outputs, each filled, all join it, in their order), make
    one region, at the generic's place:
    anvil-cuda-map-dispatches then starts the reduction (a warp per row, or
    a thread per output) from the fill's value, one launch instead of two.
    A reduction over every loop (an amax, whose blocks fold into the output
    atomically) keeps its fill apart.

    A row group (`scf.execute_region` marked `anvil.row_group`, from
    anvil-row-groups) is one dispatch: its ops make the outlined function's
    body, and the function carries the mark.

    Input:
    ```mlir
    func.func @step(%a: memref<4xf32>, %b: memref<4xf32>) {
      linalg.generic ... ins(%a) outs(%b) ...
      return
    }
    ```
    Output:
    ```mlir
    func.func @step(%a: memref<4xf32>, %b: memref<4xf32>) {
      call @step__dispatch_0(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
      return
    }
    func.func private @step__dispatch_0(%a: memref<4xf32>, %b: memref<4xf32>) {
      linalg.generic ... ins(%a) outs(%b) ...
      return
    }
    ```
  }];
  let options = [
    Option<"fillsIntoReductions", "fills-into-reductions", "bool",
           /*default=*/"false",
           "A fill and the reduction it initializes make one dispatch">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::scf::SCFDialect"];
}

def AnvilRowGroupsPass : Pass<"anvil-row-groups", "mlir::ModuleOp"> {
  let summary = "Groups the dispatches over the same rows into one region";
  let description = [{
    For a GPU grid, before the memory plan: in a bufferized function, a
    dispatch (a linalg op on buffers) whose leading loops are parallel (the
    rows), and the next ones whose leading loops are the same rows, make
    one `scf.execute_region` marked `anvil.row_group`, which
    anvil-outline-dispatches outlines as one dispatch and
    anvil-cuda-map-dispatches runs as one kernel of a warp per row, the
    ops one after another in each row (a layer norm's row sums, its
    statistics and its normalized rows: one launch instead of five, each
    row read from the cache after its first pass). A dispatch joins when
    - the group's rows (the common leading parallel ranges, without
      trailing ranges of 1: 8 x 1024 for a layer norm over `(8, 1024, 768)`)
      number `min-rows` or more, and each member's loops have at most 8
      points a row per row (a member of n points then runs on sqrt(n / 8)
      warps or more, where a grid of its own would run a thread a point);
    - each output is a contiguous buffer whose leading dimensions are the
      rows, indexed there by the row loops, and a reduction writes one
      element per row;
    - where two members' buffers may share bytes and one of them writes,
      both are the same bytes accessed within rows (so the group can run
      row by row, each row's members in order);
    - it moves up over the dispatches between only where neither writes
      bytes the other touches (allocations, globals and the arguments of a
      public function are distinct buffers, any other buffer may be any;
      `memref.view`s of one buffer at constant byte shifts, and reshapes of
      them, are told apart, other views cover their whole buffer), with the
      pure ops and allocations it uses, and over no other op with memory
      effects (a library call, a copy) but a static allocation: at most 16
      dispatches stay in between;
    - it reads none of the bytes it writes through another buffer, and a
      reduction's loops past the rows are reductions or of range 1.
    A group needs two members, one of which touches what an earlier one writes
    (independent ops over one domain are anvil-horizontal-fuse's), and a
    reduction among them (elementwise ops alone are anvil-fuse's). The
    region holds its buffers live from its start to its end, so that
    anvil-plan-memory, which runs next, gives none of them the bytes of
    another while the group runs.

    Input (a layer norm's mean and centered rows):
    ```mlir
    linalg.fill ins(%zero : f32) outs(%sum : memref<8192x1xf32>)
    linalg.generic {iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x : memref<8192x1x768xf32>) outs(%sum : memref<8192x1xf32>) ...
    linalg.generic {iterator_types = ["parallel", "parallel"]}
        ins(%x2, %sum : memref<8192x768xf32>, memref<8192x1xf32>)
        outs(%y : memref<8192x768xf32>) ...
    ```
    Output:
    ```mlir
    scf.execute_region no_inline {
      linalg.fill ...
      linalg.generic ... // the sums
      linalg.generic ... // the centered rows
      scf.yield
    } {anvil.row_group}
    ```
  }];
  let options = [
    Option<"minRows", "min-rows", "int64_t", /*default=*/"128",
           "The fewest rows of a group">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect"];
}

def AnvilPlanMemoryPass : Pass<"anvil-plan-memory", "mlir::ModuleOp"> {
  let summary = "Places a step's temporary buffers in one workspace";
  let description = [{
    The static memory plan: in every public function (an entry point of the
    executable), each statically shaped `memref.alloc` of the body becomes a
    `memref.view` into one workspace buffer, a new last argument
    `memref<Nxi8>` that the runtime allocates once and passes to every
    step. Buffers whose lifetimes do not overlap share bytes.

    1. Number the ops of the body; a buffer lives from its allocation to
       the last op that uses it or anything aliasing it (views, and results
       of ops that take it, such as loops carrying it).
    2. Place buffers largest first, each at the lowest 64-byte aligned
       offset that overlaps no placed buffer live at the same time.
    3. The workspace size N is the highest end offset: the planned bytes of
       the step.

    Buffers that escape (returned) or live in nested regions keep their
    allocation; the runtime measures any such allocation, so a step's
    measured peak equals N only when everything was planned.

    Input:
    ```mlir
    func.func @step(%x: memref<4xf32>, %out: memref<4xf32>) {
      %a = memref.alloc() : memref<4xf32>
      ...
    }
    ```
    Output:
    ```mlir
    func.func @step(%x: memref<4xf32>, %out: memref<4xf32>, %ws: memref<64xi8>) {
      %c0 = arith.constant 0 : index
      %a = memref.view %ws[%c0][] : memref<64xi8> to memref<4xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def AnvilExpandF8CastsPass : Pass<"anvil-expand-f8-casts"> {
  let summary = "Expands conversions to and from the 8-bit floats into "
                "integer arithmetic";
  let description = [{
    LLVM has no 8-bit float types, so `arith.truncf` to and `arith.extf`
    from `f8E4M3FN` and `f8E5M2` become bit manipulation on the integers
    that hold them (the LLVM lowering stores them as `i8`), with the
    semantics of `arith` and of `ml_dtypes` (PyPI), bit for bit:

    - truncf rounds to nearest even from an f32 or f64 source (bf16 and
      f16 sources are extended to f32 first, exactly), subnormals included;
      a value beyond the largest finite one after rounding becomes
      infinity in E5M2 and NaN in E4M3FN, which has no infinity; NaN stays
      NaN (0x7F in E4M3FN, 0x7E in E5M2, with the sign).
    - extf is exact.

    `anvil.cast`'s saturation (to the largest finite value) is the
    lowering's clamp before the truncf (`anvil-convert-to-linalg`). Both
    backends run this pass: the CPU's host code and the CUDA kernels.

    With `bf16` (the CPU's host code), truncf from f32 to bf16 becomes
    integer code too (upstream's expansion: round to nearest even,
    subnormals kept, NaN stays NaN), and so does extf back: LLVM would
    otherwise lower it to whatever the host has (a bf16 convert instruction
    that flushes subnormals to zero where AVX512-BF16 exists), so the CPU
    rounds as the runtime's functions (`anvil_rt_gemm_bf16_rounded`) and
    the GPU's `cvt.rn.bf16.f32` do, on every host.
  }];
  let options = [
    Option<"bf16", "bf16", "bool", /*default=*/"false",
           "Also expand truncf f32 -> bf16 and extf bf16 -> f32 into "
           "integer code">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

#endif // ANVIL_CONVERSION_PASSES_TD
