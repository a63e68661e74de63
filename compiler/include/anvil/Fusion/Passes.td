//===- Passes.td - dispatch-region fusion -------------------*- tablegen -*-===//
//
// Fusion of linalg ops on tensors into dispatch regions (one kernel each).
// Flags are `anvil-` prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FUSION_PASSES_TD
#define ANVIL_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilFusePass : Pass<"anvil-fuse", "mlir::ModuleOp"> {
  let summary = "Fuses elementwise producers into their consumers, without recomputation (but of cheap producers, with recompute-cheap)";
  let description = [{
    Upstream linalg elementwise fusion and reshape propagation, with Anvil's
    rule for when a producer may be fused into a consumer:

    1. the producer has one use (otherwise fusing duplicates its work), and
    2. the consumer reads it through a permutation of all its loops, so
       each produced element is computed exactly once inside the fused
       kernel; a producer that only moves data (a broadcast, a copy) may be
       read through any map, since re-reading it costs only a load.

    Last, a generic whose loops are all parallel and whose results are
    returned collapsed, all one way (none returned uncollapsed, no input a
    slice), computes the collapsed shape itself, so that bufferization
    writes the returned buffer rather than one the return copies
    (collapseReturnedReshapes).

    Chains of elementwise ops and broadcasts become one generic; an
    elementwise producer of a reduction (the `x * y` of `sum(x * y)`)
    joins it; but the GELU feeding a matmul does not: fused, it would be
    recomputed for every output column. Reshapes are propagated through
    generics (by expansion) so they do not split regions.

    Input:
    ```mlir
    %b = linalg.generic ... ins(%bias) ... { broadcast }
    %y = linalg.generic ... ins(%x, %b) ... { arith.addf }
    %z = linalg.generic ... ins(%y) ... { math.tanh }
    ```
    Output:
    ```mlir
    %z = linalg.generic ... ins(%x, %bias) ... { arith.addf; math.tanh }
    ```

    A rank-1 integer constant whose values are their positions (0, 1, 2,
    ...: the class ids a one-hot compares labels with) that a generic reads
    through one of its loops becomes that loop's `linalg.index` (cast to
    the element type): no table load a point (GPT-2's logits' gradient read
    4 bytes of a 201 KB table for each of its 411 million points).

    With `merge-amax` (the CUDA backend's), a tensor that an elementwise op
    casts (FP8's codes, by a scale that does not come from this amax: the
    delayed recipe's) and a full reduction takes the amax of (`max(out,
    |x|)`), over the same loops, is read once: the two become one generic
    with both outputs (the codes at every point, the amax folded over all of
    them), into which the tensor's producers then fuse, so the kernel that
    computes the tensor writes its 8-bit codes and its amax without writing
    it. Then an amax of a tensor that an elementwise generic writes anyway
    (other ops read it: the current recipe's cast, which scales by this
    amax, among them) becomes one more output of that generic, every loop
    a reduction: the kernel that writes the tensor folds its amax, and no
    pass reads the tensor for it (the producer's maps must be loop indices
    or constants). The CUDA mapping runs such generics on a grid (the amax
    by atomic max); the CPU backend leaves them apart (a whole-tensor
    reduction would take its dispatch off the threads).

    With `recompute-cheap` (the CUDA backend's), the one exception to
    rule 1: an elementwise producer of 2 to 8 readers (arith and math
    ops, its init unread) that every reader reads once per point (a
    permutation map, but for loops of extent 1 it leaves out, perhaps
    through one reshape) is copied for each reader and fused into it, when reading its full-size inputs once per
    reader moves no more bytes than writing it and reading it back would
    ((N - 1) B_in <= (N + 1) B_out per point, broadcast inputs counted 0)
    and its work is cheap: at most 6, or the copies' extra work,
    (N - 1) x its work, at most the bits a point saves, (N + 1) B_out -
    (N - 1) B_in (an H200 issues about 7 f32 instructions in the time it
    moves a byte), and never more than 64. A reshape of its result that
    several such readers read is split into one per reader first (but,
    with merge-amax, one read by an amax and a cast that merge with it). An arith op counts 1, a
    division or a transcendental or root (exp, tanh, erf, sqrt, ...) 8;
    a body with a remainder, an integer division, a power or another op
    of unknown cost is not copied. The bf16 rounding of a GEMM's product
    read by a softmax's maximum and subtraction, a cross-entropy's one-hot,
    a subtraction of a row maximum, a tanh-GELU's gradient read by its
    cast to bf16 and its bias gradient's sum, the f32 widening of a GEMM's
    result read 7 times by a layer norm's backward, a layer norm's centered
    and normalized rows. A reader through an expansion by unit dimensions
    (a row reduction's (B, T, 1, C) view) gets a copy built over its loops
    instead, whose broadcasts need not be projected permutations (reshape
    propagation needs them to be). A producer whose reader
    is copied in the same round waits for the next (up to 8 rounds); copies
    that do not fuse after all merge back into one. The values are the
    same; the tensor is not written. Also with `recompute-cheap`: a
    generic without loops, its init unread, whose inputs are the rank-0
    results of reductions over every loop, of work at most 32 (equal ops
    of its body counted once, as the code generator's CSE leaves them;
    FP8's current recipe's
    scale, 448 / amax, read by the cast and by the GEMM's descale; LAMB's
    trust ratio, two roots and a division in f64, read by the update's
    application) fuses into every generic with only parallel loops that reads
    it, however many: it took a kernel of one thread only because the
    reduction's blocks finish in no set order, and each reader computes it
    again where it reads it (a GPU thread once for its run of points; a
    reduction would compute it at every term, and stays a reader). GPT-2's
    FP8 step launches 145 kernels fewer, BERT-large's LAMB step 398.

    Then, with `recompute-cheap`, after the cheap producers were copied and
    the cheap readers merged: a per-channel statistic fuses into the
    generics with only parallel loops that read it through a broadcast (an
    element at several points), when every user reads it so (then its
    one-block kernel goes; one that a reduction or the return also reads
    keeps its kernel, and its readers read it) and each reader's work with
    it stays within the bits the reader moves a point, or 32. A statistic:
    a generic with only parallel loops over at most 4096 points, its init
    unread, of work at most 32, whose inputs, read through the identity,
    are block arguments or results of reductions with a parallel loop
    inside a reduction loop, at least one (a batch norm's sums over batch
    and pixels around the channel; not a row's, whose row groups compute
    each row's statistic once): a batch norm's mean (sum / N) and rstd
    (rsqrt(var / N + eps)). Each reader computes it again at its points.
    After the copies, so that a producer copied into its readers (a
    bottleneck's join, read by its ReLU and the backward's mask) was judged
    on its own work (fused into it first, the statistics' divisions and
    roots would have kept it written); after the merges, which a reader
    grown by the statistics would no longer pass. ResNet-50's step: 1035 ->
    885 launches, 23.9 -> 22.5 GB, its plan 8 KB smaller.

    With `merge-cheap-readers` (the CUDA backend's), after recompute-cheap:
    an elementwise producer that stays written for some readers and has
    a cheap elementwise reader over the same loops (at most 2 units of
    work, reading it through the identity: a cast of a layer norm's f32
    gradient to bf16 for a GEMM) gets the reader merged in as one more
    result, at the producer's place (whatever else the reader reads must
    be available there, or be an empty tensor, fill or constant moved
    there): the cast no longer reads the f32 value back.

    Always, after recompute-cheap and before merge-amax: an elementwise
    producer whose results the function returns (updated training state,
    written anyway; the return in the producer's own block) and which
    exactly one other generic reads, through the identity and over the
    same loops, becomes more results of that generic (a few rounds, so
    chains merge): AdamW's m and v updates and the parameter update that
    reads them are one kernel, which reads the parameter, m, v, the
    gradient and three scalars once and writes the three, where three
    kernels read m and v back.

    A second exception to rule 1: a generic that only broadcasts scalars
    (rank-0 inputs: the learning rate, an optimizer's bias corrections,
    which CSE shares among the updates of every parameter of a shape) is
    fused into every consumer, which then reads the scalar instead of a
    tensor of its copies.
  }];
  let options = [
    Option<"mergeAmax", "merge-amax", "bool", /*default=*/"false",
           "Merge an elementwise cast and an amax of the same tensor into "
           "one generic (FP8's codes and amax in the producer's kernel)">,
    Option<"mergeCheapReadersOption", "merge-cheap-readers", "bool",
           /*default=*/"false",
           "Merge a cheap elementwise reader (a cast) of a producer that "
           "stays written into the producer's kernel as one more result">,
    Option<"recomputeCheap", "recompute-cheap", "bool", /*default=*/"false",
           "Copy a cheap elementwise producer of several consumers into "
           "each (it is recomputed there instead of written and read)">,
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect"
  ];
}

def AnvilSplitReductionsPass
    : Pass<"anvil-split-reductions", "mlir::ModuleOp"> {
  let summary = "Splits long sums over few outputs into two stages, for a GPU grid";
  let description = [{
    A GPU grid maps a reduction's output points to threads, each of which
    folds the whole reduction in order. A sum of many terms into few
    outputs then leaves most of the GPU idle and each thread waiting on a
    long chain of loads: GPT-2's bias gradients sum 8192 rows into 768
    columns, on 768 threads of 3 of an H200's 132 SMs. This pass, run after
    `anvil-fuse` for the CUDA backend, rewrites each such sum (a generic on
    tensors with one output, `arith.addf` as its combiner, static shapes,
    every operand read through loop dimensions alone, or, in a column sum
    (the innermost loop parallel), at a constant 0 where its dimension is 1
    (a layer norm's row mean and rstd, [8, 1024, 1], in its weight
    gradient; those dimensions are collapsed away first, so the statistics
    split into slices like the rows; a constant 0 into a longer dimension,
    or a row sum reading its row's statistic, which a warp per row runs
    whole, is not split), no `linalg.index` in the body, at least
    `min-length` terms per output and at most `max-points` outputs; not a
    matrix product, which goes to a GEMM) into two generics:

    1. partial sums: the reduction dimensions, collapsed into one of R terms
       where every operand keeps them contiguous, are split into S slices of
       R / S consecutive terms (S a power of two, at most 256, with at least
       `min-slice` terms each); the slices are a new outer parallel
       dimension, so the grid runs S x outputs threads, and each partial
       starts from 0.0;
    2. the sum of the S partials of each output, in slice order, into the
       original output (whose value the sum continues).

    The conditions above on the maps and `linalg.index` are those of the
    slices, which re-index the loops. Where the reduction dimensions do
    not collapse into one (a batch norm's sums over N, H and W of NCHW,
    the channel between them), the partials are the sums over the run of
    consecutive reduction dimensions that ends at the innermost one, for
    each point of the others, which become parallel (outermost in the
    partials' shape, before the output's dimensions); the loops keep their
    positions, so any maps and `linalg.index` may be read: ResNet-50's first norms sum 32 x 112 x
    112 terms into each of 64 channels, a warp per channel; split, 32 x 64
    rows of 112 x 112, a warp each. So do sums whose body reads loop
    positions (`linalg.index`: a dropout mask hashed from each element's
    position, which the slices' re-indexing would change), whose loops
    this keeps; when their reduction dimensions are one run, the partials
    are over the innermost (BERT-large's bias gradients: 8 x 1024 threads
    over 512 rows each, not 1024 over 4096). At least two such points and
    `min-slice` terms a partial. Then their sum over those dimensions, in
    order, into the original output. Partials that are still rows of a
    warp each, at most `max-points` / 32 of them, split into slices in turn
    (a 3-D U-Net's instance norm gradients over N = 2 and 128^3 voxels: 64
    rows, then 256 slices of each).

    A row sum reading a unit dimension at a constant 0 (its row's mean)
    splits into slices only over at most `max-points` / 32 rows (an
    instance norm's variance, 64 rows of 2M voxels); over more (softmax's,
    the cross-entropy's), a warp per row runs it whole.

    A constant fill of the original output read by the sum alone moves to
    just before the second stage, where `anvil-outline-dispatches` folds it
    into that launch.

    Each output's sum is then a different, fixed association of the same
    terms: deterministic from run to run, not the CPU backend's sequential
    order (the emulated grid, `--emulate-cuda-grid`, runs the same split).
    The partials are a tensor the memory plan places like any other.
    `min-length = 0` turns the pass off.

    Input (a bias gradient):
    ```mlir
    %db = linalg.generic {iterator_types = ["reduction", "parallel"]}
        ins(%dy : tensor<8192x768xf32>) outs(%zero : tensor<768xf32>) { addf }
    ```
    Output:
    ```mlir
    %s = tensor.expand_shape %dy [[0, 1], [2]] : ... into tensor<64x128x768xf32>
    %p = linalg.generic {iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%s) outs(%fill : tensor<64x768xf32>) { addf }  // from 0.0
    %db = linalg.generic {iterator_types = ["reduction", "parallel"]}
        ins(%p) outs(%zero : tensor<768xf32>) { addf }
    ```
  }];
  let options = [
    Option<"minLength", "min-length", "int64_t", /*default=*/"4096",
           "Split sums of at least this many terms per output (0: none)">,
    Option<"maxPoints", "max-points", "int64_t", /*default=*/"16384",
           "Split only sums into at most this many outputs">,
    Option<"minSlice", "min-slice", "int64_t", /*default=*/"128",
           "Fewest terms in a slice (a thread's share)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect"
  ];
}

def AnvilHorizontalFusePass
    : Pass<"anvil-horizontal-fuse", "mlir::ModuleOp"> {
  let summary = "Merges independent dispatches over one domain into one";
  let description = [{
    After `anvil-fuse` every top-level linalg op is a dispatch: a kernel
    launch on a GPU, where a small kernel costs its launch more than its
    work. Many are independent of each other and loop over the same
    domain: the optimizer's update of each of a model's same-shaped
    parameters (GPT-2's twelve layers), the delayed recipe's scale of each
    FP8 tensor. This pass, run after `anvil-fuse` for the CUDA backend and
    its emulation, merges such generics into one `linalg.generic` whose
    operands and results are all of theirs, each body computed in turn at
    every point: one launch instead of several, every value computed as
    before (but for the association of a merged reduction over every loop,
    below, whose inputs' alignment can change the runs its lanes read).

    It walks each function's top-level generics in order. A candidate has
    tensor semantics, a static domain, no attributes of its own, and only
    parallel loops, or a reduction with a parallel loop that is not a GEMM
    (a product with m, n and k loops runs as a library GEMM; a sum of
    products over shared loops, a norm's weight gradient, is a reduction
    like any other), or reduces over every loop at most 4096 f32 terms,
    each input read through the identity, into rank-0 f32 outputs, each
    `out + v`, `max(out, v)` or `min(out, v)` with `v` computed without
    the outputs (LAMB's squared norms of small tensors, a split sum's
    second stage, the maximum of an FP8 tensor's amax history: a grid
    folds each on one warp, or one thread, and merged, the warp folds
    every member's terms, its loads at each step independent; an amax,
    the maximum of `|x|`, folds into its output atomically on a grid and
    stays): a row maximum and a row sum of one tensor read it
    once, each output folded in its own order; an input two members read
    the same way (one tensor, or equal reshapes of it, through the same
    map) is one input of the merged op. It joins the first open group with the same loop ranges
    and kinds if the group's operands stay within `max-operands`, or, with
    every loop parallel, within `max-small-operands` while they hold at
    most `small-elements` elements in all (a kernel moving a few MB costs
    about its launch: the optimizer's updates of GPT-2's 74 parameters of
    768 elements, ten operands each, run in 13 launches instead of 37;
    reductions, such as the split sums' second stages of 64 partials a
    column, stay within `max-operands`: merged, each of their few threads
    would only fold more terms in turn); a group
    closes once something reads one of its results at or before the
    candidate (the merged op takes the place of the group's last member, so
    every reader of every member must come after it; this also keeps a
    member from reading another). Groups of two or more become one generic
    at their last member's place; the members' results are replaced by its
    results. A fill that only a member's output reads (a row reduction's
    start) moves to just before the merged op, where
    `anvil-outline-dispatches` folds it into the merged op's launch.

    Before the walk, with `order-updates` (the default), the optimizer's
    ops go to the end of the block by level: the generics that are
    candidates with loops whose tensors hold at most `order-elements`
    elements each, or that only the block's return reads (updates of
    returned state) and read only such small tensors or tensors of a
    result's type, and whose loops are all parallel or all reductions,
    form a set; an op that something outside the set reads leaves it,
    until none does. The set moves before the terminator: first the ops
    that read none of the others, then those that read only those, and so
    on, each level in block order. In block order LAMB's ops for each
    parameter read the last ones (moments and update direction, the
    direction's squared norm, the update reading the norm), so each one's
    reader closes the group that would have taken the next parameter's;
    by level, every direction comes before every norm and every norm
    before every update, and each level's ops of one domain merge.
    Moved later, each computes the same values, from what it read; their
    inputs live until the end (an update direction instead of the
    gradient it is computed from). Reductions over some loops only (the
    split bias and norm-weight gradients' second stages) stay: moved,
    they would let their first stages, each reading a layer's
    activation-sized gradient, merge across layers between the members of
    row groups, some of which would then not form. BERT-large's step
    (LAMB): 2162 launches to 798 (with the hoists below), its bytes the
    same.

    Before the walk, and after the two hoists below, with
    `sink-small-readers` (the default): for each
    candidate, the nearest of the last eight earlier candidates of its
    domain and loop kinds that reads an input the same way (a layer norm's dgamma and dbeta
    partial sums, both over dy, after anvil-split-reductions): the readers
    of the earlier one's results that lie between the two (a split sum's
    second stage, right after its first, which would close the group)
    move to just after the later one, in order, so that the two merge and
    read the input once. Only readers free of memory effects that nothing
    reads at or before the later candidate, and whose tensor operands each
    hold at most `max-sunk-elements` elements, move; otherwise nothing
    does. Moved later, each computes the same values; its small inputs
    live a little longer.

    First of all, with `copy-state-reads` (the default): a generic whose
    result the function returns as tied state (`anvil.tied_to` an
    argument), and whose body reads that argument, or a slice of it of a
    static shape, with `tensor.extract` (the delayed FP8 recipe's history
    roll, whose point i reads the old history's point i - 1), reads it from
    a copy that a new identity generic makes right before it, unless
    something reads the state after the update (then bufferization does
    not write the update in place, and a copy would be one more). Written in place, such an
    update needs the old values copied first; bufferization would copy
    each slice where it is taken (next to its FP8 tensor in the forward
    pass: one launch each), where the explicit copy is a small candidate
    like the roll, moves with it under `order-updates` and merges with
    the other copies. The same bytes are copied, elsewhere: GPT-2 124M's
    delayed step 742 -> 603 launches (its 144 copies of 1023 floats in a
    few), its plan the same.

    Then the fills that start reductions over every loop (FP8's atomic
    amaxes, which need their output filled by an earlier launch anyway) or
    across rows (column sums, the innermost loop parallel: a merged sum's
    kernel takes no fill into its launch):
    constant fills of fresh `tensor.empty` destinations of at most
    `max-hoisted-elements` elements, read by such a reduction alone, move
    to the start of their block as one generic per shape (at most
    `max-operands` fills each), whose outputs hold the constants. Before
    that, with `hoist-argument-only` (the default), the candidates that
    read nothing but the block's arguments (and constants, static
    `tensor.empty`s and fills of constants into them), and the candidates
    whose tensors hold at most `order-elements` elements each that read
    only those and what such moved candidates compute, where two or more
    share a domain and loop kinds (and what they read moves), move to the
    start of the block with the constants, empties and fills they use, by
    level (first those that read no other moved candidate, then those
    that read only those, ...; in block order within a level): a step's
    casts of its f32 weights to bf16 sit each just before the GEMM that
    reads it, which would close every group, and merge there instead
    (twelve layers' casts of one shape: one launch); so do the maxima of
    the delayed FP8 recipe's amax histories, then the scales computed from
    them (GPT-2 124M's delayed step: 144 maxima in 12 launches and their
    scales in a few, where each scale's reader had closed the group that
    would have taken the next). Moved earlier, each computes the same
    values; a weight's bf16 copy, which the backward pass reads again,
    lives through the step's peak anyway, and the small ones hold a few
    KB.

    Input (two independent updates of 768 elements):
    ```mlir
    %a = linalg.generic {iterator_types = ["parallel"]} ins(%x, %g : ...) outs(%x : tensor<768xf32>) { ... }
    %b = linalg.generic {iterator_types = ["parallel"]} ins(%y, %h : ...) outs(%y : tensor<768xf32>) { ... }
    ```
    Output:
    ```mlir
    %m:2 = linalg.generic {iterator_types = ["parallel"]} ins(%x, %g, %y, %h : ...) outs(%x, %y : ...) {
      // %a's body, then %b's; yield both
    }
    ```
  }];
  let options = [
    Option<"maxOperands", "max-operands", "int64_t", /*default=*/"24",
           "The most operands (inputs and outputs) of a merged generic: its "
           "kernel's parameters">,
    Option<"maxSmallOperands", "max-small-operands", "int64_t",
           /*default=*/"64",
           "The most operands of a merged generic whose operands hold at "
           "most small-elements elements">,
    Option<"smallElements", "small-elements", "int64_t",
           /*default=*/"1048576",
           "The most elements the operands of a merged generic of more than "
           "max-operands operands may hold in all">,
    Option<"maxHoistedElements", "max-hoisted-elements", "int64_t",
           /*default=*/"1024",
           "The largest fills (in elements) of reductions over every loop "
           "that move to the function's start, merged by shape">,
    Option<"sinkSmallReaders", "sink-small-readers", "bool",
           /*default=*/"true",
           "Move the small readers between two candidates of a domain that "
           "read an input the same way to after the second, so that the two "
           "merge">,
    Option<"maxSunkElements", "max-sunk-elements", "int64_t",
           /*default=*/"65536",
           "The largest tensor (in elements) that a reader moved by "
           "sink-small-readers may read">,
    Option<"hoistArgumentOnly", "hoist-argument-only", "bool",
           /*default=*/"true",
           "Move the candidates that read only the block's arguments to its "
           "start, where those of a domain merge">,
    Option<"copyStateReads", "copy-state-reads", "bool", /*default=*/"true",
           "Read the returned state that an update reads elsewhere than "
           "where it writes (an FP8 amax history's roll) from an explicit "
           "copy made right before the update, which merges with the "
           "others, instead of bufferization's copy where the slice is "
           "taken">,
    Option<"orderUpdates", "order-updates", "bool", /*default=*/"true",
           "Move the small candidates and state updates that only each "
           "other and the return read to the end of the block, by level, "
           "where those of a level merge">,
    Option<"orderElements", "order-elements", "int64_t",
           /*default=*/"65536",
           "The largest tensor (in elements) a small op that order-updates "
           "moves, or that hoist-argument-only moves for reading another "
           "moved op, may read or write (a state update that order-updates "
           "moves may also read tensors of its results' types)">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

#endif // ANVIL_FUSION_PASSES_TD
