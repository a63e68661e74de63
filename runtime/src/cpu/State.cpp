//===- State.cpp - initial training state for generated code --------------===//
//
// anvil_module_init(seed, args) of every executable forwards here with its
// embedded manifest: one implementation of the initializers (Init.h), the
// one held bit-equal to the reference interpreter.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Init.h"
#include "anvil/runtime/Manifest.h"
#include "anvil/runtime/RuntimeABI.h"

#include <string>

namespace {
thread_local std::string lastError;

int32_t fail(const anvil::rt::Status &s) {
  lastError = s.message();
  return 1;
}
} // namespace

extern "C" int32_t anvil_rt_init_state(const char *manifestJson, uint64_t seed,
                                       void **args) {
  using namespace anvil::rt;
  Expected<Manifest> m = Manifest::parse(manifestJson);
  if (!m)
    return fail(m.status());
  for (const BufferInfo &b : m->buffers) {
    if (!b.init)
      continue;
    Expected<int64_t> bytes = numBytes(b.spec.shape, b.spec.dtype);
    if (!bytes)
      return fail(bytes.status());
    auto *data = static_cast<std::byte *>(args[b.index]);
    if (Status s = initialize(*b.init, seed, static_cast<uint64_t>(b.index),
                              b.spec.shape, b.spec.dtype,
                              {data, static_cast<size_t>(*bytes)});
        !s)
      return fail(s.withContext("initializing '" + b.spec.name + "'"));
  }
  return 0;
}

extern "C" const char *anvil_rt_last_error(void) { return lastError.c_str(); }
