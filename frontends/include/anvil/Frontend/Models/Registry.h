//===- Registry.h - the models anvil-compile can build ------------*- C++
//-*-===//
//
// One entry per model family with its named configs and overridable
// fields. Unknown names fail with the list of valid ones.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_REGISTRY_H
#define ANVIL_FRONTEND_MODELS_REGISTRY_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <utility>
#include <vector>

namespace anvil::frontend {

struct ModelInfo {
  std::string name;
  std::string description;
  std::vector<std::string> configs;
  std::vector<std::string> fields; ///< Overridable with --set.
  /// The optimizer the reference trains with, anvil-compile's default for
  /// this family (LAMB for BERT, Adagrad for DLRM, else AdamW).
  std::string optimizer = "adamw";
  /// Tensor parallelism in the Megatron layout: the parameters whose names
  /// end with `suffix` split dimension `dim` (in `groups`: a fused q/k/v
  /// weight keeps each rank's heads of q, k and v); the rest are
  /// replicated. Empty: the family has no tensor-parallel layout yet.
  struct TensorParallelRule {
    std::string suffix;
    int64_t dim = 0;
    int64_t groups = 1;
  };
  std::vector<TensorParallelRule> tensorParallel;
};

/// What `anvil-compile --report` prints.
struct ModelReport {
  std::string model, config;
  int64_t parameters = 0;       ///< Elements of all parameters.
  int64_t parameterTensors = 0; ///< Number of parameter arguments.
  int64_t flopsPerStep = 0;     ///< Analytic training FLOPs of one step.
  int64_t batch = 0, seqLen = 0, tokensPerStep = 0;
  int64_t vocab = 0; ///< Rows of the token embedding (padded vocabulary).
};

struct BuiltModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  ModelReport report;
};

const std::vector<ModelInfo> &listModels();
/// The family named `name`, or nullptr.
const ModelInfo *findModel(const std::string &name);

/// Marks the parameters of `module`'s @forward that `model`'s
/// tensor-parallel layout splits (`anvil.sharding = {split_axis = "tp",
/// split_dim, split_groups}`), the input of anvil-partition. Returns false
/// when the family has no layout.
bool markTensorParallelLayout(mlir::ModuleOp module, const ModelInfo &model);

/// Builds `model` in `config` with `overrides` (field, value) applied.
/// Throws BuildError for unknown names, bad fields and shape errors.
BuiltModel
buildModel(mlir::MLIRContext &context, const std::string &model,
           const std::string &config,
           const std::vector<std::pair<std::string, std::string>> &overrides);

} // namespace anvil::frontend

#endif // ANVIL_FRONTEND_MODELS_REGISTRY_H
