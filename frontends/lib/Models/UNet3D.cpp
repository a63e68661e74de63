//===- UNet3D.cpp - 3D U-Net (MLPerf KiTS19) ------------------------------===//
//
// Config table and forward graph; see UNet3D.h. The reference is
// mlcommons/training image_segmentation/pytorch/model/{unet3d,layers}.py.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/UNet3D.h"

#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

constexpr int64_t kLevels = 5;   // input block and four downsamplings
constexpr int64_t kHalvings = 5; // four downsamplings and the bottleneck

template <typename Self> auto intFields(Self &c) {
  return config::IntFields<decltype(&c.width)>{{"width", &c.width},
                                               {"max_width", &c.maxWidth},
                                               {"in_channels", &c.inChannels},
                                               {"classes", &c.classes},
                                               {"image", &c.image},
                                               {"batch", &c.batch}};
}

/// conv_block_factory: Conv3d (no bias), InstanceNorm3d(affine), ReLU, as
/// a Sequential (`<name>.0.weight`, `<name>.1.weight`, `<name>.1.bias`).
class ConvBlock : public Module {
public:
  ConvBlock(Within at, llvm::StringRef name, int64_t in, int64_t out,
            int64_t stride)
      : Module(at, name),
        conv(*this, "0", in, out, {3, 3, 3}, options(stride)) {
    normWeight = param("1.weight", {out}, graph().init(ad::InitKind::ones));
    normBias = param("1.bias", {out}, graph().init(ad::InitKind::zeros));
  }
  static Conv::Options options(int64_t stride) {
    Conv::Options o;
    o.stride = {stride, stride, stride};
    o.padding = {1, 1, 1};
    o.bias = false;
    return o;
  }
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    return relu(instanceNorm(conv(x)));
  }
  Tensor instanceNorm(Tensor x) const {
    Graph &g = graph();
    return g.op<ad::InstanceNormOp>(
        {x.value(), normWeight.value(), normBias.value()},
        {g.attr("operandSegmentSizes",
                g.builder().getDenseI32ArrayAttr({1, 1, 1}))});
  }
  Conv conv;
  Tensor normWeight, normBias;
};

/// InputBlock and DownsampleBlock: two conv blocks, the first strided.
class DoubleConv : public Module {
public:
  DoubleConv(Within at, llvm::StringRef name, int64_t in, int64_t out,
             int64_t stride)
      : Module(at, name), conv1(*this, "conv1", in, out, stride),
        conv2(*this, "conv2", out, out, 1) {}
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    return conv2(conv1(x));
  }
  ConvBlock conv1, conv2;
};

/// UpsampleBlock: ConvTranspose3d (k 2, stride 2, with bias; the
/// reference's conv_block_factory with norm_type "none", so no norm or
/// activation follows it: `upsample_conv.0`), concatenation with the skip,
/// two conv blocks.
class UpBlock : public Module {
public:
  UpBlock(Within at, llvm::StringRef name, int64_t in, int64_t out)
      : Module(at, name),
        // PyTorch's default for ConvTranspose3d: Kaiming uniform, a = sqrt(5).
        upWeight(param("upsample_conv.0.weight", {in, out, 2, 2, 2},
                       graph().init(ad::InitKind::kaiming_uniform,
                                    {{"gain", std::sqrt(1.0 / 3.0)}}))),
        upBias(param("upsample_conv.0.bias", {out},
                     graph().init(ad::InitKind::zeros))),
        conv1(*this, "conv1", 2 * out, out, 1),
        conv2(*this, "conv2", out, out, 1) {}
  Tensor operator()(Tensor x, Tensor skip) const {
    Graph::Scope scope = enter();
    Graph &g = graph();
    auto arr = [&](ArrayRef<int64_t> v) {
      return g.builder().getDenseI64ArrayAttr(v);
    };
    Tensor up = g.op<ad::ConvTransposeOp>(
        {x.value(), upWeight.value(), upBias.value()},
        {g.attr("stride", arr({2, 2, 2})), g.attr("pad_low", arr({0, 0, 0})),
         g.attr("pad_high", arr({0, 0, 0})), g.attr("dilation", arr({1, 1, 1})),
         g.attr("output_padding", arr({0, 0, 0}))});
    return conv2(conv1(concat({up, skip}, 1)));
  }
  // Declared in the reference's registration order.
  Tensor upWeight, upBias;
  ConvBlock conv1, conv2;
};

int64_t cube(int64_t s) { return s * s * s; }

template <typename T> T forwardFlops(const UNet3DConfig &c);

} // namespace

std::vector<int64_t> UNet3DConfig::filters() const {
  std::vector<int64_t> f;
  for (int64_t i = 0; i < kLevels; ++i)
    f.push_back(std::min(width << i, maxWidth));
  return f;
}

const std::vector<UNet3DConfig> &unet3dConfigs() {
  static const std::vector<UNet3DConfig> configs = [] {
    UNet3DConfig tiny;
    tiny.name = "unet3d-tiny";
    tiny.width = 4;
    tiny.maxWidth = 16;
    tiny.image = 32;
    tiny.batch = 1;
    UNet3DConfig kits;
    kits.name = "unet3d-kits19";
    return std::vector<UNet3DConfig>{tiny, kits};
  }();
  return configs;
}

const UNet3DConfig *findUNet3DConfig(const std::string &name) {
  return config::findByName(unet3dConfigs(), name);
}

const std::vector<std::string> &UNet3DConfig::fieldNames() {
  static const std::vector<std::string> names = [] {
    UNet3DConfig c;
    return config::fieldNames(intFields(c));
  }();
  return names;
}

void UNet3DConfig::set(const std::string &field, const std::string &value) {
  config::setIntField(name, intFields(*this), field, value);
}

void UNet3DConfig::validate() const {
  auto fail = [&](const std::string &m) { config::fail(name, m); };
  config::requirePositive(name, intFields(*this));
  int64_t factor = int64_t(1) << kHalvings;
  if (image % factor != 0)
    fail("image = " + std::to_string(image) + " must be divisible by " +
         std::to_string(factor) +
         " (four downsamplings and the bottleneck "
         "halve it)");
  if (maxWidth < width)
    fail("max_width = " + std::to_string(maxWidth) +
         " must be at least width = " + std::to_string(width));
  if (classes < 2)
    fail("classes = " + std::to_string(classes) +
         " must be at least 2 (Dice excludes the background class)");
  if (3 * __int128(batch) * forwardFlops<__int128>(*this) > __int128(1) << 62)
    fail("the model is too large for 64-bit counts (a step's FLOPs exceed "
         "2^62)");
  if (width > (int64_t(1) << 16) || maxWidth > (int64_t(1) << 16) ||
      image > (int64_t(1) << 12) || batch > (int64_t(1) << 16) ||
      inChannels > (int64_t(1) << 16) || classes > (int64_t(1) << 16))
    fail("the model is too large for 64-bit counts");
}

namespace {
/// The forward FLOPs in `T`: int64_t for the result, __int128 to check that
/// it fits.
template <typename T> T forwardFlops(const UNet3DConfig &c) {
  std::vector<int64_t> f = c.filters();
  auto conv3 = [](int64_t in, int64_t out, int64_t outSide) {
    return 2 * T(in) * out * 27 * cube(outSide);
  };
  T flops = 0;
  int64_t side = c.image;
  flops += conv3(c.inChannels, f[0], side) + conv3(f[0], f[0], side);
  for (int64_t l = 1; l < kLevels; ++l) {
    side /= 2;
    flops += conv3(f[l - 1], f[l], side) + conv3(f[l], f[l], side);
  }
  side /= 2; // bottleneck
  flops += 2 * conv3(f[kLevels - 1], f[kLevels - 1], side);
  int64_t in = f[kLevels - 1];
  for (int64_t l = kLevels - 1; l >= 0; --l) {
    // Transposed 2x2x2 convolution: every input voxel meets 8 taps.
    flops += 2 * T(in) * f[l] * 8 * cube(side);
    side *= 2;
    flops += conv3(2 * f[l], f[l], side) + conv3(f[l], f[l], side);
    in = f[l];
  }
  return flops + 2 * T(f[0]) * c.classes * cube(side); // output 1x1x1
}
} // namespace

int64_t unet3dForwardFlopsPerSample(const UNet3DConfig &c) {
  return forwardFlops<int64_t>(c);
}

int64_t unet3dFlopsPerStep(const UNet3DConfig &c) {
  return 3 * c.batch * unet3dForwardFlopsPerSample(c);
}

OwningOpRef<ModuleOp> buildUNet3D(MLIRContext &context, const UNet3DConfig &c) {
  c.validate();
  Graph g(context);
  const int64_t B = c.batch, S = c.image, K = c.classes;
  std::vector<int64_t> f = c.filters();

  DoubleConv input(g, "input_block", c.inChannels, f[0], 1);
  std::vector<std::unique_ptr<DoubleConv>> down;
  {
    Graph::Scope s(g, "downsample");
    for (int64_t l = 1; l < kLevels; ++l)
      down.push_back(std::make_unique<DoubleConv>(g, std::to_string(l - 1),
                                                  f[l - 1], f[l], 2));
  }
  DoubleConv bottleneck(g, "bottleneck", f[kLevels - 1], f[kLevels - 1], 2);
  std::vector<std::unique_ptr<UpBlock>> up;
  {
    Graph::Scope s(g, "upsample");
    int64_t in = f[kLevels - 1];
    for (int64_t l = kLevels - 1; l >= 0; --l) {
      up.push_back(std::make_unique<UpBlock>(g, std::to_string(kLevels - 1 - l),
                                             in, f[l]));
      in = f[l];
    }
  }
  Conv::Options outOptions;
  Conv output(g, "output.conv", f[0], K, {1, 1, 1}, outOptions);

  Tensor image = g.input("image", {B, c.inChannels, S, S, S}, g.floatType());
  Tensor label = g.input("label", {B, S, S, S}, g.builder().getI32Type(), K);

  Tensor x = input(image);
  std::vector<Tensor> skips{x};
  for (auto &d : down) {
    x = (*d)(x);
    skips.push_back(x);
  }
  x = bottleneck(x);
  for (size_t i = 0; i < up.size(); ++i)
    x = (*up[i])(x, skips[skips.size() - 1 - i]);
  Tensor logits = output(x); // (B, K, S, S, S)

  Tensor loss;
  {
    // DiceCELoss(to_onehot_y=True, use_softmax=True, include_background=
    // False): (dice + cross_entropy) / 2.
    Graph::Scope s(g, "loss");
    Tensor ce = crossEntropy(transpose(logits, {0, 2, 3, 4, 1}), label);
    Tensor probs = softmax(logits, 1);
    std::vector<int32_t> classIds;
    for (int64_t k = 0; k < K; ++k)
      classIds.push_back(static_cast<int32_t>(k));
    auto idType = RankedTensorType::get({1, K, 1, 1, 1}, label.elementType());
    Tensor ids = g.op<ad::ConstantOp>(
        {},
        {g.attr("value", DenseElementsAttr::get(idType, ArrayRef(classIds)))},
        {idType});
    std::vector<int64_t> shape{B, K, S, S, S};
    Tensor onehot =
        cast(g.op<ad::CompareOp>(
                 {broadcastTo(reshape(label, {B, 1, S, S, S}), shape).value(),
                  broadcastTo(ids, shape).value()},
                 {g.attr("direction",
                         ad::ComparisonDirectionAttr::get(
                             &g.context(), ad::ComparisonDirection::eq))}),
             g.floatType());
    auto foreground = [&](Tensor t) {
      return g.op<ad::SliceOp>(
          {t.value()},
          {g.attr("start", g.builder().getDenseI64ArrayAttr({0, 1, 0, 0, 0})),
           g.attr("limit", g.builder().getDenseI64ArrayAttr(shape)),
           g.attr("stride",
                  g.builder().getDenseI64ArrayAttr({1, 1, 1, 1, 1}))});
    };
    Tensor dice = g.op<ad::DiceLossOp>(
        {foreground(probs).value(), foreground(onehot).value()},
        {g.attr("reduction",
                ad::ReductionAttr::get(&g.context(), ad::Reduction::mean))});
    loss = (dice + ce) * full(g, {}, 0.5, g.floatType());
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
