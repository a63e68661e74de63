//===- Collectives.cpp - the collectives generated CPU code calls ---------===//
//
// Generated code names a mesh axis by its position in the program's mesh;
// the trainer sets one communicator per axis (the ranks that share every
// other coordinate). Without one, an axis is a world of one: reductions
// leave their values, gathers, scatters and slices copy (with the device's
// copy: the buffers may be a GPU's memory).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Dist.h"
#include "anvil/runtime/RuntimeABI.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace anvil::rt {
namespace {
std::vector<Communicator *> meshAxes;

/// The communicator of `axis`, or null for a world of one.
Communicator *axisCommunicator(int32_t axis) {
  if (axis < 0 || static_cast<size_t>(axis) >= meshAxes.size())
    return nullptr;
  Communicator *c = meshAxes[static_cast<size_t>(axis)];
  return c && c->size() > 1 ? c : nullptr;
}

float *floats(int64_t address) {
  return reinterpret_cast<float *>(static_cast<intptr_t>(address));
}

ReduceOp reduceOp(const char *what, int32_t op) {
  if (op < 0 || op > 2) {
    std::fprintf(stderr, "anvil: %s with unknown op %d\n", what, op);
    std::abort();
  }
  return static_cast<ReduceOp>(op);
}

void check(const Status &s, Communicator *c, const char *what, int64_t n) {
  if (s.isOk())
    return;
  std::fprintf(stderr,
               "anvil: rank %d of an axis of %d: %s of %lld floats: %s\n",
               c->rank(), c->size(), what, static_cast<long long>(n),
               s.message().c_str());
  std::abort();
}
} // namespace

void setMeshCommunicators(std::vector<Communicator *> axes) {
  meshAxes = std::move(axes);
}

int64_t meshAxisPosition(size_t axis) {
  Communicator *c = axisCommunicator(static_cast<int32_t>(axis));
  return c ? c->rank() : 0;
}

} // namespace anvil::rt

using namespace anvil::rt;

extern "C" void anvil_rt_all_reduce_f32(int64_t address, int64_t n, int32_t op,
                                        int32_t axis) {
  ReduceOp r = reduceOp("all-reduce", op);
  if (Communicator *c = axisCommunicator(axis)) {
    anvil_rt_device_synchronize(); // the kernels that wrote the buffer
    check(c->allReduce(floats(address), n, r), c, "all-reduce", n);
  }
}

extern "C" void anvil_rt_all_gather_f32(int64_t in, int64_t out, int64_t n,
                                        int32_t axis) {
  if (Communicator *c = axisCommunicator(axis)) {
    anvil_rt_device_synchronize();
    check(c->allGather(floats(in), n, floats(out)), c, "all-gather", n);
  } else
    anvil_rt_device_copy(floats(out), floats(in), static_cast<uint64_t>(n) * 4);
}

extern "C" void anvil_rt_reduce_scatter_f32(int64_t in, int64_t out, int64_t n,
                                            int32_t op, int32_t axis) {
  ReduceOp r = reduceOp("reduce-scatter", op);
  if (Communicator *c = axisCommunicator(axis)) {
    anvil_rt_device_synchronize();
    check(c->reduceScatter(floats(in), n, floats(out), r), c, "reduce-scatter",
          n);
  } else
    anvil_rt_device_copy(floats(out), floats(in), static_cast<uint64_t>(n) * 4);
}

extern "C" void anvil_rt_axis_slice_f32(int64_t in, int64_t out, int64_t n,
                                        int32_t axis) {
  Communicator *c = axisCommunicator(axis);
  int64_t index = c ? c->rank() : 0;
  anvil_rt_device_copy(floats(out), floats(in) + index * n,
                       static_cast<uint64_t>(n) * 4);
}

extern "C" int64_t anvil_rt_axis_index(int32_t axis) {
  Communicator *c = axisCommunicator(axis);
  return c ? c->rank() : 0;
}
