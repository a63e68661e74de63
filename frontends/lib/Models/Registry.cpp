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

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::frontend {

namespace {

/// The named config of a family with `overrides` applied and checked;
/// `unknown` builds the error for a name the family does not have.
template <typename Config, typename Find, typename Unknown>
Config
configured(Find find, const std::string &name,
           const std::vector<std::pair<std::string, std::string>> &overrides,
           Unknown unknown) {
  const Config *base = find(name);
  if (!base)
    throw unknown();
  Config c = *base;
  for (const auto &[field, value] : overrides)
    c.set(field, value);
  c.validate();
  return c;
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
} // namespace

const std::vector<ModelInfo> &listModels() {
  static const std::vector<ModelInfo> models = {
      family("gpt",
             "GPT-2 / GPT-3: pre-norm decoder, learned positions, GELU, tied "
             "embeddings, causal attention",
             gptConfigs()),
      family("llama",
             "Llama 2 / Llama 3.1: RMSNorm, rotary embeddings (Llama 3.1 "
             "scaling), grouped-query attention, SwiGLU, untied embeddings; "
             "LoRA configs",
             llamaConfigs()),
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

  BuiltModel built;
  ModelReport &r = built.report;
  r.model = model;
  r.config = config;
  auto unknownConfig = [&]() -> BuildError {
    return BuildError("unknown config '" + config + "' of model '" + model +
                      "'; the configs are: " + join(info->configs));
  };
  if (model == "gpt") {
    auto c =
        configured<GPTConfig>(findGPTConfig, config, overrides, unknownConfig);
    built.module = buildGPT(context, c);
    r.flopsPerStep = gptFlopsPerStep(c);
    r.batch = c.batch;
    r.seqLen = c.sequenceLength();
    r.tokensPerStep = c.tokensPerStep();
    r.vocab = c.paddedVocab();
  } else if (model == "bert") {
    auto c = configured<BERTConfig>(findBERTConfig, config, overrides,
                                    unknownConfig);
    built.module = buildBERT(context, c);
    r.flopsPerStep = bertFlopsPerStep(c);
    r.batch = c.batch;
    r.seqLen = c.sequenceLength();
    r.tokensPerStep = c.tokensPerStep();
    r.vocab = c.vocab;
  } else if (model == "dlrm") {
    auto c = configured<DLRMConfig>(findDLRMConfig, config, overrides,
                                    unknownConfig);
    built.module = buildDLRM(context, c);
    r.flopsPerStep = dlrmFlopsPerStep(c);
    r.batch = c.batch;
    r.tokensPerStep = c.batch; // samples
  } else if (model == "retinanet") {
    auto c = configured<RetinaNetConfig>(findRetinaNetConfig, config, overrides,
                                         unknownConfig);
    built.module = buildRetinaNet(context, c);
    r.flopsPerStep = retinanetFlopsPerStep(c);
    r.batch = c.batch;
    r.tokensPerStep = c.batch; // images
    r.vocab = c.classes;
  } else if (model == "sd-unet") {
    auto c = configured<SDUNetConfig>(findSDUNetConfig, config, overrides,
                                      unknownConfig);
    built.module = buildSDUNet(context, c);
    r.flopsPerStep = sdUNetFlopsPerStep(c);
    r.batch = c.batch;
    r.tokensPerStep = c.batch; // samples
  } else if (model == "unet3d") {
    auto c = configured<UNet3DConfig>(findUNet3DConfig, config, overrides,
                                      unknownConfig);
    built.module = buildUNet3D(context, c);
    r.flopsPerStep = unet3dFlopsPerStep(c);
    r.batch = c.batch;
    r.tokensPerStep = c.batch; // samples
    r.vocab = c.classes;
  } else if (model == "resnet") {
    auto c = configured<ResNetConfig>(findResNetConfig, config, overrides,
                                      unknownConfig);
    built.module = buildResNet(context, c);
    r.flopsPerStep = resnetFlopsPerStep(c);
    r.batch = c.batch;
    r.seqLen = 0;
    r.tokensPerStep = c.batch; // images
    r.vocab = c.classes;
  } else {
    auto c = configured<LlamaConfig>(findLlamaConfig, config, overrides,
                                     unknownConfig);
    built.module = buildLlama(context, c);
    r.flopsPerStep = llamaFlopsPerStep(c);
    r.batch = c.batch;
    r.seqLen = c.sequenceLength();
    r.tokensPerStep = c.tokensPerStep();
    r.vocab = c.vocab;
  }
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

} // namespace anvil::frontend
