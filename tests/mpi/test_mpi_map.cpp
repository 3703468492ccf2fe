// MPI tests (label mpi), run by ctest under `mpirun -np 2` and `-np 3`: every rank runs every
// test in the same order (they make collective calls), rank 0 checks the results. The map
// split over the ranks equals the one-process map bit for bit on the CPU kernels, and a
// failure on any rank reaches every rank without a hang.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "src/pb/pb_hypre.h"
#include "src/pb/pb_slabs.h"
#include "src/pb/pb_solve.h"
#include "src/scaleout/cluster.h"
#include "src/scaleout/distributed_map.h"
#include "src/scaleout/pb_ranks.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using scaleout::Cluster;
using scaleout::PeerFailure;
using testing::make_test_grid;
using testing::random_atoms;

Cluster& world() { return Cluster::world(); }

#define ESPGRID_REQUIRE_RANKS()                                                                \
  do {                                                                                         \
    if (!world().distributed()) GTEST_SKIP() << "one process: run under mpirun -np 2 or more"; \
  } while (0)

/// The same random problem on every rank: rank 0's seed.
unsigned shared_seed() { return static_cast<unsigned>(world().broadcast_value(testing::test_seed())); }

/// Poisson-Boltzmann: hypre's solve split over the ranks gives the one-process map to
/// the solver's tolerance. Both stop at relative residual 1e-10; a partition could change hypre's
/// coarse grids and smoothing order (not the system), so the two solutions may differ by up to the
/// residual times the system's condition number (~10⁴ here): 1e-6 relative RMS allows that.
/// (Measured 2026-11-24 with 2 and 3 ranks: identical after rounding to float.)
TEST(MpiMap, PoissonBoltzmannAcrossRanksEqualsOneRank) {
  ESPGRID_REQUIRE_RANKS();
  if (!pb::hypre_available()) GTEST_SKIP() << "no hypre in this build";
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  GridRequest request;
  request.spacing = {1.3, 1.3, 1.3};
  request.padding = 8;
  const GridSpec grid = make_grid(request, atoms);
  PbOptions options;
  options.tolerance = 1e-10;
  PbRun split, alone;
  split.solver = alone.solver = PbSolver::Hypre;
  split.across_ranks = true;
  split.threads = alone.threads = 1;
  const PbResult across = solve_pb(atoms, grid, options, split);  // collective
  // Rank 0 alone gets the solution (it makes the map); the others keep their planes of u and the
  // plane beside each end, from their neighbours, which their rows of the residual read. With the
  // potential kept every rank gets the whole solution: the same solve, the same residual to the bit
  // (each rank's sums over its rows, added in MPI_Allreduce), unless a neighbour's plane went astray.
  PbRun keep = split;
  keep.keep_potential = true;
  const PbResult kept = solve_pb(atoms, grid, options, keep);  // collective
  EXPECT_EQ(kept.values.size(), grid.point_count());
  EXPECT_EQ(kept.potential.size(), grid.point_count());
  EXPECT_FALSE(kept.share_only);
  EXPECT_EQ(kept.solve.relative_residual, across.solve.relative_residual);
  if (!world().is_root()) {
    EXPECT_TRUE(across.share_only);
    EXPECT_TRUE(across.values.empty());
    return;
  }
  EXPECT_FALSE(across.share_only);
  ASSERT_EQ(across.values.size(), grid.point_count());
  EXPECT_EQ(kept.values, across.values);                       // the same solve, gathered either way
  const PbResult one = solve_pb(atoms, grid, options, alone);  // rank 0 alone (MPI_COMM_SELF)
  EXPECT_NE(across.solve.device.find(std::to_string(world().size()) + " MPI ranks"), std::string::npos)
      << across.solve.device;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < one.values.size(); ++i) {
    num += (double(across.values[i]) - one.values[i]) * (double(across.values[i]) - one.values[i]);
    den += double(one.values[i]) * one.values[i];
  }
  std::printf("PB across %d ranks vs one: relative RMS %.2e (%d and %d iterations)\n", world().size(),
              std::sqrt(num / den), across.solve.iterations, one.solve.iterations);
  EXPECT_LT(std::sqrt(num / den), 1e-6);
}

TEST(MpiMap, SplitMapEqualsTheOneProcessMapBitForBit) {
  ESPGRID_REQUIRE_RANKS();
  const unsigned seed = shared_seed();
  struct Case {
    const char* kernel;
    std::int64_t nx, ny, nz;
    std::size_t atoms;
  };
  // Including fewer planes than ranks (ranks without planes) and uneven splits.
  for (const Case c :
       {Case{"cpu-parallel", 31, 17, 23, 300}, Case{"cpu-reference", 16, 9, 11, 123}, Case{"cpu-naive", 7, 5, 4, 20},
        Case{"cpu-parallel", 9, 8, 1, 50}, Case{"cpu-parallel", 9, 8, 2, 50}, Case{"cpu-reference", 12, 10, 5, 1}}) {
    SCOPED_TRACE(::testing::Message() << c.kernel << " " << c.nx << "x" << c.ny << "x" << c.nz << ", seed " << seed);
    std::mt19937 rng(seed + static_cast<unsigned>(c.nz));
    const GridSpec grid = make_test_grid(c.nx, c.ny, c.nz);
    const PreparedProblem problem(random_atoms(rng, c.atoms, grid), grid, 1.0);
    const KernelVariant& kernel = find_kernel(c.kernel);
    std::vector<float> map;
    if (world().is_root()) map = testing::poisoned(grid.point_count());
    const scaleout::DistributedRun run =
        scaleout::compute_distributed(world(), kernel, problem, world().is_root() ? map.data() : nullptr, RunOptions{});
    if (!world().is_root()) continue;
    const auto expected = testing::run_poisoned(kernel, problem);
    std::size_t differ = 0;
    for (std::size_t p = 0; p < map.size(); ++p)
      if (std::memcmp(&map[p], &expected[p], sizeof(float)) != 0 && ++differ <= 5)
        ADD_FAILURE() << "point " << p << ": split " << map[p] << ", one process " << expected[p];
    EXPECT_EQ(differ, 0u);
    ASSERT_EQ(run.ranks.size(), static_cast<std::size_t>(world().size()));
    std::int64_t next = 0;
    for (const scaleout::RankReport& r : run.ranks) {
      EXPECT_EQ(r.planes.begin, next);
      EXPECT_EQ(r.kernel, c.kernel);
      next = r.planes.end;
    }
    EXPECT_EQ(next, c.nz);
  }
}

TEST(MpiMap, OneFailingRankFailsEveryRank) {
  ESPGRID_REQUIRE_RANKS();
  const int last = world().size() - 1;
  try {
    world().agree("testing", [&] {
      if (world().rank() == last) throw Error("broken on purpose");
    });
    ADD_FAILURE() << "rank " << world().rank() << ": no failure reported";
  } catch (const PeerFailure& e) {
    EXPECT_FALSE(world().is_root()) << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(world().is_root()) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("rank " + std::to_string(last) + " of " + std::to_string(world().size()) +
                        " failed while testing: broken on purpose"),
              std::string::npos)
        << what;
  }
  // Nothing is left half-done: the next collective works.
  EXPECT_NO_THROW(world().agree("testing again", [] {}));
}

TEST(MpiMap, TheSameFailureEverywhereIsReportedOnceWithItsType) {
  ESPGRID_REQUIRE_RANKS();
  try {
    world().agree("testing", [] { throw UsageError("bad option"); });
    ADD_FAILURE() << "no failure reported";
  } catch (const PeerFailure&) {
    EXPECT_FALSE(world().is_root());
  } catch (const UsageError& e) {
    EXPECT_TRUE(world().is_root());
    EXPECT_STREQ(e.what(), "bad option");
  }
}

TEST(MpiMap, InjectedRankFailureStopsTheMap) {
  ESPGRID_REQUIRE_RANKS();
  const GridSpec grid = make_test_grid(8, 6, 9);
  std::mt19937 rng(5);
  const PreparedProblem problem(random_atoms(rng, 10, grid), grid, 1.0);
  std::vector<float> map(world().is_root() ? grid.point_count() : 0);
  ::setenv("ESPGRID_TEST_FAIL_RANK", "1", 1);
  try {
    scaleout::compute_distributed(world(), fast_reference_kernel(), problem, world().is_root() ? map.data() : nullptr,
                                  RunOptions{});
    ADD_FAILURE() << "rank " << world().rank() << ": no failure";
  } catch (const PeerFailure&) {
    EXPECT_FALSE(world().is_root());
  } catch (const Error& e) {
    EXPECT_TRUE(world().is_root());
    EXPECT_NE(std::string(e.what()).find("rank 1 of " + std::to_string(world().size()) + " failed"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("ESPGRID_TEST_FAIL_RANK=1"), std::string::npos) << e.what();
  }
  ::unsetenv("ESPGRID_TEST_FAIL_RANK");
}

TEST(MpiMap, GatherHelpers) {
  ESPGRID_REQUIRE_RANKS();
  const int r = world().rank();
  const auto texts = world().gather_text(std::string(static_cast<std::size_t>(r), 'x') + std::to_string(r));
  const auto values = world().gather_values({static_cast<double>(r), -1.0 * r});
  if (!world().is_root()) {
    EXPECT_TRUE(texts.empty());
    return;
  }
  ASSERT_EQ(texts.size(), static_cast<std::size_t>(world().size()));
  ASSERT_EQ(values.size(), 2u * static_cast<std::size_t>(world().size()));
  for (int i = 0; i < world().size(); ++i) {
    EXPECT_EQ(texts[static_cast<std::size_t>(i)], std::string(static_cast<std::size_t>(i), 'x') + std::to_string(i));
    EXPECT_EQ(values[2 * static_cast<std::size_t>(i)], i);
    EXPECT_EQ(values[2 * static_cast<std::size_t>(i) + 1], -1.0 * i);
  }
}

/// A PB grid split over the ranks' GPUs moves halo planes, coarse levels, partial sums and the map's
/// planes through pb::PbRankLink (kernels/pb/pb_slab_solver.cuh); each is checked here with values that
/// name their sender and place, so a plane sent to the wrong neighbour, a part at the wrong offset or
/// a sum out of rank order fails.
TEST(MpiMap, ThePbRankLinkMovesWhatTheSlabsExchange) {
  ESPGRID_REQUIRE_RANKS();
  scaleout::PbRanks ranks(world());
  const pb::PbRankLink& link = ranks.link();
  const int r = world().rank(), n = world().size();
  ASSERT_EQ(link.rank, r);
  ASSERT_EQ(link.ranks, n);
  ASSERT_TRUE(link.all_ready(false));
  const std::size_t plane = 1000;  // doubles
  std::vector<double> to_lower(plane), to_upper(plane), from_lower(plane, -1), from_upper(plane, -1);
  for (std::size_t i = 0; i < plane; ++i) {
    to_lower[i] = 1e6 * r + i;        // this rank's first own plane
    to_upper[i] = 1e6 * r + 0.5 + i;  // its last
  }
  link.swap_with_neighbours(to_lower.data(), from_lower.data(), to_upper.data(), from_upper.data(), plane);
  for (std::size_t i = 0; i < plane; i += 97) {
    if (r > 0) EXPECT_EQ(from_lower[i], 1e6 * (r - 1) + 0.5 + i) << "the lower neighbour's last plane";
    if (r + 1 < n) EXPECT_EQ(from_upper[i], 1e6 * (r + 1) + i) << "the upper neighbour's first plane";
  }
  if (r == 0) EXPECT_EQ(from_lower[0], -1) << "the first rank has no lower neighbour";
  if (r + 1 == n) EXPECT_EQ(from_upper[0], -1) << "the last rank has no upper neighbour";
  // Uneven parts of a whole level (rank r owns r + 2 planes of 7 values; the last owns none).
  std::vector<std::size_t> begin(static_cast<std::size_t>(n) + 1, 0);
  for (int q = 0; q < n; ++q) begin[q + 1] = begin[q] + (q + 1 == n ? 0 : 7 * static_cast<std::size_t>(q + 2));
  std::vector<double> whole(begin[n], -1);
  for (std::size_t i = begin[r]; i < begin[r + 1]; ++i) whole[i] = 100.0 * r + static_cast<double>(i);
  link.share_parts(whole.data(), begin[r], begin[r + 1] - begin[r]);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = begin[q]; i < begin[q + 1]; ++i) ASSERT_EQ(whole[i], 100.0 * q + static_cast<double>(i));
  const std::vector<double> every = link.every_value(1.5 * r);
  ASSERT_EQ(every.size(), static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) EXPECT_EQ(every[q], 1.5 * q);
  // The map's planes as pb::slab_cuts splits them (not scaleout::rank_planes' split); rank 0 holds the
  // whole map, the others their own planes alone.
  const long planes = 16 * n + 5, points = 33;
  const std::vector<long> cuts = pb::slab_cuts(planes, static_cast<std::size_t>(n));
  ASSERT_EQ(cuts.size(), static_cast<std::size_t>(n) + 1);
  const long first = world().is_root() ? 0 : cuts[r];
  const long held = world().is_root() ? planes : cuts[r + 1] - cuts[r];
  std::vector<float> map(static_cast<std::size_t>(held * points), std::nanf(""));
  for (long k = cuts[r]; k < cuts[r + 1]; ++k)
    for (long i = 0; i < points; ++i) map[(k - first) * points + i] = static_cast<float>(k * points + i);
  link.gather_map(map.data(), cuts[r], cuts[r + 1], points);
  if (world().is_root())
    for (std::size_t i = 0; i < map.size(); ++i) ASSERT_EQ(map[i], static_cast<float>(i)) << "map value " << i;
}

/// A rank whose solve fails before the collective steps votes "failed": every rank's vote then says
/// so, and none waits in a later step for the one that stopped.
TEST(MpiMap, ARankThatFailsBeforeTheSolveStopsEveryRankAtTheVote) {
  ESPGRID_REQUIRE_RANKS();
  scaleout::PbRanks ranks(world());
  const int failing = world().size() - 1;
  if (world().rank() == failing) {
    ranks.failed("a test's failure");
    ranks.failed("a second failure after the vote: nothing more");
    SUCCEED();
  } else {
    EXPECT_FALSE(ranks.link().all_ready(false)) << "the vote must report rank " << failing << "'s failure";
  }
  world().barrier();  // reached by every rank: nobody waits in a collective step
}

/// On ranks other than 0, failures only, each line marked with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace espgrid

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  espgrid::scaleout::Cluster& cluster = espgrid::scaleout::Cluster::world();  // MPI starts here
  if (!cluster.is_root()) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new espgrid::RankFailurePrinter(cluster.rank()));
  } else {
    std::printf("MPI: %d rank(s)%s\n", cluster.size(),
                espgrid::scaleout::mpi_built() ? "" : " (this build has no MPI)");
  }
  const int status = RUN_ALL_TESTS();
  const std::vector<double> all = cluster.gather_values({static_cast<double>(status)});
  bool failed = status != 0;
  for (const double s : all) failed = failed || s != 0;
  return cluster.broadcast_flag(failed) ? 1 : 0;
}
