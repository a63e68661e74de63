//===- GPT.cpp - the GPT-2 and GPT-3 family -------------------------------===//
//
// Config tables and the forward graph. GPT-2 sizes are those of the
// released checkpoints (vocabulary 50257, context 1024); GPT-3 sizes are
// those of Table 2.1 of the GPT-3 paper (context 2048), with two entries
// corrected where the table's own numbers disagree: the 1.3B model's 24
// heads of 128 do not make its width 2048 (16 heads of 128 do), and the
// 13B model's width 5140 is not 40 heads of 128 (5120 is). GPT-3's
// alternating locally banded sparse attention is not modelled: every layer
// is dense.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/GPT.h"
#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <charconv>
#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {
GPTConfig make(const char *name, int64_t layers, int64_t width, int64_t heads,
               int64_t context, int64_t vocab) {
  GPTConfig c;
  c.name = name;
  c.layers = layers;
  c.width = width;
  c.heads = heads;
  c.context = context;
  c.vocab = vocab;
  return c;
}

/// No GPT has more; deeper configs are typos that would build for hours.
constexpr int64_t kMaxLayers = 10000;

[[noreturn]] void badField(const GPTConfig &c, const std::string &message) {
  config::fail(c.name, message);
}
} // namespace

const std::vector<GPTConfig> &gptConfigs() {
  static const std::vector<GPTConfig> configs = [] {
    std::vector<GPTConfig> v;
    // Trains in seconds on two cores: 2 layers, width 64, 4 heads.
    GPTConfig tiny = make("gpt-tiny", 2, 64, 4, 64, 256);
    tiny.batch = 4;
    tiny.seqLen = 32;
    v.push_back(tiny);
    v.push_back(make("gpt2-124m", 12, 768, 12, 1024, 50257));
    v.push_back(make("gpt2-350m", 24, 1024, 16, 1024, 50257));
    v.push_back(make("gpt2-774m", 36, 1280, 20, 1024, 50257));
    v.push_back(make("gpt2-1.5b", 48, 1600, 25, 1024, 50257));
    v.push_back(make("gpt3-125m", 12, 768, 12, 2048, 50257));
    v.push_back(make("gpt3-350m", 24, 1024, 16, 2048, 50257));
    v.push_back(make("gpt3-760m", 24, 1536, 16, 2048, 50257));
    v.push_back(make("gpt3-1.3b", 24, 2048, 16, 2048, 50257));
    v.push_back(make("gpt3-2.7b", 32, 2560, 32, 2048, 50257));
    v.push_back(make("gpt3-6.7b", 32, 4096, 32, 2048, 50257));
    v.push_back(make("gpt3-13b", 40, 5120, 40, 2048, 50257));
    v.push_back(make("gpt3-175b", 96, 12288, 96, 2048, 50257));
    return v;
  }();
  return configs;
}

int64_t GPTConfig::paddedVocab() const {
  return (vocab + padVocabTo - 1) / padVocabTo * padVocabTo;
}

const std::vector<std::string> &GPTConfig::fieldNames() {
  static const std::vector<std::string> names = {
      "layers",  "width", "heads",   "context",   "vocab",      "pad_vocab_to",
      "dropout", "batch", "seq_len", "lora_rank", "lora_alpha", "lora_targets"};
  return names;
}

void GPTConfig::set(const std::string &field, const std::string &value) {
  auto parseInt = [&] { return config::parseInt(name, field, value); };
  auto parseDouble = [&] { return config::parseDouble(name, field, value); };
  if (field == "layers")
    layers = parseInt();
  else if (field == "width")
    width = parseInt();
  else if (field == "heads")
    heads = parseInt();
  else if (field == "context")
    context = parseInt();
  else if (field == "vocab")
    vocab = parseInt();
  else if (field == "pad_vocab_to")
    padVocabTo = parseInt();
  else if (field == "batch")
    batch = parseInt();
  else if (field == "seq_len")
    seqLen = parseInt();
  else if (field == "lora_rank")
    loraRank = parseInt();
  else if (field == "lora_targets")
    loraTargets = value;
  else if (field == "lora_alpha")
    loraAlpha = parseDouble();
  else if (field == "dropout")
    dropout = parseDouble();
  else
    config::unknownField(name, field, fieldNames());
}

void GPTConfig::validate() const {
  auto positive = [&](const char *field, int64_t v) {
    config::requirePositive(name, field, v);
  };
  positive("layers", layers);
  positive("width", width);
  positive("heads", heads);
  positive("context", context);
  positive("vocab", vocab);
  positive("pad_vocab_to", padVocabTo);
  positive("batch", batch);
  if (width % heads != 0)
    badField(*this, "heads = " + std::to_string(heads) +
                        " does not divide width = " + std::to_string(width));
  if (seqLen < 0 || sequenceLength() > context)
    badField(*this, "seq_len = " + std::to_string(seqLen) +
                        " must lie in [1, context = " +
                        std::to_string(context) + "] (0 means context)");
  if (loraRank < 0 || loraRank > width)
    badField(*this, "lora_rank = " + std::to_string(loraRank) +
                        " must lie in [0, width = " + std::to_string(width) +
                        "]");
  if (loraTargets != "c_attn" && loraTargets != "c_proj" &&
      loraTargets != "c_attn+c_proj")
    badField(*this, "lora_targets = '" + loraTargets +
                        "' must be c_attn, c_proj or c_attn+c_proj");
  if (!(loraAlpha >= 0.0))
    badField(*this, "lora_alpha must not be negative");
  if (!(dropout >= 0.0 && dropout < 1.0))
    badField(*this,
             "dropout = " + std::to_string(dropout) + " must lie in [0, 1)");
  if (vocab > (int64_t(1) << 31) - 1)
    badField(*this, "vocab = " + std::to_string(vocab) +
                        " does not fit the i32 token ids");
  if (padVocabTo > (int64_t(1) << 31) - 1)
    badField(*this, "pad_vocab_to = " + std::to_string(padVocabTo) +
                        " is larger than any vocabulary of i32 token ids");
  if (layers > kMaxLayers)
    badField(*this, "layers = " + std::to_string(layers) + " exceeds " +
                        std::to_string(kMaxLayers));
  // The analytic figures must fit in 63 bits; estimate them in long double
  // (no overflow there) before computing them exactly.
  long double L = layers, C = width, T = sequenceLength(), B = batch;
  long double params = L * (12 * C * C + 13 * C) +
                       (static_cast<long double>(vocab) + padVocabTo) * C +
                       static_cast<long double>(context) * C + 2 * C;
  long double flops = 6 * params * B * T + 12 * L * C * T * B * T;
  if (params > 0x1p62L || flops > 0x1p62L)
    badField(*this,
             "the model is too large for 64-bit counts (layers = " +
                 std::to_string(layers) + ", width = " + std::to_string(width) +
                 ", batch = " + std::to_string(batch) +
                 ", seq_len = " + std::to_string(sequenceLength()) + ")");
}

const GPTConfig *findGPTConfig(const std::string &name) {
  return config::findByName(gptConfigs(), name);
}

int64_t gptParameterCount(const GPTConfig &c) {
  int64_t C = c.width;
  return c.layers * (12 * C * C + 13 * C) + c.paddedVocab() * C +
         c.context * C + 2 * C;
}

int64_t gptFlopsPerStep(const GPTConfig &c) {
  int64_t tokens = c.tokensPerStep();
  return 6 * gptParameterCount(c) * tokens +
         12 * c.layers * c.width * c.sequenceLength() * tokens;
}

OwningOpRef<ModuleOp> buildGPT(MLIRContext &context, const GPTConfig &c) {
  c.validate();
  Graph g(context);
  int64_t B = c.batch, T = c.sequenceLength(), C = c.width;
  Type i32 = g.builder().getI32Type();

  TransformerBlock::Config block{C, c.heads, c.heads, 4 * C,
                                 /*projInitStd=*/0.02 /
                                     std::sqrt(2.0 * c.layers)};
  if (c.loraRank > 0) {
    // LoRA: freeze everything; the adapters are created trainable.
    g.setDefaultTrainable(false);
    LoRA lora{c.loraRank, c.loraAlpha};
    if (c.loraTargets != "c_proj")
      block.qkvLora = lora;
    if (c.loraTargets != "c_attn")
      block.projLora = lora;
  }

  // Parameters in state-dict order: wte, wpe, h.*, ln_f.
  Embedding wte(g, "wte", c.paddedVocab(), C);
  Embedding wpe(g, "wpe", c.context, C);
  std::vector<std::unique_ptr<TransformerBlock>> blocks;
  {
    Graph::Scope h(g, "h");
    for (int64_t i = 0; i < c.layers; ++i)
      blocks.push_back(
          std::make_unique<TransformerBlock>(g, std::to_string(i), block));
  }
  LayerNorm lnf(g, "ln_f", C);

  Tensor tokens = g.input("tokens", {B, T}, i32);
  Tensor targets = g.input("targets", {B, T}, i32);
  Dropout dropout;
  if (c.dropout > 0.0)
    dropout = Dropout(g.input("dropout_seed", {}, g.builder().getI64Type()),
                      c.dropout);

  // Position embeddings are rows [0, T) of wpe, shared by the batch.
  Tensor positions = wpe.weight;
  if (T != c.context) {
    Graph::Scope s(g, "wpe");
    positions = g.op<mlir::anvil::SliceOp>(
        {positions.value()},
        {g.attr("start", g.builder().getDenseI64ArrayAttr({0, 0})),
         g.attr("limit", g.builder().getDenseI64ArrayAttr({T, C})),
         g.attr("stride", g.builder().getDenseI64ArrayAttr({1, 1}))});
  }
  Tensor x = dropout(wte(tokens) + positions); // (B, T, C)
  for (auto &b : blocks)
    x = (*b)(x, dropout);
  x = lnf(x);
  Tensor logits;
  {
    // The output projection is tied to the token embedding: (B, T, V').
    Graph::Scope s(g, "lm_head");
    logits = matmul(x, wte.weight, /*transposeA=*/false, /*transposeB=*/true);
  }
  Tensor loss;
  {
    Graph::Scope s(g, "loss");
    loss = crossEntropy(logits, targets);
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
