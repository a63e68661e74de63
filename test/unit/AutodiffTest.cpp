//===- AutodiffTest.cpp - every VJP rule against finite differences -------===//
//
// For each differentiable op, a function L = sum(op(args...) * w) with a
// random projection w is differentiated by anvil-autodiff and evaluated in
// the reference interpreter; the gradients must match central finite
// differences of L in float64 (relative error at most 1e-6, three seeds).
// The cases are listed op by op below, so an op without a case stands out.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Interp/Interpreter.h"
#include "anvil/Training/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
namespace interp = ::anvil::interp;

namespace {

/// How an argument is drawn: standard normal, positive (|n| + 0.5), in
/// (0, 1), integer labels in [0, n) with some ignored (-1), indices in
/// [0, n), or a constant input (a seed or a table) not differentiated.
enum class Kind { Normal, Positive, Unit, Labels, Index, Seed };

struct Arg {
  std::string name, type;
  Kind kind = Kind::Normal;
  int64_t classes = 0;
};

struct Case {
  std::string op; ///< The op under test (for the report).
  std::vector<Arg> args;
  std::string body; ///< Ops computing %y from the arguments.
  std::string yType;
};

std::vector<Case> cases() {
  auto f = [](std::string n, std::string t, Kind k = Kind::Normal) {
    return Arg{std::move(n), std::move(t), k, 0};
  };
  const std::string t23 = "tensor<2x3xf64>";
  auto unary = [&](std::string op, Kind k = Kind::Normal) {
    return Case{op, {f("a", t23, k)}, "%y = anvil." + op + " %a : " + t23, t23};
  };
  auto binary = [&](std::string op, Kind ka = Kind::Normal,
                    Kind kb = Kind::Normal) {
    return Case{op,
                {f("a", t23, ka), f("b", t23, kb)},
                "%y = anvil." + op + " %a, %b : " + t23,
                t23};
  };
  std::vector<Case> c = {
      unary("neg"),
      unary("abs"),
      unary("exp"),
      unary("log", Kind::Positive),
      unary("sqrt", Kind::Positive),
      unary("rsqrt", Kind::Positive),
      unary("tanh"),
      unary("cos"),
      unary("sin"),
      unary("erf"),
      unary("sigmoid"),
      unary("silu"),
      unary("relu"),
      unary("gelu erf"),
      unary("gelu tanh"),
      binary("add"),
      binary("sub"),
      binary("mul"),
      binary("div", Kind::Normal, Kind::Positive),
      binary("pow", Kind::Positive),
      binary("max"),
      binary("min"),
      // Broadcasting: a bias of shape (3) added to every row.
      Case{"add (broadcast)",
           {f("a", t23), f("b", "tensor<3xf64>")},
           "%bb = anvil.broadcast %b, dims = [1] : tensor<3xf64> -> " + t23 +
               "\n%y = anvil.add %a, %bb : " + t23,
           t23},
      Case{"select",
           {f("a", t23), f("b", t23)},
           "%m = anvil.compare gt, %a, %b : " + t23 +
               "\n%y = anvil.select %m, %a, %b : " + t23,
           t23},
      // The collectives' rules, in a world of one rank (no mesh): the
      // partitioned programs' losses test them over real ranks.
      Case{"all_reduce",
           {f("a", t23)},
           "%y = anvil.all_reduce mean %a axis \"tp\" : " + t23,
           t23},
      Case{"all_gather",
           {f("a", t23)},
           "%y = anvil.all_gather %a axis \"tp\" : " + t23 + " -> " + t23,
           t23},
      Case{"reduce_scatter",
           {f("a", t23)},
           "%y = anvil.reduce_scatter mean %a axis \"tp\" : " + t23 + " -> " +
               t23,
           t23},
      Case{"axis_copy",
           {f("a", t23)},
           "%y = anvil.axis_copy %a axis \"tp\" : " + t23,
           t23},
      Case{"cast",
           {f("a", t23)},
           "%y = anvil.cast %a : " + t23 + " to " + t23,
           t23},
      Case{"dropout",
           {f("a", "tensor<16xf64>"), Arg{"s", "tensor<i64>", Kind::Seed, 0}},
           "%y = anvil.dropout %a, %s rate = 3.0e-01 : tensor<16xf64>",
           "tensor<16xf64>"},
      Case{"reshape",
           {f("a", t23)},
           "%y = anvil.reshape %a : " + t23 + " -> tensor<3x2xf64>",
           "tensor<3x2xf64>"},
      Case{"transpose",
           {f("a", "tensor<2x3x4xf64>")},
           "%y = anvil.transpose %a, [2, 0, 1] : tensor<2x3x4xf64> -> "
           "tensor<4x2x3xf64>",
           "tensor<4x2x3xf64>"},
      Case{"broadcast",
           {f("a", "tensor<3x1xf64>")},
           "%y = anvil.broadcast %a, dims = [1, 2] : tensor<3x1xf64> -> "
           "tensor<2x3x4xf64>",
           "tensor<2x3x4xf64>"},
      Case{"slice",
           {f("a", "tensor<4x5xf64>")},
           "%y = anvil.slice %a [1:3:1, 0:4:1] : tensor<4x5xf64> -> "
           "tensor<2x4xf64>",
           "tensor<2x4xf64>"},
      Case{"concat",
           {f("a", t23), f("b", "tensor<2x1xf64>")},
           "%y = anvil.concat %a, %b dim = 1 : (" + t23 +
               ", tensor<2x1xf64>) -> tensor<2x4xf64>",
           "tensor<2x4xf64>"},
      Case{"split",
           {f("a", "tensor<2x5xf64>")},
           "%u, %v = anvil.split %a dim = 1 sizes [2, 3] : tensor<2x5xf64> -> "
           "tensor<2x2xf64>, tensor<2x3xf64>\n%y = anvil.exp %v : "
           "tensor<2x3xf64>",
           "tensor<2x3xf64>"},
      Case{"pad",
           {f("a", t23)},
           "%y = anvil.pad %a low [1, 0] high [0, 2] {value = 1.5 : f64} : " +
               t23 + " -> tensor<3x5xf64>",
           "tensor<3x5xf64>"},
      Case{"reduce_sum",
           {f("a", "tensor<2x3x4xf64>")},
           "%y = anvil.reduce_sum %a dims [0, 2] : tensor<2x3x4xf64> -> "
           "tensor<3xf64>",
           "tensor<3xf64>"},
      Case{"reduce_mean",
           {f("a", "tensor<2x3x4xf64>")},
           "%y = anvil.reduce_mean %a dims [1] keep_dims : tensor<2x3x4xf64> "
           "-> tensor<2x1x4xf64>",
           "tensor<2x1x4xf64>"},
      Case{"reduce_max",
           {f("a", "tensor<3x4xf64>")},
           "%y = anvil.reduce_max %a dims [1] : tensor<3x4xf64> -> "
           "tensor<3xf64>",
           "tensor<3xf64>"},
      Case{"reduce_min",
           {f("a", "tensor<3x4xf64>")},
           "%y = anvil.reduce_min %a dims [0, 1] : tensor<3x4xf64> -> "
           "tensor<f64>",
           "tensor<f64>"},
      Case{"softmax",
           {f("a", "tensor<2x5xf64>")},
           "%y = anvil.softmax %a dim = 1 : tensor<2x5xf64>",
           "tensor<2x5xf64>"},
      Case{"log_softmax",
           {f("a", "tensor<3x2xf64>")},
           "%y = anvil.log_softmax %a dim = 0 : tensor<3x2xf64>",
           "tensor<3x2xf64>"},
      Case{"matmul",
           {f("a", t23), f("b", "tensor<3x4xf64>")},
           "%y = anvil.matmul %a, %b : (" + t23 +
               ", tensor<3x4xf64>) -> tensor<2x4xf64>",
           "tensor<2x4xf64>"},
      Case{"matmul (both transposed, batched)",
           {f("a", "tensor<2x3x2xf64>"), f("b", "tensor<2x4x3xf64>")},
           "%y = anvil.matmul %a, %b {transpose_lhs, transpose_rhs} : "
           "(tensor<2x3x2xf64>, tensor<2x4x3xf64>) -> tensor<2x2x4xf64>",
           "tensor<2x2x4xf64>"},
      Case{"matmul (shared rhs, transposed lhs)",
           {f("a", "tensor<2x3x2xf64>"), f("b", "tensor<3x4xf64>")},
           "%y = anvil.matmul %a, %b {transpose_lhs} : (tensor<2x3x2xf64>, "
           "tensor<3x4xf64>) -> tensor<2x2x4xf64>",
           "tensor<2x2x4xf64>"},
      Case{"matmul (shared rhs, transposed rhs)",
           {f("a", "tensor<2x2x3xf64>"), f("b", "tensor<4x3xf64>")},
           "%y = anvil.matmul %a, %b {transpose_rhs} : (tensor<2x2x3xf64>, "
           "tensor<4x3xf64>) -> tensor<2x2x4xf64>",
           "tensor<2x2x4xf64>"},
      // The fused linear layer's rule: anvil.gelu_bias_grad from `pre`,
      // then the layer's two products.
      Case{"linear_gelu",
           {f("x", "tensor<2x3x4xf64>"), f("m", "tensor<4x5xf64>"),
            f("c", "tensor<5xf64>")},
           "%y, %pre = anvil.linear_gelu %x, %m, %c : (tensor<2x3x4xf64>, "
           "tensor<4x5xf64>, tensor<5xf64>) -> (tensor<2x3x5xf64>, "
           "tensor<2x3x5xf64>)",
           "tensor<2x3x5xf64>"},
      Case{"linear_gelu (transposed rhs)",
           {f("x", "tensor<3x4xf64>"), f("m", "tensor<5x4xf64>"),
            f("c", "tensor<5xf64>")},
           "%y, %pre = anvil.linear_gelu %x, %m, %c {transpose_rhs} : "
           "(tensor<3x4xf64>, tensor<5x4xf64>, tensor<5xf64>) -> "
           "(tensor<3x5xf64>, tensor<3x5xf64>)",
           "tensor<3x5xf64>"},
      Case{"layer_norm",
           {f("x", "tensor<2x3x4xf64>"), f("g", "tensor<3x4xf64>"),
            f("b", "tensor<3x4xf64>")},
           "%y = anvil.layer_norm %x scale(%g) bias(%b) axis = 1 : "
           "(tensor<2x3x4xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> "
           "tensor<2x3x4xf64>",
           "tensor<2x3x4xf64>"},
      Case{"layer_norm (no scale or bias)",
           {f("x", "tensor<3x5xf64>")},
           "%y = anvil.layer_norm %x axis = 1 : (tensor<3x5xf64>) -> "
           "tensor<3x5xf64>",
           "tensor<3x5xf64>"},
      Case{"rms_norm",
           {f("x", "tensor<2x3x4xf64>"), f("g", "tensor<4xf64>")},
           "%y = anvil.rms_norm %x scale(%g) axis = 2 : (tensor<2x3x4xf64>, "
           "tensor<4xf64>) -> tensor<2x3x4xf64>",
           "tensor<2x3x4xf64>"},
      Case{"rope",
           {f("x", "tensor<2x3x4xf64>"),
            Arg{"c", "tensor<3x2xf64>", Kind::Seed, 0},
            Arg{"s", "tensor<3x2xf64>", Kind::Seed, 0}},
           "%y = anvil.rope %x, %c, %s : (tensor<2x3x4xf64>, tensor<3x2xf64>, "
           "tensor<3x2xf64>) -> tensor<2x3x4xf64>",
           "tensor<2x3x4xf64>"},
      Case{"upsample_nearest",
           {f("x", "tensor<1x2x2x3xf64>")},
           "%y = anvil.upsample_nearest %x scale [2, 1] : tensor<1x2x2x3xf64> "
           "-> tensor<1x2x4x3xf64>",
           "tensor<1x2x4x3xf64>"},
      Case{"cross_entropy (mean, smoothing, ignored labels)",
           {f("z", "tensor<2x3x5xf64>"),
            Arg{"t", "tensor<2x3xi64>", Kind::Labels, 5}},
           "%y = anvil.cross_entropy mean %z, %t {ignore_index = -1 : i64, "
           "label_smoothing = 0.1 : f64} : (tensor<2x3x5xf64>, "
           "tensor<2x3xi64>) -> tensor<f64>",
           "tensor<f64>"},
      Case{"cross_entropy (none)",
           {f("z", "tensor<4x3xf64>"),
            Arg{"t", "tensor<4xi32>", Kind::Labels, 3}},
           "%y = anvil.cross_entropy none %z, %t {ignore_index = -1 : i64} : "
           "(tensor<4x3xf64>, tensor<4xi32>) -> tensor<4xf64>",
           "tensor<4xf64>"},
      Case{"embedding",
           {f("t", "tensor<5x3xf64>"),
            Arg{"i", "tensor<2x4xi32>", Kind::Index, 5}},
           "%y = anvil.embedding %t[%i] : (tensor<5x3xf64>, tensor<2x4xi32>) "
           "-> tensor<2x4x3xf64>",
           "tensor<2x4x3xf64>"},
      Case{"embedding_bag (mean)",
           {f("t", "tensor<5x3xf64>"),
            Arg{"i", "tensor<2x3xi64>", Kind::Index, 5}},
           "%y = anvil.embedding_bag mean %t[%i] : (tensor<5x3xf64>, "
           "tensor<2x3xi64>) -> tensor<2x3xf64>",
           "tensor<2x3xf64>"},
      Case{"embedding_bag (sum)",
           {f("t", "tensor<4x2xf64>"),
            Arg{"i", "tensor<3x2xi64>", Kind::Index, 4}},
           "%y = anvil.embedding_bag sum %t[%i] : (tensor<4x2xf64>, "
           "tensor<3x2xi64>) -> tensor<3x2xf64>",
           "tensor<3x2xf64>"},
      Case{"attention (causal, grouped-query, cross, 4-D mask)",
           {f("q", "tensor<2x4x3x2xf64>"), f("k", "tensor<2x2x5x2xf64>"),
            f("v", "tensor<2x2x5x3xf64>"), f("m", "tensor<2x1x3x5xf64>")},
           "%y = anvil.attention %q, %k, %v mask(%m) {causal} : "
           "(tensor<2x4x3x2xf64>, tensor<2x2x5x2xf64>, tensor<2x2x5x3xf64>, "
           "tensor<2x1x3x5xf64>) -> tensor<2x4x3x3xf64>",
           "tensor<2x4x3x3xf64>"},
      Case{"attention (2-D mask, scale)",
           {f("q", "tensor<1x2x4x3xf64>"), f("k", "tensor<1x2x4x3xf64>"),
            f("v", "tensor<1x2x4x3xf64>"), f("m", "tensor<4x4xf64>")},
           "%y = anvil.attention %q, %k, %v mask(%m) {scale = 0.7 : f64} : "
           "(tensor<1x2x4x3xf64>, tensor<1x2x4x3xf64>, tensor<1x2x4x3xf64>, "
           "tensor<4x4xf64>) -> tensor<1x2x4x3xf64>",
           "tensor<1x2x4x3xf64>"},
      // The fused form's rule: anvil.flash_attention_grad, from the saved
      // log-sum-exp.
      Case{"flash_attention (causal, grouped-query, cross)",
           {f("q", "tensor<2x4x3x2xf64>"), f("k", "tensor<2x2x5x2xf64>"),
            f("v", "tensor<2x2x5x3xf64>")},
           "%y, %lse = anvil.flash_attention %q, %k, %v {causal} : "
           "(tensor<2x4x3x2xf64>, tensor<2x2x5x2xf64>, tensor<2x2x5x3xf64>) "
           "-> (tensor<2x4x3x3xf64>, tensor<2x4x3xf64>)",
           "tensor<2x4x3x3xf64>"},
      Case{"flash_attention (scale)",
           {f("q", "tensor<1x2x4x3xf64>"), f("k", "tensor<1x2x4x3xf64>"),
            f("v", "tensor<1x2x4x3xf64>")},
           "%y, %lse = anvil.flash_attention %q, %k, %v {scale = 0.7 : f64} "
           ": (tensor<1x2x4x3xf64>, tensor<1x2x4x3xf64>, "
           "tensor<1x2x4x3xf64>) -> (tensor<1x2x4x3xf64>, tensor<1x2x4xf64>)",
           "tensor<1x2x4x3xf64>"},
      // The same in the (B, T, H, D) layout.
      Case{"flash_attention (bshd, causal, grouped-query, cross)",
           {f("q", "tensor<2x3x4x2xf64>"), f("k", "tensor<2x5x2x2xf64>"),
            f("v", "tensor<2x5x2x3xf64>")},
           "%y, %lse = anvil.flash_attention %q, %k, %v {bshd, causal} : "
           "(tensor<2x3x4x2xf64>, tensor<2x5x2x2xf64>, tensor<2x5x2x3xf64>) "
           "-> (tensor<2x3x4x3xf64>, tensor<2x4x3xf64>)",
           "tensor<2x3x4x3xf64>"},
      Case{"conv (1-D, padded)",
           {f("x", "tensor<2x2x7xf64>"), f("k", "tensor<3x2x3xf64>")},
           "%y = anvil.conv %x, %k stride [1] pad_low [1] pad_high [2] "
           "dilation [1] : (tensor<2x2x7xf64>, tensor<3x2x3xf64>) -> "
           "tensor<2x3x8xf64>",
           "tensor<2x3x8xf64>"},
      Case{"conv (2-D, grouped, strided, dilated, bias)",
           {f("x", "tensor<1x4x7x6xf64>"), f("k", "tensor<6x2x2x3xf64>"),
            f("b", "tensor<6xf64>")},
           "%y = anvil.conv %x, %k, %b stride [2, 1] pad_low [1, 0] "
           "pad_high [0, 1] dilation [1, 2] {groups = 2 : i64} : "
           "(tensor<1x4x7x6xf64>, tensor<6x2x2x3xf64>, tensor<6xf64>) -> "
           "tensor<1x6x4x3xf64>",
           "tensor<1x6x4x3xf64>"},
      Case{"conv_transpose (strided, grouped, output padding, bias)",
           {f("x", "tensor<2x4x3xf64>"), f("k", "tensor<4x1x3xf64>"),
            f("b", "tensor<2xf64>")},
           "%y = anvil.conv_transpose %x, %k, %b stride [2] pad_low [1] "
           "pad_high [0] dilation [1] output_padding [1] {groups = 2 : i64} : "
           "(tensor<2x4x3xf64>, tensor<4x1x3xf64>, tensor<2xf64>) -> "
           "tensor<2x2x7xf64>",
           "tensor<2x2x7xf64>"},
      Case{"max_pool",
           {f("x", "tensor<2x2x5x4xf64>")},
           "%y = anvil.max_pool %x window [3, 2] stride [2, 2] pad_low [1, 0] "
           "pad_high [1, 1] : tensor<2x2x5x4xf64> -> tensor<2x2x3x2xf64>",
           "tensor<2x2x3x2xf64>"},
      Case{"avg_pool",
           {f("x", "tensor<1x2x5x4xf64>")},
           "%y = anvil.avg_pool %x window [3, 2] stride [2, 1] pad_low [1, 1] "
           "pad_high [1, 0] : tensor<1x2x5x4xf64> -> tensor<1x2x3x4xf64>",
           "tensor<1x2x3x4xf64>"},
      Case{"avg_pool (count_include_pad)",
           {f("x", "tensor<1x1x6xf64>")},
           "%y = anvil.avg_pool %x window [3] stride [2] pad_low [1] "
           "pad_high [1] {count_include_pad} : tensor<1x1x6xf64> -> "
           "tensor<1x1x3xf64>",
           "tensor<1x1x3xf64>"},
      Case{"group_norm",
           {f("x", "tensor<2x4x3xf64>"), f("g", "tensor<4xf64>"),
            f("b", "tensor<4xf64>")},
           "%y = anvil.group_norm %x scale(%g) bias(%b) groups = 2 : "
           "(tensor<2x4x3xf64>, tensor<4xf64>, tensor<4xf64>) -> "
           "tensor<2x4x3xf64>",
           "tensor<2x4x3xf64>"},
      Case{"instance_norm",
           {f("x", "tensor<2x3x2x2xf64>"), f("g", "tensor<3xf64>")},
           "%y = anvil.instance_norm %x scale(%g) : (tensor<2x3x2x2xf64>, "
           "tensor<3xf64>) -> tensor<2x3x2x2xf64>",
           "tensor<2x3x2x2xf64>"},
      Case{"batch_norm_train (output and statistics)",
           {f("x", "tensor<3x2x4xf64>"), f("g", "tensor<2xf64>"),
            f("b", "tensor<2xf64>")},
           "%o:3 = anvil.batch_norm_train %x, %g, %b : (tensor<3x2x4xf64>, "
           "tensor<2xf64>, tensor<2xf64>) -> (tensor<3x2x4xf64>, "
           "tensor<2xf64>, tensor<2xf64>)\n"
           "%mb = anvil.broadcast %o#1, dims = [1] : tensor<2xf64> -> "
           "tensor<3x2x4xf64>\n%vb = anvil.broadcast %o#2, dims = [1] : "
           "tensor<2xf64> -> tensor<3x2x4xf64>\n%mv = anvil.mul %mb, %vb : "
           "tensor<3x2x4xf64>\n%y = anvil.add %o#0, %mv : tensor<3x2x4xf64>",
           "tensor<3x2x4xf64>"},
      Case{"batch_norm_inference",
           {f("x", "tensor<2x3x2xf64>"), f("g", "tensor<3xf64>"),
            f("b", "tensor<3xf64>"), f("m", "tensor<3xf64>"),
            f("v", "tensor<3xf64>", Kind::Positive)},
           "%y = anvil.batch_norm_inference %x, %g, %b, %m, %v : "
           "(tensor<2x3x2xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, "
           "tensor<3xf64>) -> tensor<2x3x2xf64>",
           "tensor<2x3x2xf64>"},
      Case{"gather (2-D indices, middle axis)",
           {f("x", "tensor<2x5x3xf64>"),
            Arg{"i", "tensor<2x2xi64>", Kind::Index, 5}},
           "%y = anvil.gather %x[%i] axis = 1 : (tensor<2x5x3xf64>, "
           "tensor<2x2xi64>) -> tensor<2x2x2x3xf64>",
           "tensor<2x2x2x3xf64>"},
      Case{"slice (strided)",
           {f("a", "tensor<5x7xf64>")},
           "%y = anvil.slice %a [1:5:2, 0:7:3] : tensor<5x7xf64> -> "
           "tensor<2x3xf64>",
           "tensor<2x3xf64>"},
      Case{"focal_loss",
           {f("a", t23), f("b", t23, Kind::Unit)},
           "%y = anvil.focal_loss mean %a, %b {gamma = 2.0 : f64} : (" + t23 +
               ", " + t23 + ") -> tensor<f64>",
           "tensor<f64>"},
      Case{"focal_loss (no alpha, gamma 1.5, none)",
           {f("a", t23), f("b", t23, Kind::Unit)},
           "%y = anvil.focal_loss none %a, %b {alpha = -1.0 : f64, gamma = 1.5 "
           ": f64} : (" +
               t23 + ", " + t23 + ") -> " + t23,
           t23},
      Case{"dice_loss",
           {f("a", "tensor<2x2x3xf64>", Kind::Unit),
            f("b", "tensor<2x2x3xf64>", Kind::Unit)},
           "%y = anvil.dice_loss mean %a, %b {smooth = 0.5 : f64} : "
           "(tensor<2x2x3xf64>, tensor<2x2x3xf64>) -> tensor<f64>",
           "tensor<f64>"},
      Case{"mse_loss",
           {f("a", t23), f("b", t23)},
           "%y = anvil.mse_loss mean %a, %b : (" + t23 + ", " + t23 +
               ") -> tensor<f64>",
           "tensor<f64>"},
      Case{"bce_with_logits",
           {f("a", t23), f("b", t23, Kind::Unit)},
           "%y = anvil.bce_with_logits none %a, %b : (" + t23 + ", " + t23 +
               ") -> " + t23,
           t23},
  };
  return c;
}

/// `tensor<2x3xf64>` -> {2, 3}.
std::vector<int64_t> shapeOf(MLIRContext &ctx, const std::string &type) {
  auto t = cast<RankedTensorType>(parseType(type, &ctx));
  return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
}

class AutodiffTest : public ::testing::TestWithParam<Case> {
protected:
  AutodiffTest() {
    context.loadDialect<mlir::anvil::AnvilDialect, func::FuncDialect>();
  }
  MLIRContext context;
};

TEST_P(AutodiffTest, MatchesCentralFiniteDifferences) {
  const Case &c = GetParam();
  // Float arguments are trainable parameters; others are inputs; %w
  // projects the output to a scalar loss.
  std::string sig;
  for (const Arg &a : c.args) {
    bool param =
        a.kind != Kind::Labels && a.kind != Kind::Index && a.kind != Kind::Seed;
    sig +=
        "%" + a.name + ": " + a.type +
        (param ? " {anvil.param = #anvil.param<name = \"" + a.name +
                     "\", init = #anvil.init<zeros>>}, "
               : " {anvil.input = #anvil.input<name = \"" + a.name + "\">}, ");
  }
  sig += "%w: " + c.yType + " {anvil.input = #anvil.input<name = \"w\">}";
  int64_t rank = shapeOf(context, c.yType).size();
  std::string dims;
  for (int64_t d = 0; d < rank; ++d)
    dims += (d ? ", " : "") + std::to_string(d);
  std::string source = "func.func @forward(" + sig + ") -> tensor<f64> {\n" +
                       c.body + "\n%p = anvil.mul %y, %w : " + c.yType +
                       "\n%l = anvil.reduce_sum %p dims [" + dims +
                       "] : " + c.yType +
                       " -> tensor<f64>\nreturn %l : tensor<f64>\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << source;
  PassManager pm(&context);
  pm.addPass(mlir::anvil::createAnvilAutodiffPass());
  ASSERT_TRUE(succeeded(pm.run(*module))) << source;
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto grad = module->lookupSymbol<func::FuncOp>("forward_grad");
  ASSERT_TRUE(grad);

  for (uint64_t seed : {1, 2, 3}) {
    std::mt19937_64 rng(seed * 7919 + c.op.size());
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> unit(0.05, 0.95);
    std::vector<interp::Buffer> args;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto type = cast<RankedTensorType>(forward.getArgumentTypes()[i]);
      interp::Buffer b = interp::Buffer::of(type);
      Kind kind = i < c.args.size() ? c.args[i].kind : Kind::Normal;
      for (double &x : b.data) {
        switch (kind) {
        case Kind::Normal:
          x = normal(rng);
          break;
        case Kind::Positive:
          x = std::abs(normal(rng)) + 0.5;
          break;
        case Kind::Unit:
          x = unit(rng);
          break;
        case Kind::Labels:
          x = static_cast<double>(rng() % (c.args[i].classes + 1)) - 1.0;
          break;
        case Kind::Index:
          x = static_cast<double>(rng() % c.args[i].classes);
          break;
        case Kind::Seed:
          x = isa<FloatType>(type.getElementType()) ? normal(rng)
                                                    : static_cast<double>(seed);
          break;
        }
      }
      args.push_back(std::move(b));
    }
    auto analytic = interp::run(grad, args);
    ASSERT_TRUE(succeeded(analytic));

    auto loss = [&](const std::vector<interp::Buffer> &a) {
      auto r = interp::run(forward, a);
      EXPECT_TRUE(succeeded(r));
      return succeeded(r) ? (*r)[0].data[0] : NAN;
    };
    const double h = 1e-5;
    unsigned result = 1;
    for (unsigned i = 0; i < c.args.size(); ++i) {
      Kind kind = c.args[i].kind;
      if (kind == Kind::Labels || kind == Kind::Index || kind == Kind::Seed)
        continue;
      const interp::Buffer &g = (*analytic)[result++];
      double diff2 = 0, ref2 = 0;
      for (int64_t k = 0; k < args[i].numElements(); ++k) {
        std::vector<interp::Buffer> plus = args, minus = args;
        plus[i].data[k] += h;
        minus[i].data[k] -= h;
        double fd = (loss(plus) - loss(minus)) / (2 * h);
        diff2 += (g.data[k] - fd) * (g.data[k] - fd);
        ref2 += fd * fd;
      }
      double rel = std::sqrt(diff2) / std::max(std::sqrt(ref2), 1e-12);
      EXPECT_LE(rel, 1e-6) << c.op << ": d/d" << c.args[i].name << ", seed "
                           << seed;
    }
  }
}

TEST(AutodiffCoverage, EveryOpWithAVJPRuleHasACase) {
  // stop_gradient's rule (no gradient) and fp8_quantize's (straight
  // through, the gradient quantized) are checked by test/Training instead:
  // finite differences see through the first and see a step function in
  // the second, by design.
  MLIRContext context;
  context.loadDialect<mlir::anvil::AnvilDialect>();
  std::string bodies;
  for (const Case &c : cases())
    bodies += c.body + "\n";
  int rules = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "anvil" ||
        !name.hasInterface<mlir::anvil::VJPOpInterface>() ||
        name.getStringRef() == "anvil.stop_gradient" ||
        name.getStringRef() == "anvil.fp8_quantize")
      continue;
    ++rules;
    EXPECT_NE(bodies.find(name.getStringRef().str() + " "), std::string::npos)
        << name.getStringRef().str() << " has a VJP rule but no case";
  }
  EXPECT_EQ(rules, 65);
}

INSTANTIATE_TEST_SUITE_P(EveryDifferentiableOp, AutodiffTest,
                         ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           std::string n;
                           for (char ch : info.param.op)
                             n += std::isalnum(static_cast<unsigned char>(ch))
                                      ? ch
                                      : '_';
                           return n;
                         });

} // namespace
