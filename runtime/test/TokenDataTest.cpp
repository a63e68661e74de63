//===- TokenDataTest.cpp - tests of token shards and batch sampling -------===//

#include "anvil/runtime/TokenData.h"
#include "anvil/runtime/File.h"

#include "TempDirTest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

using namespace anvil::rt;
namespace fs = std::filesystem;

namespace {

class TokenDataTest : public test::TempDirTest {
protected:
};

} // namespace

TEST_F(TokenDataTest, ShardLayoutMatchesLlmC) {
  std::vector<uint16_t> tokens = {0, 1, 255, 256, 50256};
  ASSERT_TRUE(writeTokenShard(path("train_000.bin"), tokens));
  Expected<std::vector<std::byte>> bytes = readFile(path("train_000.bin"));
  ASSERT_TRUE(bytes);
  ASSERT_EQ(bytes->size(), 1024u + 2 * tokens.size());
  int32_t header[3];
  std::memcpy(header, bytes->data(), sizeof header); // little-endian host
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 5);
  uint16_t last;
  std::memcpy(&last, bytes->data() + 1024 + 8, 2);
  EXPECT_EQ(last, 50256);
  Expected<std::vector<uint16_t>> back = readTokenShard(path("train_000.bin"));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, tokens);
}

TEST_F(TokenDataTest, WrongFormatsAreClearErrors) {
  std::string p = path("x.bin");
  auto put = [&](std::span<const std::byte> b) {
    std::span<const std::byte> pieces[] = {b};
    ASSERT_TRUE(writeFileAtomic(p, pieces));
  };
  std::string text = "hello, this is a text file and not a token shard\n";
  put(std::as_bytes(std::span(text)));
  Status s = readTokenShard(p).status();
  EXPECT_NE(s.message().find("token shard '" + p + "'"), std::string::npos);
  EXPECT_NE(s.message().find("shorter than the 1024-byte header"),
            std::string::npos)
      << s.message();

  std::vector<std::byte> big(2000, std::byte{'a'});
  put(big);
  EXPECT_NE(readTokenShard(p).status().message().find("magic"),
            std::string::npos);

  std::vector<uint16_t> tokens(10, 7);
  ASSERT_TRUE(writeTokenShard(p, tokens));
  Expected<std::vector<std::byte>> good = readFile(p);
  ASSERT_TRUE(good);
  put(std::span(*good).first(good->size() - 3));
  EXPECT_NE(readTokenShard(p).status().message().find("(truncated)"),
            std::string::npos);
  std::vector<std::byte> v2 = *good;
  v2[4] = std::byte{2};
  put(v2);
  EXPECT_NE(readTokenShard(p).status().message().find("version 2"),
            std::string::npos);
}

TEST_F(TokenDataTest, BatchesAreDeterministicAndShifted) {
  std::vector<uint16_t> tokens(1000);
  std::iota(tokens.begin(), tokens.end(), 0);
  ASSERT_TRUE(writeTokenShard(path("train_000.bin"), tokens));
  ASSERT_TRUE(writeTokenShard(path("val_000.bin"), {tokens.data(), 50}));
  Expected<TokenDataset> train = TokenDataset::load(dir.string(), "train");
  ASSERT_TRUE(train) << train.status().toString();
  EXPECT_EQ(train->numTokens(), 1000);
  EXPECT_EQ(train->maxToken(), 999);

  const int64_t B = 4, T = 16;
  std::vector<int32_t> x(B * T), y(B * T), x2(B * T), y2(B * T);
  ASSERT_TRUE(train->sampleBatch(7, 3, B, T, x, y));
  ASSERT_TRUE(train->sampleBatch(7, 3, B, T, x2, y2));
  EXPECT_EQ(x, x2); // same (seed, position): same batch
  for (int64_t i = 0; i < B * T; ++i)
    EXPECT_EQ(y[i], x[i] + 1); // targets are the next tokens
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = 1; t < T; ++t)
      EXPECT_EQ(x[r * T + t], x[r * T + t - 1] + 1); // contiguous windows
  ASSERT_TRUE(train->sampleBatch(7, 4, B, T, x2, y2));
  EXPECT_NE(x, x2); // the next position differs
  ASSERT_TRUE(train->sampleBatch(8, 3, B, T, x2, y2));
  EXPECT_NE(x, x2); // another seed differs

  std::vector<int32_t> longX(1000), longY(1000);
  Status tooShort = train->sampleBatch(7, 0, 1, 1000, longX, longY);
  EXPECT_NE(tooShort.message().find("fewer than one sequence of 1001"),
            std::string::npos)
      << tooShort.message();
  EXPECT_FALSE(train->sampleBatch(7, 0, 2, T, x, y)); // buffers too large
  Expected<TokenDataset> none = TokenDataset::load(dir.string(), "test");
  ASSERT_FALSE(none);
  EXPECT_NE(none.status().message().find("no '*test*.bin'"), std::string::npos);
}

TEST(SyntheticData, DeterministicLearnableAndInRange) {
  const int64_t B = 3, T = 8, V = 50;
  std::vector<int32_t> x(B * T), y(B * T), x2(B * T), y2(B * T);
  ASSERT_TRUE(sampleSyntheticBatch(1, 2, V, B, T, x, y));
  ASSERT_TRUE(sampleSyntheticBatch(1, 2, V, B, T, x2, y2));
  EXPECT_EQ(x, x2);
  EXPECT_EQ(y, y2);
  for (int64_t i = 0; i < B * T; ++i) {
    EXPECT_TRUE(x[i] >= 0 && x[i] < V);
    EXPECT_EQ(y[i], (5 * x[i] + 3) % V); // the pattern
    if (i % T != T - 1)
      EXPECT_EQ(x[i + 1], y[i]); // targets are the next inputs
  }
  ASSERT_TRUE(sampleSyntheticBatch(1, 3, V, B, T, x2, y2));
  EXPECT_NE(x, x2);
  EXPECT_FALSE(sampleSyntheticBatch(1, 2, 0, B, T, x, y));
  EXPECT_FALSE(sampleSyntheticBatch(1, 2, V, B, T + 1, x, y));
}
