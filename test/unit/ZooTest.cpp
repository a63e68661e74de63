//===- ZooTest.cpp - BERT, DLRM, 3D U-Net, SD UNet, RetinaNet ------------===//
//
// Parameter counts and names against the reference implementations, the
// FLOPs formulas against the cost of each graph's own contractions, and
// the messages of configs that cannot be built.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/BERT.h"
#include "anvil/Frontend/Models/DLRM.h"
#include "anvil/Frontend/Models/Registry.h"
#include "anvil/Frontend/Models/RetinaNet.h"
#include "anvil/Frontend/Models/SDUNet.h"
#include "anvil/Frontend/Models/UNet3D.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include "ModelNames.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace mlir;
using namespace ::anvil::frontend;
namespace ad = mlir::anvil;

namespace {

std::string buildError(const std::string &model, const std::string &config,
                       std::vector<std::pair<std::string, std::string>> set) {
  MLIRContext context;
  try {
    buildModel(context, model, config, set);
  } catch (const BuildError &e) {
    return e.what();
  }
  return "";
}

/// Sum of getFlops over the ops of the given kinds.
template <typename... Ops> int64_t flopsOf(ModuleOp module) {
  int64_t flops = 0;
  module.walk([&](ad::CostOpInterface op) {
    if (isa<Ops...>(op))
      flops += op.getFlops();
  });
  return flops;
}

} // namespace

TEST(BERT, CountsAndNamesAreBertForPreTrainings) {
  MLIRContext context;
  // sum(p.numel() for p in BertForPreTraining(config).parameters()) with the
  // configs of bert-base-uncased and bert-large-uncased; the decoder's
  // weight and bias are tied to the word embeddings and cls.predictions.bias.
  BuiltModel base = buildModel(context, "bert", "bert-base", {});
  EXPECT_EQ(base.report.parameters, 110106428);
  BuiltModel large = buildModel(context, "bert", "bert-large", {});
  EXPECT_EQ(large.report.parameters, 336226108);
  EXPECT_EQ(large.report.parameterTensors, 5 + 24 * 16 + 2 + 1 + 4 + 2);
  std::vector<std::string> names = ::anvil::test::parameterNames(*large.module);
  ASSERT_EQ(names.size(), 398u);
  EXPECT_EQ(names[0], "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(names[4], "bert.embeddings.LayerNorm.bias");
  std::vector<std::string> layer0(names.begin() + 5, names.begin() + 21);
  std::vector<std::string> expected = {
      "bert.encoder.layer.0.attention.self.query.weight",
      "bert.encoder.layer.0.attention.self.query.bias",
      "bert.encoder.layer.0.attention.self.key.weight",
      "bert.encoder.layer.0.attention.self.key.bias",
      "bert.encoder.layer.0.attention.self.value.weight",
      "bert.encoder.layer.0.attention.self.value.bias",
      "bert.encoder.layer.0.attention.output.dense.weight",
      "bert.encoder.layer.0.attention.output.dense.bias",
      "bert.encoder.layer.0.attention.output.LayerNorm.weight",
      "bert.encoder.layer.0.attention.output.LayerNorm.bias",
      "bert.encoder.layer.0.intermediate.dense.weight",
      "bert.encoder.layer.0.intermediate.dense.bias",
      "bert.encoder.layer.0.output.dense.weight",
      "bert.encoder.layer.0.output.dense.bias",
      "bert.encoder.layer.0.output.LayerNorm.weight",
      "bert.encoder.layer.0.output.LayerNorm.bias"};
  EXPECT_EQ(layer0, expected);
  std::vector<std::string> tail(names.end() - 9, names.end());
  expected = {"bert.pooler.dense.weight",
              "bert.pooler.dense.bias",
              "cls.predictions.bias",
              "cls.predictions.transform.dense.weight",
              "cls.predictions.transform.dense.bias",
              "cls.predictions.transform.LayerNorm.weight",
              "cls.predictions.transform.LayerNorm.bias",
              "cls.seq_relationship.weight",
              "cls.seq_relationship.bias"};
  EXPECT_EQ(tail, expected);
  for (const char *name : {"bert-tiny", "bert-base", "bert-large"})
    EXPECT_EQ(buildModel(context, "bert", name, {}).report.parameters,
              bertParameterCount(*findBERTConfig(name)))
        << name;
}

TEST(BERT, FlopsFormulaIsTheGraphsMatmulsAndAttention) {
  for (const char *name : {"bert-tiny", "bert-large"})
    for (int64_t predictions : {int64_t(0), int64_t(5)}) {
      BERTConfig c = *findBERTConfig(name);
      c.predictions = predictions;
      MLIRContext context;
      OwningOpRef<ModuleOp> module = buildBERT(context, c);
      int64_t forward = flopsOf<ad::MatmulOp, ad::AttentionOp>(*module);
      EXPECT_EQ(bertFlopsPerStep(c), 3 * forward) << name << " " << predictions;
    }
  // BERT-Large at MLPerf's shape: 6 N per token for the encoder dominates.
  const BERTConfig &large = *findBERTConfig("bert-large");
  EXPECT_EQ(large.predictedPositions(), 76);
}

TEST(BERT, BadConfigsNameTheField) {
  EXPECT_EQ(buildError("bert", "bert-tiny", {{"heads", "3"}}),
            "config 'bert-tiny': heads = 3 must divide width = 64");
  EXPECT_EQ(buildError("bert", "bert-tiny", {{"predictions", "40"}}),
            "config 'bert-tiny': predictions = 40 must not exceed the "
            "sequence length 32 (0 means every position)");
  EXPECT_EQ(buildError("bert", "bert-tiny", {{"seq_len", "-1"}}),
            "config 'bert-tiny': seq_len = -1 must be at least 0");
  EXPECT_EQ(buildError("bert", "bert-tiny", {{"dropout", "1"}}),
            "config 'bert-tiny': dropout = 1.000000 must lie in [0, 1)");
}

TEST(DLRM, CountsAndNamesAreTorchRecs) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "dlrm", "dlrm-dcnv2", {});
  // The 26 tables of MLPerf's --num_embeddings_per_feature hold 204,184,588
  // rows of 128; the dense part (bottom MLP 171,392, cross network
  // 10,627,200, top MLP 5,245,953) adds 16,044,545.
  EXPECT_EQ(built.report.parameters, 204184588LL * 128 + 16044545);
  EXPECT_EQ(built.report.parameterTensors, 26 + 6 + 9 + 8 + 2);
  std::vector<std::string> names = ::anvil::test::parameterNames(*built.module);
  EXPECT_EQ(names[0],
            "sparse_arch.embedding_bag_collection.embedding_bags.t_cat_0."
            "weight");
  EXPECT_EQ(names[25],
            "sparse_arch.embedding_bag_collection.embedding_bags.t_cat_25."
            "weight");
  EXPECT_EQ(names[26], "dense_arch.model._mlp.0._linear.weight");
  EXPECT_EQ(names[31], "dense_arch.model._mlp.2._linear.bias");
  EXPECT_EQ(names[32], "inter_arch.crossnet.W_kernels.0");
  EXPECT_EQ(names[35], "inter_arch.crossnet.V_kernels.0");
  EXPECT_EQ(names[40], "inter_arch.crossnet.bias.2");
  EXPECT_EQ(names[41], "over_arch.model.0._mlp.0._linear.weight");
  EXPECT_EQ(names[48], "over_arch.model.0._mlp.3._linear.bias");
  EXPECT_EQ(names[49], "over_arch.model.1.weight");
  EXPECT_EQ(names[50], "over_arch.model.1.bias");
  for (const char *name : {"dlrm-tiny", "dlrm-dcnv2"})
    EXPECT_EQ(buildModel(context, "dlrm", name, {}).report.parameters,
              dlrmParameterCount(*findDLRMConfig(name)))
        << name;
}

TEST(DLRM, FlopsFormulaIsTheGraphsMatmuls) {
  for (const char *name : {"dlrm-tiny", "dlrm-dcnv2"}) {
    const DLRMConfig &c = *findDLRMConfig(name);
    MLIRContext context;
    OwningOpRef<ModuleOp> module = buildDLRM(context, c);
    EXPECT_EQ(dlrmFlopsPerStep(c), 3 * flopsOf<ad::MatmulOp>(*module)) << name;
  }
}

TEST(DLRM, BadConfigsNameTheField) {
  EXPECT_EQ(buildError("dlrm", "dlrm-tiny", {{"embedding_dim", "8"}}),
            "config 'dlrm-tiny': embedding_dim = 8 must equal the bottom "
            "MLP's last width 16 (the interaction stacks them)");
  EXPECT_EQ(buildError("dlrm", "dlrm-tiny", {{"low_rank", "0"}}),
            "config 'dlrm-tiny': low_rank = 0 must be at least 1");
  EXPECT_EQ(buildError("dlrm", "dlrm-tiny", {{"rank", "8"}})
                .find("config 'dlrm-tiny': unknown field 'rank'; the fields "
                      "are embedding_dim, dense_features,"),
            0u);
}

TEST(UNet3D, CountsAndNamesAreMLPerfsReference) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "unet3d", "unet3d-kits19", {});
  // Unet3D(1, 3, "instancenorm", "relu") of mlcommons/training: bias-free
  // 3x3x3 convolutions with affine instance norm, transposed convolutions
  // with bias, a 1x1x1 output convolution with bias.
  EXPECT_EQ(built.report.parameters, 31190243);
  EXPECT_EQ(built.report.parameterTensors, 78);
  std::vector<std::string> names = ::anvil::test::parameterNames(*built.module);
  std::vector<std::string> head(names.begin(), names.begin() + 6);
  std::vector<std::string> expected = {
      "input_block.conv1.0.weight", "input_block.conv1.1.weight",
      "input_block.conv1.1.bias",   "input_block.conv2.0.weight",
      "input_block.conv2.1.weight", "input_block.conv2.1.bias"};
  EXPECT_EQ(head, expected);
  EXPECT_EQ(names[6], "downsample.0.conv1.0.weight");
  EXPECT_EQ(names[30], "bottleneck.conv1.0.weight");
  EXPECT_EQ(names[36], "upsample.0.upsample_conv.0.weight");
  EXPECT_EQ(names[37], "upsample.0.upsample_conv.0.bias");
  EXPECT_EQ(names[38], "upsample.0.conv1.0.weight");
  EXPECT_EQ(names[76], "output.conv.weight");
  EXPECT_EQ(names[77], "output.conv.bias");
}

TEST(UNet3D, FlopsFormulaIsTheGraphsConvolutions) {
  for (const char *name : {"unet3d-tiny", "unet3d-kits19"}) {
    const UNet3DConfig &c = *findUNet3DConfig(name);
    MLIRContext context;
    OwningOpRef<ModuleOp> module = buildUNet3D(context, c);
    // The cost interface adds one flop per output for a bias; the formula
    // counts multiply-accumulates only.
    int64_t biasAdds = 0;
    module->walk([&](Operation *op) {
      if (auto conv = dyn_cast<ad::ConvOp>(op); conv && conv.getBias())
        biasAdds += cast<RankedTensorType>(conv.getType()).getNumElements();
      if (auto up = dyn_cast<ad::ConvTransposeOp>(op); up && up.getBias())
        biasAdds += cast<RankedTensorType>(up.getType()).getNumElements();
    });
    int64_t convs = flopsOf<ad::ConvOp, ad::ConvTransposeOp>(*module);
    EXPECT_EQ(unet3dForwardFlopsPerSample(c) * c.batch, convs - biasAdds)
        << name;
    EXPECT_EQ(unet3dFlopsPerStep(c), 3 * (convs - biasAdds)) << name;
  }
}

TEST(UNet3D, BadConfigsNameTheField) {
  EXPECT_EQ(buildError("unet3d", "unet3d-tiny", {{"image", "48"}}),
            "config 'unet3d-tiny': image = 48 must be divisible by 32 (four "
            "downsamplings and the bottleneck halve it)");
  EXPECT_EQ(buildError("unet3d", "unet3d-tiny", {{"classes", "1"}}),
            "config 'unet3d-tiny': classes = 1 must be at least 2 (Dice "
            "excludes the background class)");
  EXPECT_EQ(buildError("unet3d", "unet3d-tiny", {{"max_width", "2"}}),
            "config 'unet3d-tiny': max_width = 2 must be at least width = 4");
}

TEST(SDUNet, CountsAndNamesAreDiffusers) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "sd-unet", "sd2-unet", {});
  // UNet2DConditionModel with stabilityai/stable-diffusion-2-base's config:
  // 865,910,724 parameters (MLPerf's "865M"; Stable Diffusion 1.x's UNet,
  // 859,520,964, plus 2 x 256 x 12,480 for the wider text embeddings in
  // every attn2.to_k and to_v).
  EXPECT_EQ(built.report.parameters, 865910724);
  EXPECT_EQ(built.report.parameters, 859520964 + 2 * 256 * 12480);
  EXPECT_EQ(built.report.parameterTensors, 686);
  std::vector<std::string> names = ::anvil::test::parameterNames(*built.module);
  std::vector<std::string> head(names.begin(), names.begin() + 8);
  std::vector<std::string> expected = {"conv_in.weight",
                                       "conv_in.bias",
                                       "time_embedding.linear_1.weight",
                                       "time_embedding.linear_1.bias",
                                       "time_embedding.linear_2.weight",
                                       "time_embedding.linear_2.bias",
                                       "down_blocks.0.attentions.0.norm.weight",
                                       "down_blocks.0.attentions.0.norm.bias"};
  EXPECT_EQ(head, expected);
  auto has = [&](const std::string &name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const char *name :
       {"down_blocks.0.attentions.1.transformer_blocks.0.attn2.to_k.weight",
        "down_blocks.0.attentions.0.transformer_blocks.0.ff.net.0.proj.weight",
        "down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_out.0.bias",
        "down_blocks.1.resnets.0.conv_shortcut.weight",
        "down_blocks.2.downsamplers.0.conv.weight",
        "down_blocks.3.resnets.1.time_emb_proj.weight",
        "up_blocks.0.resnets.2.conv_shortcut.bias",
        "up_blocks.2.upsamplers.0.conv.weight",
        "up_blocks.3.attentions.2.proj_out.weight",
        "mid_block.attentions.0.transformer_blocks.0.norm3.weight",
        "mid_block.resnets.1.norm2.bias"})
    EXPECT_TRUE(has(name)) << name;
  EXPECT_FALSE(has("down_blocks.3.attentions.0.norm.weight"));
  EXPECT_FALSE(has("up_blocks.3.upsamplers.0.conv.weight"));
  EXPECT_FALSE(has("down_blocks.0.attentions.0.transformer_blocks.0.attn1."
                   "to_q.bias"));
  // diffusers registers up_blocks before mid_block.
  auto at = [&](const std::string &name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  EXPECT_LT(at("up_blocks.3.resnets.2.conv2.bias"),
            at("mid_block.attentions.0.norm.weight"));
  EXPECT_EQ(names[names.size() - 4], "conv_norm_out.weight");
  EXPECT_EQ(names.back(), "conv_out.bias");
}

TEST(SDUNet, FlopsFormulaIsTheGraphsContractions) {
  for (const char *name : {"sd-unet-tiny", "sd2-unet"}) {
    const SDUNetConfig &c = *findSDUNetConfig(name);
    MLIRContext context;
    OwningOpRef<ModuleOp> module = buildSDUNet(context, c);
    int64_t biasAdds = 0;
    module->walk([&](ad::ConvOp conv) {
      if (conv.getBias())
        biasAdds += cast<RankedTensorType>(conv.getType()).getNumElements();
    });
    int64_t forward =
        flopsOf<ad::ConvOp, ad::MatmulOp, ad::AttentionOp>(*module) - biasAdds;
    EXPECT_EQ(sdUNetForwardFlopsPerSample(c) * c.batch, forward) << name;
    EXPECT_EQ(sdUNetFlopsPerStep(c), 3 * forward) << name;
  }
}

TEST(SDUNet, BadConfigsNameTheField) {
  EXPECT_EQ(buildError("sd-unet", "sd2-unet", {{"latent", "60"}}),
            "config 'sd2-unet': latent = 60 must be divisible by 8 (the UNet "
            "halves it 3 times)");
  EXPECT_EQ(buildError("sd-unet", "sd2-unet", {{"width", "300"}}),
            "config 'sd2-unet': groups = 32 must divide every block's "
            "channels (width = 300 gives 300)");
  EXPECT_EQ(buildError("sd-unet", "sd2-unet", {{"head_dim", "48"}}),
            "config 'sd2-unet': head_dim = 48 must divide every block's "
            "channels (width = 320 gives 320)");
}

TEST(RetinaNet, CountsNamesAndFreezingAreTheReferences) {
  MLIRContext context;
  BuiltModel built = buildModel(context, "retinanet", "retinanet-mlperf", {});
  // retinanet_resnext50_32x4d_fpn(264 classes) of MLPerf's reference:
  // ResNeXt-50 32x4d convolutions 22,911,680 (torchvision's 25,028,904
  // less 68,224 batch-norm affine terms, buffers here, and the 2,049,000
  // of fc), pyramid 3,868,672, classification head 7,837,000, box head
  // 2,443,300.
  EXPECT_EQ(built.report.parameters, 22911680 + 3868672 + 7837000 + 2443300);
  EXPECT_EQ(built.report.parameters, 37060652);
  EXPECT_EQ(built.report.parameterTensors, 89);
  auto fn = *built.module->getOps<FunctionOpInterface>().begin();
  std::map<std::string, ad::ParamAttr> params;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto p = fn.getArgAttrOfType<ad::ParamAttr>(
            i, ad::AnvilDialect::kParamAttrName))
      params[p.getName().str()] = p;
  auto frozen = [&](const std::string &name) {
    auto it = params.find(name);
    EXPECT_NE(it, params.end()) << name;
    return it != params.end() && !it->second.getTrainable();
  };
  // trainable_backbone_layers = 3: conv1 and layer1 frozen.
  EXPECT_TRUE(frozen("backbone.body.conv1.weight"));
  EXPECT_TRUE(frozen("backbone.body.layer1.2.conv3.weight"));
  EXPECT_FALSE(frozen("backbone.body.layer2.0.conv2.weight"));
  EXPECT_FALSE(frozen("backbone.fpn.inner_blocks.0.weight"));
  EXPECT_FALSE(frozen("head.classification_head.conv.6.weight"));
  EXPECT_FALSE(frozen("head.classification_head.cls_logits.bias"));
  EXPECT_FALSE(frozen("head.regression_head.bbox_reg.weight"));
  EXPECT_FALSE(frozen("backbone.fpn.extra_blocks.p7.bias"));
  // Frozen batch norm: four buffers per norm, none counted.
  for (const char *name : {"backbone.body.bn1.running_var",
                           "backbone.body.layer3.0.downsample.1.weight"}) {
    ASSERT_TRUE(params.count(name)) << name;
    EXPECT_TRUE(params[name].getBuffer()) << name;
    EXPECT_FALSE(params[name].getTrainable()) << name;
  }
  EXPECT_FALSE(params["backbone.body.layer3.0.conv2.weight"].getBuffer());
  // The grouped 3x3 convolution of layer2 has 32 groups of 8 channels.
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto p = fn.getArgAttrOfType<ad::ParamAttr>(
            i, ad::AnvilDialect::kParamAttrName);
        p && p.getName() == "backbone.body.layer2.0.conv2.weight")
      EXPECT_EQ(cast<RankedTensorType>(fn.getArgumentTypes()[i]).getShape(),
                ArrayRef<int64_t>({256, 8, 3, 3}));
  // The pyramid and heads in the reference's state-dict order.
  std::vector<std::string> names = ::anvil::test::parameterNames(*built.module);
  auto first = std::find(names.begin(), names.end(),
                         "backbone.fpn.inner_blocks.0.weight");
  ASSERT_NE(first, names.end());
  std::vector<std::string> fpn(first, first + 16);
  std::vector<std::string> expected;
  for (const char *kind : {"inner_blocks", "layer_blocks"})
    for (int l = 0; l < 3; ++l)
      for (const char *p : {"weight", "bias"})
        expected.push_back(std::string("backbone.fpn.") + kind + "." +
                           std::to_string(l) + "." + p);
  for (const char *p : {"p6.weight", "p6.bias", "p7.weight", "p7.bias"})
    expected.push_back(std::string("backbone.fpn.extra_blocks.") + p);
  EXPECT_EQ(fpn, expected);
  EXPECT_EQ(*(first + 16), "head.classification_head.conv.0.weight");
  EXPECT_EQ(names.back(), "head.regression_head.bbox_reg.bias");
  // 800 x 800: P3-P7 of 100, 50, 25, 13 and 7, nine anchors each.
  EXPECT_EQ(findRetinaNetConfig("retinanet-mlperf")->anchorsPerImage(),
            9 * (100 * 100 + 50 * 50 + 25 * 25 + 13 * 13 + 7 * 7));
}

TEST(RetinaNet, FlopsFormulaIsTheGraphsConvolutions) {
  for (const char *name : {"retinanet-tiny", "retinanet-mlperf"}) {
    const RetinaNetConfig &c = *findRetinaNetConfig(name);
    MLIRContext context;
    OwningOpRef<ModuleOp> module = buildRetinaNet(context, c);
    int64_t biasAdds = 0;
    module->walk([&](ad::ConvOp conv) {
      if (conv.getBias())
        biasAdds += cast<RankedTensorType>(conv.getType()).getNumElements();
    });
    int64_t forward = flopsOf<ad::ConvOp>(*module) - biasAdds;
    EXPECT_EQ(retinanetForwardFlopsPerImage(c) * c.batch, forward) << name;
    EXPECT_EQ(retinanetFlopsPerStep(c), 3 * forward) << name;
  }
}

TEST(RetinaNet, BadConfigsNameTheField) {
  EXPECT_EQ(buildError("retinanet", "retinanet-mlperf", {{"image", "816"}}),
            "config 'retinanet-mlperf': image = 816 must be divisible by 32 "
            "(the pyramid's top-down path doubles C5 back to C3)");
  EXPECT_EQ(buildError("retinanet", "retinanet-mlperf",
                       {{"stem", "16"}, {"width_per_group", "2"}}),
            "config 'retinanet-mlperf': stem = 16 x width_per_group = 2 must "
            "be at least 64 (layer1's width, int(stem x width_per_group / 64) "
            "x groups, would be 0)");
}
