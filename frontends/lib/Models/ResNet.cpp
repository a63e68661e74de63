//===- ResNet.cpp - ResNet-50 (torchvision) -------------------------------===//
//
// Config table and forward graph; see ResNet.h. ResNet-50 has 25,557,032
// parameters in torchvision (`resnet50()`, 1000 classes).
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/ResNet.h"

#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

[[noreturn]] void badField(const ResNetConfig &c, const std::string &message) {
  config::fail(c.name, message);
}

/// A convolution without bias, Kaiming-normal (fan_out, ReLU gain) as
/// torchvision initializes it.
class ConvNoBias : public Module {
public:
  ConvNoBias(Within at, llvm::StringRef name, int64_t in, int64_t out,
             int64_t kernel, int64_t stride, int64_t padding)
      : Module(at, name), stride(stride), padding(padding) {
    Graph &g = graph();
    weight = param(
        "weight", {out, in, kernel, kernel},
        ad::InitializerAttr::get(
            &g.context(), ad::InitKind::kaiming_normal,
            g.builder().getDictionaryAttr(
                {g.attr("gain", g.builder().getF64FloatAttr(std::sqrt(2.0))),
                 g.attr("mode", g.builder().getStringAttr("fan_out"))})));
  }
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    return conv(x, weight, Tensor(), {stride, stride}, {padding, padding},
                {1, 1});
  }
  Tensor weight;
  int64_t stride, padding;
};

/// torch.nn.BatchNorm2d in training mode: normalizes with the batch
/// statistics (weight 1, bias 0 at first) and updates the running
/// statistics, buffers as in PyTorch: running_mean and running_var move 10%
/// (momentum 0.1) toward the batch mean and unbiased batch variance, and
/// num_batches_tracked (i64) counts the steps.
class BatchNorm : public Module {
public:
  static constexpr double kMomentum = 0.1;

  BatchNorm(Within at, llvm::StringRef name, int64_t channels)
      : Module(at, name) {
    Graph &g = graph();
    weight = param("weight", {channels}, g.init(ad::InitKind::ones));
    bias = param("bias", {channels}, g.init(ad::InitKind::zeros));
    runningMean =
        buffer("running_mean", {channels}, g.init(ad::InitKind::zeros));
    runningVar = buffer("running_var", {channels}, g.init(ad::InitKind::ones));
    batchesTracked =
        buffer("num_batches_tracked", {}, g.init(ad::InitKind::zeros),
               g.builder().getI64Type());
  }
  /// Called once per module: a buffer takes one update per step.
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    Graph &g = graph();
    Operation *bn = g.create<ad::BatchNormTrainOp>(
        {x.value(), weight.value(), bias.value()});
    Tensor mean(&g, bn->getResult(1)), var(&g, bn->getResult(2));
    double n = static_cast<double>(x.type().getNumElements() / x.dim(1));
    auto f = [&](double v) { return full(g, {}, v, g.floatType()); };
    g.update(runningMean, runningMean * f(1 - kMomentum) + mean * f(kMomentum));
    g.update(runningVar,
             runningVar * f(1 - kMomentum) + var * f(kMomentum * n / (n - 1)));
    g.update(batchesTracked,
             batchesTracked + full(g, {}, 1.0, g.builder().getI64Type()));
    return Tensor(&g, bn->getResult(0));
  }
  Tensor weight, bias, runningMean, runningVar, batchesTracked;
};

class Bottleneck : public Module {
public:
  Bottleneck(Within at, llvm::StringRef name, int64_t in, int64_t width,
             int64_t stride)
      : Module(at, name), conv1(*this, "conv1", in, width, 1, 1, 0),
        bn1(*this, "bn1", width),
        conv2(*this, "conv2", width, width, 3, stride, 1),
        bn2(*this, "bn2", width),
        conv3(*this, "conv3", width, 4 * width, 1, 1, 0),
        bn3(*this, "bn3", 4 * width) {
    if (stride != 1 || in != 4 * width) {
      Graph::Scope scope(graph(), Graph::Scope::Absolute{},
                         path() + ".downsample");
      downConv = std::make_unique<ConvNoBias>(graph(), "0", in, 4 * width, 1,
                                              stride, 0);
      downBn = std::make_unique<BatchNorm>(graph(), "1", 4 * width);
    }
  }
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    Tensor y = relu(bn1(conv1(x)));
    y = relu(bn2(conv2(y)));
    y = bn3(conv3(y));
    Tensor identity = downConv ? (*downBn)((*downConv)(x)) : x;
    return relu(y + identity);
  }
  ConvNoBias conv1;
  BatchNorm bn1;
  ConvNoBias conv2;
  BatchNorm bn2;
  ConvNoBias conv3;
  BatchNorm bn3;
  std::unique_ptr<ConvNoBias> downConv;
  std::unique_ptr<BatchNorm> downBn;
};

int64_t convOut(int64_t in, int64_t k, int64_t s, int64_t p) {
  return (in + 2 * p - k) / s + 1;
}

template <typename T> T forwardFlops(const ResNetConfig &c);

} // namespace

const std::vector<ResNetConfig> &resnetConfigs() {
  static const std::vector<ResNetConfig> configs = [] {
    ResNetConfig tiny;
    tiny.name = "resnet-tiny";
    tiny.blocks = {1, 1, 1, 1};
    tiny.width = 8;
    tiny.classes = 10;
    tiny.image = 32;
    tiny.batch = 4;
    ResNetConfig r50;
    r50.name = "resnet50";
    r50.batch = 32;
    return std::vector<ResNetConfig>{tiny, r50};
  }();
  return configs;
}

const ResNetConfig *findResNetConfig(const std::string &name) {
  return config::findByName(resnetConfigs(), name);
}

const std::vector<std::string> &ResNetConfig::fieldNames() {
  static const std::vector<std::string> names = {"width", "classes", "image",
                                                 "batch"};
  return names;
}

void ResNetConfig::set(const std::string &field, const std::string &value) {
  int64_t *target = field == "width"     ? &width
                    : field == "classes" ? &classes
                    : field == "image"   ? &image
                    : field == "batch"   ? &batch
                                         : nullptr;
  if (!target)
    config::unknownField(name, field, fieldNames());
  *target = config::parseInt(name, field, value);
}

void ResNetConfig::validate() const {
  for (auto [field, v] : {std::pair{"width", width},
                          {"classes", classes},
                          {"image", image},
                          {"batch", batch}})
    config::requirePositive(name, field, v);
  if (image < 32)
    badField(*this, "image = " + std::to_string(image) +
                        " must be at least 32 (five halvings)");
  int64_t last = image;
  for (int i = 0; i < 5; ++i)
    last = (last - 1) / 2 + 1; // stem, max pool, layer2-4 (stride 2, pad)
  if (batch * last * last < 2)
    badField(*this, "batch = " + std::to_string(batch) +
                        " with image = " + std::to_string(image) +
                        " leaves one value per channel at layer4; batch norm "
                        "needs at least two");
  if (width > (int64_t(1) << 16) || image > (int64_t(1) << 14) ||
      batch > (int64_t(1) << 20))
    badField(*this, "the model is too large for 64-bit counts");
  if (3 * __int128(batch) * forwardFlops<__int128>(*this) > __int128(1) << 62)
    badField(*this, "the model is too large for 64-bit counts (a step's "
                    "FLOPs exceed 2^62)");
}

namespace {
/// The forward FLOPs in `T`: int64_t for the result, __int128 to check that
/// it fits.
template <typename T> T forwardFlops(const ResNetConfig &c) {
  int64_t size = convOut(c.image, 7, 2, 3);
  T flops = 2 * T(3) * c.width * 49 * size * size; // stem
  size = convOut(size, 3, 2, 1);                   // max pool
  int64_t in = c.width;
  for (int64_t stage = 0; stage < 4; ++stage) {
    int64_t w = c.width << stage;
    for (int64_t b = 0; b < c.blocks[stage]; ++b) {
      int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      int64_t out = convOut(size, 3, stride, 1);
      flops += 2 * T(in) * w * size * size;  // conv1, 1x1
      flops += 2 * T(w) * w * 9 * out * out; // conv2, 3x3
      flops += 2 * T(w) * 4 * w * out * out; // conv3, 1x1
      if (stride != 1 || in != 4 * w)
        flops += 2 * T(in) * 4 * w * out * out; // downsample
      in = 4 * w;
      size = out;
    }
  }
  return flops + 2 * T(in) * c.classes; // fc
}
} // namespace

int64_t resnetForwardFlopsPerImage(const ResNetConfig &c) {
  return forwardFlops<int64_t>(c);
}

int64_t resnetFlopsPerStep(const ResNetConfig &c) {
  return 3 * resnetForwardFlopsPerImage(c) * c.batch;
}

OwningOpRef<ModuleOp> buildResNet(MLIRContext &context, const ResNetConfig &c) {
  c.validate();
  Graph g(context);
  ConvNoBias stem(g, "conv1", 3, c.width, 7, 2, 3);
  BatchNorm bn1(g, "bn1", c.width);
  std::vector<std::unique_ptr<Bottleneck>> blocks;
  int64_t in = c.width;
  for (int64_t stage = 0; stage < 4; ++stage) {
    Graph::Scope layer(g, "layer" + std::to_string(stage + 1));
    int64_t w = c.width << stage;
    for (int64_t b = 0; b < c.blocks[stage]; ++b) {
      int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      blocks.push_back(
          std::make_unique<Bottleneck>(g, std::to_string(b), in, w, stride));
      in = 4 * w;
    }
  }
  Linear::Options fcOptions;
  fcOptions.transposedWeight = true;
  Linear fc(g, "fc", in, c.classes, fcOptions);

  Tensor images =
      g.input("images", {c.batch, 3, c.image, c.image}, g.floatType());
  Tensor labels = g.input("labels", {c.batch}, g.builder().getI32Type());
  Tensor x = relu(bn1(stem(images)));
  {
    Graph::Scope s(g, "maxpool");
    auto arr = [&](ArrayRef<int64_t> v) {
      return g.builder().getDenseI64ArrayAttr(v);
    };
    x = g.op<ad::MaxPoolOp>({x.value()}, {g.attr("window", arr({3, 3})),
                                          g.attr("stride", arr({2, 2})),
                                          g.attr("pad_low", arr({1, 1})),
                                          g.attr("pad_high", arr({1, 1}))});
  }
  for (auto &b : blocks)
    x = (*b)(x);
  {
    Graph::Scope s(g, "avgpool");
    x = reshape(mean(x, {2, 3}), {c.batch, in}); // (B, C)
  }
  Tensor logits = fc(x);
  Tensor loss;
  {
    Graph::Scope s(g, "loss");
    loss = crossEntropy(logits, labels);
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
