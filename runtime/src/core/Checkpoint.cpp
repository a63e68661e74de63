//===- Checkpoint.cpp - training checkpoints in a directory ---------------===//

#include "anvil/runtime/Checkpoint.h"

#include "anvil/runtime/File.h"
#include "anvil/runtime/TokenData.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace anvil::rt {

static const char *const kModel = "anvil.model";
static const char *const kStep = "anvil.step";
static const char *const kSeed = "anvil.seed";
static const char *const kDataPosition = "anvil.data_position";
static const char *const kChecksum = "anvil.checksum";

/// A 64-bit checksum of the tensors' names and bytes, in order: four
/// independent splitmix64 lanes over 8-byte words (fast enough that
/// multi-gigabyte checkpoints pay well under a second), then folded.
static std::string checksum(std::span<const TensorRef> tensors) {
  uint64_t lanes[4] = {1, 2, 3, 4};
  auto absorb = [&](std::span<const std::byte> bytes) {
    size_t words = bytes.size() / 8, i = 0;
    for (; i + 4 <= words; i += 4)
      for (size_t l = 0; l < 4; ++l) {
        uint64_t w;
        std::memcpy(&w, bytes.data() + 8 * (i + l), 8);
        lanes[l] = mix64(lanes[l] ^ w);
      }
    uint64_t tail = bytes.size();
    for (size_t b = 8 * i; b < bytes.size(); ++b)
      tail = mix64(tail ^ static_cast<uint64_t>(bytes[b]));
    lanes[0] = mix64(lanes[0] ^ tail);
  };
  for (const TensorRef &t : tensors) {
    absorb(std::as_bytes(std::span(t.spec.name)));
    absorb(t.data);
  }
  uint64_t h = 0;
  for (uint64_t lane : lanes)
    h = mix64(h ^ lane);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

Expected<std::string> saveCheckpoint(const std::string &dir,
                                     const CheckpointInfo &info,
                                     std::span<const TensorRef> tensors) {
  if (::mkdir(dir.c_str(), 0755) == 0) {
    // Make the new directory itself durable in its parent.
    if (Status s = syncDirectory(parentDirectory(dir)); !s)
      return s;
  } else if (errno != EEXIST) {
    return Status::error(ErrorCode::IOError,
                         "cannot create checkpoint directory '" + dir +
                             "': " + std::strerror(errno));
  }
  char name[64];
  std::snprintf(name, sizeof name, "step_%08llu.safetensors",
                static_cast<unsigned long long>(info.step));
  std::string path = dir + "/" + name;
  std::map<std::string, std::string> meta = {
      {kModel, info.model},
      {kStep, std::to_string(info.step)},
      {kSeed, std::to_string(info.seed)},
      {kDataPosition, std::to_string(info.dataPosition)},
      {kChecksum, checksum(tensors)},
  };
  if (Status s = writeSafetensors(path, tensors, meta); !s)
    return s;
  std::string pointer = std::string(name) + "\n";
  std::span<const std::byte> pieces[] = {std::as_bytes(std::span(pointer))};
  if (Status s = writeFileAtomic(dir + "/latest", pieces); !s)
    return s;
  return path;
}

Expected<std::string> latestCheckpoint(const std::string &dir) {
  Expected<std::vector<std::byte>> bytes = readFile(dir + "/latest");
  if (!bytes)
    return bytes.status().code() == ErrorCode::NotFound
               ? Status::error(ErrorCode::NotFound,
                               "checkpoint directory '" + dir +
                                   "' has no 'latest' checkpoint")
               : bytes.status();
  std::string name(reinterpret_cast<const char *>(bytes->data()),
                   bytes->size());
  while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
    name.pop_back();
  if (name.empty() || name.find('/') != std::string::npos)
    return Status::error(ErrorCode::InvalidArgument,
                         "'" + dir + "/latest' must name a file in '" + dir +
                             "'");
  return dir + "/" + name;
}

static Expected<uint64_t> metaInteger(const SafetensorsFile &f,
                                      const char *key) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end())
    return Status::error(
        ErrorCode::InvalidArgument,
        "checkpoint '" + f.path() + "': metadata '" + key +
            "' is missing (not an Anvil training checkpoint?)");
  const std::string &v = it->second;
  char *end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || v[0] == '-')
    return Status::error(ErrorCode::InvalidArgument,
                         "checkpoint '" + f.path() + "': metadata '" + key +
                             "' is '" + v + "', not a non-negative integer");
  return static_cast<uint64_t>(n);
}

Expected<LoadedCheckpoint>
loadCheckpoint(const std::string &path, const std::string &model,
               std::span<const TensorSpec> expected) {
  Expected<SafetensorsFile> file = SafetensorsFile::read(path);
  if (!file)
    return file.status();
  LoadedCheckpoint c;
  auto it = file->metadata().find(kModel);
  if (it == file->metadata().end())
    return Status::error(
        ErrorCode::InvalidArgument,
        "checkpoint '" + path + "': metadata '" + kModel +
            "' is missing (not an Anvil training checkpoint?)");
  if (it->second != model)
    return Status::error(ErrorCode::InvalidArgument,
                         "checkpoint '" + path + "' is of model '" +
                             it->second + "', this run trains '" + model + "'");
  c.info.model = it->second;
  for (auto [key, field] :
       {std::pair{kStep, &c.info.step}, std::pair{kSeed, &c.info.seed},
        std::pair{kDataPosition, &c.info.dataPosition}}) {
    Expected<uint64_t> v = metaInteger(*file, key);
    if (!v)
      return v.status();
    *field = *v;
  }
  if (Status s = file->matches(expected); !s)
    return s;
  // Checkpoints written before the checksum existed have none.
  if (auto sum = file->metadata().find(kChecksum);
      sum != file->metadata().end() && sum->second != checksum(file->tensors()))
    return Status::error(ErrorCode::InvalidArgument,
                         "checkpoint '" + path +
                             "': the tensor data does not match the "
                             "checkpoint's checksum (the file is corrupted)");
  c.file = std::move(*file);
  return c;
}

} // namespace anvil::rt
