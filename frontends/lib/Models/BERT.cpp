//===- BERT.cpp - BERT pre-training ---------------------------------------===//
//
// Config table and forward graph; see BERT.h. Sizes are those of Google's
// released checkpoints (bert-base-uncased, bert-large-uncased: vocabulary
// 30522, 512 positions, 2 token types) and MLPerf Training's BERT-Large
// (sequence 512, at most 76 masked positions per sequence).
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/BERT.h"

#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

constexpr double kNormEpsilon = 1e-12;

template <typename Self> auto intFields(Self &c) {
  return config::IntFields<decltype(&c.layers)>{
      {"layers", &c.layers},        {"width", &c.width},
      {"heads", &c.heads},          {"ffn", &c.ffn},
      {"vocab", &c.vocab},          {"context", &c.context},
      {"type_vocab", &c.typeVocab}, {"batch", &c.batch},
      {"seq_len", &c.seqLen},       {"predictions", &c.predictions}};
}

Linear::Options dense() {
  Linear::Options o;
  o.transposedWeight = true;
  return o;
}

/// BertSelfAttention plus BertSelfOutput: separate query/key/value
/// projections, bidirectional attention under the padding mask, the output
/// projection, dropout, and the residual's layer norm.
class BertAttention : public Module {
public:
  BertAttention(Within at, const BERTConfig &c)
      : Module(at, "attention"), heads(c.heads),
        query(*this, "self.query", c.width, c.width, dense()),
        key(*this, "self.key", c.width, c.width, dense()),
        value(*this, "self.value", c.width, c.width, dense()),
        out(*this, "output.dense", c.width, c.width, dense()),
        norm(*this, "output.LayerNorm", c.width, kNormEpsilon) {}

  /// `mask` is additive, (B, 1, T, T).
  Tensor operator()(Tensor x, Tensor mask, Dropout &dropout) const {
    Graph::Scope scope = enter();
    int64_t b = x.dim(0), t = x.dim(1), c = x.dim(2), d = c / heads;
    auto split = [&](Tensor y) {
      return transpose(reshape(y, {b, t, heads, d}), {0, 2, 1, 3});
    };
    Tensor y = attention(split(query(x)), split(key(x)), split(value(x)),
                         /*causal=*/false, mask);
    y = reshape(transpose(y, {0, 2, 1, 3}), {b, t, c});
    return norm(dropout(out(y)) + x);
  }

  int64_t heads;
  Linear query, key, value, out;
  LayerNorm norm;
};

/// One BertLayer: attention, then intermediate.dense, GELU (erf),
/// output.dense, dropout and the residual's layer norm.
class BertLayer : public Module {
public:
  BertLayer(Within at, llvm::StringRef name, const BERTConfig &c)
      : Module(at, name), attention(*this, c),
        intermediate(*this, "intermediate.dense", c.width, c.ffn, dense()),
        output(*this, "output.dense", c.ffn, c.width, dense()),
        norm(*this, "output.LayerNorm", c.width, kNormEpsilon) {}

  Tensor operator()(Tensor x, Tensor mask, Dropout &dropout) const {
    Graph::Scope scope = enter();
    x = attention(x, mask, dropout);
    Tensor h = gelu(intermediate(x), /*tanhApproximation=*/false);
    return norm(dropout(output(h)) + x);
  }

  BertAttention attention;
  Linear intermediate, output;
  LayerNorm norm;
};

/// Rows [0, rows) of a (N, C) table.
Tensor leadingRows(Tensor table, int64_t rows) {
  if (table.dim(0) == rows)
    return table;
  Graph &g = table.graph();
  return g.op<ad::SliceOp>(
      {table.value()},
      {g.attr("start", g.builder().getDenseI64ArrayAttr({0, 0})),
       g.attr("limit", g.builder().getDenseI64ArrayAttr({rows, table.dim(1)})),
       g.attr("stride", g.builder().getDenseI64ArrayAttr({1, 1}))});
}

} // namespace

const std::vector<BERTConfig> &bertConfigs() {
  static const std::vector<BERTConfig> configs = [] {
    auto make = [](const char *name, int64_t layers, int64_t width,
                   int64_t heads, int64_t vocab, int64_t context) {
      BERTConfig c;
      c.name = name;
      c.layers = layers;
      c.width = width;
      c.heads = heads;
      c.ffn = 4 * width;
      c.vocab = vocab;
      c.context = context;
      return c;
    };
    BERTConfig tiny = make("bert-tiny", 2, 64, 4, 512, 64);
    tiny.seqLen = 32;
    tiny.predictions = 5;
    tiny.batch = 4;
    BERTConfig base = make("bert-base", 12, 768, 12, 30522, 512);
    BERTConfig large = make("bert-large", 24, 1024, 16, 30522, 512);
    large.predictions = 76; // MLPerf: max_predictions_per_seq
    large.dropout = 0.1;
    return std::vector<BERTConfig>{tiny, base, large};
  }();
  return configs;
}

const BERTConfig *findBERTConfig(const std::string &name) {
  return config::findByName(bertConfigs(), name);
}

const std::vector<std::string> &BERTConfig::fieldNames() {
  static const std::vector<std::string> names = [] {
    BERTConfig c;
    std::vector<std::string> n = config::fieldNames(intFields(c));
    n.push_back("dropout");
    return n;
  }();
  return names;
}

void BERTConfig::set(const std::string &field, const std::string &value) {
  if (field == "dropout")
    dropout = config::parseDouble(name, field, value);
  else
    config::setIntField(name, intFields(*this), field, value);
}

void BERTConfig::validate() const {
  auto fail = [&](const std::string &m) { config::fail(name, m); };
  for (const auto &[field, v] : intFields(*this)) {
    bool zeroAllowed =
        std::string(field) == "seq_len" || std::string(field) == "predictions";
    if (*v < (zeroAllowed ? 0 : 1))
      fail(std::string(field) + " = " + std::to_string(*v) + " must be at " +
           (zeroAllowed ? "least 0" : "least 1"));
  }
  if (width % heads != 0)
    fail("heads = " + std::to_string(heads) +
         " must divide width = " + std::to_string(width));
  if (seqLen > context)
    fail("seq_len = " + std::to_string(seqLen) + " must lie in [1, context = " +
         std::to_string(context) + "] (0 means context)");
  if (predictions > sequenceLength())
    fail("predictions = " + std::to_string(predictions) +
         " must not exceed the sequence length " +
         std::to_string(sequenceLength()) + " (0 means every position)");
  if (!(dropout >= 0.0 && dropout < 1.0))
    fail("dropout = " + std::to_string(dropout) + " must lie in [0, 1)");
  if (vocab > (int64_t(1) << 31) || context > (int64_t(1) << 31))
    fail("vocab and context must fit i32 token ids");
  if (__int128(batch) * sequenceLength() > int64_t(1) << 31)
    fail("batch x seq_len must be at most 2^31: the masked-LM gather "
         "indexes the B T rows with i32");
  long double L = layers, C = width, F = ffn, V = vocab, T = sequenceLength(),
              B = batch;
  long double flops = 6 * B * T * L * (4 * C * C + 2 * C * F) +
                      12 * L * C * T * B * T +
                      6 * B * predictedPositions() * (C * C + V * C);
  if (flops > 0x1p62L || L * (4 * C * C + 2 * C * F) > 0x1p62L)
    fail("the model is too large for 64-bit counts");
}

int64_t bertParameterCount(const BERTConfig &c) {
  int64_t C = c.width, F = c.ffn, V = c.vocab;
  return (V + c.context + c.typeVocab) * C + 2 * C +
         c.layers * (4 * C * C + 2 * C * F + 9 * C + F) + (C * C + C) +
         (C * C + 3 * C) + V + (2 * C + 2);
}

int64_t bertFlopsPerStep(const BERTConfig &c) {
  int64_t C = c.width, F = c.ffn, T = c.sequenceLength(),
          tokens = c.tokensPerStep();
  int64_t encoder = c.layers * (4 * C * C + 2 * C * F);
  int64_t heads = c.batch * (C * C + 2 * C) + // pooler, next sentence
                  c.batch * c.predictedPositions() * (C * C + c.vocab * C);
  return 6 * (tokens * encoder + heads) + 12 * c.layers * C * T * tokens;
}

OwningOpRef<ModuleOp> buildBERT(MLIRContext &context, const BERTConfig &c) {
  c.validate();
  Graph g(context);
  int64_t B = c.batch, T = c.sequenceLength(), C = c.width;
  int64_t P = c.predictedPositions();
  Type i32 = g.builder().getI32Type();

  // Parameters in state-dict order.
  std::unique_ptr<Embedding> words, positions, types;
  std::unique_ptr<LayerNorm> embeddingNorm;
  std::vector<std::unique_ptr<BertLayer>> layers;
  std::unique_ptr<Linear> pooler;
  {
    Graph::Scope bert(g, "bert");
    {
      Graph::Scope e(g, "embeddings");
      words = std::make_unique<Embedding>(g, "word_embeddings", c.vocab, C);
      positions =
          std::make_unique<Embedding>(g, "position_embeddings", c.context, C);
      types = std::make_unique<Embedding>(g, "token_type_embeddings",
                                          c.typeVocab, C);
      embeddingNorm =
          std::make_unique<LayerNorm>(g, "LayerNorm", C, kNormEpsilon);
    }
    Graph::Scope layer(g, "encoder.layer");
    for (int64_t i = 0; i < c.layers; ++i)
      layers.push_back(std::make_unique<BertLayer>(g, std::to_string(i), c));
  }
  {
    Graph::Scope bert(g, "bert");
    pooler = std::make_unique<Linear>(g, "pooler.dense", C, C, dense());
  }
  Tensor decoderBias;
  std::unique_ptr<Linear> transform, nextSentence;
  std::unique_ptr<LayerNorm> transformNorm;
  {
    Graph::Scope predictions(g, "cls.predictions");
    decoderBias = g.parameter("bias", {c.vocab}, g.init(ad::InitKind::zeros));
    transform = std::make_unique<Linear>(g, "transform.dense", C, C, dense());
    transformNorm =
        std::make_unique<LayerNorm>(g, "transform.LayerNorm", C, kNormEpsilon);
  }
  {
    Graph::Scope cls(g, "cls");
    nextSentence =
        std::make_unique<Linear>(g, "seq_relationship", C, 2, dense());
  }

  Tensor inputIds = g.input("input_ids", {B, T}, i32);
  Tensor tokenTypes = g.input("token_type_ids", {B, T}, i32);
  Tensor attentionMask = g.input("attention_mask", {B, T}, i32, 2);
  Tensor maskedPositions;
  if (c.predictions)
    maskedPositions = g.input("masked_lm_positions", {B, P}, i32, T);
  Tensor labels = g.input("masked_lm_labels", {B, P}, i32);
  Tensor nextLabel = g.input("next_sentence_label", {B}, i32);
  Dropout dropout;
  if (c.dropout > 0.0)
    dropout = Dropout(g.input("dropout_seed", {}, g.builder().getI64Type()),
                      c.dropout);

  Tensor x;
  {
    Graph::Scope s(g, "bert.embeddings");
    x = (*words)(inputIds) + leadingRows(positions->weight, T) +
        (*types)(tokenTypes);
    x = dropout((*embeddingNorm)(x));
  }
  Tensor mask;
  {
    // (1 - attention_mask) * -10000 on the keys, as BERT's reference
    // implementation extends it: (B, 1, T, T).
    Graph::Scope s(g, "bert.extended_attention_mask");
    Tensor m = cast(attentionMask, g.floatType());
    m = (m - full(g, {}, 1.0, g.floatType())) *
        full(g, {}, 10000.0, g.floatType());
    mask = broadcastTo(reshape(m, {B, 1, 1, T}), {B, 1, T, T});
  }
  for (auto &layer : layers)
    x = (*layer)(x, mask, dropout);

  Tensor pooled;
  {
    Graph::Scope s(g, "bert.pooler");
    Tensor first = g.op<ad::SliceOp>(
        {x.value()},
        {g.attr("start", g.builder().getDenseI64ArrayAttr({0, 0, 0})),
         g.attr("limit", g.builder().getDenseI64ArrayAttr({B, 1, C})),
         g.attr("stride", g.builder().getDenseI64ArrayAttr({1, 1, 1}))});
    pooled = tanh((*pooler)(reshape(first, {B, C})));
  }

  Tensor hidden = x; // (B, P, C): the positions the masked-LM head sees
  if (c.predictions) {
    Graph::Scope s(g, "cls.predictions.gather");
    // Row b * T + position of the flattened (B T, C) activations.
    std::vector<int32_t> offsets;
    for (int64_t b = 0; b < B; ++b)
      offsets.insert(offsets.end(), static_cast<size_t>(P),
                     static_cast<int32_t>(b * T));
    auto type = RankedTensorType::get({B, P}, i32);
    Tensor rowOffsets = g.op<ad::ConstantOp>(
        {}, {g.attr("value", DenseElementsAttr::get(type, ArrayRef(offsets)))},
        {type});
    hidden =
        g.op<ad::GatherOp>({reshape(x, {B * T, C}).value(),
                            (maskedPositions + rowOffsets).value()},
                           {g.attr("axis", g.builder().getI64IntegerAttr(0))});
  }
  Tensor logits;
  {
    Graph::Scope s(g, "cls.predictions");
    Tensor h = (*transformNorm)(
        gelu((*transform)(hidden), /*tanhApproximation=*/false));
    // The decoder is tied to the word embeddings, with its own bias.
    logits = matmul(h, words->weight, /*transposeA=*/false,
                    /*transposeB=*/true) +
             decoderBias;
  }
  Tensor loss;
  {
    Graph::Scope s(g, "loss");
    loss = crossEntropy(logits, labels) +
           crossEntropy((*nextSentence)(pooled), nextLabel);
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
