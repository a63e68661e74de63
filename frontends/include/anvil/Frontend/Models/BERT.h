//===- BERT.h - BERT pre-training (masked LM and next sentence) -*- C++ -*-===//
//
// BERT as Hugging Face transformers' BertForPreTraining builds it and as
// MLPerf Training pre-trains BERT-Large: post-norm encoder layers (layer
// norm epsilon 1e-12, exact GELU), learned position and token-type
// embeddings, a tanh pooler on the first token, the masked-LM head (dense,
// GELU, layer norm, decoder tied to the word embeddings plus its own bias)
// and the next-sentence head. The loss is masked-LM cross-entropy plus
// next-sentence cross-entropy. Parameter names are the checkpoints'
// (`bert.encoder.layer.0.attention.self.query.weight`), weights (out, in).
// The forward graph is
//
//   func.func @forward(bert.*, cls.*,                          // parameters
//                      input_ids (B, T) i32, token_type_ids (B, T) i32,
//                      attention_mask (B, T) i32 (1 = attend),
//                      masked_lm_positions (B, P) i32,         // P > 0 only
//                      masked_lm_labels (B, P or T) i32 (-100 = ignore),
//                      next_sentence_label (B) i32
//                      [, dropout_seed i64]) -> loss
//
// With `predictions` P > 0 the masked-LM head runs only on the P gathered
// positions per sequence, as MLPerf's reference does (76 for sequence 512);
// with P = 0 it runs on every position, as BertForPreTraining does.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_BERT_H
#define ANVIL_FRONTEND_MODELS_BERT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace anvil::frontend {

struct BERTConfig {
  std::string name;
  int64_t layers = 0;
  int64_t width = 0;   ///< C, the hidden size.
  int64_t heads = 0;   ///< Attention heads; must divide the width.
  int64_t ffn = 0;     ///< Intermediate size of the MLP.
  int64_t vocab = 0;   ///< Word-piece vocabulary.
  int64_t context = 0; ///< max_position_embeddings.
  int64_t typeVocab = 2;
  int64_t batch = 8;
  int64_t seqLen = 0;      ///< T of the training step; 0 means `context`.
  int64_t predictions = 0; ///< Masked positions per sequence; 0: all.
  double dropout = 0.0;    ///< Hidden dropout rate (BERT trains with 0.1).

  int64_t sequenceLength() const { return seqLen ? seqLen : context; }
  int64_t tokensPerStep() const { return batch * sequenceLength(); }
  /// Positions per sequence the masked-LM head runs on.
  int64_t predictedPositions() const {
    return predictions ? predictions : sequenceLength();
  }

  void validate() const;
  /// Sets `field` from text (see fieldNames); throws BuildError.
  void set(const std::string &field, const std::string &value);
  static const std::vector<std::string> &fieldNames();
};

/// bert-tiny, bert-base, bert-large (MLPerf's: sequence 512, 76 predictions).
const std::vector<BERTConfig> &bertConfigs();
const BERTConfig *findBERTConfig(const std::string &name);

/// Parameters of BertForPreTraining (tied decoder counted once):
/// (V + ctx + types) C + 2 C + L (4 C^2 + 2 C F + 9 C + F) + pooler
/// (C^2 + C) + transform (C^2 + 3 C) + decoder bias V + NSP (2 C + 2).
int64_t bertParameterCount(const BERTConfig &config);
/// Training FLOPs of one step: 6 per matmul weight per row it multiplies
/// (encoder rows B T, pooler and NSP rows B, masked-LM rows B P with the
/// tied decoder's V C), plus 12 L C T per token for attention.
int64_t bertFlopsPerStep(const BERTConfig &config);

mlir::OwningOpRef<mlir::ModuleOp> buildBERT(mlir::MLIRContext &context,
                                            const BERTConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_BERT_H
