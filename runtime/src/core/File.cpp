//===- File.cpp - whole-file reads and atomic writes ----------------------===//

#include "anvil/runtime/File.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace anvil::rt {

static Status sysError(const std::string &what, const std::string &path) {
  return Status::error(ErrorCode::IOError,
                       what + " '" + path + "': " + std::strerror(errno));
}

Expected<std::vector<std::byte>> readFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT
               ? Status::error(ErrorCode::NotFound,
                               "cannot open '" + path + "': no such file")
               : sysError("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = sysError("cannot stat", path);
    ::close(fd);
    return s;
  }
  std::vector<std::byte> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Status s = n < 0 ? sysError("cannot read", path)
                       : Status::error(ErrorCode::IOError,
                                       "'" + path + "' shrank while reading");
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

std::string parentDirectory(const std::string &path) {
  // "ckpt/" names the directory ckpt, whose parent is ".".
  size_t last = path.find_last_not_of('/');
  if (last == std::string::npos)
    return "/";
  size_t slash = path.rfind('/', last);
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Status syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return sysError("cannot open directory", dir);
  Status s = ::fsync(fd) == 0 ? Status::ok() : sysError("cannot fsync", dir);
  ::close(fd);
  return s;
}

Status writeFileAtomic(const std::string &path,
                       std::span<const std::span<const std::byte>> pieces) {
  // Unique per process and call, so concurrent writers never share one.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return sysError("cannot create", tmp);
  auto fail = [&](Status s) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s.withContext("writing '" + path + "' (left unchanged)");
  };
  for (std::span<const std::byte> piece : pieces) {
    size_t done = 0;
    while (done < piece.size()) {
      ssize_t n = ::write(fd, piece.data() + done, piece.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return fail(sysError("cannot write", tmp));
      done += static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0)
    return fail(sysError("cannot fsync", tmp));
  if (::close(fd) != 0) {
    Status s = sysError("cannot close", tmp);
    ::unlink(tmp.c_str());
    return s.withContext("writing '" + path + "' (left unchanged)");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = sysError("cannot rename to", path);
    ::unlink(tmp.c_str());
    return s.withContext("writing '" + path + "' (left unchanged)");
  }
  return syncDirectory(parentDirectory(path))
      .withContext("'" + path + "' was written but may not survive a crash");
}

} // namespace anvil::rt
