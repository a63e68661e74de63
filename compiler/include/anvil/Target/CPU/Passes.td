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
    linalg's semantics, C += A B, so the zero fill before it stays. Other
    matmuls (other types, strided inner dimensions) are left to the loop
    lowering.

    Input:
    ```mlir
    linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>)
                  outs(%c : memref<8x16xf32>)
    ```
    Output:
    ```mlir
    call @anvil_rt_sgemm(%false, %false, %m, %n, %k, %pa, %lda, %sa, %pb,
                         %ldb, %sb, %pc, %ldc, %sc, %batch) : (...) -> ()
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect"
  ];
}

#endif // ANVIL_TARGET_CPU_PASSES_TD
