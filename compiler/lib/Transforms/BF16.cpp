//===- BF16.cpp - GEMMs in bf16 with f32 master weights -------------------===//
//
// anvil-bf16: y = x w  becomes  y = f32(bf16(x) bf16(w)), the matmul on
// bf16 operands accumulating in f32 and rounding its product to bf16
// (anvil.matmul's contract for bf16). The training step built from the
// result is mixed precision as automatic mixed precision makes it: the
// casts' VJPs round each GEMM's output gradient to bf16 and widen its
// input gradients back, so the backward GEMMs (dX = dY W^T, dW = X^T dY)
// read bf16 operands too; the parameters, the sums of gradients and the
// optimizer state stay f32, as does every op that is not a GEMM.
//
//===----------------------------------------------------------------------===//

#include "anvil/Transforms/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILBF16PASS
#include "anvil/Transforms/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;
using namespace mlir::anvil;

namespace {

struct AnvilBF16Pass : mlir::anvil::impl::AnvilBF16PassBase<AnvilBF16Pass> {
  using Base::Base;

  void runOnOperation() override {
    auto inModules = [&](Operation *op) {
      if (modules.empty())
        return true;
      StringRef path = modulePathOf(op->getLoc());
      return llvm::any_of(
          modules, [&](const std::string &m) { return isInModule(path, m); });
    };
    auto chosen = [&](MatmulOp op) {
      if (!op.getType().getElementType().isF32() ||
          op->hasAttr(AnvilDialect::kFP8AttrName) ||
          op.getLhs().getDefiningOp<Fp8QuantizeOp>() ||
          op.getRhs().getDefiningOp<Fp8QuantizeOp>())
        return false; // not f32, or an FP8 GEMM
      return inModules(op);
    };
    SmallVector<MatmulOp> gemms;
    getOperation().walk([&](MatmulOp op) {
      if (chosen(op))
        gemms.push_back(op);
    });
    // Attention's products (scores, the probabilities times the values, and
    // their gradients) run in bf16 inside the op, its softmax in f32.
    getOperation().walk([&](AttentionOp op) {
      if (op.getType().getElementType().isF32() && inModules(op))
        op.setBf16Gemms(true);
    });

    // A cast per GEMM operand, not one per value: each cast's VJP widens
    // its GEMM's input gradient to f32 before autodiff sums the gradients
    // of a value several GEMMs read (Llama's gate and up projections), so
    // the sums are f32. The cse after autodiff merges the forward casts.
    auto bf16 = BFloat16Type::get(&getContext());
    for (MatmulOp op : gemms) {
      OpBuilder b(op);
      auto narrow = [&](Value v) {
        return CastOp::create(
            b, op.getLoc(), cast<RankedTensorType>(v.getType()).clone(bf16), v);
      };
      Value lhs = narrow(op.getLhs()), rhs = narrow(op.getRhs());
      auto product = MatmulOp::create(
          b, op.getLoc(), lhs, rhs, op.getTransposeLhs(), op.getTransposeRhs());
      op.replaceAllUsesWith(
          CastOp::create(b, op.getLoc(), op.getType(), product).getResult());
      op.erase();
    }
  }
};

} // namespace
