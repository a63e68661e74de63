//===- World.cpp - the world from the launcher, and the self communicator -===//

#include "anvil/runtime/Dist.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

namespace anvil::rt {

namespace {

Status invalid(std::string message) {
  return Status::error(ErrorCode::InvalidArgument, std::move(message));
}

/// One launcher's variables.
struct Scheme {
  const char *launcher, *rank, *size, *localRank;
};

const Scheme kSchemes[] = {
    {"mpirun (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"srun (Slurm)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"RANK/WORLD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

/// The non-negative integer in variable `name`, absent when unset.
Expected<std::optional<int>>
integer(const std::function<const char *(const char *)> &getenv,
        const char *name) {
  const char *text = getenv(name);
  if (!text)
    return std::optional<int>();
  int v = -1;
  const char *end = text + std::strlen(text);
  auto [p, ec] = std::from_chars(text, end, v);
  if (ec != std::errc() || p != end || v < 0)
    return invalid(std::string(name) + " = '" + text +
                   "' is not a non-negative integer");
  return std::optional<int>(v);
}

class SelfCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string transport() const override { return "self"; }
  Status allReduce(float *, int64_t, ReduceOp) override { return Status::ok(); }
  Status broadcast(void *, int64_t, int root) override {
    return root == 0 ? Status::ok()
                     : invalid("broadcast from rank " + std::to_string(root) +
                               " in a world of one");
  }
  Status allGather(const float *in, int64_t n, float *out) override {
    if (out != in)
      std::memmove(out, in, static_cast<size_t>(n) * sizeof(float));
    return Status::ok();
  }
  Status reduceScatter(const float *in, int64_t n, float *out,
                       ReduceOp) override {
    return allGather(in, n, out);
  }
  Status barrier() override { return Status::ok(); }
  Expected<std::unique_ptr<Communicator>> split(int, int) override {
    return std::unique_ptr<Communicator>(std::make_unique<SelfCommunicator>());
  }
  void abort(int) override {}
};

} // namespace

int64_t MeshLayout::size() const {
  int64_t n = 1;
  for (const auto &axis : axes)
    n *= axis.second;
  return n;
}

std::vector<int64_t> MeshLayout::coordinates(int64_t rank) const {
  std::vector<int64_t> c(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    c[a] = rank % axes[a].second;
    rank /= axes[a].second;
  }
  return c;
}

Expected<std::vector<std::unique_ptr<Communicator>>>
splitMesh(Communicator &world, const MeshLayout &mesh) {
  if (mesh.size() != world.size())
    return invalid("a mesh of " + std::to_string(mesh.size()) +
                   " ranks over a world of " + std::to_string(world.size()));
  std::vector<int64_t> mine = mesh.coordinates(world.rank());
  std::vector<std::unique_ptr<Communicator>> axes;
  for (size_t a = 0; a < mesh.axes.size(); ++a) {
    // The color numbers the other coordinates (row-major without axis a).
    int64_t color = 0;
    for (size_t b = 0; b < mesh.axes.size(); ++b)
      if (b != a)
        color = color * mesh.axes[b].second + mine[b];
    Expected<std::unique_ptr<Communicator>> c =
        world.split(static_cast<int>(color), static_cast<int>(mine[a]));
    if (!c)
      return c.status().withContext("the communicator of mesh axis '" +
                                    mesh.axes[a].first + "'");
    axes.push_back(std::move(*c));
  }
  return axes;
}

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Mean:
    return "mean";
  case ReduceOp::Max:
    return "max";
  }
  return "?";
}

Expected<WorldInfo>
worldFromEnvironment(const std::function<const char *(const char *)> &lookup) {
  std::function<const char *(const char *)> getenv =
      lookup ? lookup : [](const char *n) { return std::getenv(n); };
  std::optional<WorldInfo> world;
  for (const Scheme &s : kSchemes) {
    auto rank = integer(getenv, s.rank);
    auto size = integer(getenv, s.size);
    auto local = integer(getenv, s.localRank);
    for (auto *v : {&rank, &size, &local})
      if (!*v)
        return v->status();
    bool generic = std::string(s.rank) == "RANK";
    // A launcher's rank variable marks a process it started (a Slurm
    // allocation's shell has SLURM_NTASKS but no SLURM_PROCID).
    if (!rank.value() && (!generic || !size.value()))
      continue;
    // Once a launcher is found, only RANK/WORLD_SIZE must agree with it
    // (mpirun inside a Slurm allocation inherits the allocation's SLURM_*).
    if (world && !generic)
      continue;
    if (!rank.value() || !size.value())
      return invalid(std::string(rank.value() ? s.size : s.rank) +
                     " is not set, but " + (rank.value() ? s.rank : s.size) +
                     " is: " + s.launcher + " sets both");
    WorldInfo w;
    w.launcher = s.launcher;
    w.rank = *rank.value();
    w.size = *size.value();
    w.localRank = local.value() ? *local.value() : w.rank;
    if (w.size < 1 || w.rank >= w.size)
      return invalid(std::string(s.rank) + " = " + std::to_string(w.rank) +
                     " lies outside a world of " + s.size + " = " +
                     std::to_string(w.size));
    if (w.localRank > w.rank)
      return invalid(std::string(s.localRank) + " = " +
                     std::to_string(w.localRank) + " exceeds " + s.rank +
                     " = " + std::to_string(w.rank));
    if (!world) {
      world = w;
      continue;
    }
    // A second scheme (RANK/WORLD_SIZE beside a launcher's) must agree.
    if (w.rank != world->rank || w.size != world->size)
      return invalid(std::string(s.rank) + "/" + s.size + " = " +
                     std::to_string(w.rank) + "/" + std::to_string(w.size) +
                     " disagree with " + world->launcher + "'s " +
                     std::to_string(world->rank) + "/" +
                     std::to_string(world->size));
  }
  return world ? *world : WorldInfo();
}

std::unique_ptr<Communicator> makeSelfCommunicator() {
  return std::make_unique<SelfCommunicator>();
}

} // namespace anvil::rt
