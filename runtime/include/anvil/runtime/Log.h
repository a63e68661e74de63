//===- Log.h - leveled logging for the Anvil runtime -------------*- C++
//-*-===//
//
// The level comes from the environment variable ANVIL_LOG
// (error|warn|info|debug|trace; default warn) when first used, and can be
// overridden with setLogLevel. Messages go to stderr prefixed with
// "[anvil LEVEL] ".
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_LOG_H
#define ANVIL_RUNTIME_LOG_H

#include "anvil/runtime/Status.h"

#include <cstdio>
#include <sstream>
#include <string_view>

namespace anvil::rt {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3, Trace = 4 };

/// Parses "error", "warn", "info", "debug" or "trace" (any case).
Expected<LogLevel> parseLogLevel(std::string_view name);

/// The current level (read from ANVIL_LOG on first use).
LogLevel logLevel();
void setLogLevel(LogLevel level);
bool logEnabled(LogLevel level);

/// Where messages go; stderr unless a test redirects it.
void setLogSink(std::FILE *sink);

/// Writes one message line if `level` is enabled.
void logMessage(LogLevel level, std::string_view message);

} // namespace anvil::rt

/// ANVIL_LOG_AT(Info, "loaded " << n << " tensors"): the stream expression is
/// evaluated only when the level is enabled.
#define ANVIL_LOG_AT(LEVEL, STREAM_EXPR)                                       \
  do {                                                                         \
    if (::anvil::rt::logEnabled(::anvil::rt::LogLevel::LEVEL)) {               \
      std::ostringstream anvilLogStream_;                                      \
      anvilLogStream_ << STREAM_EXPR;                                          \
      ::anvil::rt::logMessage(::anvil::rt::LogLevel::LEVEL,                    \
                              anvilLogStream_.str());                          \
    }                                                                          \
  } while (false)

#endif // ANVIL_RUNTIME_LOG_H
