//===- Bufferize.cpp - one-shot bufferization with Anvil's settings -------===//
//
// 1. State updated in place: results tied to an argument are written
//    into it (materialize_in_destination, the argument marked writable)
//    and leave the signature; one-shot analysis keeps the write in place
//    where that is safe and copies where it is not.
// 2. Drop the `anvil.*` argument and result attributes: they describe
//    tensors (parameters, state, ties) and the dialect verifies them as
//    such; the manifest has recorded them before lowering.
// 3. Configure upstream one-shot module bufferization: function
//    boundaries bufferized with identity layouts, unknown ops rejected,
//    copies built as `linalg.copy`.
// 4. Eliminate the empty tensors the in-place writes can replace, then
//    run one-shot bufferization over the module.
// 5. `anvil.all_reduce` bufferizes in place: a call of the runtime's
//    anvil_rt_all_reduce_f32(address, elements, op) on its operand's
//    buffer (copied first when the operand is still needed, through a
//    contiguous temporary when the buffer is strided).
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILBUFFERIZEPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

constexpr StringLiteral kAllReduce = "anvil_rt_all_reduce_f32";

/// anvil.all_reduce on buffers: reads and writes its operand in place.
struct AllReduceBufferization
    : bufferization::BufferizableOpInterface::ExternalModel<
          AllReduceBufferization, anvil::AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const bufferization::AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const bufferization::AnalysisState &) const {
    return true;
  }
  bufferization::AliasingValueList
  getAliasingValues(Operation *op, OpOperand &,
                    const bufferization::AnalysisState &) const {
    return {{op->getResult(0), bufferization::BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto reduce = cast<anvil::AllReduceOp>(op);
    if (!reduce.getType().getElementType().isF32())
      return op->emitError("anvil-bufferize: all-reduces of ")
             << reduce.getType().getElementType()
             << " are not supported on the CPU yet (f32 only)";
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, reduce.getOperand(), options, state);
    if (failed(buffer))
      return failure();
    Location loc = op->getLoc();
    auto type = cast<MemRefType>(buffer->getType());
    Value target = *buffer;
    bool strided = !memref::isStaticShapeAndContiguousRowMajor(type);
    if (strided) {
      target = memref::AllocOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()));
      linalg::CopyOp::create(rewriter, loc, *buffer, target);
    }
    auto i64 = rewriter.getI64Type();
    Value base =
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, target);
    auto meta = memref::ExtractStridedMetadataOp::create(rewriter, loc, target);
    Value bytes =
        arith::MulIOp::create(rewriter, loc, meta.getOffset(),
                              arith::ConstantIndexOp::create(rewriter, loc, 4));
    Value address = arith::IndexCastOp::create(
        rewriter, loc, i64, arith::AddIOp::create(rewriter, loc, base, bytes));
    Value count =
        arith::ConstantIntOp::create(rewriter, loc, i64, type.getNumElements());
    Value code =
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI32Type(),
                                     static_cast<int64_t>(reduce.getOp()));
    func::CallOp::create(rewriter, loc, kAllReduce, TypeRange{},
                         ValueRange{address, count, code});
    if (strided)
      linalg::CopyOp::create(rewriter, loc, target, *buffer);
    bufferization::replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// Declares anvil_rt_all_reduce_f32(i64 address, i64 elements, i32 op)
/// when the module has an all-reduce.
void declareRuntimeCollectives(ModuleOp module) {
  bool used = false;
  module.walk([&](anvil::AllReduceOp) { used = true; });
  if (!used || module.lookupSymbol(kAllReduce))
    return;
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  auto type =
      b.getFunctionType({b.getI64Type(), b.getI64Type(), b.getI32Type()}, {});
  auto fn = func::FuncOp::create(b, module.getLoc(), kAllReduce, type);
  fn.setPrivate();
}

/// State updated in place: each result tied to an argument
/// (`anvil.tied_to`) is written into that argument through
/// `bufferization.materialize_in_destination` and leaves the signature;
/// the argument becomes writable. Returns false on a malformed tie.
bool tieStateInPlace(func::FuncOp fn) {
  if (fn.isExternal())
    return true;
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  llvm::BitVector drop(fn.getNumResults());
  OpBuilder b(ret);
  for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r) {
    auto tied = fn.getResultAttrOfType<IntegerAttr>(r, "anvil.tied_to");
    if (!tied)
      continue;
    int64_t a = tied.getInt();
    if (a < 0 || a >= fn.getNumArguments())
      return false;
    BlockArgument arg = fn.getArgument(a);
    Value next = ret.getOperand(r);
    if (next != arg)
      bufferization::MaterializeInDestinationOp::create(
          b, ret.getLoc(), arg.getType(), next, arg, /*restrict=*/false,
          /*writable=*/false);
    fn.setArgAttr(a, bufferization::BufferizationDialect::kWritableAttrName,
                  b.getBoolAttr(true));
    drop.set(r);
  }
  if (drop.none())
    return true;
  SmallVector<Value> kept;
  for (unsigned r = 0, e = ret.getNumOperands(); r < e; ++r)
    if (!drop.test(r))
      kept.push_back(ret.getOperand(r));
  ret->setOperands(kept);
  return succeeded(fn.eraseResults(drop));
}

struct AnvilBufferizePass
    : mlir::anvil::impl::AnvilBufferizePassBase<AnvilBufferizePass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    AnvilBufferizePassBase::getDependentDialects(registry);
    registry.insert<arith::ArithDialect, func::FuncDialect>();
    registry.addExtension(+[](MLIRContext *ctx, anvil::AnvilDialect *) {
      anvil::AllReduceOp::attachInterface<AllReduceBufferization>(*ctx);
    });
  }
  void runOnOperation() override {
    declareRuntimeCollectives(getOperation());
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!tieStateInPlace(fn)) {
        fn.emitError("anvil-bufferize: an anvil.tied_to names no argument");
        return signalPassFailure();
      }
    for (auto fn : getOperation().getOps<FunctionOpInterface>()) {
      auto strip = [](DictionaryAttr attrs) {
        if (!attrs)
          return attrs;
        SmallVector<NamedAttribute> kept;
        for (NamedAttribute a : attrs)
          if (!a.getName().getValue().starts_with("anvil."))
            kept.push_back(a);
        return DictionaryAttr::get(attrs.getContext(), kept);
      };
      for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
        fn.setArgAttrs(i, strip(fn.getArgAttrDict(i)));
      for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i)
        fn.setResultAttrs(i, strip(fn.getResultAttrDict(i)));
    }
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    options.allowUnknownOps = false;
    options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                          Value to) -> LogicalResult {
      linalg::CopyOp::create(b, loc, from, to);
      return success();
    };
    // Let the final writes of updated state go straight into the argument
    // buffers instead of a temporary that is then copied.
    IRRewriter rewriter(&getContext());
    if (failed(bufferization::eliminateEmptyTensors(rewriter, getOperation())))
      return signalPassFailure();
    bufferization::BufferizationState state;
    if (failed(bufferization::runOneShotModuleBufferize(getOperation(), options,
                                                        state)))
      signalPassFailure();
  }
};

} // namespace
