//===- FP8.cpp - chosen GEMMs through FP8 quantization --------------------===//
//
// y = x w  becomes  y' = q_bwd(q_fwd(x) q_fwd(w)), where q_fwd quantizes to
// E4M3 with current scaling and q_bwd quantizes the gradient to E5M2; the
// training step built from the result runs the backward GEMMs on E5M2
// gradients and E4M3 operands (anvil.fp8_quantize's VJP).
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILFP8PASS
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
    if (recipe != "current") {
      getOperation().emitError("anvil-fp8: recipe '")
          << recipe
          << "' is not implemented yet (current is; delayed and mxfp8 "
             "are to come)";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto e4m3 = TypeAttr::get(Float8E4M3FNType::get(ctx));
    auto e5m2 = TypeAttr::get(Float8E5M2Type::get(ctx));
    StringAttr axis =
        amaxAxis.empty() ? StringAttr() : StringAttr::get(ctx, amaxAxis);
    auto chosen = [&](MatmulOp op) {
      StringRef path = modulePathOf(op.getLoc());
      if (modules.empty())
        return inNumberedBlock(path);
      return llvm::any_of(
          modules, [&](const std::string &m) { return isInModule(path, m); });
    };
    getOperation().walk([&](MatmulOp op) {
      if (!chosen(op) || !isa<Float32Type>(op.getType().getElementType()))
        return;
      OpBuilder b(op);
      Location loc = op.getLoc();
      for (OpOperand &operand : op->getOpOperands())
        operand.set(Fp8QuantizeOp::create(b, loc, operand.get(), e4m3,
                                          TypeAttr(), axis));
      b.setInsertionPointAfter(op);
      auto gradient =
          Fp8QuantizeOp::create(b, loc, op.getResult(), TypeAttr(), e5m2, axis);
      op.getResult().replaceAllUsesExcept(gradient, gradient);
      op->setAttr(AnvilDialect::kFP8AttrName, b.getStringAttr(recipe));
    });
  }
};

} // namespace
