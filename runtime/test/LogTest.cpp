//===- LogTest.cpp - tests of the runtime's leveled logging ---------------===//

#include "anvil/runtime/Log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace anvil::rt;

namespace {
/// Captures log output in a temporary file for the test's lifetime.
class LogCapture {
public:
  LogCapture() : file_(std::tmpfile()) { setLogSink(file_); }
  ~LogCapture() {
    setLogSink(nullptr);
    std::fclose(file_);
  }
  std::string text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buf[256];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), file_)) > 0)
      out.append(buf, n);
    return out;
  }

private:
  std::FILE *file_;
};
} // namespace

TEST(Log, ParsesLevelsInAnyCase) {
  EXPECT_EQ(*parseLogLevel("info"), LogLevel::Info);
  EXPECT_EQ(*parseLogLevel("DEBUG"), LogLevel::Debug);
  EXPECT_EQ(*parseLogLevel("Trace"), LogLevel::Trace);
  Expected<LogLevel> bad = parseLogLevel("verbose");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("'verbose'"), std::string::npos);
}

TEST(Log, FiltersByLevel) {
  LogCapture capture;
  setLogLevel(LogLevel::Info);
  int evaluated = 0;
  ANVIL_LOG_AT(Info, "loaded " << 3 << " tensors");
  ANVIL_LOG_AT(Debug, "hidden " << ++evaluated);
  EXPECT_EQ(evaluated, 0) << "disabled levels must not evaluate the message";
  EXPECT_EQ(capture.text(), "[anvil info] loaded 3 tensors\n");
  setLogLevel(LogLevel::Warn);
}
