//===- EmulateLaunches.cpp - gpu.launch regions as host loops -------------===//
//
// Testing without a GPU: every gpu.launch becomes loops over its blocks
// (z, y, x) around loops over its threads (z, y, x) that run its body on
// the host with the block and thread ids of each iteration. Threads of a
// block run one after the other, which is a legal schedule for a body
// without barriers or shuffles.
//
// A body with `gpu.barrier`s and `gpu.shuffle`s at its top level (the warp
// reductions and tiled transposes of anvil-cuda-map-dispatches) runs in
// phases: the body is cut
// at each of them, and each piece runs for every thread of the block before
// the next begins, as a barrier demands. A value a later phase uses is
// either made again there (constants and other pure ops, from what is
// available) or kept per thread in a scratch buffer; a shuffle's result is
// its partner thread's value from such a buffer. Shared memory (static
// workgroup buffers) is a host buffer the blocks reuse in turn.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCUDAEMULATELAUNCHESPASS
#include "anvil/Target/CUDA/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// Whether `op` ends a phase of a launch body: all threads of the block
/// must have run what comes before it.
bool isPhaseBoundary(Operation *op) {
  return isa<gpu::BarrierOp, gpu::ShuffleOp>(op);
}

/// One phase of a launch body: the shuffles that open it (computed from
/// the previous phases' values) and its other ops.
struct Phase {
  SmallVector<gpu::ShuffleOp> shuffles;
  SmallVector<Operation *> ops;
};

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
        launch.getDynamicSharedMemorySize() ||
        !launch.getPrivateAttributions().empty() ||
        llvm::any_of(launch.getWorkgroupAttributions(), [](BlockArgument a) {
          auto type = dyn_cast<MemRefType>(a.getType());
          return !type || !type.hasStaticShape();
        }))
      return launch.emitError("anvil-cuda-emulate-launches: only a "
                              "synchronous launch of one block without "
                              "private memory or dynamically sized shared "
                              "memory can be emulated");
    Block &body = launch.getBody().front();
    gpu::KernelDim3 ids[] = {launch.getBlockIds(), launch.getThreadIds()};
    gpu::KernelDim3 sizes[] = {launch.getGridSize(), launch.getBlockSize()};
    gpu::KernelDim3 operands[] = {launch.getGridSizeOperandValues(),
                                  launch.getBlockSizeOperandValues()};
    int64_t extent[2][3];
    for (int level = 0; level < 2; ++level) {
      Value bound[3] = {operands[level].z, operands[level].y,
                        operands[level].x};
      for (int d = 0; d < 3; ++d) {
        std::optional<int64_t> c = getConstantIntValue(bound[d]);
        if (!c)
          return launch.emitError("anvil-cuda-emulate-launches: the launch "
                                  "has a dynamic size");
        extent[level][d] = *c;
      }
    }
    int64_t blockThreads = extent[1][0] * extent[1][1] * extent[1][2];

    // The phases, and where each top-level op runs.
    SmallVector<Phase> phases(1);
    DenseMap<Operation *, unsigned> phaseOf;
    for (Operation &op : body.without_terminator()) {
      if (isPhaseBoundary(&op)) {
        if (!phases.back().ops.empty() || phases.size() == 1)
          phases.emplace_back();
        if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
          if (failed(checkShuffle(shuffle, blockThreads)))
            return failure();
          if (Operation *def = shuffle.getValue().getDefiningOp();
              def && phaseOf.lookup(def) == phases.size() - 1 &&
              phaseOf.count(def))
            return shuffle.emitError("anvil-cuda-emulate-launches: a "
                                     "shuffle of a value of its own phase "
                                     "(another shuffle's result) cannot be "
                                     "emulated");
          phases.back().shuffles.push_back(shuffle);
        }
        phaseOf[&op] = phases.size() - 1;
        continue;
      }
      WalkResult nested = op.walk([&](Operation *inner) {
        return isPhaseBoundary(inner) ? WalkResult::interrupt()
                                      : WalkResult::advance();
      });
      if (nested.wasInterrupted())
        return op.emitError("anvil-cuda-emulate-launches: a barrier or "
                            "shuffle inside control flow cannot be emulated "
                            "(only at the top level of the launch body)");
      phases.back().ops.push_back(&op);
      phaseOf[&op] = phases.size() - 1;
    }

    OpBuilder b(launch);
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v).getResult();
    };

    // Values a later phase reads that it cannot make again, and the
    // shuffles' operands: a scratch slot per thread of a block.
    llvm::MapVector<Value, Value> scratch; // in order: the IR is deterministic
    auto needsScratch = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && def->getBlock() == &body && !isRematerializable(v, body);
    };
    auto addScratch = [&](Value v) -> LogicalResult {
      if (scratch.count(v))
        return success();
      if (!MemRefType::isValidElementType(v.getType()) ||
          isa<MemRefType>(v.getType()))
        return launch.emitError("anvil-cuda-emulate-launches: a value of "
                                "type ")
               << v.getType() << " lives across a barrier or shuffle";
      scratch[v] = memref::AllocaOp::create(
          b, loc, MemRefType::get({blockThreads}, v.getType()));
      return success();
    };
    for (auto [p, phase] : llvm::enumerate(phases)) {
      for (gpu::ShuffleOp shuffle : phase.shuffles)
        if (failed(addScratch(shuffle.getValue())))
          return failure();
      for (Operation *op : phase.ops) {
        WalkResult walk = op->walk([&](Operation *user) {
          for (Value v : user->getOperands()) {
            Operation *def = v.getDefiningOp();
            if (!def || def->getBlock() != &body || !needsScratch(v))
              continue;
            auto it = phaseOf.find(def);
            if (it != phaseOf.end() && it->second != p && failed(addScratch(v)))
              return WalkResult::interrupt();
          }
          return WalkResult::advance();
        });
        if (walk.wasInterrupted())
          return failure();
      }
    }

    // Blocks, then per phase the block's threads. Each shared buffer is one
    // host buffer that the blocks, run one after another, reuse (a kernel
    // writes its shared memory before it reads it).
    IRMapping blockMap;
    for (BlockArgument shared : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(shared.getType());
      blockMap.map(
          shared,
          memref::AllocaOp::create(
              b, loc, MemRefType::get(type.getShape(), type.getElementType())));
    }
    {
      Value id[3] = {ids[0].z, ids[0].y, ids[0].x};
      Value size[3] = {sizes[0].z, sizes[0].y, sizes[0].x};
      for (int d = 0; d < 3; ++d) {
        auto loop = scf::ForOp::create(b, loc, zero, index(extent[0][d]), one);
        blockMap.map(id[d], loop.getInductionVar());
        blockMap.map(size[d], index(extent[0][d]));
        b.setInsertionPoint(loop.getBody()->getTerminator());
      }
      blockMap.map(sizes[1].z, index(extent[1][0]));
      blockMap.map(sizes[1].y, index(extent[1][1]));
      blockMap.map(sizes[1].x, index(extent[1][2]));
    }
    for (auto [p, phase] : llvm::enumerate(phases)) {
      OpBuilder::InsertionGuard guard(b);
      IRMapping map = blockMap;
      Value id[3] = {ids[1].z, ids[1].y, ids[1].x};
      Value linear = zero;
      for (int d = 0; d < 3; ++d) {
        auto loop = scf::ForOp::create(b, loc, zero, index(extent[1][d]), one);
        map.map(id[d], loop.getInductionVar());
        b.setInsertionPoint(loop.getBody()->getTerminator());
        linear = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, linear, index(extent[1][d])),
            loop.getInductionVar());
      }
      // An earlier phase's value: made again, or read back.
      std::function<Value(Value)> available = [&](Value v) -> Value {
        if (Value mapped = map.lookupOrNull(v))
          return mapped;
        Operation *def = v.getDefiningOp();
        if (!def || def->getBlock() != &body)
          return v; // from above the launch
        if (auto slot = scratch.find(v); slot != scratch.end()) {
          Value loaded = memref::LoadOp::create(b, loc, slot->second, linear);
          map.map(v, loaded);
          return loaded;
        }
        for (Value operand : def->getOperands())
          available(operand);
        b.clone(*def, map);
        return map.lookup(v);
      };
      // The shuffles that open the phase: the partner's value (xor: the
      // lane's number with the offset's bits flipped, in the same warp).
      for (gpu::ShuffleOp shuffle : phase.shuffles) {
        int64_t offset = *getConstantIntValue(shuffle.getOffset());
        Value partner = arith::XOrIOp::create(b, loc, linear, index(offset));
        Value value = memref::LoadOp::create(
            b, loc, scratch.lookup(shuffle.getValue()), partner);
        map.map(shuffle.getShuffleResult(), value);
        map.map(shuffle.getValid(),
                arith::ConstantIntOp::create(b, loc, 1, 1).getResult());
      }
      for (Operation *op : phase.ops) {
        op->walk([&](Operation *user) {
          for (Value v : user->getOperands())
            if (Operation *def = v.getDefiningOp();
                def && def->getBlock() == &body && phaseOf.lookup(def) != p)
              available(v);
        });
        b.clone(*op, map);
      }
      // What later phases read back, stored by the phase that makes it
      // (the first, for a value from outside the body).
      for (auto [v, slot] : scratch) {
        Operation *def = v.getDefiningOp();
        bool inBody = def && def->getBlock() == &body;
        if ((inBody ? phaseOf.lookup(def) : 0) == p)
          memref::StoreOp::create(b, loc, available(v), slot, linear);
      }
    }
    launch.erase();
    return success();
  }

  /// The shuffles the emulation knows: xor by a constant offset below a
  /// constant width of a power of two up to 32, in blocks of whole warps.
  LogicalResult checkShuffle(gpu::ShuffleOp shuffle, int64_t blockThreads) {
    std::optional<int64_t> offset = getConstantIntValue(shuffle.getOffset());
    std::optional<int64_t> width = getConstantIntValue(shuffle.getWidth());
    if (shuffle.getMode() != gpu::ShuffleMode::XOR || !offset || !width ||
        *width > 32 || !llvm::isPowerOf2_64(*width) || *offset < 0 ||
        *offset >= *width || blockThreads % 32 != 0)
      return shuffle.emitError("anvil-cuda-emulate-launches: only a xor "
                               "shuffle by a constant offset below a "
                               "constant width (a power of two up to 32) "
                               "in blocks of whole warps can be emulated");
    return success();
  }

  /// Whether `v` (defined in `body`) can be computed again in a later
  /// phase: a pure op without regions whose operands can be too.
  static bool isRematerializable(Value v, Block &body) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &body)
      return true;
    if (isa<gpu::ShuffleOp>(def) || def->getNumRegions() != 0 || !isPure(def))
      return false;
    return llvm::all_of(def->getOperands(), [&](Value operand) {
      return isRematerializable(operand, body);
    });
  }
};

} // namespace
