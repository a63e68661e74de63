//===- TokenData.h - llm.c token shards and deterministic batches -*- C++
//-*-===//
//
// Token shards use the llm.c / nanoGPT format: a header of 256 little-endian
// int32 (magic 20240520, version 1, token count, the rest zero), then the
// tokens as little-endian uint16. A dataset is the sorted `*.bin` shards of
// a directory whose name contains the split ("train" or "val").
//
// Batches are sampled deterministically: batch number `position` of a run
// with seed `seed` draws each row's start from a counter-based generator
// keyed by (seed, position, row), so the only data state a checkpoint needs
// is `position`, and a resumed run reads exactly the batches an
// uninterrupted one would have.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TOKENDATA_H
#define ANVIL_RUNTIME_TOKENDATA_H

#include "anvil/runtime/Status.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace anvil::rt {

inline constexpr int32_t kTokenShardMagic = 20240520;
inline constexpr int32_t kTokenShardVersion = 1;
inline constexpr size_t kTokenShardHeaderInts = 256;

/// Writes `tokens` as a shard at `path`, atomically.
Status writeTokenShard(const std::string &path,
                       std::span<const uint16_t> tokens);

/// Reads and validates one shard; errors name the file and what is wrong
/// (bad magic, unsupported version, a size that disagrees with the count).
Expected<std::vector<uint16_t>> readTokenShard(const std::string &path);

/// A split of a token dataset, held in memory.
class TokenDataset {
public:
  /// Loads the shards of `dir` whose file name contains `split` and ends in
  /// ".bin" (sorted by name). An error if there are none.
  static Expected<TokenDataset> load(const std::string &dir,
                                     const std::string &split);

  int64_t numTokens() const { return static_cast<int64_t>(tokens_.size()); }
  /// The largest token id present.
  uint16_t maxToken() const { return maxToken_; }

  /// Fills `inputs` and `targets` (each batch*seqLen, row-major) with batch
  /// number `position` of the run seeded `seed`; targets are the inputs
  /// shifted by one. An error if the data is shorter than seqLen + 1.
  Status sampleBatch(uint64_t seed, uint64_t position, int64_t batch,
                     int64_t seqLen, std::span<int32_t> inputs,
                     std::span<int32_t> targets) const;

private:
  std::vector<uint16_t> tokens_;
  uint16_t maxToken_ = 0;
};

/// Synthetic data for runs without --data: each row starts at a random
/// token (keyed by seed, position and row like sampleBatch) and continues
/// t[i+1] = (5 * t[i] + 3) mod vocab, a pattern a model can learn, so the
/// loss of a synthetic run falls. Targets are the inputs shifted by one.
Status sampleSyntheticBatch(uint64_t seed, uint64_t position, int64_t vocab,
                            int64_t batch, int64_t seqLen,
                            std::span<int32_t> inputs,
                            std::span<int32_t> targets);

/// SplitMix64 of `x`: the runtime's counter-based mixing function.
uint64_t mix64(uint64_t x);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_TOKENDATA_H
