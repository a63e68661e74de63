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

#include <cstring>
#include <string>
#include <vector>

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
    std::span<std::byte> mine(data, static_cast<size_t>(*bytes));
    if (!b.sharding) {
      if (Status s = initialize(*b.init, seed, static_cast<uint64_t>(b.index),
                                b.spec.shape, b.spec.dtype, mine);
          !s)
        return fail(s.withContext("initializing '" + b.spec.name + "'"));
      continue;
    }
    // A part of a whole tensor: the whole tensor's values (its fans, its
    // random stream), then this rank's part of them, so that every mesh
    // starts from the single-process state.
    TensorSpec whole = b.globalSpec();
    Expected<int64_t> wholeBytes = numBytes(whole.shape, whole.dtype);
    if (!wholeBytes)
      return fail(wholeBytes.status());
    std::vector<std::byte> all(static_cast<size_t>(*wholeBytes));
    if (Status s = initialize(*b.init, seed, static_cast<uint64_t>(b.index),
                              whole.shape, whole.dtype, all);
        !s)
      return fail(s.withContext("initializing '" + b.spec.name + "'"));
    std::vector<int64_t> coordinates;
    for (size_t a = 0; a < m->mesh.size(); ++a)
      coordinates.push_back(meshAxisPosition(a));
    std::memset(data, 0, mine.size());
    b.layout(m->mesh, coordinates).extract(all, mine, dtypeSize(b.spec.dtype));
  }
  return 0;
}

extern "C" const char *anvil_rt_last_error(void) { return lastError.c_str(); }
