// The pieces of the MPI split that need no MPI (label cpu, every build): the rank-to-planes
// split, slab problems (GridSumProblem::z_offset) stitched back together bit for bit, and the
// one-process behaviour of Cluster and compute_distributed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "src/scaleout/cluster.h"
#include "src/scaleout/distributed_map.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using scaleout::PlaneSpan;
using scaleout::rank_planes;
using testing::make_test_grid;
using testing::random_atoms;

TEST(RankPlanes, ContiguousBalancedAndComplete) {
  for (const std::int64_t nz : {0, 1, 2, 3, 7, 64, 101, 1000}) {
    for (int ranks = 1; ranks <= 9; ++ranks) {
      std::int64_t next = 0, smallest = nz, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const PlaneSpan s = rank_planes(nz, r, ranks);
        EXPECT_EQ(s.begin, next) << nz << " planes, rank " << r << " of " << ranks;
        EXPECT_GE(s.count(), 0);
        smallest = std::min(smallest, s.count());
        largest = std::max(largest, s.count());
        next = s.end;
      }
      EXPECT_EQ(next, nz);
      EXPECT_LE(largest - smallest, 1) << nz << " planes over " << ranks << " ranks";
    }
  }
  EXPECT_EQ(rank_planes(10, 0, 3), (PlaneSpan{0, 4}));
  EXPECT_EQ(rank_planes(10, 1, 3), (PlaneSpan{4, 7}));
  EXPECT_EQ(rank_planes(10, 2, 3), (PlaneSpan{7, 10}));
  EXPECT_EQ(rank_planes(2, 2, 3).count(), 0);
  EXPECT_THROW(rank_planes(10, 3, 3), Error);
  EXPECT_THROW(rank_planes(10, 0, 0), Error);
}

// Slabs of z-planes computed as problems of their own (z_offset) are bit-identical to the
// same planes of the whole map, for every CPU kernel: what makes the MPI split exact.
TEST(SlabProblems, StitchedSlabsEqualTheWholeMapBitForBit) {
  std::mt19937 rng(testing::test_seed() + 61);
  const GridSpec grid = make_test_grid(23, 17, 13);
  const PreparedProblem problem(random_atoms(rng, 257, grid), grid, 1.0);
  const std::size_t plane = 23 * 17;
  for (const auto& kernel : kernel_variants()) {
    if (kernel.backend != Backend::Cpu) continue;
    SCOPED_TRACE(std::string(kernel.name));
    const auto whole = testing::run_poisoned(kernel, problem);
    for (const int parts : {2, 3, 5, 13}) {
      std::vector<float> stitched = testing::poisoned(whole.size());
      for (int r = 0; r < parts; ++r) {
        const PlaneSpan s = rank_planes(13, r, parts);
        GridSumProblem p = problem.view(stitched.data() + static_cast<std::size_t>(s.begin) * plane);
        p.nz = s.count();
        p.z_offset = s.begin;
        kernel.run(p, RunOptions{});
      }
      EXPECT_EQ(std::memcmp(stitched.data(), whole.data(), sizeof(float) * whole.size()), 0)
          << parts << " slabs differ from the whole map";
    }
  }
}

TEST(SlabProblems, OracleHonoursTheOffset) {
  std::mt19937 rng(testing::test_seed() + 67);
  const GridSpec grid = make_test_grid(5, 4, 9);
  const PreparedProblem problem(random_atoms(rng, 50, grid), grid, 1.0);
  GridSumProblem whole = problem.view(nullptr);
  GridSumProblem slab = whole;
  slab.z_offset = 6;
  slab.nz = 3;
  for (std::int64_t k = 0; k < 3; ++k)
    EXPECT_EQ(oracle_at(slab, 2, 1, k).potential, oracle_at(whole, 2, 1, k + 6).potential);
}

// Run without mpirun, the group is this process alone (MPI is never initialized).
TEST(Cluster, WithoutALauncherIsOneProcess) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK"))
    GTEST_SKIP() << "running under an MPI launcher";
  scaleout::Cluster& c = scaleout::Cluster::world();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_TRUE(c.is_root());
  EXPECT_FALSE(c.distributed());
  EXPECT_FALSE(c.host().empty());
  // agree() rethrows the error itself, type included.
  EXPECT_THROW(c.agree("testing", [] { throw UsageError("bad"); }), UsageError);
  EXPECT_NO_THROW(c.agree("testing", [] {}));
  EXPECT_EQ(c.gather_text("x"), std::vector<std::string>{"x"});
  EXPECT_EQ(c.gather_values({1.0, 2.0}), (std::vector<double>{1.0, 2.0}));
  EXPECT_TRUE(c.broadcast_flag(true));
}

TEST(ComputeDistributed, OneProcessIsAPlainRun) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK"))
    GTEST_SKIP() << "running under an MPI launcher";
  std::mt19937 rng(testing::test_seed() + 71);
  const GridSpec grid = make_test_grid(19, 11, 7);
  const PreparedProblem problem(random_atoms(rng, 99, grid), grid, 1.0);
  const KernelVariant& kernel = fast_reference_kernel();
  const auto expected = testing::run_poisoned(kernel, problem);
  std::vector<float> map = testing::poisoned(expected.size());
  const scaleout::DistributedRun run =
      scaleout::compute_distributed(scaleout::Cluster::world(), kernel, problem, map.data(), RunOptions{});
  EXPECT_EQ(std::memcmp(map.data(), expected.data(), sizeof(float) * map.size()), 0);
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_EQ(run.ranks[0].planes, (PlaneSpan{0, 7}));
  EXPECT_EQ(run.ranks[0].kernel, "cpu-parallel");
  EXPECT_NE(run.timing.device.find("1 rank"), std::string::npos) << run.timing.device;
}

TEST(ComputeDistributed, InjectedFailureOnThisRankThrows) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK"))
    GTEST_SKIP() << "running under an MPI launcher";
  const GridSpec grid = make_test_grid(4, 4, 4);
  std::mt19937 rng(1);
  const PreparedProblem problem(random_atoms(rng, 3, grid), grid, 1.0);
  std::vector<float> map(grid.point_count());
  ::setenv("ESPGRID_TEST_FAIL_RANK", "0", 1);
  try {
    scaleout::compute_distributed(scaleout::Cluster::world(), reference_kernel(), problem, map.data(), {});
    ADD_FAILURE() << "no failure";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ESPGRID_TEST_FAIL_RANK=0"), std::string::npos) << e.what();
  }
  ::unsetenv("ESPGRID_TEST_FAIL_RANK");
}

TEST(RankLocalDevice, LocalRankModDeviceCount) {
  scaleout::Cluster& c = scaleout::Cluster::world();
  EXPECT_EQ(scaleout::rank_local_device(c, {}), -1);
  const std::vector<int> devices = {3, 5};
  EXPECT_EQ(scaleout::rank_local_device(c, devices), devices[static_cast<std::size_t>(c.local_rank()) % 2]);
}

}  // namespace
}  // namespace espgrid
