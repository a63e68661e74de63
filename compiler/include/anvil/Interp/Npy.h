//===- Npy.h - reading and writing NumPy .npy files --------------*- C++
//-*-===//
//
// The interpreter's file format. Reads little-endian float16/32/64, int8/
// 16/32/64, uint8 and bool arrays in C order (format versions 1.0 and 2.0);
// writes float64, int64 or bool according to the buffer's element type.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_INTERP_NPY_H
#define ANVIL_INTERP_NPY_H

#include "anvil/Interp/Buffer.h"

#include "llvm/Support/Error.h"

#include <string>

namespace anvil::interp {

/// Reads `path` into a buffer tagged with `elementType` (the values are read
/// as they are; `run` converts them to the type). The shape comes from the
/// file. Errors name the file.
llvm::Expected<Buffer> readNpy(const std::string &path, mlir::Type elementType);

/// Writes `buffer`: float element types as '<f8', i1 as '|b1', other
/// integers as '<i8'.
llvm::Error writeNpy(const std::string &path, const Buffer &buffer);

} // namespace anvil::interp

#endif // ANVIL_INTERP_NPY_H
