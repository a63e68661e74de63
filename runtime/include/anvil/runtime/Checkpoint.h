//===- Checkpoint.h - training checkpoints in a directory ---------*- C++
//-*-===//
//
// A checkpoint directory holds `step_<N>.safetensors` files and a `latest`
// file naming the newest one. Each checkpoint stores every tensor of the
// training state under its model name (parameters, optimizer moments, ...)
// and, in the safetensors metadata, the model fingerprint, the step, the
// seed, the data position and a checksum of the tensors ("anvil.*" keys).
//
// Saving writes the new step file atomically, then replaces `latest`
// atomically; a failure at any point leaves the previous checkpoint and the
// `latest` pointer as they were. Loading checks the fingerprint and every
// tensor against the model before anything is copied.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_CHECKPOINT_H
#define ANVIL_RUNTIME_CHECKPOINT_H

#include "anvil/runtime/Safetensors.h"

#include <cstdint>
#include <span>
#include <string>

namespace anvil::rt {

/// The scalars of a training state.
struct CheckpointInfo {
  std::string model; ///< Fingerprint of the model (name and shapes).
  uint64_t step = 0; ///< Steps completed.
  uint64_t seed = 0; ///< The run's seed (parameter init, dropout, data).
  uint64_t dataPosition = 0; ///< Batches consumed (see TokenData.h).
};

/// Writes `dir/step_<step>.safetensors` and points `dir/latest` at it;
/// returns the checkpoint's path. `dir` is created if missing.
Expected<std::string> saveCheckpoint(const std::string &dir,
                                     const CheckpointInfo &info,
                                     std::span<const TensorRef> tensors);

/// The path `dir/latest` names; NotFound if the directory has none.
Expected<std::string> latestCheckpoint(const std::string &dir);

/// A checkpoint read and checked against a model.
struct LoadedCheckpoint {
  CheckpointInfo info;
  SafetensorsFile file;
};

/// Reads `path` and checks that it was written for `model`, holds exactly
/// `expected` and matches its checksum; errors name the file and the first
/// difference.
Expected<LoadedCheckpoint> loadCheckpoint(const std::string &path,
                                          const std::string &model,
                                          std::span<const TensorSpec> expected);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_CHECKPOINT_H
