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
// 5. Collectives become runtime calls naming the mesh axis by its position
//    in the module's `anvil.mesh` (-1 without one). `anvil.all_reduce`
//    bufferizes in place: anvil_rt_all_reduce_f32(address, elements, op,
//    axis) on its operand's buffer (copied first when the operand is still
//    needed, through a contiguous temporary when the buffer is strided).
//    `anvil.all_gather` and `anvil.reduce_scatter` write a new buffer
//    (anvil_rt_all_gather_f32, anvil_rt_reduce_scatter_f32), and so does
//    `anvil.axis_slice` (anvil_rt_axis_slice_f32: the rank's block);
//    `anvil.axis_index` stores anvil_rt_axis_index(axis).
// 6. The fused attention ops write new buffers through the runtime:
//    `anvil.flash_attention` calls anvil_rt_attention_f32,
//    `anvil.flash_attention_grad` anvil_rt_attention_grad_f32 (or the
//    device's functions the pass options name), each buffer passed as a
//    memref<f32> view of its allocation's base, a pointer once lowered,
//    and the offsets and strides of the 4-D ones in a constant global
//    (strided views pass as they are; a buffer without static strides or
//    a contiguous innermost dimension is copied first).
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Globals.h"
#include "anvil/Conversion/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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
constexpr StringLiteral kAllGather = "anvil_rt_all_gather_f32";
constexpr StringLiteral kReduceScatter = "anvil_rt_reduce_scatter_f32";
constexpr StringLiteral kAxisSlice = "anvil_rt_axis_slice_f32";
constexpr StringLiteral kAxisIndex = "anvil_rt_axis_index";
constexpr StringLiteral kAttention = "anvil_rt_attention_f32";
constexpr StringLiteral kAttentionGrad = "anvil_rt_attention_grad_f32";
constexpr StringLiteral kAttentionBf16 = "anvil_rt_attention_bf16";
constexpr StringLiteral kAttentionGradBf16 = "anvil_rt_attention_grad_bf16";
constexpr StringLiteral kGemmBias = "anvil_rt_gemm_bias";
constexpr StringLiteral kGemmBiasGelu = "anvil_rt_gemm_bias_gelu";
constexpr StringLiteral kGemmDgeluBgrad = "anvil_rt_gemm_dgelu_bgrad";
constexpr StringLiteral kGemmWeightBiasGrad = "anvil_rt_gemm_weight_bias_grad";
constexpr StringLiteral kConv = "anvil_rt_conv";
constexpr StringLiteral kGemmF8 = "anvil_rt_gemm_f8";
constexpr StringLiteral kGemmF8Gelu = "anvil_rt_gemm_f8_gelu";
constexpr StringLiteral kEmbeddingGrad = "anvil_rt_embedding_grad_f32";

/// The runtime's name for mesh axis `axis` of `op`'s module: its position
/// in the module's `anvil.mesh`, or -1 without a mesh (a world of one).
Value axisCode(RewriterBase &rewriter, Operation *op, StringRef axis) {
  int64_t code = -1;
  auto module = op->getParentOfType<ModuleOp>();
  if (auto mesh = module->getAttrOfType<DictionaryAttr>(
          anvil::AnvilDialect::kMeshAttrName))
    for (auto [i, entry] : llvm::enumerate(mesh))
      if (entry.getName() == axis)
        code = static_cast<int64_t>(i);
  return arith::ConstantIntOp::create(rewriter, op->getLoc(),
                                      rewriter.getI32Type(), code);
}

/// The module attribute with which anvil-bufferize's copy-globals reaches
/// the ops' bufferization models (set while it runs).
constexpr StringLiteral kCopyGlobalsAttr = "anvil.bufferize_copy_globals";

/// Whether `buffer` is a global or a view of one that a library call must
/// not read in place: the host's memory (a constant's values), which the
/// CUDA backend's library calls, running on the device, cannot read
/// (copy-globals; the CPU's read it where it is).
bool viewsGlobal(Value buffer) {
  auto module = buffer.getParentRegion()->getParentOfType<ModuleOp>();
  return module && module->hasAttr(kCopyGlobalsAttr) &&
         anvil::isGlobalView(buffer);
}

/// `buffer` itself when it is contiguous and row-major, else a copy of it
/// in a new contiguous buffer; with copy-globals a global is copied too
/// (viewsGlobal: the copy is a dispatch, whose kernels read constant
/// globals on the device).
Value contiguous(RewriterBase &rewriter, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (memref::isStaticShapeAndContiguousRowMajor(type) && !viewsGlobal(buffer))
    return buffer;
  Value copy = memref::AllocOp::create(
      rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()));
  linalg::CopyOp::create(rewriter, loc, buffer, copy);
  return copy;
}

/// The address of the first element of a contiguous buffer, as i64.
Value addressOf(RewriterBase &rewriter, Location loc, Value buffer) {
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
  auto meta = memref::ExtractStridedMetadataOp::create(rewriter, loc, buffer);
  int64_t width =
      cast<MemRefType>(buffer.getType()).getElementTypeBitWidth() / 8;
  Value bytes = arith::MulIOp::create(
      rewriter, loc, meta.getOffset(),
      arith::ConstantIndexOp::create(rewriter, loc, width));
  return arith::IndexCastOp::create(
      rewriter, loc, rewriter.getI64Type(),
      arith::AddIOp::create(rewriter, loc, base, bytes));
}

/// A new buffer of `type`'s shape and element type: where a library call
/// writes a result.
Value allocFor(RewriterBase &rewriter, Location loc, RankedTensorType type) {
  return memref::AllocOp::create(
      rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()));
}

/// i32 and i64 constants at the rewriter's insertion point: the runtime
/// calls' scalar arguments.
struct Scalars {
  RewriterBase &rewriter;
  Location loc;
  Value i32(int32_t v) const {
    return arith::ConstantIntOp::create(rewriter, loc, rewriter.getI32Type(),
                                        v);
  }
  Value i64(int64_t v) const {
    return arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                        v);
  }
};

/// The address of the first element of a contiguous buffer, as an LLVM
/// pointer (what the runtime's functions take for a buffer of any type).
Value pointerTo(RewriterBase &rewriter, Location loc, Value buffer) {
  return LLVM::IntToPtrOp::create(
      rewriter, loc, LLVM::LLVMPointerType::get(rewriter.getContext()),
      addressOf(rewriter, loc, buffer));
}

/// Pointers to `op`'s operands' buffers, each made contiguous first (what
/// the runtime's library calls take).
FailureOr<SmallVector<Value>>
operandPointers(RewriterBase &rewriter, Operation *op,
                const bufferization::BufferizationOptions &options,
                bufferization::BufferizationState &state) {
  SmallVector<Value> pointers;
  for (Value operand : op->getOperands()) {
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    pointers.push_back(pointerTo(rewriter, op->getLoc(),
                                 contiguous(rewriter, op->getLoc(), *buffer)));
  }
  return pointers;
}

LogicalResult requireF32(Operation *op, Type type) {
  Type element = cast<ShapedType>(type).getElementType();
  if (element.isF32())
    return success();
  return op->emitError("anvil-bufferize: '")
         << op->getName() << "' of " << element
         << " is not supported by the runtime's functions yet (f32 only)";
}

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
    if (failed(requireF32(op, reduce.getType())))
      return failure();
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, reduce.getOperand(), options, state);
    if (failed(buffer))
      return failure();
    Location loc = op->getLoc();
    auto i64 = rewriter.getI64Type();
    Value target = contiguous(rewriter, loc, *buffer);
    Value count = arith::ConstantIntOp::create(
        rewriter, loc, i64, reduce.getType().getNumElements());
    Value code =
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI32Type(),
                                     static_cast<int64_t>(reduce.getOp()));
    func::CallOp::create(rewriter, loc, kAllReduce, TypeRange{},
                         ValueRange{addressOf(rewriter, loc, target), count,
                                    code,
                                    axisCode(rewriter, op, reduce.getAxis())});
    if (target != *buffer)
      linalg::CopyOp::create(rewriter, loc, target, *buffer);
    bufferization::replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// The collectives that read their operand and write a new buffer:
/// The analysis side of ops that read their operands and write a new
/// buffer (no operand is written or aliased).
template <typename Model, typename OpTy>
struct NewBufferModel
    : bufferization::BufferizableOpInterface::ExternalModel<Model, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const bufferization::AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const bufferization::AnalysisState &) const {
    return false;
  }
  bufferization::AliasingValueList
  getAliasingValues(Operation *, OpOperand &,
                    const bufferization::AnalysisState &) const {
    return {};
  }
};

/// anvil.all_gather, anvil.reduce_scatter and anvil.axis_slice become calls
/// of the runtime with the two addresses (the operand's made contiguous
/// first) and the elements per rank.
template <typename OpTy>
struct OutOfPlaceCollective : NewBufferModel<OutOfPlaceCollective<OpTy>, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto collective = cast<OpTy>(op);
    auto resultType = cast<RankedTensorType>(collective.getType());
    if (failed(requireF32(op, resultType)))
      return failure();
    FailureOr<Value> buffer = bufferization::getBuffer(
        rewriter, collective.getOperand(), options, state);
    if (failed(buffer))
      return failure();
    Location loc = op->getLoc();
    auto i64 = rewriter.getI64Type();
    Value result = allocFor(rewriter, loc, resultType);
    Value axis = axisCode(rewriter, op, collective.getAxis());
    Value source = contiguous(rewriter, loc, *buffer);
    // Elements per rank: the gathered operand's, the scattered or sliced
    // result's.
    int64_t perRank = std::is_same_v<OpTy, anvil::AllGatherOp>
                          ? collective.getOperand().getType().getNumElements()
                          : resultType.getNumElements();
    SmallVector<Value> args = {
        addressOf(rewriter, loc, source), addressOf(rewriter, loc, result),
        arith::ConstantIntOp::create(rewriter, loc, i64, perRank)};
    StringLiteral callee = kAllGather;
    if constexpr (std::is_same_v<OpTy, anvil::ReduceScatterOp>) {
      callee = kReduceScatter;
      args.push_back(arith::ConstantIntOp::create(
          rewriter, loc, rewriter.getI32Type(),
          static_cast<int64_t>(collective.getOp())));
    }
    if constexpr (std::is_same_v<OpTy, anvil::AxisSliceOp>)
      callee = kAxisSlice;
    args.push_back(axis);
    func::CallOp::create(rewriter, loc, callee, TypeRange{}, args);
    bufferization::replaceOpWithBufferizedValues(rewriter, op, result);
    return success();
  }
};

/// anvil.axis_index: a new i64 buffer holding anvil_rt_axis_index(axis).
struct AxisIndexBufferization
    : NewBufferModel<AxisIndexBufferization, anvil::AxisIndexOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &,
                          bufferization::BufferizationState &) const {
    auto index = cast<anvil::AxisIndexOp>(op);
    Location loc = op->getLoc();
    auto i64 = rewriter.getI64Type();
    Value result =
        memref::AllocOp::create(rewriter, loc, MemRefType::get({}, i64));
    Value value = func::CallOp::create(
                      rewriter, loc, kAxisIndex, TypeRange{i64},
                      ValueRange{axisCode(rewriter, op, index.getAxis())})
                      .getResult(0);
    memref::StoreOp::create(rewriter, loc, value, result, ValueRange{});
    bufferization::replaceOpWithBufferizedValues(rewriter, op, result);
    return success();
  }
};

/// The layout (RuntimeABI.h's anvil_rt_attention_layout: offset, batch,
/// head and row strides, in elements) of a 4-D attention buffer, or
/// nothing when its strides are not static or its dim is not contiguous.
/// `bshd`: its dimensions are (B, T, H, D), else (B, H, T, D).
std::optional<std::array<int64_t, 4>> attentionLayout(MemRefType type,
                                                      bool bshd) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic) || strides[3] != 1)
    return std::nullopt;
  return bshd ? std::array<int64_t, 4>{offset, strides[0], strides[2],
                                       strides[1]}
              : std::array<int64_t, 4>{offset, strides[0], strides[1],
                                       strides[2]};
}

/// A private constant i64 global of `values` in `module` (one per distinct
/// array), read through memref.get_global.
Value constantI64Array(RewriterBase &rewriter, Location loc, ModuleOp module,
                       ArrayRef<int64_t> values, StringRef prefix) {
  auto type = MemRefType::get({static_cast<int64_t>(values.size())},
                              rewriter.getI64Type());
  auto init = DenseIntElementsAttr::get(
      RankedTensorType::get(type.getShape(), type.getElementType()), values);
  memref::GlobalOp global;
  int64_t count = 0;
  for (auto candidate : module.getOps<memref::GlobalOp>()) {
    if (!candidate.getSymName().starts_with(prefix))
      continue;
    ++count;
    if (candidate.getType() == type && candidate.getInitialValueAttr() == init)
      global = candidate;
  }
  if (!global) {
    std::string name;
    do
      name = (prefix + Twine(count++)).str();
    while (module.lookupSymbol(name));
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    global = memref::GlobalOp::create(rewriter, loc, name,
                                      rewriter.getStringAttr("private"), type,
                                      init, /*constant=*/true,
                                      /*alignment=*/IntegerAttr());
  }
  return memref::GetGlobalOp::create(rewriter, loc, type, global.getSymName());
}

/// Replaces `op` by a call of the runtime's `callee` (declared in the
/// module on first use, with `args`' types) and its results by `results`.
void callRuntime(RewriterBase &rewriter, Operation *op, StringRef callee,
                 ValueRange args, ValueRange results) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol(callee)) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(rewriter, module.getLoc(), callee,
                         rewriter.getFunctionType(args.getTypes(), {}))
        .setPrivate();
  }
  func::CallOp::create(rewriter, op->getLoc(), callee, TypeRange{}, args);
  bufferization::replaceOpWithBufferizedValues(rewriter, op, results);
}

/// Whether `op` is a flash_attention_grad with its gradients packed.
bool isPacked(anvil::FlashAttentionOp) { return false; }
bool isPacked(anvil::FlashAttentionGradOp op) { return op.getPackedGrads(); }

/// anvil.flash_attention and its gradient: new buffers for the results,
/// written by one runtime call on the operands' buffers:
///   (q, k, v, keyBias, [out, lse, dOut,] results..., batch, heads,
///    kvHeads, queries, keys, dim, valueDim, f32 scale, i32 causal,
///    i32 bf16, layouts)
/// keyBias is an LLVM pointer to the key bias's buffer (made contiguous),
/// or null without one (anvil-plan-memory keeps a buffer whose address is
/// taken live until the address's last user, the call).
/// On bf16 tensors (lse f32) the bf16 functions, without the bf16 flag.
/// `layouts` (a constant global, memref<Nxi64>) holds the offset and
/// strides of each 4-D buffer in argument order (q, k, v, out[, dOut, dq,
/// dk, dv]) as RuntimeABI.h's anvil_rt_attention_layout, so strided views
/// (the (B, T, H, D) slices of a projection with `bshd`) are passed as
/// they are; a gradient with `packed_grads` passes its one result three
/// times, dq, dk and dv at their columns. A buffer whose strides are not
/// static, or whose innermost dimension is not contiguous, is copied first;
/// so is a strided lse (contiguous in the ABI), and a global (a constant:
/// the host's memory, viewsGlobal). Each buffer is passed as a 0-D memref view
/// of its allocation's base (one declaration for every shape), which the host's
/// bare-pointer calling convention passes as the pointer RuntimeABI.h declares;
/// as views that the call uses, the buffers stay live (anvil-plan-memory) until
/// it returns. New results have identity layout.
template <typename OpTy>
struct AttentionBufferization
    : NewBufferModel<AttentionBufferization<OpTy>, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto attention = cast<OpTy>(op);
    bool bf16Tensors = attention.getQuery().getType().getElementType().isBF16();
    if (!bf16Tensors && failed(requireF32(op, attention.getQuery().getType())))
      return failure();
    Location loc = op->getLoc();
    bool bshd = attention.getBshd();
    // Every buffer as a 0-D memref at its allocation's base, so that one
    // declaration serves every shape.
    auto base = [&](Value buffer) -> Value {
      auto scalar = MemRefType::get(
          {}, cast<MemRefType>(buffer.getType()).getElementType());
      return memref::ReinterpretCastOp::create(
          rewriter, loc, scalar, buffer, /*offset=*/0,
          /*sizes=*/ArrayRef<int64_t>{}, /*strides=*/ArrayRef<int64_t>{});
    };
    SmallVector<Value> args;
    SmallVector<int64_t> layouts;
    auto pass = [&](Value buffer) {
      auto type = cast<MemRefType>(buffer.getType());
      std::optional<std::array<int64_t, 4>> layout;
      if (type.getRank() == 4)
        layout = attentionLayout(type, bshd);
      if ((type.getRank() == 4 && !layout) ||
          (type.getRank() != 4 && !type.getLayout().isIdentity()) ||
          viewsGlobal(buffer)) {
        Value plain = memref::AllocOp::create(
            rewriter, loc,
            MemRefType::get(type.getShape(), type.getElementType()));
        linalg::CopyOp::create(rewriter, loc, buffer, plain);
        buffer = plain;
        type = cast<MemRefType>(plain.getType());
        if (type.getRank() == 4)
          layout = attentionLayout(type, bshd);
      }
      if (layout)
        layouts.append(layout->begin(), layout->end());
      args.push_back(base(buffer));
    };
    Value keyBias = attention.getKeyBias(), keyBiasBuffer;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> buffer =
          bufferization::getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      if (operand == keyBias)
        keyBiasBuffer = *buffer;
      else
        pass(*buffer);
    }
    SmallVector<Value> results;
    for (Value result : op->getResults()) {
      results.push_back(
          allocFor(rewriter, loc, cast<RankedTensorType>(result.getType())));
    }
    // After q, k and v.
    args.insert(
        args.begin() + 3,
        keyBiasBuffer
            ? pointerTo(rewriter, loc, contiguous(rewriter, loc, keyBiasBuffer))
            : LLVM::ZeroOp::create(
                  rewriter, loc,
                  LLVM::LLVMPointerType::get(rewriter.getContext())));
    if (isPacked(attention)) {
      // dq, dk, dv side by side in each (B, T) row of the one result.
      int64_t row = cast<MemRefType>(results[0].getType()).getDimSize(2);
      int64_t tokens =
          cast<RankedTensorType>(attention.getQuery().getType()).getDimSize(1);
      int64_t column = 0;
      for (Value operand :
           {attention.getQuery(), attention.getKey(), attention.getValue()}) {
        auto type = cast<RankedTensorType>(operand.getType()); // (B, T, H, D)
        args.push_back(base(results[0]));
        layouts.append({column, tokens * row, type.getDimSize(3), row});
        column += type.getDimSize(2) * type.getDimSize(3);
      }
    } else {
      for (Value result : results)
        pass(result);
    }
    // The sizes in (B, H, T, D) terms.
    auto dims = [&](Value v) {
      SmallVector<int64_t> shape(
          cast<RankedTensorType>(v.getType()).getShape());
      if (bshd)
        std::swap(shape[1], shape[2]);
      return shape;
    };
    SmallVector<int64_t> q = dims(attention.getQuery()),
                         k = dims(attention.getKey()),
                         v = dims(attention.getValue());
    for (int64_t size : {q[0], q[1], k[1], q[2], k[2], q[3], v[3]})
      args.push_back(arith::ConstantIntOp::create(rewriter, loc,
                                                  rewriter.getI64Type(), size));
    args.push_back(
        arith::ConstantOp::create(rewriter, loc,
                                  rewriter.getF32FloatAttr(static_cast<float>(
                                      attention.getScaleOrDefault()))));
    SmallVector<bool, 2> flags = {attention.getCausal()};
    if (!bf16Tensors) // the bf16 functions' products are bf16
      flags.push_back(attention.getBf16Gemms());
    for (bool flag : flags)
      args.push_back(arith::ConstantIntOp::create(
          rewriter, loc, rewriter.getI32Type(), flag ? 1 : 0));
    auto module = op->getParentOfType<ModuleOp>();
    args.push_back(constantI64Array(rewriter, loc, module, layouts,
                                    "__anvil_attention_layouts_"));
    constexpr bool forward = std::is_same_v<OpTy, anvil::FlashAttentionOp>;
    StringLiteral callee = bf16Tensors
                               ? (forward ? kAttentionBf16 : kAttentionGradBf16)
                               : (forward ? kAttention : kAttentionGrad);
    callRuntime(rewriter, op, callee, args, results);
    return success();
  }
};

/// anvil.linear, anvil.linear_gelu, anvil.matmul_gelu_bias_grad and
/// anvil.matmul_bias_grad: new buffers for the results, written by one GEMM
/// call with its epilogue (RuntimeABI.h):
///   anvil_rt_gemm_bias(transB, m, n, k, a, b, bias, out)
///   anvil_rt_gemm_bias_gelu(transB, m, n, k, a, b, bias, out, pre)
///   anvil_rt_gemm_dgelu_bgrad(transB, m, n, k, a, b, pre, preGrad,
///                             biasGrad)
///   anvil_rt_gemm_weight_bias_grad(m, k, n, x, grad, weightGrad, biasGrad)
/// with the lhs's leading dimensions folded into m rows and every buffer,
/// made contiguous first, passed as a pointer to its first element (a null
/// `pre` when nothing reads it). n must be a multiple of 8.
template <typename OpTy>
struct GemmEpilogueBufferization
    : NewBufferModel<GemmEpilogueBufferization<OpTy>, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto gemm = cast<OpTy>(op);
    Location loc = op->getLoc();
    auto lhs = cast<RankedTensorType>(gemm.getLhs().getType());
    if (!lhs.getElementType().isBF16())
      return op->emitError("anvil-bufferize: '")
             << op->getName() << "' of " << lhs.getElementType()
             << " is not supported by the runtime's functions (bf16 only)";
    constexpr bool weightGrad = std::is_same_v<OpTy, anvil::MatmulBiasGradOp>;
    constexpr bool biasOnly = std::is_same_v<OpTy, anvil::LinearOp>;
    // The product's rows m, columns n and contraction k.
    int64_t n =
        cast<RankedTensorType>(op->getOperand(1).getType()).getShape().back();
    int64_t m = lhs.getNumElements() / lhs.getShape().back(),
            k = lhs.getShape().back();
    if (!weightGrad) {
      n = cast<RankedTensorType>(op->getResult(0).getType()).getShape().back();
      if (n % 8 != 0)
        return op->emitError("anvil-bufferize: '")
               << op->getName() << "' with " << n
               << " columns: the runtime's GEMM epilogues need a multiple of "
                  "8 (cuBLASLt's rule for the GELU's input it keeps, and rows "
                  "of 16 bytes for every epilogue)";
    }
    // A `pre` nothing reads (the evaluation's forward pass) is not written:
    // a null pointer, and the result's buffer stands in for it.
    auto linear = dyn_cast<anvil::LinearGeluOp>(op);
    bool dropPre = linear && linear.getPre().use_empty();
    SmallVector<Value> results;
    for (Value result : op->getResults()) {
      if (dropPre && result == linear.getPre()) {
        results.push_back(results.front());
        continue;
      }
      results.push_back(
          allocFor(rewriter, loc, cast<RankedTensorType>(result.getType())));
    }
    Scalars c{rewriter, loc};
    SmallVector<Value> args;
    if constexpr (weightGrad)
      args = {c.i64(m), c.i64(k), c.i64(n)};
    else
      args = {c.i32(gemm.getTransposeRhs() ? 1 : 0), c.i64(m), c.i64(n),
              c.i64(k)};
    auto pointer = [&](Value buffer) {
      return pointerTo(rewriter, loc, buffer);
    };
    FailureOr<SmallVector<Value>> operands =
        operandPointers(rewriter, op, options, state);
    if (failed(operands))
      return failure();
    args.append(*operands);
    args.push_back(pointer(results[0]));
    if constexpr (!biasOnly)
      args.push_back(dropPre ? LLVM::ZeroOp::create(rewriter, loc,
                                                    LLVM::LLVMPointerType::get(
                                                        rewriter.getContext()))
                             : pointer(results[1]));
    StringLiteral callee = biasOnly ? kGemmBias
                           : std::is_same_v<OpTy, anvil::LinearGeluOp>
                               ? kGemmBiasGelu
                           : weightGrad ? kGemmWeightBiasGrad
                                        : kGemmDgeluBgrad;
    callRuntime(rewriter, op, callee, args, results);
    return success();
  }
};

/// The runtime's code of an 8-bit float format: 0 E4M3, 1 E5M2.
int32_t f8Format(Type t) { return isa<Float8E5M2Type>(t) ? 1 : 0; }

/// anvil.matmul_f8: a new buffer for the result, written by one call
/// (RuntimeABI.h):
///   anvil_rt_gemm_f8(transA, transB, m, n, k, a, aFormat, lda, strideA,
///                    b, bFormat, ldb, strideB, scaleA, scaleB, bias, d,
///                    dBf16, ldd, strideD, batch)
/// with the leading dimensions of the result as the batch (an rhs of rank
/// 2 shared by it: stride 0), row and batch strides those of the operands
/// made contiguous, and every buffer as a pointer to its first element (a
/// null bias without one).
struct MatmulF8Bufferization
    : NewBufferModel<MatmulF8Bufferization, anvil::MatmulF8Op> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto gemm = cast<anvil::MatmulF8Op>(op);
    Location loc = op->getLoc();
    RankedTensorType result = gemm.getType();
    auto lhs = cast<RankedTensorType>(gemm.getLhs().getType());
    auto rhs = cast<RankedTensorType>(gemm.getRhs().getType());
    int64_t rank = result.getRank();
    int64_t m = result.getDimSize(rank - 2), n = result.getDimSize(rank - 1);
    int64_t k =
        lhs.getDimSize(lhs.getRank() - (gemm.getTransposeLhs() ? 2 : 1));
    // A matrix's row stride (its last dimension) and batch stride (its
    // last two; 0 for a matrix the batch shares).
    auto strides = [&](RankedTensorType t) {
      int64_t r = t.getRank(), cols = t.getDimSize(r - 1);
      return std::pair{cols, r < rank ? 0 : t.getDimSize(r - 2) * cols};
    };
    Value d = allocFor(rewriter, loc, result);
    if (result.getNumElements() == 0) { // nothing to compute
      bufferization::replaceOpWithBufferizedValues(rewriter, op, {d});
      return success();
    }
    int64_t batch = result.getNumElements() / (m * n);
    FailureOr<SmallVector<Value>> operands =
        operandPointers(rewriter, op, options, state);
    if (failed(operands))
      return failure();
    ArrayRef<Value> buffers = *operands;
    Scalars c{rewriter, loc};
    auto [lda, strideA] = strides(lhs);
    auto [ldb, strideB] = strides(rhs);
    SmallVector<Value> args = {
        c.i32(gemm.getTransposeLhs()),
        c.i32(gemm.getTransposeRhs()),
        c.i64(m),
        c.i64(n),
        c.i64(k),
        buffers[0],
        c.i32(f8Format(lhs.getElementType())),
        c.i64(lda),
        c.i64(strideA),
        buffers[1],
        c.i32(f8Format(rhs.getElementType())),
        c.i64(ldb),
        c.i64(strideB),
        buffers[2],
        buffers[3],
        gemm.getBias() ? buffers[4]
                       : LLVM::ZeroOp::create(
                             rewriter, loc,
                             LLVM::LLVMPointerType::get(rewriter.getContext())),
        pointerTo(rewriter, loc, d),
        c.i32(result.getElementType().isBF16()),
        c.i64(n),
        c.i64(m * n),
        c.i64(batch)};
    callRuntime(rewriter, op, kGemmF8, args, {d});
    return success();
  }
};

/// anvil.linear_gelu_f8: new buffers for the codes, pre and the amax,
/// written by one call (RuntimeABI.h):
///   anvil_rt_gemm_f8_gelu(transB, m, n, k, a, aFormat, b, bFormat, scaleA,
///                         scaleB, bias, outScale, out, outFormat, pre,
///                         amax)
/// with the lhs's leading dimensions folded into m rows and every operand,
/// made contiguous first, passed as a pointer to its first element.
struct LinearGeluF8Bufferization
    : NewBufferModel<LinearGeluF8Bufferization, anvil::LinearGeluF8Op> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto gemm = cast<anvil::LinearGeluF8Op>(op);
    Location loc = op->getLoc();
    auto lhs = cast<RankedTensorType>(gemm.getLhs().getType());
    RankedTensorType codes = gemm.getResult().getType();
    int64_t k = lhs.getShape().back(), n = codes.getShape().back();
    int64_t m = codes.getNumElements() / std::max<int64_t>(n, 1);
    SmallVector<Value> results;
    for (Value result : op->getResults()) {
      results.push_back(
          allocFor(rewriter, loc, cast<RankedTensorType>(result.getType())));
    }
    FailureOr<SmallVector<Value>> operands =
        operandPointers(rewriter, op, options, state);
    if (failed(operands))
      return failure();
    ArrayRef<Value> buffers = *operands;
    Scalars c{rewriter, loc};
    SmallVector<Value> args = {
        c.i32(gemm.getTransposeRhs()),
        c.i64(m),
        c.i64(n),
        c.i64(k),
        buffers[0],
        c.i32(f8Format(lhs.getElementType())),
        buffers[1],
        c.i32(f8Format(gemm.getRhs().getType().getElementType())),
        buffers[2],
        buffers[3],
        buffers[4],
        buffers[5],
        pointerTo(rewriter, loc, results[0]),
        c.i32(f8Format(codes.getElementType())),
        pointerTo(rewriter, loc, results[1]),
        pointerTo(rewriter, loc, results[2])};
    callRuntime(rewriter, op, kGemmF8Gelu, args, results);
    return success();
  }
};

/// A convolution marked anvil.library_call (anvil-library-convs): a new
/// buffer for the result, written by one runtime call (RuntimeABI.h):
///   anvil_rt_conv(i32 kind, i32 bf16, problem, a, b, c)
/// with the problem (libraryConv) in a constant global
/// (`__anvil_conv_problem_N`) and the operands, made contiguous, and the
/// result, all as pointers (one declaration for every rank and shape).
template <typename OpTy>
struct ConvBufferization : NewBufferModel<ConvBufferization<OpTy>, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    std::optional<anvil::LibraryConv> call = anvil::libraryConv(op);
    if (!op->hasAttr(anvil::AnvilDialect::kLibraryCallAttrName) || !call ||
        op->getNumOperands() != 2)
      return op->emitError("anvil-bufferize: '")
             << op->getName()
             << "' is not a library convolution (anvil-library-convs marks "
                "them and splits their bias off; this one is lowered by "
                "anvil-convert-to-linalg)";
    Location loc = op->getLoc();
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Value result = allocFor(rewriter, loc, resultType);
    auto pointer = [&](Value buffer) {
      return pointerTo(rewriter, loc, buffer);
    };
    Scalars c{rewriter, loc};
    SmallVector<Value> args = {
        c.i32(call->kind), c.i32(resultType.getElementType().isBF16() ? 1 : 0),
        pointer(constantI64Array(rewriter, loc, op->getParentOfType<ModuleOp>(),
                                 call->problem, "__anvil_conv_problem_"))};
    FailureOr<SmallVector<Value>> operands =
        operandPointers(rewriter, op, options, state);
    if (failed(operands))
      return failure();
    args.append(*operands);
    args.push_back(pointer(result));
    callRuntime(rewriter, op, kConv, args, {result});
    return success();
  }
};

/// An anvil.embedding_grad marked anvil.library_call
/// (anvil-convert-to-linalg library-embedding-grads): a new buffer for the
/// table, written by one runtime call (RuntimeABI.h):
///   anvil_rt_embedding_grad_f32(count, rows, width, grad, ids, table)
/// the gradient and the ids made contiguous, all three as pointers.
struct EmbeddingGradBufferization
    : NewBufferModel<EmbeddingGradBufferization, anvil::EmbeddingGradOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) const {
    auto grad = cast<anvil::EmbeddingGradOp>(op);
    auto table = cast<RankedTensorType>(grad.getType());
    auto ids = cast<RankedTensorType>(grad.getIndices().getType());
    auto gradType = cast<RankedTensorType>(grad.getGrad().getType());
    if (!op->hasAttr(anvil::AnvilDialect::kLibraryCallAttrName) ||
        !gradType.getElementType().isF32() ||
        !ids.getElementType().isInteger(32) || table.getRank() != 2 ||
        !gradType.hasStaticShape() || !ids.hasStaticShape() ||
        !table.hasStaticShape())
      return op->emitError("anvil-bufferize: this anvil.embedding_grad is not "
                           "a runtime call (one of f32 gradients and i32 ids "
                           "of static shapes marked anvil.library_call, as "
                           "anvil-convert-to-linalg's library-embedding-grads "
                           "marks them; the others become a loop there)");
    Location loc = op->getLoc();
    Value result = allocFor(rewriter, loc, table);
    Scalars c{rewriter, loc};
    SmallVector<Value> args = {c.i64(ids.getNumElements()),
                               c.i64(table.getDimSize(0)),
                               c.i64(table.getDimSize(1))};
    FailureOr<SmallVector<Value>> operands =
        operandPointers(rewriter, op, options, state);
    if (failed(operands))
      return failure();
    args.append(*operands);
    args.push_back(pointerTo(rewriter, loc, result));
    callRuntime(rewriter, op, kEmbeddingGrad, args, {result});
    return success();
  }
};

/// Declares the runtime functions the module's collectives call:
///   anvil_rt_all_reduce_f32(i64 address, i64 elements, i32 op, i32 axis)
///   anvil_rt_all_gather_f32(i64 in, i64 out, i64 per_rank, i32 axis)
///   anvil_rt_reduce_scatter_f32(i64 in, i64 out, i64 per_rank, i32 op,
///                               i32 axis)
///   anvil_rt_axis_slice_f32(i64 in, i64 out, i64 per_rank, i32 axis)
///   anvil_rt_axis_index(i32 axis) -> i64
void declareRuntimeCollectives(ModuleOp module) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto declare = [&](StringRef name, FunctionType type) {
    if (module.lookupSymbol(name))
      return;
    func::FuncOp::create(b, module.getLoc(), name, type).setPrivate();
  };
  bool reduce = false, gather = false, scatter = false, slice = false,
       index = false;
  module.walk([&](Operation *op) {
    index |= isa<anvil::AxisIndexOp>(op);
    reduce |= isa<anvil::AllReduceOp>(op);
    gather |= isa<anvil::AllGatherOp>(op);
    scatter |= isa<anvil::ReduceScatterOp>(op);
    slice |= isa<anvil::AxisSliceOp>(op);
  });
  if (reduce)
    declare(kAllReduce, b.getFunctionType({i64, i64, i32, i32}, {}));
  if (gather)
    declare(kAllGather, b.getFunctionType({i64, i64, i64, i32}, {}));
  if (scatter)
    declare(kReduceScatter, b.getFunctionType({i64, i64, i64, i32, i32}, {}));
  if (slice)
    declare(kAxisSlice, b.getFunctionType({i64, i64, i64, i32}, {}));
  if (index)
    declare(kAxisIndex, b.getFunctionType({i32}, {i64}));
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
  using Base::Base;
  void getDependentDialects(DialectRegistry &registry) const override {
    AnvilBufferizePassBase::getDependentDialects(registry);
    registry.insert<arith::ArithDialect, func::FuncDialect>();
    registry.addExtension(+[](MLIRContext *ctx, anvil::AnvilDialect *) {
      anvil::AllReduceOp::attachInterface<AllReduceBufferization>(*ctx);
      anvil::AllGatherOp::attachInterface<
          OutOfPlaceCollective<anvil::AllGatherOp>>(*ctx);
      anvil::ReduceScatterOp::attachInterface<
          OutOfPlaceCollective<anvil::ReduceScatterOp>>(*ctx);
      anvil::AxisSliceOp::attachInterface<
          OutOfPlaceCollective<anvil::AxisSliceOp>>(*ctx);
      anvil::AxisIndexOp::attachInterface<AxisIndexBufferization>(*ctx);
      anvil::FlashAttentionOp::attachInterface<
          AttentionBufferization<anvil::FlashAttentionOp>>(*ctx);
      anvil::FlashAttentionGradOp::attachInterface<
          AttentionBufferization<anvil::FlashAttentionGradOp>>(*ctx);
      anvil::LinearOp::attachInterface<
          GemmEpilogueBufferization<anvil::LinearOp>>(*ctx);
      anvil::LinearGeluOp::attachInterface<
          GemmEpilogueBufferization<anvil::LinearGeluOp>>(*ctx);
      anvil::MatmulGeluBiasGradOp::attachInterface<
          GemmEpilogueBufferization<anvil::MatmulGeluBiasGradOp>>(*ctx);
      anvil::MatmulBiasGradOp::attachInterface<
          GemmEpilogueBufferization<anvil::MatmulBiasGradOp>>(*ctx);
      anvil::MatmulF8Op::attachInterface<MatmulF8Bufferization>(*ctx);
      anvil::LinearGeluF8Op::attachInterface<LinearGeluF8Bufferization>(*ctx);
      anvil::ConvOp::attachInterface<ConvBufferization<anvil::ConvOp>>(*ctx);
      anvil::ConvTransposeOp::attachInterface<
          ConvBufferization<anvil::ConvTransposeOp>>(*ctx);
      anvil::ConvFilterGradOp::attachInterface<
          ConvBufferization<anvil::ConvFilterGradOp>>(*ctx);
      anvil::EmbeddingGradOp::attachInterface<EmbeddingGradBufferization>(*ctx);
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
    if (copyGlobals)
      getOperation()->setAttr(kCopyGlobalsAttr, UnitAttr::get(&getContext()));
    LogicalResult bufferized = bufferization::runOneShotModuleBufferize(
        getOperation(), options, state);
    getOperation()->removeAttr(kCopyGlobalsAttr);
    if (failed(bufferized))
      return signalPassFailure();
    // A device's functions in place of the CPU's.
    for (auto [from, to] :
         {std::pair<StringRef, StringRef>{kAttention, attentionCallee},
          {kAttentionGrad, attentionGradCallee},
          {kAttentionBf16, attentionBf16Callee},
          {kAttentionGradBf16, attentionGradBf16Callee},
          {kGemmBias, gemmBiasCallee},
          {kGemmBiasGelu, gemmBiasGeluCallee},
          {kGemmDgeluBgrad, gemmDgeluBgradCallee},
          {kGemmWeightBiasGrad, gemmWeightBiasGradCallee},
          {kGemmF8, gemmF8Callee},
          {kGemmF8Gelu, gemmF8GeluCallee},
          {kConv, convCallee},
          {kEmbeddingGrad, embeddingGradCallee}}) {
      auto callee = getOperation().lookupSymbol<func::FuncOp>(from);
      if (!callee || from == to)
        continue;
      if (failed(SymbolTable::replaceAllSymbolUses(
              callee, StringAttr::get(&getContext(), to), getOperation())))
        return signalPassFailure();
      SymbolTable::setSymbolName(callee, to);
    }
  }
};

} // namespace

bool mlir::anvil::isGlobalView(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (isa<memref::GetGlobalOp>(def))
      return true;
    if (auto transpose = dyn_cast<memref::TransposeOp>(def)) {
      memref = transpose.getIn();
      continue;
    }
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    memref = view.getViewSource();
  }
  return false;
}
