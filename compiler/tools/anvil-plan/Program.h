//===- Program.h - what anvil-plan reads off the compiled program -*- C++
//-*-===//
//
// The planner's view of one rank's training step for one micro-batch: the
// zoo model built, partitioned over tensor parallelism (with sequence
// parallelism), put through anvil-fp8 and differentiated by the compiler,
// then read op by op through the cost interface. Nothing here is a formula
// per model.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TOOLS_ANVIL_PLAN_PROGRAM_H
#define ANVIL_TOOLS_ANVIL_PLAN_PROGRAM_H

#include "mlir/IR/MLIRContext.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace anvil::plan {

/// A matrix product of the step: `batch` products of (m x k) by (k x n).
struct Gemm {
  double m = 0, n = 0, k = 0, batch = 1;
  bool fp8 = false;     ///< Both operands come from FP8 quantization.
  bool forward = false; ///< Part of the forward pass (recomputed by full).
};

/// A collective over the tensor-parallel axis, in bytes of the whole
/// (gathered, or reduced) tensor at 2 bytes per element.
struct Collective {
  enum Kind { AllReduce, AllGather, ReduceScatter } kind;
  double bytes = 0;
};

/// One rank's step for one micro-batch, as the compiler builds it.
struct ProgramFacts {
  std::vector<Gemm> gemms;
  std::vector<Collective> tpCollectives;
  /// Fused attention: the forward's FLOPs (the cost interface's, causal
  /// pairs only) and the keys' and values' bytes (2 per element).
  double attentionFlops = 0, keyValueBytes = 0;
  /// Memory-bound ops (everything but GEMMs, attention and collectives):
  /// bytes moved (cost interface) at 2 bytes per element, split by pass.
  double forwardBytes = 0, backwardBytes = 0;
  double parameters = 0, trainableParameters = 0; ///< Elements.
  /// Parameters read only through FP8 quantization: kept in FP8 (all, and
  /// the trainable ones).
  double fp8OnlyParameters = 0, fp8OnlyTrainable = 0;
  /// Forward values the backward pass reads (2 bytes per element, 1 for
  /// FP8), and the layers' inputs (what full recomputation keeps).
  double activationBytes = 0, layerInputBytes = 0;
  /// Kept values computed from the parameters alone (FP8 weight copies).
  double weightCopyBytes = 0;
  int64_t layers = 0;
};

struct ProgramRequest {
  std::string model, config;
  std::vector<std::pair<std::string, std::string>> overrides;
  int64_t layers = 1; ///< Built with this many layers.
  int64_t microBatch = 1, sequence = 0;
  int64_t tensorParallel = 1;
  bool sequenceParallel = true;
  bool fp8 = false;
};

/// Builds and reads the program; an error message on failure.
std::optional<ProgramFacts> readProgram(mlir::MLIRContext &context,
                                        const ProgramRequest &request,
                                        std::string &error);

/// The whole model: its blocks (numbered modules of its parameters), its
/// parameters, and the training FLOPs of one sequence of `sequence` tokens
/// (the frontend's analytic count, the numerator of MFU).
struct ModelShape {
  int64_t layers = 0;
  double parameters = 0;
  double flopsPerSequence = 0;
};
std::optional<ModelShape> readModelShape(
    mlir::MLIRContext &context, const std::string &model,
    const std::string &config,
    const std::vector<std::pair<std::string, std::string>> &overrides,
    int64_t sequence, std::string &error);

} // namespace anvil::plan

#endif // ANVIL_TOOLS_ANVIL_PLAN_PROGRAM_H
