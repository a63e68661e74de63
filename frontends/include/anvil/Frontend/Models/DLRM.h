//===- DLRM.h - DLRM with DCNv2 interactions (TorchRec) ----------*- C++
//-*-===//
//
// The recommender of MLPerf Training's DLRM-DCNv2 benchmark, as TorchRec's
// DLRM_DCN builds it: one sum-pooled embedding bag per categorical feature
// (multi-hot, a fixed number of ids per sample and feature), a bottom MLP
// on the dense features, a low-rank DCNv2 cross network over the
// concatenation of the bottom MLP's output and the pooled embeddings, a top
// MLP ending in one logit, and binary cross-entropy on click labels.
// Names are TorchRec's (`sparse_arch.embedding_bag_collection.
// embedding_bags.t_cat_0.weight`, `dense_arch.model._mlp.0._linear.weight`,
// `inter_arch.crossnet.W_kernels.0`, `over_arch.model.1.weight`). The
// forward graph is
//
//   func.func @forward(params...,
//                      dense_features (B, 13) f32,
//                      cat_0 (B, hot_0) i32, ..., cat_25 (B, hot_25) i32,
//                      labels (B) f32 in {0, 1}) -> loss
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_DLRM_H
#define ANVIL_FRONTEND_MODELS_DLRM_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace anvil::frontend {

struct DLRMConfig {
  std::string name;
  int64_t embeddingDim = 0;  ///< D, the width of every table.
  int64_t denseFeatures = 0; ///< Inputs of the bottom MLP.
  int64_t crossLayers = 0;   ///< DCNv2 layers.
  int64_t lowRank = 0;       ///< Rank of each cross layer's W V.
  int64_t batch = 0;
  std::vector<int64_t> tableRows; ///< Rows of each table (one per feature).
  std::vector<int64_t> multiHot;  ///< Ids per sample of each feature.
  std::vector<int64_t> bottomMLP; ///< Widths; the last must equal D.
  std::vector<int64_t> topMLP;    ///< Widths; the last must be 1.

  /// Width of the cross network: D (bottom MLP) + D per table.
  int64_t interactionWidth() const {
    return embeddingDim * (1 + static_cast<int64_t>(tableRows.size()));
  }
  void validate() const;
  /// Sets `field` from text (see fieldNames); throws BuildError.
  void set(const std::string &field, const std::string &value);
  static const std::vector<std::string> &fieldNames();
};

/// dlrm-tiny and dlrm-dcnv2 (MLPerf's: Criteo 1TB multi-hot, 26 tables of
/// width 128, bottom 512-256-128, three cross layers of rank 512, top
/// 1024-1024-512-256-1).
const std::vector<DLRMConfig> &dlrmConfigs();
const DLRMConfig *findDLRMConfig(const std::string &name);

/// Parameters: the tables, the two MLPs' weights and biases, and per cross
/// layer W (I, r), V (r, I) and a bias (I), I the interaction width.
int64_t dlrmParameterCount(const DLRMConfig &config);
/// Training FLOPs of one step: 6 per MLP or cross-kernel weight per sample
/// (embedding lookups and elementwise work not counted).
int64_t dlrmFlopsPerStep(const DLRMConfig &config);

mlir::OwningOpRef<mlir::ModuleOp> buildDLRM(mlir::MLIRContext &context,
                                            const DLRMConfig &config);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_DLRM_H
