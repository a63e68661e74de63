//===- LibraryConvs.cpp - convolutions that run as one library call -------===//
//
// anvil-library-convs: marks each convolution a library takes whole
// (anvil.library_call), splitting its bias off; libraryConv describes the
// call (RuntimeABI.h's anvil_rt_conv problem), for this pass and for
// anvil-bufferize, which makes it.
//
// Every convolution of the three ops is one problem of a forward
// convolution x (N, C, X...) -> y (N, K, Y...) with a filter w (K, C /
// groups, k...):
//   anvil.conv              x = input, w = filter, y = result   (forward)
//   anvil.conv_transpose    y = input, w = filter, x = result   (x's gradient)
//   anvil.conv_filter_grad  x = input, y = grad,   w = result   (w's gradient)
// A library's padding is the same on both sides (cuDNN's is): the op
// qualifies when the forward convolution with pad_low on both sides maps
// X to Y. With a larger pad_high the op would see more outputs; with a
// smaller one it reads no padding that a symmetric one would add and that
// it would not (the last window ends inside both), so the values agree.
//
//===----------------------------------------------------------------------===//

#include "anvil/Conversion/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilEmit.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILLIBRARYCONVSPASS
#include "anvil/Conversion/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

/// The sizes and attributes of one convolution in forward terms.
struct Sides {
  RankedTensorType x, w, y;
  ArrayRef<int64_t> stride, padLow, dilation;
  int64_t groups;
};

std::optional<LibraryConv> describe(int32_t kind, const Sides &c) {
  Type element = c.x.getElementType();
  if (!(element.isF32() || element.isBF16()) ||
      c.w.getElementType() != element || c.y.getElementType() != element)
    return std::nullopt;
  int64_t rank = c.x.getRank(), s = rank - 2;
  if (s < 1 || s > 3 || c.w.getRank() != rank || c.y.getRank() != rank ||
      static_cast<int64_t>(c.stride.size()) != s ||
      static_cast<int64_t>(c.padLow.size()) != s ||
      static_cast<int64_t>(c.dilation.size()) != s)
    return std::nullopt;
  int64_t n = c.x.getDimSize(0), channels = c.x.getDimSize(1),
          k = c.y.getDimSize(1), groups = c.groups;
  if (groups < 1 || channels % groups != 0 || k % groups != 0 ||
      c.y.getDimSize(0) != n || c.w.getDimSize(0) != k ||
      c.w.getDimSize(1) != channels / groups)
    return std::nullopt;
  // cuDNN's legacy descriptors count elements in 32 bits.
  for (RankedTensorType t : {c.x, c.w, c.y})
    if (t.getNumElements() >= (int64_t(1) << 31))
      return std::nullopt;
  LibraryConv call{kind, {s, n, channels, k, groups}};
  for (int64_t i = 0; i < s; ++i) {
    int64_t x = c.x.getDimSize(2 + i), y = c.y.getDimSize(2 + i),
            kernel = c.w.getDimSize(2 + i), stride = c.stride[i],
            pad = c.padLow[i], dilation = c.dilation[i];
    if (stride < 1 || dilation < 1 || pad < 0)
      return std::nullopt;
    int64_t span = x + 2 * pad - dilation * (kernel - 1) - 1;
    if (span < 0 || span / stride + 1 != y)
      return std::nullopt;
    call.problem.append({x, y, kernel, stride, pad, dilation});
  }
  return call;
}

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

} // namespace

std::optional<LibraryConv> mlir::anvil::libraryConv(Operation *op) {
  if (auto conv = dyn_cast<ConvOp>(op))
    return describe(kConvForward,
                    {typeOf(conv.getInput()), typeOf(conv.getFilter()),
                     conv.getType(), conv.getStride(), conv.getPadLow(),
                     conv.getDilation(),
                     static_cast<int64_t>(conv.getGroups())});
  if (auto conv = dyn_cast<ConvTransposeOp>(op))
    return describe(kConvDataGrad, {conv.getType(), typeOf(conv.getFilter()),
                                    typeOf(conv.getInput()), conv.getStride(),
                                    conv.getPadLow(), conv.getDilation(),
                                    static_cast<int64_t>(conv.getGroups())});
  if (auto grad = dyn_cast<ConvFilterGradOp>(op))
    return describe(kConvFilterGrad, {typeOf(grad.getInput()), grad.getType(),
                                      typeOf(grad.getGrad()), grad.getStride(),
                                      grad.getPadLow(), grad.getDilation(),
                                      static_cast<int64_t>(grad.getGroups())});
  return std::nullopt;
}

namespace {

struct AnvilLibraryConvsPass
    : mlir::anvil::impl::AnvilLibraryConvsPassBase<AnvilLibraryConvsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> convs;
    getOperation().walk([&](Operation *op) {
      if (isa<ConvOp, ConvTransposeOp, ConvFilterGradOp>(op) && libraryConv(op))
        convs.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : convs) {
      op->setAttr(AnvilDialect::kLibraryCallAttrName, b.getUnitAttr());
      // The bias (the optional third operand of anvil.conv and
      // anvil.conv_transpose) becomes a broadcast add after the call.
      if (op->getNumOperands() < 3)
        continue;
      Value bias = op->getOperand(2);
      op->eraseOperand(2);
      Value result = op->getResult(0);
      b.setInsertionPointAfter(op);
      Emit e{b, op->getLoc()};
      Value sum = e.add(result, e.broadcast(bias, result.getType(), {1}));
      result.replaceAllUsesExcept(sum, sum.getDefiningOp());
    }
  }
};

} // namespace
