//===- Passes.td - passes of the CUDA backend ---------------*- tablegen -*-===//
//
// Passes specific to the CUDA target. Flags are `anvil-cuda-` prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TARGET_CUDA_PASSES_TD
#define ANVIL_TARGET_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilCUDAMapDispatchesPass
    : Pass<"anvil-cuda-map-dispatches", "mlir::ModuleOp"> {
  let summary = "Maps each dispatch region onto a CUDA grid (gpu.launch)";
  let description = [{
    Runs on the functions `anvil-outline-dispatches` made
    (`<function>__dispatch_<n>`), after bufferization. Each linalg op of a
    dispatch becomes parallel loops over its parallel dimensions (with its
    reduction dimensions as sequential loops inside), and each loop nest one
    `gpu.launch`: the iteration space is linearized with the innermost
    dimension fastest, so that consecutive threads of a warp touch
    consecutive elements (coalesced loads and stores of identity-mapped
    operands), and cut into blocks of `block-size` threads (fewer for a
    smaller space, rounded up to a warp). A thread whose index falls past
    the end does nothing.

    An elementwise loop nest (loads, stores and arithmetic, every store
    along the innermost dimension) whose innermost extent is a multiple of
    `vector-width` gives each thread that many consecutive points of it,
    computed lane by lane as before; each run of accesses to a buffer
    argument whose rows are aligned to the run (16- and 32-bit elements,
    static strides and offset multiples of the width, unit innermost
    stride) starts with an access carrying the run's alignment, its size
    in bytes (`memref.load {alignment = 16}` for f32, 8 for bf16), which
    LLVM's load/store vectorizer makes one vector access
    (`ld.global.v4.b32`). Buffers must start 64-byte aligned (the
    runtime's allocations and the memory plan's views do; Trainer.h).

    A dispatch that reduces rows of at least `warp-reductions` terms that
    lie contiguously in memory (softmax's and the norms' rows, the
    cross-entropy's logits: the innermost reduction dimension is every
    read operand's unit-stride innermost one) runs a warp per row instead
    of a thread: lane `l` folds elements `l, l + 32, ...` of its row from
    the combiner's identity (f32 `addf`, `maximumf` or `minimumf`), the
    lanes' partials fold by `gpu.shuffle xor` 16, 8, 4, 2, 1, and lane 0
    folds the result into the output. A row's online sum of exponentials
    and the maximum it is taken against (`anvil-convert-to-linalg`'s
    `online-logsumexp`) fold as a pair: each lane's from (-FLT_MAX, 0)
    as the body does, and two partials (m1, s1), (m2, s2) as (m, s1
    exp(m1 - m) + s2 exp(m2 - m)) with m = max(m1, m2). Where the rows divide into runs of
    `vector-width` and an operand's rows are aligned to them, lane `l`
    folds runs of that many consecutive terms instead, each run's first
    load carrying the run's alignment. A sum's order is then a fixed tree,
    not the sequential order of the CPU.

    A dispatch whose code is not all loop nests (a
    rank-0 result, a loop with dynamic bounds) runs on one thread: correct,
    and visible as a 1 x 1 launch.

    The other functions (the host's) keep their code, but for their
    `memref.copy`s between device buffers (a loss out of the workspace into
    its result buffer): each becomes a launch of one thread per element, as
    the workspace is device memory the host cannot read. A copy out of a
    constant global, in the host's memory, stays on the host. Likewise a
    host `memref.store` of a scalar into (a view of) one of the function's
    buffer arguments (a mesh axis's index into the workspace) becomes a
    launch of one thread that takes the value as its argument; a store
    into the host's own memory (a stack slot, an allocation, a global)
    stays.

    Kernels cannot read the host's globals either: the constant globals a
    dispatch's calls pass are read inside its kernels (outlining copies
    them into the kernel's module). Where calls pass different globals for
    an argument, or a global and a buffer, each further combination calls
    a copy of the dispatch of its own (`<dispatch>_c1`, ...).

    `gpu-kernel-outlining` then moves each launch body into a `gpu.module`
    kernel and leaves a `gpu.launch_func` in the dispatch function.

    Input:
    ```mlir
    func.func private @step__dispatch_0(%a: memref<64x128xf32>,
                                        %b: memref<64x128xf32>) {
      linalg.generic {...} ins(%a) outs(%b) { exp }
    }
    ```
    Output (block size 256):
    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c32, ...)
               threads(%tx, %ty, %tz) in (%sx = %c256, ...) {
      %i = bx * 256 + tx;  if %i < 8192: i -> (%i / 128, %i mod 128)
      %x = memref.load %a[...]; memref.store (exp %x), %b[...]
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (a multiple of 32, at most 1024)">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"4",
           "Consecutive points of the innermost dimension an elementwise "
           "thread takes, with aligned first accesses (1, 2 or 4; 1: one)">,
    Option<"warpReductions", "warp-reductions", "int64_t", /*default=*/"256",
           "Reductions of rows of at least this many contiguous terms run "
           "a warp per row (0: never)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::gpu::GPUDialect",
    "mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect", "mlir::vector::VectorDialect"
  ];
}

def AnvilCUDAEmulateLaunchesPass
    : Pass<"anvil-cuda-emulate-launches", "mlir::ModuleOp"> {
  let summary = "Runs gpu.launch regions as loops on the host (testing)";
  let description = [{
    Replaces each `gpu.launch` with constant sizes by loops over its blocks
    and threads that run the launch body, so that the kernels
    `anvil-cuda-map-dispatches` makes (their index arithmetic, bounds
    guards and reduction loops) can be run and checked on a machine
    without a GPU: `anvil-compile --target=cpu --emulate-cuda-grid` builds
    a CPU executable whose dispatches go through the CUDA mapping. Runs
    before `gpu-kernel-outlining`; a launch with dynamic sizes is an error.

    A body with `gpu.barrier`s or `gpu.shuffle`s at its top level (the warp
    reductions) runs in phases cut at them: each phase runs for every
    thread of the block before the next begins. A value a later phase
    reads is made again there when it is pure (index arithmetic,
    constants) or else kept per thread in a scratch buffer
    (`memref.alloca` of the block's size); a shuffle (xor, by a constant
    offset below a constant width) reads its partner thread's kept value.
    Barriers and shuffles inside control flow are an error.

    With `check-accesses` (the default), every load and store of a launch
    body (`memref` and rank-1 `vector` ones) is preceded by checks of what
    a GPU faults on or silently gets wrong but the host does not: each
    index within the buffer's shape (for a vector, its whole run along the
    innermost dimension), and, for an access that claims an alignment
    beyond its element's (a vector of a run, or a run's first scalar load,
    in global memory), that its address has it. A failed check writes
    which access of which dispatch function failed, and of which buffer, to
    stderr (libc's `write`, a constant string) and aborts (`abort`).

    A GPU runs a launch's blocks, and a block's threads between two
    barriers, in no set order; the emulation runs them in one. A kernel
    whose result depends on that order (a thread reading what another
    writes with no barrier between, a block reading another's results, an
    in-place update read at another point) can pass every emulated test and
    fail on a GPU. With `reverse-order`, the blocks and each phase's
    threads run last first (the ids count down): such a kernel's results
    change, and a test comparing them with the forward order's catches it.

    Input:
    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c25, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      ... %bx, %tx ...
      gpu.terminator
    }
    ```
    Output:
    ```mlir
    scf.for %bz = %c0 to %c1 step %c1 { scf.for %by ... { scf.for %bx = %c0 to %c25 ... {
      scf.for %tz ... { scf.for %ty ... { scf.for %tx = %c0 to %c256 ... {
        ... %bx, %tx ...
    }}}}}}
    ```
  }];
  let options = [
    Option<"checkAccesses", "check-accesses", "bool", /*default=*/"true",
           "Check every access's bounds and claimed alignment as it runs">,
    Option<"reverseOrder", "reverse-order", "bool", /*default=*/"false",
           "Run the blocks, and each phase's threads, last first">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect"
  ];
}

def AnvilCUDAStepGraphPass
    : Pass<"anvil-cuda-step-graph", "mlir::ModuleOp"> {
  let summary = "Marks the exported functions a CUDA graph can replay";
  let description = [{
    Runs on the host side of the `kernels` stage (after
    `gpu-kernel-outlining`). A CUDA graph replays the kernels and library
    calls a function queued when it was captured, with the arguments they
    had then; it does not run the function's host code again. That is
    correct when the host code does nothing but queue device work whose
    arguments follow from the function's own arguments: no host reads or
    writes of buffers (their values could differ at a replay), no
    allocations or frees (their addresses would), no waits and no calls
    of the host's own (collectives over MPI).

    Each public function gets `anvil.graph_capturable` when its host code,
    and that of the functions it calls, consists only of:
    - operations free of memory effects (index arithmetic, views of
      buffers, `memref.extract_aligned_pointer_as_index`, constant
      globals' addresses), and control flow around them;
    - `gpu.launch_func`;
    - calls of the CUDA runtime's library functions, which queue work on
      the step stream and neither wait nor allocate outside the
      stream-ordered allocator: `anvil_rt_cuda_sgemm`,
      `anvil_rt_cuda_gemm_bf16`, `anvil_rt_cuda_gemm_bf16_rounded`,
      `anvil_rt_cuda_gemm_f8`, `anvil_rt_cuda_gemm_f8_gelu`,
      `anvil_rt_cuda_attention_f32`,
      `anvil_rt_cuda_attention_grad_f32`,
      `anvil_rt_cuda_attention_bf16`, `anvil_rt_cuda_attention_grad_bf16`,
      `anvil_rt_cuda_gemm_bias`, `anvil_rt_cuda_gemm_bias_gelu`,
      `anvil_rt_cuda_gemm_dgelu_bgrad`,
      `anvil_rt_cuda_gemm_weight_bias_grad`, `anvil_rt_cuda_conv`.

    Otherwise (a host read or write of a buffer, an allocation, the
    address of a global that is not constant, any other call) it gets
    `anvil.graph_blocker`, a string naming the first operation that
    prevents it and where it is. A function that calls itself, directly
    or not, is judged by the rest of its code. The driver runs the
    pass again just before the host code is lowered and copies the
    training step's verdict into the manifest (`"step_graph"`), and the
    runtime captures the step (`anvil_rt_run_step`) only when it is
    capturable.

    Output:
    ```mlir
    func.func @train_step(...) attributes {anvil.graph_capturable} {...}
    func.func @eval(...) attributes {anvil.graph_blocker =
        "memref.alloc at loc(\"m.mlir\":3:8) allocates memory"} {...}
    ```
  }];
}

def AnvilCUDASmallGridOccupancyPass
    : Pass<"anvil-cuda-small-grid-occupancy", "mlir::gpu::GPUModuleOp"> {
  let summary = "Kernels of small grids ask ptxas for one block an SM";
  let description = [{
    ptxas fits a kernel's registers to an occupancy it picks from the
    kernel's block size (`.maxntid`), and spills to stay within it: a
    256-thread kernel of three AdamW updates merged by
    `anvil-horizontal-fuse` (twelve f32 lanes of square roots and
    divisions) got 80 registers and 8 bytes of spills, where it needs 84.
    A launch of no more blocks than the GPU has SMs runs at most one block
    on an SM whatever the registers: that occupancy buys nothing. This pass,
    run on the kernels' modules before their lowering to NVVM, gives each
    kernel whose `known_grid_size` (set by `gpu-kernel-outlining` from the
    launch's constant grid) has at most `max-blocks` blocks
    `nvvm.minctasm = 1` (PTX's `.minnctapersm 1`): one block an SM is
    enough, so ptxas keeps what it needs in registers. The default,
    108, is the SM count of the smallest chip Anvil targets (sm_80's
    A100); an attribute already there is kept.
  }];
  let options = [
    Option<"maxBlocks", "max-blocks", "int64_t", /*default=*/"108",
           "The most blocks of a grid whose kernel asks for one block an SM">,
  ];
}

#endif // ANVIL_TARGET_CUDA_PASSES_TD
