//===- GPT.h - the GPT-2 and GPT-3 family -------------------------*- C++
//-*-===//
//
// Pre-norm decoder-only transformers with learned position embeddings,
// GELU (tanh) MLPs of width 4C, causal attention, tied input/output
// embeddings and a mean cross-entropy loss, as in GPT-2 and GPT-3. The
// forward graph is
//
//   func.func @forward(wte, wpe, h.0.*, ..., ln_f.*,        // parameters
//                      tokens (B, T) i32, targets (B, T) i32
//                      [, dropout_seed i64]) -> loss
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_GPT_H
#define ANVIL_FRONTEND_MODELS_GPT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace anvil::frontend {

struct GPTConfig {
  std::string name;
  int64_t layers = 0;
  int64_t width = 0;      ///< C, the model (embedding) width.
  int64_t heads = 0;      ///< Attention heads; must divide the width.
  int64_t context = 0;    ///< Longest sequence: rows of the position table.
  int64_t vocab = 0;      ///< Tokens in the vocabulary.
  int64_t padVocabTo = 1; ///< The embedding has vocab rounded up to this.
  double dropout = 0.0;   ///< Residual dropout rate.
  int64_t batch = 8;      ///< B of the training step.
  int64_t seqLen = 0;     ///< T of the training step; 0 means `context`.
  /// LoRA fine-tuning: adapters of this rank on the attention projections
  /// named in loraTargets ("c_attn", "c_proj" or "c_attn+c_proj"), every
  /// other parameter frozen. 0: plain training.
  int64_t loraRank = 0;
  double loraAlpha = 0; ///< 0 means alpha = rank.
  std::string loraTargets = "c_attn";

  int64_t paddedVocab() const;
  int64_t sequenceLength() const { return seqLen ? seqLen : context; }
  int64_t tokensPerStep() const { return batch * sequenceLength(); }

  /// Checks every field, and that the parameter and FLOP counts fit in
  /// 63 bits; throws BuildError naming the first bad field.
  void validate() const;
  /// Sets `field` (layers, width, heads, context, vocab, pad_vocab_to,
  /// dropout, batch, seq_len, lora_rank, lora_alpha, lora_targets) from
  /// text; throws BuildError listing the
  /// fields for an unknown one.
  void set(const std::string &field, const std::string &value);
  /// The overridable field names, for help text.
  static const std::vector<std::string> &fieldNames();
};

/// The named configs: gpt-tiny, gpt2-124m ... gpt2-1.5b, gpt3-125m ...
/// gpt3-175b.
const std::vector<GPTConfig> &gptConfigs();

/// The named config, or nullptr.
const GPTConfig *findGPTConfig(const std::string &name);

/// Parameters of a config, from the analytic formula
/// L (12 C^2 + 13 C) + V' C + T_ctx C + 2 C (V' the padded vocabulary).
int64_t gptParameterCount(const GPTConfig &config);

/// Training FLOPs of one step (forward and backward): 6 N B T for the
/// parameter matmuls plus 12 L C T per token for attention scores and their
/// use (the PaLM paper's formula; causal masking not discounted).
int64_t gptFlopsPerStep(const GPTConfig &config);

/// Builds the verified forward graph of `config` (validated first).
mlir::OwningOpRef<mlir::ModuleOp> buildGPT(mlir::MLIRContext &context,
                                           const GPTConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_GPT_H
