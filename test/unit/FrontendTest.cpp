//===- FrontendTest.cpp - the graph builder and the GPT family ------------===//
//
// Parameter names and counts of the GPT configs against the published
// figures and the analytic formula, the training FLOPs formula against the
// FLOPs of the graph's own matmuls and attention, and build-time errors that
// name the module path or the config field at fault.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/GPT.h"
#include "anvil/Frontend/Models/Registry.h"
#include "anvil/Frontend/Modules.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace mlir;
using namespace ::anvil::frontend;
namespace ad = mlir::anvil;

namespace {

/// Runs `fn` and returns the BuildError message it throws ("" if none).
template <typename Fn> std::string buildError(Fn fn) {
  try {
    fn();
  } catch (const BuildError &e) {
    return e.what();
  }
  return "";
}

FunctionOpInterface forwardOf(ModuleOp module) {
  return *module.getOps<FunctionOpInterface>().begin();
}

std::vector<std::string> argumentNames(FunctionOpInterface fn) {
  std::vector<std::string> names;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    if (auto p = fn.getArgAttrOfType<ad::ParamAttr>(
            i, ad::AnvilDialect::kParamAttrName))
      names.push_back(p.getName().str());
    else if (auto in = fn.getArgAttrOfType<ad::InputAttr>(
                 i, ad::AnvilDialect::kInputAttrName))
      names.push_back("input:" + in.getName().str());
  }
  return names;
}

const GPTConfig &config(const std::string &name) {
  if (const GPTConfig *c = findGPTConfig(name))
    return *c;
  throw std::runtime_error("no config " + name);
}

TEST(GPT, Gpt2SmallHasThePublishedParameterCount) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "gpt", "gpt2-124m", {});
  // GPT-2 124M with vocabulary 50257 and context 1024, tied embeddings.
  EXPECT_EQ(built.report.parameters, 124439808);
  EXPECT_EQ(built.report.parameters, gptParameterCount(config("gpt2-124m")));
  // wte, wpe, 12 per block, ln_f weight and bias.
  EXPECT_EQ(built.report.parameterTensors, 2 + 12 * 12 + 2);
}

TEST(GPT, EveryConfigMatchesTheFormulaAndVerifies) {
  for (const GPTConfig &c : gptConfigs()) {
    if (c.layers > 24)
      continue; // the large ones are covered by the formula test below
    MLIRContext context;
    BuiltModel built = buildModel(context, "gpt", c.name, {});
    EXPECT_EQ(built.report.parameters, gptParameterCount(c)) << c.name;
  }
  // Reference sizes: GPT-2 1.5B (1,557,611,200) and GPT-3 175B (174.6B).
  EXPECT_EQ(gptParameterCount(config("gpt2-1.5b")), 1557611200);
  EXPECT_EQ(gptParameterCount(config("gpt3-175b")), 174604259328);
}

TEST(GPT, ParametersAreNamedLikeTheCheckpoints) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "gpt", "gpt-tiny", {});
  std::vector<std::string> names = argumentNames(forwardOf(*built.module));
  std::vector<std::string> expectedHead = {"wte.weight",
                                           "wpe.weight",
                                           "h.0.ln_1.weight",
                                           "h.0.ln_1.bias",
                                           "h.0.attn.c_attn.weight",
                                           "h.0.attn.c_attn.bias",
                                           "h.0.attn.c_proj.weight",
                                           "h.0.attn.c_proj.bias",
                                           "h.0.ln_2.weight",
                                           "h.0.ln_2.bias",
                                           "h.0.mlp.c_fc.weight",
                                           "h.0.mlp.c_fc.bias",
                                           "h.0.mlp.c_proj.weight",
                                           "h.0.mlp.c_proj.bias",
                                           "h.1.ln_1.weight"};
  ASSERT_GE(names.size(), expectedHead.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(),
                                     names.begin() + expectedHead.size()),
            expectedHead);
  // Parameters first, ln_f last among them, then the batch inputs.
  std::vector<std::string> tail(names.end() - 4, names.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"ln_f.weight", "ln_f.bias",
                                            "input:tokens", "input:targets"}));
}

TEST(GPT, FlopsPerStepIsSixNDPlusAttention) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "gpt", "gpt2-124m", {});
  const int64_t N = 124439808, B = 8, T = 1024, L = 12, C = 768;
  // 6 N per token for the parameters, 12 L C T per token for attention.
  EXPECT_EQ(built.report.flopsPerStep, 6 * N * B * T + 12 * L * C * T * B * T);
}

TEST(GPT, FormulaAgreesWithTheGraphsOwnMatmulsAndAttention) {
  // The forward graph's matmuls cost 2 FLOPs per token per matmul weight
  // (12 L C^2 + V' C, the tied head included), and its causal attention
  // 4 B L C T (T + 1) / 2. Three times that (forward + backward) is the
  // formula with the non-matmul parameters and the causal half removed.
  GPTConfig c = config("gpt-tiny");
  MLIRContext context;
  OwningOpRef<ModuleOp> module = buildGPT(context, c);
  int64_t matmul = 0, attention = 0;
  module->walk([&](ad::CostOpInterface op) {
    if (isa<ad::MatmulOp>(op))
      matmul += op.getFlops();
    if (isa<ad::AttentionOp>(op))
      attention += op.getFlops();
  });
  const int64_t L = c.layers, C = c.width, T = c.sequenceLength(),
                tokens = c.tokensPerStep();
  const int64_t matmulWeights = 12 * L * C * C + c.paddedVocab() * C;
  EXPECT_EQ(matmul, 2 * tokens * matmulWeights);
  EXPECT_EQ(attention, 4 * c.batch * L * C * T * (T + 1) / 2);
  const int64_t otherParams = gptParameterCount(c) - matmulWeights;
  const int64_t fullAttention = 4 * c.batch * L * C * T * T;
  EXPECT_EQ(gptFlopsPerStep(c),
            3 * matmul + 6 * tokens * otherParams + 3 * fullAttention);
}

TEST(GPT, OverridesAndVocabularyPadding) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "gpt", "gpt2-124m",
                                {{"layers", "2"},
                                 {"pad_vocab_to", "64"},
                                 {"batch", "2"},
                                 {"seq_len", "128"}});
  GPTConfig c = config("gpt2-124m");
  c.layers = 2;
  c.padVocabTo = 64;
  EXPECT_EQ(c.paddedVocab(), 50304);
  EXPECT_EQ(built.report.parameters, gptParameterCount(c));
  EXPECT_EQ(built.report.tokensPerStep, 256);
}

TEST(GPT, DropoutSitesGetTheirOwnSeeds) {
  MLIRContext context;
  BuiltModel built =
      buildModel(context, "gpt", "gpt-tiny", {{"dropout", "0.1"}});
  std::vector<std::string> names = argumentNames(forwardOf(*built.module));
  EXPECT_EQ(names.back(), "input:dropout_seed");
  // Embedding dropout plus two residual sites per block; site k is seeded
  // with seed * 2^16 + k.
  auto splat = [](Value v) {
    auto c = v.getDefiningOp<ad::ConstantOp>();
    EXPECT_TRUE(c);
    return c ? cast<DenseElementsAttr>(c.getValue())
                   .getSplatValue<APInt>()
                   .getSExtValue()
             : -1;
  };
  std::vector<int64_t> sites;
  built.module->walk([&](ad::DropoutOp op) {
    auto add = op.getSeed().getDefiningOp<ad::AddOp>();
    ASSERT_TRUE(add);
    auto mul = add.getLhs().getDefiningOp<ad::MulOp>();
    ASSERT_TRUE(mul);
    EXPECT_TRUE(isa<BlockArgument>(mul.getLhs()));
    EXPECT_EQ(splat(mul.getRhs()), 65536);
    sites.push_back(splat(add.getRhs()));
  });
  std::vector<int64_t> expected(1 + 2 * config("gpt-tiny").layers);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sites, expected);
}

TEST(GPT, BadConfigsNameTheField) {
  MLIRContext context;
  EXPECT_EQ(buildError([&] {
              buildModel(context, "gpt", "gpt2-124m", {{"heads", "7"}});
            }),
            "config 'gpt2-124m': heads = 7 does not divide width = 768");
  EXPECT_EQ(buildError([&] {
              buildModel(context, "gpt", "gpt-tiny", {{"seq_len", "65"}});
            }),
            "config 'gpt-tiny': seq_len = 65 must lie in [1, context = 64] "
            "(0 means context)");
  EXPECT_NE(buildError([&] {
              buildModel(context, "gpt", "gpt-tiny", {{"depth", "2"}});
            }).find("unknown field 'depth'; the fields are layers, width"),
            std::string::npos);
  EXPECT_NE(buildError([&] {
              buildModel(context, "gpt", "gpt2-125m", {});
            }).find("the configs are: gpt-tiny, gpt2-124m"),
            std::string::npos);
  EXPECT_EQ(buildError([&] { buildModel(context, "bart", "base", {}); }),
            "unknown model 'bart'; the models are: gpt, llama, bert, resnet, "
            "retinanet, sd-unet, unet3d, dlrm");
}

TEST(Builder, ShapeErrorsNameTheModulePath) {
  MLIRContext context;
  Graph g(context);
  Tensor x = g.input("x", {2, 8, 16}, g.floatType());
  Linear fc(g, "fc", 32, 64);
  EXPECT_EQ(buildError([&] { fc(x); }),
            "fc: input has 16 features in its last dimension, the layer "
            "expects 32");
  // A mismatch found by the dialect's own inference carries the path too.
  Graph::Scope blocks(g, "h");
  Graph::Scope block(g, "3");
  Tensor q = g.input("q", {1, 4, 8, 16}, g.floatType());
  Tensor k = g.input("k", {1, 3, 8, 16}, g.floatType());
  std::string message = buildError([&] { attention(q, k, k, true); });
  EXPECT_EQ(message.rfind("h.3: 'anvil.attention' op query heads 4 must be "
                          "a multiple of key/value heads 3",
                          0),
            0u)
      << message;
}

TEST(Builder, BroadcastingAndNegativeDimensions) {
  MLIRContext context;
  Graph g(context);
  Tensor x = g.input("x", {2, 3, 4}, g.floatType());
  Tensor b = g.parameter("b", {4}, g.init(ad::InitKind::zeros));
  Tensor col = g.input("col", {3, 1}, g.floatType());
  Tensor y = (x + b) * col; // (2,3,4) + (4) -> (2,3,4); * (3,1) -> (2,3,4)
  EXPECT_EQ(y.shape(), (llvm::ArrayRef<int64_t>{2, 3, 4}));
  Tensor s = softmax(y, -1);
  Tensor m = mean(s, {-1, 0});
  EXPECT_EQ(m.shape(), (llvm::ArrayRef<int64_t>{3}));
  EXPECT_EQ(reshape(y, {-1, 4}).shape(), (llvm::ArrayRef<int64_t>{6, 4}));
  EXPECT_NE(buildError([&] {
              x + col.graph().input("z", {5}, g.floatType());
            }).find("do not broadcast"),
            std::string::npos);
  OwningOpRef<ModuleOp> module = g.finish({m});
  EXPECT_TRUE(module);
}

TEST(Builder, GroupedQueryAttentionAndConvModules) {
  MLIRContext context;
  Graph g(context);
  Tensor x = g.input("x", {2, 8, 64}, g.floatType());
  CausalSelfAttention attn(g, "attn", 64, 8, 2, 0.02);
  // q: 64 features, k and v: 2 heads of 8.
  EXPECT_EQ(attn.qkv.weight.shape(), (llvm::ArrayRef<int64_t>{64, 96}));
  Tensor y = attn(x);
  EXPECT_EQ(y.shape(), x.shape());

  Tensor img = g.input("img", {2, 3, 32, 32}, g.floatType());
  Conv stem(g, "conv1", 3, 16, {3, 3},
            Conv::Options{{2, 2}, {1, 1}, {}, 1, false});
  Tensor z = stem(img);
  EXPECT_EQ(z.shape(), (llvm::ArrayRef<int64_t>{2, 16, 16, 16}));
  EXPECT_FALSE(stem.bias);
  EXPECT_EQ(buildError([&] {
              Conv(g, "bad", 3, 16, {3, 3},
                   Conv::Options{{}, {}, {}, /*groups=*/2, true});
            }),
            "bad: groups = 2 must divide in = 3 and out = 16");
  OwningOpRef<ModuleOp> module =
      g.finish({sum(y, {0, 1, 2}), sum(z, {0, 1, 2, 3})});
  EXPECT_TRUE(module);
}

TEST(GPT, CountsThatOverflowAreRejected) {
  MLIRContext context;
  EXPECT_NE(buildError([&] {
              buildModel(context, "gpt", "gpt-tiny",
                         {{"batch", "9223372036854775807"}});
            }).find("too large for 64-bit counts"),
            std::string::npos);
  EXPECT_NE(buildError([&] {
              buildModel(context, "gpt", "gpt-tiny",
                         {{"pad_vocab_to", "9223372036854775807"}});
            }).find("pad_vocab_to = 9223372036854775807"),
            std::string::npos);
  EXPECT_NE(buildError([&] {
              buildModel(context, "gpt", "gpt-tiny", {{"layers", "100000"}});
            }).find("layers = 100000 exceeds 10000"),
            std::string::npos);
}

TEST(Builder, MisuseIsAnErrorNotACrash) {
  MLIRContext context;
  Graph a(context), b(context);
  Tensor x = a.input("x", {2}, a.floatType());
  Tensor y = b.input("y", {2}, b.floatType());
  EXPECT_NE(buildError([&] { x + y; }).find("a value of another graph"),
            std::string::npos);
  EXPECT_NE(buildError([&] {
              reshape(x, {-2, -1});
            }).find("has a negative size other than -1"),
            std::string::npos);
  EXPECT_NE(buildError([&] {
              a.input("z", {-1, 4}, a.floatType());
            }).find("negative dimension"),
            std::string::npos);
  Tensor empty;
  EXPECT_NE(buildError([&] { empty + x; }).find("empty Tensor"),
            std::string::npos);
}

TEST(Builder, DuplicateNamesAreRejected) {
  MLIRContext context;
  Graph g(context);
  g.parameter("w", {2}, g.init(ad::InitKind::zeros));
  EXPECT_EQ(
      buildError([&] { g.parameter("w", {2}, g.init(ad::InitKind::zeros)); }),
      "<top>: parameter name 'w' is already used");
  EXPECT_NE(buildError([&] {
              g.init(ad::InitKind::normal);
            }).find("initializer 'normal' needs the argument 'std'"),
            std::string::npos);
}

} // namespace
