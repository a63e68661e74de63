//===- Nccl.cpp - NCCL communicators for the mesh axes of CUDA programs ---===//
//
// NCCL is opened at run time (dlopen of libnccl.so.2, like the driver), so
// a CUDA executable starts where NCCL is missing and says so when a mesh
// needs it. One communicator per mesh axis, bootstrapped over the axis's
// MPI communicator: rank 0 makes the ncclUniqueId, the host communicator
// broadcasts it, every rank calls ncclCommInitRank on its device.
//
// Generated code calls the collectives between launches (the runtime's
// collective functions wait for the queued work first:
// anvil_rt_device_synchronize), on managed or device buffers: NCCL runs them
// on the step stream (cuda::stepStream), which is synchronized before the
// call returns. Host buffers, and everything that is not an f32
// collective, stay with the host communicator. A step that calls
// collectives is not captured as a CUDA graph (the compiler says so).
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Cuda.h"
#include "anvil/runtime/Dist.h"

#include "DynamicLibrary.h"

#include <nccl.h>

#include <mutex>
#include <string>

using namespace anvil::rt;

namespace {

/// The NCCL entry points Anvil uses.
struct Nccl {
  decltype(&::ncclGetVersion) getVersion = nullptr;
  decltype(&::ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&::ncclCommInitRank) commInitRank = nullptr;
  decltype(&::ncclCommDestroy) commDestroy = nullptr;
  decltype(&::ncclAllReduce) allReduce = nullptr;
  decltype(&::ncclAllGather) allGather = nullptr;
  decltype(&::ncclReduceScatter) reduceScatter = nullptr;
  decltype(&::ncclGetErrorString) getErrorString = nullptr;
  std::string version;
};

Status unavailable(const std::string &why) {
  return Status::error(ErrorCode::Unavailable, "NCCL: " + why);
}

/// Opens NCCL once; the failure, if any, is remembered.
Expected<const Nccl *> nccl() {
  static std::once_flag once;
  static Nccl n;
  static Status status;
  std::call_once(once, [] {
    // The loader's path first, then the CUDA toolkit's (where NCCL comes
    // with it).
    cuda::DynamicLibrary library({"libnccl.so.2",
                                  "/usr/local/cuda/lib/libnccl.so.2",
                                  "/usr/local/cuda/lib64/libnccl.so.2"});
    if (!library.isOpen()) {
      status = unavailable("libnccl.so.2 not found (" + library.tried() + ")");
      return;
    }
    auto get = [&](auto &fn, const char *name) { library.get(fn, name); };
    get(n.getVersion, "ncclGetVersion");
    get(n.getUniqueId, "ncclGetUniqueId");
    get(n.commInitRank, "ncclCommInitRank");
    get(n.commDestroy, "ncclCommDestroy");
    get(n.allReduce, "ncclAllReduce");
    get(n.allGather, "ncclAllGather");
    get(n.reduceScatter, "ncclReduceScatter");
    get(n.getErrorString, "ncclGetErrorString");
    if (!library.missing().empty()) {
      status = unavailable("libnccl.so.2 lacks " + library.missing());
      return;
    }
    int v = 0;
    n.getVersion(&v);
    // ncclAvg (mean) needs 2.10; NCCL_VERSION_CODE is 10000 major + 100
    // minor + patch since 2.9.
    if (v < 21000) {
      status = unavailable("version " + std::to_string(v) +
                           " is older than 2.10 (ncclAvg)");
      return;
    }
    n.version = std::to_string(v / 10000) + "." +
                std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  });
  if (!status.isOk())
    return status;
  return &n;
}

class NCCLCommunicator : public Communicator {
public:
  NCCLCommunicator(const Nccl &n, std::unique_ptr<Communicator> host,
                   ncclComm_t comm)
      : n(n), host(std::move(host)), comm(comm) {}
  ~NCCLCommunicator() override { n.commDestroy(comm); }

  int rank() const override { return host->rank(); }
  int size() const override { return host->size(); }
  std::string transport() const override {
    return "NCCL " + n.version + " (bootstrapped over " + host->transport() +
           ")";
  }

  Status allReduce(float *data, int64_t count, ReduceOp op) override {
    if (!cuda::isDeviceAddressable(data))
      return host->allReduce(data, count, op);
    return finish(n.allReduce(data, data, static_cast<size_t>(count),
                              ncclFloat32, ncclOp(op), comm, stream()),
                  "ncclAllReduce", count);
  }
  Status allGather(const float *in, int64_t count, float *out) override {
    if (!cuda::isDeviceAddressable(in) || !cuda::isDeviceAddressable(out))
      return host->allGather(in, count, out);
    return finish(n.allGather(in, out, static_cast<size_t>(count), ncclFloat32,
                              comm, stream()),
                  "ncclAllGather", count);
  }
  Status reduceScatter(const float *in, int64_t count, float *out,
                       ReduceOp op) override {
    if (!cuda::isDeviceAddressable(in) || !cuda::isDeviceAddressable(out))
      return host->reduceScatter(in, count, out, op);
    return finish(n.reduceScatter(in, out, static_cast<size_t>(count),
                                  ncclFloat32, ncclOp(op), comm, stream()),
                  "ncclReduceScatter", count);
  }
  Status broadcast(void *data, int64_t bytes, int root) override {
    return host->broadcast(data, bytes, root);
  }
  Status barrier() override { return host->barrier(); }
  Expected<std::unique_ptr<Communicator>> split(int color, int key) override {
    Expected<std::unique_ptr<Communicator>> part = host->split(color, key);
    if (!part)
      return part.status();
    return cuda::makeNCCLCommunicator(*part, /*wanted=*/true);
  }
  void abort(int code) override { host->abort(code); }

private:
  static ncclRedOp_t ncclOp(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Mean:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    }
    return ncclSum;
  }
  static cudaStream_t stream() {
    return static_cast<cudaStream_t>(cuda::stepStream());
  }
  /// The call's result, then the step stream's completion.
  Status finish(ncclResult_t result, const char *call, int64_t count) {
    std::string what = std::string(call) + " of " + std::to_string(count) +
                       " floats on rank " + std::to_string(rank()) + " of " +
                       std::to_string(size());
    if (result != ncclSuccess)
      return Status::error(ErrorCode::IOError, "NCCL: " + what + " failed: " +
                                                   n.getErrorString(result) +
                                                   cuda::whereInStep());
    return cuda::synchronizeStepStream(what.c_str());
  }

  const Nccl &n;
  std::unique_ptr<Communicator> host;
  ncclComm_t comm;
};

} // namespace

Expected<std::unique_ptr<Communicator>>
cuda::makeNCCLCommunicator(std::unique_ptr<Communicator> &host, bool wanted) {
  // Every rank learns whether every rank can (and wants to): a rank that
  // failed alone would leave the others waiting for its unique id.
  Expected<const Nccl *> loaded = nccl();
  Status local = !wanted  ? unavailable("not wanted here (ANVIL_NCCL=0)")
                 : loaded ? initialize()
                          : loaded.status();
  auto agree = [&](bool ok, const char *what) -> Expected<bool> {
    float failed = ok ? 0.0f : 1.0f;
    if (Status st = host->allReduce(&failed, 1, ReduceOp::Max); !st.isOk())
      return st.withContext(what);
    return failed == 0.0f;
  };
  Expected<bool> all = agree(local.isOk(), "agreeing on NCCL");
  if (!all)
    return all.status();
  if (!local.isOk())
    return local;
  if (!*all)
    return unavailable("another rank of the axis could not start it");
  const Nccl &n = **loaded;
  struct {
    int32_t ok;
    ncclUniqueId id;
  } message{};
  if (host->rank() == 0)
    message.ok = n.getUniqueId(&message.id) == ncclSuccess;
  if (Status st = host->broadcast(&message, sizeof message, 0); !st.isOk())
    return st.withContext("sharing the NCCL unique id");
  if (!message.ok)
    return unavailable("ncclGetUniqueId failed on rank 0");
  ncclComm_t comm = nullptr;
  ncclResult_t r =
      n.commInitRank(&comm, host->size(), message.id, host->rank());
  // Where the initialization returned on every rank, they agree again: a
  // rank that failed must not leave the others on NCCL. (A rank that fails
  // while another waits inside ncclCommInitRank is NCCL's to time out.)
  Expected<bool> joined = agree(r == ncclSuccess, "agreeing on NCCL's start");
  if (!joined || !*joined) {
    if (r == ncclSuccess)
      n.commDestroy(comm);
    if (!joined)
      return joined.status();
    return unavailable(r != ncclSuccess
                           ? "ncclCommInitRank (rank " +
                                 std::to_string(host->rank()) + " of " +
                                 std::to_string(host->size()) +
                                 ") failed: " + n.getErrorString(r)
                           : std::string("ncclCommInitRank failed on another "
                                         "rank of the axis"));
  }
  return std::unique_ptr<Communicator>(
      new NCCLCommunicator(n, std::move(host), comm));
}
