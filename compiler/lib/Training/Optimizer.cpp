//===- Optimizer.cpp - @train_step: forward, backward, update -------------===//
//
// 1. Clone @forward into @train_step and differentiate it.
// 2. Insert the optimizer state (per trainable parameter) and the step
//    counter as zero-initialized `anvil.state` arguments after the
//    parameters.
// 3. From t = step + 1 compute the learning rate (warm-up, decay), clip
//    the gradients by their global norm, and apply the update rule.
// 4. Return (loss, metrics, lr, new params, new state, t): the forward
//    function's results, the learning rate of this step (f32, marked
//    `anvil.metric = "lr"`), then each state result tied to the argument it
//    replaces. The forward function's own tied results (buffer updates such
//    as batch norm's running statistics) join the state results.
// 5. @forward stays the evaluation function: its tied results are dropped,
//    so evaluating never updates a buffer, and a batch norm whose batch
//    statistics update two buffers (its running mean and variance)
//    normalizes with those buffers instead, as PyTorch's eval() does.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilEmit.h"
#include "anvil/Training/Autodiff.h"
#include "anvil/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILOPTIMIZERPASS
#include "anvil/Training/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

enum class Kind { SGD, Adam, AdamW, LAMB, Adagrad };

/// The state tensors each trainable parameter gets, by name suffix.
SmallVector<StringRef> stateNames(Kind kind, bool momentum) {
  switch (kind) {
  case Kind::SGD:
    return momentum ? SmallVector<StringRef>{"momentum"}
                    : SmallVector<StringRef>{};
  case Kind::Adam:
  case Kind::AdamW:
  case Kind::LAMB:
    return {"m", "v"};
  case Kind::Adagrad:
    return {"sum"};
  }
  llvm_unreachable("unknown optimizer");
}

/// The argument that `value` updates: the one tied to the only result of
/// `fn` that `value` flows into, or null when there is not exactly one.
BlockArgument updatedBuffer(func::FuncOp fn, Value value) {
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  SmallVector<Value> work{value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  std::optional<int64_t> tied;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == ret.getOperation()) {
        auto index = fn.getResultAttrOfType<IntegerAttr>(
            use.getOperandNumber(), AnvilDialect::kTiedAttrName);
        if (!index || (tied && *tied != index.getInt()))
          return {};
        tied = index.getInt();
        continue;
      }
      if (seen.insert(user).second)
        work.append(user->getResults().begin(), user->getResults().end());
    }
  }
  return tied ? fn.getArgument(*tied) : BlockArgument();
}

/// In the evaluation function `fn`, every batch norm whose batch mean and
/// variance update buffers normalizes with those buffers (its running
/// statistics) instead of the batch's.
void useRunningStatistics(func::FuncOp fn) {
  SmallVector<BatchNormTrainOp> norms;
  fn.walk([&](BatchNormTrainOp bn) { norms.push_back(bn); });
  for (BatchNormTrainOp bn : norms) {
    BlockArgument mean = updatedBuffer(fn, bn.getBatchMean());
    BlockArgument var = updatedBuffer(fn, bn.getBatchVariance());
    if (!mean || !var || mean == var ||
        mean.getType() != bn.getBatchMean().getType() ||
        var.getType() != bn.getBatchVariance().getType())
      continue;
    OpBuilder b(bn);
    auto eval = BatchNormInferenceOp::create(b, bn.getLoc(), bn.getOperand(),
                                             bn.getScale(), bn.getBias(), mean,
                                             var, bn.getEpsilonAttr());
    bn.getResult().replaceAllUsesWith(eval.getResult());
  }
}

/// Replaces the body of `fn` by `accumulate` copies of it, one per
/// micro-batch: every input gets a leading dimension of that size, copy k
/// reads slice k, and the function returns the mean of the copies' results
/// (the loss and the metrics).
LogicalResult unrollMicroBatches(func::FuncOp fn, int64_t accumulate) {
  Block &block = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (!isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType()))
      return fn.emitError("anvil-optimizer: accumulate averages every result "
                          "over the micro-batches, but result #")
             << i << " of @" << fn.getName() << " has type " << v.getType();
  SmallVector<Operation *> body;
  for (Operation &op : block.without_terminator())
    body.push_back(&op);
  OpBuilder b(ret);
  Emit e{b, fn.getLoc()};
  SmallVector<BlockArgument> inputs;
  for (BlockArgument arg : block.getArguments())
    if (fn.getArgAttr(arg.getArgNumber(), AnvilDialect::kInputAttrName))
      inputs.push_back(arg);
  // Widen the inputs first: (shape) -> (K, shape).
  SmallVector<RankedTensorType> microTypes;
  for (BlockArgument arg : inputs) {
    auto t = cast<RankedTensorType>(arg.getType());
    microTypes.push_back(t);
    SmallVector<int64_t> wide{accumulate};
    llvm::append_range(wide, t.getShape());
    arg.setType(t.clone(wide));
  }
  SmallVector<Value> totals(ret.getNumOperands());
  for (int64_t k = 0; k < accumulate; ++k) {
    IRMapping map;
    for (auto [arg, t] : llvm::zip(inputs, microTypes)) {
      auto wide = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> start(wide.getRank(), 0), limit(wide.getShape()),
          stride(wide.getRank(), 1);
      start[0] = k;
      limit[0] = k + 1;
      Value piece = SliceOp::create(b, fn.getLoc(), arg, start, limit, stride);
      map.map(arg, e.reshape(piece, t));
    }
    for (Operation *op : body)
      b.clone(*op, map);
    for (auto [total, v] : llvm::zip(totals, ret.getOperands())) {
      Value value = map.lookupOrDefault(v);
      total = total ? e.add(total, value) : value;
    }
  }
  SmallVector<Value> means;
  for (Value total : totals)
    means.push_back(e.scale(total, 1.0 / static_cast<double>(accumulate)));
  ret.getOperandsMutable().assign(means);
  for (Operation *op : llvm::reverse(body))
    op->erase();
  fn.setFunctionType(
      b.getFunctionType(block.getArgumentTypes(), ret.getOperandTypes()));
  return success();
}

struct AnvilOptimizerPass
    : public anvil::impl::AnvilOptimizerPassBase<AnvilOptimizerPass> {
  using Base::Base;

  void runOnOperation() override;
};

void AnvilOptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fail = [&](const Twine &message) {
    module.emitError("anvil-optimizer: ") << message;
    signalPassFailure();
  };
  std::optional<Kind> kind = llvm::StringSwitch<std::optional<Kind>>(optimizer)
                                 .Case("sgd", Kind::SGD)
                                 .Case("adam", Kind::Adam)
                                 .Case("adamw", Kind::AdamW)
                                 .Case("lamb", Kind::LAMB)
                                 .Case("adagrad", Kind::Adagrad)
                                 .Default(std::nullopt);
  if (!kind)
    return fail("optimizer = '" + optimizer +
                "' is not one of sgd, adam, adamw, lamb, adagrad");
  if (decay != "none" && decay != "cosine" && decay != "linear")
    return fail("decay = '" + decay + "' is not one of none, cosine, linear");
  if (decay != "none" && totalSteps <= warmup)
    return fail("decay = " + decay + " needs total-steps (" +
                Twine(totalSteps) + ") greater than warmup (" + Twine(warmup) +
                ")");
  if (!(lr > 0) || warmup < 0 || clip < 0 || weightDecay < 0 || momentum < 0 ||
      !(eps > 0))
    return fail("lr and eps must be positive; warmup, clip, weight-decay and "
                "momentum must not be negative");
  if (nesterov && momentum <= 0)
    return fail("nesterov needs momentum > 0");
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
    return fail("beta1 and beta2 must lie in [0, 1)");
  if (!(minLrRatio >= 0 && minLrRatio <= 1))
    return fail("min-lr-ratio = " +
                llvm::formatv("{0}", static_cast<double>(minLrRatio)).str() +
                " must lie in [0, 1]");
  if (accumulate < 1)
    return fail("accumulate = " + Twine(accumulate) + " must be at least 1");
  if (dataParallel < 1)
    return fail("data-parallel = " + Twine(dataParallel) +
                " must be at least 1");
  if (zero != 0 && zero != 1)
    return fail("zero = " + Twine(zero) +
                ": ZeRO stage 1 (sharded optimizer state) is supported; "
                "stages 2 and 3 are not yet");
  // ZeRO-1: each data-parallel rank keeps and updates one block of every
  // parameter's flattened optimizer state.
  const bool sharded = zero == 1 && dataParallel > 1;
  if (lossScale != "none" && lossScale != "dynamic")
    return fail("loss-scale = '" + lossScale + "' is not one of none, dynamic");
  if (!(scaleInit > 0) || scaleInterval < 1)
    return fail("scale-init must be positive and scale-growth-interval at "
                "least 1");

  auto forward = module.lookupSymbol<func::FuncOp>(function);
  if (!forward)
    return fail("no function @" + function);
  if (module.lookupSymbol("train_step"))
    return fail("@train_step exists already");
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(forward);
  auto step = cast<func::FuncOp>(b.clone(*forward));
  step.setSymName("train_step");
  // The forward function's tied results: buffers it updates.
  llvm::MapVector<unsigned, BlockArgument> bufferUpdates; // in result order
  for (unsigned r = 0, e = forward.getNumResults(); r < e; ++r)
    if (auto tied = forward.getResultAttrOfType<IntegerAttr>(
            r, AnvilDialect::kTiedAttrName))
      bufferUpdates[r] = step.getArgument(tied.getInt());
  if (accumulate > 1 && !bufferUpdates.empty()) {
    step.erase();
    return fail("accumulate = " + Twine(accumulate) + ": @" + function +
                " updates buffers (result #" +
                Twine(bufferUpdates.begin()->first) +
                " is tied to an argument), and micro-batches would each "
                "update them; use accumulate = 1");
  }
  if (accumulate > 1 && failed(unrollMicroBatches(step, accumulate))) {
    step.erase();
    return signalPassFailure();
  }

  // 2. State arguments go after the last parameter.
  unsigned insertAt = 0;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, AnvilDialect::kParamAttrName))
      insertAt = i + 1;
  MLIRContext *ctx = module.getContext();
  auto zeros =
      InitializerAttr::get(ctx, InitKind::zeros, DictionaryAttr::get(ctx, {}));
  auto addState = [&](Type type, const std::string &name, Location loc,
                      DictionaryAttr sharding = {}) {
    NamedAttrList list;
    list.append(AnvilDialect::kStateAttrName, StateAttr::get(ctx, name, zeros));
    if (sharding)
      list.append(AnvilDialect::kShardingAttrName, sharding);
    auto attrs = list.getDictionary(ctx);
    step.insertArgument(insertAt, type, attrs, loc);
    return step.getArgument(insertAt++);
  };
  // Dynamic loss scaling: the scale and the count of finite steps, and the
  // backward pass seeded with dL/dL = scale.
  auto stepType = RankedTensorType::get({}, b.getF32Type());
  auto scalarType = RankedTensorType::get({}, b.getF64Type());
  bool scaling = lossScale == "dynamic";
  BlockArgument scaleArg, goodArg;
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  Value seed;
  if (scaling) {
    auto constant = [&](double v) {
      NamedAttrList args;
      args.append("value", b.getF64FloatAttr(v));
      return InitializerAttr::get(ctx, InitKind::constant,
                                  args.getDictionary(ctx));
    };
    auto add = [&](StringRef name, InitializerAttr init) {
      auto attrs = b.getDictionaryAttr(b.getNamedAttr(
          AnvilDialect::kStateAttrName, StateAttr::get(ctx, name, init)));
      step.insertArgument(insertAt, stepType, attrs, step.getLoc());
      return step.getArgument(insertAt++);
    };
    scaleArg = add("loss_scale", constant(scaleInit));
    goodArg = add("loss_scale.good_steps", zeros);
    b.setInsertionPoint(ret);
    Type lossType = ret.getOperand(0).getType();
    seed = lossType == stepType
               ? Value(scaleArg)
               : Value(CastOp::create(b, step.getLoc(), lossType, scaleArg));
  }
  FailureOr<Gradients> grads = differentiate(step, /*wrtInputs=*/false, seed);
  if (failed(grads)) {
    step.erase();
    return signalPassFailure();
  }

  bool useMomentum = momentum > 0;
  SmallVector<SmallVector<BlockArgument>> states;
  for (auto [param, name] : llvm::zip(grads->wrt, grads->names)) {
    auto type = cast<RankedTensorType>(param.getType());
    Type stateType = type;
    // A part of a whole parameter (tensor parallelism) has moments that
    // are the same part of the whole moments.
    DictionaryAttr sharding = step.getArgAttrOfType<DictionaryAttr>(
        param.getArgNumber(), AnvilDialect::kShardingAttrName);
    if (sharding && !sharding.get("global_shape"))
      sharding = {};
    if (sharded) {
      // Block i of the flattened parameter (of this rank's part of it under
      // tensor parallelism), zero-padded to a multiple of the ranks.
      int64_t block = (type.getNumElements() + dataParallel - 1) / dataParallel;
      stateType = RankedTensorType::get({block}, type.getElementType());
      NamedAttrList attrs;
      if (sharding)
        attrs.append(sharding.getValue());
      else
        attrs.set("global_shape", b.getDenseI64ArrayAttr(type.getShape()));
      attrs.set("flat_axis", b.getStringAttr("dp"));
      sharding = attrs.getDictionary(ctx);
    }
    SmallVector<BlockArgument> s;
    for (StringRef suffix : stateNames(*kind, useMomentum))
      s.push_back(addState(
          stateType, ("opt." + optimizer + "." + suffix + "." + name).str(),
          param.getLoc(), sharding));
    states.push_back(s);
  }
  // The step counter is f32 (exact to 2^24 steps); the schedule and the
  // scalar factors are computed in f64 and rounded once per parameter.
  BlockArgument stepArg = addState(stepType, "step", step.getLoc());

  // 3. Schedule and clipping.
  b.setInsertionPoint(ret);
  Emit e{b, step.getLoc()};
  Value nextStep = e.add(stepArg, e.splat(stepType, 1.0));
  Value t = CastOp::create(b, e.loc, scalarType, nextStep);
  auto scalar = [&](double v) { return e.splat(scalarType, v); };
  /// `s` (a scalar) in element type `et`, broadcast to `type`.
  auto fullOf = [&](Value s, RankedTensorType type) {
    auto target = scalarType.clone(type.getElementType());
    Value c = s.getType() == target ? s : CastOp::create(b, e.loc, target, s);
    return e.broadcast(c, type, {});
  };
  Value factor = scalar(1.0);
  if (warmup > 0)
    factor = MinOp::create(b, e.loc, scalar(1.0),
                           e.div(t, scalar(static_cast<double>(warmup))));
  if (decay != "none") {
    Value progress = e.div(e.sub(t, scalar(static_cast<double>(warmup))),
                           scalar(static_cast<double>(totalSteps - warmup)));
    progress = MinOp::create(b, e.loc, scalar(1.0),
                             MaxOp::create(b, e.loc, scalar(0.0), progress));
    Value shape =
        decay == "cosine"
            ? e.scale(e.add(scalar(1.0),
                            CosOp::create(b, e.loc, e.scale(progress, M_PI))),
                      0.5)
            : e.sub(scalar(1.0), progress);
    factor = e.mul(factor,
                   e.add(scalar(minLrRatio), e.scale(shape, 1.0 - minLrRatio)));
  }
  Value lrT = e.scale(factor, lr);

  // The update is computed in f32 (f64 for f64 parameters), whatever the
  // parameter's type, so that bf16 and f16 parameters neither lose the
  // hyperparameters (beta2 = 0.999 is 1.0 in bf16, eps = 1e-8 is 0 in f16)
  // nor the unscaled gradients; results are rounded back when stored.
  auto computeType = [&](Value v) {
    auto t = e.typeOf(v);
    return t.getElementType().isF64() ? t : t.clone(b.getF32Type());
  };
  auto toCompute = [&](Value v) -> Value {
    auto t = computeType(v);
    return v.getType() == t ? v : Value(CastOp::create(b, e.loc, t, v));
  };
  auto storeAs = [&](Value v, Type type) -> Value {
    return v.getType() == type ? v : Value(CastOp::create(b, e.loc, type, v));
  };
  // ZeRO's view of a whole tensor: flattened, zero-padded to the ranks'
  // blocks.
  auto flatPadded = [&](Value x) -> Value {
    auto type = e.typeOf(x);
    int64_t n = type.getNumElements();
    int64_t padded = (n + dataParallel - 1) / dataParallel * dataParallel;
    Value flat =
        e.reshape(x, RankedTensorType::get({n}, type.getElementType()));
    if (padded == n)
      return flat;
    return PadOp::create(b, e.loc, flat, b.getDenseI64ArrayAttr({0}),
                         b.getDenseI64ArrayAttr({padded - n}),
                         b.getF64FloatAttr(0.0));
  };
  auto blockType = [&](Value x) {
    auto type = e.typeOf(x);
    int64_t block = (type.getNumElements() + dataParallel - 1) / dataParallel;
    return RankedTensorType::get({block}, type.getElementType());
  };
  /// A scalar (f64) summed over the ranks of mesh axis `axis` (in f32: the
  /// runtime's collectives move f32).
  auto sumOverAxis = [&](Value s, StringRef axis) -> Value {
    auto f32 = RankedTensorType::get({}, b.getF32Type());
    Value r = AllReduceOp::create(b, e.loc, CollectiveOp::sum,
                                  CastOp::create(b, e.loc, f32, s), axis);
    return CastOp::create(b, e.loc, scalarType, r);
  };
  auto sumOverRanks = [&](Value s) { return sumOverAxis(s, "dp"); };
  // Tensor parallelism: the parameters split over a mesh axis (each rank
  // holds a part, so their norms sum over the axis); the others are the
  // same on every rank of it.
  SmallVector<StringRef> splitAxis;
  for (BlockArgument p : grads->wrt) {
    auto sharding = step.getArgAttrOfType<DictionaryAttr>(
        p.getArgNumber(), AnvilDialect::kShardingAttrName);
    auto axis =
        sharding ? sharding.getAs<StringAttr>("split_axis") : StringAttr();
    splitAxis.push_back(axis && meshAxisSize(step, axis.getValue()) > 1
                            ? axis.getValue()
                            : StringRef());
  }
  llvm::SetVector<StringRef> splitAxes;
  for (StringRef a : splitAxis)
    if (!a.empty())
      splitAxes.insert(a);
  SmallVector<Value> g;
  for (Value gi : grads->grads)
    g.push_back(toCompute(gi));
  // Data parallelism: this rank's gradients become the mean over the ranks
  // (before unscaling and clipping, which are linear and global). Under
  // ZeRO-1 each rank keeps the mean of its block only.
  if (sharded)
    for (Value &gi : g)
      gi = ReduceScatterOp::create(b, e.loc, blockType(gi), CollectiveOp::mean,
                                   flatPadded(gi), "dp");
  else if (dataParallel > 1)
    for (Value &gi : g)
      gi = AllReduceOp::create(b, e.loc, CollectiveOp::mean, gi, "dp");
  Value finite;
  if (scaling) {
    // Unscale, and find out whether every gradient is finite: x - x is 0
    // for finite x and NaN for an infinity or a NaN.
    Value scale64 = CastOp::create(b, e.loc, scalarType, scaleArg);
    Value nonFinite = scalar(0.0);
    for (Value &gi : g) {
      gi = e.div(gi, fullOf(scale64, e.typeOf(gi)));
      auto type = e.typeOf(gi);
      SmallVector<int64_t> all =
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      Value s = e.sum(e.sub(gi, gi), all, false);
      nonFinite = e.add(nonFinite,
                        s.getType() == scalarType
                            ? s
                            : Value(CastOp::create(b, e.loc, scalarType, s)));
    }
    if (sharded)
      nonFinite = sumOverRanks(nonFinite);
    // Every rank of a tensor-parallel group skips the step together.
    for (StringRef axis : splitAxes)
      nonFinite = sumOverAxis(nonFinite, axis);
    finite = e.cmp(ComparisonDirection::eq, nonFinite, scalar(0.0));
  }
  auto norm2 = [&](Value x) -> Value {
    auto type = e.typeOf(x);
    SmallVector<int64_t> all =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    Value s = e.sum(e.mul(x, x), all, false);
    return s.getType() == scalarType ? s
                                     : CastOp::create(b, e.loc, scalarType, s);
  };
  if (clip > 0 && !g.empty()) {
    Value total = scalar(0.0);
    llvm::MapVector<StringRef, Value> parts; // per split axis
    for (auto [gi, axis] : llvm::zip(g, splitAxis)) {
      Value &sum = axis.empty() ? total : parts[axis];
      sum = sum ? e.add(sum, norm2(gi)) : norm2(gi);
    }
    for (auto [axis, part] : parts)
      total = e.add(total, sumOverAxis(part, axis));
    // Under ZeRO every rank holds a block of each: the sum over the
    // data-parallel ranks is the whole.
    if (sharded)
      total = sumOverRanks(total);
    Value coef =
        MinOp::create(b, e.loc, scalar(1.0),
                      e.div(scalar(clip), e.add(SqrtOp::create(b, e.loc, total),
                                                scalar(1e-6))));
    for (Value &gi : g)
      gi = e.mul(gi, fullOf(coef, e.typeOf(gi)));
  }

  // 4. Updates. `full(s)` broadcasts an f64 scalar to a parameter's
  // compute type. Results: the loss, the forward function's other results
  // (metrics), then every state value tied to its argument.
  SmallVector<Value> results;
  SmallVector<Value> stateOut;
  SmallVector<BlockArgument> tiedTo;
  for (auto [r, value] : llvm::enumerate(ret.getOperands()))
    if (!bufferUpdates.count(r))
      results.push_back(value);
  // ... and the loss, the mean over the ranks' equal shares of the batch.
  if (dataParallel > 1)
    results[0] =
        AllReduceOp::create(b, e.loc, CollectiveOp::mean, results[0], "dp");
  SmallVector<std::pair<Value, BlockArgument>> stateResults;
  Value b1t = PowOp::create(b, e.loc, scalar(beta1), t);
  Value b2t = PowOp::create(b, e.loc, scalar(beta2), t);
  for (auto [i, p] : llvm::enumerate(grads->wrt)) {
    auto paramType = cast<RankedTensorType>(p.getType());
    bool decayed = weightDecay > 0 && (decayAll || paramType.getRank() >= 2);
    // Under ZeRO-1 the update is computed on this rank's block.
    Value pi = toCompute(p);
    if (sharded)
      pi = AxisSliceOp::create(b, e.loc, blockType(pi), flatPadded(pi), "dp");
    auto type = e.typeOf(pi);
    auto full = [&](Value s) { return fullOf(s, type); };
    auto c = [&](double v) { return e.splat(type, v); };
    /// |x|^2 of the whole tensor x is a block of.
    auto wholeNorm2 = [&](Value x) {
      Value s = norm2(x);
      if (!splitAxis[i].empty())
        s = sumOverAxis(s, splitAxis[i]);
      return sharded ? sumOverRanks(s) : s;
    };
    Value gi = g[i], lrFull = full(lrT);
    SmallVector<Value> old;
    for (BlockArgument a : states[i])
      old.push_back(toCompute(a));
    Value newP;
    SmallVector<Value> newState;
    switch (*kind) {
    case Kind::SGD: {
      if (decayed)
        gi = e.add(gi, e.scale(pi, weightDecay));
      Value d = gi;
      if (useMomentum) {
        Value buf = e.add(e.scale(old[0], momentum), gi);
        newState.push_back(buf);
        d = nesterov ? e.add(gi, e.scale(buf, momentum)) : buf;
      }
      newP = e.sub(pi, e.mul(lrFull, d));
      break;
    }
    case Kind::Adam:
    case Kind::AdamW:
    case Kind::LAMB: {
      if (decayed && *kind == Kind::Adam)
        gi = e.add(gi, e.scale(pi, weightDecay));
      Value m = e.add(e.scale(old[0], beta1), e.scale(gi, 1 - beta1));
      Value v =
          e.add(e.scale(old[1], beta2), e.scale(e.mul(gi, gi), 1 - beta2));
      newState.append({m, v});
      Value mHat = e.div(m, full(e.sub(scalar(1.0), b1t)));
      Value vHat = e.div(v, full(e.sub(scalar(1.0), b2t)));
      Value update = e.div(mHat, e.add(SqrtOp::create(b, e.loc, vHat), c(eps)));
      if (*kind == Kind::LAMB) {
        if (decayed)
          update = e.add(update, e.scale(pi, weightDecay));
        Value pn = SqrtOp::create(b, e.loc, wholeNorm2(pi));
        Value rn = SqrtOp::create(b, e.loc, wholeNorm2(update));
        Value ok = e.cmp(ComparisonDirection::gt, e.mul(pn, rn), scalar(0.0));
        Value trust =
            e.select(ok, e.div(pn, e.select(ok, rn, scalar(1.0))), scalar(1.0));
        newP = e.sub(pi, e.mul(full(e.mul(lrT, trust)), update));
        break;
      }
      if (decayed && *kind == Kind::AdamW)
        pi = e.sub(pi, e.mul(lrFull, e.scale(pi, weightDecay)));
      newP = e.sub(pi, e.mul(lrFull, update));
      break;
    }
    case Kind::Adagrad: {
      if (decayed)
        gi = e.add(gi, e.scale(pi, weightDecay));
      Value sum = e.add(old[0], e.mul(gi, gi));
      newState.push_back(sum);
      newP = e.sub(
          pi, e.mul(lrFull,
                    e.div(gi, e.add(SqrtOp::create(b, e.loc, sum), c(eps)))));
      break;
    }
    }
    if (sharded) {
      // Every rank gets every updated block back.
      auto blocks = e.typeOf(newP);
      int64_t n = paramType.getNumElements();
      Value all = AllGatherOp::create(
          b, e.loc,
          RankedTensorType::get({blocks.getDimSize(0) * dataParallel},
                                blocks.getElementType()),
          newP, "dp");
      if (e.typeOf(all).getDimSize(0) != n)
        all = SliceOp::create(b, e.loc, all, b.getDenseI64ArrayAttr({0}),
                              b.getDenseI64ArrayAttr({n}),
                              b.getDenseI64ArrayAttr({1}));
      newP = e.reshape(all, paramType.clone(blocks.getElementType()));
    }
    stateOut.push_back(storeAs(newP, paramType));
    tiedTo.push_back(p);
    for (auto [value, arg] : llvm::zip(newState, states[i]))
      stateResults.push_back({storeAs(value, arg.getType()), arg});
  }
  for (auto [value, arg] : stateResults) {
    stateOut.push_back(value);
    tiedTo.push_back(arg);
  }
  for (auto [r, arg] : bufferUpdates) {
    // Data-parallel ranks keep one set of buffers: the mean of their
    // updates (each rank's batch statistics cover its own rows).
    Value update = ret.getOperand(r);
    if (dataParallel > 1 &&
        isa<FloatType>(
            cast<RankedTensorType>(update.getType()).getElementType()))
      update = AllReduceOp::create(b, e.loc, CollectiveOp::mean, update, "dp");
    stateOut.push_back(update);
    tiedTo.push_back(arg);
  }
  stateOut.push_back(nextStep);
  tiedTo.push_back(stepArg);
  if (scaling) {
    // A step with non-finite gradients keeps every state value as it was.
    for (auto [value, old] : llvm::zip(stateOut, tiedTo))
      value = e.select(
          e.broadcast(finite, e.typeOf(value).clone(b.getI1Type()), {}), value,
          old);
    // The scale halves after an overflow and doubles after
    // scale-growth-interval finite steps in a row.
    auto s32 = [&](double v) { return e.splat(stepType, v); };
    Value good = e.add(goodArg, s32(1.0));
    Value grow = e.cmp(ComparisonDirection::ge, good,
                       s32(static_cast<double>(scaleInterval)));
    Value newScale =
        e.select(finite, e.select(grow, e.scale(scaleArg, 2.0), scaleArg),
                 e.scale(scaleArg, 0.5));
    Value newGood = e.select(finite, e.select(grow, s32(0.0), good), s32(0.0));
    stateOut.append({newScale, newGood});
    tiedTo.append({scaleArg, goodArg});
  }
  unsigned lrIndex = results.size();
  results.push_back(CastOp::create(b, e.loc, stepType, lrT));
  unsigned firstState = results.size();
  results.append(stateOut);

  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  step.setFunctionType(b.getFunctionType(step.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  SmallVector<DictionaryAttr> resultAttrs(firstState, b.getDictionaryAttr({}));
  resultAttrs[lrIndex] = b.getDictionaryAttr(
      b.getNamedAttr(AnvilDialect::kMetricAttrName, b.getStringAttr("lr")));
  for (BlockArgument arg : tiedTo)
    resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        AnvilDialect::kTiedAttrName, b.getI64IntegerAttr(arg.getArgNumber()))));
  step.setAllResultAttrs(resultAttrs);
  eraseDeadOps(step);

  // 5. Evaluation reads buffers and never updates them.
  if (!bufferUpdates.empty()) {
    useRunningStatistics(forward);
    auto fret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    llvm::BitVector drop(forward.getNumResults());
    SmallVector<Value> kept;
    for (unsigned r = 0, e = forward.getNumResults(); r < e; ++r) {
      if (bufferUpdates.count(r))
        drop.set(r);
      else
        kept.push_back(fret.getOperand(r));
    }
    fret->setOperands(kept);
    if (failed(forward.eraseResults(drop)))
      return fail("could not drop the buffer updates of @" + function);
    eraseDeadOps(forward);
  }
}

} // namespace
