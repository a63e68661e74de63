//===- NpyTest.cpp - tests of .npy arrays ---------------------------------===//

#include "anvil/runtime/Npy.h"
#include "anvil/runtime/File.h"

#include "TempDirTest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace anvil::rt;
namespace fs = std::filesystem;

namespace {
class NpyTest : public test::TempDirTest {
protected:
  void put(const std::string &p, const std::string &bytes) {
    std::span<const std::byte> pieces[] = {std::as_bytes(std::span(bytes))};
    ASSERT_TRUE(writeFileAtomic(p, pieces));
  }
};

/// A v1 .npy file with `dict` as the header and `data` after it.
std::string npy(const std::string &dict, const std::string &data,
                char major = 1) {
  std::string s = "\x93NUMPY";
  s += major;
  s += '\0';
  s += static_cast<char>(dict.size() & 0xff);
  s += static_cast<char>(dict.size() >> 8);
  if (major != 1)
    s += std::string(2, '\0');
  return s + dict + data;
}
} // namespace

TEST_F(NpyTest, RoundTripAllShapes) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 3}, {6}, {1, 2, 3}}) {
    ASSERT_TRUE(writeNpy(path("a.npy"), DType::F32, shape,
                         std::as_bytes(std::span(v))));
    Expected<NpyArray> a = readNpy(path("a.npy"));
    ASSERT_TRUE(a) << a.status().toString();
    EXPECT_EQ(a->shape, shape);
    EXPECT_EQ(a->dtype, DType::F32);
    EXPECT_EQ(std::memcmp(a->data.data(), v, sizeof v), 0);
  }
  int64_t s = 9;
  ASSERT_TRUE(
      writeNpy(path("s.npy"), DType::I64, {}, std::as_bytes(std::span(&s, 1))));
  Expected<NpyArray> a = readNpy(path("s.npy"));
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->shape.empty());
}

// Headers as numpy writes them (key order, spacing, version 2).
TEST_F(NpyTest, ReadsNumpyHeaders) {
  std::string data(2 * 4, '\0');
  put(path("a.npy"),
      npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }      \n",
          data));
  Expected<NpyArray> a = readNpy(path("a.npy"));
  ASSERT_TRUE(a) << a.status().toString();
  EXPECT_EQ(a->dtype, DType::I32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2}));
  put(path("b.npy"),
      npy("{'shape': (1, 2), 'fortran_order': False, 'descr': '<i4'}\n", data,
          2));
  a = readNpy(path("b.npy"));
  ASSERT_TRUE(a) << a.status().toString();
  EXPECT_EQ(a->shape, (std::vector<int64_t>{1, 2}));
}

TEST_F(NpyTest, BadFilesAreClearErrors) {
  auto error = [&](const std::string &bytes) {
    put(path("x.npy"), bytes);
    Expected<NpyArray> a = readNpy(path("x.npy"));
    EXPECT_FALSE(a);
    std::string msg = a ? "" : a.status().message();
    EXPECT_NE(msg.find("array '" + path("x.npy") + "'"), std::string::npos)
        << msg;
    return msg;
  };
  std::string d8(8, '\0');
  EXPECT_NE(error("plain text").find("not a .npy file"), std::string::npos);
  EXPECT_NE(error(npy("{'descr': '>f4', 'fortran_order': False, "
                      "'shape': (2,), }",
                      d8))
                .find("big-endian"),
            std::string::npos);
  EXPECT_NE(error(npy("{'descr': '<f4', 'fortran_order': True, "
                      "'shape': (2,), }",
                      d8))
                .find("ascontiguousarray"),
            std::string::npos);
  EXPECT_NE(error(npy("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (3,), }",
                      d8))
                .find("needs 12 data bytes, the file has 8 (truncated)"),
            std::string::npos);
  EXPECT_NE(error(npy("{'descr': '<u2', 'fortran_order': False, "
                      "'shape': (4,), }",
                      d8))
                .find("'<u2' is not supported"),
            std::string::npos);
  EXPECT_NE(error(npy("{'descr': '<f4', 'shape': (2,), }", d8))
                .find("needs 'descr', 'fortran_order' and 'shape'"),
            std::string::npos);
  EXPECT_NE(error(npy("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (-2,), }",
                      d8))
                .find("bad header"),
            std::string::npos);
  EXPECT_NE(error(npy("{}", "", 9)).find("version 9"), std::string::npos);
  EXPECT_NE(error(npy("{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (4611686018427387904,), }",
                      ""))
                .find("2^63"),
            std::string::npos);
}
