//===- File.h - whole-file reads and atomic writes ----------------*- C++
//-*-===//
//
// Checkpoints and data shards are written atomically: the bytes go to a
// temporary file next to the destination, which is fsync'ed and renamed
// over it, and the directory is fsync'ed. A crash or a full disk leaves the
// previous file intact.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_FILE_H
#define ANVIL_RUNTIME_FILE_H

#include "anvil/runtime/Status.h"

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace anvil::rt {

/// Reads the whole file; errors name the path and the system's reason.
Expected<std::vector<std::byte>> readFile(const std::string &path);

/// Writes the concatenation of `pieces` to `path` atomically (temporary
/// file, fsync, rename, fsync of the directory). On failure the temporary
/// file is removed and `path` is untouched.
Status writeFileAtomic(const std::string &path,
                       std::span<const std::span<const std::byte>> pieces);

/// The directory part of `path`: "a/b" for "a/b/c", "." for "c", "/" for "/c".
std::string parentDirectory(const std::string &path);

/// fsyncs the directory `dir`, making renames and creations in it durable.
Status syncDirectory(const std::string &dir);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_FILE_H
