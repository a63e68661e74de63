//===- SDUNet.h - Stable Diffusion 2's denoising UNet -------------*- C++
//-*-===//
//
// The 865M-parameter UNet of Stable Diffusion 2 as diffusers'
// UNet2DConditionModel builds it (stabilityai/stable-diffusion-2-base:
// block_out_channels 320-640-1280-1280, two layers per block, 64-wide
// attention heads, cross-attention width 1024, linear projections in the
// spatial transformers), trained as MLPerf's stable_diffusion benchmark
// trains it: the VAE and the text encoder are frozen, so the latents and
// the text embeddings are inputs. ResNet blocks use GroupNorm(32) and SiLU
// with a projected timestep embedding; spatial transformers have self- and
// cross-attention and a GEGLU feed-forward; the up path concatenates skips
// and upsamples by nearest neighbour. The training step noises the latents
// with the DDPM scaled-linear schedule (1000 steps, betas 0.00085 to 0.012)
// at the given timesteps and regresses the noise (epsilon prediction) with
// a mean squared error. Names are diffusers' (`down_blocks.0.attentions.0.
// transformer_blocks.0.attn2.to_k.weight`). The forward graph is
//
//   func.func @forward(params..., latents (B, 4, H, W) f32,
//                      noise (B, 4, H, W) f32, timesteps (B) i32 in [0, 1000),
//                      encoder_hidden_states (B, 77, 1024) f32) -> loss
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_SDUNET_H
#define ANVIL_FRONTEND_MODELS_SDUNET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace anvil::frontend {

struct SDUNetConfig {
  std::string name;
  int64_t width = 320;                             ///< block_out_channels[0]
  std::vector<int64_t> multipliers = {1, 2, 4, 4}; ///< Channels per block.
  int64_t layersPerBlock = 2;
  int64_t headDim = 64;       ///< Channels per attention head.
  int64_t crossDim = 1024;    ///< Width of the text embeddings.
  int64_t groups = 32;        ///< GroupNorm groups.
  int64_t latentChannels = 4; ///< In and out channels.
  int64_t latent = 64;        ///< Side of the latent (image side / 8).
  int64_t contextLength = 77; ///< Text tokens.
  int64_t batch = 1;
  int64_t trainSteps = 1000; ///< Timesteps of the noise schedule.

  std::vector<int64_t> channels() const;
  void validate() const;
  /// Sets `field` from text (see fieldNames); throws BuildError.
  void set(const std::string &field, const std::string &value);
  static const std::vector<std::string> &fieldNames();
};

/// sd-unet-tiny and sd2-unet (512 x 512 images: 64 x 64 latents).
const std::vector<SDUNetConfig> &sdUNetConfigs();
const SDUNetConfig *findSDUNetConfig(const std::string &name);

/// Forward FLOPs of one sample: convolutions (multiply-accumulates, bias
/// adds not counted), linear layers and attention (Q K^T and P V), walked
/// over the architecture independently of the graph builder.
int64_t sdUNetForwardFlopsPerSample(const SDUNetConfig &config);
/// Training FLOPs of one step: three times the forward.
int64_t sdUNetFlopsPerStep(const SDUNetConfig &config);

mlir::OwningOpRef<mlir::ModuleOp> buildSDUNet(mlir::MLIRContext &context,
                                              const SDUNetConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_SDUNET_H
