//===- TempDirTest.h - a fixture with a fresh temporary directory -*- C++
//-*-===//
//
// Each test gets an empty directory under the system's temporary directory,
// named after the process and the test, and removed afterwards.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TEST_TEMPDIRTEST_H
#define ANVIL_RUNTIME_TEST_TEMPDIRTEST_H

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace anvil::rt::test {

class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    const ::testing::TestInfo *info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    dir = std::filesystem::temp_directory_path() /
          ("anvil-" + std::to_string(::getpid()) + "-" +
           info->test_suite_name() + "-" + info->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  /// `dir/name` as a string.
  std::string path(const std::string &name) const {
    return (dir / name).string();
  }

  std::filesystem::path dir;
};

} // namespace anvil::rt::test

#endif // ANVIL_RUNTIME_TEST_TEMPDIRTEST_H
