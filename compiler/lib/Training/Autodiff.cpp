//===- Autodiff.cpp - reverse-mode differentiation of forward graphs ------===//
//
// 1. Clone @f into @f_grad.
// 2. Activity: the trainable parameters (and float inputs with wrt-inputs)
//    are active; a float result of an op with an active operand is active,
//    unless the op is stop_gradient or NonDifferentiable.
// 3. Seed dL/dL = 1 and walk the ops backwards, calling each active op's
//    VJP rule at the end of the block; sum gradients of values used twice.
// 4. Return (loss, gradients...) with `anvil.grad` naming each gradient.
//
//===----------------------------------------------------------------------===//

#include "anvil/Training/Autodiff.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILAUTODIFFPASS
#include "anvil/Training/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

} // namespace

FailureOr<Gradients> mlir::anvil::differentiate(func::FuncOp fn, bool wrtInputs,
                                                Value seed) {
  Gradients result;
  SmallVectorImpl<Value> &gradients = result.grads;
  SmallVectorImpl<std::string> &names = result.names;
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("anvil-autodiff: @")
           << fn.getName() << " must have a single block";
  Block &block = fn.getBody().front();
  for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
    auto t = dyn_cast<RankedTensorType>(type);
    if (!t || !t.hasStaticShape())
      return fn.emitError("anvil-autodiff: argument #")
             << i << " has type " << type
             << "; differentiation needs statically shaped tensors";
  }
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  if (ret.getNumOperands() < 1)
    return ret.emitError("anvil-autodiff: the function returns no loss");
  Value loss = result.loss = ret.getOperand(0);
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType())) {
    Operation *at = loss.getDefiningOp() ? loss.getDefiningOp() : ret;
    return at->emitError("anvil-autodiff: the loss (the first result, from '")
           << at->getName() << "') must be a float scalar tensor, got "
           << loss.getType();
  }

  // 1. Which arguments we differentiate with respect to.
  SmallVector<BlockArgument> wrt;
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto p =
            fn.getArgAttrOfType<ParamAttr>(i, AnvilDialect::kParamAttrName)) {
      if (p.getTrainable() && isFloatTensor(arg)) {
        wrt.push_back(arg);
        names.push_back(p.getName().str());
      }
    } else if (auto in = fn.getArgAttrOfType<InputAttr>(
                   i, AnvilDialect::kInputAttrName)) {
      if (wrtInputs && isFloatTensor(arg)) {
        wrt.push_back(arg);
        names.push_back(in.getName().str());
      }
    }
  }

  // 2. Activity, forward.
  llvm::DenseSet<Value> active(wrt.begin(), wrt.end());
  for (Operation &op : block.without_terminator()) {
    if (isa<StopGradientOp>(op) ||
        op.hasTrait<OpTrait::anvil::NonDifferentiable>())
      continue;
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    for (Value r : op.getResults())
      if (isFloatTensor(r))
        active.insert(r);
  }

  // 3. Backward, from dL/dL = 1.
  OpBuilder b(ret);
  llvm::DenseMap<Value, Value> grads;
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(b, g.getLoc(), it->second, g);
  };
  if (active.contains(loss)) {
    Attribute one = b.getFloatAttr(lossType.getElementType(), 1.0);
    accumulate(
        loss, seed ? seed
                   : ConstantOp::create(b, ret.getLoc(), lossType,
                                        SplatElementsAttr::get(lossType, one)));
  }
  SmallVector<Operation *> forwardOps;
  for (Operation &op : block.without_terminator())
    forwardOps.push_back(&op);
  for (Operation *op : llvm::reverse(forwardOps)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value g = active.contains(r) ? grads.lookup(r) : Value();
      resultGrads.push_back(g);
      any |= static_cast<bool>(g);
    }
    if (!any)
      continue;
    auto vjp = dyn_cast<VJPOpInterface>(op);
    if (!vjp)
      return op->emitError("anvil-autodiff: '")
             << op->getName()
             << "' has no VJP rule, so the loss cannot be differentiated "
                "through it";
    SmallVector<Value> operandGrads;
    b.setInsertionPoint(ret);
    if (failed(vjp.buildVJP(b, resultGrads, operandGrads)))
      return failure();
    assert(operandGrads.size() == op->getNumOperands() &&
           "a VJP rule must give one entry per operand");
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
      if (g && active.contains(operand))
        accumulate(operand, g);
  }

  // 4. The gradients, zeros where the loss does not depend on an argument.
  b.setInsertionPoint(ret);
  for (BlockArgument arg : wrt) {
    Value g = grads.lookup(arg);
    if (!g) {
      auto t = cast<RankedTensorType>(arg.getType());
      g = ConstantOp::create(
          b, ret.getLoc(), t,
          SplatElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
    }
    gradients.push_back(g);
  }
  result.wrt = wrt;
  return result;
}

void mlir::anvil::eraseDeadOps(func::FuncOp fn) {
  SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

namespace {

struct AnvilAutodiffPass
    : public anvil::impl::AnvilAutodiffPassBase<AnvilAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    if (!fn) {
      module.emitError("anvil-autodiff: no function @") << function;
      return signalPassFailure();
    }
    std::string gradName = function + "_grad";
    if (module.lookupSymbol(gradName)) {
      fn.emitError("anvil-autodiff: @") << gradName << " exists already";
      return signalPassFailure();
    }
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(fn);
    auto grad = cast<func::FuncOp>(b.clone(*fn));
    grad.setSymName(gradName);

    FailureOr<Gradients> result = differentiate(grad, wrtInputs);
    if (failed(result)) {
      grad.erase();
      return signalPassFailure();
    }
    SmallVector<Value> &gradients = result->grads;
    SmallVector<std::string> &names = result->names;
    auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
    SmallVector<Value> results{ret.getOperand(0)};
    results.append(gradients);
    b.setInsertionPoint(ret);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    grad.setFunctionType(b.getFunctionType(grad.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    SmallVector<DictionaryAttr> resultAttrs{b.getDictionaryAttr({})};
    for (const std::string &name : names)
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(AnvilDialect::kGradAttrName, b.getStringAttr(name))));
    grad.setAllResultAttrs(resultAttrs);
    eraseDeadOps(grad);
  }
};

} // namespace

llvm::DenseSet<Operation *> mlir::anvil::lossForwardOps(func::FuncOp fn) {
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  llvm::DenseSet<Operation *> forward;
  SmallVector<Value> work = {ret.getOperand(0)};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !forward.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return forward;
}
