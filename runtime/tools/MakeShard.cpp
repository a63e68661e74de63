//===- MakeShard.cpp - anvil-make-shard: text to llm.c token shards -------===//
//
// Byte-level tokenization (token = byte value, vocabulary 256): the first
// part of the text becomes `<out>/train_000.bin`, the last `--val-fraction`
// becomes `<out>/val_000.bin`.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/File.h"
#include "anvil/runtime/TokenData.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>

using namespace anvil::rt;

static int usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: anvil-make-shard [--val-fraction F] TEXT_FILE OUT_DIR\n"
               "\n"
               "Tokenizes TEXT_FILE byte by byte (vocabulary 256) and writes\n"
               "OUT_DIR/train_000.bin and OUT_DIR/val_000.bin in the llm.c\n"
               "token-shard format (256 int32 header, magic 20240520, then\n"
               "uint16 tokens). F (default 0.1) is the share held out for\n"
               "validation.\n");
  return code;
}

int main(int argc, char **argv) {
  double valFraction = 0.1;
  std::string in, out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help")
      return usage(0);
    if (a == "--val-fraction" && i + 1 < argc) {
      char *end = nullptr;
      valFraction = std::strtod(argv[++i], &end);
      if (*end || !(valFraction >= 0 && valFraction < 1)) {
        std::fprintf(stderr,
                     "anvil-make-shard: --val-fraction must be in "
                     "[0, 1), got '%s'\n",
                     argv[i]);
        return 2;
      }
    } else if (in.empty()) {
      in = a;
    } else if (out.empty()) {
      out = a;
    } else {
      return usage(2);
    }
  }
  if (in.empty() || out.empty())
    return usage(2);
  Expected<std::vector<std::byte>> text = readFile(in);
  if (!text) {
    std::fprintf(stderr, "anvil-make-shard: %s\n",
                 text.status().message().c_str());
    return 1;
  }
  if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "anvil-make-shard: cannot create '%s': %s\n",
                 out.c_str(), std::strerror(errno));
    return 1;
  }
  std::vector<uint16_t> tokens(text->size());
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<uint8_t>((*text)[i]);
  size_t nVal =
      static_cast<size_t>(static_cast<double>(tokens.size()) * valFraction);
  std::span<const uint16_t> all(tokens);
  Status s =
      writeTokenShard(out + "/train_000.bin", all.first(tokens.size() - nVal));
  if (s && nVal)
    s = writeTokenShard(out + "/val_000.bin", all.last(nVal));
  if (!s) {
    std::fprintf(stderr, "anvil-make-shard: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("anvil-make-shard: %zu train and %zu val tokens in '%s'\n",
              tokens.size() - nVal, nVal, out.c_str());
  return 0;
}
