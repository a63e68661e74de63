//===- SafetensorsTest.cpp - tests of checkpoint files --------------------===//

#include "anvil/runtime/Safetensors.h"
#include "anvil/runtime/File.h"

#include "TempDirTest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace anvil::rt;
namespace fs = std::filesystem;

namespace {

class SafetensorsTest : public test::TempDirTest {
protected:
  /// Writes two tensors and returns the file's path.
  std::string writeSample(const char *name = "c.safetensors") {
    std::string p = path(name);
    TensorRef refs[] = {
        {{"h.0.w", DType::F32, {2, 3}}, std::as_bytes(std::span(w))},
        {{"step", DType::I64, {}}, std::as_bytes(std::span(&step, 1))},
    };
    Status s = writeSafetensors(p, refs, {{"format", "anvil"}});
    EXPECT_TRUE(s) << s.toString();
    return p;
  }

  void overwrite(const std::string &p, std::span<const std::byte> bytes) {
    std::span<const std::byte> pieces[] = {bytes};
    ASSERT_TRUE(writeFileAtomic(p, pieces));
  }

  std::string readError(const std::string &p) {
    Expected<SafetensorsFile> f = SafetensorsFile::read(p);
    EXPECT_FALSE(f);
    return f ? "" : f.status().message();
  }

  float w[6] = {1, 2, 3, 4, 5, 6};
  int64_t step = 40;
};

} // namespace

TEST_F(SafetensorsTest, RoundTrip) {
  std::string p = writeSample();
  Expected<SafetensorsFile> f = SafetensorsFile::read(p);
  ASSERT_TRUE(f) << f.status().toString();
  EXPECT_EQ(f->metadata().at("format"), "anvil");
  const TensorRef *t = f->find("h.0.w");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->spec.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(t->data.data(), w, sizeof w), 0);
  // Data is 8-byte aligned within the file.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data.data()) % 8, 0u);
  const TensorRef *s = f->find("step");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->spec.shape.empty());
  int64_t got;
  std::memcpy(&got, s->data.data(), 8);
  EXPECT_EQ(got, 40);
  TensorSpec want[] = {{"h.0.w", DType::F32, {2, 3}}, {"step", DType::I64, {}}};
  EXPECT_TRUE(f->matches(want));
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
}

// A file laid out by hand from the format's specification, as other
// libraries write it (no padding, tensors in any order).
TEST_F(SafetensorsTest, ReadsTheSpecLayout) {
  std::string header =
      R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
      R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
  std::vector<std::byte> bytes(8 + header.size() + 12);
  uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8); // little-endian host
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  float b[2] = {0.5f, -1.0f};
  std::memcpy(bytes.data() + 8 + header.size() + 4, b, 8);
  std::string p = path("spec.safetensors");
  overwrite(p, bytes);
  Expected<SafetensorsFile> f = SafetensorsFile::read(p);
  // U8 is not an Anvil dtype: a clear error naming the tensor.
  ASSERT_FALSE(f);
  EXPECT_NE(f.status().message().find("tensor 'a'"), std::string::npos)
      << f.status().message();

  header = R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
           R"("a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  bytes.assign(8 + header.size() + 12, std::byte{0});
  n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  std::memcpy(bytes.data() + 8 + header.size() + 4, b, 8);
  overwrite(p, bytes);
  f = SafetensorsFile::read(p);
  ASSERT_TRUE(f) << f.status().toString();
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].spec.name, "a"); // file order
  EXPECT_EQ(std::memcmp(f->find("b")->data.data(), b, 8), 0);
}

TEST_F(SafetensorsTest, TruncatedFileIsAClearError) {
  std::string p = writeSample();
  Expected<std::vector<std::byte>> bytes = readFile(p);
  ASSERT_TRUE(bytes);
  for (size_t keep : {size_t(0), size_t(5), size_t(20), bytes->size() - 4}) {
    overwrite(p, std::span(*bytes).first(keep));
    std::string msg = readError(p);
    EXPECT_NE(msg.find("checkpoint '" + p + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << keep << ": " << msg;
  }
}

TEST_F(SafetensorsTest, CorruptHeaderIsAClearError) {
  std::string p = writeSample();
  Expected<std::vector<std::byte>> bytes = readFile(p);
  ASSERT_TRUE(bytes);
  std::vector<std::byte> bad = *bytes;
  bad[9] = std::byte{'#'};
  overwrite(p, bad);
  EXPECT_NE(readError(p).find("corrupt header"), std::string::npos);

  // Offsets that disagree with the shape.
  std::string text(reinterpret_cast<const char *>(bytes->data() + 8),
                   bytes->size() - 8);
  size_t at = text.find("[0,24]");
  ASSERT_NE(at, std::string::npos) << text;
  bad = *bytes;
  bad[8 + at + 4] = std::byte{'0'}; // [0,20]
  overwrite(p, bad);
  std::string msg = readError(p);
  EXPECT_NE(msg.find("tensor 'h.0.w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs 24"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, OtherModelIsAClearError) {
  std::string p = writeSample();
  Expected<SafetensorsFile> f = SafetensorsFile::read(p);
  ASSERT_TRUE(f);
  TensorSpec otherShape[] = {{"h.0.w", DType::F32, {2, 4}},
                             {"step", DType::I64, {}}};
  Status s = f->matches(otherShape);
  EXPECT_EQ(s.message(), "checkpoint '" + p +
                             "': tensor 'h.0.w' has shape [2,3], the model "
                             "expects [2,4]");
  TensorSpec missing[] = {{"h.0.w", DType::F32, {2, 3}},
                          {"h.1.w", DType::F32, {2, 3}},
                          {"step", DType::I64, {}}};
  EXPECT_NE(f->matches(missing).message().find("'h.1.w' is missing"),
            std::string::npos);
  TensorSpec fewer[] = {{"h.0.w", DType::F32, {2, 3}}};
  EXPECT_NE(f->matches(fewer).message().find("'step' is not part"),
            std::string::npos);
  TensorSpec dtype[] = {{"h.0.w", DType::BF16, {2, 3}},
                        {"step", DType::I64, {}}};
  EXPECT_NE(f->matches(dtype).message().find("has dtype F32"),
            std::string::npos);
}

TEST_F(SafetensorsTest, FailedWriteLeavesThePreviousFile) {
  std::string p = writeSample();
  Expected<std::vector<std::byte>> before = readFile(p);
  ASSERT_TRUE(before);
  // A tensor whose bytes disagree with its shape fails before any write.
  TensorRef bad[] = {
      {{"h.0.w", DType::F32, {2, 4}}, std::as_bytes(std::span(w))}};
  EXPECT_FALSE(writeSafetensors(p, bad, {}));
  // A write into a directory that does not exist fails cleanly too.
  EXPECT_FALSE(writeSafetensors(path("nodir/c.safetensors"), bad, {}));
  Expected<std::vector<std::byte>> after = readFile(p);
  ASSERT_TRUE(after);
  EXPECT_EQ(*before, *after);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
}

TEST_F(SafetensorsTest, MissingFileNamesIt) {
  Expected<SafetensorsFile> f = SafetensorsFile::read(path("none"));
  ASSERT_FALSE(f);
  EXPECT_EQ(f.status().code(), ErrorCode::NotFound);
  EXPECT_NE(f.status().message().find("none"), std::string::npos);
}

TEST_F(SafetensorsTest, EmptyTensorsOverlapNothing) {
  std::vector<TensorRef> refs;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i)
    names.push_back("t" + std::to_string(i));
  for (int i = 0; i < 40; ++i)
    refs.push_back({{names[i], DType::F32, {i % 2}},
                    std::as_bytes(std::span(w)).first(4 * (i % 2))});
  std::string p = path("e.safetensors");
  ASSERT_TRUE(writeSafetensors(p, refs, {}));
  Expected<SafetensorsFile> f = SafetensorsFile::read(p);
  ASSERT_TRUE(f) << f.status().toString();
  EXPECT_EQ(f->tensors().size(), 40u);
}

TEST_F(SafetensorsTest, HugeShapesAreRejectedNotTrusted) {
  std::string header = R"({"a":{"dtype":"F32","shape":[1099511627776,4194304],)"
                       R"("data_offsets":[0,0]}})";
  std::vector<std::byte> bytes(8 + header.size());
  uint64_t n = header.size();
  std::memcpy(bytes.data(), &n, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  std::string p = path("huge.safetensors");
  overwrite(p, bytes);
  std::string msg = readError(p);
  EXPECT_NE(msg.find("tensor 'a'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2^63"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, FailedRenameRemovesTheTemporary) {
  // Renaming a file over a non-empty directory fails after the data was
  // written: the temporary must not be left behind.
  fs::create_directories(dir / "target" / "inside");
  std::string text = "x";
  std::span<const std::byte> pieces[] = {std::as_bytes(std::span(text))};
  Status s = writeFileAtomic(path("target"), pieces);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("left unchanged"), std::string::npos)
      << s.message();
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
  EXPECT_TRUE(fs::is_directory(dir / "target" / "inside"));
}
