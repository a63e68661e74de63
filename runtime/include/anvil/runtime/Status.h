//===- Status.h - errors as values for the Anvil runtime ---------*- C++
//-*-===//
//
// Runtime errors are values that carry a message saying what failed, where,
// and what to do, e.g. "checkpoint 'ckpt/step_100.safetensors': tensor
// 'h.0.attn.qkv.weight' has shape [768,2304], the model expects [768,2305]".
// `Status` is success or an error; `Expected<T>` is a value or an error.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_STATUS_H
#define ANVIL_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace anvil::rt {

/// Broad classes of failure, for callers that react differently to each.
enum class ErrorCode {
  Ok = 0,
  InvalidArgument, ///< The caller passed something malformed.
  NotFound,        ///< A file, tensor or symbol does not exist.
  OutOfMemory,     ///< An allocation failed.
  IOError,         ///< Reading or writing failed.
  Unavailable,     ///< A device or library is not present on this machine.
  Internal,        ///< A bug in Anvil.
};

/// Stable lower-case name of an error code ("invalid argument").
const char *errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(ErrorCode code, std::string message) {
    assert(code != ErrorCode::Ok && "an error needs a non-Ok code");
    return Status(code, std::move(message));
  }

  bool isOk() const { return code_ == ErrorCode::Ok; }
  explicit operator bool() const { return isOk(); }
  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }

  /// Prefixes the message with where it happened: "loading 'x': <message>".
  Status withContext(const std::string &context) const {
    if (isOk())
      return *this;
    return Status(code_, context + ": " + message_);
  }

  /// "invalid argument: <message>", or "ok".
  std::string toString() const;

private:
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  ErrorCode code_ = ErrorCode::Ok;
  std::string message_;
};

/// A value of type T, or the error that prevented computing it.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Status error) : storage_(std::move(error)) {
    assert(!std::get<Status>(storage_).isOk() &&
           "an Expected built from a Status must hold an error");
  }

  bool hasValue() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return hasValue(); }
  T &value() {
    assert(hasValue() && "value() on an error");
    return std::get<T>(storage_);
  }
  const T &value() const {
    assert(hasValue() && "value() on an error");
    return std::get<T>(storage_);
  }
  T &operator*() { return value(); }
  T *operator->() { return &value(); }
  /// The error; Status::ok() when a value is held.
  Status status() const {
    return hasValue() ? Status::ok() : std::get<Status>(storage_);
  }

private:
  std::variant<T, Status> storage_;
};

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_STATUS_H
