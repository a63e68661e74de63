//===- Log.cpp - leveled logging for the Anvil runtime --------------------===//
//
// The level is read from ANVIL_LOG once; an unknown value warns and keeps
// the default (warn), so a typo never silences errors.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Log.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

namespace anvil::rt {
namespace {
constexpr std::string_view kLevelNames[] = {"error", "warn", "info", "debug",
                                            "trace"};

std::atomic<int> &levelStorage() {
  static std::atomic<int> level = [] {
    const char *env = std::getenv("ANVIL_LOG");
    if (!env || !*env)
      return static_cast<int>(LogLevel::Warn);
    Expected<LogLevel> parsed = parseLogLevel(env);
    if (!parsed) {
      std::fprintf(stderr, "[anvil warn] ANVIL_LOG: %s; using 'warn'\n",
                   parsed.status().message().c_str());
      return static_cast<int>(LogLevel::Warn);
    }
    return static_cast<int>(*parsed);
  }();
  return level;
}

std::mutex sinkMutex;
std::FILE *sink = nullptr; // nullptr means stderr
} // namespace

Expected<LogLevel> parseLogLevel(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (size_t i = 0; i < std::size(kLevelNames); ++i)
    if (lower == kLevelNames[i])
      return static_cast<LogLevel>(i);
  return Status::error(ErrorCode::InvalidArgument,
                       "unknown log level '" + std::string(name) +
                           "'; expected error, warn, info, debug or trace");
}

LogLevel logLevel() { return static_cast<LogLevel>(levelStorage().load()); }
void setLogLevel(LogLevel level) {
  levelStorage().store(static_cast<int>(level));
}
bool logEnabled(LogLevel level) {
  return static_cast<int>(level) <= levelStorage().load();
}

void setLogSink(std::FILE *newSink) {
  std::lock_guard<std::mutex> lock(sinkMutex);
  sink = newSink;
}

void logMessage(LogLevel level, std::string_view message) {
  if (!logEnabled(level))
    return;
  std::lock_guard<std::mutex> lock(sinkMutex);
  std::FILE *out = sink ? sink : stderr;
  std::fprintf(out, "[anvil %s] %.*s\n",
               kLevelNames[static_cast<int>(level)].data(),
               static_cast<int>(message.size()), message.data());
  std::fflush(out);
}

} // namespace anvil::rt
