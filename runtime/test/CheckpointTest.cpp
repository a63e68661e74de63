//===- CheckpointTest.cpp - tests of checkpoint directories ---------------===//

#include "anvil/runtime/Checkpoint.h"
#include "anvil/runtime/Dist.h"
#include "anvil/runtime/File.h"

#include "TempDirTest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace anvil::rt;
namespace fs = std::filesystem;

namespace {
class CheckpointTest : public test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    ck = path("ck"); // created by saveCheckpoint
  }

  std::vector<TensorRef> state() {
    return {{{"wte", DType::F32, {2, 2}}, std::as_bytes(std::span(w))},
            {{"wte.adam_m", DType::F32, {2, 2}}, std::as_bytes(std::span(m))}};
  }
  std::vector<TensorSpec> specs() {
    return {{"wte", DType::F32, {2, 2}}, {"wte.adam_m", DType::F32, {2, 2}}};
  }

  std::string ck;
  float w[4] = {1, 2, 3, 4};
  float m[4] = {0.5, 0, 0, -0.5};
  CheckpointInfo info{"gpt-tiny:abc", 20, 7, 20};
};
} // namespace

TEST_F(CheckpointTest, SaveThenLoadLatest) {
  Expected<std::string> p = saveCheckpoint(ck, info, state());
  ASSERT_TRUE(p) << p.status().toString();
  EXPECT_EQ(*p, ck + "/step_00000020.safetensors");
  info.step = 40;
  info.dataPosition = 40;
  w[0] = 9;
  ASSERT_TRUE(saveCheckpoint(ck, info, state()));
  Expected<std::string> latest = latestCheckpoint(ck);
  ASSERT_TRUE(latest);
  EXPECT_EQ(*latest, ck + "/step_00000040.safetensors");
  Expected<LoadedCheckpoint> c =
      loadCheckpoint(*latest, "gpt-tiny:abc", specs());
  ASSERT_TRUE(c) << c.status().toString();
  EXPECT_EQ(c->info.step, 40u);
  EXPECT_EQ(c->info.seed, 7u);
  EXPECT_EQ(c->info.dataPosition, 40u);
  float got;
  std::memcpy(&got, c->file.find("wte")->data.data(), 4);
  EXPECT_EQ(got, 9);
}

TEST_F(CheckpointTest, FailedSaveKeepsThePreviousCheckpoint) {
  ASSERT_TRUE(saveCheckpoint(ck, info, state()));
  Expected<std::vector<std::byte>> before =
      readFile(ck + "/step_00000020.safetensors");
  ASSERT_TRUE(before);
  info.step = 40;
  std::vector<TensorRef> bad = state();
  bad[1].data = bad[1].data.first(8); // bytes disagree with the shape
  EXPECT_FALSE(saveCheckpoint(ck, info, bad));
  EXPECT_EQ(*latestCheckpoint(ck), ck + "/step_00000020.safetensors");
  EXPECT_EQ(*readFile(ck + "/step_00000020.safetensors"), *before);
  EXPECT_FALSE(fs::exists(ck + "/step_00000040.safetensors"));
}

TEST_F(CheckpointTest, CorruptedTensorDataFailsTheChecksum) {
  Expected<std::string> p = saveCheckpoint(ck, info, state());
  ASSERT_TRUE(p);
  // Flip one bit of the last tensor byte (the header stays valid).
  Expected<std::vector<std::byte>> bytes = readFile(*p);
  ASSERT_TRUE(bytes);
  bytes->back() ^= std::byte{1};
  std::span<const std::byte> pieces[] = {*bytes};
  ASSERT_TRUE(writeFileAtomic(*p, pieces));
  Expected<LoadedCheckpoint> c = loadCheckpoint(*p, "gpt-tiny:abc", specs());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message(),
            "checkpoint '" + *p +
                "': the tensor data does not match the checkpoint's checksum "
                "(the file is corrupted)");
}

TEST_F(CheckpointTest, OtherModelIsAClearError) {
  Expected<std::string> p = saveCheckpoint(ck, info, state());
  ASSERT_TRUE(p);
  Expected<LoadedCheckpoint> c = loadCheckpoint(*p, "mlp:def", specs());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message(),
            "checkpoint '" + *p +
                "' is of model 'gpt-tiny:abc', this run trains 'mlp:def'");
  std::vector<TensorSpec> other = specs();
  other[1].shape = {4};
  c = loadCheckpoint(*p, "gpt-tiny:abc", other);
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find(
                "tensor 'wte.adam_m' has shape [2,2], the model expects [4]"),
            std::string::npos);
}

TEST_F(CheckpointTest, PlainSafetensorsIsNotATrainingCheckpoint) {
  fs::create_directories(ck);
  std::vector<TensorRef> s = state();
  ASSERT_TRUE(writeSafetensors(ck + "/x.safetensors", s, {}));
  Expected<LoadedCheckpoint> c =
      loadCheckpoint(ck + "/x.safetensors", "gpt-tiny:abc", specs());
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("'anvil.model' is missing"),
            std::string::npos);
}

TEST_F(CheckpointTest, NoLatestIsNotFound) {
  Expected<std::string> l = latestCheckpoint(ck);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.status().code(), ErrorCode::NotFound);
  EXPECT_NE(l.status().message().find("has no 'latest' checkpoint"),
            std::string::npos);
}

TEST(ParentDirectory, HandlesTrailingSlashesAndRoots) {
  EXPECT_EQ(parentDirectory("a/b/c"), "a/b");
  EXPECT_EQ(parentDirectory("ckpt/"), ".");
  EXPECT_EQ(parentDirectory("runs/ckpt//"), "runs");
  EXPECT_EQ(parentDirectory("c"), ".");
  EXPECT_EQ(parentDirectory("/c"), "/");
  EXPECT_EQ(parentDirectory("/"), "/");
}

TEST_F(CheckpointTest, ShardedPiecesAssembleIntoAnyLayout) {
  // A world of one writes one file; a second rank's file is written by
  // hand, as rank 1 would: elements [2, 4) of the moment.
  auto world = makeSelfCommunicator();
  PieceLayout first = PieceLayout::whole({2, 2});
  first.kind = PieceLayout::Kind::Flat;
  first.end = 2;
  TensorPiece pieces[] = {{{"wte", DType::F32, {2, 2}},
                           PieceLayout::whole({2, 2}),
                           std::as_bytes(std::span(w))},
                          {{"wte.adam_m", DType::F32, {2, 2}},
                           first,
                           std::as_bytes(std::span(m).first(2))}};
  ASSERT_TRUE(saveShardedCheckpoint(ck, info, pieces, *world));
  Expected<SafetensorsFile> main =
      SafetensorsFile::read(ck + "/step_00000020.safetensors");
  ASSERT_TRUE(main);
  EXPECT_EQ(main->find("wte.adam_m")->spec.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(main->metadata().at("anvil.piece.wte.adam_m"),
            R"({"shape":[2,2],"begin":0,"end":2})");
  // Before rank 1's file is listed, half of the moment is missing.
  Expected<CheckpointReader> half = CheckpointReader::open(
      ck + "/step_00000020.safetensors", "gpt-tiny:abc", specs());
  ASSERT_TRUE(half) << half.status().toString();
  float out[4] = {};
  Status missing = half->read("wte.adam_m", PieceLayout::whole({2, 2}),
                              std::as_writable_bytes(std::span(out)));
  EXPECT_NE(missing.message().find("holds 2 of the 4 elements of "
                                   "'wte.adam_m' (a shard file is missing?)"),
            std::string::npos)
      << missing.message();

  std::vector<TensorRef> rank1 = {{{"wte.adam_m", DType::F32, {2}},
                                   std::as_bytes(std::span(m).subspan(2))}};
  // (no checksum: files written before checksums existed load too)
  ASSERT_TRUE(writeSafetensors(
      ck + "/step_00000020.rank00001.safetensors", rank1,
      {{"anvil.model", "gpt-tiny:abc"},
       {"anvil.step", "20"},
       {"anvil.seed", "7"},
       {"anvil.data_position", "20"},
       {"anvil.piece.wte.adam_m", R"({"shape":[2,2],"begin":2,"end":4})"}}));
  std::map<std::string, std::string> meta = main->metadata();
  meta["anvil.shard_files"] = R"(["step_00000020.rank00001.safetensors"])";
  std::vector<TensorRef> mine(main->tensors().begin(), main->tensors().end());
  ASSERT_TRUE(writeSafetensors(ck + "/step_00000020.safetensors", mine, meta));
  Expected<CheckpointReader> r = CheckpointReader::open(
      ck + "/step_00000020.safetensors", "gpt-tiny:abc", specs());
  ASSERT_TRUE(r) << r.status().toString();
  ASSERT_TRUE(r->read("wte.adam_m", PieceLayout::whole({2, 2}),
                      std::as_writable_bytes(std::span(out))));
  EXPECT_EQ(std::vector<float>(out, out + 4), std::vector<float>(m, m + 4));
  // Into another layout: column 1 of the 2 x 2 moment (a tensor-parallel
  // part: dimension 1 in 2 parts, part 1).
  PieceLayout column = PieceLayout::whole({2, 2});
  column.kind = PieceLayout::Kind::Split;
  column.dim = 1;
  column.parts = 2;
  column.index = 1;
  float part[2] = {};
  ASSERT_TRUE(
      r->read("wte.adam_m", column, std::as_writable_bytes(std::span(part))));
  EXPECT_EQ(part[0], m[1]);
  EXPECT_EQ(part[1], m[3]);
  // The whole shapes are checked against the model's.
  std::vector<TensorSpec> other = specs();
  other[1].shape = {4};
  Expected<CheckpointReader> bad = CheckpointReader::open(
      ck + "/step_00000020.safetensors", "gpt-tiny:abc", other);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find(
                "tensor 'wte.adam_m' has shape [2,2], the model expects [4]"),
            std::string::npos)
      << bad.status().message();
}

TEST(PieceLayout, SplitGroupsKeepEachRanksBlockOfEveryGroup) {
  // A fused q/k/v weight [2, 6] (q, k, v of 2 columns each) over 2 ranks:
  // rank 1 holds column 1 of q, of k and of v.
  PieceLayout l = PieceLayout::whole({2, 6});
  l.kind = PieceLayout::Kind::Split;
  l.dim = 1;
  l.groups = 3;
  l.parts = 2;
  l.index = 1;
  EXPECT_EQ(l.elements(), 6);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> runs;
  l.forEachRun(
      [&](int64_t w, int64_t p, int64_t n) { runs.emplace_back(w, p, n); });
  EXPECT_EQ(
      runs,
      (std::vector<std::tuple<int64_t, int64_t, int64_t>>{
          {1, 0, 1}, {3, 1, 1}, {5, 2, 1}, {7, 3, 1}, {9, 4, 1}, {11, 5, 1}}));
  Expected<PieceLayout> back = PieceLayout::fromJson(l.toJson(), 6);
  ASSERT_TRUE(back) << back.status().toString();
  EXPECT_EQ(
      back->toJson().dump(),
      R"({"shape":[2,6],"split":{"dim":1,"groups":3,"parts":2,"index":1}})");
  EXPECT_FALSE(PieceLayout::fromJson(l.toJson(), 5));

  // ZeRO's block of that part: its elements [2, 5).
  l.blockOfPart = true;
  l.begin = 2;
  l.end = 5;
  runs.clear();
  l.forEachRun(
      [&](int64_t w, int64_t p, int64_t n) { runs.emplace_back(w, p, n); });
  EXPECT_EQ(runs, (std::vector<std::tuple<int64_t, int64_t, int64_t>>{
                      {5, 0, 1}, {7, 1, 1}, {9, 2, 1}}));
  Expected<PieceLayout> block = PieceLayout::fromJson(l.toJson(), 3);
  ASSERT_TRUE(block) << block.status().toString();
  EXPECT_TRUE(block->blockOfPart);
  EXPECT_EQ(block->elements(), 3);
}
