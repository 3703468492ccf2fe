// Every CUDA variant against the double oracle and cpu-reference (an approximate one by its
// declared bound). Without a usable GPU these tests skip with the reason; ESPGRID_REQUIRE_GPU=1
// turns the skip into a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "src/compute/cuda_driver.h"
#include "src/compute/oracle.h"
#include "src/core/errors.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::expect_matches_oracle;
using testing::make_test_grid;
using testing::random_atoms;
using testing::run_poisoned;

class GpuKernel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ESPGRID_REQUIRE_CUDA_OR_SKIP(); }
  const KernelVariant& kernel() const { return find_kernel(GetParam()); }
};

// Sizes that are not multiples of the block (e.g. 16, 32, 128), of the coarsening factor (8),
// with one atom, and with more atoms than one 4096-atom constant-memory chunk (9,001 = 2 full
// chunks + 809).
TEST_P(GpuKernel, RandomInputsMatchOracleAtEveryPoint) {
  testing::expect_random_cases_match_oracle(
      kernel(),
      {{1, 1, 1, 1}, {1, 1, 1, 5000}, {13, 7, 5, 1}, {67, 19, 3, 300}, {129, 33, 7, 4097}, {37, 41, 4, 9001}});
}

TEST_P(GpuKernel, ZeroAtomsGiveZeroMap) {
  const GridSpec grid = make_test_grid(9, 4, 3);
  const PreparedProblem problem(Atoms{}, grid, 1.0);
  const auto out = run_poisoned(kernel(), problem);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 0.0f; }));
}

// The largest bundled molecule (11,754 atoms: three constant-memory chunks) against
// cpu-reference at every point and the oracle at a sample.
TEST_P(GpuKernel, LargestMoleculeMatchesCpuReference) {
  if (kernel().approximate()) GTEST_SKIP() << "approximate rows: LargestMoleculeIsWithinTheDeclaredBound";
  const Atoms atoms = testing::load_molecule("actin_dimer.pqr");
  GridRequest request;
  request.spacing = {2.0, 2.0, 2.0};
  request.padding = 3.0;
  const GridSpec grid = make_grid(request, atoms);
  const PreparedProblem problem(atoms, grid, coulomb_factor({}));
  const auto gpu = run_poisoned(kernel(), problem);
  RunOptions all_cores;
  const auto cpu = run_poisoned(fast_reference_kernel(), problem, all_cores);  // the reference's values
  // Σ|q|/r at each point, from the same kernel with |q|: the scale of float rounding.
  const auto magnitude = run_poisoned(fast_reference_kernel(), problem.with_absolute_charges());
  std::size_t failures = 0;
  for (std::size_t p = 0; p < gpu.size(); ++p) {
    const double err = std::fabs(static_cast<double>(gpu[p]) - cpu[p]);
    const double bound = kernel_difference_bound(magnitude[p], atoms.size(), PairModel::Coulomb, {});
    if (!(err <= bound) && ++failures <= 5)
      ADD_FAILURE() << "point " << p << ": gpu " << gpu[p] << " cpu " << cpu[p] << " |err| " << err << " > " << bound;
  }
  EXPECT_EQ(failures, 0u);
  expect_matches_oracle(problem, gpu, 97);
}

// An approximate row on the same molecule: against the exact reference by its declared bound
// (the reference's float32 rounding, ~1e-7 relative, is far below any bound).
TEST_P(GpuKernel, LargestMoleculeIsWithinTheDeclaredBound) {
  if (!kernel().approximate()) GTEST_SKIP() << "exact rows: LargestMoleculeMatchesCpuReference";
  const Atoms atoms = testing::load_molecule("actin_dimer.pqr");
  GridRequest request;
  request.spacing = {1.0, 1.0, 1.0};
  request.padding = 5.0;
  const GridSpec grid = make_grid(request, atoms);
  const PreparedProblem problem(atoms, grid, coulomb_factor({}));
  const auto gpu = run_poisoned(kernel(), problem);
  const auto exact = run_poisoned(fast_reference_kernel(), problem);
  const ApproximationError e = approximation_error(problem.view(nullptr), gpu.data(), exact.data());
  std::printf("[ info     ] %s on actin: relative RMS %.3e (bound %.1e) at %zu points, max |err| %.3e kT/e\n",
              GetParam().c_str(), e.relative_rms, kernel().error_bound, e.points, e.max_abs);
  EXPECT_TRUE(e.within(kernel().error_bound)) << e.relative_rms;
}

// A map streamed through many small slabs equals the map computed in one piece.
TEST_P(GpuKernel, SlabStreamingGivesTheSameMap) {
  std::mt19937 rng(testing::test_seed() + 11);
  const GridSpec grid = make_test_grid(45, 23, 29);
  const PreparedProblem problem(random_atoms(rng, 700, grid), grid, 1.0);
  const auto whole = run_poisoned(kernel(), problem);
  RunOptions tiny;
  tiny.max_slab_bytes = 3 * 64 * 64 * sizeof(float);  // a few planes of the padded grid per slab
  std::size_t calls = 0, last = 0;
  tiny.progress = [&](std::size_t done, std::size_t total) {
    ++calls;
    last = done;
    EXPECT_EQ(total, 29u);
  };
  const auto sliced = run_poisoned(kernel(), problem, tiny);
  EXPECT_GT(calls, 3u) << "the slab cap did not split the map";
  EXPECT_EQ(last, 29u);
  if (!kernel().deterministic()) {
    expect_matches_oracle(problem, sliced);  // atomics: summation order varies between runs
  } else {
    EXPECT_EQ(sliced, whole);  // per-point sums do not depend on the slab split
  }
}

// A compute session's frames reuse one workspace's buffers: each run must give what a
// fresh run gives, bit for bit, whether the next frame has more atoms (the buffers grow), fewer
// (stale atoms past the count must not be read), or streams through two slab buffers.
TEST_P(GpuKernel, AWorkspaceKeptBetweenRunsChangesNoMap) {
  std::mt19937 rng(testing::test_seed() + 23);
  const GridSpec grid = make_test_grid(37, 29, 21);
  const std::size_t counts[] = {300, 1200, 17, 1200};
  RunOptions kept;
  kept.workspace = std::make_shared<cuda::DeviceWorkspace>();
  for (const bool streamed : {false, true}) {
    kept.max_slab_bytes = streamed ? 3 * 64 * 64 * sizeof(float) : 0;
    RunOptions fresh;
    fresh.max_slab_bytes = kept.max_slab_bytes;
    for (const std::size_t n : counts) {
      SCOPED_TRACE(::testing::Message() << n << " atoms" << (streamed ? ", streamed" : ""));
      const PreparedProblem problem(random_atoms(rng, n, grid), grid, 1.0);
      const auto with_workspace = run_poisoned(kernel(), problem, kept);
      if (!kernel().deterministic()) {  // atomics: judged against the exact sum instead
        testing::expect_matches_exact_sum(kernel(), problem, with_workspace);
      } else {
        EXPECT_EQ(with_workspace, run_poisoned(kernel(), problem, fresh));
      }
    }
  }
}

TEST_P(GpuKernel, BadDeviceNumberIsAClearError) {
  const GridSpec grid = make_test_grid(4, 4, 4);
  std::mt19937 rng(1);
  const PreparedProblem problem(random_atoms(rng, 3, grid), grid, 1.0);
  RunOptions options;
  options.device = 999;
  try {
    run_poisoned(kernel(), problem, options);
    FAIL() << "device 999 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("999"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(AllCudaVariants, GpuKernel, ::testing::ValuesIn(testing::variant_names(Backend::Cuda)),
                         testing::param_name);

// Block shapes and coarsening factors the benchmark sweeps must all compute the same map.
TEST(GpuLaunchShapes, EveryTunedShapeMatchesTheOracle) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  std::mt19937 rng(testing::test_seed() + 21);
  const GridSpec grid = make_test_grid(101, 27, 5);
  const PreparedProblem problem(random_atoms(rng, 4500, grid), grid, 1.0);
  struct Case {
    const char* kernel;
    int block_x, block_y, coarsening;
  };
  for (const Case c :
       {Case{"cuda-gather", 64, 1, 0}, Case{"cuda-gather", 32, 32, 0}, Case{"cuda-constant", 128, 2, 0},
        Case{"cuda-coarsened", 32, 4, 1}, Case{"cuda-coarsened", 64, 4, 2}, Case{"cuda-coarsened", 128, 2, 4},
        Case{"cuda-coarsened", 16, 16, 16}, Case{"cuda-unrolled", 0, 0, 4}, Case{"cuda-unrolled", 0, 0, 16}}) {
    SCOPED_TRACE(::testing::Message() << c.kernel << " block " << c.block_x << "x" << c.block_y << " coarsening "
                                      << c.coarsening);
    RunOptions options;
    options.shape.block_x = c.block_x;
    options.shape.block_y = c.block_y;
    options.shape.coarsening = c.coarsening;
    const auto out = run_poisoned(find_kernel(c.kernel), problem, options);
    expect_matches_oracle(problem, out);
  }
}

TEST(GpuLaunchShapes, UnsupportedShapeIsAClearError) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const GridSpec grid = make_test_grid(4, 4, 4);
  std::mt19937 rng(1);
  const PreparedProblem problem(random_atoms(rng, 3, grid), grid, 1.0);
  RunOptions options;
  options.shape.coarsening = 3;
  EXPECT_THROW(run_poisoned(find_kernel("cuda-coarsened"), problem, options), Error);
  options.shape.coarsening = 0;
  options.shape.block_x = 4096;
  EXPECT_THROW(run_poisoned(find_kernel("cuda-gather"), problem, options), Error);
}

TEST(GpuDevice, RsqrtCeilingIsPlausible) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const cuda::RsqrtCeiling c = cuda::measure_rsqrt_ceiling(0);
  // 16 rsqrt/clock/SM is the Hopper MUFU rate; anything from a quarter to twice that
  // (clock boost, counting) is plausible, outside it the microbenchmark is broken.
  const double nominal = 16.0 * c.multiprocessors * c.sm_clock_ghz * 1e9;
  EXPECT_GT(c.rsqrt_per_second, 0.25 * nominal) << cuda::describe_device(0);
  EXPECT_LT(c.rsqrt_per_second, 2.0 * nominal) << cuda::describe_device(0);
}

// The skip rule the GPU tests use (cuda_available) agrees with the device queries the CLI's
// --devices all and the bench use, and a missing GPU always comes with a reason to print.
TEST(GpuDevice, SkipRuleAgreesWithTheDeviceQueries) {
  std::string reason, reason_count, reason_list;
  const bool available = cuda_available(&reason);
  const int count = cuda::usable_device_count(&reason_count);
  const std::vector<int> devices = cuda::usable_devices(&reason_list);
  EXPECT_EQ(available, count > 0);
  EXPECT_EQ(static_cast<std::size_t>(count), devices.size());
  if (available) {
    std::printf("CUDA device: %s\n", cuda::describe_device(devices.front()).c_str());
    EXPECT_FALSE(cuda::describe_device(devices.front()).empty());
  } else {
    std::printf("no CUDA device (%s); ESPGRID_REQUIRE_GPU=%s\n", reason.c_str(),
                testing::gpu_required() ? "1" : "unset");
    EXPECT_FALSE(reason.empty());
    EXPECT_EQ(reason, reason_count);
    EXPECT_EQ(reason, reason_list);
    // With ESPGRID_REQUIRE_GPU=1 the GPU tests fail here instead of skipping.
    EXPECT_FALSE(testing::gpu_required()) << "ESPGRID_REQUIRE_GPU=1 but " << reason;
  }
}

}  // namespace
}  // namespace espgrid
