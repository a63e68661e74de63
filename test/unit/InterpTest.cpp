//===- InterpTest.cpp - the reference interpreter against hand computation
//-===//
//
// Every anvil op evaluated on small inputs whose results were worked out by
// hand (the comments show the arithmetic), including broadcasting, odd
// shapes, grouped convolutions, causal and grouped-query attention and
// ignored labels; plus rounding to the narrow float types and the errors.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Interp/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace ::anvil::interp;

namespace {

/// Absolute tolerance for float64 results of a handful of operations.
constexpr double kTol = 1e-12;

class InterpTest : public ::testing::Test {
protected:
  InterpTest() {
    context.loadDialect<mlir::anvil::AnvilDialect, func::FuncDialect>();
  }

  /// Runs `func.func @f(<signature>) -> (<results>) { <body> }`.
  FailureOr<std::vector<Buffer>>
  run(const std::string &signature, const std::string &results,
      const std::string &body, std::vector<Buffer> args, Options options = {}) {
    std::string source = "func.func @f(" + signature + ") -> (" + results +
                         ") {\n" + body + "\n}\n";
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module) {
      ADD_FAILURE() << "does not parse:\n" << source;
      return failure();
    }
    auto fn = *module->getOps<FunctionOpInterface>().begin();
    return ::anvil::interp::run(fn, args, options);
  }

  /// Like run, for a single result that must succeed.
  Buffer run1(const std::string &signature, const std::string &result,
              const std::string &body, std::vector<Buffer> args,
              Options options = {}) {
    auto out = run(signature, result, body, std::move(args), options);
    if (failed(out) || out->size() != 1) {
      ADD_FAILURE() << "evaluation failed";
      return Buffer();
    }
    return (*out)[0];
  }

  static Buffer B(std::vector<int64_t> shape, std::vector<double> data) {
    Buffer b;
    b.shape = std::move(shape);
    b.data = std::move(data);
    return b;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

void expectNear(const Buffer &b, std::vector<int64_t> shape,
                std::vector<double> expected, double tol = kTol) {
  EXPECT_EQ(b.shape, shape);
  ASSERT_EQ(b.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(b.data[i])) << "element " << i;
    else
      EXPECT_NEAR(b.data[i], expected[i], tol) << "element " << i;
  }
}

TEST_F(InterpTest, EveryOpHasAnEvaluator) {
  Dialect *dialect = context.getLoadedDialect("anvil");
  int ops = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (&name.getDialect() != dialect)
      continue;
    ++ops;
    EXPECT_TRUE(hasEvaluator(name)) << name.getStringRef().str();
  }
  EXPECT_EQ(ops, 82);
}

// A weight's gradient x^T g with its bias's, the sum of g's rows.
TEST_F(InterpTest, MatmulBiasGrad) {
  Buffer x = B({3, 2}, {1, 2, -1, 0.5, 2, 4}),
         g = B({3, 2}, {0.5, -1, 2, 3, -4, 1});
  auto out =
      run("%x: tensor<3x2xf64>, %g: tensor<3x2xf64>",
          "tensor<2x2xf64>, tensor<2xf64>",
          "%dw, %db = anvil.matmul_bias_grad %x, %g : (tensor<3x2xf64>, "
          "tensor<3x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>)\nreturn %dw, "
          "%db : tensor<2x2xf64>, tensor<2xf64>",
          {x, g});
  ASSERT_TRUE(succeeded(out));
  // x^T g: [[0.5 - 2 - 8, -1 - 3 + 2], [1 + 1 - 16, -2 + 1.5 + 4]]
  expectNear((*out)[0], {2, 2}, {-9.5, -2, -14, 3.5});
  expectNear((*out)[1], {2}, {-1.5, 3});
}

// The linear layer with its bias: x w^T + b per column; in bf16 the sum is
// rounded once: 1 + 2^-8 + 2^-9 is 1 + 2^-7, where the product rounded
// first (1 + 2^-8, a tie, to 1) and the bias added would give 1.
TEST_F(InterpTest, Linear) {
  Buffer x = B({2, 2}, {1, -2, 0.5, 3}), w = B({3, 2}, {1, 0.5, 0.25, 1, 2, 0}),
         b = B({3}, {0.5, -1, 4});
  Buffer y =
      run1("%x: tensor<2x2xf64>, %w: tensor<3x2xf64>, %b: tensor<3xf64>",
           "tensor<2x3xf64>",
           "%y = anvil.linear %x, %w, %b {transpose_rhs} : (tensor<2x2xf64>, "
           "tensor<3x2xf64>, tensor<3xf64>) -> tensor<2x3xf64>\nreturn %y : "
           "tensor<2x3xf64>",
           {x, w, b});
  // x w^T = [[1 - 1, 0.25 - 2, 2], [0.5 + 1.5, 0.125 + 3, 1]]
  expectNear(y, {2, 3}, {0.5, -2.75, 6, 2.5, 2.125, 5});
  Options options;
  options.roundResults = true;
  Buffer r = run1(
      "%x: tensor<1x2xbf16>, %w: tensor<2x1xbf16>, %b: tensor<1xbf16>",
      "tensor<1x1xbf16>",
      "%y = anvil.linear %x, %w, %b : (tensor<1x2xbf16>, tensor<2x1xbf16>, "
      "tensor<1xbf16>) -> tensor<1x1xbf16>\nreturn %y : tensor<1x1xbf16>",
      {B({1, 2}, {1, std::ldexp(1.0, -8)}), B({2, 1}, {1, 1}),
       B({1}, {std::ldexp(1.0, -9)})},
      options);
  expectNear(r, {1, 1}, {1 + std::ldexp(1.0, -7)}, 0);
}

// The fused linear layer and its gradients: p = x w + b, the GELU of it
// and its derivative, and the bias's gradient summed over the rows.
TEST_F(InterpTest, LinearGeluAndItsGradients) {
  auto gelu = [](double x) {
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  auto dgelu = [&](double x) { // central differences of gelu
    double h = 1e-6;
    return (gelu(x + h) - gelu(x - h)) / (2 * h);
  };
  Buffer x = B({2, 2}, {1, -2, 0.5, 3}), w = B({2, 2}, {1, 0.5, 0.25, 1}),
         b = B({2}, {0.5, -1});
  // p = x w + b = [[1 - 0.5 + 0.5, 0.5 - 2 - 1],
  //                [0.5 + 0.75 + 0.5, 0.25 + 3 - 1]]
  std::vector<double> p = {1, -2.5, 1.75, 2.25};
  auto out = run("%x: tensor<2x2xf64>, %w: tensor<2x2xf64>, %b: tensor<2xf64>",
                 "tensor<2x2xf64>, tensor<2x2xf64>",
                 "%y, %pre = anvil.linear_gelu %x, %w, %b : (tensor<2x2xf64>, "
                 "tensor<2x2xf64>, tensor<2xf64>) -> (tensor<2x2xf64>, "
                 "tensor<2x2xf64>)\nreturn %y, %pre : tensor<2x2xf64>, "
                 "tensor<2x2xf64>",
                 {x, w, b});
  ASSERT_TRUE(succeeded(out));
  expectNear((*out)[0], {2, 2},
             {gelu(p[0]), gelu(p[1]), gelu(p[2]), gelu(p[3])});
  expectNear((*out)[1], {2, 2}, p);
  // The gradient through `pre` of g = x w^T.
  auto grad = run(
      "%x: tensor<2x2xf64>, %w: tensor<2x2xf64>, %pre: tensor<2x2xf64>",
      "tensor<2x2xf64>, tensor<2xf64>",
      "%d, %db = anvil.matmul_gelu_bias_grad %x, %w, %pre {transpose_rhs} : "
      "(tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>) -> "
      "(tensor<2x2xf64>, tensor<2xf64>)\nreturn %d, %db : tensor<2x2xf64>, "
      "tensor<2xf64>",
      {x, w, B({2, 2}, p)});
  ASSERT_TRUE(succeeded(grad));
  // x w^T = [[1 - 1, 0.25 - 2], [0.5 + 1.5, 0.125 + 3]]
  std::vector<double> g = {0, -1.75, 2, 3.125};
  std::vector<double> d(4);
  for (int i = 0; i < 4; ++i)
    d[i] = g[i] * dgelu(p[i]);
  expectNear((*grad)[0], {2, 2}, d, 1e-8);
  expectNear((*grad)[1], {2}, {d[0] + d[2], d[1] + d[3]}, 1e-8);
}

// matmul_f8: 8-bit operands (E4M3 by E5M2 here, B transposed), the exact
// products summed, times the scales' product (0.1875); with roundResults
// a bf16 result is rounded (168.1875 to 168, -335.90625 to -336: bf16
// steps by 1 and 2 there).
TEST_F(InterpTest, MatmulF8) {
  Buffer a = B({2, 2}, {1, 2, 0.5, -4}), b = B({2, 2}, {3, 0.25, 1, 448});
  Buffer sa = B({}, {0.5}), sb = B({}, {0.375});
  Options options;
  options.roundResults = true;
  for (const char *type : {"f32", "bf16"}) {
    std::string result = std::string("tensor<2x2x") + type + ">";
    Buffer r = run1(
        "%a: tensor<2x2xf8E4M3FN>, %b: tensor<2x2xf8E5M2>, %sa: tensor<f32>, "
        "%sb: tensor<f32>",
        result,
        "%r = anvil.matmul_f8 %a, %b scales(%sa, %sb) {transpose_rhs} : "
        "(tensor<2x2xf8E4M3FN>, tensor<2x2xf8E5M2>, tensor<f32>, tensor<f32>) "
        "-> " +
            result + "\nreturn %r : " + result,
        {a, b, sa, sb}, options);
    if (std::string(type) == "f32")
      expectNear(r, {2, 2}, {0.65625, 168.1875, 0.09375, -335.90625});
    else
      expectNear(r, {2, 2}, {0.65625, 168, 0.09375, -336});
  }
  // A bias per column (-1, 0.5), added before the rounding: 168.1875 + 0.5
  // rounds to 169 (without the bias, 168), -335.90625 + 0.5 to -336.
  Buffer bias = B({2}, {-1, 0.5});
  Buffer r = run1(
      "%a: tensor<2x2xf8E4M3FN>, %b: tensor<2x2xf8E5M2>, %sa: tensor<f32>, "
      "%sb: tensor<f32>, %c: tensor<2xbf16>",
      "tensor<2x2xbf16>",
      "%r = anvil.matmul_f8 %a, %b scales(%sa, %sb) bias(%c) {transpose_rhs} "
      ": (tensor<2x2xf8E4M3FN>, tensor<2x2xf8E5M2>, tensor<f32>, tensor<f32>, "
      "tensor<2xbf16>) -> tensor<2x2xbf16>\nreturn %r : tensor<2x2xbf16>",
      {a, b, sa, sb, bias}, options);
  expectNear(r, {2, 2}, {-0.34375, 169, -0.90625, -336});
}

// linear_gelu_f8: matmul_f8's scaled sums (above) plus the bias (-1, 0.5)
// are p = (-0.34375, 168.6875, -0.90625, -335.40625); pre is p in bf16
// (168.6875 rounds to 169, -335.40625 to -336); the codes are
// 3 gelu_tanh(p) in E4M3: -0.37695 rounds to -0.375, 506.06 saturates to
// 448, -0.49626 rounds to -0.5, and gelu(-335.4) is -0; the amax is
// gelu's largest magnitude, 168.6875, before the scale.
TEST_F(InterpTest, LinearGeluF8) {
  Buffer a = B({2, 2}, {1, 2, 0.5, -4}), b = B({2, 2}, {3, 0.25, 1, 448});
  Buffer sa = B({}, {0.5}), sb = B({}, {0.375}), bias = B({2}, {-1, 0.5}),
         out = B({}, {3});
  Options options;
  options.roundResults = true;
  auto r = run("%a: tensor<2x2xf8E4M3FN>, %b: tensor<2x2xf8E5M2>, "
               "%sa: tensor<f32>, %sb: tensor<f32>, %c: tensor<2xbf16>, "
               "%s: tensor<f32>",
               "tensor<2x2xf8E4M3FN>, tensor<2x2xbf16>, tensor<f32>",
               "%y, %pre, %amax = anvil.linear_gelu_f8 %a, %b scales(%sa, %sb) "
               "bias(%c) out_scale(%s) {transpose_rhs} : "
               "(tensor<2x2xf8E4M3FN>, tensor<2x2xf8E5M2>, tensor<f32>, "
               "tensor<f32>, tensor<2xbf16>, tensor<f32>) -> "
               "(tensor<2x2xf8E4M3FN>, tensor<2x2xbf16>, tensor<f32>)\n"
               "return %y, %pre, %amax : tensor<2x2xf8E4M3FN>, "
               "tensor<2x2xbf16>, tensor<f32>",
               {a, b, sa, sb, bias, out}, options);
  ASSERT_TRUE(succeeded(r));
  expectNear((*r)[0], {2, 2}, {-0.375, 448, -0.5, 0});
  expectNear((*r)[1], {2, 2}, {-0.34375, 169, -0.90625, -336});
  expectNear((*r)[2], {}, {168.6875});
}

TEST_F(InterpTest, ArithmeticAndMath) {
  Buffer a = B({4}, {1, -2, 0.5, 4}), b = B({4}, {2, 3, -1, 0.5});
  auto check = [&](const char *op, std::vector<double> expected) {
    Buffer r = run1("%a: tensor<4xf64>, %b: tensor<4xf64>", "tensor<4xf64>",
                    std::string("%r = anvil.") + op +
                        " %a, %b : tensor<4xf64>\nreturn %r : tensor<4xf64>",
                    {a, b});
    expectNear(r, {4}, expected);
  };
  check("add", {3, 1, -0.5, 4.5});
  check("sub", {-1, -5, 1.5, 3.5});
  check("mul", {2, -6, -0.5, 2});
  check("div", {0.5, -2.0 / 3.0, -0.5, 8});
  check("pow", {1, -8, 2, 2});
  check("max", {2, 3, 0.5, 4});
  check("min", {1, -2, -1, 0.5});

  auto unary = [&](const char *op, std::vector<double> x,
                   std::vector<double> expected) {
    Buffer r = run1("%a: tensor<3xf64>", "tensor<3xf64>",
                    std::string("%r = anvil.") + op +
                        " %a : tensor<3xf64>\nreturn %r : tensor<3xf64>",
                    {B({3}, x)});
    expectNear(r, {3}, expected);
  };
  unary("neg", {1, -2, 0}, {-1, 2, 0});
  unary("abs", {1, -2, 0}, {1, 2, 0});
  unary("exp", {0, 1, -1}, {1, M_E, 1 / M_E});
  unary("log", {1, M_E, 0.5}, {0, 1, -M_LN2});
  unary("sqrt", {4, 2, 0}, {2, M_SQRT2, 0});
  unary("rsqrt", {4, 0.25, 1}, {0.5, 2, 1});
  unary("tanh", {0, 1, -1}, {0, std::tanh(1.0), -std::tanh(1.0)});
  unary("erf", {0, 1, -1}, {0, 0.8427007929497149, -0.8427007929497149});
  unary("sigmoid", {0, 2, -2},
        {0.5, 1 / (1 + std::exp(-2.0)), 1 / (1 + std::exp(2.0))});
  unary("silu", {0, 2, -1},
        {0, 2 / (1 + std::exp(-2.0)), -1 / (1 + std::exp(1.0))});
  unary("relu", {-1, 0, 2}, {0, 0, 2});
  unary("stop_gradient", {-1, 0, 2}, {-1, 0, 2});
  unary("cos", {0, M_PI, M_PI / 3}, {1, -1, 0.5});
  unary("sin", {0, M_PI / 2, -M_PI / 6}, {0, 1, -0.5});
  // GELU(1): erf form 0.5 (1 + erf(1/sqrt 2)) = 0.8413447460685429; tanh
  // form 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906082768.
  unary("gelu erf", {1, 0, -1}, {0.8413447460685429, 0, -0.15865525393145707});
  unary("gelu tanh", {1, 0, -1}, {0.8411919906082768, 0, -0.15880800939172324});
}

TEST_F(InterpTest, IntegerDivisionTruncatesAndRejectsZero) {
  Buffer r = run1("%a: tensor<2xi32>, %b: tensor<2xi32>", "tensor<2xi32>",
                  "%r = anvil.div %a, %b : tensor<2xi32>\nreturn %r : "
                  "tensor<2xi32>",
                  {B({2}, {-7, 7}), B({2}, {2, -2})});
  expectNear(r, {2}, {-3, -3});
  auto bad = run("%a: tensor<2xi32>, %b: tensor<2xi32>", "tensor<2xi32>",
                 "%r = anvil.div %a, %b : tensor<2xi32>\nreturn %r : "
                 "tensor<2xi32>",
                 {B({2}, {1, 1}), B({2}, {1, 0})});
  EXPECT_TRUE(failed(bad));
}

TEST_F(InterpTest, CompareSelectAndCasts) {
  Buffer r = run1(
      "%a: tensor<3xf32>, %b: tensor<3xf32>", "tensor<3xf32>",
      "%m = anvil.compare lt, %a, %b : tensor<3xf32>\n"
      "%r = anvil.select %m, %a, %b : tensor<3xf32>\nreturn %r : tensor<3xf32>",
      {B({3}, {1, 5, 3}), B({3}, {2, 4, 3})});
  expectNear(r, {3}, {1, 4, 3}); // elementwise minimum via lt

  // f32 -> i32 truncates toward zero; -> i1 is "non-zero".
  Buffer i = run1("%a: tensor<3xf32>", "tensor<3xi32>",
                  "%r = anvil.cast %a : tensor<3xf32> to tensor<3xi32>\n"
                  "return %r : tensor<3xi32>",
                  {B({3}, {1.7, -1.7, 3e10})});
  expectNear(i, {3}, {1, -1, 2147483647}); // saturates at INT32_MAX
  Buffer b = run1("%a: tensor<3xf32>", "tensor<3xi1>",
                  "%r = anvil.cast %a : tensor<3xf32> to tensor<3xi1>\n"
                  "return %r : tensor<3xi1>",
                  {B({3}, {0, -0.5, 3})});
  expectNear(b, {3}, {0, 1, 1});
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and
  // 1 + 2^-7 and rounds to even (1); 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
  Buffer h = run1("%a: tensor<2xf32>", "tensor<2xbf16>",
                  "%r = anvil.cast %a : tensor<2xf32> to tensor<2xbf16>\n"
                  "return %r : tensor<2xbf16>",
                  {B({2}, {1.00390625, 1.01171875})});
  expectNear(h, {2}, {1.0, 1.015625});
  // f8E4M3FN saturates at 448; f8E5M2 at 57344.
  Buffer f8 = run1("%a: tensor<3xf32>", "tensor<3xf8E4M3FN>",
                   "%r = anvil.cast %a : tensor<3xf32> to tensor<3xf8E4M3FN>\n"
                   "return %r : tensor<3xf8E4M3FN>",
                   {B({3}, {1000, -500, 0.3})});
  expectNear(f8, {3}, {448, -448, 0.3125}); // 0.3 -> 0.3125 (5 * 2^-4)
  Buffer e5 = run1("%a: tensor<2xf32>", "tensor<2xf8E5M2>",
                   "%r = anvil.cast %a : tensor<2xf32> to tensor<2xf8E5M2>\n"
                   "return %r : tensor<2xf8E5M2>",
                   {B({2}, {1e6, 3.0})});
  expectNear(e5, {2}, {57344, 3});
}

TEST_F(InterpTest, RoundingResultsPredictsLowPrecision) {
  // 1 + 2^-9 is not representable in bf16; rounding every result loses it.
  std::string body = "%r = anvil.add %a, %b : tensor<1xbf16>\n"
                     "return %r : tensor<1xbf16>";
  std::vector<Buffer> args{B({1}, {1.0}), B({1}, {0.001953125})};
  Buffer exact = run1("%a: tensor<1xbf16>, %b: tensor<1xbf16>",
                      "tensor<1xbf16>", body, args);
  expectNear(exact, {1}, {1.001953125});
  Options options;
  options.roundResults = true;
  Buffer rounded = run1("%a: tensor<1xbf16>, %b: tensor<1xbf16>",
                        "tensor<1xbf16>", body, args, options);
  expectNear(rounded, {1}, {1.0});
  EXPECT_EQ(roundToType(65520.0, Float16Type::get(&context)), INFINITY);
  EXPECT_EQ(roundToType(65519.0, Float16Type::get(&context)), 65504.0);
}

TEST_F(InterpTest, ConstantsAndDataMovement) {
  Buffer c = run1("", "tensor<2x2xi32>",
                  "%r = anvil.constant dense<[[1, 2], [3, 4]]> : "
                  "tensor<2x2xi32>\nreturn %r : tensor<2x2xi32>",
                  {});
  expectNear(c, {2, 2}, {1, 2, 3, 4});

  Buffer x = B({2, 3}, {1, 2, 3, 4, 5, 6});
  auto one = [&](const std::string &op, const std::string &type) {
    return run1("%x: tensor<2x3xf64>", type,
                "%r = " + op + "\nreturn %r : " + type, {x});
  };
  expectNear(one("anvil.reshape %x : tensor<2x3xf64> -> tensor<3x2xf64>",
                 "tensor<3x2xf64>"),
             {3, 2}, {1, 2, 3, 4, 5, 6});
  expectNear(one("anvil.transpose %x, [1, 0] : tensor<2x3xf64> -> "
                 "tensor<3x2xf64>",
                 "tensor<3x2xf64>"),
             {3, 2}, {1, 4, 2, 5, 3, 6});
  // (2, 3) -> (2, 2, 3): a new middle dimension.
  expectNear(one("anvil.broadcast %x, dims = [0, 2] : tensor<2x3xf64> -> "
                 "tensor<2x2x3xf64>",
                 "tensor<2x2x3xf64>"),
             {2, 2, 3}, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  // Strided slice: rows 0..2, columns 0, 2.
  expectNear(one("anvil.slice %x [0:2:1, 0:3:2] : tensor<2x3xf64> -> "
                 "tensor<2x2xf64>",
                 "tensor<2x2xf64>"),
             {2, 2}, {1, 3, 4, 6});
  expectNear(one("anvil.concat %x, %x dim = 1 : (tensor<2x3xf64>, "
                 "tensor<2x3xf64>) -> tensor<2x6xf64>",
                 "tensor<2x6xf64>"),
             {2, 6}, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  expectNear(one("anvil.pad %x low [1, 0] high [0, 1] {value = -1.0 : f64} : "
                 "tensor<2x3xf64> -> tensor<3x4xf64>",
                 "tensor<3x4xf64>"),
             {3, 4}, {-1, -1, -1, -1, 1, 2, 3, -1, 4, 5, 6, -1});

  auto parts = run("%x: tensor<2x3xf64>", "tensor<2x1xf64>, tensor<2x2xf64>",
                   "%a, %b = anvil.split %x dim = 1 sizes [1, 2] : "
                   "tensor<2x3xf64> -> tensor<2x1xf64>, tensor<2x2xf64>\n"
                   "return %a, %b : tensor<2x1xf64>, tensor<2x2xf64>",
                   {x});
  ASSERT_TRUE(succeeded(parts));
  expectNear((*parts)[0], {2, 1}, {1, 4});
  expectNear((*parts)[1], {2, 2}, {2, 3, 5, 6});

  // Broadcasting a size-1 dimension of an odd shape: (3, 1) -> (3, 5).
  Buffer col = run1("%x: tensor<3x1xf64>", "tensor<3x5xf64>",
                    "%r = anvil.broadcast %x, dims = [0, 1] : tensor<3x1xf64> "
                    "-> tensor<3x5xf64>\nreturn %r : tensor<3x5xf64>",
                    {B({3, 1}, {7, 8, 9})});
  expectNear(col, {3, 5}, {7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9});

  // gather along axis 1 with a (2, 2) index tensor -> (2, 2, 2).
  Buffer g =
      run1("%x: tensor<2x3xf64>, %i: tensor<2x2xi64>", "tensor<2x2x2xf64>",
           "%r = anvil.gather %x[%i] axis = 1 : (tensor<2x3xf64>, "
           "tensor<2x2xi64>) -> tensor<2x2x2xf64>\nreturn %r : "
           "tensor<2x2x2xf64>",
           {x, B({2, 2}, {2, 0, 1, 1})});
  expectNear(g, {2, 2, 2}, {3, 1, 2, 2, 6, 4, 5, 5});
}

TEST_F(InterpTest, Reductions) {
  Buffer x = B({2, 3}, {1, 5, 3, 4, 2, 6});
  auto red = [&](const std::string &op, const std::string &type) {
    return run1("%x: tensor<2x3xf64>", type,
                "%r = " + op + "\nreturn %r : " + type, {x});
  };
  expectNear(red("anvil.reduce_sum %x dims [1] : tensor<2x3xf64> -> "
                 "tensor<2xf64>",
                 "tensor<2xf64>"),
             {2}, {9, 12});
  expectNear(red("anvil.reduce_mean %x dims [0] keep_dims : tensor<2x3xf64> "
                 "-> tensor<1x3xf64>",
                 "tensor<1x3xf64>"),
             {1, 3}, {2.5, 3.5, 4.5});
  expectNear(red("anvil.reduce_max %x dims [0, 1] : tensor<2x3xf64> -> "
                 "tensor<f64>",
                 "tensor<f64>"),
             {}, {6});
  expectNear(red("anvil.reduce_min %x dims [1] : tensor<2x3xf64> -> "
                 "tensor<2xf64>",
                 "tensor<2xf64>"),
             {2}, {1, 2});
  // Ties go to the first index.
  Buffer am = run1("%x: tensor<2x3xf64>", "tensor<2xi64>",
                   "%r = anvil.argmax %x dim = 1 : tensor<2x3xf64> -> "
                   "tensor<2xi64>\nreturn %r : tensor<2xi64>",
                   {B({2, 3}, {1, 7, 7, 0, -1, -2})});
  expectNear(am, {2}, {1, 0});
  // softmax([0, ln 2, ln 3]) = [1, 2, 3] / 6, in either row layout.
  Buffer sm = run1("%x: tensor<1x3xf64>", "tensor<1x3xf64>",
                   "%r = anvil.softmax %x dim = 1 : tensor<1x3xf64>\n"
                   "return %r : tensor<1x3xf64>",
                   {B({1, 3}, {0, M_LN2, std::log(3.0)})});
  expectNear(sm, {1, 3}, {1.0 / 6, 2.0 / 6, 3.0 / 6});
  Buffer lsm = run1("%x: tensor<3x1xf64>", "tensor<3x1xf64>",
                    "%r = anvil.log_softmax %x dim = 0 : tensor<3x1xf64>\n"
                    "return %r : tensor<3x1xf64>",
                    {B({3, 1}, {0, M_LN2, std::log(3.0)})});
  expectNear(lsm, {3, 1},
             {std::log(1.0 / 6), std::log(2.0 / 6), std::log(3.0 / 6)});
}

TEST_F(InterpTest, Matmul) {
  Buffer a = B({2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer b = B({3, 2}, {7, 8, 9, 10, 11, 12});
  // [[1*7+2*9+3*11, 1*8+2*10+3*12], [4*7+5*9+6*11, 4*8+5*10+6*12]]
  expectNear(run1("%a: tensor<2x3xf64>, %b: tensor<3x2xf64>", "tensor<2x2xf64>",
                  "%r = anvil.matmul %a, %b : (tensor<2x3xf64>, "
                  "tensor<3x2xf64>) -> tensor<2x2xf64>\nreturn %r : "
                  "tensor<2x2xf64>",
                  {a, b}),
             {2, 2}, {58, 64, 139, 154});
  // a @ a^T = [[14, 32], [32, 77]]
  expectNear(run1("%a: tensor<2x3xf64>", "tensor<2x2xf64>",
                  "%r = anvil.matmul %a, %a {transpose_rhs} : "
                  "(tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x2xf64>\n"
                  "return %r : tensor<2x2xf64>",
                  {a}),
             {2, 2}, {14, 32, 32, 77});
  // Batched lhs with a shared rhs: [[1, 2]] and [[3, 4]] times [[1], [1]].
  expectNear(run1("%a: tensor<2x1x2xf64>, %b: tensor<2x1xf64>",
                  "tensor<2x1x1xf64>",
                  "%r = anvil.matmul %a, %b : (tensor<2x1x2xf64>, "
                  "tensor<2x1xf64>) -> tensor<2x1x1xf64>\nreturn %r : "
                  "tensor<2x1x1xf64>",
                  {B({2, 1, 2}, {1, 2, 3, 4}), B({2, 1}, {1, 1})}),
             {2, 1, 1}, {3, 7});
}

TEST_F(InterpTest, Normalizations) {
  const double eps = 1e-5;
  // [1, 2, 3, 4]: mean 2.5, biased variance 1.25.
  double r = 1.0 / std::sqrt(1.25 + eps);
  Buffer ln = run1(
      "%x: tensor<1x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>",
      "tensor<1x4xf64>",
      "%r = anvil.layer_norm %x scale(%g) bias(%b) axis = 1 : "
      "(tensor<1x4xf64>, tensor<4xf64>, tensor<4xf64>) -> "
      "tensor<1x4xf64>\nreturn %r : tensor<1x4xf64>",
      {B({1, 4}, {1, 2, 3, 4}), B({4}, {1, 2, 1, 1}), B({4}, {0, 0, 0, 10})});
  expectNear(ln, {1, 4}, {-1.5 * r, -0.5 * r * 2, 0.5 * r, 1.5 * r + 10});
  // rms([3, 4]) = sqrt(12.5).
  double rr = 1.0 / std::sqrt(12.5 + eps);
  Buffer rms = run1("%x: tensor<1x2xf64>, %g: tensor<2xf64>", "tensor<1x2xf64>",
                    "%r = anvil.rms_norm %x scale(%g) axis = 1 : "
                    "(tensor<1x2xf64>, tensor<2xf64>) -> tensor<1x2xf64>\n"
                    "return %r : tensor<1x2xf64>",
                    {B({1, 2}, {3, 4}), B({2}, {1, 2})});
  expectNear(rms, {1, 2}, {3 * rr, 8 * rr});
  // Group norm, 4 channels in 2 groups, 1 spatial element: groups {1, 3}
  // and {5, 9}: means 2 and 7, variances 1 and 4.
  Buffer gn = run1("%x: tensor<1x4x1xf64>", "tensor<1x4x1xf64>",
                   "%r = anvil.group_norm %x groups = 2 : (tensor<1x4x1xf64>) "
                   "-> tensor<1x4x1xf64>\nreturn %r : tensor<1x4x1xf64>",
                   {B({1, 4, 1}, {1, 3, 5, 9})});
  expectNear(gn, {1, 4, 1},
             {-1 / std::sqrt(1 + eps), 1 / std::sqrt(1 + eps),
              -2 / std::sqrt(4 + eps), 2 / std::sqrt(4 + eps)});
  // Instance norm: each (n, c) over its 2 spatial elements.
  Buffer in = run1("%x: tensor<1x2x2xf64>", "tensor<1x2x2xf64>",
                   "%r = anvil.instance_norm %x : (tensor<1x2x2xf64>) -> "
                   "tensor<1x2x2xf64>\nreturn %r : tensor<1x2x2xf64>",
                   {B({1, 2, 2}, {0, 2, 10, 10})});
  expectNear(in, {1, 2, 2},
             {-1 / std::sqrt(1 + eps), 1 / std::sqrt(1 + eps), 0, 0});
  // Batch norm: channel 0 holds {1, 3} over the batch, channel 1 {2, 2}.
  auto bn = run("%x: tensor<2x2xf64>, %g: tensor<2xf64>, %b: tensor<2xf64>",
                "tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>",
                "%y, %m, %v = anvil.batch_norm_train %x, %g, %b : "
                "(tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>) -> "
                "(tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>)\n"
                "return %y, %m, %v : tensor<2x2xf64>, tensor<2xf64>, "
                "tensor<2xf64>",
                {B({2, 2}, {1, 2, 3, 2}), B({2}, {2, 1}), B({2}, {0, 5})});
  ASSERT_TRUE(succeeded(bn));
  double s = 1 / std::sqrt(1 + eps);
  expectNear((*bn)[0], {2, 2}, {-2 * s, 5, 2 * s, 5});
  expectNear((*bn)[1], {2}, {2, 2});
  expectNear((*bn)[2], {2}, {1, 0});
  Buffer bi = run1("%x: tensor<1x2xf64>, %g: tensor<2xf64>, %b: tensor<2xf64>, "
                   "%m: tensor<2xf64>, %v: tensor<2xf64>",
                   "tensor<1x2xf64>",
                   "%r = anvil.batch_norm_inference %x, %g, %b, %m, %v "
                   "{epsilon = 0.0 : f64} : (tensor<1x2xf64>, tensor<2xf64>, "
                   "tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) -> "
                   "tensor<1x2xf64>\nreturn %r : tensor<1x2xf64>",
                   {B({1, 2}, {3, 3}), B({2}, {1, 2}), B({2}, {0, 1}),
                    B({2}, {1, 3}), B({2}, {4, 1})});
  expectNear(bi, {1, 2}, {1, 1}); // (3-1)/2*1+0, (3-3)/1*2+1
}

TEST_F(InterpTest, Dropout) {
  std::string body = "%r = anvil.dropout %x, %s rate = 5.0e-01 : "
                     "tensor<64xf64>\nreturn %r : tensor<64xf64>";
  std::vector<double> ones(64, 1.0);
  Buffer a = run1("%x: tensor<64xf64>, %s: tensor<i64>", "tensor<64xf64>", body,
                  {B({64}, ones), B({}, {7})});
  Buffer b = run1("%x: tensor<64xf64>, %s: tensor<i64>", "tensor<64xf64>", body,
                  {B({64}, ones), B({}, {7})});
  Buffer c = run1("%x: tensor<64xf64>, %s: tensor<i64>", "tensor<64xf64>", body,
                  {B({64}, ones), B({}, {8})});
  EXPECT_EQ(a.data, b.data) << "the mask is a function of the seed";
  EXPECT_NE(a.data, c.data) << "another seed, another mask";
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    // Kept elements are scaled by 1 / (1 - 0.5); the rule is uniform01 >= rate.
    EXPECT_EQ(a.data[i], uniform01(7, i) >= 0.5 ? 2.0 : 0.0);
    kept += a.data[i] != 0.0;
  }
  EXPECT_GT(kept, 16);
  EXPECT_LT(kept, 48);
}

TEST_F(InterpTest, EmbeddingsAndRope) {
  Buffer table = B({3, 2}, {0, 1, 10, 11, 20, 21});
  expectNear(run1("%t: tensor<3x2xf64>, %i: tensor<2x2xi32>",
                  "tensor<2x2x2xf64>",
                  "%r = anvil.embedding %t[%i] : (tensor<3x2xf64>, "
                  "tensor<2x2xi32>) -> tensor<2x2x2xf64>\nreturn %r : "
                  "tensor<2x2x2xf64>",
                  {table, B({2, 2}, {2, 0, 1, 1})}),
             {2, 2, 2}, {20, 21, 0, 1, 10, 11, 10, 11});
  // embedding_grad scatters rows [1, 2], [3, 4], [5, 6] to indices 2, 0, 2.
  expectNear(run1("%g: tensor<3x2xf64>, %i: tensor<3xi32>", "tensor<3x2xf64>",
                  "%r = anvil.embedding_grad %g[%i] rows = 3 : "
                  "(tensor<3x2xf64>, tensor<3xi32>) -> tensor<3x2xf64>\n"
                  "return %r : tensor<3x2xf64>",
                  {B({3, 2}, {1, 2, 3, 4, 5, 6}), B({3}, {2, 0, 2})}),
             {3, 2}, {3, 4, 0, 0, 6, 8});
  expectNear(run1("%t: tensor<3x2xf64>, %i: tensor<2x2xi64>", "tensor<2x2xf64>",
                  "%r = anvil.embedding_bag mean %t[%i] : (tensor<3x2xf64>, "
                  "tensor<2x2xi64>) -> tensor<2x2xf64>\nreturn %r : "
                  "tensor<2x2xf64>",
                  {table, B({2, 2}, {0, 2, 1, 1})}),
             {2, 2}, {10, 11, 10, 11});
  expectNear(run1("%t: tensor<3x2xf64>, %i: tensor<1x3xi64>", "tensor<1x2xf64>",
                  "%r = anvil.embedding_bag sum %t[%i] : (tensor<3x2xf64>, "
                  "tensor<1x3xi64>) -> tensor<1x2xf64>\nreturn %r : "
                  "tensor<1x2xf64>",
                  {table, B({1, 3}, {0, 1, 2})}),
             {1, 2}, {30, 33});
  auto bad = run("%t: tensor<3x2xf64>, %i: tensor<1xi32>", "tensor<1x2xf64>",
                 "%r = anvil.embedding %t[%i] : (tensor<3x2xf64>, "
                 "tensor<1xi32>) -> tensor<1x2xf64>\nreturn %r : "
                 "tensor<1x2xf64>",
                 {table, B({1}, {3})});
  EXPECT_TRUE(failed(bad)) << "index 3 of a 3-row table";

  // D = 4, one position, cos = [0, 1], sin = [1, 0]: the pair (x0, x2)
  // rotates by 90 degrees, (x1, x3) stays. Interleaved: pairs (x0, x1).
  std::string sig =
      "%x: tensor<1x4xf64>, %c: tensor<1x2xf64>, %s: tensor<1x2xf64>";
  std::vector<Buffer> args{B({1, 4}, {1, 2, 3, 4}), B({1, 2}, {0, 1}),
                           B({1, 2}, {1, 0})};
  expectNear(run1(sig, "tensor<1x4xf64>",
                  "%r = anvil.rope %x, %c, %s : (tensor<1x4xf64>, "
                  "tensor<1x2xf64>, tensor<1x2xf64>) -> tensor<1x4xf64>\n"
                  "return %r : tensor<1x4xf64>",
                  args),
             {1, 4}, {-3, 2, 1, 4});
  expectNear(run1(sig, "tensor<1x4xf64>",
                  "%r = anvil.rope %x, %c, %s {interleaved} : "
                  "(tensor<1x4xf64>, tensor<1x2xf64>, tensor<1x2xf64>) -> "
                  "tensor<1x4xf64>\nreturn %r : tensor<1x4xf64>",
                  args),
             {1, 4}, {-2, 1, 3, 4});
}

TEST_F(InterpTest, AttentionCausalGroupedAndMasked) {
  // One batch, two query heads sharing one key/value head (GQA), T = 2,
  // D = 1, scale 1. Keys [1, 2], values [10, 20], queries all 1.
  // Non-causal: p = softmax([1, 2]) = [1, e] / (1 + e).
  double e = M_E, p1 = e / (1 + e);
  std::string sig = "%q: tensor<1x2x2x1xf64>, %k: tensor<1x1x2x1xf64>, "
                    "%v: tensor<1x1x2x1xf64>";
  std::vector<Buffer> args{B({1, 2, 2, 1}, {1, 1, 1, 1}),
                           B({1, 1, 2, 1}, {1, 2}), B({1, 1, 2, 1}, {10, 20})};
  std::string types = "(tensor<1x2x2x1xf64>, tensor<1x1x2x1xf64>, "
                      "tensor<1x1x2x1xf64>) -> tensor<1x2x2x1xf64>";
  double full = 10 + 10 * p1;
  expectNear(run1(sig, "tensor<1x2x2x1xf64>",
                  "%r = anvil.attention %q, %k, %v {scale = 1.0 : f64} : " +
                      types + "\nreturn %r : tensor<1x2x2x1xf64>",
                  args),
             {1, 2, 2, 1}, {full, full, full, full});
  // Causal: the first query sees only the first key.
  expectNear(run1(sig, "tensor<1x2x2x1xf64>",
                  "%r = anvil.attention %q, %k, %v {causal, scale = 1.0 : "
                  "f64} : " +
                      types + "\nreturn %r : tensor<1x2x2x1xf64>",
                  args),
             {1, 2, 2, 1}, {10, full, 10, full});
  // An additive mask of -inf on the second key does the same to every row;
  // the default scale is 1/sqrt(D) = 1.
  Buffer mask = B({2, 2}, {0, -INFINITY, 0, -INFINITY});
  args.push_back(mask);
  expectNear(run1(sig + ", %m: tensor<2x2xf64>", "tensor<1x2x2x1xf64>",
                  "%r = anvil.attention %q, %k, %v mask(%m) : "
                  "(tensor<1x2x2x1xf64>, tensor<1x1x2x1xf64>, "
                  "tensor<1x1x2x1xf64>, tensor<2x2xf64>) -> "
                  "tensor<1x2x2x1xf64>\nreturn %r : tensor<1x2x2x1xf64>",
                  args),
             {1, 2, 2, 1}, {10, 10, 10, 10});
}

TEST_F(InterpTest, ConvolutionsGroupedStridedTransposed) {
  // 1-D, one channel: [1, 2, 3, 4] * [1, 0, -1], padding 1:
  // [0-2, 1-3, 2-4, 3-0] = [-2, -2, -2, 3].
  expectNear(run1("%x: tensor<1x1x4xf64>, %w: tensor<1x1x3xf64>",
                  "tensor<1x1x4xf64>",
                  "%r = anvil.conv %x, %w stride [1] pad_low [1] pad_high [1] "
                  "dilation [1] : (tensor<1x1x4xf64>, tensor<1x1x3xf64>) -> "
                  "tensor<1x1x4xf64>\nreturn %r : tensor<1x1x4xf64>",
                  {B({1, 1, 4}, {1, 2, 3, 4}), B({1, 1, 3}, {1, 0, -1})}),
             {1, 1, 4}, {-2, -2, -2, 3});
  // Grouped (depthwise) 2-D, 2 channels in 2 groups, 2x2 input, 1x1
  // kernels [2] and [-1], bias [1, 0].
  expectNear(run1("%x: tensor<1x2x2x2xf64>, %w: tensor<2x1x1x1xf64>, "
                  "%b: tensor<2xf64>",
                  "tensor<1x2x2x2xf64>",
                  "%r = anvil.conv %x, %w, %b stride [1, 1] pad_low [0, 0] "
                  "pad_high [0, 0] dilation [1, 1] {groups = 2 : i64} : "
                  "(tensor<1x2x2x2xf64>, tensor<2x1x1x1xf64>, tensor<2xf64>) "
                  "-> tensor<1x2x2x2xf64>\nreturn %r : tensor<1x2x2x2xf64>",
                  {B({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                   B({2, 1, 1, 1}, {2, -1}), B({2}, {1, 0})}),
             {1, 2, 2, 2}, {3, 5, 7, 9, -5, -6, -7, -8});
  // Stride 2 and dilation 2 on [1..7] with taps [1, 1]: windows start at
  // 0, 2, 4 and read x[i] + x[i + 2]: [1+3, 3+5, 5+7].
  expectNear(run1("%x: tensor<1x1x7xf64>, %w: tensor<1x1x2xf64>",
                  "tensor<1x1x3xf64>",
                  "%r = anvil.conv %x, %w stride [2] pad_low [0] pad_high [0] "
                  "dilation [2] : (tensor<1x1x7xf64>, tensor<1x1x2xf64>) -> "
                  "tensor<1x1x3xf64>\nreturn %r : tensor<1x1x3xf64>",
                  {B({1, 1, 7}, {1, 2, 3, 4, 5, 6, 7}), B({1, 1, 2}, {1, 1})}),
             {1, 1, 3}, {4, 8, 12});
  // Transposed, stride 2, taps [1, 1, 1]: x0 covers 0..2, x1 covers 2..4.
  expectNear(run1("%x: tensor<1x1x2xf64>, %w: tensor<1x1x3xf64>",
                  "tensor<1x1x5xf64>",
                  "%r = anvil.conv_transpose %x, %w stride [2] pad_low [0] "
                  "pad_high [0] dilation [1] output_padding [0] : "
                  "(tensor<1x1x2xf64>, tensor<1x1x3xf64>) -> "
                  "tensor<1x1x5xf64>\nreturn %r : tensor<1x1x5xf64>",
                  {B({1, 1, 2}, {1, 2}), B({1, 1, 3}, {1, 1, 1})}),
             {1, 1, 5}, {1, 1, 3, 2, 2});
}

TEST_F(InterpTest, ConvFilterGradAndMaxPoolGrad) {
  // 1-D, x = [1, 2, 3, 4], g = [1, 10] for a 3-tap valid conv:
  // dw[k] = sum_o g[o] x[o + k] = [1 + 20, 2 + 30, 3 + 40].
  expectNear(run1("%x: tensor<1x1x4xf64>, %g: tensor<1x1x2xf64>",
                  "tensor<1x1x3xf64>",
                  "%r = anvil.conv_filter_grad %x, %g kernel [3] stride [1] "
                  "pad_low [0] pad_high [0] dilation [1] : (tensor<1x1x4xf64>, "
                  "tensor<1x1x2xf64>) -> tensor<1x1x3xf64>\nreturn %r : "
                  "tensor<1x1x3xf64>",
                  {B({1, 1, 4}, {1, 2, 3, 4}), B({1, 1, 2}, {1, 10})}),
             {1, 1, 3}, {21, 32, 43});
  // Windows [1, 5] and [5, 2] (stride 1, window 2) both pick 5.
  expectNear(run1("%x: tensor<1x1x3xf64>, %g: tensor<1x1x2xf64>",
                  "tensor<1x1x3xf64>",
                  "%r = anvil.max_pool_grad %x, %g window [2] stride [1] "
                  "pad_low [0] pad_high [0] : (tensor<1x1x3xf64>, "
                  "tensor<1x1x2xf64>) -> tensor<1x1x3xf64>\nreturn %r : "
                  "tensor<1x1x3xf64>",
                  {B({1, 1, 3}, {1, 5, 2}), B({1, 1, 2}, {0.5, 0.25})}),
             {1, 1, 3}, {0, 0.75, 0});
}

TEST_F(InterpTest, PoolingAndUpsampling) {
  Buffer x = B({1, 1, 4}, {1, 2, 3, 4});
  auto pool = [&](const std::string &op, const std::string &attrs,
                  int64_t window, int64_t stride, int64_t pad, int64_t out) {
    std::string type = "tensor<1x1x" + std::to_string(out) + "xf64>";
    return run1("%x: tensor<1x1x4xf64>", type,
                "%r = anvil." + op + " %x window [" + std::to_string(window) +
                    "] stride [" + std::to_string(stride) + "] pad_low [" +
                    std::to_string(pad) + "] pad_high [" + std::to_string(pad) +
                    "] " + attrs + " : tensor<1x1x4xf64> -> " + type +
                    "\nreturn %r : " + type,
                {x});
  };
  expectNear(pool("max_pool", "", 2, 2, 0, 2), {1, 1, 2}, {2, 4});
  expectNear(pool("avg_pool", "", 2, 2, 0, 2), {1, 1, 2}, {1.5, 3.5});
  // Window 3, padding 1: the edge windows hold 2 real elements.
  expectNear(pool("avg_pool", "", 3, 1, 1, 4), {1, 1, 4}, {1.5, 2, 3, 3.5});
  expectNear(pool("avg_pool", "{count_include_pad}", 3, 1, 1, 4), {1, 1, 4},
             {1, 2, 3, 7.0 / 3});
  expectNear(pool("max_pool", "", 3, 1, 1, 4), {1, 1, 4}, {2, 3, 4, 4});
  expectNear(run1("%x: tensor<1x1x2xf64>", "tensor<1x1x6xf64>",
                  "%r = anvil.upsample_nearest %x scale [3] : "
                  "tensor<1x1x2xf64> -> tensor<1x1x6xf64>\nreturn %r : "
                  "tensor<1x1x6xf64>",
                  {B({1, 1, 2}, {1, 2})}),
             {1, 1, 6}, {1, 1, 1, 2, 2, 2});
}

TEST_F(InterpTest, CrossEntropyIgnoreIndexAndSmoothing) {
  // Row 0: logits [0, 0], label 0: -log(1/2) = ln 2. Row 1 is ignored.
  // Row 2: logits [ln 3, 0], label 1: -log(1/4) = ln 4.
  Buffer logits = B({3, 2}, {0, 0, 5, 7, std::log(3.0), 0});
  Buffer labels = B({3}, {0, -100, 1});
  std::string sig = "%l: tensor<3x2xf64>, %y: tensor<3xi64>";
  auto ce = [&](const std::string &reduction, const std::string &attrs,
                const std::string &type) {
    return run1(sig, type,
                "%r = anvil.cross_entropy " + reduction + " %l, %y " + attrs +
                    " : (tensor<3x2xf64>, tensor<3xi64>) -> " + type +
                    "\nreturn %r : " + type,
                {logits, labels});
  };
  expectNear(ce("mean", "", "tensor<f64>"), {}, {(M_LN2 + std::log(4.0)) / 2});
  expectNear(ce("sum", "", "tensor<f64>"), {}, {M_LN2 + std::log(4.0)});
  expectNear(ce("none", "", "tensor<3xf64>"), {3}, {M_LN2, 0, std::log(4.0)});
  // Smoothing s = 0.5 over C = 2: -(0.5 log p[y] + 0.25 (log p0 + log p1)).
  // Row 2: log p = [log 3/4, log 1/4].
  double row2 =
      -(0.5 * std::log(0.25) + 0.25 * (std::log(0.75) + std::log(0.25)));
  expectNear(ce("none", "{label_smoothing = 0.5 : f64}", "tensor<3xf64>"), {3},
             {M_LN2, 0, row2});
  // A label that is neither in range nor ignored is an error.
  auto bad = run(sig, "tensor<f64>",
                 "%r = anvil.cross_entropy mean %l, %y : (tensor<3x2xf64>, "
                 "tensor<3xi64>) -> tensor<f64>\nreturn %r : tensor<f64>",
                 {logits, B({3}, {0, 2, 1})});
  EXPECT_TRUE(failed(bad));
}

TEST_F(InterpTest, OtherLosses) {
  Buffer x = B({2}, {0, 2}), t = B({2}, {1, 0});
  std::string sig = "%x: tensor<2xf64>, %t: tensor<2xf64>";
  auto loss = [&](const std::string &op, const std::string &attrs) {
    return run1(sig, "tensor<f64>",
                "%r = anvil." + op + " %x, %t " + attrs +
                    " : (tensor<2xf64>, tensor<2xf64>) -> tensor<f64>\n"
                    "return %r : tensor<f64>",
                {x, t});
  };
  // MSE: ((0-1)^2 + (2-0)^2) / 2.
  expectNear(loss("mse_loss mean", ""), {}, {2.5});
  // BCE: x=0,t=1 -> ln 2; x=2,t=0 -> 2 + log(1 + e^-2).
  double b0 = M_LN2, b1 = 2 + std::log1p(std::exp(-2.0));
  expectNear(loss("bce_with_logits sum", ""), {}, {b0 + b1});
  // Focal, gamma 2, alpha 0.25: p = [0.5, sigmoid 2]; p_t = [0.5, 1 - p1];
  // alpha_t = [0.25, 0.75].
  double p1 = 1 / (1 + std::exp(-2.0));
  double f = 0.25 * 0.25 * b0 + 0.75 * p1 * p1 * b1;
  expectNear(loss("focal_loss sum", ""), {}, {f});
  expectNear(loss("focal_loss mean", "{alpha = -1.0 : f64, gamma = 0.0 : f64}"),
             {}, {(b0 + b1) / 2});
  // Dice over (N=1, C=2, 2): channel 0 p=[1,0] t=[1,0] -> 1 - (2+s)/(2+s);
  // channel 1 p=[0.5,0.5] t=[0,1] -> 1 - (1+s)/(2+s); smooth s = 1.
  Buffer d =
      run1("%p: tensor<1x2x2xf64>, %t: tensor<1x2x2xf64>", "tensor<1x2xf64>",
           "%r = anvil.dice_loss none %p, %t {smooth = 1.0 : f64} : "
           "(tensor<1x2x2xf64>, tensor<1x2x2xf64>) -> tensor<1x2xf64>\n"
           "return %r : tensor<1x2xf64>",
           {B({1, 2, 2}, {1, 0, 0.5, 0.5}), B({1, 2, 2}, {1, 0, 0, 1})});
  expectNear(d, {1, 2}, {0, 1 - 2.0 / 3});
}

TEST_F(InterpTest, ArgumentsAreConvertedToTheirTypes) {
  // f32 arguments are rounded to f32; integer arguments must be integers.
  Buffer r = run1("%x: tensor<1xf32>", "tensor<1xf32>",
                  "return %x : tensor<1xf32>", {B({1}, {0.1})});
  expectNear(r, {1}, {static_cast<double>(0.1f)}, 0.0);
  EXPECT_TRUE(failed(run("%x: tensor<1xi32>", "tensor<1xi32>",
                         "return %x : tensor<1xi32>", {B({1}, {2.5})})));
  EXPECT_TRUE(failed(run("%x: tensor<1xi32>", "tensor<1xi32>",
                         "return %x : tensor<1xi32>", {B({1}, {3e9})})));
  EXPECT_TRUE(failed(run("%x: tensor<2xf32>", "tensor<2xf32>",
                         "return %x : tensor<2xf32>", {B({2}, {1.0})})))
      << "a buffer with fewer values than its shape";
}

TEST_F(InterpTest, RejectsDynamicShapesAndUnsupportedTypes) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto dyn = run("%x: tensor<?xf32>", "tensor<?xf32>",
                 "return %x : tensor<?xf32>", {B({2}, {1, 2})});
  EXPECT_TRUE(failed(dyn));
  EXPECT_NE(message.find("dynamic shape"), std::string::npos) << message;
  auto i8 = run("%x: tensor<2xi8>", "tensor<2xi8>", "return %x : tensor<2xi8>",
                {B({2}, {1, 2})});
  EXPECT_TRUE(failed(i8));
  EXPECT_NE(message.find("unsupported element type 'i8'"), std::string::npos)
      << message;
  auto empty = run("%x: tensor<0x3xf32>", "tensor<0x3xf32>",
                   "return %x : tensor<0x3xf32>", {B({0, 3}, {})});
  EXPECT_TRUE(failed(empty));
  EXPECT_NE(message.find("has no elements"), std::string::npos) << message;
}

} // namespace
