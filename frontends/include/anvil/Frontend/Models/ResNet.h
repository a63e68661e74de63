//===- ResNet.h - ResNet-50 (torchvision) ---------------------------*- C++
//-*-===//
//
// The bottleneck ResNets as torchvision builds them (v1.5: the stride sits
// on the 3x3 convolution): a 7x7 stem with batch norm, ReLU and max
// pooling, four stages of bottleneck blocks (1x1, 3x3, 1x1 convolutions,
// batch norm after each, a strided 1x1 projection where the shape
// changes), global average pooling and a linear classifier; mean
// cross-entropy over the labels. Batch norm uses batch statistics (the
// training graph); running statistics are not parameters and are not
// modelled. Names are torchvision's (`layer1.0.conv1.weight`,
// `layer1.0.downsample.1.bias`). The forward graph is
//
//   func.func @forward(conv1.weight, bn1.*, layer1.*, ..., fc.*,
//                      images (B, 3, H, W) f32, labels (B) i32) -> loss
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_RESNET_H
#define ANVIL_FRONTEND_MODELS_RESNET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <array>
#include <string>
#include <vector>

namespace anvil::frontend {

struct ResNetConfig {
  std::string name;
  std::array<int64_t, 4> blocks = {3, 4, 6, 3}; ///< Per stage.
  int64_t width = 64; ///< Channels of the stem and the first stage.
  int64_t classes = 1000;
  int64_t image = 224; ///< Height and width of the input images.
  int64_t batch = 1;

  void validate() const;
  void set(const std::string &field, const std::string &value);
  static const std::vector<std::string> &fieldNames();
};

/// resnet-tiny, resnet50.
const std::vector<ResNetConfig> &resnetConfigs();
const ResNetConfig *findResNetConfig(const std::string &name);

/// Forward FLOPs of one image: 2 per multiply-accumulate of every
/// convolution and of the classifier.
int64_t resnetForwardFlopsPerImage(const ResNetConfig &config);
/// Training FLOPs of one step: three times the forward FLOPs per image,
/// times the batch.
int64_t resnetFlopsPerStep(const ResNetConfig &config);

mlir::OwningOpRef<mlir::ModuleOp> buildResNet(mlir::MLIRContext &context,
                                              const ResNetConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_RESNET_H
