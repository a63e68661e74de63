//===- ResNetTest.cpp - ResNet-50 (torchvision) ---------------------------===//
//
// ResNet-50's parameter count and state-dict names against torchvision's
// `resnet50()`, the batch norms' running statistics (buffers updated by
// the training step, untouched by evaluation), and the FLOPs formula
// against the cost of the graph's own convolutions and classifier.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/ResNet.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/Registry.h"
#include "anvil/Interp/Interpreter.h"
#include "anvil/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "ModelNames.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

using namespace mlir;
using namespace ::anvil::frontend;
namespace ad = mlir::anvil;

TEST(ResNet, Resnet50HasTorchvisionsParametersAndNames) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "resnet", "resnet50", {});
  // sum(p.numel() for p in torchvision.models.resnet50().parameters()),
  // over 161 tensors.
  EXPECT_EQ(built.report.parameters, 25557032);
  EXPECT_EQ(built.report.parameterTensors, 161);
  std::vector<std::string> names = ::anvil::test::parameterNames(*built.module);
  // The state dict: 161 parameters and, per batch norm (53 of them), the
  // buffers running_mean, running_var and num_batches_tracked: 320 entries
  // in torchvision's order.
  ASSERT_EQ(names.size(), 320u);
  std::vector<std::string> head(names.begin(), names.begin() + 12);
  std::vector<std::string> expected = {"conv1.weight",
                                       "bn1.weight",
                                       "bn1.bias",
                                       "bn1.running_mean",
                                       "bn1.running_var",
                                       "bn1.num_batches_tracked",
                                       "layer1.0.conv1.weight",
                                       "layer1.0.bn1.weight",
                                       "layer1.0.bn1.bias",
                                       "layer1.0.bn1.running_mean",
                                       "layer1.0.bn1.running_var",
                                       "layer1.0.bn1.num_batches_tracked"};
  EXPECT_EQ(head, expected);
  EXPECT_EQ(names[24], "layer1.0.downsample.0.weight");
  EXPECT_EQ(names[26], "layer1.0.downsample.1.bias");
  EXPECT_EQ(names[318], "fc.weight");
  EXPECT_EQ(names[319], "fc.bias");
}

TEST(ResNet, FlopsFormulaIsTheGraphsConvolutionsAndClassifier) {
  for (const char *name : {"resnet-tiny", "resnet50"}) {
    const ResNetConfig *c = findResNetConfig(name);
    ASSERT_NE(c, nullptr);
    MLIRContext context;
    OwningOpRef<ModuleOp> module = buildResNet(context, *c);
    int64_t flops = 0;
    module->walk([&](ad::CostOpInterface op) {
      if (isa<ad::ConvOp, ad::MatmulOp>(op))
        flops += op.getFlops();
    });
    EXPECT_EQ(flops, resnetForwardFlopsPerImage(*c) * c->batch) << name;
    EXPECT_EQ(resnetFlopsPerStep(*c), 3 * flops) << name;
  }
  // ResNet-50 at 224 x 224: the familiar 4.09 G multiply-accumulates.
  EXPECT_EQ(resnetForwardFlopsPerImage(*findResNetConfig("resnet50")) / 2,
            4089184256);
}

TEST(ResNet, BatchNormUpdatesItsRunningStatisticsInTrainingOnly) {
  MLIRContext context;
  ResNetConfig c = *findResNetConfig("resnet-tiny");
  OwningOpRef<ModuleOp> module = buildResNet(context, c);
  auto fn = module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(fn);
  // A tied result per buffer: 17 batch norms x 3.
  std::map<std::string, unsigned> argOf, resultOf;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto name = ::anvil::interp::argumentName(fn, i))
      argOf[*name] = i;
  for (unsigned r = 0; r < fn.getNumResults(); ++r)
    if (auto tied = fn.getResultAttrOfType<IntegerAttr>(
            r, ad::AnvilDialect::kTiedAttrName))
      resultOf[*::anvil::interp::argumentName(fn, tied.getInt())] = r;
  EXPECT_EQ(resultOf.size(), 17u * 3);

  // With conv1 a delta on input channel o % 3 at the kernel's centre, bn1
  // sees images[:, o % 3, ::2, ::2]; its running statistics after one step
  // are 0.1 x that channel's mean and 0.9 + 0.1 x its unbiased variance.
  std::vector<::anvil::interp::Buffer> args;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    args.push_back(::anvil::interp::randomArgument(fn, i, /*seed=*/7,
                                                   /*intHigh=*/c.classes));
  auto &w = args[argOf["conv1.weight"]];
  std::fill(w.data.begin(), w.data.end(), 0.0);
  for (int64_t o = 0; o < c.width; ++o)
    w.at({o, o % 3, 3, 3}) = 1.0;
  for (const char *buffer : {"bn1.running_mean", "bn1.num_batches_tracked"})
    std::fill(args[argOf[buffer]].data.begin(), args[argOf[buffer]].data.end(),
              0.0);
  std::fill(args[argOf["bn1.running_var"]].data.begin(),
            args[argOf["bn1.running_var"]].data.end(), 1.0);
  auto results = ::anvil::interp::run(fn, args);
  ASSERT_TRUE(succeeded(results));
  const auto &images = args[argOf["images"]];
  const auto &mean = (*results)[resultOf["bn1.running_mean"]];
  const auto &var = (*results)[resultOf["bn1.running_var"]];
  for (int64_t o = 0; o < c.width; ++o) {
    double s = 0, s2 = 0, n = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t y = 0; y < c.image; y += 2)
        for (int64_t x = 0; x < c.image; x += 2) {
          double v = images.at({b, o % 3, y, x});
          s += v;
          s2 += v * v;
          ++n;
        }
    double m = s / n, unbiased = (s2 - n * m * m) / (n - 1);
    // The momentum factors are f32 constants of the graph: 1e-7 relative.
    EXPECT_NEAR(mean.data[o], 0.1 * m, 1e-7 * std::abs(m)) << o;
    EXPECT_NEAR(var.data[o], 0.9 + 0.1 * unbiased, 1e-7) << o;
  }
  EXPECT_EQ((*results)[resultOf["bn1.num_batches_tracked"]].data[0], 1.0);

  // The training step carries the updates as state; evaluation (@forward
  // after anvil-optimizer) has none.
  mlir::anvil::registerAnvilTrainingPasses();
  PassManager pm(&context);
  ASSERT_TRUE(
      succeeded(parsePassPipeline("anvil-optimizer{optimizer=sgd}", pm)));
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  unsigned bufferResults = 0;
  for (unsigned r = 0; r < step.getNumResults(); ++r)
    if (auto tied = step.getResultAttrOfType<IntegerAttr>(
            r, ad::AnvilDialect::kTiedAttrName))
      if (auto p = step.getArgAttrOfType<ad::ParamAttr>(
              tied.getInt(), ad::AnvilDialect::kParamAttrName);
          p && p.getBuffer())
        ++bufferResults;
  EXPECT_EQ(bufferResults, 17u * 3);
  fn = module->lookupSymbol<func::FuncOp>("forward");
  EXPECT_EQ(fn.getNumResults(), 1u);
  // ... and normalizes with the running statistics, as PyTorch's eval().
  int norms = 0;
  fn.walk([&](ad::BatchNormInferenceOp bn) {
    ++norms;
    auto arg = [&](Value v) {
      auto a = dyn_cast<BlockArgument>(v);
      return a ? *::anvil::interp::argumentName(fn, a.getArgNumber())
               : std::string("?");
    };
    std::string weight = arg(bn.getScale());
    std::string prefix = weight.substr(0, weight.size() - strlen("weight"));
    EXPECT_EQ(arg(bn.getMean()), prefix + "running_mean");
    EXPECT_EQ(arg(bn.getVariance()), prefix + "running_var");
  });
  EXPECT_EQ(norms, 17);
  int trainNorms = 0;
  fn.walk([&](ad::BatchNormTrainOp) { ++trainNorms; });
  EXPECT_EQ(trainNorms, 0);
}
