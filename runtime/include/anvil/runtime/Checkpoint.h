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

#include "anvil/runtime/Layout.h"
#include "anvil/runtime/Safetensors.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

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

// Sharded checkpoints. A sharded program's ranks each hold pieces of the
// model's tensors (see Layout.h): ZeRO's blocks of optimizer state,
// tensor-parallel parts of parameters, or whole tensors. Every rank writes
// its pieces to `step_<N>.rank<R>.safetensors` under the tensors' whole
// names; after a barrier, rank 0 writes `step_<N>.safetensors` (its own
// pieces, the scalars and the list of the other files) and then `latest`,
// so that `latest` only ever names a complete checkpoint. A piece that is
// not a whole tensor has metadata "anvil.piece.<name>" = its layout's
// JSON, e.g. {"shape": [64,192], "begin": 0, "end": 6144} or
// {"shape": [64,192], "split": {"dim": 1, "groups": 3, "parts": 2,
// "index": 0}}.
//
// A `CheckpointReader` assembles each whole tensor from the pieces of every
// file, so a checkpoint written by one mesh loads into another (ZeRO over 2
// ranks into 4, tensor parallelism over 2 ranks into one process), and an
// unsharded checkpoint is the special case of one file of whole tensors.

class Communicator;

/// A rank's piece of a tensor of the model.
struct TensorPiece {
  TensorSpec whole; ///< The tensor's name, dtype and whole shape.
  PieceLayout layout;
  std::span<const std::byte> data; ///< layout.elements() elements.
};

/// Writes this rank's `pieces` of checkpoint `info.step` into `dir` as
/// described above; a collective call of every rank of `world`. Returns
/// the path of the checkpoint (rank 0's file).
Expected<std::string> saveShardedCheckpoint(const std::string &dir,
                                            const CheckpointInfo &info,
                                            std::span<const TensorPiece> pieces,
                                            Communicator &world);

/// A checkpoint (sharded or not) read and checked against a model.
class CheckpointReader {
public:
  /// Reads `path` and the files it lists, checks each file's checksum,
  /// that the checkpoint was written for `model` and that it holds exactly
  /// the tensors of `expected` (whole specs); errors name the file and the
  /// first difference.
  static Expected<CheckpointReader> open(const std::string &path,
                                         const std::string &model,
                                         std::span<const TensorSpec> expected);

  const CheckpointInfo &info() const { return info_; }
  /// Copies the elements of whole tensor `name` that `layout` places in a
  /// piece into `out` (dtype size * layout.elements() bytes); an error
  /// names the tensor when the files do not hold every element of it.
  Status read(const std::string &name, const PieceLayout &layout,
              std::span<std::byte> out) const;

private:
  struct Piece {
    const TensorRef *tensor;
    PieceLayout layout;
  };
  CheckpointInfo info_;
  std::string path_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::pair<TensorSpec, std::vector<Piece>>> tensors_;
};

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_CHECKPOINT_H
