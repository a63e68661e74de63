//===- Json.cpp - a small JSON reader and writer for the runtime ----------===//
//
// A recursive-descent parser over the text (depth-limited) and a writer
// that escapes what JSON requires.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <unordered_set>

namespace anvil::rt {

JsonValue JsonValue::number(double v) {
  JsonValue j;
  j.kind_ = Kind::Number;
  j.number_ = v;
  return j;
}
JsonValue JsonValue::string(std::string s) {
  JsonValue j;
  j.kind_ = Kind::String;
  j.string_ = std::move(s);
  return j;
}
JsonValue JsonValue::array(std::vector<JsonValue> items) {
  JsonValue j;
  j.kind_ = Kind::Array;
  j.items_ = std::move(items);
  return j;
}
JsonValue JsonValue::object() {
  JsonValue j;
  j.kind_ = Kind::Object;
  return j;
}

Expected<int64_t> JsonValue::asInteger() const {
  if (kind_ != Kind::Number || number_ != std::floor(number_) ||
      std::abs(number_) > 9.0e15)
    return Status::error(ErrorCode::InvalidArgument,
                         "expected an integer, got " + dump());
  return static_cast<int64_t>(number_);
}

const JsonValue *JsonValue::get(std::string_view key) const {
  for (const auto &[k, v] : members_)
    if (k == key)
      return &v;
  return nullptr;
}

void JsonValue::set(std::string key, JsonValue value) {
  members_.emplace_back(std::move(key), std::move(value));
}
void JsonValue::push(JsonValue value) { items_.push_back(std::move(value)); }

static void dumpString(const std::string &s, std::string &out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  out += '"';
}

static void dumpValue(const JsonValue &v, std::string &out) {
  switch (v.kind()) {
  case JsonValue::Kind::Null:
    out += "null";
    break;
  case JsonValue::Kind::Bool:
    out += v.asNumber() != 0 ? "true" : "false";
    break;
  case JsonValue::Kind::Number: {
    double d = v.asNumber();
    char buf[32];
    if (d == std::floor(d) && std::abs(d) < 9.0e15)
      std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(d));
    else
      std::snprintf(buf, sizeof(buf), "%.17g", d);
    out += buf;
    break;
  }
  case JsonValue::Kind::String:
    dumpString(v.asString(), out);
    break;
  case JsonValue::Kind::Array:
    out += '[';
    for (size_t i = 0; i < v.items().size(); ++i) {
      if (i)
        out += ',';
      dumpValue(v.items()[i], out);
    }
    out += ']';
    break;
  case JsonValue::Kind::Object:
    out += '{';
    for (size_t i = 0; i < v.members().size(); ++i) {
      if (i)
        out += ',';
      dumpString(v.members()[i].first, out);
      out += ':';
      dumpValue(v.members()[i].second, out);
    }
    out += '}';
    break;
  }
}

std::string JsonValue::dump() const {
  std::string out;
  dumpValue(*this, out);
  return out;
}

/// JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
static bool isJsonNumber(std::string_view t) {
  size_t i = 0;
  auto digits = [&] {
    size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9')
      ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-')
    ++i;
  if (i < t.size() && t[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < t.size() && t[i] == '.' && (++i, !digits()))
    return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-'))
      ++i;
    if (!digits())
      return false;
  }
  return i == t.size();
}

class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Expected<JsonValue> parseDocument() {
    Expected<JsonValue> v = parseValue(0);
    if (!v)
      return v;
    skipSpace();
    if (pos_ != text_.size())
      return fail("trailing characters");
    return v;
  }

private:
  Status fail(const std::string &what) const {
    return Status::error(ErrorCode::InvalidArgument,
                         "JSON: " + what + " at byte " + std::to_string(pos_));
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Expected<JsonValue> parseValue(int depth) {
    if (depth > 64)
      return fail("nesting deeper than 64");
    skipSpace();
    if (pos_ >= text_.size())
      return fail("unexpected end");
    char c = text_[pos_];
    if (c == '{')
      return parseObject(depth);
    if (c == '[')
      return parseArray(depth);
    if (c == '"') {
      Expected<std::string> s = parseString();
      if (!s)
        return s.status();
      return JsonValue::string(std::move(*s));
    }
    for (auto [word, kind, value] :
         {std::tuple{std::string_view("true"), JsonValue::Kind::Bool, 1.0},
          std::tuple{std::string_view("false"), JsonValue::Kind::Bool, 0.0},
          std::tuple{std::string_view("null"), JsonValue::Kind::Null, 0.0}})
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        JsonValue j;
        j.kind_ = kind;
        j.number_ = value;
        return j;
      }
    return parseNumber();
  }

  Expected<JsonValue> parseNumber() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           std::string_view("+-0123456789.eE").find(text_[pos_]) !=
               std::string_view::npos)
      ++pos_;
    if (start == pos_)
      return fail("expected a value");
    std::string token(text_.substr(start, pos_ - start));
    if (!isJsonNumber(token))
      return fail("malformed number '" + token + "'");
    double d = std::strtod(token.c_str(), nullptr);
    return JsonValue::number(d);
  }

  Expected<std::string> parseString() {
    if (!consume('"'))
      return fail("expected a string");
    std::string out;
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("unescaped control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        break;
      char e = text_[pos_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        Expected<unsigned> code = hex4();
        if (!code)
          return code.status();
        unsigned cp = *code;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return fail("unpaired low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate must be followed by \uDC00-\uDFFF.
          if (text_.substr(pos_, 2) != "\\u")
            return fail("unpaired high surrogate in \\u escape");
          pos_ += 2;
          Expected<unsigned> low = hex4();
          if (!low)
            return low.status();
          if (*low < 0xDC00 || *low > 0xDFFF)
            return fail("unpaired high surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (*low - 0xDC00);
        }
        appendUtf8(cp, out);
        break;
      }
      default:
        return fail(std::string("unknown escape \\") + e);
      }
    }
    return fail("unterminated string");
  }

  /// Four hex digits of a \\u escape.
  Expected<unsigned> hex4() {
    if (pos_ + 4 > text_.size())
      return fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0)
        return fail("\\u escape needs four hex digits");
      v = v * 16 + static_cast<unsigned>(d);
    }
    return v;
  }

  static void appendUtf8(unsigned cp, std::string &out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Expected<JsonValue> parseArray(int depth) {
    consume('[');
    JsonValue a = JsonValue::array();
    if (consume(']'))
      return a;
    do {
      Expected<JsonValue> v = parseValue(depth + 1);
      if (!v)
        return v;
      a.push(std::move(*v));
    } while (consume(','));
    if (!consume(']'))
      return fail("expected ',' or ']'");
    return a;
  }

  Expected<JsonValue> parseObject(int depth) {
    consume('{');
    JsonValue o = JsonValue::object();
    if (consume('}'))
      return o;
    std::unordered_set<std::string> seen;
    do {
      skipSpace();
      Expected<std::string> key = parseString();
      if (!key)
        return key.status();
      if (!consume(':'))
        return fail("expected ':'");
      Expected<JsonValue> v = parseValue(depth + 1);
      if (!v)
        return v;
      if (!seen.insert(*key).second)
        return fail("duplicate key '" + *key + "'");
      o.set(std::move(*key), std::move(*v));
    } while (consume(','));
    if (!consume('}'))
      return fail("expected ',' or '}'");
    return o;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

Expected<JsonValue> parseJson(std::string_view text) {
  return JsonParser(text).parseDocument();
}

} // namespace anvil::rt
