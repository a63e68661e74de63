//===- UNet3D.h - 3D U-Net (MLPerf KiTS19) -------------------------*- C++
//-*-===//
//
// The segmentation network of MLPerf Training's image_segmentation
// benchmark (mlcommons/training, image_segmentation/pytorch, `Unet3D(1, 3,
// normalization="instancenorm", activation="relu")`): an input block and
// four downsampling blocks (filters 32, 64, 128, 256, 320), a bottleneck,
// five upsampling blocks (a 2x2x2 stride-2 transposed convolution with
// bias and nothing after it, then concatenation with the skip connection)
// and a 1x1x1 output convolution.
// Every 3x3x3 convolution has no bias and is followed by affine instance
// norm and ReLU. The loss is the reference's DiceCELoss: the mean of
// cross-entropy and soft Dice on the softmax (background channel
// excluded). Names are the reference's (`input_block.conv1.0.weight`,
// `downsample.0.conv1.1.weight`, `upsample.0.upsample_conv.0.bias`,
// `output.conv.weight`). The forward graph is
//
//   func.func @forward(params..., image (B, 1, S, S, S) f32,
//                      label (B, S, S, S) i32 in [0, classes)) -> loss
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_UNET3D_H
#define ANVIL_FRONTEND_MODELS_UNET3D_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace anvil::frontend {

struct UNet3DConfig {
  std::string name;
  int64_t width = 32;     ///< Filters of the first level, doubling per level.
  int64_t maxWidth = 320; ///< Filters never exceed this.
  int64_t inChannels = 1;
  int64_t classes = 3;
  int64_t image = 128; ///< Side of the cubic patch; divisible by 32.
  int64_t batch = 2;

  /// Filters of the five levels: width * 2^i, capped at maxWidth.
  std::vector<int64_t> filters() const;
  void validate() const;
  /// Sets `field` from text (see fieldNames); throws BuildError.
  void set(const std::string &field, const std::string &value);
  static const std::vector<std::string> &fieldNames();
};

/// unet3d-tiny and unet3d-kits19 (MLPerf's: 128^3 patches, batch 2 per
/// accelerator).
const std::vector<UNet3DConfig> &unet3dConfigs();
const UNet3DConfig *findUNet3DConfig(const std::string &name);

/// Forward FLOPs of one sample: 2 per multiply-accumulate of every
/// convolution and transposed convolution.
int64_t unet3dForwardFlopsPerSample(const UNet3DConfig &config);
/// Training FLOPs of one step: three times the forward convolutions.
int64_t unet3dFlopsPerStep(const UNet3DConfig &config);

mlir::OwningOpRef<mlir::ModuleOp> buildUNet3D(mlir::MLIRContext &context,
                                              const UNet3DConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_UNET3D_H
