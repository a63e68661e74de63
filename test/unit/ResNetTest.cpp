//===- ResNetTest.cpp - ResNet-50 (torchvision) ---------------------------===//
//
// ResNet-50's parameter count and tensor names against torchvision's
// `resnet50()`, and the FLOPs formula against the cost of the graph's own
// convolutions and classifier.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/ResNet.h"
#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/Registry.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <gtest/gtest.h>

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
  auto fn = *built.module->getOps<FunctionOpInterface>().begin();
  std::vector<std::string> names;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto p = fn.getArgAttrOfType<ad::ParamAttr>(
            i, ad::AnvilDialect::kParamAttrName))
      names.push_back(p.getName().str());
  ASSERT_EQ(names.size(), 161u);
  std::vector<std::string> head(names.begin(), names.begin() + 12);
  std::vector<std::string> expected = {
      "conv1.weight",          "bn1.weight",          "bn1.bias",
      "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias",
      "layer1.0.conv2.weight", "layer1.0.bn2.weight", "layer1.0.bn2.bias",
      "layer1.0.conv3.weight", "layer1.0.bn3.weight", "layer1.0.bn3.bias"};
  EXPECT_EQ(head, expected);
  EXPECT_EQ(names[12], "layer1.0.downsample.0.weight");
  EXPECT_EQ(names[14], "layer1.0.downsample.1.bias");
  EXPECT_EQ(names[159], "fc.weight");
  EXPECT_EQ(names[160], "fc.bias");
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
