//===- DLRM.cpp - DLRM with DCNv2 interactions ----------------------------===//
//
// Config table and forward graph; see DLRM.h. `dlrm-dcnv2` is the model of
// MLPerf Training's reference (mlcommons/training, recommendation_v2/
// torchrec_dlrm): --embedding_dim 128, --num_embeddings_per_feature and
// --multi_hot_sizes of the Criteo 1TB multi-hot dataset,
// --dense_arch_layer_sizes 512,256,128, --over_arch_layer_sizes
// 1024,1024,512,256,1, --interaction_type dcn, --dcn_num_layers 3,
// --dcn_low_rank_dim 512.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/DLRM.h"

#include "anvil/Frontend/Modules.h"

#include "ConfigFields.h"

#include <cmath>

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

template <typename Self> auto intFields(Self &c) {
  return config::IntFields<decltype(&c.batch)>{
      {"embedding_dim", &c.embeddingDim},
      {"dense_features", &c.denseFeatures},
      {"cross_layers", &c.crossLayers},
      {"low_rank", &c.lowRank},
      {"batch", &c.batch}};
}

/// TorchRec's MLP: Perceptrons (`_mlp.<i>._linear`), each a linear layer
/// and a ReLU.
class TorchRecMLP : public Module {
public:
  TorchRecMLP(Within at, llvm::StringRef name, int64_t in,
              llvm::ArrayRef<int64_t> widths)
      : Module(at, name) {
    Graph::Scope scope = enter();
    for (size_t i = 0; i < widths.size(); ++i) {
      Graph::Scope layer(graph(), "_mlp." + std::to_string(i));
      layers.push_back(std::make_unique<Linear>(graph(), "_linear", in,
                                                widths[i], options(in)));
      in = widths[i];
    }
  }
  /// torch.nn.Linear's layout; a normal initializer of torch's default
  /// variance 1 / (3 in).
  static Linear::Options options(int64_t in) {
    Linear::Options o;
    o.transposedWeight = true;
    o.initStd = std::sqrt(1.0 / (3.0 * static_cast<double>(in)));
    return o;
  }
  Tensor operator()(Tensor x) const {
    Graph::Scope scope = enter();
    for (const auto &layer : layers)
      x = relu((*layer)(x));
    return x;
  }
  std::vector<std::unique_ptr<Linear>> layers;
};

int64_t mlpWeights(int64_t in, llvm::ArrayRef<int64_t> widths) {
  int64_t n = 0;
  for (int64_t w : widths) {
    n += in * w;
    in = w;
  }
  return n;
}

int64_t mlpBiases(llvm::ArrayRef<int64_t> widths) {
  int64_t n = 0;
  for (int64_t w : widths)
    n += w;
  return n;
}

} // namespace

const std::vector<DLRMConfig> &dlrmConfigs() {
  static const std::vector<DLRMConfig> configs = [] {
    DLRMConfig tiny;
    tiny.name = "dlrm-tiny";
    tiny.embeddingDim = 16;
    tiny.denseFeatures = 13;
    tiny.crossLayers = 2;
    tiny.lowRank = 8;
    tiny.batch = 32;
    tiny.tableRows = {100, 50, 20, 10};
    tiny.multiHot = {3, 2, 1, 2};
    tiny.bottomMLP = {32, 16};
    tiny.topMLP = {32, 16, 1};
    DLRMConfig mlperf;
    mlperf.name = "dlrm-dcnv2";
    mlperf.embeddingDim = 128;
    mlperf.denseFeatures = 13;
    mlperf.crossLayers = 3;
    mlperf.lowRank = 512;
    mlperf.batch = 8192; // the global 65,536 over eight accelerators
    mlperf.tableRows = {
        40000000, 39060,    17295,    7424,     20265,  3,     7122, 1543, 63,
        40000000, 3067956,  405282,   10,       2209,   11938, 155,  4,    976,
        14,       40000000, 40000000, 40000000, 590152, 12973, 108,  36};
    mlperf.multiHot = {3, 2, 1, 2, 6, 1, 1,  1,   1,  7,  3, 8, 1,
                       6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};
    mlperf.bottomMLP = {512, 256, 128};
    mlperf.topMLP = {1024, 1024, 512, 256, 1};
    return std::vector<DLRMConfig>{tiny, mlperf};
  }();
  return configs;
}

const DLRMConfig *findDLRMConfig(const std::string &name) {
  return config::findByName(dlrmConfigs(), name);
}

const std::vector<std::string> &DLRMConfig::fieldNames() {
  static const std::vector<std::string> names = [] {
    DLRMConfig c;
    return config::fieldNames(intFields(c));
  }();
  return names;
}

void DLRMConfig::set(const std::string &field, const std::string &value) {
  config::setIntField(name, intFields(*this), field, value);
}

void DLRMConfig::validate() const {
  auto fail = [&](const std::string &m) { config::fail(name, m); };
  config::requirePositive(name, intFields(*this));
  if (tableRows.empty() || tableRows.size() != multiHot.size())
    fail("needs one multi-hot size per table");
  for (size_t i = 0; i < tableRows.size(); ++i)
    if (tableRows[i] < 1 || tableRows[i] > (int64_t(1) << 31) ||
        multiHot[i] < 1)
      fail("table t_cat_" + std::to_string(i) +
           " needs 1 to 2^31 rows and at least one id per sample");
  if (bottomMLP.empty() || bottomMLP.back() != embeddingDim)
    fail("embedding_dim = " + std::to_string(embeddingDim) +
         " must equal the bottom MLP's last width " +
         std::to_string(bottomMLP.empty() ? 0 : bottomMLP.back()) +
         " (the interaction stacks them)");
  if (topMLP.empty() || topMLP.back() != 1)
    fail("the top MLP must end in one logit");
  if (lowRank > interactionWidth())
    fail("low_rank = " + std::to_string(lowRank) +
         " must not exceed the interaction width " +
         std::to_string(interactionWidth()));
  // The parameter and FLOP counts, in 128 bits, must fit in 62.
  __int128 rows = 0, weights = 0, in = denseFeatures;
  for (int64_t r : tableRows)
    rows += r;
  for (int64_t w : bottomMLP)
    weights += in * w, in = w;
  in = interactionWidth();
  for (int64_t w : topMLP)
    weights += in * w, in = w;
  weights += __int128(crossLayers) * 2 * interactionWidth() * lowRank;
  if (rows * embeddingDim + weights > __int128(1) << 62 ||
      6 * __int128(batch) * weights > __int128(1) << 62)
    fail("the model is too large for 64-bit counts");
}

int64_t dlrmParameterCount(const DLRMConfig &c) {
  int64_t n = 0;
  for (int64_t rows : c.tableRows)
    n += rows * c.embeddingDim;
  int64_t I = c.interactionWidth();
  n += mlpWeights(c.denseFeatures, c.bottomMLP) + mlpBiases(c.bottomMLP);
  n += c.crossLayers * (2 * I * c.lowRank + I);
  n += mlpWeights(I, c.topMLP) + mlpBiases(c.topMLP);
  return n;
}

int64_t dlrmFlopsPerStep(const DLRMConfig &c) {
  int64_t I = c.interactionWidth();
  int64_t weights = mlpWeights(c.denseFeatures, c.bottomMLP) +
                    c.crossLayers * 2 * I * c.lowRank + mlpWeights(I, c.topMLP);
  return 6 * c.batch * weights;
}

OwningOpRef<ModuleOp> buildDLRM(MLIRContext &context, const DLRMConfig &c) {
  c.validate();
  Graph g(context);
  const int64_t B = c.batch, D = c.embeddingDim, I = c.interactionWidth();
  const size_t tables = c.tableRows.size();

  // Parameters in TorchRec's order: sparse_arch, dense_arch, inter_arch,
  // over_arch.
  std::vector<Tensor> tableWeights;
  {
    Graph::Scope s(g, "sparse_arch.embedding_bag_collection.embedding_bags");
    for (size_t t = 0; t < tables; ++t) {
      // TorchRec's default: uniform in +-sqrt(1 / rows).
      double bound = std::sqrt(1.0 / static_cast<double>(c.tableRows[t]));
      tableWeights.push_back(g.parameter(
          "t_cat_" + std::to_string(t) + ".weight", {c.tableRows[t], D},
          g.init(ad::InitKind::uniform, {{"low", -bound}, {"high", bound}})));
    }
  }
  TorchRecMLP bottom(g, "dense_arch.model", c.denseFeatures, c.bottomMLP);
  std::vector<Tensor> wKernels, vKernels, crossBias;
  {
    Graph::Scope s(g, "inter_arch.crossnet");
    for (int64_t l = 0; l < c.crossLayers; ++l)
      wKernels.push_back(g.parameter("W_kernels." + std::to_string(l),
                                     {I, c.lowRank},
                                     g.init(ad::InitKind::xavier_normal)));
    for (int64_t l = 0; l < c.crossLayers; ++l)
      vKernels.push_back(g.parameter("V_kernels." + std::to_string(l),
                                     {c.lowRank, I},
                                     g.init(ad::InitKind::xavier_normal)));
    for (int64_t l = 0; l < c.crossLayers; ++l)
      crossBias.push_back(g.parameter("bias." + std::to_string(l), {I},
                                      g.init(ad::InitKind::zeros)));
  }
  std::vector<int64_t> hidden(c.topMLP.begin(), c.topMLP.end() - 1);
  std::unique_ptr<TorchRecMLP> top;
  std::unique_ptr<Linear> logit;
  {
    Graph::Scope s(g, "over_arch.model");
    top = std::make_unique<TorchRecMLP>(g, "0", I, hidden);
    int64_t in = hidden.empty() ? I : hidden.back();
    logit = std::make_unique<Linear>(g, "1", in, 1, TorchRecMLP::options(in));
  }

  Tensor dense = g.input("dense_features", {B, c.denseFeatures}, g.floatType());
  std::vector<Tensor> ids;
  for (size_t t = 0; t < tables; ++t)
    ids.push_back(g.input("cat_" + std::to_string(t), {B, c.multiHot[t]},
                          g.builder().getI32Type()));
  Tensor labels = g.input("labels", {B}, g.floatType(), /*range=*/2);

  std::vector<Tensor> features{bottom(dense)};
  {
    Graph::Scope s(g, "sparse_arch");
    for (size_t t = 0; t < tables; ++t)
      features.push_back(g.op<ad::EmbeddingBagOp>(
          {tableWeights[t].value(), ids[t].value()},
          {g.attr("mode",
                  ad::BagModeAttr::get(&g.context(), ad::BagMode::sum))}));
  }
  Tensor x0;
  {
    // (B, D) per feature, dense first, flattened: (B, (1 + tables) D).
    Graph::Scope s(g, "inter_arch");
    x0 = concat(features, 1);
  }
  Tensor x = x0;
  {
    Graph::Scope s(g, "inter_arch.crossnet");
    for (int64_t l = 0; l < c.crossLayers; ++l) {
      Tensor xv = matmul(x, vKernels[l], false, /*transposeB=*/true);
      Tensor xw = matmul(xv, wKernels[l], false, /*transposeB=*/true);
      x = x0 * (xw + crossBias[l]) + x;
    }
  }
  Tensor logits = reshape((*logit)((*top)(x)), {B});
  Tensor loss;
  {
    Graph::Scope s(g, "loss");
    loss = g.op<ad::BCEWithLogitsLossOp>(
        {logits.value(), labels.value()},
        {g.attr("reduction",
                ad::ReductionAttr::get(&g.context(), ad::Reduction::mean))});
  }
  return g.finish({loss});
}

} // namespace anvil::frontend
