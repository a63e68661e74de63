//===- DistTest.cpp - the world from each launcher's environment ----------===//

#include "anvil/runtime/Dist.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace anvil::rt;

namespace {

Expected<WorldInfo> worldOf(const std::map<std::string, std::string> &env) {
  return worldFromEnvironment([&](const char *name) -> const char * {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string errorOf(const std::map<std::string, std::string> &env) {
  Expected<WorldInfo> w = worldOf(env);
  return w ? "" : w.status().message();
}

} // namespace

TEST(Dist, NoLauncherIsAWorldOfOne) {
  Expected<WorldInfo> w = worldOf({});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->rank, 0);
  EXPECT_EQ(w->size, 1);
  EXPECT_EQ(w->launcher, "single process");
}

TEST(Dist, EachLauncherIsRead) {
  struct Case {
    std::map<std::string, std::string> env;
    const char *launcher;
  } cases[] = {
      {{{"OMPI_COMM_WORLD_RANK", "3"},
        {"OMPI_COMM_WORLD_SIZE", "8"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
       "mpirun (Open MPI)"},
      {{{"PMI_RANK", "3"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"}}, "PMI"},
      {{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}},
       "srun (Slurm)"},
      {{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}},
       "RANK/WORLD_SIZE"},
  };
  for (const Case &c : cases) {
    Expected<WorldInfo> w = worldOf(c.env);
    ASSERT_TRUE(w) << c.launcher << ": " << w.status().message();
    EXPECT_EQ(w->launcher, c.launcher);
    EXPECT_EQ(w->rank, 3);
    EXPECT_EQ(w->size, 8);
    EXPECT_EQ(w->localRank, 1);
  }
}

TEST(Dist, RankAndWorldSizeMustAgreeWithTheLauncher) {
  EXPECT_TRUE(worldOf({{"SLURM_PROCID", "2"},
                       {"SLURM_NTASKS", "4"},
                       {"RANK", "2"},
                       {"WORLD_SIZE", "4"}}));
  EXPECT_EQ(errorOf({{"SLURM_PROCID", "2"},
                     {"SLURM_NTASKS", "4"},
                     {"RANK", "1"},
                     {"WORLD_SIZE", "4"}}),
            "RANK/WORLD_SIZE = 1/4 disagree with srun (Slurm)'s 2/4");
}

TEST(Dist, OnlyALaunchersRankVariableMakesARank) {
  // A Slurm allocation's shell: the allocation's size, no task of it.
  Expected<WorldInfo> w = worldOf({{"SLURM_NTASKS", "4"}});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->size, 1);
  // mpirun inside that allocation: Open MPI's variables win.
  w = worldOf({{"OMPI_COMM_WORLD_RANK", "1"},
               {"OMPI_COMM_WORLD_SIZE", "2"},
               {"SLURM_PROCID", "0"},
               {"SLURM_NTASKS", "4"}});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->launcher, "mpirun (Open MPI)");
  EXPECT_EQ(w->rank, 1);
  EXPECT_EQ(w->size, 2);
}

TEST(Dist, BadValuesNameTheVariable) {
  EXPECT_EQ(errorOf({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
            "RANK = 4 lies outside a world of WORLD_SIZE = 4");
  EXPECT_EQ(errorOf({{"RANK", "x"}, {"WORLD_SIZE", "4"}}),
            "RANK = 'x' is not a non-negative integer");
  EXPECT_EQ(errorOf({{"RANK", "1"}}),
            "WORLD_SIZE is not set, but RANK is: RANK/WORLD_SIZE sets both");
  EXPECT_EQ(errorOf({{"RANK", "1"}, {"WORLD_SIZE", "0"}}),
            "RANK = 1 lies outside a world of WORLD_SIZE = 0");
  EXPECT_EQ(errorOf({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}}),
            "LOCAL_RANK = 2 exceeds RANK = 1");
}

TEST(Dist, TheSelfCommunicatorIsAWorldOfOne) {
  auto c = makeSelfCommunicator();
  EXPECT_EQ(c->size(), 1);
  float x[3] = {1, 2, 3}, y[3] = {};
  EXPECT_TRUE(c->allReduce(x, 3, ReduceOp::Mean).isOk());
  EXPECT_EQ(x[2], 3.0f);
  EXPECT_TRUE(c->allGather(x, 3, y).isOk());
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_FALSE(c->broadcast(x, 12, 1).isOk());
}

TEST(Dist, MeshCoordinatesAreRowMajor) {
  MeshLayout mesh{{{"dp", 2}, {"tp", 3}}};
  EXPECT_EQ(mesh.size(), 6);
  // The last axis changes fastest: ranks 0-2 are dp 0's tensor-parallel
  // group.
  EXPECT_EQ(mesh.coordinates(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(mesh.coordinates(2), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(mesh.coordinates(4), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(MeshLayout{}.size(), 1);
}

TEST(Dist, SplittingAWorldOfOne) {
  auto world = makeSelfCommunicator();
  Expected<std::vector<std::unique_ptr<Communicator>>> axes =
      splitMesh(*world, MeshLayout{{{"dp", 1}, {"tp", 1}}});
  ASSERT_TRUE(axes) << axes.status().toString();
  ASSERT_EQ(axes->size(), 2u);
  EXPECT_EQ((*axes)[1]->size(), 1);
  Expected<std::vector<std::unique_ptr<Communicator>>> wrong =
      splitMesh(*world, MeshLayout{{{"dp", 2}}});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.status().message(), "a mesh of 2 ranks over a world of 1");
}
