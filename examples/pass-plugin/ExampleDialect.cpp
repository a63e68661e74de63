//===- ExampleDialect.cpp - example.squared_relu: cost, VJP, lowering -----===//
//
// What it takes for a new op to go the whole way through Anvil:
//
// - its FLOPs (Anvil's CostOpInterface: anvil-cost-report and --report),
// - its vector-Jacobian product in anvil ops (VJPOpInterface: anvil-autodiff
//   builds the training step through it),
// - its lowering to linalg (ConvertToLinalgDialectInterface: the patterns
//   join anvil-convert-to-linalg's; fusion, bufferization and the CPU
//   backend then see a plain linalg.generic).
//
//===----------------------------------------------------------------------===//

#include "ExampleDialect.h"

#include "anvil/Conversion/ConvertToLinalgInterface.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace example;

#include "ExampleOpsDialect.cpp.inc"

#define GET_OP_CLASSES
#include "ExampleOps.cpp.inc"

//===- Cost and gradient --------------------------------------------------===//

int64_t SquaredReluOp::getFlops() {
  // max and multiply per element.
  return 2 * anvil::getNumElements(getType());
}

LogicalResult SquaredReluOp::buildVJP(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  if (!dy) {
    operandGrads.push_back(nullptr);
    return success();
  }
  // d/dx max(x, 0)^2 = 2 max(x, 0).
  Location loc = getLoc();
  Value relu = anvil::ReluOp::create(builder, loc, getInput());
  Value twice = anvil::AddOp::create(builder, loc, relu, relu);
  operandGrads.push_back(anvil::MulOp::create(builder, loc, twice, dy));
  return success();
}

//===- Lowering -----------------------------------------------------------===//

namespace {
/// example.squared_relu -> one elementwise linalg.generic, which anvil-fuse
/// can merge with its neighbours like any other.
struct LowerSquaredRelu : OpRewritePattern<SquaredReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SquaredReluOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    Location loc = op.getLoc();
    Value init =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), element);
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{op.getInput()},
        ValueRange{init}, ArrayRef<AffineMap>{identity, identity}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value zero =
              arith::ConstantOp::create(b, l, b.getFloatAttr(element, 0.0));
          Value relu = arith::MaximumFOp::create(b, l, args[0], zero);
          Value square = arith::MulFOp::create(b, l, relu, relu);
          linalg::YieldOp::create(b, l, square);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct ExampleToLinalg : anvil::ConvertToLinalgDialectInterface {
  using ConvertToLinalgDialectInterface::ConvertToLinalgDialectInterface;
  void
  populateConvertToLinalgPatterns(RewritePatternSet &patterns) const override {
    patterns.add<LowerSquaredRelu>(patterns.getContext());
  }
};
} // namespace

void ExampleDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ExampleOps.cpp.inc"
      >();
  addInterfaces<ExampleToLinalg>();
}
