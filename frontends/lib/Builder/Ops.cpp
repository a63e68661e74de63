//===- Ops.cpp - free functions that add anvil ops to a Graph -------------===//
//
// Thin wrappers over Graph::create: they translate PyTorch-style arguments
// (negative dimensions, -1 in reshapes, implicit broadcasting) into the
// dialect's explicit form and leave every shape check to the dialect.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Ops.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

/// `dim` made non-negative for a rank-`rank` tensor.
int64_t normalizeDim(Graph &g, int64_t dim, int64_t rank) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    g.fail("dimension " + llvm::Twine(dim) + " is out of range for rank " +
           llvm::Twine(rank));
  return d;
}

SmallVector<int64_t> normalizeDims(Graph &g, ArrayRef<int64_t> dims,
                                   int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t d : dims)
    out.push_back(normalizeDim(g, d, rank));
  llvm::sort(out);
  return out;
}

std::string fmtShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// numpy's broadcast shape of `a` and `b`.
SmallVector<int64_t> broadcastShape(Graph &g, ArrayRef<int64_t> a,
                                    ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      g.fail("shapes " + fmtShape(a) + " and " + fmtShape(b) +
             " do not broadcast (dimension " + llvm::Twine(i) + ": " +
             llvm::Twine(da) + " vs " + llvm::Twine(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

template <typename OpTy> Tensor binary(Tensor a, Tensor b) {
  Graph &g = a.graph();
  SmallVector<int64_t> shape = broadcastShape(g, a.shape(), b.shape());
  a = broadcastTo(a, shape);
  b = broadcastTo(b, shape);
  return g.op<OpTy>({a.value(), b.value()});
}

template <typename OpTy> Tensor unary(Tensor x) {
  return x.graph().op<OpTy>({x.value()});
}

} // namespace

Tensor add(Tensor a, Tensor b) { return binary<ad::AddOp>(a, b); }
Tensor sub(Tensor a, Tensor b) { return binary<ad::SubOp>(a, b); }
Tensor mul(Tensor a, Tensor b) { return binary<ad::MulOp>(a, b); }
Tensor div(Tensor a, Tensor b) { return binary<ad::DivOp>(a, b); }
Tensor maximum(Tensor a, Tensor b) { return binary<ad::MaxOp>(a, b); }
Tensor minimum(Tensor a, Tensor b) { return binary<ad::MinOp>(a, b); }
Tensor pow(Tensor a, Tensor b) { return binary<ad::PowOp>(a, b); }

Tensor neg(Tensor x) { return unary<ad::NegOp>(x); }
Tensor exp(Tensor x) { return unary<ad::ExpOp>(x); }
Tensor log(Tensor x) { return unary<ad::LogOp>(x); }
Tensor sqrt(Tensor x) { return unary<ad::SqrtOp>(x); }
Tensor rsqrt(Tensor x) { return unary<ad::RsqrtOp>(x); }
Tensor tanh(Tensor x) { return unary<ad::TanhOp>(x); }
Tensor erf(Tensor x) { return unary<ad::ErfOp>(x); }
Tensor sigmoid(Tensor x) { return unary<ad::SigmoidOp>(x); }
Tensor silu(Tensor x) { return unary<ad::SiluOp>(x); }
Tensor relu(Tensor x) { return unary<ad::ReluOp>(x); }

Tensor gelu(Tensor x, bool tanhApproximation) {
  Graph &g = x.graph();
  auto approx = tanhApproximation ? ad::GeluApproximation::tanh
                                  : ad::GeluApproximation::erf;
  return g.op<ad::GeluOp>(
      {x.value()}, {g.attr("approximation", ad::GeluApproximationAttr::get(
                                                &g.context(), approx))});
}

Tensor full(Graph &g, ArrayRef<int64_t> shape, double value, Type elementType) {
  for (int64_t d : shape)
    if (d < 0)
      g.fail("full: shape " + fmtShape(shape) + " has a negative size");
  auto type = RankedTensorType::get(shape, elementType);
  Attribute element;
  if (isa<FloatType>(elementType))
    element = g.builder().getFloatAttr(elementType, value);
  else
    element =
        g.builder().getIntegerAttr(elementType, static_cast<int64_t>(value));
  return g.op<ad::ConstantOp>(
      {}, {g.attr("value", SplatElementsAttr::get(type, element))}, {type});
}

Tensor cast(Tensor x, Type elementType) {
  return x.graph().op<ad::CastOp>({x.value()}, {},
                                  {x.type().clone(elementType)});
}

Tensor reshape(Tensor x, ArrayRef<int64_t> shape) {
  Graph &g = x.graph();
  SmallVector<int64_t> target(shape);
  int64_t known = 1, inferredAt = -1;
  for (auto [i, d] : llvm::enumerate(target)) {
    if (d == -1) {
      if (inferredAt >= 0)
        g.fail("reshape to " + fmtShape(shape) + " has more than one -1");
      inferredAt = i;
    } else if (d < 0) {
      g.fail("reshape to " + fmtShape(shape) +
             " has a negative size other than -1");
    } else {
      known *= d;
    }
  }
  int64_t total = x.type().getNumElements();
  if (inferredAt >= 0) {
    if (known == 0 || total % known != 0)
      g.fail("cannot reshape " + fmtShape(x.shape()) + " to " +
             fmtShape(shape));
    target[inferredAt] = total / known;
  }
  return g.op<ad::ReshapeOp>({x.value()}, {}, {x.type().clone(target)});
}

Tensor transpose(Tensor x, ArrayRef<int64_t> permutation) {
  Graph &g = x.graph();
  return g.op<ad::TransposeOp>(
      {x.value()},
      {g.attr("permutation", g.builder().getDenseI64ArrayAttr(permutation))});
}

Tensor broadcastTo(Tensor x, ArrayRef<int64_t> shape) {
  if (x.shape() == shape)
    return x;
  Graph &g = x.graph();
  if (x.rank() > static_cast<int64_t>(shape.size()))
    g.fail("cannot broadcast " + fmtShape(x.shape()) + " to the smaller rank " +
           fmtShape(shape));
  // Trailing dimensions align; size-1 operand dimensions stretch.
  SmallVector<int64_t> dims;
  int64_t offset = shape.size() - x.rank();
  for (int64_t i = 0; i < x.rank(); ++i)
    dims.push_back(offset + i);
  return g.op<ad::BroadcastOp>(
      {x.value()},
      {g.attr("dimensions", g.builder().getDenseI64ArrayAttr(dims))},
      {x.type().clone(shape)});
}

std::vector<Tensor> split(Tensor x, int64_t dim, ArrayRef<int64_t> sizes) {
  Graph &g = x.graph();
  Operation *op = g.create<ad::SplitOp>(
      {x.value()}, {g.attr("dim", g.builder().getI64IntegerAttr(
                                      normalizeDim(g, dim, x.rank()))),
                    g.attr("sizes", g.builder().getDenseI64ArrayAttr(sizes))});
  std::vector<Tensor> out;
  for (Value v : op->getResults())
    out.emplace_back(&g, v);
  return out;
}

Tensor concat(ArrayRef<Tensor> inputs, int64_t dim) {
  if (inputs.empty())
    throw BuildError("concat needs at least one input");
  Graph &g = inputs.front().graph();
  SmallVector<Value> values;
  for (const Tensor &t : inputs)
    values.push_back(t.value());
  return g.op<ad::ConcatOp>(
      values, {g.attr("dim", g.builder().getI64IntegerAttr(normalizeDim(
                                 g, dim, inputs.front().rank())))});
}

Tensor matmul(Tensor a, Tensor b, bool transposeA, bool transposeB) {
  Graph &g = a.graph();
  SmallVector<NamedAttribute> attrs;
  if (transposeA)
    attrs.push_back(g.attr("transpose_lhs", g.builder().getUnitAttr()));
  if (transposeB)
    attrs.push_back(g.attr("transpose_rhs", g.builder().getUnitAttr()));
  return g.op<ad::MatmulOp>({a.value(), b.value()}, attrs);
}

template <typename OpTy>
static Tensor reduce(Tensor x, ArrayRef<int64_t> dims, bool keepDims) {
  Graph &g = x.graph();
  SmallVector<NamedAttribute> attrs{g.attr(
      "dims",
      g.builder().getDenseI64ArrayAttr(normalizeDims(g, dims, x.rank())))};
  if (keepDims)
    attrs.push_back(g.attr("keep_dims", g.builder().getUnitAttr()));
  return g.op<OpTy>({x.value()}, attrs);
}

Tensor sum(Tensor x, ArrayRef<int64_t> dims, bool keepDims) {
  return reduce<ad::ReduceSumOp>(x, dims, keepDims);
}
Tensor mean(Tensor x, ArrayRef<int64_t> dims, bool keepDims) {
  return reduce<ad::ReduceMeanOp>(x, dims, keepDims);
}

Tensor softmax(Tensor x, int64_t dim) {
  Graph &g = x.graph();
  return g.op<ad::SoftmaxOp>(
      {x.value()}, {g.attr("dim", g.builder().getI64IntegerAttr(
                                      normalizeDim(g, dim, x.rank())))});
}

Tensor logSoftmax(Tensor x, int64_t dim) {
  Graph &g = x.graph();
  return g.op<ad::LogSoftmaxOp>(
      {x.value()}, {g.attr("dim", g.builder().getI64IntegerAttr(
                                      normalizeDim(g, dim, x.rank())))});
}

Tensor layerNorm(Tensor x, Tensor scale, Tensor bias, int64_t axis,
                 double epsilon) {
  Graph &g = x.graph();
  SmallVector<Value> operands{x.value()};
  if (scale)
    operands.push_back(scale.value());
  if (bias)
    operands.push_back(bias.value());
  return g.op<ad::LayerNormOp>(
      operands,
      {g.attr("axis",
              g.builder().getI64IntegerAttr(normalizeDim(g, axis, x.rank()))),
       g.attr("epsilon", g.builder().getF64FloatAttr(epsilon)),
       g.attr("operandSegmentSizes", g.builder().getDenseI32ArrayAttr(
                                         {1, scale ? 1 : 0, bias ? 1 : 0}))});
}

Tensor rmsNorm(Tensor x, Tensor scale, int64_t axis, double epsilon) {
  Graph &g = x.graph();
  SmallVector<Value> operands{x.value()};
  if (scale)
    operands.push_back(scale.value());
  return g.op<ad::RMSNormOp>(
      operands, {g.attr("axis", g.builder().getI64IntegerAttr(
                                    normalizeDim(g, axis, x.rank()))),
                 g.attr("epsilon", g.builder().getF64FloatAttr(epsilon))});
}

Tensor embedding(Tensor table, Tensor indices) {
  return table.graph().op<ad::EmbeddingOp>({table.value(), indices.value()});
}

Tensor attention(Tensor query, Tensor key, Tensor value, bool causal,
                 Tensor mask, std::optional<double> scale) {
  Graph &g = query.graph();
  SmallVector<Value> operands{query.value(), key.value(), value.value()};
  if (mask)
    operands.push_back(mask.value());
  SmallVector<NamedAttribute> attrs;
  if (causal)
    attrs.push_back(g.attr("causal", g.builder().getUnitAttr()));
  if (scale)
    attrs.push_back(g.attr("scale", g.builder().getF64FloatAttr(*scale)));
  return g.op<ad::AttentionOp>(operands, attrs);
}

Tensor dropout(Tensor x, Tensor seed, double rate) {
  Graph &g = x.graph();
  return g.op<ad::DropoutOp>(
      {x.value(), seed.value()},
      {g.attr("rate", g.builder().getF64FloatAttr(rate))});
}

Tensor crossEntropy(Tensor logits, Tensor labels, ad::Reduction reduction,
                    int64_t ignoreIndex, double labelSmoothing) {
  Graph &g = logits.graph();
  return g.op<ad::CrossEntropyOp>(
      {logits.value(), labels.value()},
      {g.attr("reduction", ad::ReductionAttr::get(&g.context(), reduction)),
       g.attr("ignore_index", g.builder().getI64IntegerAttr(ignoreIndex)),
       g.attr("label_smoothing", g.builder().getF64FloatAttr(labelSmoothing))});
}

Tensor conv(Tensor input, Tensor filter, Tensor bias, ArrayRef<int64_t> stride,
            ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
            int64_t groups) {
  Graph &g = input.graph();
  SmallVector<Value> operands{input.value(), filter.value()};
  if (bias)
    operands.push_back(bias.value());
  auto arr = [&](ArrayRef<int64_t> v) {
    return g.builder().getDenseI64ArrayAttr(v);
  };
  return g.op<ad::ConvOp>(
      operands,
      {g.attr("stride", arr(stride)), g.attr("pad_low", arr(padding)),
       g.attr("pad_high", arr(padding)), g.attr("dilation", arr(dilation)),
       g.attr("groups", g.builder().getI64IntegerAttr(groups))});
}

} // namespace anvil::frontend
