//===- Inspect.cpp - anvil-inspect: describe checkpoints, arrays, shards --===//
//
// Validates a file the runtime reads and prints what it holds: the tensors
// (dtype, shape, sum) and metadata of a safetensors checkpoint, the dtype,
// shape and sum of a .npy array, or the token count of an llm.c shard. Any
// problem is reported as the runtime would report it, with exit code 1.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Endian.h"
#include "anvil/runtime/Npy.h"
#include "anvil/runtime/Safetensors.h"
#include "anvil/runtime/TokenData.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

using namespace anvil::rt;

/// Sum of the elements as double, for the dtypes that have a plain C++
/// type; nullopt for the others (f16, bf16, f8).
static std::optional<double> sum(DType dtype, std::span<const std::byte> b) {
  auto add = [&]<typename T>(T) {
    double s = 0;
    for (size_t i = 0; i + sizeof(T) <= b.size(); i += sizeof(T)) {
      T v;
      std::memcpy(&v, b.data() + i, sizeof(T));
      s += static_cast<double>(v);
    }
    return s;
  };
  switch (dtype) {
  case DType::F64:
    return add(double());
  case DType::F32:
    return add(float());
  case DType::I64:
    return add(int64_t());
  case DType::I32:
    return add(int32_t());
  case DType::I1:
    return add(uint8_t());
  default:
    return std::nullopt;
  }
}

static std::string describe(DType dtype, std::span<const int64_t> shape,
                            std::span<const std::byte> data) {
  std::string s = std::string(dtypeName(dtype)) + " " + formatShape(shape);
  if (std::optional<double> total = sum(dtype, data)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " sum=%.9g", *total);
    s += buf;
  }
  return s;
}

static int inspect(const std::string &path) {
  // Sniff the format from the first bytes; the reader chosen reads the
  // file (and reports a missing or unreadable one).
  char head[6] = {};
  size_t got = 0;
  if (std::FILE *f = std::fopen(path.c_str(), "rb")) {
    got = std::fread(head, 1, sizeof head, f);
    std::fclose(f);
  }
  int32_t magic = 0;
  if (got >= 4)
    magic = static_cast<int32_t>(
        loadLE(reinterpret_cast<const std::byte *>(head), 4));
  if (got == 6 && std::memcmp(head, "\x93NUMPY", 6) == 0) {
    Expected<NpyArray> a = readNpy(path);
    if (!a) {
      std::fprintf(stderr, "anvil-inspect: %s\n", a.status().message().c_str());
      return 1;
    }
    std::printf("npy '%s': %s\n", path.c_str(),
                describe(a->dtype, a->shape, a->data).c_str());
    return 0;
  }
  if (magic == kTokenShardMagic || path.ends_with(".bin")) {
    Expected<std::vector<uint16_t>> t = readTokenShard(path);
    if (!t) {
      std::fprintf(stderr, "anvil-inspect: %s\n", t.status().message().c_str());
      return 1;
    }
    uint16_t maxTok = t->empty() ? 0 : *std::max_element(t->begin(), t->end());
    std::printf("token shard '%s': %zu tokens, max token %u\n", path.c_str(),
                t->size(), maxTok);
    return 0;
  }
  Expected<SafetensorsFile> f = SafetensorsFile::read(path);
  if (!f) {
    std::fprintf(stderr, "anvil-inspect: %s\n", f.status().message().c_str());
    return 1;
  }
  std::printf("safetensors '%s': %zu tensors\n", path.c_str(),
              f->tensors().size());
  for (const auto &[k, v] : f->metadata())
    std::printf("  metadata %s = %s\n", k.c_str(), v.c_str());
  for (const TensorRef &t : f->tensors())
    std::printf("  %s %s\n", t.spec.name.c_str(),
                describe(t.spec.dtype, t.spec.shape, t.data).c_str());
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "--help")) {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: anvil-inspect FILE...\n"
                 "\n"
                 "Validates each FILE as the runtime reads it and prints what\n"
                 "it holds: a safetensors checkpoint (metadata; each tensor's\n"
                 "dtype, shape and element sum), a .npy array (dtype, shape,\n"
                 "sum) or an llm.c token shard (*.bin: token count, largest\n"
                 "token). Exits 1 on the first file with a problem.\n");
    return argc < 2 ? 2 : 0;
  }
  for (int i = 1; i < argc; ++i)
    if (int rc = inspect(argv[i]))
      return rc;
  return 0;
}
