//===- EmulateLaunches.cpp - gpu.launch regions as host loops -------------===//
//
// Testing without a GPU: every gpu.launch becomes six loops (blocks z, y, x,
// then threads z, y, x) around its body, which then runs on the host with
// the block and thread ids of each iteration. Threads of a block run one
// after the other, which is a legal schedule for the kernels
// anvil-cuda-map-dispatches makes (no barriers, no shared memory).
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCUDAEMULATELAUNCHESPASS
#include "anvil/Target/CUDA/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

struct AnvilCUDAEmulateLaunchesPass
    : mlir::anvil::impl::AnvilCUDAEmulateLaunchesPassBase<
          AnvilCUDAEmulateLaunchesPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      if (failed(emulate(launch)))
        return signalPassFailure();
  }

  LogicalResult emulate(gpu::LaunchOp launch) {
    if (launch.getAsyncToken() || !launch.getBody().hasOneBlock() ||
        launch.getDynamicSharedMemorySize())
      return launch.emitError("anvil-cuda-emulate-launches: only a "
                              "synchronous launch of one block without "
                              "dynamic shared memory can be emulated");
    gpu::KernelDim3 ids[] = {launch.getBlockIds(), launch.getThreadIds()};
    gpu::KernelDim3 sizes[] = {launch.getGridSize(), launch.getBlockSize()};
    gpu::KernelDim3 operands[] = {launch.getGridSizeOperandValues(),
                                  launch.getBlockSizeOperandValues()};
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    IRMapping map;
    for (int level = 0; level < 2; ++level) {
      Value id[3] = {ids[level].z, ids[level].y, ids[level].x};
      Value size[3] = {sizes[level].z, sizes[level].y, sizes[level].x};
      Value bound[3] = {operands[level].z, operands[level].y,
                        operands[level].x};
      for (int d = 0; d < 3; ++d) {
        if (!getConstantIntValue(bound[d]))
          return launch.emitError("anvil-cuda-emulate-launches: the launch "
                                  "has a dynamic size");
        auto loop = scf::ForOp::create(b, loc, zero, bound[d], one);
        map.map(id[d], loop.getInductionVar());
        map.map(size[d], bound[d]);
        b.setInsertionPoint(loop.getBody()->getTerminator());
      }
    }
    for (Operation &op : launch.getBody().front().without_terminator())
      b.clone(op, map);
    launch.erase();
    return success();
  }
};

} // namespace
