//===- FlashAttention.cpp - attention as fused kernels --------------------===//
//
// anvil-flash-attention: an f32 anvil.attention without a mask, or whose
// mask is a key bias (a row of keys per batch element, broadcast over the
// heads and queries, made from data: BERT's padding mask), becomes
// anvil.flash_attention (same operands and attributes, the bias as its
// (B, Tk) key_bias; its second result, each row's log-sum-exp, is for the
// gradient). Run on the forward graph, so that autodiff builds the fused
// gradient (the op's VJP) instead of the decomposed one, which stores the
// probabilities.
//
// With `fold-transposes`, an op whose operands are transposes of (B, T, H,
// D) tensors and whose result is transposed back (a transformer's
// attention between its projections) takes the (B, T, H, D) tensors
// directly (`bshd`) when that removes more transposes than it adds; its
// gradient is then laid out so too, and neither pass of the step moves the
// heads.
//
// With `bf16-tensors`, an op with bf16 products then takes bf16 tensors
// (its result widened for its users), cast where they are made: the
// producers write bf16, and the runtime's functions read it in place
// (cuDNN's attention on CUDA).
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILFLASHATTENTIONPASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

/// The permutation that swaps (B, H, T, D) and (B, T, H, D); its own
/// inverse.
constexpr int64_t kSwap[] = {0, 2, 1, 3};

/// `op` if it is a transpose by kSwap.
TransposeOp swapOf(Operation *op) {
  auto transpose = dyn_cast_or_null<TransposeOp>(op);
  if (transpose && transpose.getPermutation() == ArrayRef<int64_t>(kSwap))
    return transpose;
  return nullptr;
}

/// The transposes among `op`'s q, k and v, each once.
llvm::SmallSetVector<Operation *, 3> operandTransposes(AttentionOp op) {
  llvm::SmallSetVector<Operation *, 3> transposes;
  for (Value operand : {op.getQuery(), op.getKey(), op.getValue()})
    if (TransposeOp t = swapOf(operand.getDefiningOp()))
      transposes.insert(t);
  return transposes;
}

/// Transposes removed minus transposes added if `op` took its operands and
/// gave its result in (B, T, H, D): a transpose among its operands that
/// only `op` uses is removed, an operand without one needs one; a result
/// transposed by all of its users removes theirs, one with another user
/// needs one.
int64_t bshdSavings(AttentionOp op) {
  int64_t saved = 0;
  for (Operation *t : operandTransposes(op))
    saved += llvm::all_of(t->getUsers(),
                          [&](Operation *user) { return user == op; });
  for (Value operand : {op.getQuery(), op.getKey(), op.getValue()})
    saved -= !swapOf(operand.getDefiningOp());
  if (!op->use_empty())
    saved += llvm::all_of(op->getUsers(),
                          [](Operation *user) {
                            return static_cast<bool>(swapOf(user));
                          })
                 ? 1
                 : -1;
  return saved;
}

/// Where a mask that is a key bias comes from: the broadcast's operand,
/// which varies along the keys and, with `perBatch`, the batch, and along
/// nothing else.
struct KeyBiasSource {
  Value row;
  bool perBatch, perKey;
};

/// `op`'s mask as a key bias: an anvil.broadcast whose operand varies (has
/// a dimension longer than 1) along no result dimension but the batch and
/// the keys, and which no float argument reaches (the fused gradient gives
/// the bias none).
std::optional<KeyBiasSource> keyBiasSource(AttentionOp op) {
  Value mask = op.getMask();
  auto broadcast = mask ? mask.getDefiningOp<BroadcastOp>() : nullptr;
  if (!broadcast)
    return std::nullopt;
  auto maskType = cast<RankedTensorType>(mask.getType());
  auto rowType = cast<RankedTensorType>(broadcast.getOperand().getType());
  int64_t rank = maskType.getRank();
  // Result dimensions along which the broadcast's operand varies.
  llvm::SmallBitVector varies(rank);
  for (auto [i, dim] : llvm::enumerate(broadcast.getDimensions()))
    if (rowType.getDimSize(i) > 1)
      varies.set(dim);
  bool perBatch = rank == 4 && varies.test(0);
  bool perKey = varies.test(rank - 1);
  if (static_cast<int>(varies.count()) != int(perBatch) + int(perKey) ||
      mayDependOnFloatArgument(broadcast.getOperand()))
    return std::nullopt;
  return KeyBiasSource{broadcast.getOperand(), perBatch, perKey};
}

/// The (B, Tk) key bias of `source`, built at `b`: its row (or what a
/// reshape made it of) reshaped to (B, Tk), (Tk), (B) or (), then
/// broadcast over what it does not vary along.
Value buildKeyBias(OpBuilder &b, AttentionOp op, const KeyBiasSource &source) {
  Location loc = source.row.getLoc();
  auto rowType = cast<RankedTensorType>(source.row.getType());
  int64_t batch = op.getQuery().getType().getDimSize(0),
          keys = op.getKey().getType().getDimSize(2);
  SmallVector<int64_t> shape, dims;
  if (source.perBatch) {
    shape.push_back(batch);
    dims.push_back(0);
  }
  if (source.perKey) {
    shape.push_back(keys);
    dims.push_back(1);
  }
  Value row = source.row;
  // A reshape of a reshape is one reshape (BERT's (B, T) row made
  // (B, 1, 1, T) for its broadcast).
  if (auto reshape = row.getDefiningOp<ReshapeOp>()) {
    row = reshape.getOperand();
    rowType = cast<RankedTensorType>(row.getType());
  }
  if (rowType.getShape() != ArrayRef<int64_t>(shape))
    row = ReshapeOp::create(b, loc, rowType.clone(shape), row);
  if (shape.size() == 2)
    return row;
  return BroadcastOp::create(b, loc, rowType.clone({batch, keys}), row,
                             b.getDenseI64ArrayAttr(dims));
}

/// `value` in the other layout: the transpose's operand when it is one,
/// else a new transpose.
Value swapped(OpBuilder &b, Value value) {
  if (TransposeOp t = swapOf(value.getDefiningOp()))
    return t.getOperand();
  return TransposeOp::create(b, value.getLoc(), value, kSwap);
}

/// The reshapes, slices and splits that make `operand`, from the value
/// they start from (the first one read by anything else too, or made by
/// another op) down to `operand`, each result on the way read by the next
/// alone; and that value.
std::pair<Value, SmallVector<Operation *>> viewChain(Value operand) {
  SmallVector<Operation *> chain;
  Value v = operand;
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, SliceOp, SplitOp>(def) || !v.hasOneUse())
      break;
    chain.insert(chain.begin(), def);
    v = def->getOperand(0);
  }
  return {v, chain};
}

/// `fused` (bf16 products on f32 tensors) on bf16 tensors: each operand is
/// cast to bf16 where it is made, above the reshapes, slices and splits
/// between (the q/k/v split of a fused projection), when nothing else reads
/// what they start from or give, so that its producer writes bf16 (a bias
/// add's kernel, a GEMM); else at the operand. The result is widened for its
/// users (a bf16 GEMM's cast of it folds away: anvil.cast's canonicalization).
void toBf16Tensors(FlashAttentionOp fused) {
  OpBuilder b(fused);
  Type bf16 = b.getBF16Type();
  auto asBf16 = [&](Type t) { return cast<RankedTensorType>(t).clone(bf16); };
  Value operands[3] = {fused.getQuery(), fused.getKey(), fused.getValue()};
  std::pair<Value, SmallVector<Operation *>> chains[3] = {
      viewChain(operands[0]), viewChain(operands[1]), viewChain(operands[2])};
  llvm::DenseMap<Value, Value> narrowRoots;
  llvm::SmallPtrSet<Operation *, 8> narrowed;
  Value narrow[3];
  // Decided for every root before anything changes: a root's chains are
  // hoisted together or not at all. Hoisted, their ops read and give bf16,
  // so nothing but them (and `fused`) may read the root or what they give;
  // and the chains must read disjoint parts of the root (distinct results
  // of one split, nothing else shared), or the operands' gradients would
  // meet, and be summed, in bf16 rather than each widened first.
  bool hoist[3] = {false, false, false};
  for (int i = 0; i < 3; ++i) {
    Value root = chains[i].first;
    SmallVector<int> same;
    for (int j = 0; j < 3; ++j)
      if (chains[j].first == root)
        same.push_back(j);
    if (same.front() != i)
      continue; // decided with the root's first chain
    llvm::SmallPtrSet<Operation *, 8> ops;
    for (int j : same)
      ops.insert(chains[j].second.begin(), chains[j].second.end());
    auto onlyChains = [&](Value v) {
      return llvm::all_of(v.getUsers(), [&](Operation *u) {
        return u == fused.getOperation() || ops.contains(u);
      });
    };
    bool ok = onlyChains(root);
    for (int j : same)
      ok = ok && !chains[j].second.empty() &&
           llvm::all_of(chains[j].second, [&](Operation *view) {
             return llvm::all_of(view->getResults(), onlyChains);
           });
    if (ok && same.size() > 1) {
      // One split first, a distinct result of it each, nothing else shared.
      Operation *first = chains[same[0]].second.front();
      llvm::SmallPtrSet<Operation *, 8> seen;
      llvm::SmallDenseSet<Value, 4> pieces;
      ok = isa<SplitOp>(first);
      for (int j : same) {
        ArrayRef<Operation *> chain = chains[j].second;
        Value piece = chain.size() > 1 ? chain[1]->getOperand(0) : operands[j];
        ok = ok && chain.front() == first && pieces.insert(piece).second;
        for (Operation *view : chain.drop_front())
          ok = ok && seen.insert(view).second;
      }
    }
    for (int j : same)
      hoist[j] = ok;
  }
  for (auto [i, chainOf] : llvm::enumerate(chains)) {
    auto &[root, chain] = chainOf;
    if (!hoist[i]) {
      narrow[i] = CastOp::create(b, fused.getLoc(),
                                 asBf16(operands[i].getType()), operands[i]);
      continue;
    }
    Value &castRoot = narrowRoots[root];
    if (!castRoot) {
      OpBuilder at(fused->getContext());
      at.setInsertionPointAfterValue(root);
      castRoot =
          CastOp::create(at, root.getLoc(), asBf16(root.getType()), root);
    }
    // The chain's ops read bf16 now (each once: q, k and v may share one).
    for (Operation *view : chain) {
      if (!narrowed.insert(view).second)
        continue;
      if (view->getOperand(0) == root)
        view->setOperand(0, castRoot);
      for (Value result : view->getResults())
        result.setType(asBf16(result.getType()));
    }
    narrow[i] = operands[i];
  }
  auto onBf16 = FlashAttentionOp::create(
      b, fused.getLoc(), narrow[0], narrow[1], narrow[2], fused.getKeyBias(),
      fused.getCausal(), fused.getScaleAttr(), /*bf16_gemms=*/true,
      fused.getBshd());
  Value widened = CastOp::create(b, fused.getLoc(), fused.getResult().getType(),
                                 onBf16.getResult());
  fused.getResult().replaceAllUsesWith(widened);
  fused.getLse().replaceAllUsesWith(onBf16.getLse());
  fused.erase();
}

struct AnvilFlashAttentionPass
    : mlir::anvil::impl::AnvilFlashAttentionPassBase<AnvilFlashAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxHeadDim < 0) {
      getOperation().emitError("anvil-flash-attention: max-head-dim = ")
          << static_cast<int64_t>(maxHeadDim) << " must be 0 (any) or positive";
      return signalPassFailure();
    }
    auto fits = [&](int64_t dim) {
      return maxHeadDim == 0 || dim <= maxHeadDim;
    };
    SmallVector<std::pair<AttentionOp, std::optional<KeyBiasSource>>> chosen;
    getOperation().walk([&](AttentionOp op) {
      if (!op.getType().getElementType().isF32() ||
          !fits(op.getQuery().getType().getDimSize(3)) ||
          !fits(op.getValue().getType().getDimSize(3)))
        return;
      std::optional<KeyBiasSource> bias = keyBiasSource(op);
      if (!op.getMask() || bias)
        chosen.emplace_back(op, bias);
    });
    SmallVector<FlashAttentionOp> made;
    // One key bias per mask (and batch: a (Tq, Tk) mask may serve ops of
    // several): the layers of a model share theirs.
    llvm::DenseMap<std::pair<Value, int64_t>, Value> keyBiases;
    for (auto [op, source] : chosen) {
      Value keyBias;
      if (source) {
        Value &built =
            keyBiases[{op.getMask(), op.getQuery().getType().getDimSize(0)}];
        if (!built) {
          OpBuilder at(op->getContext());
          at.setInsertionPointAfterValue(op.getMask());
          built = buildKeyBias(at, op, *source);
        }
        keyBias = built;
      }
      Operation *mask = op.getMask() ? op.getMask().getDefiningOp() : nullptr;
      OpBuilder b(op);
      FlashAttentionOp fused;
      if (!foldTransposes || bshdSavings(op) <= 0) {
        fused = FlashAttentionOp::create(
            b, op.getLoc(), op.getQuery(), op.getKey(), op.getValue(), keyBias,
            op.getCausal(), op.getScaleAttr(), op.getBf16Gemms(),
            /*bshd=*/false);
        op.getResult().replaceAllUsesWith(fused.getResult());
        op.erase();
        made.push_back(fused);
        if (mask && mask->use_empty())
          mask->erase();
        continue;
      }
      llvm::SmallSetVector<Operation *, 3> dead = operandTransposes(op);
      fused = FlashAttentionOp::create(
          b, op.getLoc(), swapped(b, op.getQuery()), swapped(b, op.getKey()),
          swapped(b, op.getValue()), keyBias, op.getCausal(), op.getScaleAttr(),
          op.getBf16Gemms(), /*bshd=*/true);
      for (Operation *user : llvm::make_early_inc_range(op->getUsers()))
        if (TransposeOp t = swapOf(user)) {
          t.getResult().replaceAllUsesWith(fused.getResult());
          t.erase();
        }
      if (!op->use_empty())
        op.getResult().replaceAllUsesWith(swapped(b, fused.getResult()));
      op.erase();
      for (Operation *t : dead)
        if (t->use_empty())
          t->erase();
      if (mask && mask->use_empty())
        mask->erase();
      made.push_back(fused);
    }
    if (bf16Tensors)
      for (FlashAttentionOp fused : made)
        if (fused.getBf16Gemms())
          toBf16Tensors(fused);
  }
};

} // namespace
