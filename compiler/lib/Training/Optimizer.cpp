//===- Optimizer.cpp - @train_step: forward, backward, update -------------===//
//
// 1. Clone @forward into @train_step and differentiate it.
// 2. Insert the optimizer state (per trainable parameter) and the step
//    counter as zero-initialized `anvil.state` arguments after the
//    parameters.
// 3. From t = step + 1 compute the learning rate (warm-up, decay), clip
//    the gradients by their global norm, and apply the update rule.
// 4. Return (loss, new params, new state, t), each state result tied to the
//    argument it replaces.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilEmit.h"
#include "anvil/Training/Autodiff.h"
#include "anvil/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

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

  auto forward = module.lookupSymbol<func::FuncOp>(function);
  if (!forward)
    return fail("no function @" + function);
  if (module.lookupSymbol("train_step"))
    return fail("@train_step exists already");
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(forward);
  auto step = cast<func::FuncOp>(b.clone(*forward));
  step.setSymName("train_step");
  FailureOr<Gradients> grads = differentiate(step, /*wrtInputs=*/false);
  if (failed(grads)) {
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
  auto addState = [&](Type type, const std::string &name, Location loc) {
    auto attrs = b.getDictionaryAttr(b.getNamedAttr(
        AnvilDialect::kStateAttrName, StateAttr::get(ctx, name, zeros)));
    step.insertArgument(insertAt, type, attrs, loc);
    return step.getArgument(insertAt++);
  };
  bool useMomentum = momentum > 0;
  SmallVector<SmallVector<BlockArgument>> states;
  for (auto [param, name] : llvm::zip(grads->wrt, grads->names)) {
    SmallVector<BlockArgument> s;
    for (StringRef suffix : stateNames(*kind, useMomentum))
      s.push_back(
          addState(param.getType(),
                   ("opt." + optimizer + "." + suffix + "." + name).str(),
                   param.getLoc()));
    states.push_back(s);
  }
  // The step counter is f32 (exact to 2^24 steps); the schedule and the
  // scalar factors are computed in f64 and rounded once per parameter.
  auto stepType = RankedTensorType::get({}, b.getF32Type());
  auto scalarType = RankedTensorType::get({}, b.getF64Type());
  BlockArgument stepArg = addState(stepType, "step", step.getLoc());

  // 3. Schedule and clipping.
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
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

  SmallVector<Value> g(grads->grads.begin(), grads->grads.end());
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
    for (Value gi : g)
      total = e.add(total, norm2(gi));
    Value coef =
        MinOp::create(b, e.loc, scalar(1.0),
                      e.div(scalar(clip), e.add(SqrtOp::create(b, e.loc, total),
                                                scalar(1e-6))));
    for (Value &gi : g)
      gi = e.mul(gi, fullOf(coef, e.typeOf(gi)));
  }

  // 4. Updates. `full(s)` broadcasts an f32 scalar to a parameter's type.
  SmallVector<Value> results{grads->loss};
  SmallVector<BlockArgument> tiedTo;
  SmallVector<std::pair<Value, BlockArgument>> stateResults;
  Value b1t = PowOp::create(b, e.loc, scalar(beta1), t);
  Value b2t = PowOp::create(b, e.loc, scalar(beta2), t);
  for (auto [i, p] : llvm::enumerate(grads->wrt)) {
    auto type = cast<RankedTensorType>(p.getType());
    auto full = [&](Value s) { return fullOf(s, type); };
    auto c = [&](double v) { return e.splat(type, v); };
    bool decayed = weightDecay > 0 && (decayAll || type.getRank() >= 2);
    Value gi = g[i], pi = p, lrFull = full(lrT);
    Value newP;
    SmallVector<Value> newState;
    switch (*kind) {
    case Kind::SGD: {
      if (decayed)
        gi = e.add(gi, e.scale(pi, weightDecay));
      Value d = gi;
      if (useMomentum) {
        Value buf = e.add(e.scale(states[i][0], momentum), gi);
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
      Value m = e.add(e.scale(states[i][0], beta1), e.scale(gi, 1 - beta1));
      Value v = e.add(e.scale(states[i][1], beta2),
                      e.scale(e.mul(gi, gi), 1 - beta2));
      newState.append({m, v});
      Value mHat = e.div(m, full(e.sub(scalar(1.0), b1t)));
      Value vHat = e.div(v, full(e.sub(scalar(1.0), b2t)));
      Value update = e.div(mHat, e.add(SqrtOp::create(b, e.loc, vHat), c(eps)));
      if (*kind == Kind::LAMB) {
        if (decayed)
          update = e.add(update, e.scale(pi, weightDecay));
        Value pn = SqrtOp::create(b, e.loc, norm2(pi));
        Value rn = SqrtOp::create(b, e.loc, norm2(update));
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
      Value sum = e.add(states[i][0], e.mul(gi, gi));
      newState.push_back(sum);
      newP = e.sub(
          pi, e.mul(lrFull,
                    e.div(gi, e.add(SqrtOp::create(b, e.loc, sum), c(eps)))));
      break;
    }
    }
    results.push_back(newP);
    tiedTo.push_back(p);
    for (auto [value, arg] : llvm::zip(newState, states[i]))
      stateResults.push_back({value, arg});
  }
  for (auto [value, arg] : stateResults) {
    results.push_back(value);
    tiedTo.push_back(arg);
  }
  results.push_back(nextStep);
  tiedTo.push_back(stepArg);

  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  step.setFunctionType(b.getFunctionType(step.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  SmallVector<DictionaryAttr> resultAttrs{b.getDictionaryAttr({})};
  for (BlockArgument arg : tiedTo)
    resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        AnvilDialect::kTiedAttrName, b.getI64IntegerAttr(arg.getArgNumber()))));
  step.setAllResultAttrs(resultAttrs);
}

} // namespace
