//===- AnvilCost.cpp - FLOPs and bytes of anvil ops -----------------------===//
//
// The cost interface's helpers and the FLOP counts of the ops that are not
// plain elementwise. Contractions follow the textbook formulas (a
// multiply-add is two FLOPs); the other counts are nominal per element and
// listed in docs/cost.md.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::anvil;

#include "anvil/Dialect/Anvil/IR/AnvilInterfaces.cpp.inc"

int64_t mlir::anvil::getNumElements(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return t.getNumElements();
}

int64_t mlir::anvil::getElementBytes(Type elementType) {
  unsigned bits = elementType.getIntOrFloatBitWidth();
  return std::max<int64_t>(1, (bits + 7) / 8);
}

int64_t mlir::anvil::getTensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return t.getNumElements() * getElementBytes(t.getElementType());
}

int64_t mlir::anvil::getOperandAndResultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type t : op->getOperandTypes())
    bytes += getTensorBytes(t);
  for (Type t : op->getResultTypes())
    bytes += getTensorBytes(t);
  return bytes;
}

namespace {
int64_t numel(Value v) { return v ? getNumElements(v.getType()) : 0; }
int64_t product(ArrayRef<int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    p *= v;
  return p;
}
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
} // namespace

// Gathers read only the selected elements: the indices, the gathered
// elements (as many as the result holds, B * L * C for a bag), and the
// result written once.
int64_t SliceOp::getBytesMoved() { return 2 * getTensorBytes(getType()); }
int64_t GatherOp::getBytesMoved() {
  return getTensorBytes(getIndices().getType()) + 2 * getTensorBytes(getType());
}
int64_t EmbeddingOp::getBytesMoved() {
  return getTensorBytes(getIndices().getType()) + 2 * getTensorBytes(getType());
}
int64_t EmbeddingBagOp::getBytesMoved() {
  int64_t rowBytes = shapeOf(getTable())[1] *
                     getElementBytes(getTable().getType().getElementType());
  return getTensorBytes(getIndices().getType()) +
         numel(getIndices()) * rowBytes + getTensorBytes(getType());
}

// Pure data movement: no arithmetic.
int64_t ConstantOp::getFlops() { return 0; }
int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
int64_t BroadcastOp::getFlops() { return 0; }
int64_t SliceOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t SplitOp::getFlops() { return 0; }
int64_t PadOp::getFlops() { return 0; }
int64_t GatherOp::getFlops() { return 0; }
int64_t EmbeddingOp::getFlops() { return 0; }
int64_t UpsampleNearestOp::getFlops() { return 0; }

// One operation per input element.
int64_t ReduceSumOp::getFlops() { return numel(getOperand()); }
int64_t ReduceMaxOp::getFlops() { return numel(getOperand()); }
int64_t ReduceMinOp::getFlops() { return numel(getOperand()); }
int64_t ArgmaxOp::getFlops() { return numel(getOperand()); }
int64_t ReduceMeanOp::getFlops() {
  return numel(getOperand()) + numel(getResult());
}

// max, subtract, exp, sum, divide (or subtract the log) per element.
int64_t SoftmaxOp::getFlops() { return 5 * numel(getOperand()); }
int64_t LogSoftmaxOp::getFlops() { return 5 * numel(getOperand()); }

int64_t MatmulOp::getFlops() {
  // 2 * batch * M * N * K, with K read off the (possibly transposed) lhs.
  ArrayRef<int64_t> lhs = shapeOf(getLhs());
  int64_t k = getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  return 2 * numel(getResult()) * k;
}

int64_t MatmulF8Op::getFlops() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs());
  int64_t k = getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  return 2 * numel(getResult()) * k;
}

// The fused linear layers: the GEMM's 2 M N K, plus the epilogue per
// element of the product: the bias's add, GELU's 8 (docs/cost.md) and,
// for its derivative, twice that.
int64_t LinearOp::getFlops() {
  int64_t k = shapeOf(getLhs()).back();
  return (2 * k + 1) * numel(getResult());
}

int64_t LinearGeluOp::getFlops() {
  int64_t k = shapeOf(getLhs()).back();
  return (2 * k + 1 + 8) * numel(getResult());
}

// Its FP8 form: the same, plus the scale of each GELU value (its amax's
// compare is not counted, as no reduction's is).
int64_t LinearGeluF8Op::getFlops() {
  int64_t k = shapeOf(getLhs()).back();
  return (2 * k + 1 + 8 + 1) * numel(getResult());
}

int64_t GeluBiasGradOp::getFlops() { return (16 + 1) * numel(getPreGrad()); }

int64_t MatmulGeluBiasGradOp::getFlops() {
  int64_t k = shapeOf(getLhs()).back();
  return (2 * k + 16 + 1) * numel(getPreGrad());
}

// The weight's gradient, 2 K N M, and the bias's, a sum over the M rows.
int64_t MatmulBiasGradOp::getFlops() {
  int64_t m = shapeOf(getGrad()).front();
  return 2 * numel(getWeightGrad()) * m + numel(getGrad());
}

// Statistics (mean and variance: 5 per element) plus the affine transform.
static int64_t normFlops(Value operand, Value scale, Value bias) {
  return (5 + (scale ? 1 : 0) + (bias ? 1 : 0)) * numel(operand);
}
int64_t LayerNormOp::getFlops() {
  return normFlops(getOperand(), getScale(), getBias());
}
int64_t GroupNormOp::getFlops() {
  return normFlops(getOperand(), getScale(), getBias());
}
int64_t InstanceNormOp::getFlops() {
  return normFlops(getOperand(), getScale(), getBias());
}
int64_t BatchNormTrainOp::getFlops() {
  return normFlops(getOperand(), getScale(), getBias());
}
// Square, sum, scale by the reciprocal root, and the weight.
int64_t RMSNormOp::getFlops() {
  return (3 + (getScale() ? 1 : 0)) * numel(getOperand());
}
// Subtract the mean, scale, weight, bias.
int64_t BatchNormInferenceOp::getFlops() { return 4 * numel(getOperand()); }

// A compare against the random draw and a multiply.
int64_t DropoutOp::getFlops() { return 2 * numel(getOperand()); }

// One add per gradient element.
int64_t EmbeddingGradOp::getFlops() { return numel(getGrad()); }

int64_t EmbeddingBagOp::getFlops() {
  int64_t adds = numel(getIndices()) * shapeOf(getTable())[1];
  return getMode() == BagMode::mean ? adds + numel(getResult()) : adds;
}

// Each output is `a cos - b sin` or `a sin + b cos`: two multiplies, one add.
int64_t RopeOp::getFlops() { return 3 * numel(getOperand()); }

/// Products of attention over its visible query-key pairs: 2 * B * Hq *
/// pairs * (qk * D + pv * Dv) for `qk` products of D-wide rows and `pv` of
/// Dv-wide ones. The softmax, scale and mask are not counted (as in the
/// FlashAttention papers). Causal attention counts only the visible pairs.
/// `bshd`: the operands are (B, T, H, D) rather than (B, H, T, D).
static int64_t attentionFlops(Value query, Value key, Value value, bool causal,
                              int64_t qk, int64_t pv, bool bshd = false) {
  ArrayRef<int64_t> q = shapeOf(query), v = shapeOf(value);
  int64_t heads = q[bshd ? 2 : 1], tq = q[bshd ? 1 : 2],
          tk = shapeOf(key)[bshd ? 1 : 2];
  int64_t pairs = tq * tk;
  if (causal) {
    pairs = 0;
    for (int64_t i = 0; i < tq; ++i)
      pairs += std::clamp<int64_t>(i + tk - tq + 1, 0, tk);
  }
  return 2 * q[0] * heads * pairs * (qk * q[3] + pv * v[3]);
}

// Q K^T and P V.
int64_t AttentionOp::getFlops() {
  return attentionFlops(getQuery(), getKey(), getValue(), getCausal(), 1, 1);
}

int64_t FlashAttentionOp::getFlops() {
  return attentionFlops(getQuery(), getKey(), getValue(), getCausal(), 1, 1,
                        getBshd());
}

// The scores again, dQ = dS K and dK = dS^T Q over D; dP = dO V^T and
// dV = P^T dO over Dv.
int64_t FlashAttentionGradOp::getFlops() {
  return attentionFlops(getQuery(), getKey(), getValue(), getCausal(), 3, 2,
                        getBshd());
}

int64_t ConvOp::getFlops() {
  // 2 * N * Cout * prod(out spatial) * (Cin / groups) * prod(kernel), plus
  // one add per output for the bias.
  ArrayRef<int64_t> f = shapeOf(getFilter());
  int64_t macsPerOutput = f[1] * product(f.drop_front(2));
  return 2 * numel(getResult()) * macsPerOutput +
         (getBias() ? numel(getResult()) : 0);
}

int64_t ConvTransposeOp::getFlops() {
  // Each input element scatters into Cout/groups * prod(kernel) outputs.
  ArrayRef<int64_t> f = shapeOf(getFilter());
  int64_t macsPerInput = f[1] * product(f.drop_front(2));
  return 2 * numel(getInput()) * macsPerInput +
         (getBias() ? numel(getResult()) : 0);
}

// One multiply-add per tap per gradient element.
int64_t ConvFilterGradOp::getFlops() {
  return 2 * numel(getGrad()) * shapeOf(getInput())[1] / getGroups() *
         product(getKernel());
}
// A compare per window element and an add per gradient element.
int64_t MaxPoolGradOp::getFlops() {
  return numel(getGrad()) * (product(getWindow()) + 1);
}

int64_t MaxPoolOp::getFlops() {
  return numel(getResult()) * product(getWindow());
}
int64_t AvgPoolOp::getFlops() {
  return numel(getResult()) * (product(getWindow()) + 1);
}

// Log-softmax over the classes plus the pick and the reduction.
int64_t CrossEntropyOp::getFlops() {
  return 5 * numel(getLogits()) + 2 * numel(getLabels());
}
// Subtract, square, reduce.
int64_t MSELossOp::getFlops() { return 3 * numel(getInput()); }
// max, multiply, subtract, abs, exp, log1p, reduce.
int64_t BCEWithLogitsLossOp::getFlops() { return 7 * numel(getInput()); }
// BCE plus the sigmoid, p_t, alpha_t and the power.
int64_t FocalLossOp::getFlops() { return 16 * numel(getInput()); }
// p t, and the sums of p t, p and t.
int64_t DiceLossOp::getFlops() { return 4 * numel(getInput()); }
// One add (or compare) per element per rank beyond the first; counted as
// one per element, the work of the reduction on this rank.
int64_t AllReduceOp::getFlops() { return numel(getOperand()); }
int64_t ReduceScatterOp::getFlops() { return numel(getOperand()); }
