//===- OptimizerTest.cpp - @train_step against the published update rules -===//
//
// Each optimizer's @train_step runs three steps in the interpreter (state
// fed back through `anvil.tied_to`) on L = |w - x|^2 + |b - z|^2, whose
// gradients are 2 (w - x) and 2 (b - z); the parameters must match an
// independent implementation of the update rule written below from the
// papers and PyTorch's documentation, to 1e-12 relative. A tiny GPT then
// trains through the interpreter and its loss must halve in 30 steps.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Frontend/Models/GPT.h"
#include "anvil/Interp/Interpreter.h"
#include "anvil/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>

using namespace mlir;
namespace interp = ::anvil::interp;

namespace {

struct Config {
  std::string name, options;
  std::string opt;
  double lr, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0, mom = 0;
  bool nesterov = false;
  double clip = 0;
  int warmup = 0;
  std::string decay = "none";
  int total = 0;
  double minRatio = 0;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  c.push_back({"sgd", "optimizer=sgd lr=0.1", "sgd", 0.1});
  Config m{"sgd_momentum",
           "optimizer=sgd lr=0.1 momentum=0.9 weight-decay=0.01", "sgd", 0.1};
  m.mom = 0.9;
  m.wd = 0.01;
  c.push_back(m);
  Config n{"sgd_nesterov", "optimizer=sgd lr=0.05 momentum=0.8 nesterov=true",
           "sgd", 0.05};
  n.mom = 0.8;
  n.nesterov = true;
  c.push_back(n);
  Config a{"adam", "optimizer=adam lr=0.05 weight-decay=0.01", "adam", 0.05};
  a.wd = 0.01;
  c.push_back(a);
  Config w{"adamw_warmup_cosine_clip",
           "optimizer=adamw lr=0.05 beta1=0.8 beta2=0.95 weight-decay=0.1 "
           "warmup=2 decay=cosine total-steps=5 clip=1.0",
           "adamw", 0.05};
  w.b1 = 0.8;
  w.b2 = 0.95;
  w.wd = 0.1;
  w.warmup = 2;
  w.decay = "cosine";
  w.total = 5;
  w.clip = 1.0;
  c.push_back(w);
  Config l{
      "lamb_linear",
      "optimizer=lamb lr=0.05 weight-decay=0.01 decay=linear total-steps=4 "
      "min-lr-ratio=0.1",
      "lamb", 0.05};
  l.wd = 0.01;
  l.decay = "linear";
  l.total = 4;
  l.minRatio = 0.1;
  c.push_back(l);
  Config g{"adagrad", "optimizer=adagrad lr=0.1 weight-decay=0.01 eps=1e-10",
           "adagrad", 0.1};
  g.wd = 0.01;
  g.eps = 1e-10;
  c.push_back(g);
  return c;
}

/// The reference: one parameter tensor with its optimizer state.
struct RefParam {
  std::vector<double> p, buf, m, v, sum;
  bool decayed;
};

double scheduleAt(const Config &c, double t) {
  double f = 1.0;
  if (c.warmup > 0)
    f = std::min(1.0, t / c.warmup);
  if (c.decay != "none") {
    double progress =
        std::clamp((t - c.warmup) / double(c.total - c.warmup), 0.0, 1.0);
    double shape = c.decay == "cosine" ? 0.5 * (1 + std::cos(M_PI * progress))
                                       : 1 - progress;
    f *= c.minRatio + (1 - c.minRatio) * shape;
  }
  return c.lr * f;
}

void referenceStep(const Config &c, std::vector<RefParam> &params,
                   std::vector<std::vector<double>> grads, double t) {
  double lr = scheduleAt(c, t);
  if (c.clip > 0) {
    double n2 = 0;
    for (auto &g : grads)
      for (double x : g)
        n2 += x * x;
    double coef = std::min(1.0, c.clip / (std::sqrt(n2) + 1e-6));
    for (auto &g : grads)
      for (double &x : g)
        x *= coef;
  }
  for (size_t k = 0; k < params.size(); ++k) {
    RefParam &P = params[k];
    std::vector<double> &g = grads[k];
    size_t n = P.p.size();
    double wd = P.decayed ? c.wd : 0.0;
    if (c.opt == "sgd" || c.opt == "adam" || c.opt == "adagrad")
      for (size_t i = 0; i < n; ++i)
        g[i] += wd * P.p[i]; // L2 decay
    if (c.opt == "sgd") {
      for (size_t i = 0; i < n; ++i) {
        double d = g[i];
        if (c.mom > 0) {
          P.buf[i] = c.mom * P.buf[i] + g[i];
          d = c.nesterov ? g[i] + c.mom * P.buf[i] : P.buf[i];
        }
        P.p[i] -= lr * d;
      }
    } else if (c.opt == "adagrad") {
      for (size_t i = 0; i < n; ++i) {
        P.sum[i] += g[i] * g[i];
        P.p[i] -= lr * g[i] / (std::sqrt(P.sum[i]) + c.eps);
      }
    } else {
      std::vector<double> r(n);
      for (size_t i = 0; i < n; ++i) {
        P.m[i] = c.b1 * P.m[i] + (1 - c.b1) * g[i];
        P.v[i] = c.b2 * P.v[i] + (1 - c.b2) * g[i] * g[i];
        double mh = P.m[i] / (1 - std::pow(c.b1, t));
        double vh = P.v[i] / (1 - std::pow(c.b2, t));
        r[i] = mh / (std::sqrt(vh) + c.eps);
      }
      if (c.opt == "lamb") {
        double pn = 0, rn = 0;
        for (size_t i = 0; i < n; ++i) {
          r[i] += wd * P.p[i];
          pn += P.p[i] * P.p[i];
          rn += r[i] * r[i];
        }
        pn = std::sqrt(pn);
        rn = std::sqrt(rn);
        double trust = pn > 0 && rn > 0 ? pn / rn : 1.0;
        for (size_t i = 0; i < n; ++i)
          P.p[i] -= lr * trust * r[i];
      } else {
        for (size_t i = 0; i < n; ++i) {
          if (c.opt == "adamw")
            P.p[i] -= lr * wd * P.p[i]; // decoupled decay
          P.p[i] -= lr * r[i];
        }
      }
    }
  }
}

/// The reference rule run for `steps` steps from (w, b) on the model's
/// loss, whose gradients are 2 (w - x) and 2 (b - z).
std::vector<RefParam> referenceRun(const Config &c,
                                   const std::vector<double> &w,
                                   const std::vector<double> &b,
                                   const std::vector<double> &x,
                                   const std::vector<double> &z, int steps) {
  std::vector<RefParam> ref{{w, {}, {}, {}, {}, true},
                            {b, {}, {}, {}, {}, false}};
  for (RefParam &P : ref)
    P.buf = P.m = P.v = P.sum = std::vector<double>(P.p.size(), 0.0);
  for (int t = 1; t <= steps; ++t) {
    std::vector<std::vector<double>> grads(2);
    for (size_t i = 0; i < w.size(); ++i)
      grads[0].push_back(2 * (ref[0].p[i] - x[i]));
    for (size_t i = 0; i < b.size(); ++i)
      grads[1].push_back(2 * (ref[1].p[i] - z[i]));
    referenceStep(c, ref, grads, t);
  }
  return ref;
}

const char *kModel = R"mlir(
func.func @forward(%w: tensor<2x3xf64> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                   %b: tensor<3xf64> {anvil.param = #anvil.param<name = "b", init = #anvil.init<zeros>>},
                   %x: tensor<2x3xf64> {anvil.input = #anvil.input<name = "x">},
                   %z: tensor<3xf64> {anvil.input = #anvil.input<name = "z">}) -> tensor<f64> {
  %l1 = anvil.mse_loss sum %w, %x : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<f64>
  %l2 = anvil.mse_loss sum %b, %z : (tensor<3xf64>, tensor<3xf64>) -> tensor<f64>
  %l = anvil.add %l1, %l2 : tensor<f64>
  return %l : tensor<f64>
}
)mlir";

/// Runs `steps` calls of @train_step, feeding each tied result back into
/// its argument; returns the final arguments and the losses.
std::vector<interp::Buffer> train(func::FuncOp step,
                                  std::vector<interp::Buffer> args, int steps,
                                  std::vector<double> *losses = nullptr) {
  for (int s = 0; s < steps; ++s) {
    auto out = interp::run(step, args);
    EXPECT_TRUE(succeeded(out));
    if (failed(out))
      return args;
    if (losses)
      losses->push_back((*out)[0].data[0]);
    for (unsigned r = 1; r < out->size(); ++r) {
      if (step.getResultAttr(r, mlir::anvil::AnvilDialect::kMetricAttrName))
        continue; // the learning rate
      auto tied = step.getResultAttrOfType<IntegerAttr>(
          r, mlir::anvil::AnvilDialect::kTiedAttrName);
      EXPECT_TRUE(tied) << "result #" << r << " is not tied";
      if (tied)
        args[tied.getInt()].data = (*out)[r].data;
    }
  }
  return args;
}

/// gtest prints parameters with this (instead of their bytes).
void PrintTo(const Config &c, std::ostream *os) { *os << c.options; }

/// Builds a pass manager from a textual pipeline of Anvil passes.
LogicalResult makePipeline(const std::string &text, PassManager &pm) {
  static bool registered = [] {
    mlir::anvil::registerAnvilTrainingPasses();
    return true;
  }();
  (void)registered;
  return parsePassPipeline(text, pm);
}

class OptimizerTest : public ::testing::TestWithParam<Config> {};

TEST_P(OptimizerTest, ThreeStepsMatchThePublishedRule) {
  const Config &c = GetParam();
  MLIRContext context;
  context.loadDialect<mlir::anvil::AnvilDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModel, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  ASSERT_TRUE(
      succeeded(makePipeline("anvil-optimizer{" + c.options + "}", pm)));
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(step);

  // Arguments: w, b, the state (zeros), step (0), x, z.
  std::vector<double> w{0.5, -1.0, 2.0, 0.3, -0.7, 1.1}, b{0.2, 0.0, -0.4};
  std::vector<double> x{1.0, 0.5, -2.0, 0.0, 0.7, 3.0}, z{-1.0, 2.0, 0.5};
  std::vector<interp::Buffer> args;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    args.push_back(
        interp::Buffer::of(cast<RankedTensorType>(step.getArgumentTypes()[i])));
  args[0].data = w;
  args[1].data = b;
  args[args.size() - 2].data = x;
  args.back().data = z;
  args = train(step, args, 3);

  std::vector<RefParam> ref = referenceRun(c, w, b, x, z, 3);
  for (int k = 0; k < 2; ++k)
    for (size_t i = 0; i < ref[k].p.size(); ++i)
      EXPECT_NEAR(args[k].data[i], ref[k].p[i],
                  1e-12 * std::max(1.0, std::abs(ref[k].p[i])))
          << (k ? "b" : "w") << "[" << i << "]";
  EXPECT_EQ(args[2 + 0].data.size() > 0, true);
}

INSTANTIATE_TEST_SUITE_P(EveryOptimizer, OptimizerTest,
                         ::testing::ValuesIn(configs()),
                         [](const ::testing::TestParamInfo<Config> &info) {
                           return info.param.name;
                         });

TEST(OptimizerPass, BadOptionsNameTheOption) {
  MLIRContext context;
  context.loadDialect<mlir::anvil::AnvilDialect, func::FuncDialect>();
  for (auto [options, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {"optimizer=rmsprop", "optimizer = 'rmsprop' is not one of"},
           {"decay=step", "decay = 'step' is not one of none, cosine, linear"},
           {"decay=cosine total-steps=0",
            "needs total-steps (0) greater than warmup"},
           {"optimizer=sgd nesterov=true", "nesterov needs momentum > 0"},
           {"min-lr-ratio=2", "must lie in [0, 1]"},
           {"accumulate=0", "accumulate = 0 must be at least 1"},
           {"loss-scale=static", "loss-scale = 'static' is not one of"}}) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kModel, &context);
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      message = d.str();
      return success();
    });
    PassManager pm(&context);
    ASSERT_TRUE(
        succeeded(makePipeline("anvil-optimizer{" + options + "}", pm)));
    EXPECT_TRUE(failed(pm.run(*module))) << options;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

TEST(Training, TinyGptLossHalvesInThirtySteps) {
  MLIRContext context;
  ::anvil::frontend::GPTConfig config =
      *::anvil::frontend::findGPTConfig("gpt-tiny");
  config.layers = 1;
  config.width = 32;
  config.heads = 4;
  config.context = 16;
  config.vocab = 16;
  config.batch = 4;
  config.seqLen = 16;
  OwningOpRef<ModuleOp> module = ::anvil::frontend::buildGPT(context, config);
  PassManager pm(&context);
  ASSERT_TRUE(
      succeeded(makePipeline("anvil-optimizer{optimizer=adamw lr=0.01}", pm)));
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(step);
  // Parameters and state from their initializers (state: zeros), and one
  // fixed batch: sequences counting up modulo the vocabulary, targets the
  // next token.
  std::vector<interp::Buffer> args;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    args.push_back(interp::randomArgument(step, i, /*seed=*/5, /*intHigh=*/16));
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto name = interp::argumentName(step, i);
    if (step.getArgAttr(i, mlir::anvil::AnvilDialect::kStateAttrName)) {
      EXPECT_TRUE(llvm::all_of(args[i].data, [](double x) { return x == 0; }));
    }
    if (name == "tokens" || name == "targets")
      for (int64_t k = 0; k < args[i].numElements(); ++k)
        args[i].data[k] = (k / 16 * 3 + k % 16 + (name == "targets")) % 16;
  }
  std::vector<double> losses;
  train(step, args, 30, &losses);
  ASSERT_EQ(losses.size(), 30u);
  std::cout << "tiny GPT, adamw lr=0.01: loss " << losses.front() << " -> "
            << losses.back() << " in 30 steps\n";
  EXPECT_LE(losses.back(), 0.5 * losses.front())
      << "first " << losses.front() << ", last " << losses.back();
}

} // namespace

namespace {

TEST(Training, LoraTrainsOnlyTheAdapters) {
  // GPT with rank-2 adapters on c_attn and c_proj: after three AdamW steps
  // the base weights are bit-for-bit what they were and every adapter's B
  // (zero at the start) has moved.
  MLIRContext context;
  ::anvil::frontend::GPTConfig config =
      *::anvil::frontend::findGPTConfig("gpt-tiny");
  config.layers = 1;
  config.width = 16;
  config.heads = 2;
  config.context = 8;
  config.vocab = 12;
  config.batch = 2;
  config.seqLen = 8;
  config.loraRank = 2;
  config.loraTargets = "c_attn+c_proj";
  OwningOpRef<ModuleOp> module = ::anvil::frontend::buildGPT(context, config);
  PassManager pm(&context);
  ASSERT_TRUE(
      succeeded(makePipeline("anvil-optimizer{optimizer=adamw lr=0.05}", pm)));
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  std::vector<interp::Buffer> args;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    args.push_back(interp::randomArgument(step, i, /*seed=*/3, /*intHigh=*/12));
  std::vector<interp::Buffer> after = train(step, args, 3);

  int adapters = 0, frozen = 0;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto p = step.getArgAttrOfType<mlir::anvil::ParamAttr>(
        i, mlir::anvil::AnvilDialect::kParamAttrName);
    if (!p)
      continue;
    bool isAdapter = p.getName().contains(".lora_");
    EXPECT_EQ(p.getTrainable(), isAdapter) << p.getName().str();
    if (!isAdapter) {
      ++frozen;
      EXPECT_EQ(after[i].data, args[i].data) << p.getName().str();
      continue;
    }
    ++adapters;
    if (p.getName().ends_with("lora_B.weight")) {
      EXPECT_TRUE(llvm::any_of(after[i].data, [](double x) { return x != 0; }))
          << p.getName().str() << " did not change";
    }
  }
  EXPECT_EQ(adapters, 4);
  EXPECT_EQ(frozen, 2 + 12 + 2);
  // Only adapters, their state and the step are updated (tied results).
  int tied = 0;
  for (unsigned r = 1; r < step.getNumResults(); ++r)
    tied +=
        step.getResultAttr(r, mlir::anvil::AnvilDialect::kTiedAttrName) ? 1 : 0;
  EXPECT_EQ(tied, 4 /*adapters*/ + 4 * 2 /*m, v*/ + 1 /*step*/);
}

} // namespace

namespace {

/// Builds @train_step of kModel with `options`; returns it (or null).
func::FuncOp buildStep(MLIRContext &context, OwningOpRef<ModuleOp> &module,
                       const std::string &options) {
  context.loadDialect<mlir::anvil::AnvilDialect, func::FuncDialect>();
  module = parseSourceString<ModuleOp>(kModel, &context);
  PassManager pm(&context);
  if (failed(makePipeline("anvil-optimizer{" + options + "}", pm)) ||
      failed(pm.run(*module)))
    return nullptr;
  return module->lookupSymbol<func::FuncOp>("train_step");
}

/// Arguments from initializers (state) with w, b, x, z set by name.
std::vector<interp::Buffer>
stepArguments(func::FuncOp step,
              const std::map<std::string, std::vector<double>> &values) {
  std::vector<interp::Buffer> args;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    args.push_back(interp::randomArgument(step, i, 0, 2));
    auto name = interp::argumentName(step, i);
    if (name && values.count(*name))
      args[i].data = values.at(*name);
  }
  return args;
}

double named(func::FuncOp step, const std::vector<interp::Buffer> &args,
             const std::string &name, size_t i = 0) {
  for (unsigned k = 0; k < step.getNumArguments(); ++k)
    if (interp::argumentName(step, k) == name)
      return args[k].data[i];
  ADD_FAILURE() << "no argument " << name;
  return NAN;
}

const std::vector<double> kW{0.5, -1.0, 2.0, 0.3, -0.7, 1.1},
    kB{0.2, 0.0, -0.4};
const std::vector<double> kX{1.0, 0.5, -2.0, 0.0, 0.7, 3.0}, kZ{-1.0, 2.0, 0.5};

TEST(OptimizerPass, GradientAccumulationAveragesMicroBatches) {
  // Two micro-batches (x, z) and (x2, z2): the step's gradients are the
  // mean of theirs, 2 (w - (x + x2) / 2), as for one batch of the mean.
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp step =
      buildStep(context, module, "optimizer=adam lr=0.05 accumulate=2");
  ASSERT_TRUE(step);
  std::vector<double> x2{0.0, 1.5, 2.0, -1.0, 0.3, 1.0}, z2{1.0, 0.0, -0.5};
  std::vector<double> xs(kX), zs(kZ);
  xs.insert(xs.end(), x2.begin(), x2.end());
  zs.insert(zs.end(), z2.begin(), z2.end());
  auto args = train(
      step, stepArguments(step, {{"w", kW}, {"b", kB}, {"x", xs}, {"z", zs}}),
      3);
  Config c{"", "", "adam", 0.05};
  std::vector<double> xMean, zMean;
  for (size_t i = 0; i < kX.size(); ++i)
    xMean.push_back((kX[i] + x2[i]) / 2);
  for (size_t i = 0; i < kZ.size(); ++i)
    zMean.push_back((kZ[i] + z2[i]) / 2);
  std::vector<RefParam> ref = referenceRun(c, kW, kB, xMean, zMean, 3);
  for (size_t i = 0; i < kW.size(); ++i)
    EXPECT_NEAR(named(step, args, "w", i), ref[0].p[i], 1e-12);
}

TEST(OptimizerPass, DynamicLossScalingSkipsOverflowingSteps) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp step =
      buildStep(context, module,
                "optimizer=adam lr=0.05 loss-scale=dynamic scale-init=1024 "
                "scale-growth-interval=2");
  ASSERT_TRUE(step);
  // Finite steps: the same parameters as without scaling (the scale is a
  // power of two), the scale doubles after two of them.
  auto args = stepArguments(step, {{"w", kW}, {"b", kB}, {"x", kX}, {"z", kZ}});
  EXPECT_EQ(named(step, args, "loss_scale"), 1024.0);
  auto after = train(step, args, 3);
  Config c{"", "", "adam", 0.05};
  std::vector<RefParam> ref = referenceRun(c, kW, kB, kX, kZ, 3);
  for (size_t i = 0; i < kW.size(); ++i)
    EXPECT_NEAR(named(step, after, "w", i), ref[0].p[i], 1e-12);
  EXPECT_EQ(named(step, after, "loss_scale"), 2048.0);
  EXPECT_EQ(named(step, after, "loss_scale.good_steps"), 1.0);
  EXPECT_EQ(named(step, after, "step"), 3.0);

  // An infinite input makes the gradients non-finite: nothing moves, the
  // step counter does not advance, and the scale halves.
  std::vector<double> bad(kX);
  bad[2] = INFINITY;
  auto skipped =
      stepArguments(step, {{"w", kW}, {"b", kB}, {"x", bad}, {"z", kZ}});
  auto next = train(step, skipped, 1);
  for (size_t i = 0; i < kW.size(); ++i)
    EXPECT_EQ(named(step, next, "w", i), kW[i]);
  EXPECT_EQ(named(step, next, "opt.adam.m.w"), 0.0);
  EXPECT_EQ(named(step, next, "step"), 0.0);
  EXPECT_EQ(named(step, next, "loss_scale"), 512.0);
  EXPECT_EQ(named(step, next, "loss_scale.good_steps"), 0.0);
}

} // namespace

namespace {

/// Parses `source`, runs `pipeline`, returns the function `name`.
func::FuncOp compile(MLIRContext &context, OwningOpRef<ModuleOp> &module,
                     const std::string &source, const std::string &pipeline,
                     StringRef name) {
  context.loadDialect<mlir::anvil::AnvilDialect, func::FuncDialect>();
  module = parseSourceString<ModuleOp>(source, &context);
  PassManager pm(&context);
  if (!module || failed(makePipeline(pipeline, pm)) || failed(pm.run(*module)))
    return nullptr;
  return module->lookupSymbol<func::FuncOp>(name);
}

TEST(OptimizerPass, HalfPrecisionParametersUpdateInF32) {
  // f16 parameters, Adam with dynamic loss scaling at its default 65536
  // (not an f16 number): the first step overflows and is skipped, then the
  // updates run in f32: a zero gradient leaves its element exactly as it
  // was (eps = 1e-8 is 0 in f16, and 0/0 would be NaN), the other moves.
  const char *source = R"mlir(
func.func @forward(%w: tensor<2xf16> {anvil.param = #anvil.param<name = "w", init = #anvil.init<ones>>},
                   %x: tensor<2xf16> {anvil.input = #anvil.input<name = "x">}) -> tensor<f16> {
  %l = anvil.mse_loss sum %w, %x : (tensor<2xf16>, tensor<2xf16>) -> tensor<f16>
  return %l : tensor<f16>
}
)mlir";
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp step =
      compile(context, module, source,
              "anvil-optimizer{optimizer=adam lr=0.1 loss-scale=dynamic}",
              "train_step");
  ASSERT_TRUE(step);
  auto args = stepArguments(step, {{"w", {1.0, 1.0}}, {"x", {1.0, 0.5}}});
  auto after = train(step, args, 3);
  EXPECT_EQ(named(step, after, "loss_scale"), 32768.0);
  EXPECT_EQ(named(step, after, "step"), 2.0);
  EXPECT_EQ(named(step, after, "w", 0), 1.0);
  double w1 = named(step, after, "w", 1);
  EXPECT_TRUE(std::isfinite(w1) && w1 < 1.0) << w1;
}

TEST(OptimizerPass, MetricsAreReturnedAfterTheLoss) {
  const char *source = R"mlir(
func.func @forward(%w: tensor<2xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<ones>>},
                   %x: tensor<2xf32> {anvil.input = #anvil.input<name = "x">}) -> (tensor<f32>, tensor<f32>) {
  %l = anvil.mse_loss sum %w, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  %m = anvil.reduce_max %w dims [0] : tensor<2xf32> -> tensor<f32>
  return %l, %m : tensor<f32>, tensor<f32>
}
)mlir";
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp step =
      compile(context, module, source, "anvil-optimizer{optimizer=sgd lr=0.1}",
              "train_step");
  ASSERT_TRUE(step);
  // (loss, metric, lr, w', step'): the metrics are not tied, w' and step'
  // are; the learning rate is named.
  ASSERT_EQ(step.getNumResults(), 5u);
  EXPECT_FALSE(step.getResultAttr(1, mlir::anvil::AnvilDialect::kTiedAttrName));
  EXPECT_FALSE(step.getResultAttr(2, mlir::anvil::AnvilDialect::kTiedAttrName));
  EXPECT_EQ(step.getResultAttr(2, mlir::anvil::AnvilDialect::kMetricAttrName),
            StringAttr::get(&context, "lr"));
  EXPECT_TRUE(step.getResultAttr(3, mlir::anvil::AnvilDialect::kTiedAttrName));
  auto out = interp::run(
      step, stepArguments(step, {{"w", {1.0, 3.0}}, {"x", {0.0, 0.0}}}));
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ((*out)[0].data[0], 10.0);      // 1 + 9
  EXPECT_EQ((*out)[1].data[0], 3.0);       // max(w)
  EXPECT_FLOAT_EQ((*out)[2].data[0], 0.1); // lr
}

TEST(Autodiff, MaxSplitsTiesAndIgnoredLabelsGiveZeros) {
  const char *source = R"mlir(
func.func @forward(%x: tensor<3xf64> {anvil.param = #anvil.param<name = "x", init = #anvil.init<zeros>>},
                   %z: tensor<2x3xf64> {anvil.param = #anvil.param<name = "z", init = #anvil.init<zeros>>},
                   %t: tensor<2xi32> {anvil.input = #anvil.input<name = "t">}) -> tensor<f64> {
  %m = anvil.reduce_max %x dims [0] : tensor<3xf64> -> tensor<f64>
  %c = anvil.cross_entropy mean %z, %t {ignore_index = -1 : i64} : (tensor<2x3xf64>, tensor<2xi32>) -> tensor<f64>
  %l = anvil.add %m, %c : tensor<f64>
  return %l : tensor<f64>
}
)mlir";
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp grad =
      compile(context, module, source, "anvil-autodiff", "forward_grad");
  ASSERT_TRUE(grad);
  auto out = interp::run(grad, stepArguments(grad, {{"x", {1.0, 1.0, 0.0}},
                                                    {"z", {1, 2, 3, 4, 5, 6}},
                                                    {"t", {-1, -1}}}));
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ((*out)[0].data[0], 1.0); // max 1, cross-entropy 0 (all ignored)
  EXPECT_EQ((*out)[1].data, (std::vector<double>{0.5, 0.5, 0.0}));
  EXPECT_EQ((*out)[2].data, std::vector<double>(6, 0.0));
}

} // namespace
