//===- LlamaTest.cpp - the Llama family -----------------------------------===//
//
// Parameter counts of the published configs against the checkpoints' own
// totals, names as in Hugging Face transformers, the LoRA adapters of
// MLPerf's Llama 2 70B fine-tuning, the FLOPs formula against the graph's
// matmuls and attention, and errors that name the field.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/Llama.h"
#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/Registry.h"
#include "anvil/Interp/Interpreter.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include "ModelNames.h"

#include <gtest/gtest.h>

#include <map>

using namespace mlir;
using namespace ::anvil::frontend;
namespace ad = mlir::anvil;

namespace {

LlamaConfig config(const std::string &name) {
  const LlamaConfig *c = findLlamaConfig(name);
  EXPECT_NE(c, nullptr) << name;
  return c ? *c : LlamaConfig();
}

} // namespace

TEST(Llama, PublishedConfigsHaveTheCheckpointsParameterCounts) {
  // The totals of the released checkpoints (model.safetensors.index.json
  // "total_size" / 2 bytes for bf16; see docs/models.md).
  EXPECT_EQ(llamaParameterCount(config("llama3.1-8b")), 8030261248);
  EXPECT_EQ(llamaParameterCount(config("llama3.1-70b")), 70553706496);
  EXPECT_EQ(llamaParameterCount(config("llama3.1-405b")), 405853388800);
  EXPECT_EQ(llamaParameterCount(config("llama2-70b")), 68976648192);
  // MLPerf's 405B: the same model with a 32,000-row embedding and head.
  EXPECT_EQ(llamaParameterCount(config("llama3.1-405b-mlperf")),
            405853388800 - int64_t(2) * (128256 - 32000) * 16384);
  // MLPerf's LoRA: rank 16 on the fused qkv_proj (8192 -> 10240) and on
  // o_proj of 80 layers, 16 (8192 + 10240 + 8192 + 8192) each: 44,564,480
  // adapters (PEFT's r (in + out) per adapted nn.Linear).
  EXPECT_EQ(llamaParameterCount(config("llama2-70b-lora")) -
                llamaParameterCount(config("llama2-70b")),
            44564480);
  // Separate q, k, v and o projections would have 65,536,000.
  LlamaConfig separate = config("llama2-70b-lora");
  separate.fusedQKV = false;
  EXPECT_EQ(llamaParameterCount(separate) -
                llamaParameterCount(config("llama2-70b")),
            65536000);
}

TEST(Llama, TheGraphHoldsWhatTheFormulaCounts) {
  MLIRContext context;
  for (const char *name : {"llama-tiny", "llama3.1-8b", "llama2-70b-lora"}) {
    BuiltModel built = buildModel(context, "llama", name, {});
    EXPECT_EQ(built.report.parameters, llamaParameterCount(config(name)))
        << name;
  }
}

TEST(Llama, ParametersAreNamedLikeTheCheckpoints) {
  MLIRContext context;
  LlamaConfig c = config("llama-tiny");
  c.layers = 1;
  OwningOpRef<ModuleOp> module = buildLlama(context, c);
  std::vector<std::string> expected = {
      "model.embed_tokens.weight",
      "model.layers.0.input_layernorm.weight",
      "model.layers.0.self_attn.q_proj.weight",
      "model.layers.0.self_attn.k_proj.weight",
      "model.layers.0.self_attn.v_proj.weight",
      "model.layers.0.self_attn.o_proj.weight",
      "model.layers.0.post_attention_layernorm.weight",
      "model.layers.0.mlp.gate_proj.weight",
      "model.layers.0.mlp.up_proj.weight",
      "model.layers.0.mlp.down_proj.weight",
      "model.norm.weight",
      "lm_head.weight"};
  EXPECT_EQ(::anvil::test::parameterNames(*module), expected);
}

TEST(Llama, LoraAdaptsTheAttentionProjectionsOnly) {
  MLIRContext context;
  LlamaConfig c = config("llama2-70b-lora");
  c.layers = 1;
  c.width = 64;
  c.heads = 4;
  c.kvHeads = 2;
  c.ffn = 96;
  c.vocab = 50;
  c.seqLen = 16;
  OwningOpRef<ModuleOp> module = buildLlama(context, c);
  auto fn = *module->getOps<FunctionOpInterface>().begin();
  int trainable = 0;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto p =
        fn.getArgAttrOfType<ad::ParamAttr>(i, ad::AnvilDialect::kParamAttrName);
    if (!p || !p.getTrainable())
      continue;
    ++trainable;
    EXPECT_NE(p.getName().find("self_attn"), llvm::StringRef::npos)
        << p.getName().str();
    EXPECT_NE(p.getName().find(".lora_"), llvm::StringRef::npos)
        << p.getName().str();
  }
  EXPECT_EQ(trainable, 4); // A and B of qkv and o
  std::vector<std::string> names = ::anvil::test::parameterNames(*module);
  std::vector<std::string> attention(names.begin() + 2, names.begin() + 8);
  std::vector<std::string> expected = {
      "model.layers.0.self_attn.qkv_proj.weight",
      "model.layers.0.self_attn.qkv_proj.lora_A.weight",
      "model.layers.0.self_attn.qkv_proj.lora_B.weight",
      "model.layers.0.self_attn.o_proj.weight",
      "model.layers.0.self_attn.o_proj.lora_A.weight",
      "model.layers.0.self_attn.o_proj.lora_B.weight"};
  EXPECT_EQ(attention, expected);
}

TEST(Llama, FormulaAgreesWithTheGraphsOwnMatmulsAndAttention) {
  // Forward matmuls: 2 FLOPs per token per matmul weight; causal attention
  // 4 B L C T (T + 1) / 2. The formula is three times that, with the
  // norms' weights and the full (not causal-halved) attention.
  LlamaConfig c = config("llama-tiny");
  MLIRContext context;
  OwningOpRef<ModuleOp> module = buildLlama(context, c);
  int64_t matmul = 0, attention = 0;
  module->walk([&](ad::CostOpInterface op) {
    if (isa<ad::MatmulOp>(op))
      matmul += op.getFlops();
    if (isa<ad::AttentionOp>(op))
      attention += op.getFlops();
  });
  const int64_t L = c.layers, C = c.width, T = c.sequenceLength(),
                tokens = c.tokensPerStep();
  const int64_t norms = (2 * L + 1) * C;
  const int64_t matmulWeights = llamaParameterCount(c) - c.vocab * C - norms;
  EXPECT_EQ(matmul, 2 * tokens * matmulWeights);
  EXPECT_EQ(attention, 4 * c.batch * L * C * T * (T + 1) / 2);
  EXPECT_EQ(llamaFlopsPerStep(c),
            3 * matmul + 6 * tokens * norms + 3 * 4 * c.batch * L * C * T * T);
}

TEST(Llama, BadConfigsNameTheField) {
  MLIRContext context;
  auto error = [&](std::vector<std::pair<std::string, std::string>> set) {
    try {
      buildModel(context, "llama", "llama-tiny", set);
    } catch (const BuildError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error({{"kv_heads", "3"}}),
            "config 'llama-tiny': kv_heads = 3 must divide heads = 4");
  EXPECT_EQ(error({{"seq_len", "65"}}),
            "config 'llama-tiny': seq_len = 65 must lie in [1, context = 64] "
            "(0 means context)");
  EXPECT_EQ(error({{"depth", "2"}})
                .find("config 'llama-tiny': unknown field "
                      "'depth'; the fields are layers,"),
            0u);
}

TEST(Llama, FusedQKVComputesWhatSeparateProjectionsDo) {
  // The same weights, once as q_proj, k_proj, v_proj and once stacked into
  // qkv_proj (rows q, then k, then v), give the same loss.
  LlamaConfig separate = config("llama-tiny");
  LlamaConfig fused = separate;
  fused.fusedQKV = true;
  MLIRContext context;
  OwningOpRef<ModuleOp> a = buildLlama(context, separate);
  OwningOpRef<ModuleOp> b = buildLlama(context, fused);
  auto fa = *a->getOps<FunctionOpInterface>().begin();
  auto fb = *b->getOps<FunctionOpInterface>().begin();
  std::map<std::string, ::anvil::interp::Buffer> byName;
  std::vector<::anvil::interp::Buffer> argsA;
  for (unsigned i = 0; i < fa.getNumArguments(); ++i) {
    argsA.push_back(
        ::anvil::interp::randomArgument(fa, i, /*seed=*/11, separate.vocab));
    byName[*::anvil::interp::argumentName(fa, i)] = argsA.back();
  }
  std::vector<::anvil::interp::Buffer> argsB;
  for (unsigned i = 0; i < fb.getNumArguments(); ++i) {
    std::string name = *::anvil::interp::argumentName(fb, i);
    auto at = name.find("qkv_proj");
    if (at == std::string::npos) {
      argsB.push_back(byName.at(name));
      continue;
    }
    ::anvil::interp::Buffer stacked =
        ::anvil::interp::randomArgument(fb, i, 0, 0);
    stacked.data.clear();
    for (const char *part : {"q_proj", "k_proj", "v_proj"}) {
      std::string piece = name;
      piece.replace(at, 8, part);
      const auto &w = byName.at(piece).data; // (out, in), row-major
      stacked.data.insert(stacked.data.end(), w.begin(), w.end());
    }
    ASSERT_EQ(static_cast<int64_t>(stacked.data.size()),
              stacked.shape[0] * stacked.shape[1]);
    argsB.push_back(stacked);
  }
  auto ra = ::anvil::interp::run(fa, argsA);
  auto rb = ::anvil::interp::run(fb, argsB);
  ASSERT_TRUE(succeeded(ra) && succeeded(rb));
  EXPECT_NEAR((*ra)[0].data[0], (*rb)[0].data[0], 1e-12);
}
