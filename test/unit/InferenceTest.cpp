//===- InferenceTest.cpp - building anvil ops from C++ with inferred types ===//
//
// Frontends build graphs through the generated `OpTy::create` builders and
// rely on result-type inference. These tests build ops without result types
// and check what was inferred, and that the built IR verifies.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::anvil;

namespace {

class InferenceTest : public ::testing::Test {
protected:
  InferenceTest() : builder(&context), loc(builder.getUnknownLoc()) {
    context.loadDialect<AnvilDialect, func::FuncDialect>();
    module = ModuleOp::create(loc);
  }

  /// Starts a function with the given argument types; ops are built into it.
  ValueRange startFunction(ArrayRef<Type> argTypes) {
    builder.setInsertionPointToEnd(module->getBody());
    auto fn = func::FuncOp::create(builder, loc, "f",
                                   builder.getFunctionType(argTypes, {}));
    Block *body = fn.addEntryBlock();
    builder.setInsertionPointToEnd(body);
    return body->getArguments();
  }

  /// Closes the function and verifies the module.
  bool finishAndVerify() {
    func::ReturnOp::create(builder, loc);
    return succeeded(verify(*module));
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  RankedTensorType i64(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getI64Type());
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc;
  OwningOpRef<ModuleOp> module;
};

TEST_F(InferenceTest, MatmulWithSharedWeightsAndTranspose) {
  ValueRange args = startFunction({f32({8, 16, 32}), f32({64, 32})});
  auto mm = MatmulOp::create(builder, loc, args[0], args[1],
                             /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  EXPECT_EQ(mm.getType(), f32({8, 16, 64}));
  EXPECT_TRUE(finishAndVerify());
}

TEST_F(InferenceTest, CompareGivesBoolAndArgmaxGivesI64) {
  ValueRange args = startFunction({f32({4, 10}), f32({4, 10})});
  auto cmp = CompareOp::create(builder, loc, ComparisonDirection::lt, args[0],
                               args[1]);
  EXPECT_EQ(cmp.getType(), RankedTensorType::get({4, 10}, builder.getI1Type()));
  auto am = ArgmaxOp::create(builder, loc, args[0], /*dim=*/1,
                             /*keep_dims=*/false);
  EXPECT_EQ(am.getType(), i64({4}));
  EXPECT_TRUE(finishAndVerify());
}

TEST_F(InferenceTest, SplitHasOneResultPerSize) {
  ValueRange args = startFunction({f32({2, 8, 96})});
  auto split = SplitOp::create(builder, loc, args[0], /*dim=*/2,
                               ArrayRef<int64_t>{32, 32, 32});
  ASSERT_EQ(split.getNumResults(), 3u);
  for (Value v : split.getResults())
    EXPECT_EQ(v.getType(), f32({2, 8, 32}));
  EXPECT_TRUE(finishAndVerify());
}

TEST_F(InferenceTest, GroupedQueryAttention) {
  ValueRange args = startFunction(
      {f32({2, 8, 16, 64}), f32({2, 2, 16, 64}), f32({2, 2, 16, 32})});
  auto att = AttentionOp::create(builder, loc, args[0], args[1], args[2],
                                 /*mask=*/Value(), /*causal=*/true,
                                 /*scale=*/nullptr);
  EXPECT_EQ(att.getType(), f32({2, 8, 16, 32}));
  EXPECT_TRUE(finishAndVerify());
}

TEST_F(InferenceTest, StridedConvolutionAndPooling) {
  ValueRange args = startFunction({f32({2, 3, 224, 224}), f32({64, 3, 7, 7})});
  auto conv = ConvOp::create(builder, loc, args[0], args[1], /*bias=*/Value(),
                             ArrayRef<int64_t>{2, 2}, ArrayRef<int64_t>{3, 3},
                             ArrayRef<int64_t>{3, 3}, ArrayRef<int64_t>{1, 1},
                             /*groups=*/1);
  EXPECT_EQ(conv.getType(), f32({2, 64, 112, 112}));
  auto pool = MaxPoolOp::create(
      builder, loc, conv, ArrayRef<int64_t>{3, 3}, ArrayRef<int64_t>{2, 2},
      ArrayRef<int64_t>{1, 1}, ArrayRef<int64_t>{1, 1});
  EXPECT_EQ(pool.getType(), f32({2, 64, 56, 56}));
  EXPECT_TRUE(finishAndVerify());
}

TEST_F(InferenceTest, LossReductions) {
  ValueRange args = startFunction({f32({4, 16, 100}), i64({4, 16})});
  auto mean = CrossEntropyOp::create(builder, loc, Reduction::mean, args[0],
                                     args[1], /*ignore_index=*/-100,
                                     /*label_smoothing=*/llvm::APFloat(0.0));
  EXPECT_EQ(mean.getType(), f32({}));
  auto none = CrossEntropyOp::create(builder, loc, Reduction::none, args[0],
                                     args[1], /*ignore_index=*/-100,
                                     /*label_smoothing=*/llvm::APFloat(0.1));
  EXPECT_EQ(none.getType(), f32({4, 16}));
  EXPECT_TRUE(finishAndVerify());
}

TEST_F(InferenceTest, InferenceFailsSilentlyWithoutLocation) {
  // Builders probe types through inferReturnTypes without a location; a
  // failure must then return failure and emit nothing.
  ValueRange args = startFunction({f32({2, 3}), f32({4, 5})});
  int diagnostics = 0;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &) {
    ++diagnostics;
    return success();
  });
  SmallVector<Type> inferred;
  MatmulOp::Adaptor adaptor(ValueRange{args[0], args[1]});
  EXPECT_TRUE(failed(
      MatmulOp::inferReturnTypes(&context, std::nullopt, adaptor, inferred)));
  EXPECT_EQ(diagnostics, 0);
  // With a location the same failure explains itself.
  EXPECT_TRUE(
      failed(MatmulOp::inferReturnTypes(&context, loc, adaptor, inferred)));
  EXPECT_EQ(diagnostics, 1);
}

} // namespace
