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
#include <utility>
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

/// The config of `configs` named `name`, or nullptr.
template <typename Config>
const Config *findByName(const std::vector<Config> &configs,
                         const std::string &name) {
  for (const Config &c : configs)
    if (c.name == name)
      return &c;
  return nullptr;
}

/// A config's integer fields by name, for families whose fields are all
/// integers: `set`, `fieldNames` and `validate` read one table, so they
/// agree. `Ptr` is `int64_t *` or `const int64_t *`; a config builds its
/// table in a template `static auto fields(Self &c)`.
template <typename Ptr>
using IntFields = std::vector<std::pair<const char *, Ptr>>;

template <typename Ptr>
std::vector<std::string> fieldNames(const IntFields<Ptr> &fields) {
  std::vector<std::string> names;
  for (const auto &field : fields)
    names.push_back(field.first);
  return names;
}

inline void setIntField(const std::string &config,
                        const IntFields<int64_t *> &fields,
                        const std::string &field, const std::string &value) {
  for (const auto &[name, target] : fields)
    if (field == name) {
      *target = parseInt(config, field, value);
      return;
    }
  unknownField(config, field, fieldNames(fields));
}

/// Every field of the table is at least 1.
inline void requirePositive(const std::string &config,
                            const IntFields<const int64_t *> &fields) {
  for (const auto &[name, value] : fields)
    requirePositive(config, name, *value);
}

} // namespace anvil::frontend::config

#endif // ANVIL_FRONTEND_MODELS_CONFIGFIELDS_H
