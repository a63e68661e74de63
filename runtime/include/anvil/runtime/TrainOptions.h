//===- TrainOptions.h - the training executable's command line ----*- C++
//-*-===//
//
//   ./gpt.train --data DIR --steps N --seed S --ckpt-dir D --ckpt-every K
//               --resume --eval-every K --log metrics.jsonl
//
// Every generated executable takes these options; `--help` prints
// `trainUsage()`. Values are checked when parsed, and errors name the
// option and the bad value.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TRAINOPTIONS_H
#define ANVIL_RUNTIME_TRAINOPTIONS_H

#include "anvil/runtime/Status.h"

#include <cstdint>
#include <span>
#include <string>

namespace anvil::rt {

struct TrainOptions {
  std::string data;           ///< Directory of token shards; empty: synthetic.
  int64_t steps = 100;        ///< Total steps of the run (not of this launch).
  uint64_t seed = 0;          ///< Initialization, dropout and data order.
  std::string ckptDir;        ///< Where checkpoints go; empty: none.
  int64_t ckptEvery = 0;      ///< Steps between checkpoints (0: only at end).
  bool resume = false;        ///< Continue from ckptDir/latest.
  int64_t evalEvery = 0;      ///< Steps between evaluations (0: never).
  int64_t evalBatches = 8;    ///< Batches per evaluation.
  int64_t logEvery = 10;      ///< Steps between progress lines.
  std::string log;            ///< JSON Lines metrics file; empty: none.
  int threads = 0;            ///< CPU threads; 0: all cores.
  std::string batchDir;       ///< Fixed inputs DIR/NAME.npy for every step.
  std::string evalInputs;     ///< Run eval once on DIR/NAME.npy, then exit.
  std::string evalOutputs;    ///< Where that run writes result<i>.npy.
  bool printManifest = false; ///< Print the embedded manifest and exit.
  bool help = false;          ///< --help was given.
};

/// Parses `args` (without the program name).
Expected<TrainOptions> parseTrainOptions(std::span<const char *const> args);

/// The --help text for an executable named `program`.
std::string trainUsage(const std::string &program);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_TRAINOPTIONS_H
