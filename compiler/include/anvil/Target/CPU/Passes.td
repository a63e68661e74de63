//===- Passes.td - passes of the CPU backend ---------------*- tablegen -*-===//
//
// Passes specific to the CPU target. Flags are `anvil-cpu-` prefixed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TARGET_CPU_PASSES_TD
#define ANVIL_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnvilCPUGemmToBlasPass : Pass<"anvil-cpu-gemm-to-blas", "mlir::ModuleOp"> {
  let summary = "Calls the runtime's BLAS for f32 matmuls on buffers";
  let description = [{
    Replaces each bufferized f32 `linalg.matmul` and `linalg.batch_matmul`
    whose operands have unit inner strides by one call of the runtime's
    `anvil_rt_sgemm` (RuntimeABI.h, OpenBLAS underneath): transposes and a
    weight shared across the batch are read off the indexing maps, leading
    dimensions and batch strides off the buffers' layouts. The call keeps
    linalg's semantics, C += A B (its last argument, `accumulate`, 1),
    unless the last op before it with an effect on memory is a zero fill of
    C: then it overwrites C (`accumulate` 0: BLAS's beta = 0, C not read)
    and the fill goes, a pass over C saved. Other matmuls (other types,
    strided inner dimensions) are left to the loop lowering.

    A contraction of two bf16 buffers into f32, as a bf16 `anvil.matmul`
    lowers (its product is rounded to bf16 afterwards), calls
    `anvil_rt_gemm_bf16` with the sgemm's arguments. When that product
    overwrites a buffer of its own (a zero fill before it) whose readers
    only round it to bf16 (each reads it, or an expand_shape,
    collapse_shape or subview of it, as an input that its body only
    truncates to bf16: what a bf16 `anvil.matmul`'s result is), C becomes
    a bf16 buffer that
    `anvil_rt_gemm_bf16_rounded` writes rounded (to nearest even), and the
    readers read it without their truncations: the same values, half the
    bytes written and read.

    Input:
    ```mlir
    linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>)
                  outs(%c : memref<8x16xf32>)
    ```
    Output:
    ```mlir
    call @anvil_rt_sgemm(%false, %false, %m, %n, %k, %pa, %lda, %sa, %pb,
                         %ldb, %sb, %pc, %ldc, %sc, %batch, %true)
        : (...) -> ()
    ```
  }];
  let options = [
    Option<"callee", "callee", "std::string", /*default=*/"\"anvil_rt_sgemm\"",
           "The runtime function called (same arguments): anvil_rt_sgemm "
           "(OpenBLAS) on the CPU, anvil_rt_cuda_sgemm (cuBLAS) for "
           "--target=cuda">,
    Option<"calleeBF16", "callee-bf16", "std::string",
           /*default=*/"\"anvil_rt_gemm_bf16\"",
           "The runtime function bf16 GEMMs call: anvil_rt_gemm_bf16 "
           "(widened to f32, OpenBLAS) on the CPU, anvil_rt_cuda_gemm_bf16 "
           "(cuBLAS, tensor cores) for --target=cuda">,
    Option<"calleeBF16Rounded", "callee-bf16-rounded", "std::string",
           /*default=*/"\"anvil_rt_gemm_bf16_rounded\"",
           "The runtime function a bf16 GEMM whose readers only round its "
           "result to bf16 calls, writing a bf16 C: "
           "anvil_rt_gemm_bf16_rounded on the CPU, "
           "anvil_rt_cuda_gemm_bf16_rounded for --target=cuda; empty: the "
           "result stays f32">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect"
  ];
}

def AnvilCPUPadGemmRowsPass : Pass<"anvil-cpu-pad-gemm-rows", "mlir::ModuleOp"> {
  let summary = "Pads the rows of the buffers GEMMs touch to aligned strides";
  let description = [{
    A GEMM library takes each matrix with a leading dimension (its row
    stride); on tensor cores the fast kernels want rows that start 16
    bytes aligned or better (cuBLAS chooses its kernels by the alignment
    of pointers and leading dimensions, and Hopper's TMA needs 16-byte
    strides). GPT-2's logits have 50257 columns: the head's three GEMMs
    read or write them with an odd leading dimension. Runs before
    `anvil-cpu-gemm-to-blas`, which reads the leading dimensions off the
    layouts.

    Each `memref.alloc` of a static, identity-layout buffer of rank 2 or
    more whose innermost extent is at least `min-row` and not a multiple of
    8 (16 bytes of bf16; an f32 product may become bf16 in
    `anvil-cpu-gemm-to-blas`), and which a contraction (a future GEMM call)
    reads or writes, directly or through views, with that dimension a group
    of its own (its m, n, k or batch loops: a GEMM takes a group of several
    loops as one dimension of contiguous elements, which padded rows would
    break), is allocated with that extent rounded up to a multiple of
    `row-multiple`. Its uses see a
    subview of the first columns: the same shape, the padded row stride.
    The views on it (expand_shape and collapse_shape that keep the
    innermost dimension whole, static subviews) get their strided result
    types. A buffer with any other use (an address taken for a library
    call, a call, a return, a view that splits or merges its rows) is left
    alone. The padding is never read or written: the values are the same.
    (A padded product is never contiguous, so `anvil-cpu-gemm-to-blas` does
    not write it straight into a copy's destination.)

    Input:
    ```mlir
    %c = memref.alloc() : memref<8192x50257xf32>
    linalg.matmul ins(%x, %w : ...) outs(%c : memref<8192x50257xf32>)
    ```
    Output:
    ```mlir
    %0 = memref.alloc() : memref<8192x50304xf32>
    %c = memref.subview %0[0, 0] [8192, 50257] [1, 1]
        : memref<8192x50304xf32> to memref<8192x50257xf32, strided<[50304, 1]>>
    linalg.matmul ins(%x, %w : ...) outs(%c : memref<8192x50257xf32, strided<[50304, 1]>>)
    ```
  }];
  let options = [
    Option<"minRow", "min-row", "int64_t", /*default=*/"1024",
           "Innermost extents below this are left unpadded (the padding "
           "then adds at most row-multiple / min-row of the buffer)">,
    Option<"rowMultiple", "row-multiple", "int64_t", /*default=*/"64",
           "Rows are padded to a multiple of this many elements (a positive "
           "multiple of 8; 64: 128 bytes of bf16, a cache line)">,
  ];
  let statistics = [
    Statistic<"numPadded", "num-padded", "Buffers allocated with padded rows">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def AnvilCPUParallelDispatchesPass
    : Pass<"anvil-cpu-parallel-dispatches", "mlir::ModuleOp"> {
  let summary = "Prepares large dispatch regions to run on the runtime's threads";
  let description = [{
    For every outlined dispatch function (`<fn>__dispatch_<n>`, see
    anvil-outline-dispatches) whose body is one linalg op with a parallel
    outermost loop of extent `R` and at least `min-iterations` iterations
    in all, adds a chunk function `<fn>__dispatch_<n>__chunk_of_<R>` taking
    the same buffers and `(lo, hi)`: the op lowered to loops with the
    outermost one running over `[lo, hi)` only. The object emitter then
    makes the dispatch function hand its buffers and the chunk function to
    `anvil_rt_parallel_for(R, ...)`, which runs one contiguous chunk per
    thread, so results do not depend on timing. Small kernels stay
    sequential: starting threads would cost more than they save.

    Input:
    ```mlir
    func.func private @f__dispatch_3(%a: memref<64x128xf32>, %b: memref<64x128xf32>) {
      linalg.generic ... ins(%a) outs(%b) ...
      return
    }
    ```
    Output (added):
    ```mlir
    func.func private @f__dispatch_3__chunk_of_64(%a: memref<64x128xf32>,
        %b: memref<64x128xf32>, %lo: index, %hi: index) {
      scf.for %i = %lo to %hi step %c1 { scf.for %j = ... }
      return
    }
    ```
  }];
  let options = [
    Option<"minIterations", "min-iterations", "int64_t", /*default=*/"16384",
           "Parallelize dispatches with at least this many loop iterations">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect"];
}

#endif // ANVIL_TARGET_CPU_PASSES_TD
