//===- Safetensors.cpp - checkpoint files in the safetensors format -------===//

#include "anvil/runtime/Safetensors.h"

#include "anvil/runtime/Endian.h"
#include "anvil/runtime/File.h"
#include "anvil/runtime/Json.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>

namespace anvil::rt {

std::string formatShape(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

static constexpr size_t kAlign = 8;
/// Headers beyond this are rejected as corrupt before allocating for them.
static constexpr uint64_t kMaxHeaderBytes = 100u << 20;

Status writeSafetensors(const std::string &path,
                        std::span<const TensorRef> tensors,
                        const std::map<std::string, std::string> &metadata) {
  JsonValue header = JsonValue::object();
  if (!metadata.empty()) {
    JsonValue meta = JsonValue::object();
    for (const auto &[k, v] : metadata)
      meta.set(k, JsonValue::string(v));
    header.set("__metadata__", std::move(meta));
  }
  uint64_t offset = 0;
  std::vector<uint64_t> begins;
  for (const TensorRef &t : tensors) {
    Expected<int64_t> n = numBytes(t.spec.shape, t.spec.dtype);
    if (!n)
      return n.status().withContext("tensor '" + t.spec.name + "'");
    uint64_t bytes = static_cast<uint64_t>(*n);
    if (bytes != t.data.size())
      return Status::error(
          ErrorCode::InvalidArgument,
          "tensor '" + t.spec.name + "' has " + std::to_string(t.data.size()) +
              " bytes, its shape " + formatShape(t.spec.shape) + " needs " +
              std::to_string(bytes));
    if (header.get(t.spec.name) || t.spec.name == "__metadata__")
      return Status::error(ErrorCode::InvalidArgument,
                           "duplicate tensor name '" + t.spec.name + "'");
    JsonValue entry = JsonValue::object();
    entry.set("dtype", JsonValue::string(
                           std::string(dtypeSafetensorsName(t.spec.dtype))));
    JsonValue shape = JsonValue::array();
    for (int64_t d : t.spec.shape)
      shape.push(JsonValue::number(static_cast<double>(d)));
    entry.set("shape", std::move(shape));
    entry.set("data_offsets",
              JsonValue::array({JsonValue::number(double(offset)),
                                JsonValue::number(double(offset + bytes))}));
    header.set(t.spec.name, std::move(entry));
    begins.push_back(offset);
    offset = (offset + bytes + kAlign - 1) / kAlign * kAlign;
  }
  std::string text = header.dump();
  // Pad the header with spaces so the data section starts 8-byte aligned.
  text.append((kAlign - (8 + text.size()) % kAlign) % kAlign, ' ');
  std::byte length[8];
  storeLE(length, text.size(), 8);

  static const std::byte zeros[kAlign] = {};
  std::vector<std::span<const std::byte>> pieces;
  pieces.emplace_back(length, 8);
  pieces.emplace_back(reinterpret_cast<const std::byte *>(text.data()),
                      text.size());
  uint64_t written = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    pieces.emplace_back(zeros, begins[i] - written);
    pieces.push_back(tensors[i].data);
    written = begins[i] + tensors[i].data.size();
  }
  pieces.emplace_back(zeros, offset - written);
  return writeFileAtomic(path, pieces);
}

Expected<SafetensorsFile> SafetensorsFile::read(const std::string &path) {
  auto err = [&](const std::string &msg) {
    return Status::error(ErrorCode::InvalidArgument,
                         "checkpoint '" + path + "': " + msg);
  };
  Expected<std::vector<std::byte>> bytes = readFile(path);
  if (!bytes)
    return bytes.status();
  SafetensorsFile file;
  file.path_ = path;
  file.bytes_ = std::move(*bytes);
  const std::vector<std::byte> &b = file.bytes_;
  if (b.size() < 8)
    return err("truncated: " + std::to_string(b.size()) +
               " bytes, too short for the 8-byte header length");
  uint64_t headerLen = loadLE(b.data(), 8);
  if (headerLen > kMaxHeaderBytes || headerLen > b.size() - 8)
    return err("truncated or not a safetensors file: the header claims " +
               std::to_string(headerLen) + " bytes, the file has " +
               std::to_string(b.size() - 8) + " after the length");
  std::string_view text(reinterpret_cast<const char *>(b.data() + 8),
                        headerLen);
  Expected<JsonValue> header = parseJson(text);
  if (!header)
    return err("corrupt header: " + header.status().message());
  if (!header->isObject())
    return err("corrupt header: expected a JSON object");
  const std::byte *data = b.data() + 8 + headerLen;
  uint64_t dataLen = b.size() - 8 - headerLen;

  for (const auto &[name, entry] : header->members()) {
    if (name == "__metadata__") {
      if (!entry.isObject())
        return err("'__metadata__' must be an object");
      for (const auto &[k, v] : entry.members()) {
        if (!v.isString())
          return err("metadata '" + k + "' must be a string");
        file.metadata_[k] = v.asString();
      }
      continue;
    }
    auto terr = [&](const std::string &msg) {
      return err("tensor '" + name + "': " + msg);
    };
    const JsonValue *dtype = entry.get("dtype");
    const JsonValue *shape = entry.get("shape");
    const JsonValue *offsets = entry.get("data_offsets");
    if (!entry.isObject() || !dtype || !dtype->isString() || !shape ||
        !shape->isArray() || !offsets || !offsets->isArray() ||
        offsets->items().size() != 2)
      return terr("needs 'dtype' (string), 'shape' (array) and "
                  "'data_offsets' ([begin, end])");
    TensorRef t;
    t.spec.name = name;
    Expected<DType> dt = parseDType(dtype->asString());
    if (!dt)
      return terr(dt.status().message());
    t.spec.dtype = *dt;
    for (const JsonValue &d : shape->items()) {
      Expected<int64_t> v = d.asInteger();
      if (!v || *v < 0)
        return terr("bad dimension " + d.dump());
      t.spec.shape.push_back(*v);
    }
    Expected<int64_t> begin = offsets->items()[0].asInteger();
    Expected<int64_t> end = offsets->items()[1].asInteger();
    if (!begin || !end || *begin < 0 || *end < *begin)
      return terr("bad data_offsets " + offsets->dump());
    if (static_cast<uint64_t>(*end) > dataLen)
      return terr("truncated: data ends at byte " + std::to_string(*end) +
                  " of a " + std::to_string(dataLen) + "-byte data section");
    Expected<int64_t> n = numBytes(t.spec.shape, t.spec.dtype);
    if (!n)
      return terr(n.status().message());
    uint64_t want = static_cast<uint64_t>(*n);
    if (static_cast<uint64_t>(*end - *begin) != want)
      return terr("data_offsets span " + std::to_string(*end - *begin) +
                  " bytes, shape " + formatShape(t.spec.shape) + " of " +
                  std::string(dtypeSafetensorsName(t.spec.dtype)) + " needs " +
                  std::to_string(want));
    t.data = {data + *begin, static_cast<size_t>(want)};
    file.tensors_.push_back(std::move(t));
  }
  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const TensorRef &a, const TensorRef &b) {
              return std::pair(a.data.data(), a.data.size()) <
                     std::pair(b.data.data(), b.data.size());
            });
  // Empty tensors occupy no bytes and overlap nothing.
  const TensorRef *prev = nullptr;
  for (const TensorRef &t : file.tensors_) {
    if (t.data.empty())
      continue;
    if (prev && prev->data.data() + prev->data.size() > t.data.data())
      return err("tensors '" + prev->spec.name + "' and '" + t.spec.name +
                 "' overlap");
    prev = &t;
  }
  // Names are unique: the JSON reader rejects duplicate keys.
  for (size_t i = 0; i < file.tensors_.size(); ++i)
    file.byName_.emplace(file.tensors_[i].spec.name, i);
  return file;
}

const TensorRef *SafetensorsFile::find(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

Status SafetensorsFile::matches(std::span<const TensorSpec> expected) const {
  auto err = [&](const std::string &msg) {
    return Status::error(ErrorCode::InvalidArgument,
                         "checkpoint '" + path_ + "': " + msg);
  };
  for (const TensorSpec &want : expected) {
    const TensorRef *have = find(want.name);
    if (!have)
      return err("tensor '" + want.name +
                 "' is missing (a checkpoint of another model?)");
    if (have->spec.shape != want.shape)
      return err("tensor '" + want.name + "' has shape " +
                 formatShape(have->spec.shape) + ", the model expects " +
                 formatShape(want.shape));
    if (have->spec.dtype != want.dtype)
      return err("tensor '" + want.name + "' has dtype " +
                 std::string(dtypeSafetensorsName(have->spec.dtype)) +
                 ", the model expects " +
                 std::string(dtypeSafetensorsName(want.dtype)));
  }
  std::unordered_set<std::string_view> wanted;
  for (const TensorSpec &want : expected)
    wanted.insert(want.name);
  if (tensors_.size() != wanted.size())
    for (const TensorRef &have : tensors_)
      if (!wanted.count(have.spec.name))
        return err("tensor '" + have.spec.name +
                   "' is not part of the model (a checkpoint of another "
                   "model?)");
  return Status::ok();
}

} // namespace anvil::rt
