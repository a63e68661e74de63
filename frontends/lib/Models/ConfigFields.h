//===- ConfigFields.h - parsing and checking model config fields -*- C++
//-*-===//
//
// The pieces every family's `set` and `validate` share, so that their
// messages agree: "config 'llama-tiny': layers = 'x' is not an integer",
// "... must be at least 1", "unknown field 'depth'; the fields are ...".
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_FRONTEND_MODELS_CONFIGFIELDS_H
#define ANVIL_FRONTEND_MODELS_CONFIGFIELDS_H

#include "anvil/Frontend/Graph.h"

#include <charconv>
#include <cstdlib>
#include <string>
#include <vector>

namespace anvil::frontend::config {

[[noreturn]] inline void fail(const std::string &config,
                              const std::string &message) {
  throw BuildError("config '" + config + "': " + message);
}

inline int64_t parseInt(const std::string &config, const std::string &field,
                        const std::string &value) {
  int64_t v = 0;
  auto [end, ec] =
      std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size())
    fail(config, field + " = '" + value + "' is not an integer");
  return v;
}

inline double parseDouble(const std::string &config, const std::string &field,
                          const std::string &value) {
  char *end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0')
    fail(config, field + " = '" + value + "' is not a number");
  return v;
}

[[noreturn]] inline void unknownField(const std::string &config,
                                      const std::string &field,
                                      const std::vector<std::string> &known) {
  std::string list;
  for (const std::string &f : known)
    list += (list.empty() ? "" : ", ") + f;
  fail(config, "unknown field '" + field + "'; the fields are " + list);
}

inline void requirePositive(const std::string &config, const char *field,
                            int64_t v) {
  if (v < 1)
    fail(config, std::string(field) + " = " + std::to_string(v) +
                     " must be at least 1");
}

} // namespace anvil::frontend::config

#endif // ANVIL_FRONTEND_MODELS_CONFIGFIELDS_H
