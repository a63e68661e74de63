//===- RetinaNet.cpp - RetinaNet (MLPerf, ResNeXt-50 32x4d FPN) -----------===//
//
// Config table and forward graph; see RetinaNet.h. The reference is
// mlcommons/training single_stage_detector/ssd/model/{retinanet,resnet,
// backbone_utils,feature_pyramid_network,focal_loss}.py.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/RetinaNet.h"

#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

constexpr int64_t kStemStride = 4;        // conv1 and the max pool
constexpr double kFrozenBNEpsilon = 1e-5; // torchvision's FrozenBatchNorm2d

template <typename Self> auto intFields(Self &c) {
  return config::IntFields<decltype(&c.stem)>{
      {"stem", &c.stem},
      {"groups", &c.groups},
      {"width_per_group", &c.widthPerGroup},
      {"fpn_channels", &c.fpnChannels},
      {"head_convs", &c.headConvs},
      {"anchors", &c.anchors},
      {"classes", &c.classes},
      {"image", &c.image},
      {"batch", &c.batch}};
}

Conv::Options convOptions(int64_t kernel, int64_t stride, bool bias,
                          int64_t groups = 1) {
  Conv::Options o;
  o.stride = {stride, stride};
  o.padding = {kernel / 2, kernel / 2};
  o.bias = bias;
  o.groups = groups;
  return o;
}

int64_t convSide(int64_t side, int64_t kernel, int64_t stride) {
  return (side + 2 * (kernel / 2) - kernel) / stride + 1;
}

template <typename T> T forwardFlops(const RetinaNetConfig &c);

/// torchvision's FrozenBatchNorm2d: x * w / sqrt(var + eps) + (b - mean *
/// w / sqrt(var + eps)), all four statistics buffers.
class FrozenBatchNorm : public Module {
public:
  FrozenBatchNorm(Within at, llvm::StringRef name, int64_t channels)
      : Module(at, name) {
    Graph &g = graph();
    weight = buffer("weight", {channels}, g.init(ad::InitKind::ones));
    bias = buffer("bias", {channels}, g.init(ad::InitKind::zeros));
    mean = buffer("running_mean", {channels}, g.init(ad::InitKind::zeros));
    var = buffer("running_var", {channels}, g.init(ad::InitKind::ones));
  }
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    Graph &g = graph();
    int64_t c = weight.dim(0);
    Tensor scale =
        weight * rsqrt(var + full(g, {}, kFrozenBNEpsilon, g.floatType()));
    Tensor shift = bias - mean * scale;
    return x * reshape(scale, {c, 1, 1}) + reshape(shift, {c, 1, 1});
  }
  Tensor weight, bias, mean, var;
};

/// torchvision's Bottleneck with groups (ResNeXt): 1x1, grouped 3x3 (with
/// the stride), 1x1 to 4 x planes, each followed by frozen batch norm.
class Bottleneck : public Module {
public:
  Bottleneck(Within at, llvm::StringRef name, int64_t in, int64_t width,
             int64_t out, int64_t stride, int64_t groups)
      : Module(at, name),
        conv1(*this, "conv1", in, width, {1, 1}, convOptions(1, 1, false)),
        bn1(*this, "bn1", width), conv2(*this, "conv2", width, width, {3, 3},
                                        convOptions(3, stride, false, groups)),
        bn2(*this, "bn2", width),
        conv3(*this, "conv3", width, out, {1, 1}, convOptions(1, 1, false)),
        bn3(*this, "bn3", out) {
    if (stride != 1 || in != out) {
      downConv = std::make_unique<Conv>(*this, "downsample.0", in, out,
                                        std::vector<int64_t>{1, 1},
                                        convOptions(1, stride, false));
      downBn = std::make_unique<FrozenBatchNorm>(*this, "downsample.1", out);
    }
  }
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    Tensor y = relu(bn1(conv1(x)));
    y = relu(bn2(conv2(y)));
    y = bn3(conv3(y));
    return relu(y + (downConv ? (*downBn)((*downConv)(x)) : x));
  }
  Conv conv1;
  FrozenBatchNorm bn1;
  Conv conv2;
  FrozenBatchNorm bn2;
  Conv conv3;
  FrozenBatchNorm bn3;
  std::unique_ptr<Conv> downConv;
  std::unique_ptr<FrozenBatchNorm> downBn;
};

/// RetinaNetClassificationHead or RetinaNetRegressionHead: `conv.{0,2,..}`
/// (3x3 convolutions, ReLU between them) and the output convolution.
class Head : public Module {
public:
  Head(Within at, llvm::StringRef name, llvm::StringRef outName,
       int64_t channels, int64_t convs, int64_t outputs, double outBias)
      : Module(at, name) {
    for (int64_t i = 0; i < convs; ++i)
      layers.push_back(std::make_unique<Conv>(
          *this, "conv." + std::to_string(2 * i), channels, channels,
          std::vector<int64_t>{3, 3}, convOptions(3, 1, true)));
    Graph &g = graph();
    Graph::Scope scope(g, Graph::Scope::Absolute{},
                       path() + "." + outName.str());
    // normal(std = 0.01) weights, and for the classifier the prior bias
    // -log((1 - 0.01) / 0.01).
    outWeight = g.parameter("weight", {outputs, channels, 3, 3},
                            g.init(ad::InitKind::normal, {{"std", 0.01}}));
    outBias_ = g.parameter(
        "bias", {outputs},
        outBias == 0.0 ? g.init(ad::InitKind::zeros)
                       : g.init(ad::InitKind::constant, {{"value", outBias}}));
  }
  /// (N, C, H, W) -> (N, H W A, outputs / A).
  Tensor operator()(Tensor x, int64_t anchors) const {
    Graph::Scope scope = enter();
    for (const auto &layer : layers)
      x = relu((*layer)(x));
    Tensor y = conv(x, outWeight, outBias_, {1, 1}, {1, 1}, {1, 1});
    int64_t n = y.dim(0), per = y.dim(1) / anchors, h = y.dim(2), w = y.dim(3);
    y = transpose(reshape(y, {n, anchors, per, h, w}), {0, 3, 4, 1, 2});
    return reshape(y, {n, h * w * anchors, per});
  }
  std::vector<std::unique_ptr<Conv>> layers;
  Tensor outWeight, outBias_;
};

} // namespace

int64_t RetinaNetConfig::stageWidth(int64_t i) const {
  return (stem << i) * widthPerGroup / 64 * groups;
}

std::vector<int64_t> RetinaNetConfig::levelSides() const {
  int64_t side = image / 8; // C3
  std::vector<int64_t> sides{side, side / 2, side / 4};
  sides.push_back(convSide(sides.back(), 3, 2)); // P6
  sides.push_back(convSide(sides.back(), 3, 2)); // P7
  return sides;
}

int64_t RetinaNetConfig::anchorsPerImage() const {
  int64_t locations = 0;
  for (int64_t s : levelSides())
    locations += s * s;
  return locations * anchors;
}

const std::vector<RetinaNetConfig> &retinanetConfigs() {
  static const std::vector<RetinaNetConfig> configs = [] {
    RetinaNetConfig tiny;
    tiny.name = "retinanet-tiny";
    tiny.blocks = {1, 1, 1, 1};
    tiny.stem = 16;
    tiny.groups = 4;
    tiny.widthPerGroup = 16;
    tiny.fpnChannels = 32;
    tiny.headConvs = 2;
    tiny.classes = 5;
    tiny.image = 64;
    tiny.batch = 2;
    RetinaNetConfig mlperf;
    mlperf.name = "retinanet-mlperf";
    return std::vector<RetinaNetConfig>{tiny, mlperf};
  }();
  return configs;
}

const RetinaNetConfig *findRetinaNetConfig(const std::string &name) {
  return config::findByName(retinanetConfigs(), name);
}

const std::vector<std::string> &RetinaNetConfig::fieldNames() {
  static const std::vector<std::string> names = [] {
    RetinaNetConfig c;
    return config::fieldNames(intFields(c));
  }();
  return names;
}

void RetinaNetConfig::set(const std::string &field, const std::string &value) {
  config::setIntField(name, intFields(*this), field, value);
}

void RetinaNetConfig::validate() const {
  auto fail = [&](const std::string &m) { config::fail(name, m); };
  config::requirePositive(name, intFields(*this));
  if (stem > (int64_t(1) << 12) || widthPerGroup > (int64_t(1) << 12) ||
      groups > (int64_t(1) << 12) || fpnChannels > (int64_t(1) << 16) ||
      image > (int64_t(1) << 14) || batch > (int64_t(1) << 16) ||
      classes > (int64_t(1) << 20) || anchors > 64 || headConvs > 64)
    fail("the model is too large for 64-bit counts");
  if (stem * widthPerGroup < 64)
    fail("stem = " + std::to_string(stem) +
         " x width_per_group = " + std::to_string(widthPerGroup) +
         " must be at least 64 (layer1's width, int(stem x width_per_group / "
         "64) x groups, would be 0)");
  if (image % 32 != 0)
    fail("image = " + std::to_string(image) +
         " must be divisible by 32 (the pyramid's top-down path doubles C5 "
         "back to C3)");
  if (3 * __int128(batch) * forwardFlops<__int128>(*this) > __int128(1) << 62)
    fail("the model is too large for 64-bit counts (a step's FLOPs exceed "
         "2^62)");
}

namespace {
/// The forward FLOPs in `T`: int64_t for the result, __int128 to check that
/// it fits.
template <typename T> T forwardFlops(const RetinaNetConfig &c) {
  auto conv = [](int64_t in, int64_t out, int64_t k, int64_t side,
                 int64_t groups = 1) {
    return 2 * T(in / groups) * out * k * k * side * side;
  };
  int64_t side = convSide(c.image, 7, 2);
  T flops = conv(3, c.stem, 7, side);
  side = convSide(side, 3, 2); // max pool
  int64_t in = c.stem;
  std::vector<int64_t> stageOut;
  for (int64_t s = 0; s < 4; ++s) {
    int64_t width = c.stageWidth(s), out = 4 * (c.stem << s);
    for (int64_t b = 0; b < c.blocks[s]; ++b) {
      int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      int64_t outSide = convSide(side, 3, stride);
      flops += conv(in, width, 1, side) +
               conv(width, width, 3, outSide, c.groups) +
               conv(width, out, 1, outSide);
      if (stride != 1 || in != out)
        flops += conv(in, out, 1, outSide);
      in = out;
      side = outSide;
    }
    stageOut.push_back(out);
  }
  const int64_t f = c.fpnChannels;
  std::vector<int64_t> sides = c.levelSides();
  for (int64_t l = 0; l < 3; ++l) // inner 1x1 and layer 3x3 on C3-C5
    flops += conv(stageOut[l + 1], f, 1, sides[l]) + conv(f, f, 3, sides[l]);
  flops += conv(f, f, 3, sides[3]) + conv(f, f, 3, sides[4]); // P6, P7
  for (int64_t s : sides)
    flops += 2 * c.headConvs * conv(f, f, 3, s) +
             conv(f, c.anchors * c.classes, 3, s) +
             conv(f, c.anchors * 4, 3, s);
  return flops;
}
} // namespace

int64_t retinanetForwardFlopsPerImage(const RetinaNetConfig &c) {
  return forwardFlops<int64_t>(c);
}

int64_t retinanetFlopsPerStep(const RetinaNetConfig &c) {
  return 3 * c.batch * retinanetForwardFlopsPerImage(c);
}

OwningOpRef<ModuleOp> buildRetinaNet(MLIRContext &context,
                                     const RetinaNetConfig &c) {
  c.validate();
  Graph g(context);
  const int64_t N = c.batch, K = c.classes, A = c.anchorsPerImage(),
                F = c.fpnChannels;

  // Backbone: conv1, bn1 and layer1 frozen (trainable_backbone_layers = 3).
  std::unique_ptr<Conv> stem;
  std::unique_ptr<FrozenBatchNorm> stemBn;
  std::vector<std::vector<std::unique_ptr<Bottleneck>>> stages(4);
  std::vector<int64_t> stageOut;
  {
    Graph::Scope body(g, "backbone.body");
    g.setDefaultTrainable(false);
    stem = std::make_unique<Conv>(g, "conv1", 3, c.stem,
                                  std::vector<int64_t>{7, 7},
                                  convOptions(7, 2, false));
    stemBn = std::make_unique<FrozenBatchNorm>(g, "bn1", c.stem);
    int64_t in = c.stem;
    for (int64_t s = 0; s < 4; ++s) {
      g.setDefaultTrainable(s > 0);
      Graph::Scope layer(g, "layer" + std::to_string(s + 1));
      int64_t out = 4 * (c.stem << s);
      for (int64_t b = 0; b < c.blocks[s]; ++b) {
        int64_t stride = (s > 0 && b == 0) ? 2 : 1;
        stages[s].push_back(std::make_unique<Bottleneck>(
            g, std::to_string(b), in, c.stageWidth(s), out, stride, c.groups));
        in = out;
      }
      stageOut.push_back(out);
    }
    g.setDefaultTrainable(true);
  }
  // Feature pyramid: inner (1x1) and layer (3x3) blocks on C3-C5, then
  // P6 and P7.
  std::vector<std::unique_ptr<Conv>> inner, layer;
  std::unique_ptr<Conv> p6, p7;
  {
    Graph::Scope fpn(g, "backbone.fpn");
    // All inner_blocks, then all layer_blocks: the reference registers the
    // two ModuleLists before filling them.
    for (int64_t l = 0; l < 3; ++l)
      inner.push_back(std::make_unique<Conv>(
          g, "inner_blocks." + std::to_string(l), stageOut[l + 1], F,
          std::vector<int64_t>{1, 1}, convOptions(1, 1, true)));
    for (int64_t l = 0; l < 3; ++l)
      layer.push_back(std::make_unique<Conv>(
          g, "layer_blocks." + std::to_string(l), F, F,
          std::vector<int64_t>{3, 3}, convOptions(3, 1, true)));
    p6 = std::make_unique<Conv>(g, "extra_blocks.p6", F, F,
                                std::vector<int64_t>{3, 3},
                                convOptions(3, 2, true));
    p7 = std::make_unique<Conv>(g, "extra_blocks.p7", F, F,
                                std::vector<int64_t>{3, 3},
                                convOptions(3, 2, true));
  }
  std::unique_ptr<Head> classify, regress;
  {
    Graph::Scope head(g, "head");
    classify = std::make_unique<Head>(g, "classification_head", "cls_logits", F,
                                      c.headConvs, c.anchors * K,
                                      -std::log((1 - 0.01) / 0.01));
    regress = std::make_unique<Head>(g, "regression_head", "bbox_reg", F,
                                     c.headConvs, c.anchors * 4, 0.0);
  }

  Type i32 = g.builder().getI32Type();
  Tensor images = g.input("images", {N, 3, c.image, c.image}, g.floatType());
  Tensor labels = g.input("labels", {N, A}, i32, K + 2);
  Tensor boxTargets = g.input("box_targets", {N, A, 4}, g.floatType());

  Tensor x;
  {
    Graph::Scope s(g, "backbone.body");
    x = relu((*stemBn)((*stem)(images)));
    auto arr = [&](ArrayRef<int64_t> v) {
      return g.builder().getDenseI64ArrayAttr(v);
    };
    x = g.op<ad::MaxPoolOp>({x.value()}, {g.attr("window", arr({3, 3})),
                                          g.attr("stride", arr({2, 2})),
                                          g.attr("pad_low", arr({1, 1})),
                                          g.attr("pad_high", arr({1, 1}))});
  }
  std::vector<Tensor> features; // C3, C4, C5
  for (int64_t s = 0; s < 4; ++s) {
    for (auto &block : stages[s])
      x = (*block)(x);
    if (s > 0)
      features.push_back(x);
  }
  std::vector<Tensor> levels(3);
  {
    Graph::Scope s(g, "backbone.fpn");
    Tensor last = (*inner[2])(features[2]);
    levels[2] = (*layer[2])(last);
    for (int l = 1; l >= 0; --l) {
      Tensor topDown = g.op<ad::UpsampleNearestOp>(
          {last.value()},
          {g.attr("scale", g.builder().getDenseI64ArrayAttr({2, 2}))});
      last = (*inner[l])(features[l]) + topDown;
      levels[l] = (*layer[l])(last);
    }
    Tensor q6 = (*p6)(levels[2]);
    levels.push_back(q6);
    levels.push_back((*p7)(relu(q6)));
  }
  std::vector<Tensor> logits, boxes;
  for (Tensor level : levels) {
    logits.push_back((*classify)(level, c.anchors));
    boxes.push_back((*regress)(level, c.anchors));
  }
  Tensor clsLogits = concat(logits, 1); // (N, A, K)
  Tensor boxPred = concat(boxes, 1);    // (N, A, 4)

  Tensor loss;
  {
    Graph::Scope s(g, "loss");
    auto compare = [&](Tensor a, Tensor b, ad::ComparisonDirection d) {
      return cast(g.op<ad::CompareOp>(
                      {a.value(), b.value()},
                      {g.attr("direction", ad::ComparisonDirectionAttr::get(
                                               &g.context(), d))}),
                  g.floatType());
    };
    auto constant = [&](double v, ArrayRef<int64_t> shape) {
      return full(g, shape, v, i32);
    };
    std::vector<int32_t> ids;
    for (int64_t k = 0; k < K; ++k)
      ids.push_back(static_cast<int32_t>(k));
    auto idType = RankedTensorType::get({1, 1, K}, i32);
    Tensor classIds = g.op<ad::ConstantOp>(
        {}, {g.attr("value", DenseElementsAttr::get(idType, ArrayRef(ids)))},
        {idType});
    Tensor onehot =
        compare(broadcastTo(reshape(labels, {N, A, 1}), {N, A, K}),
                broadcastTo(classIds, {N, A, K}), ad::ComparisonDirection::eq);
    Tensor valid = compare(labels, constant(double(K + 1), {N, A}),
                           ad::ComparisonDirection::ne);
    Tensor foreground = compare(labels, constant(double(K), {N, A}),
                                ad::ComparisonDirection::lt);
    Tensor count =
        maximum(sum(foreground, {1}), full(g, {}, 1.0, g.floatType()));
    Tensor focal = g.op<ad::FocalLossOp>(
        {clsLogits.value(), onehot.value()},
        {g.attr("reduction",
                ad::ReductionAttr::get(&g.context(), ad::Reduction::none))});
    Tensor clsLoss = sum(focal * reshape(valid, {N, A, 1}), {1, 2}) / count;
    Tensor l1 = g.op<ad::AbsOp>({(boxPred - boxTargets).value()});
    Tensor boxLoss = sum(l1 * reshape(foreground, {N, A, 1}), {1, 2}) / count;
    loss = mean(clsLoss, {0}) + mean(boxLoss, {0});
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
