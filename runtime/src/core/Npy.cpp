//===- Npy.cpp - NumPy .npy arrays ----------------------------------------===//
//
// The header is a Python dict literal; it is parsed by a small scanner that
// accepts exactly what numpy writes (quoted keys, a quoted descr, True or
// False, a tuple of non-negative integers) in any key order.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Npy.h"

#include "anvil/runtime/Endian.h"
#include "anvil/runtime/File.h"
#include "anvil/runtime/Safetensors.h"

#include <cstring>
#include <optional>

namespace anvil::rt {

namespace {

struct Descr {
  const char *name;
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"<f8", DType::F64}, {"<f4", DType::F32}, {"<f2", DType::F16},
    {"<i8", DType::I64}, {"<i4", DType::I32}, {"|b1", DType::I1},
};

/// Scans numpy's header dict.
class HeaderScanner {
public:
  explicit HeaderScanner(std::string_view text) : text_(text) {}

  Status scan(std::string &descr, std::optional<bool> &fortran,
              std::optional<std::vector<int64_t>> &shape) {
    if (!eat('{'))
      return fail("expected '{'");
    while (!eat('}')) {
      std::string key;
      if (!quoted(key) || !eat(':'))
        return fail("expected a quoted key and ':'");
      if (key == "descr") {
        if (!quoted(descr))
          return fail("'descr' must be a quoted string");
      } else if (key == "fortran_order") {
        if (word("True"))
          fortran = true;
        else if (word("False"))
          fortran = false;
        else
          return fail("'fortran_order' must be True or False");
      } else if (key == "shape") {
        if (!eat('('))
          return fail("'shape' must be a tuple");
        std::vector<int64_t> dims;
        while (!eat(')')) {
          skipSpace();
          size_t from = pos_;
          int64_t v = 0;
          while (pos_ < text_.size() && text_[pos_] >= '0' &&
                 text_[pos_] <= '9') {
            if (v > (INT64_MAX - 9) / 10)
              return fail("dimension too large");
            v = v * 10 + (text_[pos_++] - '0');
          }
          if (pos_ == from)
            return fail("'shape' must hold non-negative integers");
          dims.push_back(v);
          if (!eat(',') && !peek(')'))
            return fail("expected ',' or ')' in 'shape'");
        }
        shape = std::move(dims);
      } else {
        return fail("unknown key '" + key + "'");
      }
      if (!eat(',') && !peek('}'))
        return fail("expected ',' or '}'");
    }
    return Status::ok();
  }

private:
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n'))
      ++pos_;
  }
  bool peek(char c) {
    skipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool eat(char c) {
    if (!peek(c))
      return false;
    ++pos_;
    return true;
  }
  bool word(std::string_view w) {
    skipSpace();
    if (text_.substr(pos_, w.size()) != w)
      return false;
    pos_ += w.size();
    return true;
  }
  bool quoted(std::string &out) {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return false;
    char q = text_[pos_++];
    size_t end = text_.find(q, pos_);
    if (end == std::string_view::npos)
      return false;
    out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  Status fail(const std::string &msg) {
    return Status::error(ErrorCode::InvalidArgument,
                         "bad header at character " + std::to_string(pos_) +
                             ": " + msg);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

} // namespace

Expected<std::string> npyDescr(DType dtype) {
  for (const Descr &d : kDescrs)
    if (d.dtype == dtype)
      return std::string(d.name);
  return Status::error(ErrorCode::InvalidArgument,
                       "dtype " + std::string(dtypeName(dtype)) +
                           " has no .npy spelling Anvil writes");
}

Expected<NpyArray> readNpy(const std::string &path) {
  auto err = [&](const std::string &msg) {
    return Status::error(ErrorCode::InvalidArgument,
                         "array '" + path + "': " + msg);
  };
  Expected<std::vector<std::byte>> bytes = readFile(path);
  if (!bytes)
    return bytes.status();
  const std::vector<std::byte> &b = *bytes;
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0)
    return err("not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<uint8_t>(b[6]);
  size_t lenBytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (!lenBytes)
    return err(".npy version " + std::to_string(major) +
               " is not supported (1, 2 and 3 are)");
  if (b.size() < 8 + lenBytes)
    return err("truncated header");
  uint64_t headerLen = loadLE(&b[8], lenBytes);
  size_t dataStart = 8 + lenBytes + headerLen;
  if (dataStart > b.size())
    return err("truncated header: it claims " + std::to_string(headerLen) +
               " bytes");
  std::string_view header(
      reinterpret_cast<const char *>(b.data()) + 8 + lenBytes, headerLen);
  std::string descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  if (Status s = HeaderScanner(header).scan(descr, fortran, shape); !s)
    return err(s.message());
  if (descr.empty() || !fortran || !shape)
    return err("the header needs 'descr', 'fortran_order' and 'shape'");
  NpyArray a;
  const Descr *found = nullptr;
  for (const Descr &d : kDescrs)
    if (descr == d.name ||
        (descr[0] == '=' && descr.substr(1) == std::string(d.name + 1)))
      found = &d;
  if (!found) {
    std::string hint = descr[0] == '>'
                           ? " (big-endian: re-save with arr.astype(arr.dtype."
                             "newbyteorder('<')))"
                           : "";
    return err("dtype '" + descr +
               "' is not supported; use <f8 <f4 <f2 <i8 <i4 |b1" + hint);
  }
  if (*fortran)
    return err("Fortran-ordered arrays are not supported; re-save with "
               "np.save(path, np.ascontiguousarray(arr))");
  a.dtype = found->dtype;
  a.shape = std::move(*shape);
  Expected<int64_t> n = numBytes(a.shape, a.dtype);
  if (!n)
    return err(n.status().message());
  uint64_t want = static_cast<uint64_t>(*n);
  if (b.size() - dataStart != want)
    return err("shape " + formatShape(a.shape) + " of " + descr + " needs " +
               std::to_string(want) + " data bytes, the file has " +
               std::to_string(b.size() - dataStart) +
               (b.size() - dataStart < want ? " (truncated)" : ""));
  a.data.assign(b.begin() + static_cast<std::ptrdiff_t>(dataStart), b.end());
  return a;
}

Status writeNpy(const std::string &path, DType dtype,
                std::span<const int64_t> shape,
                std::span<const std::byte> data) {
  Expected<std::string> descr = npyDescr(dtype);
  if (!descr)
    return descr.status();
  Expected<int64_t> n = numBytes(shape, dtype);
  if (!n)
    return n.status();
  if (static_cast<uint64_t>(*n) != data.size())
    return Status::error(ErrorCode::InvalidArgument,
                         "writeNpy: " + std::to_string(data.size()) +
                             " bytes do not fill shape " + formatShape(shape));
  std::string dict =
      "{'descr': '" + *descr + "', 'fortran_order': False, 'shape': (";
  for (int64_t d : shape)
    dict += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dict.resize(dict.size() - 2); // (2, 3) but (2,)
  else if (shape.size() == 1)
    dict.pop_back();
  dict += "), }";
  // Pad with spaces and end with '\n' so the data is 64-byte aligned.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 65535)
    return Status::error(ErrorCode::InvalidArgument,
                         "writeNpy: header too long");
  std::byte head[10] = {std::byte{0x93}, std::byte{'N'}, std::byte{'U'},
                        std::byte{'M'},  std::byte{'P'}, std::byte{'Y'},
                        std::byte{1},    std::byte{0}};
  storeLE(&head[8], dict.size(), 2);
  std::span<const std::byte> pieces[] = {head, std::as_bytes(std::span(dict)),
                                         data};
  return writeFileAtomic(path, pieces);
}

} // namespace anvil::rt
