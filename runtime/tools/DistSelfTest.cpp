//===- DistSelfTest.cpp - the collectives of a world, checked -------------===//
//
// Run under a launcher (`anvil-run -n 4 anvil-dist-selftest`): every rank
// checks every collective of its communicator against the values it can
// compute alone, over sizes that include empty and odd ones, then rank 0
// prints one line. Exits 1 on the first disagreement, naming it.
//
//===----------------------------------------------------------------------===//

#include "anvil/runtime/Dist.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace anvil::rt;

namespace {

/// A value no two (rank, index) pairs share, exact in f32.
float value(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * 1000 + i % 997);
}

int check(bool ok, int rank, const std::string &what) {
  if (ok)
    return 0;
  std::fprintf(stderr, "anvil-dist-selftest: rank %d: %s\n", rank,
               what.c_str());
  return 1;
}

} // namespace

int main() {
  Expected<WorldInfo> world = worldFromEnvironment();
  if (!world) {
    std::fprintf(stderr, "anvil-dist-selftest: %s\n",
                 world.status().message().c_str());
    return 1;
  }
  Expected<std::unique_ptr<Communicator>> made = makeMPICommunicator(*world);
  if (!made) {
    std::fprintf(stderr, "anvil-dist-selftest: %s\n",
                 made.status().message().c_str());
    return 1;
  }
  Communicator &c = **made;
  const int r = c.rank(), n = c.size();
  auto ok = [&](Status s, const char *what) {
    return check(s.isOk(), r, std::string(what) + ": " + s.message());
  };
  int failures = 0;
  for (int64_t count : {int64_t(0), int64_t(1), int64_t(7), int64_t(4099)}) {
    std::string at = " (" + std::to_string(count) + " elements)";
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max}) {
      std::vector<float> x(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i)
        x[i] = value(r, i);
      failures += ok(c.allReduce(x.data(), count, op), "allReduce");
      for (int64_t i = 0; i < count && !failures; ++i) {
        double sum = 0, max = 0;
        for (int k = 0; k < n; ++k) {
          sum += value(k, i);
          max = std::max<double>(max, value(k, i));
        }
        double want = op == ReduceOp::Sum    ? sum
                      : op == ReduceOp::Mean ? sum / n
                                             : max;
        failures += check(std::abs(x[i] - want) <= 1e-6 * std::abs(want), r,
                          std::string("allReduce ") + reduceOpName(op) + at);
      }
    }
    std::vector<float> mine(static_cast<size_t>(count)),
        all(static_cast<size_t>(count * n));
    for (int64_t i = 0; i < count; ++i)
      mine[i] = value(r, i);
    failures += ok(c.allGather(mine.data(), count, all.data()), "allGather");
    for (int k = 0; k < n && !failures; ++k)
      for (int64_t i = 0; i < count; ++i)
        failures +=
            check(all[k * count + i] == value(k, i), r, "allGather" + at);
    std::vector<float> blocks(static_cast<size_t>(count * n)), out(mine.size());
    for (int k = 0; k < n; ++k)
      for (int64_t i = 0; i < count; ++i)
        blocks[k * count + i] = value(r, k * count + i);
    failures +=
        ok(c.reduceScatter(blocks.data(), count, out.data(), ReduceOp::Sum),
           "reduceScatter");
    for (int64_t i = 0; i < count && !failures; ++i) {
      double want = 0;
      for (int k = 0; k < n; ++k)
        want += value(k, r * count + i);
      failures += check(out[i] == want, r, "reduceScatter" + at);
    }
    std::vector<float> b(static_cast<size_t>(count), static_cast<float>(r));
    failures += ok(c.broadcast(b.data(), count * 4, n - 1), "broadcast");
    for (int64_t i = 0; i < count && !failures; ++i)
      failures += check(b[i] == static_cast<float>(n - 1), r, "broadcast" + at);
  }
  failures += ok(c.barrier(), "barrier");
  // A mesh of two axes over the world: each axis's communicator holds the
  // ranks that share the other coordinate, ordered by its own.
  if (n % 2 == 0) {
    MeshLayout mesh{{{"a", n / 2}, {"b", 2}}};
    Expected<std::vector<std::unique_ptr<Communicator>>> axes =
        splitMesh(c, mesh);
    failures += ok(axes ? Status::ok() : axes.status(), "splitMesh");
    if (axes) {
      std::vector<int64_t> at = mesh.coordinates(r);
      for (size_t a = 0; a < 2; ++a) {
        Communicator &axis = *(*axes)[a];
        failures +=
            check(axis.rank() == at[a] && axis.size() == mesh.axes[a].second, r,
                  "splitMesh: position on axis " + mesh.axes[a].first);
        // The sum of the world ranks along the axis.
        float sum = static_cast<float>(r);
        failures += ok(axis.allReduce(&sum, 1, ReduceOp::Sum), "allReduce");
        double want = 0;
        for (int k = 0; k < n; ++k) {
          std::vector<int64_t> other = mesh.coordinates(k);
          if (other[1 - a] == at[1 - a])
            want += k;
        }
        failures +=
            check(sum == want, r, "allReduce over axis " + mesh.axes[a].first);
      }
    }
  }
  // Every rank's verdict: rank 0 reports (and fails) for the world.
  float total = static_cast<float>(failures);
  if (!c.allReduce(&total, 1, ReduceOp::Sum).isOk() || total != 0) {
    if (r == 0)
      std::fprintf(stderr, "anvil-dist-selftest: %g failed checks\n", total);
    return 1;
  }
  if (r == 0)
    std::printf("anvil-dist-selftest: %d rank%s (%s; ranks from %s): "
                "allReduce, allGather, reduceScatter, broadcast, barrier and "
                "mesh axes "
                "agree\n",
                n, n == 1 ? "" : "s", c.transport().c_str(),
                world->launcher.c_str());
  return 0;
}
