//===- Npy.cpp - reading and writing NumPy .npy files ---------------------===//
//
// The format: a magic string, a version, a little-endian header length and
// a Python-literal header {'descr': '<f8', 'fortran_order': False,
// 'shape': (2, 3), }, then the raw data.
//
//===----------------------------------------------------------------------===//

#include "anvil/Interp/Npy.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

namespace anvil::interp {
namespace {

llvm::Error fail(const std::string &path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'" + path + "': " + message);
}

/// The value of `'key': value` in the header dict, up to the next comma at
/// depth 0.
std::string headerField(llvm::StringRef header, llvm::StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == llvm::StringRef::npos)
    return "";
  size_t colon = header.find(':', at);
  size_t end = colon + 1;
  int depth = 0;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  return header.substr(colon + 1, end - colon - 1).trim().str();
}

template <typename T> double load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<double>(v);
}

} // namespace

llvm::Expected<Buffer> readNpy(const std::string &path, Type elementType) {
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return fail(path, "cannot read: " + file.getError().message());
  llvm::StringRef bytes = (*file)->getBuffer();
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return fail(path, "not a .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                static_cast<unsigned char>(bytes[9]) << 8;
    headerStart = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
                   << (8 * i);
    headerStart = 12;
  } else {
    return fail(path, "unsupported .npy version " + llvm::Twine(major));
  }
  if (bytes.size() < headerStart + headerLen)
    return fail(path, "truncated header");
  llvm::StringRef header = bytes.substr(headerStart, headerLen);
  std::string descr = headerField(header, "descr");
  std::string order = headerField(header, "fortran_order");
  std::string shapeText = headerField(header, "shape");
  if (order != "False")
    return fail(path, "Fortran-order arrays are not supported");
  descr = llvm::StringRef(descr).trim("'\"").str();

  std::vector<int64_t> shape;
  llvm::StringRef dims = llvm::StringRef(shapeText).trim("() ");
  llvm::SmallVector<llvm::StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.trim().getAsInteger(10, d) || d < 0)
      return fail(path, "bad shape " + shapeText);
    shape.push_back(d);
  }

  // Element size and loader by dtype (little-endian or byte-sized only).
  size_t size = 0;
  double (*loader)(const char *) = nullptr;
  llvm::StringRef d(descr);
  if (d == "<f8") {
    size = 8;
    loader = load<double>;
  } else if (d == "<f4") {
    size = 4;
    loader = load<float>;
  } else if (d == "<i8") {
    size = 8;
    loader = load<int64_t>;
  } else if (d == "<i4") {
    size = 4;
    loader = load<int32_t>;
  } else if (d == "<i2") {
    size = 2;
    loader = load<int16_t>;
  } else if (d == "|i1") {
    size = 1;
    loader = load<int8_t>;
  } else if (d == "|u1") {
    size = 1;
    loader = load<uint8_t>;
  } else if (d == "|b1") {
    size = 1;
    loader = load<uint8_t>;
  } else if (d == "<f2") {
    size = 2;
    loader = [](const char *p) {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      llvm::APFloat f(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
      bool losesInfo;
      f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &losesInfo);
      return f.convertToDouble();
    };
  } else {
    return fail(path, "unsupported dtype '" + descr +
                          "' (supported: <f8 <f4 <f2 <i8 <i4 <i2 |i1 |u1 |b1)");
  }

  // Check the size against the file before allocating anything.
  size_t dataStart = headerStart + headerLen;
  int64_t count = 1;
  for (int64_t d : shape)
    if (llvm::MulOverflow(count, d, count))
      return fail(path, "shape " + shapeText + " is too large");
  if (static_cast<uint64_t>(count) > (bytes.size() - dataStart) / size)
    return fail(path, "holds fewer elements than its shape (" + shapeText +
                          ") needs");
  Buffer b(shape, elementType);
  for (size_t i = 0; i < b.data.size(); ++i)
    b.data[i] = loader(bytes.data() + dataStart + i * size);
  return b;
}

llvm::Error writeNpy(const std::string &path, const Buffer &buffer) {
  bool isFloat = !buffer.elementType || isa<FloatType>(buffer.elementType);
  bool isBool = !isFloat && buffer.elementType.isSignlessInteger(1);
  // Python tuple syntax: (), (n,), (a, b, c).
  std::string shape = "(";
  for (int64_t i = 0; i < buffer.rank(); ++i)
    shape += (i ? ", " : "") + std::to_string(buffer.shape[i]);
  shape += buffer.rank() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") +
                       (isFloat  ? "<f8"
                        : isBool ? "|b1"
                                 : "<i8") +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that the data starts on a 64-byte boundary.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return fail(path, "cannot write: " + ec.message());
  os << "\x93NUMPY" << '\x01' << '\x00';
  os << static_cast<char>(header.size() & 0xff)
     << static_cast<char>(header.size() >> 8) << header;
  for (double v : buffer.data) {
    if (isFloat) {
      os.write(reinterpret_cast<const char *>(&v), 8);
    } else if (isBool) {
      char c = v != 0.0;
      os.write(&c, 1);
    } else {
      auto i = static_cast<int64_t>(v);
      os.write(reinterpret_cast<const char *>(&i), 8);
    }
  }
  return llvm::Error::success();
}

} // namespace anvil::interp
