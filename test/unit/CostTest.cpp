//===- CostTest.cpp - cost interface against the textbook formulas --------===//
//
// Parses small anvil functions and checks CostOpInterface: matmul
// (2 M N K per batch), convolution (2 N Cout Hout Wout Cin/g Kh Kw),
// attention (4 B H Tq Tk D, causal counting only visible pairs), and the
// bytes every op moves.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace mlir::anvil;

namespace {

class CostTest : public ::testing::Test {
protected:
  CostTest() { context.loadDialect<AnvilDialect, func::FuncDialect>(); }

  /// Parses `body` (one op producing %r from arguments %a, %b, ...) inside a
  /// function and returns the cost interface of its first anvil op.
  CostOpInterface parseOp(const std::string &signature, const std::string &body,
                          const std::string &resultType) {
    std::string source = "func.func @f(" + signature + ") -> " + resultType +
                         " {\n  " + body + "\n  return %r : " + resultType +
                         "\n}\n";
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << "failed to parse:\n" << source;
    if (!module)
      return nullptr;
    CostOpInterface found;
    module->walk([&](CostOpInterface op) {
      if (!found)
        found = op;
    });
    return found;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(CostTest, MatmulIsTwoMNKPerBatch) {
  // GPT-2 MLP up-projection: (B=8, T=128, C=768) x (768, 3072).
  auto op = parseOp("%a: tensor<8x128x768xf32>, %b: tensor<768x3072xf32>",
                    "%r = anvil.matmul %a, %b : (tensor<8x128x768xf32>, "
                    "tensor<768x3072xf32>) -> tensor<8x128x3072xf32>",
                    "tensor<8x128x3072xf32>");
  ASSERT_TRUE(op);
  const int64_t m = 8 * 128, n = 3072, k = 768;
  EXPECT_EQ(op.getFlops(), 2 * m * n * k);
  EXPECT_EQ(op.getBytesMoved(), 4 * (m * k + k * n + m * n));
}

TEST_F(CostTest, BatchedMatmulWithTransposedLhs) {
  // (4, K=16, M=32)^T x (4, K=16, N=8) -> (4, 32, 8) in bf16.
  auto op = parseOp("%a: tensor<4x16x32xbf16>, %b: tensor<4x16x8xbf16>",
                    "%r = anvil.matmul %a, %b {transpose_lhs} : "
                    "(tensor<4x16x32xbf16>, tensor<4x16x8xbf16>) -> "
                    "tensor<4x32x8xbf16>",
                    "tensor<4x32x8xbf16>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 2 * 4 * 32 * 8 * 16);
  EXPECT_EQ(op.getBytesMoved(), 2 * (4 * 16 * 32 + 4 * 16 * 8 + 4 * 32 * 8));
}

TEST_F(CostTest, Conv2dIsTwoNCoutHWCinKhKw) {
  // ResNet-50 stem: 7x7 stride 2 pad 3, 3 -> 64 channels, with bias.
  auto op = parseOp(
      "%a: tensor<2x3x224x224xf32>, %b: tensor<64x3x7x7xf32>, "
      "%c: tensor<64xf32>",
      "%r = anvil.conv %a, %b, %c stride [2, 2] pad_low [3, 3] "
      "pad_high [3, 3] dilation [1, 1] : (tensor<2x3x224x224xf32>, "
      "tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<2x64x112x112xf32>",
      "tensor<2x64x112x112xf32>");
  ASSERT_TRUE(op);
  const int64_t outputs = 2LL * 64 * 112 * 112;
  EXPECT_EQ(op.getFlops(), 2 * outputs * 3 * 7 * 7 + outputs);
}

TEST_F(CostTest, GroupedConv3dDividesInputChannels) {
  // 3-D depthwise-style conv: 32 channels in 4 groups, 3x3x3, no bias.
  auto op =
      parseOp("%a: tensor<1x32x8x8x8xf32>, %b: tensor<32x8x3x3x3xf32>",
              "%r = anvil.conv %a, %b stride [1, 1, 1] pad_low [1, 1, 1] "
              "pad_high [1, 1, 1] dilation [1, 1, 1] {groups = 4 : i64} : "
              "(tensor<1x32x8x8x8xf32>, tensor<32x8x3x3x3xf32>) -> "
              "tensor<1x32x8x8x8xf32>",
              "tensor<1x32x8x8x8xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 2LL * (32 * 8 * 8 * 8) * (32 / 4) * 27);
}

TEST_F(CostTest, AttentionIsFourBHTTD) {
  // Non-causal self-attention, B=2, H=12, T=128, D=64: 4 B H T^2 D.
  auto op =
      parseOp("%a: tensor<2x12x128x64xf32>, %b: tensor<2x12x128x64xf32>, "
              "%c: tensor<2x12x128x64xf32>",
              "%r = anvil.attention %a, %b, %c : (tensor<2x12x128x64xf32>, "
              "tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>) -> "
              "tensor<2x12x128x64xf32>",
              "tensor<2x12x128x64xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 4LL * 2 * 12 * 128 * 128 * 64);
  EXPECT_EQ(op.getBytesMoved(), 4LL * 4 * (2 * 12 * 128 * 64));
}

TEST_F(CostTest, CausalGroupedQueryAttentionCountsVisiblePairs) {
  // GQA (32 query heads, 8 kv heads), causal, T=1024, D=128: the visible
  // pairs are T (T + 1) / 2, about half of the 4 B H T^2 D of full attention.
  auto op =
      parseOp("%a: tensor<1x32x1024x128xbf16>, %b: tensor<1x8x1024x128xbf16>, "
              "%c: tensor<1x8x1024x128xbf16>",
              "%r = anvil.attention %a, %b, %c {causal} : "
              "(tensor<1x32x1024x128xbf16>, tensor<1x8x1024x128xbf16>, "
              "tensor<1x8x1024x128xbf16>) -> tensor<1x32x1024x128xbf16>",
              "tensor<1x32x1024x128xbf16>");
  ASSERT_TRUE(op);
  const int64_t pairs = 1024LL * 1025 / 2;
  EXPECT_EQ(op.getFlops(), 4LL * 32 * pairs * 128);
}

TEST_F(CostTest, CrossAttentionWithLongerKeys) {
  // Causal with Tk > Tq aligns at the bottom right: query i sees i + Tk - Tq
  // + 1 keys. Tq = 2, Tk = 5: 4 + 5 = 9 pairs.
  auto op = parseOp(
      "%a: tensor<1x1x2x4xf32>, %b: tensor<1x1x5x4xf32>, "
      "%c: tensor<1x1x5x6xf32>",
      "%r = anvil.attention %a, %b, %c {causal} : (tensor<1x1x2x4xf32>, "
      "tensor<1x1x5x4xf32>, tensor<1x1x5x6xf32>) -> tensor<1x1x2x6xf32>",
      "tensor<1x1x2x6xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 2LL * 9 * (4 + 6));
}

TEST_F(CostTest, ElementwiseUsesPerElementCount) {
  auto op =
      parseOp("%a: tensor<4x8xf32>, %b: tensor<4x8xf32>",
              "%r = anvil.add %a, %b : tensor<4x8xf32>", "tensor<4x8xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 32);
  EXPECT_EQ(op.getBytesMoved(), 3 * 32 * 4);
}

TEST_F(CostTest, ByteSizesOfNarrowTypes) {
  // i1 and the 8-bit floats take one byte per element.
  auto op = parseOp("%a: tensor<16xf8E4M3FN>, %b: tensor<16xf8E4M3FN>",
                    "%r = anvil.compare lt, %a, %b : tensor<16xf8E4M3FN>",
                    "tensor<16xi1>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getBytesMoved(), 3 * 16);
}

TEST_F(CostTest, GathersCountOnlyTheRowsTheyRead) {
  // GPT-2's token embedding: reading 8x128 rows of a 50257x768 table moves
  // the indices, the rows read and the result written, not the table.
  auto op = parseOp("%a: tensor<50257x768xf32>, %b: tensor<8x128xi32>",
                    "%r = anvil.embedding %a[%b] : (tensor<50257x768xf32>, "
                    "tensor<8x128xi32>) -> tensor<8x128x768xf32>",
                    "tensor<8x128x768xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 0);
  EXPECT_EQ(op.getBytesMoved(), 8 * 128 * 4 + 2 * (8 * 128 * 768 * 4));
}

TEST_F(CostTest, EmbeddingBagReadsEveryBagMember) {
  // 64 bags of 3 rows of width 16: 64*3*16 adds; reads 64*3 rows.
  auto op = parseOp("%a: tensor<1000x16xf32>, %b: tensor<64x3xi64>",
                    "%r = anvil.embedding_bag mean %a[%b] : "
                    "(tensor<1000x16xf32>, tensor<64x3xi64>) -> "
                    "tensor<64x16xf32>",
                    "tensor<64x16xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 64 * 3 * 16 + 64 * 16);
  EXPECT_EQ(op.getBytesMoved(), 64 * 3 * 8 + 64 * 3 * 16 * 4 + 64 * 16 * 4);
}

TEST_F(CostTest, SliceMovesItsResultTwice) {
  auto op = parseOp("%a: tensor<100x100xf32>",
                    "%r = anvil.slice %a [0:10:1, 0:100:10] : "
                    "tensor<100x100xf32> -> tensor<10x10xf32>",
                    "tensor<10x10xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getBytesMoved(), 2 * 10 * 10 * 4);
}

} // namespace
