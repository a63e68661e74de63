//===- MPI.cpp - collectives over MPI (libanvil_mpi) ----------------------===//
//
// The CPU transport of the multi-process runtime. MPI is initialized here
// (threads: MPI_THREAD_FUNNELED, only the main thread communicates) and
// finalized when the communicator goes. Every MPI error becomes a Status
// naming the call and MPI's own message.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Dist.h"

// The C API only: not the removed C++ bindings (which need libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <vector>

namespace anvil::rt {

namespace {

Status mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    length = 0;
  return Status::error(ErrorCode::IOError,
                       std::string(call) + " failed: " +
                           std::string(text, static_cast<size_t>(length)));
}

#define ANVIL_MPI(call)                                                        \
  do {                                                                         \
    int code_ = (call);                                                        \
    if (code_ != MPI_SUCCESS)                                                  \
      return mpiError(#call, code_);                                           \
  } while (0)

/// MPI counts are int: larger buffers go in chunks.
constexpr int64_t kChunk = int64_t(1) << 30;

class MPICommunicator final : public Communicator {
public:
  /// `ownsComm`: `comm` was split off the world and is freed here;
  /// `ownsMPI`: MPI was initialized for this communicator and is finalized
  /// with it.
  MPICommunicator(MPI_Comm comm, int rank, int size, bool ownsComm,
                  bool ownsMPI)
      : comm_(comm), rank_(rank), size_(size), ownsComm_(ownsComm),
        ownsMPI_(ownsMPI) {}
  ~MPICommunicator() override {
    int finalized = 0;
    if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized)
      return;
    if (ownsComm_)
      MPI_Comm_free(&comm_);
    if (ownsMPI_)
      MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string transport() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string v(version, static_cast<size_t>(length));
    return "MPI (" + v.substr(0, v.find(',')) + ")";
  }

  Status allReduce(float *data, int64_t n, ReduceOp op) override {
    for (int64_t at = 0; at < n; at += kChunk) {
      int count = static_cast<int>(std::min(kChunk, n - at));
      ANVIL_MPI(MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT,
                              op == ReduceOp::Max ? MPI_MAX : MPI_SUM, comm_));
    }
    if (op == ReduceOp::Mean)
      scale(data, n);
    return Status::ok();
  }
  Status broadcast(void *data, int64_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return Status::error(ErrorCode::InvalidArgument,
                           "broadcast from rank " + std::to_string(root) +
                               " in a world of " + std::to_string(size_));
    auto *p = static_cast<char *>(data);
    for (int64_t at = 0; at < bytes; at += kChunk)
      ANVIL_MPI(MPI_Bcast(p + at,
                          static_cast<int>(std::min(kChunk, bytes - at)),
                          MPI_BYTE, root, comm_));
    return Status::ok();
  }
  Status allGather(const float *in, int64_t n, float *out) override {
    if (n > INT_MAX)
      return tooLarge("allGather", n);
    ANVIL_MPI(MPI_Allgather(in, static_cast<int>(n), MPI_FLOAT, out,
                            static_cast<int>(n), MPI_FLOAT, comm_));
    return Status::ok();
  }
  Status reduceScatter(const float *in, int64_t n, float *out,
                       ReduceOp op) override {
    if (n > INT_MAX)
      return tooLarge("reduceScatter", n);
    ANVIL_MPI(MPI_Reduce_scatter_block(in, out, static_cast<int>(n), MPI_FLOAT,
                                       op == ReduceOp::Max ? MPI_MAX : MPI_SUM,
                                       comm_));
    if (op == ReduceOp::Mean)
      scale(out, n);
    return Status::ok();
  }
  Status barrier() override {
    ANVIL_MPI(MPI_Barrier(comm_));
    return Status::ok();
  }
  Expected<std::unique_ptr<Communicator>> split(int color, int key) override {
    MPI_Comm part;
    ANVIL_MPI(MPI_Comm_split(comm_, color, key, &part));
    auto made = std::make_unique<MPICommunicator>(part, 0, 1, /*ownsComm=*/true,
                                                  /*ownsMPI=*/false);
    ANVIL_MPI(MPI_Comm_set_errhandler(part, MPI_ERRORS_RETURN));
    ANVIL_MPI(MPI_Comm_rank(part, &made->rank_));
    ANVIL_MPI(MPI_Comm_size(part, &made->size_));
    return std::unique_ptr<Communicator>(std::move(made));
  }
  void abort(int code) override {
    if (size_ > 1)
      MPI_Abort(MPI_COMM_WORLD, code);
  }

private:
  void scale(float *data, int64_t n) const {
    float inverse = 1.0f / static_cast<float>(size_);
    for (int64_t i = 0; i < n; ++i)
      data[i] *= inverse;
  }
  static Status tooLarge(const char *what, int64_t n) {
    return Status::error(ErrorCode::InvalidArgument,
                         std::string(what) + " of " + std::to_string(n) +
                             " elements per rank: MPI counts stop at 2^31 - 1");
  }
  MPI_Comm comm_;
  int rank_, size_;
  bool ownsComm_, ownsMPI_;
};

} // namespace

Expected<std::unique_ptr<Communicator>>
makeMPICommunicator(const WorldInfo &expected) {
  int initialized = 0;
  ANVIL_MPI(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    ANVIL_MPI(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    if (provided < MPI_THREAD_FUNNELED)
      return Status::error(
          ErrorCode::Unavailable,
          "MPI does not support threads (MPI_THREAD_FUNNELED); "
          "the runtime's CPU kernels use them");
  }
  // Errors come back as codes instead of aborting the job.
  ANVIL_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rank = 0, size = 1;
  ANVIL_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  ANVIL_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  auto comm = std::make_unique<MPICommunicator>(
      MPI_COMM_WORLD, rank, size, /*ownsComm=*/false, !initialized);
  if (rank != expected.rank || size != expected.size)
    return Status::error(
        ErrorCode::InvalidArgument,
        "MPI sees rank " + std::to_string(rank) + " of " +
            std::to_string(size) + ", but " + expected.launcher + " says " +
            std::to_string(expected.rank) + " of " +
            std::to_string(expected.size) +
            " (start the ranks with mpirun, srun or anvil-run)");
  return std::unique_ptr<Communicator>(std::move(comm));
}

Expected<std::unique_ptr<Communicator>>
makeWorldCommunicator(const WorldInfo &world) {
  return makeMPICommunicator(world);
}

} // namespace anvil::rt
