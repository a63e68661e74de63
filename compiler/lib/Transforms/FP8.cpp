//===- FP8.cpp - chosen GEMMs through FP8 quantization --------------------===//
//
// anvil-fp8: y = x w  becomes  y' = q_bwd(q_fwd(x) q_fwd(w)), where q_fwd
// quantizes to E4M3 and q_bwd quantizes the gradient to E5M2; the training
// step built from the result runs the backward GEMMs on E5M2 gradients and
// E4M3 operands (anvil.fp8_quantize's VJP). The recipe picks the scales:
// the current amax (current), an amax history (delayed: the histories are
// named here and become state in anvil-fp8-delayed-scaling, on the
// differentiated step), or power-of-two scales per block of 32 along the
// contraction (mxfp8).
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilEmit.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILFP8PASS
#define GEN_PASS_DEF_ANVILFP8DELAYEDSCALINGPASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

/// Whether `path` is inside a numbered block ("h.3.mlp", "layers.0.x").
bool inNumberedBlock(StringRef path) {
  SmallVector<StringRef> parts;
  path.split(parts, '.');
  return llvm::any_of(parts, [](StringRef p) {
    return !p.empty() && llvm::all_of(p, [](char c) { return isdigit(c); });
  });
}

struct AnvilFP8Pass : mlir::anvil::impl::AnvilFP8PassBase<AnvilFP8Pass> {
  using Base::Base;

  void runOnOperation() override {
    bool delayed = recipe == "delayed", mx = recipe == "mxfp8";
    if (recipe != "current" && !delayed && !mx) {
      getOperation().emitError("anvil-fp8: unknown recipe '")
          << recipe << "' (current, delayed or mxfp8)";
      return signalPassFailure();
    }
    if (mx && blockSize < 1) {
      getOperation().emitError("anvil-fp8: block-size must be positive, got ")
          << blockSize;
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto e4m3 = TypeAttr::get(Float8E4M3FNType::get(ctx));
    auto e5m2 = TypeAttr::get(Float8E5M2Type::get(ctx));
    // MX scales belong to their blocks: nothing to reduce over the ranks.
    StringAttr axis =
        amaxAxis.empty() || mx ? StringAttr() : StringAttr::get(ctx, amaxAxis);
    auto chosen = [&](MatmulOp op) {
      StringRef path = modulePathOf(op.getLoc());
      if (modules.empty())
        return inNumberedBlock(path);
      return llvm::any_of(
          modules, [&](const std::string &m) { return isInModule(path, m); });
    };
    IntegerAttr size = mx ? IntegerAttr::get(IntegerType::get(ctx, 64),
                                             static_cast<int64_t>(blockSize))
                          : IntegerAttr();
    // The blocks of one quantization: along `dim` of `value`, which they
    // must divide.
    auto blocksAlong = [&](MatmulOp op, Value value, int64_t dim,
                           StringRef role) -> FailureOr<IntegerAttr> {
      if (!mx)
        return IntegerAttr();
      auto type = cast<RankedTensorType>(value.getType());
      if (type.isDynamicDim(dim) || type.getDimSize(dim) % blockSize != 0) {
        op.emitError("anvil-fp8: mxfp8 blocks of ")
            << static_cast<int64_t>(blockSize) << " do not divide the " << role
            << "'s contraction dimension " << dim << " (size "
            << type.getDimSize(dim) << ", " << type << ") of the GEMM '"
            << modulePathOf(op.getLoc()) << "'";
        return failure();
      }
      return IntegerAttr::get(IntegerType::get(ctx, 64), dim);
    };
    // Each quantization's history: the GEMM's path and the tensor's role.
    auto historyOf = [&](MatmulOp op, StringRef role) {
      if (!delayed)
        return StringAttr();
      StringRef path = modulePathOf(op.getLoc());
      return StringAttr::get(ctx, (path.empty() ? "gemm" : path) + "." + role);
    };
    WalkResult walk = getOperation().walk([&](MatmulOp op) {
      if (!chosen(op) || !isa<Float32Type>(op.getType().getElementType()))
        return WalkResult::advance();
      OpBuilder b(op);
      Location loc = op.getLoc();
      int64_t lhsRank = op.getLhs().getType().getRank();
      int64_t rhsRank = op.getRhs().getType().getRank();
      // The contraction dimension K of each operand, and N of the result.
      int64_t lhsK = op.getTransposeLhs() ? lhsRank - 2 : lhsRank - 1;
      int64_t rhsK = op.getTransposeRhs() ? rhsRank - 1 : rhsRank - 2;
      FailureOr<IntegerAttr> lhsDim, rhsDim, outDim;
      if (failed(lhsDim = blocksAlong(op, op.getLhs(), lhsK, "input")) ||
          failed(rhsDim = blocksAlong(op, op.getRhs(), rhsK, "weight")) ||
          failed(outDim =
                     blocksAlong(op, op.getResult(), op.getType().getRank() - 1,
                                 "output gradient")))
        return WalkResult::interrupt();
      auto quantize = [&](Value v, TypeAttr forward, TypeAttr backward,
                          IntegerAttr dim, StringRef role) {
        return Fp8QuantizeOp::create(b, loc, v, /*scale=*/Value(), forward,
                                     backward, size, dim, axis,
                                     historyOf(op, role));
      };
      op.getLhsMutable().set(
          quantize(op.getLhs(), e4m3, TypeAttr(), *lhsDim, "input"));
      op.getRhsMutable().set(
          quantize(op.getRhs(), e4m3, TypeAttr(), *rhsDim, "weight"));
      b.setInsertionPointAfter(op);
      auto gradient =
          quantize(op.getResult(), TypeAttr(), e5m2, *outDim, "grad_output");
      op.getResult().replaceAllUsesExcept(gradient, gradient);
      op->setAttr(AnvilDialect::kFP8AttrName, b.getStringAttr(recipe));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

struct AnvilFP8DelayedScalingPass
    : mlir::anvil::impl::AnvilFP8DelayedScalingPassBase<
          AnvilFP8DelayedScalingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto fail = [&](const Twine &message) {
      module.emitError("anvil-fp8-delayed-scaling: ") << message;
      signalPassFailure();
    };
    if (historyLength < 1)
      return fail("history-length must be positive, got " +
                  Twine(historyLength));
    bool useMax = amaxCompute == "max";
    if (!useMax && amaxCompute != "most_recent")
      return fail("amax-compute must be max or most_recent, got '" +
                  amaxCompute + "'");
    auto fn = module.lookupSymbol<func::FuncOp>(function);
    if (!fn)
      return fail("the module has no @" + function);

    SmallVector<Fp8QuantizeOp> ops;
    fn.walk([&](Fp8QuantizeOp op) {
      if (op.getHistory() && op.getForward() && !op.getScale())
        ops.push_back(op);
    });
    if (ops.empty())
      return;

    // Every rank keeps the same history: amaxes are reduced over the mesh.
    SmallVector<StringRef> axes;
    if (auto mesh =
            module->getAttrOfType<DictionaryAttr>(AnvilDialect::kMeshAttrName))
      for (NamedAttribute a : mesh)
        if (cast<IntegerAttr>(a.getValue()).getInt() > 1)
          axes.push_back(a.getName().getValue());

    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    SmallVector<Value> results(ret.getOperands());
    SmallVector<unsigned> tiedTo;
    auto zeros = InitializerAttr::get(ctx, InitKind::zeros,
                                      DictionaryAttr::get(ctx, {}));
    auto f32 = Float32Type::get(ctx);
    auto historyType = RankedTensorType::get({historyLength}, f32);
    auto scalar = RankedTensorType::get({}, f32);
    NamedAttrList oneArgs;
    oneArgs.append("value", FloatAttr::get(Float64Type::get(ctx), 1.0));
    auto ones = InitializerAttr::get(ctx, InitKind::constant,
                                     oneArgs.getDictionary(ctx));
    // A state argument at the end (the tied results keep their numbers).
    auto addState = [&](Type type, const std::string &name,
                        InitializerAttr init, Location loc) -> Value {
      unsigned index = fn.getNumArguments();
      auto attrs = DictionaryAttr::get(
          ctx,
          {NamedAttribute(StringAttr::get(ctx, AnvilDialect::kStateAttrName),
                          StateAttr::get(ctx, name, init))});
      if (failed(fn.insertArgument(index, type, attrs, loc)))
        return Value();
      return fn.getArgument(index);
    };
    llvm::StringMap<unsigned> uses;
    for (Fp8QuantizeOp op : ops) {
      std::string name = op.getHistory()->str();
      if (unsigned n = uses[name]++)
        name.append(".").append(std::to_string(n));
      Value history =
          addState(historyType, "fp8.amax_history." + name, zeros, op.getLoc());
      Value previous = addState(scalar, "fp8.scale." + name, ones, op.getLoc());
      if (!history || !previous)
        return fail("could not add the state of " + name);

      OpBuilder b(op);
      Emit e{b, op.getLoc()};
      // The scale from the history.
      Value a = useMax ? Value(ReduceMaxOp::create(b, e.loc, history,
                                                   ArrayRef<int64_t>{0},
                                                   /*keep_dims=*/false))
                       : e.reshape(SliceOp::create(b, e.loc, history,
                                                   b.getDenseI64ArrayAttr({0}),
                                                   b.getDenseI64ArrayAttr({1}),
                                                   b.getDenseI64ArrayAttr({1})),
                                   scalar);
      double largest =
          llvm::APFloat::getLargest(
              cast<FloatType>(*op.getForward()).getFloatSemantics())
              .convertToDouble();
      // Transformer Engine's update: the previous scale stays where the
      // amax is zero or not finite, or the new scale would not be finite
      // (a subnormal amax).
      Value fresh = e.div(e.like(a, std::ldexp(largest, -margin)), a);
      Value positive = e.cmp(ComparisonDirection::gt, a, e.like(a, 0.0));
      Value finite = e.cmp(ComparisonDirection::lt, a, e.like(a, INFINITY));
      Value bounded =
          e.cmp(ComparisonDirection::lt, fresh, e.like(fresh, INFINITY));
      Value scale = e.select(
          positive,
          e.select(finite, e.select(bounded, fresh, previous), previous),
          previous);
      Value keptScale = scale;
      Value x = op.getOperand();
      Type element = e.typeOf(x).getElementType();
      if (element != f32)
        scale = CastOp::create(b, e.loc, scalar.clone(element), scale);
      auto quantized = Fp8QuantizeOp::create(
          b, e.loc, x, scale, op.getForwardAttr(), op.getBackwardAttr(),
          IntegerAttr(), IntegerAttr(), StringAttr(), op.getHistoryAttr());
      op.getResult().replaceAllUsesWith(quantized.getResult());

      // This step's amax joins the history.
      Value amax = ReduceMaxOp::create(
          b, e.loc, AbsOp::create(b, e.loc, x),
          llvm::to_vector(llvm::seq<int64_t>(0, e.typeOf(x).getRank())),
          /*keep_dims=*/false);
      if (element != f32)
        amax = CastOp::create(b, e.loc, scalar, amax);
      for (StringRef axis : axes)
        amax = AllReduceOp::create(b, e.loc, CollectiveOp::max, amax, axis);
      Value newest = e.reshape(amax, RankedTensorType::get({1}, f32));
      Value updated = newest;
      if (historyLength > 1)
        updated = ConcatOp::create(
            b, e.loc,
            ValueRange{
                newest,
                SliceOp::create(b, e.loc, history, b.getDenseI64ArrayAttr({0}),
                                b.getDenseI64ArrayAttr({historyLength - 1}),
                                b.getDenseI64ArrayAttr({1}))},
            0);
      op.erase();
      results.append({updated, keptScale});
      tiedTo.append({cast<BlockArgument>(history).getArgNumber(),
                     cast<BlockArgument>(previous).getArgNumber()});
    }

    // The histories join the step's results, each tied to its argument.
    OpBuilder b(ret);
    unsigned first = ret.getNumOperands();
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    SmallVector<DictionaryAttr> resultAttrs;
    fn.getAllResultAttrs(resultAttrs);
    resultAttrs.resize(first, b.getDictionaryAttr({}));
    for (unsigned arg : tiedTo)
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          AnvilDialect::kTiedAttrName, b.getI64IntegerAttr(arg))));
    fn.setFunctionType(b.getFunctionType(fn.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
    fn.setAllResultAttrs(resultAttrs);
  }
};

} // namespace
