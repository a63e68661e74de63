//===- Llama.h - the Llama 2 / Llama 3.1 family ---------------------*- C++
//-*-===//
//
// Pre-norm decoder-only transformers as Hugging Face transformers'
// LlamaForCausalLM builds them: RMSNorm, rotary position embeddings (with
// Llama 3.1's frequency scaling), grouped-query attention with separate
// q/k/v/o projections, SwiGLU MLPs, untied input and output embeddings, a
// mean cross-entropy loss. Parameter names are the checkpoints' names
// (`model.layers.0.self_attn.q_proj.weight`), weights in their (out, in)
// layout. The forward graph is
//
//   func.func @forward(model.embed_tokens.weight, model.layers.*,
//                      model.norm.weight, lm_head.weight,   // parameters
//                      tokens (B, T) i32, targets (B, T) i32) -> loss
//
// LoRA configs add PEFT adapters of the given rank to the attention
// projections and freeze the base model; llama2-70b-lora is MLPerf's: a
// checkpoint with fused q/k/v projections (`self_attn.qkv_proj`), adapters
// on qkv_proj and o_proj.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_LLAMA_H
#define ANVIL_FRONTEND_MODELS_LLAMA_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace anvil::frontend {

struct LlamaConfig {
  std::string name;
  int64_t layers = 0;
  int64_t width = 0;   ///< C, the hidden size.
  int64_t heads = 0;   ///< Query heads; must divide the width.
  int64_t kvHeads = 0; ///< Key/value heads; must divide the query heads.
  int64_t ffn = 0;     ///< Intermediate size of the SwiGLU MLP.
  int64_t vocab = 0;
  int64_t context = 0;        ///< Longest sequence (max_position_embeddings).
  double ropeTheta = 0;       ///< Base of the rotary frequencies.
  bool llama3Scaling = false; ///< Llama 3.1's rope_scaling ("llama3").
  double ropeFactor = 8, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalContext = 8192;
  double normEpsilon = 1e-5;
  int64_t batch = 1;
  int64_t seqLen = 0;   ///< T of the training step; 0 means `context`.
  int64_t loraRank = 0; ///< Adapters on q/k/v/o_proj; 0: plain training.
  /// One qkv_proj (rows q, k, v) instead of q_proj, k_proj and v_proj, as
  /// in the fused checkpoint MLPerf's LoRA reference fine-tunes.
  bool fusedQKV = false;
  double loraAlpha = 0; ///< 0 means alpha = rank.

  int64_t headDim() const { return width / heads; }
  int64_t sequenceLength() const { return seqLen ? seqLen : context; }
  int64_t tokensPerStep() const { return batch * sequenceLength(); }
  /// Checks every field; throws BuildError naming the first bad one.
  void validate() const;
  /// Sets `field` from text (see fieldNames); throws BuildError.
  void set(const std::string &field, const std::string &value);
  static const std::vector<std::string> &fieldNames();
};

/// llama-tiny, llama3.1-8b, llama3.1-70b, llama3.1-405b,
/// llama3.1-405b-mlperf (32,000-token vocabulary), llama2-70b,
/// llama2-70b-lora.
const std::vector<LlamaConfig> &llamaConfigs();
const LlamaConfig *findLlamaConfig(const std::string &name);

/// Parameters of the base model: 2 V C + C + L (2 C + 2 C^2 + 2 C Hkv D +
/// 3 C F), plus r (in + out) per adapted projection and layer with LoRA
/// (q, k, v and o, or qkv and o when fused).
int64_t llamaParameterCount(const LlamaConfig &config);
/// Training FLOPs of one step: 6 flops per weight of a matmul (the
/// parameters less the embedding table, which is a lookup) per token, 4
/// for frozen weights under LoRA (no weight gradient), plus 12 L C T per
/// token for the attention scores and their use (causality not
/// discounted, as in the PaLM paper).
int64_t llamaFlopsPerStep(const LlamaConfig &config);

/// Builds the verified forward graph of `config` (validated first).
mlir::OwningOpRef<mlir::ModuleOp> buildLlama(mlir::MLIRContext &context,
                                             const LlamaConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_LLAMA_H
