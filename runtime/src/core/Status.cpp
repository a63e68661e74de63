//===- Status.cpp - errors as values for the Anvil runtime ----------------===//
//
// Names of the error codes and the printed form of a Status.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Status.h"

namespace anvil::rt {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok:
    return "ok";
  case ErrorCode::InvalidArgument:
    return "invalid argument";
  case ErrorCode::NotFound:
    return "not found";
  case ErrorCode::OutOfMemory:
    return "out of memory";
  case ErrorCode::IOError:
    return "I/O error";
  case ErrorCode::Unavailable:
    return "unavailable";
  case ErrorCode::Internal:
    return "internal error";
  }
  return "unknown error";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(errorCodeName(code_)) + ": " + message_;
}

} // namespace anvil::rt
