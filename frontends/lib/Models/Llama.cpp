//===- Llama.cpp - the Llama 2 / Llama 3.1 family -------------------------===//
//
// Config tables and the forward graph. Sizes are those of the released
// checkpoints' config.json files (Hugging Face: meta-llama/Llama-3.1-8B,
// -70B, -405B; meta-llama/Llama-2-70b-hf). `llama3.1-405b-mlperf` is the
// 405B model as MLPerf Training trains it, with the 32,000-token Mixtral
// vocabulary; `llama2-70b-lora` is MLPerf's LoRA fine-tuning of Llama 2
// 70B (rank 16, alpha 32 on the attention projections, sequence 8192).
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/Llama.h"

#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

LlamaConfig make(const char *name, int64_t layers, int64_t width, int64_t heads,
                 int64_t kvHeads, int64_t ffn, int64_t vocab, int64_t context,
                 double theta, bool llama3) {
  LlamaConfig c;
  c.name = name;
  c.layers = layers;
  c.width = width;
  c.heads = heads;
  c.kvHeads = kvHeads;
  c.ffn = ffn;
  c.vocab = vocab;
  c.context = context;
  c.ropeTheta = theta;
  c.llama3Scaling = llama3;
  return c;
}

[[noreturn]] void badField(const LlamaConfig &c, const std::string &message) {
  config::fail(c.name, message);
}

/// The rotary inverse frequencies theta^(-2i/D), i < D/2, with Llama 3.1's
/// scaling (transformers' _compute_llama3_parameters): wavelengths longer
/// than original_context / low_freq_factor are divided by `factor`, those
/// shorter than original_context / high_freq_factor kept, the band between
/// interpolated smoothly.
std::vector<double> inverseFrequencies(const LlamaConfig &c) {
  int64_t d = c.headDim();
  std::vector<double> inv(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) {
    double f = std::pow(c.ropeTheta, -2.0 * i / static_cast<double>(d));
    if (c.llama3Scaling) {
      double wavelen = 2 * M_PI / f;
      double lowWavelen = c.originalContext / c.lowFreqFactor;
      double highWavelen = c.originalContext / c.highFreqFactor;
      if (wavelen > lowWavelen) {
        f /= c.ropeFactor;
      } else if (wavelen >= highWavelen) {
        double smooth = (c.originalContext / wavelen - c.lowFreqFactor) /
                        (c.highFreqFactor - c.lowFreqFactor);
        f = (1 - smooth) * f / c.ropeFactor + smooth * f;
      }
    }
    inv[i] = f;
  }
  return inv;
}

/// cos or sin of position * frequency, (T, D/2), as an f32 constant.
Tensor ropeTable(Graph &g, const LlamaConfig &c, bool sine) {
  std::vector<double> inv = inverseFrequencies(c);
  int64_t t = c.sequenceLength(), half = c.headDim() / 2;
  std::vector<float> values;
  values.reserve(static_cast<size_t>(t * half));
  for (int64_t p = 0; p < t; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double angle = static_cast<double>(p) * inv[i];
      values.push_back(
          static_cast<float>(sine ? std::sin(angle) : std::cos(angle)));
    }
  auto type = RankedTensorType::get({t, half}, g.floatType());
  return g.op<ad::ConstantOp>(
      {}, {g.attr("value", DenseElementsAttr::get(type, ArrayRef(values)))},
      {type});
}

/// Llama attention: q/k/v/o projections without biases (q, k and v
/// separate, or fused into one qkv_proj whose rows are q's, then k's, then
/// v's), rotary embeddings on q and k, grouped-query causal attention.
class LlamaAttention : public Module {
public:
  LlamaAttention(Within at, const LlamaConfig &c, LoRA lora)
      : Module(at, "self_attn"), c(c) {
    // In state-dict order: the q/k/v projections, then o_proj.
    int64_t q = c.heads * c.headDim(), kv = c.kvHeads * c.headDim();
    auto linear = [&](const char *name, int64_t in, int64_t out) {
      return std::make_unique<Linear>(*this, name, in, out, options(lora));
    };
    if (c.fusedQKV) {
      qkv = linear("qkv_proj", c.width, q + 2 * kv);
    } else {
      qProj = linear("q_proj", c.width, q);
      kProj = linear("k_proj", c.width, kv);
      vProj = linear("v_proj", c.width, kv);
    }
    o = linear("o_proj", q, c.width);
  }

  static Linear::Options options(LoRA lora) {
    Linear::Options o;
    o.bias = false;
    o.transposedWeight = true;
    o.lora = lora;
    return o;
  }

  Tensor operator()(Tensor x, Tensor cos, Tensor sin) const {
    Graph::Scope scope = enter();
    int64_t b = x.dim(0), t = x.dim(1), d = c.headDim();
    // (B, T, H * D) -> (B, H, T, D)
    auto heads = [&](Tensor y, int64_t h) {
      return transpose(reshape(y, {b, t, h, d}), {0, 2, 1, 3});
    };
    auto rope = [&](Tensor y) {
      return graph().op<ad::RopeOp>({y.value(), cos.value(), sin.value()});
    };
    Tensor qy, ky, vy;
    if (qkv) {
      std::vector<Tensor> parts =
          split((*qkv)(x), 2, {c.heads * d, c.kvHeads * d, c.kvHeads * d});
      qy = parts[0], ky = parts[1], vy = parts[2];
    } else {
      qy = (*qProj)(x), ky = (*kProj)(x), vy = (*vProj)(x);
    }
    Tensor qh = rope(heads(qy, c.heads));
    Tensor kh = rope(heads(ky, c.kvHeads));
    Tensor vh = heads(vy, c.kvHeads);
    Tensor y = attention(qh, kh, vh, /*causal=*/true);
    return (*o)(reshape(transpose(y, {0, 2, 1, 3}), {b, t, c.heads * d}));
  }

  const LlamaConfig &c;
  std::unique_ptr<Linear> qProj, kProj, vProj, qkv, o;
};

/// SwiGLU: down(silu(gate(x)) * up(x)).
class LlamaMLP : public Module {
public:
  LlamaMLP(Within at, const LlamaConfig &c)
      : Module(at, "mlp"),
        gate(*this, "gate_proj", c.width, c.ffn, LlamaAttention::options({})),
        up(*this, "up_proj", c.width, c.ffn, LlamaAttention::options({})),
        down(*this, "down_proj", c.ffn, c.width, LlamaAttention::options({})) {}
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    return down(silu(gate(x)) * up(x));
  }
  Linear gate, up, down;
};

class LlamaBlock : public Module {
public:
  LlamaBlock(Within at, llvm::StringRef name, const LlamaConfig &c, LoRA lora)
      : Module(at, name),
        inputNorm(*this, "input_layernorm", c.width, c.normEpsilon),
        attn(*this, c, lora),
        postNorm(*this, "post_attention_layernorm", c.width, c.normEpsilon),
        mlp(*this, c) {}
  Tensor operator()(Tensor x, Tensor cos, Tensor sin) const {
    Graph::Scope scope = enter();
    x = x + attn(inputNorm(x), cos, sin);
    return x + mlp(postNorm(x));
  }
  RMSNorm inputNorm;
  LlamaAttention attn;
  RMSNorm postNorm;
  LlamaMLP mlp;
};

} // namespace

const std::vector<LlamaConfig> &llamaConfigs() {
  static const std::vector<LlamaConfig> configs = [] {
    std::vector<LlamaConfig> v;
    // Trains in seconds on two cores: 2 layers, width 64, 4 query heads
    // sharing 2 key/value heads, byte-level vocabulary.
    LlamaConfig tiny =
        make("llama-tiny", 2, 64, 4, 2, 172, 256, 64, 500000.0, true);
    tiny.originalContext = 32;
    tiny.batch = 4;
    tiny.seqLen = 32;
    v.push_back(tiny);
    for (LlamaConfig c : {make("llama3.1-8b", 32, 4096, 32, 8, 14336, 128256,
                               131072, 500000.0, true),
                          make("llama3.1-70b", 80, 8192, 64, 8, 28672, 128256,
                               131072, 500000.0, true),
                          make("llama3.1-405b", 126, 16384, 128, 8, 53248,
                               128256, 131072, 500000.0, true),
                          make("llama3.1-405b-mlperf", 126, 16384, 128, 8,
                               53248, 32000, 131072, 500000.0, true)}) {
      c.seqLen = 8192;
      v.push_back(c);
    }
    LlamaConfig l2 =
        make("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, 10000.0, false);
    v.push_back(l2);
    // MLPerf's reference fine-tunes a Llama 2 70B checkpoint with fused
    // q/k/v projections and adapts qkv_proj and o_proj.
    LlamaConfig lora = l2;
    lora.name = "llama2-70b-lora";
    lora.fusedQKV = true;
    lora.context = 8192;
    lora.loraRank = 16;
    lora.loraAlpha = 32;
    v.push_back(lora);
    return v;
  }();
  return configs;
}

const LlamaConfig *findLlamaConfig(const std::string &name) {
  return config::findByName(llamaConfigs(), name);
}

const std::vector<std::string> &LlamaConfig::fieldNames() {
  static const std::vector<std::string> names = {"layers",
                                                 "width",
                                                 "heads",
                                                 "kv_heads",
                                                 "ffn",
                                                 "vocab",
                                                 "context",
                                                 "batch",
                                                 "seq_len",
                                                 "rope_theta",
                                                 "rope_original_context",
                                                 "lora_rank",
                                                 "lora_alpha",
                                                 "fused_qkv"};
  return names;
}

void LlamaConfig::set(const std::string &field, const std::string &value) {
  auto parseInt = [&] { return config::parseInt(name, field, value); };
  auto parseDouble = [&] { return config::parseDouble(name, field, value); };
  if (field == "layers")
    layers = parseInt();
  else if (field == "width")
    width = parseInt();
  else if (field == "heads")
    heads = parseInt();
  else if (field == "kv_heads")
    kvHeads = parseInt();
  else if (field == "ffn")
    ffn = parseInt();
  else if (field == "vocab")
    vocab = parseInt();
  else if (field == "context")
    context = parseInt();
  else if (field == "batch")
    batch = parseInt();
  else if (field == "seq_len")
    seqLen = parseInt();
  else if (field == "rope_theta")
    ropeTheta = parseDouble();
  else if (field == "rope_original_context")
    originalContext = parseInt();
  else if (field == "lora_rank")
    loraRank = parseInt();
  else if (field == "lora_alpha")
    loraAlpha = parseDouble();
  else if (field == "fused_qkv") {
    int64_t v = parseInt();
    if (v != 0 && v != 1)
      config::fail(name, "fused_qkv = " + value + " must be 0 or 1");
    fusedQKV = v == 1;
  } else
    config::unknownField(name, field, fieldNames());
}

void LlamaConfig::validate() const {
  auto positive = [&](const char *field, int64_t v) {
    config::requirePositive(name, field, v);
  };
  positive("layers", layers);
  positive("width", width);
  positive("heads", heads);
  positive("kv_heads", kvHeads);
  positive("ffn", ffn);
  positive("vocab", vocab);
  positive("context", context);
  positive("batch", batch);
  if (width % heads != 0 || headDim() % 2 != 0)
    badField(*this, "heads = " + std::to_string(heads) +
                        " must divide width = " + std::to_string(width) +
                        " into an even head size (rotary pairs)");
  if (heads % kvHeads != 0)
    badField(*this, "kv_heads = " + std::to_string(kvHeads) +
                        " must divide heads = " + std::to_string(heads));
  if (seqLen < 0 || sequenceLength() > context)
    badField(*this, "seq_len = " + std::to_string(seqLen) +
                        " must lie in [1, context = " +
                        std::to_string(context) + "] (0 means context)");
  if (!(ropeTheta > 1.0))
    badField(*this, "rope_theta must be greater than 1");
  positive("rope_original_context", originalContext);
  if (loraRank < 0 || loraRank > width)
    badField(*this, "lora_rank = " + std::to_string(loraRank) +
                        " must lie in [0, width = " + std::to_string(width) +
                        "]");
  if (vocab > (int64_t(1) << 31) - 1)
    badField(*this, "vocab does not fit the i32 token ids");
  // The counts must fit in 63 bits; estimate them in long double first.
  long double L = layers, C = width, F = ffn, V = vocab, T = sequenceLength();
  long double params = 2 * V * C + L * (4 * C * C + 3 * C * F);
  if (params > 0x1p60L || 6 * params * batch * T > 0x1p62L)
    badField(*this, "the model is too large for 64-bit counts");
}

int64_t llamaParameterCount(const LlamaConfig &c) {
  int64_t C = c.width, kv = c.kvHeads * c.headDim(), q = c.heads * c.headDim();
  int64_t perLayer = 2 * C + C * q + 2 * C * kv + q * C + 3 * C * c.ffn;
  // An adapter of rank r on a linear layer (in, out) has r (in + out).
  if (c.loraRank && c.fusedQKV)
    perLayer += c.loraRank * ((C + q + 2 * kv) + (q + C));
  else if (c.loraRank)
    perLayer += c.loraRank * ((C + q) + (C + kv) + (C + kv) + (q + C));
  return 2 * c.vocab * C + C + c.layers * perLayer;
}

int64_t llamaFlopsPerStep(const LlamaConfig &c) {
  int64_t tokens = c.tokensPerStep();
  int64_t matmulWeights = llamaParameterCount(c) - c.vocab * c.width;
  int64_t attention = 12 * c.layers * c.width * c.sequenceLength() * tokens;
  if (!c.loraRank)
    return 6 * matmulWeights * tokens + attention;
  LlamaConfig base = c;
  base.loraRank = 0;
  int64_t adapters = llamaParameterCount(c) - llamaParameterCount(base);
  return (4 * (matmulWeights - adapters) + 6 * adapters) * tokens + attention;
}

OwningOpRef<ModuleOp> buildLlama(MLIRContext &context, const LlamaConfig &c) {
  c.validate();
  Graph g(context);
  int64_t B = c.batch, T = c.sequenceLength();
  LoRA lora;
  if (c.loraRank > 0) {
    g.setDefaultTrainable(false);
    lora = LoRA{c.loraRank, c.loraAlpha};
  }
  // Parameters in state-dict order.
  std::unique_ptr<Embedding> embed;
  std::vector<std::unique_ptr<LlamaBlock>> blocks;
  std::unique_ptr<RMSNorm> norm;
  {
    Graph::Scope model(g, "model");
    embed = std::make_unique<Embedding>(g, "embed_tokens", c.vocab, c.width);
    Graph::Scope layers(g, "layers");
    for (int64_t i = 0; i < c.layers; ++i)
      blocks.push_back(
          std::make_unique<LlamaBlock>(g, std::to_string(i), c, lora));
  }
  {
    Graph::Scope model(g, "model");
    norm = std::make_unique<RMSNorm>(g, "norm", c.width, c.normEpsilon);
  }
  Linear head(g, "lm_head", c.width, c.vocab, LlamaAttention::options({}));

  Tensor tokens = g.input("tokens", {B, T}, g.builder().getI32Type());
  Tensor targets = g.input("targets", {B, T}, g.builder().getI32Type());
  Tensor cos, sin;
  {
    Graph::Scope s(g, "rotary_emb");
    cos = ropeTable(g, c, /*sine=*/false);
    sin = ropeTable(g, c, /*sine=*/true);
  }
  Tensor x = (*embed)(tokens); // (B, T, C)
  for (auto &b : blocks)
    x = (*b)(x, cos, sin);
  Tensor logits = head((*norm)(x)); // (B, T, V)
  Tensor loss;
  {
    Graph::Scope s(g, "loss");
    loss = crossEntropy(logits, targets);
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
