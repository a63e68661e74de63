//===- SDUNet.cpp - Stable Diffusion 2's denoising UNet -------------------===//
//
// Config table and forward graph; see SDUNet.h. The reference is diffusers'
// UNet2DConditionModel (models/unets/unet_2d_condition.py, unet_2d_blocks.py,
// resnet.py, transformers/transformer_2d.py, attention.py) with the config
// of stabilityai/stable-diffusion-2-base's unet/config.json; the noise
// schedule is that checkpoint's scheduler_config.json (DDPM, scaled_linear).
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/SDUNet.h"

#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

constexpr double kResnetEpsilon = 1e-5;      // norm_eps
constexpr double kTransformerEpsilon = 1e-6; // Transformer2DModel's norm

template <typename Self> auto intFields(Self &c) {
  return config::IntFields<decltype(&c.width)>{
      {"width", &c.width},      {"layers_per_block", &c.layersPerBlock},
      {"head_dim", &c.headDim}, {"cross_dim", &c.crossDim},
      {"groups", &c.groups},    {"latent_channels", &c.latentChannels},
      {"latent", &c.latent},    {"context_len", &c.contextLength},
      {"batch", &c.batch},      {"train_steps", &c.trainSteps}};
}

Linear::Options torchLinear(bool bias = true) {
  Linear::Options o;
  o.transposedWeight = true;
  o.bias = bias;
  return o;
}

Conv::Options conv3x3(int64_t stride = 1) {
  Conv::Options o;
  o.stride = {stride, stride};
  o.padding = {1, 1};
  return o;
}

/// torch.nn.GroupNorm with affine weight and bias.
class GroupNorm : public Module {
public:
  GroupNorm(Within at, llvm::StringRef name, int64_t channels, int64_t groups,
            double epsilon)
      : Module(at, name), groups(groups), epsilon(epsilon) {
    weight = param("weight", {channels}, graph().init(ad::InitKind::ones));
    bias = param("bias", {channels}, graph().init(ad::InitKind::zeros));
  }
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    Graph &g = graph();
    return g.op<ad::GroupNormOp>(
        {x.value(), weight.value(), bias.value()},
        {g.attr("groups", g.builder().getI64IntegerAttr(groups)),
         g.attr("epsilon", g.builder().getF64FloatAttr(epsilon)),
         g.attr("operandSegmentSizes",
                g.builder().getDenseI32ArrayAttr({1, 1, 1}))});
  }
  Tensor weight, bias;
  int64_t groups;
  double epsilon;
};

/// ResnetBlock2D: norm1, SiLU, conv1, + time_emb_proj(SiLU(temb)), norm2,
/// SiLU, conv2, plus the input (through a 1x1 conv_shortcut when the
/// channels change).
class ResnetBlock : public Module {
public:
  ResnetBlock(Within at, llvm::StringRef name, int64_t in, int64_t out,
              const SDUNetConfig &c)
      : Module(at, name), norm1(*this, "norm1", in, c.groups, kResnetEpsilon),
        conv1(*this, "conv1", in, out, {3, 3}, conv3x3()),
        timeProj(*this, "time_emb_proj", 4 * c.width, out, torchLinear()),
        norm2(*this, "norm2", out, c.groups, kResnetEpsilon),
        conv2(*this, "conv2", out, out, {3, 3}, conv3x3()) {
    if (in != out)
      shortcut =
          std::make_unique<Conv>(*this, "conv_shortcut", in, out,
                                 std::vector<int64_t>{1, 1}, Conv::Options());
  }
  Tensor operator()(Tensor x, Tensor temb) const {
    Graph::Scope scope = enter();
    Tensor h = conv1(silu(norm1(x)));
    Tensor t = timeProj(silu(temb)); // (B, out)
    h = h + reshape(t, {t.dim(0), t.dim(1), 1, 1});
    h = conv2(silu(norm2(h)));
    return (shortcut ? (*shortcut)(x) : x) + h;
  }
  GroupNorm norm1;
  Conv conv1;
  Linear timeProj;
  GroupNorm norm2;
  Conv conv2;
  std::unique_ptr<Conv> shortcut;
};

/// diffusers' Attention: to_q, to_k, to_v without bias, to_out.0 with.
class Attention : public Module {
public:
  Attention(Within at, llvm::StringRef name, int64_t dim, int64_t kvDim,
            int64_t heads)
      : Module(at, name), heads(heads),
        q(*this, "to_q", dim, dim, torchLinear(false)),
        k(*this, "to_k", kvDim, dim, torchLinear(false)),
        v(*this, "to_v", kvDim, dim, torchLinear(false)),
        out(*this, "to_out.0", dim, dim, torchLinear()) {}
  /// x (B, N, C) attends to context (B, M, kvDim).
  Tensor operator()(Tensor x, Tensor context) const {
    Graph::Scope scope = enter();
    int64_t b = x.dim(0), c = x.dim(2), d = c / heads;
    auto split = [&](Tensor y) {
      return transpose(reshape(y, {b, y.dim(1), heads, d}), {0, 2, 1, 3});
    };
    Tensor y = attention(split(q(x)), split(k(context)), split(v(context)),
                         /*causal=*/false);
    return out(reshape(transpose(y, {0, 2, 1, 3}), {b, x.dim(1), c}));
  }
  int64_t heads;
  Linear q, k, v, out;
};

/// BasicTransformerBlock: self-attention, cross-attention and a GEGLU
/// feed-forward (inner width 4C), each pre-norm with a residual.
class TransformerBlock : public Module {
public:
  TransformerBlock(Within at, llvm::StringRef name, int64_t dim, int64_t heads,
                   int64_t crossDim)
      : Module(at, name), norm1(*this, "norm1", dim),
        attn1(*this, "attn1", dim, dim, heads), norm2(*this, "norm2", dim),
        attn2(*this, "attn2", dim, crossDim, heads), norm3(*this, "norm3", dim),
        ffIn(*this, "ff.net.0.proj", dim, 8 * dim, torchLinear()),
        ffOut(*this, "ff.net.2", 4 * dim, dim, torchLinear()) {}
  Tensor operator()(Tensor x, Tensor context) const {
    Graph::Scope scope = enter();
    Tensor h = norm1(x);
    x = attn1(h, h) + x;
    x = attn2(norm2(x), context) + x;
    int64_t inner = 4 * x.dim(2);
    std::vector<Tensor> parts = split(ffIn(norm3(x)), 2, {inner, inner});
    return ffOut(parts[0] * gelu(parts[1], /*tanhApproximation=*/false)) + x;
  }
  LayerNorm norm1;
  Attention attn1;
  LayerNorm norm2;
  Attention attn2;
  LayerNorm norm3;
  Linear ffIn, ffOut;
};

/// Transformer2DModel with linear projections: GroupNorm, proj_in on
/// (B, HW, C), one transformer block, proj_out, plus the input.
class SpatialTransformer : public Module {
public:
  SpatialTransformer(Within at, llvm::StringRef name, int64_t dim,
                     const SDUNetConfig &c)
      : Module(at, name),
        norm(*this, "norm", dim, c.groups, kTransformerEpsilon),
        projIn(*this, "proj_in", dim, dim, torchLinear()),
        block(*this, "transformer_blocks.0", dim, dim / c.headDim, c.crossDim),
        projOut(*this, "proj_out", dim, dim, torchLinear()) {}
  Tensor operator()(Tensor x, Tensor context) const {
    Graph::Scope scope = enter();
    int64_t b = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
    Tensor y = reshape(transpose(norm(x), {0, 2, 3, 1}), {b, h * w, ch});
    y = projOut(block(projIn(y), context));
    return transpose(reshape(y, {b, h, w, ch}), {0, 3, 1, 2}) + x;
  }
  GroupNorm norm;
  Linear projIn;
  TransformerBlock block;
  Linear projOut;
};

/// CrossAttnDownBlock2D (with attentions) or DownBlock2D; attentions are
/// registered before resnets, as diffusers does.
class DownBlock : public Module {
public:
  DownBlock(Within at, llvm::StringRef name, int64_t in, int64_t out,
            bool cross, bool downsample, const SDUNetConfig &c)
      : Module(at, name) {
    for (int64_t j = 0; cross && j < c.layersPerBlock; ++j)
      attentions.push_back(std::make_unique<SpatialTransformer>(
          *this, "attentions." + std::to_string(j), out, c));
    for (int64_t j = 0; j < c.layersPerBlock; ++j)
      resnets.push_back(std::make_unique<ResnetBlock>(
          *this, "resnets." + std::to_string(j), j == 0 ? in : out, out, c));
    if (downsample)
      down = std::make_unique<Conv>(*this, "downsamplers.0.conv", out, out,
                                    std::vector<int64_t>{3, 3}, conv3x3(2));
  }
  Tensor operator()(Tensor x, Tensor temb, Tensor context,
                    std::vector<Tensor> &skips) const {
    Graph::Scope scope = enter();
    for (size_t j = 0; j < resnets.size(); ++j) {
      x = (*resnets[j])(x, temb);
      if (!attentions.empty())
        x = (*attentions[j])(x, context);
      skips.push_back(x);
    }
    if (down) {
      x = (*down)(x);
      skips.push_back(x);
    }
    return x;
  }
  std::vector<std::unique_ptr<SpatialTransformer>> attentions;
  std::vector<std::unique_ptr<ResnetBlock>> resnets;
  std::unique_ptr<Conv> down;
};

/// CrossAttnUpBlock2D or UpBlock2D: layersPerBlock + 1 resnets, each on
/// the concatenation with the next skip, then nearest upsampling and a
/// convolution.
class UpBlock : public Module {
public:
  UpBlock(Within at, llvm::StringRef name, int64_t in, int64_t prevOut,
          int64_t out, bool cross, bool upsample, const SDUNetConfig &c)
      : Module(at, name) {
    int64_t layers = c.layersPerBlock + 1;
    for (int64_t j = 0; cross && j < layers; ++j)
      attentions.push_back(std::make_unique<SpatialTransformer>(
          *this, "attentions." + std::to_string(j), out, c));
    for (int64_t j = 0; j < layers; ++j) {
      int64_t skip = j == layers - 1 ? in : out;
      int64_t resnetIn = j == 0 ? prevOut : out;
      resnets.push_back(std::make_unique<ResnetBlock>(
          *this, "resnets." + std::to_string(j), resnetIn + skip, out, c));
    }
    if (upsample)
      up = std::make_unique<Conv>(*this, "upsamplers.0.conv", out, out,
                                  std::vector<int64_t>{3, 3}, conv3x3());
  }
  Tensor operator()(Tensor x, Tensor temb, Tensor context,
                    std::vector<Tensor> &skips) const {
    Graph::Scope scope = enter();
    for (size_t j = 0; j < resnets.size(); ++j) {
      Tensor skip = skips.back();
      skips.pop_back();
      x = (*resnets[j])(concat({x, skip}, 1), temb);
      if (!attentions.empty())
        x = (*attentions[j])(x, context);
    }
    if (up) {
      Graph &g = graph();
      x = g.op<ad::UpsampleNearestOp>(
          {x.value()},
          {g.attr("scale", g.builder().getDenseI64ArrayAttr({2, 2}))});
      x = (*up)(x);
    }
    return x;
  }
  std::vector<std::unique_ptr<SpatialTransformer>> attentions;
  std::vector<std::unique_ptr<ResnetBlock>> resnets;
  std::unique_ptr<Conv> up;
};

/// UNetMidBlock2DCrossAttn: resnet, spatial transformer, resnet.
class MidBlock : public Module {
public:
  MidBlock(Within at, int64_t channels, const SDUNetConfig &c)
      : Module(at, "mid_block"), attention(*this, "attentions.0", channels, c),
        resnet0(*this, "resnets.0", channels, channels, c),
        resnet1(*this, "resnets.1", channels, channels, c) {}
  Tensor operator()(Tensor x, Tensor temb, Tensor context) const {
    Graph::Scope scope = enter();
    return resnet1(attention(resnet0(x, temb), context), temb);
  }
  SpatialTransformer attention;
  ResnetBlock resnet0, resnet1;
};

/// A (rows) f32 constant.
Tensor vectorConstant(Graph &g, const std::vector<float> &values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    g.floatType());
  return g.op<ad::ConstantOp>(
      {}, {g.attr("value", DenseElementsAttr::get(type, ArrayRef(values)))},
      {type});
}

int64_t square(int64_t x) { return x * x; }

template <typename T> T forwardFlops(const SDUNetConfig &c);

} // namespace

std::vector<int64_t> SDUNetConfig::channels() const {
  std::vector<int64_t> out;
  for (int64_t m : multipliers)
    out.push_back(width * m);
  return out;
}

const std::vector<SDUNetConfig> &sdUNetConfigs() {
  static const std::vector<SDUNetConfig> configs = [] {
    SDUNetConfig tiny;
    tiny.name = "sd-unet-tiny";
    tiny.width = 32;
    tiny.multipliers = {1, 2};
    tiny.layersPerBlock = 1;
    tiny.headDim = 16;
    tiny.crossDim = 32;
    tiny.groups = 8;
    tiny.latent = 8;
    tiny.contextLength = 4;
    SDUNetConfig sd2;
    sd2.name = "sd2-unet";
    sd2.batch = 8;
    return std::vector<SDUNetConfig>{tiny, sd2};
  }();
  return configs;
}

const SDUNetConfig *findSDUNetConfig(const std::string &name) {
  return config::findByName(sdUNetConfigs(), name);
}

const std::vector<std::string> &SDUNetConfig::fieldNames() {
  static const std::vector<std::string> names = [] {
    SDUNetConfig c;
    return config::fieldNames(intFields(c));
  }();
  return names;
}

void SDUNetConfig::set(const std::string &field, const std::string &value) {
  config::setIntField(name, intFields(*this), field, value);
}

void SDUNetConfig::validate() const {
  auto fail = [&](const std::string &m) { config::fail(name, m); };
  config::requirePositive(name, intFields(*this));
  if (width > (int64_t(1) << 16) || crossDim > (int64_t(1) << 16) ||
      latent > (int64_t(1) << 12) || contextLength > (int64_t(1) << 16) ||
      batch > (int64_t(1) << 16) || latentChannels > (int64_t(1) << 16) ||
      layersPerBlock > 64 || trainSteps > (int64_t(1) << 31))
    fail("the model is too large for 64-bit counts");
  for (int64_t ch : channels()) {
    if (ch % groups != 0)
      fail("groups = " + std::to_string(groups) +
           " must divide every block's channels (width = " +
           std::to_string(width) + " gives " + std::to_string(ch) + ")");
    if (ch % headDim != 0)
      fail("head_dim = " + std::to_string(headDim) +
           " must divide every block's channels (width = " +
           std::to_string(width) + " gives " + std::to_string(ch) + ")");
  }
  int64_t factor = int64_t(1) << (multipliers.size() - 1);
  if (latent % factor != 0)
    fail("latent = " + std::to_string(latent) + " must be divisible by " +
         std::to_string(factor) + " (the UNet halves it " +
         std::to_string(multipliers.size() - 1) + " times)");
  if (3 * __int128(batch) * forwardFlops<__int128>(*this) > __int128(1) << 62)
    fail("the model is too large for 64-bit counts (a step's FLOPs exceed "
         "2^62)");
}

namespace {
/// The forward FLOPs in `T`: int64_t for the result, __int128 to check that
/// it fits.
template <typename T> T forwardFlops(const SDUNetConfig &c) {
  const T temb = 4 * T(c.width), ctx = c.contextLength;
  auto conv3 = [](T in, T out, int64_t side) {
    return 2 * in * out * 9 * square(side);
  };
  auto resnet = [&](T in, T out, int64_t side) {
    return conv3(in, out, side) + conv3(out, out, side) + 2 * temb * out +
           (in != out ? 2 * in * out * square(side) : T(0));
  };
  auto transformer = [&](T ch, int64_t side) {
    T n = square(side);
    return 2 * 2 * n * ch * ch                          // proj_in, proj_out
           + 4 * 2 * n * ch * ch + 4 * n * n * ch       // self-attention
           + 2 * 2 * n * ch * ch                        // cross q, out
           + 2 * 2 * ctx * c.crossDim * ch              // cross k, v
           + 4 * n * ctx * ch                           // cross attention
           + 2 * n * ch * 8 * ch + 2 * n * 4 * ch * ch; // GEGLU
  };
  std::vector<int64_t> ch = c.channels();
  const size_t levels = ch.size();
  T flops = 2 * T(c.width) * temb + 2 * temb * temb; // time embedding
  int64_t side = c.latent;
  flops += conv3(c.latentChannels, ch[0], side); // conv_in
  int64_t in = ch[0];
  for (size_t i = 0; i < levels; ++i) {
    bool last = i + 1 == levels;
    for (int64_t j = 0; j < c.layersPerBlock; ++j) {
      flops += resnet(j == 0 ? in : ch[i], ch[i], side);
      if (!last)
        flops += transformer(ch[i], side);
    }
    in = ch[i];
    if (!last) {
      side /= 2;
      flops += conv3(ch[i], ch[i], side); // stride 2: the output side
    }
  }
  flops += 2 * resnet(ch.back(), ch.back(), side) +
           transformer(ch.back(), side); // mid block
  int64_t prev = ch.back();
  for (size_t i = 0; i < levels; ++i) {
    size_t level = levels - 1 - i;
    int64_t out = ch[level], input = ch[level == 0 ? 0 : level - 1];
    for (int64_t j = 0; j <= c.layersPerBlock; ++j) {
      int64_t skip = j == c.layersPerBlock ? input : out;
      flops += resnet((j == 0 ? prev : out) + skip, out, side);
      if (i > 0)
        flops += transformer(out, side);
    }
    prev = out;
    if (level > 0) {
      side *= 2;
      flops += conv3(out, out, side);
    }
  }
  return flops + conv3(ch[0], c.latentChannels, side); // conv_out
}
} // namespace

int64_t sdUNetForwardFlopsPerSample(const SDUNetConfig &c) {
  return forwardFlops<int64_t>(c);
}

int64_t sdUNetFlopsPerStep(const SDUNetConfig &c) {
  return 3 * c.batch * sdUNetForwardFlopsPerSample(c);
}

OwningOpRef<ModuleOp> buildSDUNet(MLIRContext &context, const SDUNetConfig &c) {
  c.validate();
  Graph g(context);
  const int64_t B = c.batch, S = c.latent, L = c.latentChannels;
  const std::vector<int64_t> ch = c.channels();
  const size_t levels = ch.size();
  const int64_t temb = 4 * c.width;

  // Parameters in diffusers' order: conv_in, time_embedding, down_blocks,
  // up_blocks (registered before mid_block), mid_block, conv_norm_out,
  // conv_out.
  Conv convIn(g, "conv_in", L, ch[0], {3, 3}, conv3x3());
  Linear time1(g, "time_embedding.linear_1", c.width, temb, torchLinear());
  Linear time2(g, "time_embedding.linear_2", temb, temb, torchLinear());
  std::vector<std::unique_ptr<DownBlock>> down;
  {
    Graph::Scope s(g, "down_blocks");
    int64_t in = ch[0];
    for (size_t i = 0; i < levels; ++i) {
      bool last = i + 1 == levels;
      down.push_back(std::make_unique<DownBlock>(g, std::to_string(i), in,
                                                 ch[i], !last, !last, c));
      in = ch[i];
    }
  }
  std::vector<std::unique_ptr<UpBlock>> up;
  {
    Graph::Scope s(g, "up_blocks");
    int64_t prev = ch.back();
    for (size_t i = 0; i < levels; ++i) {
      size_t level = levels - 1 - i;
      int64_t out = ch[level], input = ch[level == 0 ? 0 : level - 1];
      up.push_back(std::make_unique<UpBlock>(g, std::to_string(i), input, prev,
                                             out, i > 0, level > 0, c));
      prev = out;
    }
  }
  MidBlock mid(g, ch.back(), c);
  GroupNorm normOut(g, "conv_norm_out", ch[0], c.groups, kResnetEpsilon);
  Conv convOut(g, "conv_out", ch[0], L, {3, 3}, conv3x3());

  Tensor latents = g.input("latents", {B, L, S, S}, g.floatType());
  Tensor noise = g.input("noise", {B, L, S, S}, g.floatType());
  Tensor timesteps =
      g.input("timesteps", {B}, g.builder().getI32Type(), c.trainSteps);
  Tensor text = g.input("encoder_hidden_states",
                        {B, c.contextLength, c.crossDim}, g.floatType());

  Tensor noisy;
  {
    // DDPM forward process: sqrt(abar_t) x0 + sqrt(1 - abar_t) noise, with
    // betas = linspace(sqrt(0.00085), sqrt(0.012), steps)^2.
    Graph::Scope s(g, "noise_scheduler");
    std::vector<float> signal, noiseScale;
    double abar = 1.0, lo = std::sqrt(0.00085), hi = std::sqrt(0.012);
    for (int64_t t = 0; t < c.trainSteps; ++t) {
      double frac = c.trainSteps > 1 ? double(t) / double(c.trainSteps - 1) : 0;
      double beta = std::pow(lo + (hi - lo) * frac, 2);
      abar *= 1.0 - beta;
      signal.push_back(static_cast<float>(std::sqrt(abar)));
      noiseScale.push_back(static_cast<float>(std::sqrt(1.0 - abar)));
    }
    auto at = [&](const std::vector<float> &table) {
      Tensor v = g.op<ad::GatherOp>(
          {vectorConstant(g, table).value(), timesteps.value()},
          {g.attr("axis", g.builder().getI64IntegerAttr(0))});
      return reshape(v, {B, 1, 1, 1});
    };
    noisy = at(signal) * latents + at(noiseScale) * noise;
  }
  Tensor emb;
  {
    // Timesteps(width, flip_sin_to_cos=True, freq_shift=0): [cos, sin] of
    // t * 10000^(-i / half), then TimestepEmbedding.
    Graph::Scope s(g, "time_proj");
    int64_t half = c.width / 2;
    std::vector<float> freqs;
    for (int64_t i = 0; i < half; ++i)
      freqs.push_back(static_cast<float>(
          std::exp(-std::log(10000.0) * double(i) / double(half))));
    Tensor angles = reshape(cast(timesteps, g.floatType()), {B, 1}) *
                    reshape(vectorConstant(g, freqs), {1, half});
    emb = concat(
        {g.op<ad::CosOp>({angles.value()}), g.op<ad::SinOp>({angles.value()})},
        1);
    if (c.width % 2)
      emb = concat({emb, full(g, {B, 1}, 0.0, g.floatType())}, 1);
  }
  emb = time2(silu(time1(emb)));

  Tensor x = convIn(noisy);
  std::vector<Tensor> skips{x};
  for (auto &block : down)
    x = (*block)(x, emb, text, skips);
  x = mid(x, emb, text);
  for (auto &block : up)
    x = (*block)(x, emb, text, skips);
  Tensor prediction = convOut(silu(normOut(x)));

  Tensor loss;
  {
    Graph::Scope s(g, "loss");
    loss = g.op<ad::MSELossOp>(
        {prediction.value(), noise.value()},
        {g.attr("reduction",
                ad::ReductionAttr::get(&g.context(), ad::Reduction::mean))});
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
