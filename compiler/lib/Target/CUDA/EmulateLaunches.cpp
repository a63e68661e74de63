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
// With check-accesses, every memref load and store and rank-1 vector load
// and store of a launch body first checks what a GPU would fault on or
// silently get wrong and the host would not: its indices within the
// buffer's shape (a vector's whole run), and the alignment an access claims
// (a vector's, or a run's first scalar load) against its address. A failed
// check writes which access of which dispatch function failed to stderr
// and aborts.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"

#include <map>

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

/// A load or store of a launch body: its buffer and indices, the elements
/// it touches along the innermost dimension from there (a vector's length,
/// else 1), and the alignment in bytes its address claims (0: none beyond
/// the element's).
struct Access {
  StringRef what;
  Value memref;
  ValueRange indices;
  int64_t elements = 1;
  uint64_t alignment = 0;
};

std::optional<Access> accessOf(Operation *op) {
  // The elements a vector access touches: a run of a scalar-element
  // buffer's, or one of a buffer of vectors (the whole vector); 0 for a
  // form not checked (a vector of rank 2 or more over scalars).
  auto vectorLength = [](VectorType type, Value memref) -> int64_t {
    auto buffer = dyn_cast<MemRefType>(memref.getType());
    if (!buffer)
      return 0;
    if (isa<VectorType>(buffer.getElementType()))
      return 1;
    return type.getRank() == 1 ? type.getNumElements() : 0;
  };
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return Access{"load", load.getMemRef(), load.getIndices(), 1,
                  load.getAlignment().value_or(0)};
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return Access{"store", store.getMemRef(), store.getIndices(), 1,
                  store.getAlignment().value_or(0)};
  if (auto load = dyn_cast<vector::LoadOp>(op))
    if (int64_t n = vectorLength(load.getVectorType(), load.getBase()))
      return Access{"vector load", load.getBase(), load.getIndices(), n,
                    load.getAlignment().value_or(0)};
  if (auto store = dyn_cast<vector::StoreOp>(op))
    if (int64_t n = vectorLength(store.getVectorType(), store.getBase()))
      return Access{"vector store", store.getBase(), store.getIndices(), n,
                    store.getAlignment().value_or(0)};
  return std::nullopt;
}

/// How an access's message names its buffer: the function's argument, or
/// the op that makes it.
std::string bufferName(Value memref) {
  std::string name;
  llvm::raw_string_ostream os(name);
  if (auto arg = dyn_cast<BlockArgument>(memref);
      arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    os << "argument " << arg.getArgNumber();
  else if (Operation *def = memref.getDefiningOp())
    os << "a buffer of " << def->getName();
  else
    os << "a block argument";
  os << " (" << memref.getType() << ")";
  return name;
}

/// A failed check's report: its message written to stderr (write(2), so
/// that nothing buffered is lost), then abort(). One constant global per
/// distinct message, and the declarations of the two libc functions, in
/// the module.
class Faults {
public:
  explicit Faults(ModuleOp module) : module(module) {}

  /// Whether the module's own symbols named like the libc functions the
  /// reports call are declarations of them, as the reports would declare
  /// them (anything else: an error on it).
  LogicalResult checkDeclarations() {
    for (StringRef name : {"write", "abort"}) {
      Operation *symbol = module.lookupSymbol(name);
      if (!symbol)
        continue;
      auto fn = dyn_cast<func::FuncOp>(symbol);
      if (!fn || !fn.isExternal() || fn.getFunctionType() != libcType(name))
        return symbol->emitError("anvil-cuda-emulate-launches: the access "
                                 "checks call libc's '")
               << name << "' as " << libcType(name)
               << "; this symbol takes its name (check-accesses=0 runs "
                  "without them)";
    }
    return success();
  }

  /// Where `ok` is false: the report of `message`.
  void reportUnless(OpBuilder &b, Location loc, Value ok,
                    const std::string &message) {
    Value failed = arith::XOrIOp::create(
        b, loc, ok, arith::ConstantIntOp::create(b, loc, 1, 1));
    auto branch = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    std::string line = "error: " + message + "\n";
    LLVM::GlobalOp text = global(line);
    Value address = LLVM::AddressOfOp::create(b, loc, text);
    Value stderrFd = arith::ConstantIntOp::create(b, loc, 2, 32);
    Value length = arith::ConstantIntOp::create(
        b, loc, static_cast<int64_t>(line.size()), 64);
    func::CallOp::create(b, loc, declare("write"),
                         ValueRange{stderrFd, address, length});
    func::CallOp::create(b, loc, declare("abort"), ValueRange{});
  }

private:
  /// The constant holding `text`, made once: at the module's start, in the
  /// order of the checks.
  LLVM::GlobalOp global(const std::string &text) {
    auto [it, inserted] = globals.try_emplace(text);
    if (!inserted)
      return it->second;
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    if (last)
      b.setInsertionPointAfter(last);
    auto type = LLVM::LLVMArrayType::get(
        IntegerType::get(module.getContext(), 8), text.size());
    std::string name = "__anvil_grid_check_" + std::to_string(globals.size());
    while (module.lookupSymbol(name))
      name += "_";
    it->second = LLVM::GlobalOp::create(
        b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
        name, b.getStringAttr(text));
    last = it->second;
    return last;
  }

  /// libc's `name` (write or abort) as a func.func, declared once (a
  /// declaration already there passed checkDeclarations).
  func::FuncOp declare(StringRef name) {
    func::FuncOp &fn = name == "write" ? write : abort;
    if (fn)
      return fn;
    if ((fn = module.lookupSymbol<func::FuncOp>(name)))
      return fn;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    fn = func::FuncOp::create(b, module.getLoc(), name, libcType(name));
    fn.setPrivate();
    return fn;
  }

  /// write(int, const void *, size_t) -> ssize_t and abort(), as the host
  /// (64-bit Linux) calls them.
  FunctionType libcType(StringRef name) {
    MLIRContext *ctx = module.getContext();
    if (name == "write")
      return FunctionType::get(ctx,
                               {IntegerType::get(ctx, 32),
                                LLVM::LLVMPointerType::get(ctx),
                                IntegerType::get(ctx, 64)},
                               {IntegerType::get(ctx, 64)});
    return FunctionType::get(ctx, {}, {});
  }

  ModuleOp module;
  std::map<std::string, LLVM::GlobalOp> globals;
  LLVM::GlobalOp last;
  func::FuncOp write, abort;
};

/// Before `op`, a load or store in a launch body of `fn`: checks that its
/// indices, and the rest of a vector's run, lie within the buffer, and that
/// a claimed alignment holds for the address (global memory only: shared
/// memory is the compiler's to place); a failure is reported (`faults`).
void checkAccess(Operation *op, const Access &access, StringRef fn,
                 Faults &faults) {
  auto type = dyn_cast<MemRefType>(access.memref.getType());
  if (!type || access.indices.empty()) // a 0-d buffer: always in bounds
    return;
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  std::string where = (" in @" + fn + " (anvil emulated grid): a " +
                       access.what + " of " + bufferName(access.memref))
                          .str();
  Value inBounds;
  for (auto [d, i] : llvm::enumerate(access.indices)) {
    Value last = i;
    if (d + 1 == access.indices.size() && access.elements > 1)
      last = arith::AddIOp::create(b, loc, i, index(access.elements - 1));
    Value size = memref::DimOp::create(b, loc, access.memref, d);
    // Unsigned: a negative index is out of bounds too.
    Value ok =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, last, size);
    if (last != i)
      ok = arith::AndIOp::create(
          b, loc, ok,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, i, last));
    inBounds = inBounds ? arith::AndIOp::create(b, loc, inBounds, ok) : ok;
  }
  faults.reportUnless(b, loc, inBounds, "out of bounds" + where);

  // Only claims beyond a scalar element's own size (of integers and floats;
  // an index's size is the target's) in global memory.
  if (!type.getElementType().isIntOrFloat() || type.getMemorySpace())
    return;
  unsigned elementBytes = type.getElementTypeBitWidth() / 8;
  if (access.alignment <= elementBytes || elementBytes == 0)
    return;
  // The address: the buffer's aligned pointer plus its offset and the
  // indices' strides, in elements.
  auto metadata =
      memref::ExtractStridedMetadataOp::create(b, loc, access.memref);
  Value element = metadata.getOffset();
  for (auto [i, stride] : llvm::zip(access.indices, metadata.getStrides()))
    element = arith::AddIOp::create(b, loc, element,
                                    arith::MulIOp::create(b, loc, i, stride));
  Value address = arith::AddIOp::create(
      b, loc,
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, access.memref),
      arith::MulIOp::create(b, loc, element, index(elementBytes)));
  Value aligned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, address,
                             index(static_cast<int64_t>(access.alignment))),
      index(0));
  faults.reportUnless(b, loc, aligned,
                      "misaligned address" + where + ", which claims " +
                          std::to_string(access.alignment) +
                          "-byte alignment (a GPU faults)");
}

/// The alignment of the host buffers that stand for shared memory.
constexpr int64_t kSharedAlignment = 16;

/// One phase of a launch body: the shuffles that open it (computed from
/// the previous phases' values) and its other ops.
struct Phase {
  SmallVector<gpu::ShuffleOp> shuffles;
  SmallVector<Operation *> ops;
};

struct AnvilCUDAEmulateLaunchesPass
    : mlir::anvil::impl::AnvilCUDAEmulateLaunchesPassBase<
          AnvilCUDAEmulateLaunchesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    Faults faults(getOperation());
    if (checkAccesses && failed(faults.checkDeclarations()))
      return signalPassFailure();
    for (gpu::LaunchOp launch : launches)
      if (failed(emulate(launch, faults)))
        return signalPassFailure();
  }

  LogicalResult emulate(gpu::LaunchOp launch, Faults &faults) {
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
    if (checkAccesses) {
      StringRef fn;
      if (auto parent = launch->getParentOfType<func::FuncOp>())
        fn = parent.getSymName();
      SmallVector<std::pair<Operation *, Access>> accesses;
      body.walk([&](Operation *op) {
        if (std::optional<Access> access = accessOf(op))
          accesses.emplace_back(op, *access);
      });
      for (auto &[op, access] : accesses)
        checkAccess(op, access, fn, faults);
    }
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
      blockMap.map(shared,
                   memref::AllocaOp::create(
                       b, loc,
                       MemRefType::get(type.getShape(), type.getElementType()),
                       // As a GPU aligns shared memory (16 bytes at least), so
                       // that the kernel's vector accesses there stay aligned.
                       b.getI64IntegerAttr(kSharedAlignment)));
    }
    // A loop's id: its induction variable, or with reverse-order the
    // extent - 1 - it (the last block, or thread, first).
    auto idOf = [&](scf::ForOp loop, int64_t extent) -> Value {
      if (!reverseOrder)
        return loop.getInductionVar();
      return arith::SubIOp::create(b, loc, index(extent - 1),
                                   loop.getInductionVar());
    };
    {
      Value id[3] = {ids[0].z, ids[0].y, ids[0].x};
      Value size[3] = {sizes[0].z, sizes[0].y, sizes[0].x};
      for (int d = 0; d < 3; ++d) {
        auto loop = scf::ForOp::create(b, loc, zero, index(extent[0][d]), one);
        b.setInsertionPointToStart(loop.getBody());
        blockMap.map(id[d], idOf(loop, extent[0][d]));
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
        b.setInsertionPoint(loop.getBody()->getTerminator());
        Value thread = idOf(loop, extent[1][d]);
        map.map(id[d], thread);
        linear = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, linear, index(extent[1][d])),
            thread);
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
