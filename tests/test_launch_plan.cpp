// The host half of the CUDA kernels: launch shapes, the register-tile cost model, slab and
// work-queue chunk sizes (src/compute/launch_plan.h). No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "src/compute/launch_plan.h"
#include "src/core/errors.h"
#include "src/registry/kernel_registry.h"

namespace espgrid {
namespace {

GridSumProblem problem_of(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  GridSumProblem p;
  p.nx = nx;
  p.ny = ny;
  p.nz = nz;
  return p;
}

DeviceLayout simple(int bx, int by) {
  DeviceLayout l;
  l.block_x = bx;
  l.block_y = by;
  return l;
}

DeviceLayout tiled(bool register_tile) {
  DeviceLayout l = simple(16, 8);
  l.coarsening = 8;
  l.coarsens = true;
  l.pads_to_tiles = true;
  l.register_tile = register_tile;
  return l;
}

constexpr int kSms = 132;

TEST(LaunchPlan, DefaultsComeFromTheLayout) {
  const LaunchPlan p = make_launch_plan("v", simple(32, 4), problem_of(100, 50, 7), {}, kSms);
  EXPECT_EQ(p.bx, 32);
  EXPECT_EQ(p.by, 4);
  EXPECT_EQ(p.cx, 1);
  EXPECT_EQ(p.ry, 1);
  EXPECT_EQ(p.pitch_x, 100);  // unpadded families keep the map's extent
  EXPECT_EQ(p.pitch_y, 50);
  EXPECT_FALSE(p.zero_slab);
}

TEST(LaunchPlan, OneBlockSideKeepsTheDefaultThreadCount) {
  const LaunchPlan x = make_launch_plan("v", simple(32, 4), problem_of(64, 64, 1), {64, 0, 0}, kSms);
  EXPECT_EQ(x.bx, 64);
  EXPECT_EQ(x.by, 2);
  const LaunchPlan y = make_launch_plan("v", simple(32, 4), problem_of(64, 64, 1), {0, 16, 0}, kSms);
  EXPECT_EQ(y.bx, 8);
  EXPECT_EQ(y.by, 16);
}

TEST(LaunchPlan, UnsupportedShapesAreUsageErrorsNamingTheVariant) {
  const GridSumProblem p = problem_of(16, 16, 2);
  try {
    make_launch_plan("my-variant", simple(32, 4), p, {64, 32, 0}, kSms);
    FAIL() << "2048 threads accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("my-variant"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1024"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_launch_plan("v", simple(32, 4), p, {0, 0, 2}, kSms), UsageError);  // no coarsening here
  EXPECT_THROW(make_launch_plan("v", tiled(false), p, {0, 0, 3}, kSms), UsageError);   // not in kCoarsenings
  EXPECT_THROW(make_launch_plan("v", simple(32, 4), p, {-1, 0, 0}, kSms), UsageError);
  EXPECT_NO_THROW(make_launch_plan("v", simple(32, 4), p, {0, 0, 1}, kSms));  // 1 = one point per thread
}

TEST(LaunchPlan, TiledFamiliesPadTheSlabToWholeTiles) {
  for (const int c : kCoarsenings) {
    SCOPED_TRACE(c);
    const LaunchPlan p = make_launch_plan("v", tiled(false), problem_of(101, 27, 5), {0, 0, c}, kSms);
    EXPECT_EQ(p.cx, c);
    EXPECT_EQ(p.ry, 1);
    EXPECT_EQ(p.pitch_x % (p.cx * p.bx), 0);
    EXPECT_GE(p.pitch_x, 101);
    EXPECT_LT(p.pitch_x, 101 + p.cx * p.bx);
    EXPECT_EQ(p.pitch_y % p.by, 0);
    EXPECT_GE(p.pitch_y, 27);
  }
}

TEST(LaunchPlan, ExplicitCoarseningOfARegisterTileSetsItsRows) {
  const LaunchPlan p8 = make_launch_plan("v", tiled(true), problem_of(64, 64, 4), {0, 0, 8}, kSms);
  EXPECT_EQ(p8.ry, 2);
  const LaunchPlan p16 = make_launch_plan("v", tiled(true), problem_of(64, 64, 4), {0, 0, 16}, kSms);
  EXPECT_EQ(p16.ry, 1);  // 16 × 2 would not fit 64 registers in 1024-thread blocks
  EXPECT_EQ(p16.pitch_y % p16.by, 0);
}

TEST(LaunchPlan, AutomaticRegisterTileKeepsTheDefaultOnLargeRegularMaps) {
  const LaunchPlan p = make_launch_plan("v", tiled(true), problem_of(256, 256, 128), {}, kSms);
  EXPECT_EQ(p.bx, 16);
  EXPECT_EQ(p.by, 8);
  EXPECT_EQ(p.cx, 8);
  EXPECT_EQ(p.ry, 2);
}

// On any map the choice is an instantiated tile, a block of at most 1024 threads, never worse
// than the default by the model's own score, and switches away only for a clear (3%) gain.
TEST(LaunchPlan, AutomaticRegisterTileIsInstantiatedAndNoWorseThanTheDefault) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> extent(1, 400), planes(1, 200);
  for (int n = 0; n < 300; ++n) {
    const GridSumProblem p = problem_of(extent(rng), extent(rng), planes(rng));
    const LaunchPlan plan = choose_register_tile(p, kSms);
    SCOPED_TRACE(::testing::Message() << p.nx << "x" << p.ny << "x" << p.nz);
    EXPECT_TRUE(std::any_of(kRegisterTiles.begin(), kRegisterTiles.end(),
                            [&](TileShape t) { return t.cx == plan.cx && t.ry == plan.ry; }));
    EXPECT_LE(plan.bx * plan.by, 1024);
    const double chosen = register_tile_score(p, plan.bx, plan.by, plan.cx, plan.ry, kSms);
    const double fallback = register_tile_score(p, 16, 8, 8, 2, kSms);
    EXPECT_GE(chosen, fallback);
    if (plan.bx != 16 || plan.by != 8 || plan.cx != 8 || plan.ry != 2) {
      EXPECT_GE(chosen, 1.03 * fallback);
    }
    EXPECT_LE(chosen, 1.0 + 1e-12);
  }
}

TEST(LaunchPlan, ScoreFallsWithPadding) {
  // 128 × 16-point tiles: a 129-wide map pads to 256 and wastes nearly half its work (enough
  // planes that both maps fill the GPU, so occupancy and the last wave do not differ).
  EXPECT_GT(register_tile_score(problem_of(128, 64, 1000), 16, 8, 8, 2, kSms),
            1.8 * register_tile_score(problem_of(129, 64, 1000), 16, 8, 8, 2, kSms));
}

TEST(LaunchPlan, TooManyRowsForTheGridIsAClearError) {
  DeviceLayout l = simple(1024, 1);
  EXPECT_THROW(make_launch_plan("v", l, problem_of(4, 70000, 1), {}, kSms), UsageError);
  l.thread_per_atom = true;  // threads index atoms: rows do not set the grid
  EXPECT_NO_THROW(make_launch_plan("v", l, problem_of(4, 70000, 1), {}, kSms));
}

TEST(LaunchPlan, AccumulatingFamiliesStartFromZero) {
  DeviceLayout l = simple(128, 1);
  l.accumulates = true;
  EXPECT_TRUE(make_launch_plan("v", l, problem_of(4, 4, 4), {}, kSms).zero_slab);
}

TEST(SlabPlan, AMapWithinTheBudgetIsOneSlab) {
  const GridSumProblem p = problem_of(100, 100, 50);
  const LaunchPlan plan = make_launch_plan("v", simple(32, 4), p, {}, kSms);
  EXPECT_EQ(planes_per_slab(p, plan, 0, std::size_t{80} << 30, 0), 50);           // 80 GiB free
  EXPECT_EQ(planes_per_slab(p, plan, 100 * 100 * 50 * sizeof(float), 0, 0), 50);  // exact cap
}

TEST(SlabPlan, ALargerMapStreamsThroughTwoBuffersOfHalfTheBudget) {
  const GridSumProblem p = problem_of(64, 64, 29);
  const LaunchPlan plan = make_launch_plan("v", simple(32, 4), p, {}, kSms);
  const std::size_t plane_bytes = 64 * 64 * sizeof(float);
  const std::int64_t planes = planes_per_slab(p, plan, 3 * plane_bytes, 0, 0);  // room for 1.5 planes a buffer
  EXPECT_EQ(planes, 1);
  const std::int64_t six = planes_per_slab(p, plan, 12 * plane_bytes, 0, 0);  // 6 planes a buffer
  EXPECT_LE(six, 6);
  EXPECT_GE(six, 1);
  // Equal slabs: the last is not a sliver.
  const std::int64_t slabs = (29 + six - 1) / six;
  EXPECT_GT(29 - (slabs - 1) * six, six / 2);
}

TEST(SlabPlan, AutomaticBudgetLeavesAReserveAndNeverGoesBelowOnePlane) {
  const GridSumProblem p = problem_of(512, 512, 512);
  const LaunchPlan plan = make_launch_plan("v", simple(32, 4), p, {}, kSms);
  EXPECT_EQ(planes_per_slab(p, plan, 0, 100, 0), 1);  // almost no free memory: one plane a slab
  const std::int64_t planes = planes_per_slab(p, plan, 0, std::size_t{80} << 30, 0);
  // 512 MiB map: two buffers of at most 256 MiB together... each about an eighth of the map.
  EXPECT_LE(static_cast<double>(planes) * 512 * 512 * 4, 64.0 * (1 << 20) + 512 * 512 * 4);
  EXPECT_GE(planes, 1);
}

TEST(SlabPlan, SlabsNeverExceedTheLaunchLimit) {
  const GridSumProblem p = problem_of(1, 1, 100000);
  const LaunchPlan plan = make_launch_plan("v", simple(32, 4), p, {}, kSms);
  EXPECT_LE(planes_per_slab(p, plan, 0, std::size_t{80} << 30, 0), kMaxPlanesPerLaunch);
}

TEST(ChunkPlan, AboutEightChunksPerWorkerOfAtLeastTwoMillionPoints) {
  const GridSumProblem big = problem_of(512, 512, 512);  // 2^18 points a plane: 8 planes make 2^21
  for (const int workers : {1, 2, 4}) {
    const std::int64_t chunk = auto_chunk_planes(big, workers);
    EXPECT_GE(chunk * 512 * 512, std::int64_t{1} << 21);
    const std::int64_t chunks = (512 + chunk - 1) / chunk;
    EXPECT_GE(chunks, 8 * workers / 2) << workers;
    EXPECT_LE(chunks, 8 * workers) << workers;
  }
  // A small map is one chunk: it fills a GPU at most once.
  EXPECT_EQ(auto_chunk_planes(problem_of(64, 64, 16), 4), 16);
}

// The registry's CUDA rows declare layouts the plan accepts with their defaults.
TEST(LaunchPlan, EveryCudaRowsDefaultShapeIsValid) {
  for (const auto& k : kernel_variants()) {
    if (!k.uses_plane_driver()) continue;  // cuda-msm plans its own launches (kernels/msm.cu)
    SCOPED_TRACE(k.name);
    const LaunchPlan plan = make_launch_plan(k.name, k.device.layout, problem_of(77, 33, 9), {}, kSms);
    EXPECT_LE(plan.bx * plan.by, 1024);
    EXPECT_GE(plan.pitch_x, 77);
    EXPECT_GE(plan.pitch_y, 33);
    if (k.device.layout.pads_to_tiles) {  // such kernels write whole tiles without bounds tests
      EXPECT_EQ(plan.pitch_x % (plan.cx * plan.bx), 0);
      EXPECT_EQ(plan.pitch_y % (plan.ry * plan.by), 0);
    }
  }
}

// The dual-pipe family's fixed 8 x 2 tile: the slab pads to it (the first device run wrote
// rows past each plane when the plan said 1 row a thread), and the requested FMA-pipe split
// reaches the plan (−1: the prepare hook's tuned value).
TEST(LaunchPlan, DualPipeTilePadsTheSlabAndCarriesTheSplit) {
  const KernelVariant& k = find_kernel("cuda-dualpipe");
  const LaunchPlan plan = make_launch_plan(k.name, k.device.layout, problem_of(129, 33, 7), {}, kSms);
  EXPECT_EQ(plan.cx, kDualPipeColumns);
  EXPECT_EQ(plan.ry, kDualPipeRows);
  EXPECT_EQ(plan.pitch_x, 256);   // 129 → whole 8 × 16 tiles
  EXPECT_EQ(plan.pitch_y, 48);    // 33 → whole 2 × 8 tiles
  EXPECT_EQ(plan.fma_split, -1);  // not yet tuned
  LaunchShape shape;
  shape.fma_split = 5;
  EXPECT_EQ(make_launch_plan(k.name, k.device.layout, problem_of(129, 33, 7), shape, kSms).fma_split, 5);
  shape.fma_split = kMaxFmaSplit + 1;
  EXPECT_THROW(make_launch_plan(k.name, k.device.layout, problem_of(129, 33, 7), shape, kSms), UsageError);
  shape = LaunchShape{};
  shape.coarsening = 4;  // the tile is fixed
  EXPECT_THROW(make_launch_plan(k.name, k.device.layout, problem_of(129, 33, 7), shape, kSms), UsageError);
  shape = LaunchShape{};
  shape.fma_split = 2;  // only the dual-pipe family has a split
  const KernelVariant& unrolled = find_kernel("cuda-unrolled");
  EXPECT_THROW(make_launch_plan(unrolled.name, unrolled.device.layout, problem_of(129, 33, 7), shape, kSms),
               UsageError);
}

}  // namespace
}  // namespace espgrid
