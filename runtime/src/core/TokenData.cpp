//===- TokenData.cpp - llm.c token shards and deterministic batches -------===//

#include "anvil/runtime/TokenData.h"

#include "anvil/runtime/Endian.h"
#include "anvil/runtime/File.h"

#include <algorithm>
#include <cstring>
#include <dirent.h>

namespace anvil::rt {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void putLE32(std::byte *p, int32_t v) {
  storeLE(p, static_cast<uint32_t>(v), 4);
}
static int32_t getLE32(const std::byte *p) {
  return static_cast<int32_t>(static_cast<uint32_t>(loadLE(p, 4)));
}

Status writeTokenShard(const std::string &path,
                       std::span<const uint16_t> tokens) {
  if (tokens.size() > INT32_MAX)
    return Status::error(ErrorCode::InvalidArgument,
                         "a token shard holds at most 2^31-1 tokens");
  std::vector<std::byte> header(kTokenShardHeaderInts * 4);
  putLE32(&header[0], kTokenShardMagic);
  putLE32(&header[4], kTokenShardVersion);
  putLE32(&header[8], static_cast<int32_t>(tokens.size()));
  std::vector<std::byte> body(tokens.size() * 2);
  for (size_t i = 0; i < tokens.size(); ++i) {
    storeLE(&body[2 * i], tokens[i], 2);
  }
  std::span<const std::byte> pieces[] = {header, body};
  return writeFileAtomic(path, pieces);
}

Expected<std::vector<uint16_t>> readTokenShard(const std::string &path) {
  auto err = [&](const std::string &msg) {
    return Status::error(ErrorCode::InvalidArgument,
                         "token shard '" + path + "': " + msg);
  };
  Expected<std::vector<std::byte>> bytes = readFile(path);
  if (!bytes)
    return bytes.status();
  const std::vector<std::byte> &b = *bytes;
  size_t headerBytes = kTokenShardHeaderInts * 4;
  if (b.size() < headerBytes)
    return err("not a token shard: " + std::to_string(b.size()) +
               " bytes, shorter than the 1024-byte header");
  int32_t magic = getLE32(&b[0]);
  if (magic != kTokenShardMagic)
    return err("not a token shard: magic " + std::to_string(magic) +
               ", expected " + std::to_string(kTokenShardMagic) +
               " (llm.c format; make shards with anvil-make-shard)");
  int32_t version = getLE32(&b[4]);
  if (version != kTokenShardVersion)
    return err("version " + std::to_string(version) +
               " is not supported (only uint16 tokens, version 1)");
  int32_t count = getLE32(&b[8]);
  if (count < 0)
    return err("corrupt header: negative token count " + std::to_string(count));
  uint64_t want = headerBytes + 2ull * static_cast<uint32_t>(count);
  if (b.size() != want)
    return err("the header says " + std::to_string(count) +
               " tokens, which needs " + std::to_string(want) +
               " bytes; the file has " + std::to_string(b.size()) +
               (b.size() < want ? " (truncated)" : ""));
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<uint16_t>(loadLE(&b[headerBytes + 2 * i], 2));
  return tokens;
}

Expected<TokenDataset> TokenDataset::load(const std::string &dir,
                                          const std::string &split) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return Status::error(ErrorCode::NotFound, "data directory '" + dir +
                                                  "': " + std::strerror(errno));
  std::vector<std::string> names;
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.ends_with(".bin") &&
        name.find(split) != std::string::npos)
      names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  if (names.empty())
    return Status::error(ErrorCode::NotFound, "data directory '" + dir +
                                                  "' has no '*" + split +
                                                  "*.bin' token shards");
  TokenDataset data;
  for (const std::string &name : names) {
    Expected<std::vector<uint16_t>> shard = readTokenShard(dir + "/" + name);
    if (!shard)
      return shard.status();
    data.tokens_.insert(data.tokens_.end(), shard->begin(), shard->end());
  }
  for (uint16_t t : data.tokens_)
    data.maxToken_ = std::max(data.maxToken_, t);
  return data;
}

Status TokenDataset::sampleBatch(uint64_t seed, uint64_t position,
                                 int64_t batch, int64_t seqLen,
                                 std::span<int32_t> inputs,
                                 std::span<int32_t> targets) const {
  if (batch <= 0 || seqLen <= 0 || seqLen >= INT32_MAX ||
      batch > INT64_MAX / seqLen ||
      inputs.size() != static_cast<size_t>(batch * seqLen) ||
      targets.size() != inputs.size())
    return Status::error(ErrorCode::InvalidArgument,
                         "sampleBatch: buffers must hold batch*seqLen tokens");
  if (numTokens() < seqLen + 1)
    return Status::error(ErrorCode::InvalidArgument,
                         "the dataset has " + std::to_string(numTokens()) +
                             " tokens, fewer than one sequence of " +
                             std::to_string(seqLen + 1));
  uint64_t starts = static_cast<uint64_t>(numTokens() - seqLen);
  uint64_t key = mix64(seed ^ mix64(position));
  for (int64_t r = 0; r < batch; ++r) {
    uint64_t start = mix64(key + static_cast<uint64_t>(r)) % starts;
    for (int64_t t = 0; t < seqLen; ++t) {
      inputs[r * seqLen + t] = tokens_[start + t];
      targets[r * seqLen + t] = tokens_[start + t + 1];
    }
  }
  return Status::ok();
}

Status sampleSyntheticBatch(uint64_t seed, uint64_t position, int64_t vocab,
                            int64_t batch, int64_t seqLen,
                            std::span<int32_t> inputs,
                            std::span<int32_t> targets) {
  if (vocab <= 0 || vocab > INT32_MAX)
    return Status::error(ErrorCode::InvalidArgument,
                         "synthetic data needs a vocabulary of 1 to 2^31-1 "
                         "tokens, got " +
                             std::to_string(vocab));
  if (batch <= 0 || seqLen <= 0 || batch > INT64_MAX / seqLen ||
      inputs.size() != static_cast<size_t>(batch * seqLen) ||
      targets.size() != inputs.size())
    return Status::error(ErrorCode::InvalidArgument,
                         "sampleSyntheticBatch: buffers must hold "
                         "batch*seqLen tokens");
  uint64_t key = mix64(seed ^ mix64(position));
  uint64_t v = static_cast<uint64_t>(vocab);
  for (int64_t r = 0; r < batch; ++r) {
    uint64_t t = mix64(key + static_cast<uint64_t>(r)) % v;
    for (int64_t i = 0; i < seqLen; ++i) {
      inputs[r * seqLen + i] = static_cast<int32_t>(t);
      t = (5 * t + 3) % v;
      targets[r * seqLen + i] = static_cast<int32_t>(t);
    }
  }
  return Status::ok();
}

} // namespace anvil::rt
