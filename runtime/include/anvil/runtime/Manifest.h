//===- Manifest.h - the executable's description of itself --------*- C++
//-*-===//
//
// Every training executable embeds a JSON manifest (DESIGN.md, contract 3)
// that lists each buffer of @train_step with its name, shape, dtype and
// role, the initializer of each piece of state, and the model's FLOPs per
// step and planned memory. The runtime reads it to allocate and initialize
// state, to check and name checkpoint tensors, and to report GFLOP/s.
//
//   {"format": "anvil.manifest", "version": 1, "model": "gpt-tiny",
//    "flops_per_step": 1.2e9, "planned_bytes": 4194304,
//    "buffers": [
//      {"name": "wte", "shape": [256, 64], "dtype": "f32", "role": "param",
//       "index": 0, "init": {"kind": "normal", "args": {"std": 0.02}}},
//      {"name": "wte.adam_m", ..., "role": "state",
//       "init": {"kind": "zeros"}},
//      {"name": "tokens", "shape": [8, 64], "dtype": "i32",
//       "role": "input"},
//      {"name": "loss", "shape": [], "dtype": "f32", "role": "loss"}]}
//
// Roles: param and state (the training state, checkpointed, initialized
// from "init" with stream "index" = the @train_step argument position),
// input (a batch input), loss and metric (results, "index" = the result
// position). Optional fields: "result" (the @train_step result that
// carries a state buffer's next value; absent for frozen parameters),
// "eval_index" (the buffer's argument position in the eval function) and
// "range" (an integer input's values lie in [0, range): token ids, class
// labels) and "sharding": the buffer is this rank's part of a whole tensor,
// {"global_shape": [...], "flat_axis": "dp"} (a ZeRO block),
// {"global_shape": [...], "split_axis": "tp", "split_dim": 1,
// "split_groups": 3} (a tensor-parallel part), or both keys (ZeRO's block
// of a tensor-parallel part); see Sharding.
// "train_step" {"args", "results"} and "eval_step" {"args", "results":
// [{"shape", "dtype"}...]} give the entry points' arities; a module compiled
// for evaluation only has "train_step": null. CUDA executables say whether
// their training step can run as a CUDA graph: "step_graph":
// {"capturable": true}, or {"capturable": false, "why": "..."} (absent: not
// capturable). Parse errors name the JSON path:
// "manifest: buffers[3].shape[1]: expected a non-negative integer".
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_MANIFEST_H
#define ANVIL_RUNTIME_MANIFEST_H

#include "anvil/runtime/Init.h"
#include "anvil/runtime/Layout.h"
#include "anvil/runtime/Safetensors.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::rt {

enum class BufferRole { Param, State, Input, Loss, Metric };

/// How a buffer of a sharded program relates to the tensor of the whole
/// model it is a part of (see Layout.h): a tensor-parallel part, ZeRO's
/// block of the whole tensor, or ZeRO's block of a tensor-parallel part.
struct Sharding {
  std::vector<int64_t> globalShape; ///< The whole tensor's shape.
  /// Tensor parallelism (non-empty axis): dimension `dim` viewed as
  /// [groups, size / groups], the inner part cut into one block per rank
  /// of `splitAxis`; the rank holds its block of every group.
  std::string splitAxis;
  int64_t dim = 0, groups = 1;
  /// ZeRO (non-empty axis): that part (or the whole tensor) flattened,
  /// zero-padded to a multiple of `flatAxis`'s n ranks and cut into n
  /// equal blocks; the buffer (1-D) is the rank's block.
  std::string flatAxis;
};

struct BufferInfo {
  TensorSpec spec;
  BufferRole role = BufferRole::Param;
  int64_t index = 0;                ///< Argument position in @train_step.
  std::optional<InitSpec> init;     ///< For param and state.
  std::optional<int64_t> result;    ///< Train-step result with its update.
  std::optional<int64_t> evalIndex; ///< Argument position in eval_step.
  std::optional<int64_t> range;     ///< Integer inputs lie in [0, range),
  std::optional<int64_t> ignore;    ///< or equal this (an ignored label).
  std::optional<Sharding> sharding; ///< Absent: the whole tensor.

  /// The whole tensor's spec (the buffer's own when it is not sharded):
  /// the name and shape checkpoints use.
  TensorSpec globalSpec() const;
  /// The elements of the whole tensor this buffer holds on the rank at
  /// `coordinates` of `mesh` (the whole tensor when it is not sharded). A
  /// flat block's padding lies past the layout's elements.
  PieceLayout layout(const std::vector<std::pair<std::string, int64_t>> &mesh,
                     std::span<const int64_t> coordinates) const;
};

/// The arity of an exported step function.
struct EntryInfo {
  int64_t args = 0;
  int64_t results = 0;
};

struct Manifest {
  std::string model;
  double flopsPerStep = 0;
  int64_t plannedBytes = 0;
  /// The device mesh of a sharded program ({"dp", 2}); empty: one process.
  std::vector<std::pair<std::string, int64_t>> mesh;
  /// Ranks along `axis` (1 when the mesh does not have it).
  int64_t meshAxis(const std::string &axis) const {
    for (const auto &[name, ranks] : mesh)
      if (name == axis)
        return ranks;
    return 1;
  }
  std::vector<BufferInfo> buffers;
  std::optional<EntryInfo> trainStep; ///< Absent for eval-only modules.
  /// Whether the training step's host code only queues device work
  /// (anvil_rt_run_step's `capturable`), and why not.
  bool hasStepGraph = false; ///< "step_graph" given: a CUDA executable.
  bool stepGraphCapturable = false;
  std::string stepGraphBlocker;
  EntryInfo evalStep;
  std::vector<TensorSpec> evalResults; ///< Named result<i>.

  static Expected<Manifest> parse(std::string_view json);

  /// The checkpointed tensors (params and state) as whole tensors
  /// (globalSpec), in manifest order.
  std::vector<TensorSpec> stateSpecs() const;
  /// "<model>:<16 hex digits>": the model name and a hash of every state
  /// tensor's name, dtype and whole shape; checkpoints carry it (and so
  /// load into any mesh of the same model).
  std::string fingerprint() const;
  /// The buffer named `name`, or nullptr.
  const BufferInfo *find(const std::string &name) const;
};

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_MANIFEST_H
