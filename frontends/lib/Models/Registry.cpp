//===- Registry.cpp - the models anvil-compile can build ------------------===//
//
// The table of model families. Adding a family means adding its entry here
// and a case in buildModel.
//
//===----------------------------------------------------------------------===//

#include "anvil/Frontend/Models/Registry.h"
#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/BERT.h"
#include "anvil/Frontend/Models/DLRM.h"
#include "anvil/Frontend/Models/GPT.h"
#include "anvil/Frontend/Models/Llama.h"
#include "anvil/Frontend/Models/ResNet.h"
#include "anvil/Frontend/Models/RetinaNet.h"
#include "anvil/Frontend/Models/SDUNet.h"
#include "anvil/Frontend/Models/UNet3D.h"

#include "ConfigFields.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

/// Builds config `name` of a family (`configs`) with `overrides` applied
/// and checked: the module, the analytic FLOPs and the batch; `shape` fills
/// the family's other report fields (tokens per step defaults to the batch:
/// images or samples). `unknown` builds the error for a name the family does
/// not have.
template <typename Config, typename Unknown, typename Shape>
BuiltModel
buildFamily(MLIRContext &context, const std::vector<Config> &configs,
            const std::string &name,
            const std::vector<std::pair<std::string, std::string>> &overrides,
            Unknown unknown,
            OwningOpRef<ModuleOp> (*build)(MLIRContext &, const Config &),
            int64_t (*flops)(const Config &), Shape shape) {
  const Config *base = config::findByName(configs, name);
  if (!base)
    throw unknown();
  Config c = *base;
  for (const auto &[field, value] : overrides)
    c.set(field, value);
  c.validate();
  BuiltModel built;
  built.module = build(context, c);
  built.report.flopsPerStep = flops(c);
  built.report.batch = c.batch;
  built.report.tokensPerStep = c.batch;
  shape(c, built.report);
  return built;
}

std::string join(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// One family's entry: its configs' names and fields.
template <typename Config>
ModelInfo family(const char *name, const char *description,
                 const std::vector<Config> &configs,
                 const char *optimizer = "adamw") {
  ModelInfo info;
  info.name = name;
  info.description = description;
  for (const Config &c : configs)
    info.configs.push_back(c.name);
  info.fields = Config::fieldNames();
  info.optimizer = optimizer;
  return info;
}
ModelInfo withTensorParallel(ModelInfo info,
                             std::vector<ModelInfo::TensorParallelRule> rules) {
  info.tensorParallel = std::move(rules);
  return info;
}
} // namespace

const std::vector<ModelInfo> &listModels() {
  static const std::vector<ModelInfo> models = {
      withTensorParallel(
          family("gpt",
                 "GPT-2 / GPT-3: pre-norm decoder, learned positions, GELU, "
                 "tied embeddings, causal attention",
                 gptConfigs()),
          // Conv1D weights are [in, out]: column-parallel linears split
          // dimension 1 (and their bias), row-parallel ones dimension 0.
          // The token embedding (tied to the output layer) splits its
          // vocabulary.
          {{"wte.weight", 0},
           {".attn.c_attn.weight", 1, 3},
           {".attn.c_attn.bias", 0, 3},
           {".attn.c_proj.weight", 0},
           {".mlp.c_fc.weight", 1},
           {".mlp.c_fc.bias", 0},
           {".mlp.c_proj.weight", 0}}),
      withTensorParallel(
          family("llama",
                 "Llama 2 / Llama 3.1: RMSNorm, rotary embeddings (Llama 3.1 "
                 "scaling), grouped-query attention, SwiGLU, untied "
                 "embeddings; LoRA configs",
                 llamaConfigs()),
          // Linear weights are [out, in]: column-parallel linears split
          // dimension 0, row-parallel ones dimension 1; both embeddings
          // split the vocabulary. A LoRA adapter (B [out, r] after
          // A [r, in]) splits B's rows on a column-parallel linear and A's
          // columns on a row-parallel one.
          {{"model.embed_tokens.weight", 0},
           {"lm_head.weight", 0},
           {".self_attn.q_proj.weight", 0},
           {".self_attn.k_proj.weight", 0},
           {".self_attn.v_proj.weight", 0},
           {".self_attn.o_proj.weight", 1},
           {".self_attn.q_proj.lora_B.weight", 0},
           {".self_attn.k_proj.lora_B.weight", 0},
           {".self_attn.v_proj.lora_B.weight", 0},
           {".self_attn.o_proj.lora_A.weight", 1},
           {".mlp.gate_proj.weight", 0},
           {".mlp.up_proj.weight", 0},
           {".mlp.down_proj.weight", 1}}),
      family("bert",
             "BERT pre-training (Hugging Face BertForPreTraining): post-norm "
             "encoder, masked-LM and next-sentence heads; LAMB",
             bertConfigs(), "lamb"),
      family("resnet",
             "ResNet (torchvision v1.5): bottleneck blocks, batch norm, "
             "global average pooling, linear classifier",
             resnetConfigs()),
      family("retinanet",
             "RetinaNet (MLPerf): ResNeXt-50 32x4d with frozen batch norm, "
             "feature pyramid P3-P7, shared classification and box heads, "
             "focal + L1 losses on dense anchor targets",
             retinanetConfigs()),
      family("sd-unet",
             "Stable Diffusion 2's denoising UNet (diffusers "
             "UNet2DConditionModel): ResNet blocks with GroupNorm and SiLU, "
             "spatial transformers with cross-attention and GEGLU, noise "
             "regression",
             sdUNetConfigs()),
      family("unet3d",
             "3D U-Net (MLPerf KiTS19): instance norm, transposed 3-D "
             "convolutions, skip concatenations, Dice + cross-entropy",
             unet3dConfigs()),
      family("dlrm",
             "DLRM-DCNv2 (TorchRec): multi-hot embedding bags, bottom MLP, "
             "low-rank cross network, top MLP, BCE; Adagrad",
             dlrmConfigs(), "adagrad"),
  };
  return models;
}

const ModelInfo *findModel(const std::string &name) {
  for (const ModelInfo &m : listModels())
    if (m.name == name)
      return &m;
  return nullptr;
}

BuiltModel
buildModel(MLIRContext &context, const std::string &model,
           const std::string &config,
           const std::vector<std::pair<std::string, std::string>> &overrides) {
  const ModelInfo *info = nullptr;
  std::vector<std::string> modelNames;
  for (const ModelInfo &m : listModels()) {
    modelNames.push_back(m.name);
    if (m.name == model)
      info = &m;
  }
  if (!info)
    throw BuildError("unknown model '" + model +
                     "'; the models are: " + join(modelNames));

  auto unknownConfig = [&]() -> BuildError {
    return BuildError("unknown config '" + config + "' of model '" + model +
                      "'; the configs are: " + join(info->configs));
  };
  auto build = [&](const auto &configs, auto builder, auto flops, auto shape) {
    return buildFamily(context, configs, config, overrides, unknownConfig,
                       builder, flops, shape);
  };
  auto tokens = [](const auto &c, ModelReport &r) {
    r.seqLen = c.sequenceLength();
    r.tokensPerStep = c.tokensPerStep();
  };
  auto classes = [](const auto &c, ModelReport &r) { r.vocab = c.classes; };
  auto none = [](const auto &, ModelReport &) {};
  BuiltModel built;
  if (model == "gpt")
    built = build(gptConfigs(), buildGPT, gptFlopsPerStep,
                  [&](const GPTConfig &c, ModelReport &r) {
                    tokens(c, r);
                    r.vocab = c.paddedVocab();
                  });
  else if (model == "llama")
    built = build(llamaConfigs(), buildLlama, llamaFlopsPerStep,
                  [&](const LlamaConfig &c, ModelReport &r) {
                    tokens(c, r);
                    r.vocab = c.vocab;
                  });
  else if (model == "bert")
    built = build(bertConfigs(), buildBERT, bertFlopsPerStep,
                  [&](const BERTConfig &c, ModelReport &r) {
                    tokens(c, r);
                    r.vocab = c.vocab;
                  });
  else if (model == "resnet")
    built = build(resnetConfigs(), buildResNet, resnetFlopsPerStep, classes);
  else if (model == "retinanet")
    built = build(retinanetConfigs(), buildRetinaNet, retinanetFlopsPerStep,
                  classes);
  else if (model == "sd-unet")
    built = build(sdUNetConfigs(), buildSDUNet, sdUNetFlopsPerStep, none);
  else if (model == "unet3d")
    built = build(unet3dConfigs(), buildUNet3D, unet3dFlopsPerStep, classes);
  else
    built = build(dlrmConfigs(), buildDLRM, dlrmFlopsPerStep, none);
  ModelReport &r = built.report;
  r.model = model;
  r.config = config;
  // Count what the graph holds, not what the formula says.
  auto fn = *built.module->getOps<FunctionOpInterface>().begin();
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    auto p = fn.getArgAttrOfType<ad::ParamAttr>(
        i, mlir::anvil::AnvilDialect::kParamAttrName);
    if (!p || p.getBuffer())
      continue;
    ++r.parameterTensors;
    r.parameters +=
        cast<RankedTensorType>(fn.getArgumentTypes()[i]).getNumElements();
  }
  return built;
}

bool markTensorParallelLayout(mlir::ModuleOp module, const ModelInfo &model) {
  if (model.tensorParallel.empty())
    return false;
  auto forward = module.lookupSymbol<FunctionOpInterface>("forward");
  if (!forward)
    return false;
  mlir::Builder b(module.getContext());
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    auto param = forward.getArgAttrOfType<ad::ParamAttr>(
        i, mlir::anvil::AnvilDialect::kParamAttrName);
    if (!param)
      continue;
    for (const ModelInfo::TensorParallelRule &rule : model.tensorParallel)
      if (param.getName().ends_with(rule.suffix))
        forward.setArgAttr(
            i, mlir::anvil::AnvilDialect::kShardingAttrName,
            b.getDictionaryAttr(
                {b.getNamedAttr("split_axis", b.getStringAttr("tp")),
                 b.getNamedAttr("split_dim", b.getI64IntegerAttr(rule.dim)),
                 b.getNamedAttr("split_groups",
                                b.getI64IntegerAttr(rule.groups))}));
  }
  return true;
}

} // namespace anvil::frontend
