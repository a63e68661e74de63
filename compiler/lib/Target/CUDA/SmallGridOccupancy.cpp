//===- SmallGridOccupancy.cpp - small grids ask for one block an SM -------===//
//
// anvil-cuda-small-grid-occupancy (Passes.td): a kernel whose grid has no
// more blocks than the smallest target GPU has SMs gets nvvm.minctasm = 1,
// so that ptxas does not keep its registers down (and spill) for an
// occupancy its launch cannot use.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCUDASMALLGRIDOCCUPANCYPASS
#include "anvil/Target/CUDA/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

struct AnvilCUDASmallGridOccupancyPass
    : mlir::anvil::impl::AnvilCUDASmallGridOccupancyPassBase<
          AnvilCUDASmallGridOccupancyPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](gpu::GPUFuncOp fn) {
      DenseI32ArrayAttr grid = fn.getKnownGridSizeAttr();
      if (!fn.isKernel() || !grid || fn->hasAttr(minCtas()))
        return;
      int64_t blocks = 1;
      for (int32_t extent : grid.asArrayRef())
        blocks *= extent;
      if (blocks <= maxBlocks)
        fn->setAttr(minCtas(),
                    IntegerAttr::get(IntegerType::get(&getContext(), 32), 1));
    });
  }

  StringAttr minCtas() {
    return StringAttr::get(&getContext(),
                           NVVM::NVVMDialect::getMinctasmAttrName());
  }
};

} // namespace
