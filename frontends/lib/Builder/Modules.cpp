//===- Modules.cpp - composable layers in the style of torch.nn -----------===//
//
// Each constructor creates its parameters (in the order a PyTorch state
// dict lists them) and its child modules; each call operator builds ops in
// the module's scope, so that errors and op locations carry its path.
// Shapes in comments: B batch, T tokens, C width, H heads, D head width.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Modules.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

Within::Within(const Module &parent)
    : graph(parent.graph()), path(parent.path()) {}

Module::Module(Within at, StringRef name)
    : graph_(at.graph),
      path_(at.path.empty() ? name.str() : at.path + "." + name.str()) {}

Tensor Module::param(StringRef name, ArrayRef<int64_t> shape,
                     ad::InitializerAttr init, std::optional<bool> trainable) {
  Graph::Scope scope = enter();
  return graph_.parameter(name, shape, init, trainable);
}

Tensor Module::buffer(StringRef name, ArrayRef<int64_t> shape,
                      ad::InitializerAttr init, Type elementType) {
  Graph::Scope scope = enter();
  return graph_.buffer(name, shape, init, elementType);
}

void Module::fail(const llvm::Twine &message) const {
  Graph::Scope scope = enter();
  graph_.fail(message);
}

//===----------------------------------------------------------------------===//
// Linear, Embedding, norms, dropout
//===----------------------------------------------------------------------===//

Linear::Linear(Within at, StringRef name, int64_t in, int64_t out,
               Options options)
    : Module(at, name), in(in), out(out), options(options) {
  if (in < 1 || out < 1)
    fail("Linear needs positive sizes, got in = " + llvm::Twine(in) +
         ", out = " + llvm::Twine(out));
  Graph &g = graph();
  SmallVector<int64_t> shape = options.transposedWeight
                                   ? SmallVector<int64_t>{out, in}
                                   : SmallVector<int64_t>{in, out};
  weight = param("weight", shape,
                 g.init(ad::InitKind::normal, {{"std", options.initStd}}));
  if (options.bias)
    bias = param("bias", {out}, g.init(ad::InitKind::zeros));
  if (int64_t r = options.lora.rank) {
    if (r < 1 || r > std::min(in, out))
      fail("LoRA rank " + llvm::Twine(r) + " must lie in [1, min(in, out) = " +
           llvm::Twine(std::min(in, out)) + "]");
    // PEFT's initialization: A Kaiming uniform (a = sqrt 5), B zeros.
    loraA = param(
        "lora_A.weight", {r, in},
        g.init(ad::InitKind::kaiming_uniform, {{"gain", std::sqrt(1.0 / 3.0)}}),
        /*trainable=*/true);
    loraB = param("lora_B.weight", {out, r}, g.init(ad::InitKind::zeros),
                  /*trainable=*/true);
  }
}

Tensor Linear::operator()(Tensor x) const {
  Graph::Scope scope = enter();
  if (x.dim(-1) != in)
    fail("input has " + llvm::Twine(x.dim(-1)) +
         " features in its last dimension, the layer expects " +
         llvm::Twine(in));
  Tensor y = matmul(x, weight, /*transposeA=*/false, options.transposedWeight);
  if (bias)
    y = y + bias;
  if (loraA) {
    // (..., in) -> (..., r) -> (..., out), scaled by alpha / r.
    Graph::Scope lora(graph(), "lora");
    double alpha = options.lora.alpha ? options.lora.alpha
                                      : static_cast<double>(options.lora.rank);
    Tensor delta = matmul(matmul(x, loraA, false, true), loraB, false, true);
    y = y + delta * full(graph(), {}, alpha / options.lora.rank,
                         delta.elementType());
  }
  return y;
}

Embedding::Embedding(Within at, StringRef name, int64_t count, int64_t dim,
                     double initStd)
    : Module(at, name) {
  weight = param("weight", {count, dim},
                 graph().init(ad::InitKind::normal, {{"std", initStd}}));
}

Tensor Embedding::operator()(Tensor indices) const {
  Graph::Scope scope = enter();
  return embedding(weight, indices);
}

LayerNorm::LayerNorm(Within at, StringRef name, int64_t dim, double epsilon,
                     bool withBias)
    : Module(at, name), epsilon(epsilon) {
  weight = param("weight", {dim}, graph().init(ad::InitKind::ones));
  if (withBias)
    bias = param("bias", {dim}, graph().init(ad::InitKind::zeros));
}

Tensor LayerNorm::operator()(Tensor x) const {
  Graph::Scope scope = enter();
  return layerNorm(x, weight, bias, /*axis=*/-1, epsilon);
}

RMSNorm::RMSNorm(Within at, StringRef name, int64_t dim, double epsilon)
    : Module(at, name), epsilon(epsilon) {
  weight = param("weight", {dim}, graph().init(ad::InitKind::ones));
}

Tensor RMSNorm::operator()(Tensor x) const {
  Graph::Scope scope = enter();
  return rmsNorm(x, weight, /*axis=*/-1, epsilon);
}

Tensor Dropout::operator()(Tensor x) {
  if (rate_ == 0.0)
    return x;
  Graph &g = x.graph();
  // Each site gets its own stream, seed * 2^16 + site: no two (seed, site)
  // pairs share one, so advancing the seed per step never reuses a mask.
  if (calls_ >= kMaxSites)
    g.fail("more than " + llvm::Twine(kMaxSites) + " dropout sites");
  Type i64 = g.builder().getI64Type();
  Tensor site = seed_ * full(g, {}, static_cast<double>(kMaxSites), i64) +
                full(g, {}, static_cast<double>(calls_++), i64);
  return dropout(x, site, rate_);
}

//===----------------------------------------------------------------------===//
// MLP, attention, transformer block
//===----------------------------------------------------------------------===//

MLP::MLP(Within at, StringRef name, int64_t dim, int64_t hidden,
         double projInitStd)
    : Module(at, name), fc(*this, "c_fc", dim, hidden),
      proj(*this, "c_proj", hidden, dim,
           Linear::Options{/*bias=*/true, /*transposedWeight=*/false,
                           projInitStd}) {}

Tensor MLP::operator()(Tensor x) const {
  Graph::Scope scope = enter();
  return proj(gelu(fc(x), /*tanhApproximation=*/true)); // (B, T, C)
}

static int64_t checkedHeadDim(const Module &m, int64_t dim, int64_t heads,
                              int64_t kvHeads) {
  if (heads < 1 || dim % heads != 0)
    throw BuildError(m.path() + ": heads = " + std::to_string(heads) +
                     " must be positive and divide the width " +
                     std::to_string(dim));
  if (kvHeads < 1 || heads % kvHeads != 0)
    throw BuildError(
        m.path() + ": kv_heads = " + std::to_string(kvHeads) +
        " must be positive and divide heads = " + std::to_string(heads));
  return dim / heads;
}

CausalSelfAttention::CausalSelfAttention(Within at, StringRef name, int64_t dim,
                                         int64_t heads, int64_t kvHeads,
                                         double projInitStd, LoRA qkvLora,
                                         LoRA projLora)
    : Module(at, name), dim(dim), heads(heads), kvHeads(kvHeads),
      headDim(checkedHeadDim(*this, dim, heads, kvHeads)),
      qkv(*this, "c_attn", dim, dim + 2 * kvHeads * headDim,
          Linear::Options{/*bias=*/true, /*transposedWeight=*/false,
                          /*initStd=*/0.02, qkvLora}),
      proj(*this, "c_proj", dim, dim,
           Linear::Options{/*bias=*/true, /*transposedWeight=*/false,
                           projInitStd, projLora}) {}

Tensor CausalSelfAttention::operator()(Tensor x) const {
  Graph::Scope scope = enter();
  int64_t b = x.dim(0), t = x.dim(1);
  int64_t kvDim = kvHeads * headDim;
  std::vector<Tensor> parts = split(qkv(x), -1, {dim, kvDim, kvDim});
  // (B, T, H*D) -> (B, T, H, D) -> (B, H, T, D)
  auto heads4 = [&](Tensor v, int64_t n) {
    return transpose(reshape(v, {b, t, n, headDim}), {0, 2, 1, 3});
  };
  Tensor q = heads4(parts[0], heads);
  Tensor k = heads4(parts[1], kvHeads);
  Tensor v = heads4(parts[2], kvHeads);
  Tensor y = attention(q, k, v, /*causal=*/true); // (B, H, T, D)
  // (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
  y = reshape(transpose(y, {0, 2, 1, 3}), {b, t, dim});
  return proj(y);
}

TransformerBlock::TransformerBlock(Within at, StringRef name,
                                   const Config &config)
    : Module(at, name), ln1(*this, "ln_1", config.dim, config.layerNormEpsilon),
      attn(*this, "attn", config.dim, config.heads, config.kvHeads,
           config.projInitStd, config.qkvLora, config.projLora),
      ln2(*this, "ln_2", config.dim, config.layerNormEpsilon),
      mlp(*this, "mlp", config.dim, config.mlpHidden, config.projInitStd) {}

Tensor TransformerBlock::operator()(Tensor x, Dropout &dropout) const {
  Graph::Scope scope = enter();
  x = x + dropout(attn(ln1(x))); // (B, T, C)
  return x + dropout(mlp(ln2(x)));
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

Conv::Conv(Within at, StringRef name, int64_t in, int64_t out,
           ArrayRef<int64_t> kernel, Options opts)
    : Module(at, name), options(std::move(opts)) {
  size_t n = kernel.size();
  if (n < 1 || n > 3)
    fail("Conv needs a 1-, 2- or 3-D kernel, got " + llvm::Twine(n) +
         " dimensions");
  if (options.groups < 1 || in % options.groups || out % options.groups)
    fail("groups = " + llvm::Twine(options.groups) + " must divide in = " +
         llvm::Twine(in) + " and out = " + llvm::Twine(out));
  auto fill = [&](std::vector<int64_t> &v, int64_t dflt, const char *what) {
    if (v.empty())
      v.assign(n, dflt);
    else if (v.size() != n)
      fail(llvm::Twine(what) + " has " + llvm::Twine(v.size()) +
           " entries, the kernel has " + llvm::Twine(n) + " dimensions");
  };
  fill(options.stride, 1, "stride");
  fill(options.padding, 0, "padding");
  fill(options.dilation, 1, "dilation");
  SmallVector<int64_t> shape{out, in / options.groups};
  shape.append(kernel.begin(), kernel.end());
  // PyTorch's default: Kaiming uniform with a = sqrt(5), i.e. gain
  // sqrt(2 / (1 + 5)) = sqrt(1/3).
  weight = param("weight", shape,
                 graph().init(ad::InitKind::kaiming_uniform,
                              {{"gain", std::sqrt(1.0 / 3.0)}}));
  if (options.bias)
    bias = param("bias", {out}, graph().init(ad::InitKind::zeros));
}

Tensor Conv::operator()(Tensor x) const {
  Graph::Scope scope = enter();
  return conv(x, weight, bias, options.stride, options.padding,
              options.dilation, options.groups);
}

} // namespace anvil::frontend
