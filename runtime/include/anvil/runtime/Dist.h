//===- Dist.h - ranks, worlds and collectives of the multi-process runtime
//-===//
//
// A sharded program runs as one process per device: a *rank* of a *world*.
// `worldFromEnvironment` reads which rank this process is from whatever
// started it:
//
//   Open MPI's mpirun        OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK
//   MPICH / Intel MPI (PMI)  PMI_RANK / PMI_SIZE / MPI_LOCALRANKID
//   Slurm's srun             SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID
//   torchrun and friends     RANK / WORLD_SIZE / LOCAL_RANK
//
// (the first launcher whose rank variable is set, in that order; the
// others' variables are ignored, except RANK/WORLD_SIZE, which must agree
// with it when set), or a world of one when nothing says otherwise.
//
// A `Communicator` runs collectives over the world's ranks. The self
// communicator is the world of one; `makeMPICommunicator` (libanvil_mpi)
// is the CPU transport, NCCL's comes with the CUDA runtime. Collectives are
// blocking and every rank must call them in the same order with the same
// sizes.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_DIST_H
#define ANVIL_RUNTIME_DIST_H

#include "anvil/runtime/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace anvil::rt {

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int localRank = 0; ///< Rank among the processes of this machine.
  /// Who said so: "mpirun (Open MPI)", "PMI", "srun (Slurm)",
  /// "RANK/WORLD_SIZE" or "single process".
  std::string launcher = "single process";
};

/// Reads the world from the launcher's environment; `getenv` is the lookup
/// (::getenv by default; tests pass their own). An error names the
/// variable and value that do not make sense (a rank outside the world, a
/// RANK that disagrees with the launcher's).
Expected<WorldInfo> worldFromEnvironment(
    const std::function<const char *(const char *)> &getenv = {});

/// The values are anvil.all_reduce's op codes (anvil_rt_all_reduce_f32).
enum class ReduceOp { Sum = 0, Mean = 1, Max = 2 };

/// Stable lower-case name ("sum").
const char *reduceOpName(ReduceOp op);

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// What transports the collectives ("self", "MPI (Open MPI 4.1.4)").
  virtual std::string transport() const = 0;

  /// data[i] = op over ranks of data[i], in place, for i < n.
  virtual Status allReduce(float *data, int64_t n, ReduceOp op) = 0;
  /// Every rank's `bytes` at `data` become root's.
  virtual Status broadcast(void *data, int64_t bytes, int root) = 0;
  /// out (size * n) = the concatenation of every rank's `in` (n), in rank
  /// order.
  virtual Status allGather(const float *in, int64_t n, float *out) = 0;
  /// out (n) = op over ranks of this rank's block [rank n, (rank + 1) n)
  /// of `in` (size * n).
  virtual Status reduceScatter(const float *in, int64_t n, float *out,
                               ReduceOp op) = 0;
  virtual Status barrier() = 0;
  /// The ranks that pass the same `color`, ordered by `key` (then by rank
  /// here): a collective call of every rank (MPI_Comm_split).
  virtual Expected<std::unique_ptr<Communicator>> split(int color, int key) = 0;
  /// Ends every rank of the world at once (a rank that fails alone would
  /// leave the others waiting in a collective forever). Does not return
  /// when the world has more than one rank.
  virtual void abort(int code) = 0;
};

/// The world of one: every collective is a copy (or nothing).
std::unique_ptr<Communicator> makeSelfCommunicator();

/// A device mesh laid over the world: axes in order, the last one's
/// coordinate changing fastest with the world rank ({{"dp", 2}, {"tp", 2}}:
/// ranks 0 and 1 are the two tensor-parallel ranks of data-parallel rank 0).
struct MeshLayout {
  std::vector<std::pair<std::string, int64_t>> axes;
  /// The product of the axes' sizes (1 for no axes).
  int64_t size() const;
  /// The coordinates of world rank `rank`, one per axis.
  std::vector<int64_t> coordinates(int64_t rank) const;
};

/// One communicator per axis of `mesh` over `world`: for axis a, the ranks
/// whose other coordinates equal this rank's, ordered by their coordinate
/// on a (so its rank() is this rank's coordinate). A collective call of
/// every rank; the world's size must be the mesh's.
Expected<std::vector<std::unique_ptr<Communicator>>>
splitMesh(Communicator &world, const MeshLayout &mesh);

/// MPI over the launcher's world (libanvil_mpi; initializes MPI, which the
/// communicator finalizes when destroyed). Fails when MPI's world differs
/// from `expected` (for example RANK/WORLD_SIZE set without an MPI
/// launcher, so that every process is a world of one).
Expected<std::unique_ptr<Communicator>>
makeMPICommunicator(const WorldInfo &expected);

/// The communicator of the transport an executable was linked with:
/// MPI (libanvil_mpi, for programs compiled with a mesh) or none
/// (libanvil_single: a world of one, and an error naming the launcher when
/// it started more ranks).
Expected<std::unique_ptr<Communicator>>
makeWorldCommunicator(const WorldInfo &world);

} // namespace anvil::rt

#endif // ANVIL_RUNTIME_DIST_H
