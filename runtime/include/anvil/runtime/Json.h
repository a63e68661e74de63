//===- Json.h - a small JSON reader and writer for the runtime ---*- C++
//-*-===//
//
// Enough JSON for safetensors headers and manifests: objects, arrays,
// strings (with escapes), integers, doubles, booleans and null. Parse
// errors say where (byte offset) and what was expected.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_JSON_H
#define ANVIL_RUNTIME_JSON_H

#include "anvil/runtime/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::rt {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  JsonValue() = default;
  static JsonValue number(double v);
  static JsonValue string(std::string s);
  static JsonValue array(std::vector<JsonValue> items = {});
  static JsonValue object();

  Kind kind() const { return kind_; }
  bool isObject() const { return kind_ == Kind::Object; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isString() const { return kind_ == Kind::String; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool asBool() const { return kind_ == Kind::Bool && number_ != 0; }

  double asNumber() const { return number_; }
  /// The number if it is an integer that fits int64; an error otherwise.
  Expected<int64_t> asInteger() const;
  const std::string &asString() const { return string_; }
  const std::vector<JsonValue> &items() const { return items_; }
  /// Object members in the order they appeared.
  const std::vector<std::pair<std::string, JsonValue>> &members() const {
    return members_;
  }
  /// The member `key`, or nullptr.
  const JsonValue *get(std::string_view key) const;
  /// Adds a member (objects) or an item (arrays).
  void set(std::string key, JsonValue value);
  void push(JsonValue value);

  /// Compact JSON text.
  std::string dump() const;

private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
  friend class JsonParser;
};

/// Parses `text`; errors name the byte offset.
Expected<JsonValue> parseJson(std::string_view text);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_JSON_H
