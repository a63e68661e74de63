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
    the end does nothing. A dispatch whose code is not all loop nests (a
    rank-0 result, a loop with dynamic bounds) runs on one thread: correct,
    and visible as a 1 x 1 launch.

    The other functions (the host's) keep their code, but for their
    `memref.copy`s between device buffers (a loss out of the workspace into
    its result buffer): each becomes a launch of one thread per element, as
    the workspace is device memory the host cannot read. A copy out of a
    constant global, in the host's memory, stays on the host.

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
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::gpu::GPUDialect",
    "mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect"
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
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

#endif // ANVIL_TARGET_CUDA_PASSES_TD
