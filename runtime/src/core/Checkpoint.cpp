//===- Checkpoint.cpp - training checkpoints in a directory ---------------===//

#include "anvil/runtime/Checkpoint.h"

#include "anvil/runtime/Dist.h"
#include "anvil/runtime/File.h"
#include "anvil/runtime/Json.h"
#include "anvil/runtime/TokenData.h"

#include <algorithm>
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
static const char *const kShardFiles = "anvil.shard_files";
static const char *const kPiece = "anvil.piece.";

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

static Status makeDirectory(const std::string &dir) {
  if (::mkdir(dir.c_str(), 0755) == 0)
    // Make the new directory itself durable in its parent.
    return syncDirectory(parentDirectory(dir));
  if (errno != EEXIST)
    return Status::error(ErrorCode::IOError,
                         "cannot create checkpoint directory '" + dir +
                             "': " + std::strerror(errno));
  return Status::ok();
}

/// "step_00000010.safetensors", or "step_00000010.rank00001.safetensors"
/// for the file of rank `rank` > 0 of a sharded checkpoint.
static std::string stepFile(uint64_t step, int rank = 0) {
  char name[80];
  if (rank == 0)
    std::snprintf(name, sizeof name, "step_%08llu.safetensors",
                  static_cast<unsigned long long>(step));
  else
    std::snprintf(name, sizeof name, "step_%08llu.rank%05d.safetensors",
                  static_cast<unsigned long long>(step), rank);
  return name;
}

static std::map<std::string, std::string>
stepMetadata(const CheckpointInfo &info, std::span<const TensorRef> tensors) {
  return {
      {kModel, info.model},
      {kStep, std::to_string(info.step)},
      {kSeed, std::to_string(info.seed)},
      {kDataPosition, std::to_string(info.dataPosition)},
      {kChecksum, checksum(tensors)},
  };
}

static Status pointLatestAt(const std::string &dir, const std::string &name) {
  std::string pointer = name + "\n";
  std::span<const std::byte> bytes[] = {std::as_bytes(std::span(pointer))};
  return writeFileAtomic(dir + "/latest", bytes);
}

Expected<std::string> saveCheckpoint(const std::string &dir,
                                     const CheckpointInfo &info,
                                     std::span<const TensorRef> tensors) {
  if (Status s = makeDirectory(dir); !s)
    return s;
  std::string name = stepFile(info.step);
  std::string path = dir + "/" + name;
  if (Status s = writeSafetensors(path, tensors, stepMetadata(info, tensors));
      !s)
    return s;
  if (Status s = pointLatestAt(dir, name); !s)
    return s;
  return path;
}

Expected<std::string> saveShardedCheckpoint(const std::string &dir,
                                            const CheckpointInfo &info,
                                            std::span<const TensorPiece> pieces,
                                            Communicator &world) {
  const int rank = world.rank();
  if (rank == 0)
    if (Status s = makeDirectory(dir); !s)
      return s;
  // The other ranks write into the directory rank 0 made.
  if (Status s = world.barrier(); !s)
    return s;
  std::vector<TensorRef> tensors;
  std::map<std::string, std::string> pieceMeta;
  for (const TensorPiece &p : pieces) {
    if (p.layout.kind == PieceLayout::Kind::Whole) {
      tensors.push_back({p.whole, p.data});
      continue;
    }
    std::vector<int64_t> shape = {p.layout.elements()};
    if (p.layout.kind == PieceLayout::Kind::Split && !p.layout.blockOfPart) {
      shape = p.layout.shape;
      shape[static_cast<size_t>(p.layout.dim)] /= p.layout.parts;
    }
    tensors.push_back({{p.whole.name, p.whole.dtype, shape}, p.data});
    pieceMeta[kPiece + p.whole.name] = p.layout.toJson().dump();
  }
  std::map<std::string, std::string> meta = stepMetadata(info, tensors);
  meta.insert(pieceMeta.begin(), pieceMeta.end());
  std::string name = stepFile(info.step, rank);
  if (rank != 0)
    if (Status s = writeSafetensors(dir + "/" + name, tensors, meta); !s)
      return s;
  // Rank 0 names the checkpoint once every other file is written.
  if (Status s = world.barrier(); !s)
    return s;
  if (rank == 0) {
    JsonValue files = JsonValue::array();
    for (int r = 1; r < world.size(); ++r)
      files.push(JsonValue::string(stepFile(info.step, r)));
    meta[kShardFiles] = files.dump();
    if (Status s = writeSafetensors(dir + "/" + name, tensors, meta); !s)
      return s;
    if (Status s = pointLatestAt(dir, name); !s)
      return s;
  }
  return dir + "/" + stepFile(info.step);
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

Expected<CheckpointReader>
CheckpointReader::open(const std::string &path, const std::string &model,
                       std::span<const TensorSpec> expected) {
  auto err = [&](const std::string &file, const std::string &msg) {
    return Status::error(ErrorCode::InvalidArgument,
                         "checkpoint '" + file + "': " + msg);
  };
  CheckpointReader r;
  r.path_ = path;
  Expected<SafetensorsFile> main = SafetensorsFile::read(path);
  if (!main)
    return main.status();
  std::vector<std::string> others;
  if (auto it = main->metadata().find(kShardFiles);
      it != main->metadata().end()) {
    Expected<JsonValue> list = parseJson(it->second);
    if (!list || !list->isArray())
      return err(path, std::string("metadata '") + kShardFiles +
                           "' is not a list of file names");
    for (const JsonValue &f : list->items())
      if (!f.isString() || f.asString().empty() ||
          f.asString().find('/') != std::string::npos)
        return err(path, std::string("metadata '") + kShardFiles +
                             "' must name files beside it");
      else
        others.push_back(parentDirectory(path) + "/" + f.asString());
  }
  // The tensors' pieces point into the files: no reallocation after this.
  r.files_.reserve(1 + others.size());
  r.files_.push_back(std::move(*main));
  for (const std::string &other : others) {
    Expected<SafetensorsFile> f = SafetensorsFile::read(other);
    if (!f)
      return f.status().withContext("a shard of checkpoint '" + path + "'");
    r.files_.push_back(std::move(*f));
  }
  for (SafetensorsFile &f : r.files_) {
    auto it = f.metadata().find(kModel);
    if (it == f.metadata().end())
      return err(f.path(), std::string("metadata '") + kModel +
                               "' is missing (not an Anvil training "
                               "checkpoint?)");
    if (it->second != model)
      return Status::error(ErrorCode::InvalidArgument,
                           "checkpoint '" + f.path() + "' is of model '" +
                               it->second + "', this run trains '" + model +
                               "'");
    CheckpointInfo info;
    info.model = it->second;
    for (auto [key, field] :
         {std::pair{kStep, &info.step}, std::pair{kSeed, &info.seed},
          std::pair{kDataPosition, &info.dataPosition}}) {
      Expected<uint64_t> v = metaInteger(f, key);
      if (!v)
        return v.status();
      *field = *v;
    }
    if (&f == &r.files_.front())
      r.info_ = info;
    else if (info.step != r.info_.step || info.seed != r.info_.seed)
      return err(f.path(), "it is of step " + std::to_string(info.step) +
                               ", '" + path + "' of step " +
                               std::to_string(r.info_.step));
    // Checkpoints written before the checksum existed have none.
    if (auto sum = f.metadata().find(kChecksum);
        sum != f.metadata().end() && sum->second != checksum(f.tensors()))
      return err(f.path(), "the tensor data does not match the checkpoint's "
                           "checksum (the file is corrupted)");
    for (const TensorRef &t : f.tensors()) {
      Expected<int64_t> n = numElements(t.spec.shape);
      if (!n)
        return n.status();
      PieceLayout layout = PieceLayout::whole(t.spec.shape);
      if (auto m = f.metadata().find(kPiece + t.spec.name);
          m != f.metadata().end()) {
        Expected<JsonValue> j = parseJson(m->second);
        Expected<PieceLayout> l = j ? PieceLayout::fromJson(*j, *n)
                                    : Expected<PieceLayout>(j.status());
        if (!l)
          return err(f.path(),
                     "metadata '" + m->first + "': " + l.status().message());
        layout = std::move(*l);
      }
      TensorSpec whole{t.spec.name, t.spec.dtype, layout.shape};
      auto [entry, fresh] =
          r.tensors_.try_emplace(t.spec.name, whole, std::vector<Piece>{});
      if (!fresh && (entry->second.first.shape != whole.shape ||
                     entry->second.first.dtype != whole.dtype))
        return err(f.path(), "tensor '" + t.spec.name + "' is " +
                                 formatShape(whole.shape) +
                                 ", another file of the checkpoint has it as " +
                                 formatShape(entry->second.first.shape));
      entry->second.second.push_back({&t, std::move(layout)});
    }
  }
  for (const TensorSpec &want : expected) {
    auto it = r.tensors_.find(want.name);
    if (it == r.tensors_.end())
      return err(path, "tensor '" + want.name +
                           "' is missing (a checkpoint of another model?)");
    const TensorSpec &have = it->second.first;
    if (have.shape != want.shape)
      return err(path, "tensor '" + want.name + "' has shape " +
                           formatShape(have.shape) + ", the model expects " +
                           formatShape(want.shape));
    if (have.dtype != want.dtype)
      return err(path, "tensor '" + want.name + "' has dtype " +
                           std::string(dtypeSafetensorsName(have.dtype)) +
                           ", the model expects " +
                           std::string(dtypeSafetensorsName(want.dtype)));
  }
  if (r.tensors_.size() != expected.size())
    for (const auto &[name, entry] : r.tensors_)
      if (std::none_of(expected.begin(), expected.end(),
                       [&](const TensorSpec &w) { return w.name == name; }))
        return err(path, "tensor '" + name +
                             "' is not part of the model (a checkpoint of "
                             "another model?)");
  return r;
}

Status CheckpointReader::read(const std::string &name,
                              const PieceLayout &layout,
                              std::span<std::byte> out) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return Status::error(ErrorCode::NotFound, "checkpoint '" + path_ +
                                                  "' has no tensor '" + name +
                                                  "'");
  const TensorSpec &spec = it->second.first;
  const size_t size = dtypeSize(spec.dtype);
  Expected<int64_t> n = numElements(spec.shape);
  if (!n)
    return n.status();
  if (layout.shape != spec.shape ||
      out.size() != static_cast<size_t>(layout.elements()) * size)
    return Status::error(ErrorCode::InvalidArgument,
                         "reading a piece of " + formatShape(layout.shape) +
                             " into " + std::to_string(out.size()) +
                             " bytes from '" + name + "' of " +
                             formatShape(spec.shape));
  // The whole tensor from every file's pieces (each element once), then
  // the requested piece of it.
  std::vector<std::byte> whole(static_cast<size_t>(*n) * size);
  std::vector<uint8_t> seen(static_cast<size_t>(*n), 0);
  int64_t covered = 0, twice = 0;
  for (const Piece &p : it->second.second) {
    p.layout.insert(p.tensor->data, whole, size);
    p.layout.forEachRun([&](int64_t at, int64_t, int64_t count) {
      for (int64_t i = at; i < at + count; ++i) {
        (seen[static_cast<size_t>(i)] ? twice : covered) += 1;
        seen[static_cast<size_t>(i)] = 1;
      }
    });
  }
  if (covered != *n || twice != 0)
    return Status::error(
        ErrorCode::InvalidArgument,
        "checkpoint '" + path_ + "' holds " + std::to_string(covered) +
            " of the " + std::to_string(*n) + " elements of '" + name + "'" +
            (twice
                 ? " (and " + std::to_string(twice) + " of them more than once)"
                 : std::string(" (a shard file is "
                               "missing?)")));
  layout.extract(whole, out, size);
  return Status::ok();
}

} // namespace anvil::rt
