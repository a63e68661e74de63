//===- RetinaNet.h - RetinaNet (MLPerf, ResNeXt-50 32x4d FPN) -----*- C++
//-*-===//
//
// The detector of MLPerf Training's single-stage object detection
// benchmark (mlcommons/training, single_stage_detector/ssd/model:
// `retinanet_resnext50_32x4d_fpn`, 264 OpenImages classes, 800 x 800
// images), as its copy of torchvision builds it: a ResNeXt-50 32x4d
// backbone with frozen batch norm (the statistics and affine terms are
// buffers; conv1 and layer1 are frozen, layer2-4 train), a feature pyramid
// on C3-C5 with P6 and P7 (LastLevelP6P7 on P5), and classification and
// box-regression heads of four 3x3 convolutions shared over the levels,
// nine anchors per location. Anchor matching happens in the data
// pipeline, so targets are dense: `labels` (N, anchors) holds the matched
// class in [0, K), K for background or K + 1 for ignored anchors (IoU
// between the thresholds), `box_targets` (N, anchors, 4) the encoded boxes
// of the foreground anchors. The loss is the reference's: sigmoid focal
// loss (alpha 0.25, gamma 2) summed over the valid anchors plus L1 box
// loss summed over the foreground anchors, each divided by the image's
// foreground count (at least 1) and averaged over images. Names are the
// reference's (`backbone.body.layer2.0.conv2.weight`,
// `backbone.fpn.inner_blocks.0.weight`, `head.classification_head.conv.2.
// weight`, `head.regression_head.bbox_reg.bias`).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_RETINANET_H
#define ANVIL_FRONTEND_MODELS_RETINANET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace anvil::frontend {

struct RetinaNetConfig {
  std::string name;
  std::vector<int64_t> blocks = {3, 4, 6, 3}; ///< Bottlenecks per stage.
  int64_t stem = 64;         ///< Stem channels; stage i plans stem * 2^i.
  int64_t groups = 32;       ///< Cardinality of the 3x3 convolutions.
  int64_t widthPerGroup = 4; ///< ResNeXt's base width.
  int64_t fpnChannels = 256;
  int64_t headConvs = 4;
  int64_t anchors = 9; ///< Anchors per location (3 sizes x 3 ratios).
  int64_t classes = 264;
  int64_t image = 800;
  int64_t batch = 2;

  /// Channels of the grouped 3x3 convolutions of stage `i`: torchvision's
  /// int(planes * width_per_group / 64) * groups, planes = stem * 2^i.
  int64_t stageWidth(int64_t i) const;
  /// Side of P3 ... P7.
  std::vector<int64_t> levelSides() const;
  /// Anchors per image: anchors x the locations of P3-P7.
  int64_t anchorsPerImage() const;
  void validate() const;
  /// Sets `field` from text (see fieldNames); throws BuildError.
  void set(const std::string &field, const std::string &value);
  static const std::vector<std::string> &fieldNames();
};

/// retinanet-tiny and retinanet-mlperf.
const std::vector<RetinaNetConfig> &retinanetConfigs();
const RetinaNetConfig *findRetinaNetConfig(const std::string &name);

/// Forward FLOPs of one image: 2 per multiply-accumulate of every
/// convolution (backbone, pyramid, both heads on every level; bias adds
/// not counted).
int64_t retinanetForwardFlopsPerImage(const RetinaNetConfig &config);
/// Training FLOPs of one step: three times the forward.
int64_t retinanetFlopsPerStep(const RetinaNetConfig &config);

mlir::OwningOpRef<mlir::ModuleOp> buildRetinaNet(mlir::MLIRContext &context,
                                                 const RetinaNetConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_RETINANET_H
