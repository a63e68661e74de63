//===- Collectives.cpp - the collectives generated CPU code calls ---------===//

#include "anvil/runtime/Dist.h"
#include "anvil/runtime/RuntimeABI.h"

#include <cstdio>
#include <cstdlib>

namespace anvil::rt {
namespace {
Communicator *current = nullptr;
} // namespace

void setCommunicator(Communicator *communicator) { current = communicator; }

} // namespace anvil::rt

extern "C" void anvil_rt_all_reduce_f32(int64_t address, int64_t n,
                                        int32_t op) {
  using namespace anvil::rt;
  if (!current || current->size() == 1)
    return;
  if (op < 0 || op > 2) {
    std::fprintf(stderr, "anvil: all-reduce with unknown op %d\n", op);
    std::abort();
  }
  auto *data = reinterpret_cast<float *>(static_cast<intptr_t>(address));
  Status s = current->allReduce(data, n, static_cast<ReduceOp>(op));
  if (!s.isOk()) {
    std::fprintf(stderr, "anvil: rank %d: all-reduce of %lld floats: %s\n",
                 current->rank(), static_cast<long long>(n),
                 s.message().c_str());
    std::abort();
  }
}
