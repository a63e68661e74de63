//===- Npy.h - NumPy .npy arrays for image-like inputs ------------*- C++
//-*-===//
//
// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and
// minor version byte, a little-endian header length (uint16 for version 1,
// uint32 for versions 2 and 3), and a Python dict literal with 'descr',
// 'fortran_order' and 'shape'; then the array data in C order.
//
// Anvil reads little-endian (or byte-sized) arrays of its own dtypes:
// '<f8' '<f4' '<f2' '<i8' '<i4' '|b1'. Big-endian data and Fortran order
// are errors that say how to re-save the array.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_NPY_H
#define ANVIL_RUNTIME_NPY_H

#include "anvil/runtime/DType.h"
#include "anvil/runtime/Status.h"

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace anvil::rt {

struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data; ///< dtypeSize * numElements bytes, C order.
};

/// Reads and validates `path`; errors name the file and the problem.
Expected<NpyArray> readNpy(const std::string &path);

/// Writes a version 1.0 .npy file atomically.
Status writeNpy(const std::string &path, DType dtype,
                std::span<const int64_t> shape,
                std::span<const std::byte> data);

/// The .npy descr of an Anvil dtype ("<f4"), or an error.
Expected<std::string> npyDescr(DType dtype);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_NPY_H
