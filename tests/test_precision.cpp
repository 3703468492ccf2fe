// Float32 error at the rounding floor: on a 289,620-atom structure (18 copies of
// AChBP on a lattice, moved 1,000 Å and more from the coordinate origin), the default kernels'
// relative RMS error against the float64 sum must stay ≤ 2e-6. The exact kernels without
// tile-relative positions and blocked sums are measured beside them and reported (their error
// was 1.2e-5 on a structure of this size at 1 Å).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "src/compute/approximation_error.h"
#include "src/compute/oracle.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

/// 3 × 3 × 2 copies of AChBP (16,090 atoms each) on a lattice of pitch 101 Å, all moved by
/// (1000, −2000, 500) Å: positions of ±2,000 Å whose float32 rounding alone is 6e-5 Å.
const Atoms& large_structure() {
  static const Atoms atoms = [] {
    const Atoms one = testing::load_molecule("achbp.pqr");
    Atoms out;
    out.reserve(one.size() * 18);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 2; ++k)
          for (std::size_t a = 0; a < one.size(); ++a)
            out.push_back(one.x[a] + 101.0 * i + 1000.0, one.y[a] + 101.0 * j - 2000.0, one.z[a] + 101.0 * k + 500.0,
                          one.charge[a], one.radius[a]);
    return out;
  }();
  return atoms;
}

/// Relative RMS error of `kernel` against the float64 oracle (true double positions) at
/// `samples` random points, at least 1.4 Å from every atom, of a grid over the whole structure
/// at `spacing` Å.
double relative_rms_error(const KernelVariant& kernel, double spacing, std::size_t samples) {
  GridRequest request;
  request.spacing = {spacing, spacing, spacing};
  request.padding = 5.0;
  const Atoms& atoms = large_structure();
  const GridSpec grid = make_grid(request, atoms);
  const PreparedProblem problem(atoms, grid, 1.0);
  const auto out = testing::run_poisoned(kernel, problem);
  const GridSumProblem p = problem.view(nullptr);
  // Points at least kAwayFromAtoms (1.4 Å) from every atom, as every other relative error here is
  // judged. Inside an atom one nearly singular term dominates, and the float32 offsets (rounded
  // at the ~1e-4 Å of positions hundreds of Å from a task's origin) leave it a relative error
  // of ~1e-4 Å / r: a grid point 0.075 Å from an atom, drawn about once in 25 seeds, put the
  // whole sample's RMS at 2.4e-6 (seed 28209098) where it is 5e-7 otherwise, for the old and
  // the new cpu-simd alike.
  const std::vector<std::uint8_t> near_atom = near_atom_mask(p);
  std::vector<std::size_t> away;
  for (std::size_t i = 0; i < near_atom.size(); ++i)
    if (!near_atom[i]) away.push_back(i);
  std::mt19937_64 rng(testing::test_seed());
  std::uniform_int_distribution<std::size_t> pick(0, away.size() - 1);
  std::vector<std::size_t> points(samples);
  for (auto& s : points) s = away[pick(rng)];
  double error2 = 0, value2 = 0;
#pragma omp parallel for reduction(+ : error2, value2) schedule(dynamic, 4)
  for (std::size_t s = 0; s < samples; ++s) {
    const std::size_t idx = points[s];
    const auto nx = static_cast<std::size_t>(grid.dims[0]), ny = static_cast<std::size_t>(grid.dims[1]);
    const OracleValue o = oracle_at(p, static_cast<std::int64_t>(idx % nx), static_cast<std::int64_t>((idx / nx) % ny),
                                    static_cast<std::int64_t>(idx / (nx * ny)));
    error2 += (out[idx] - o.potential) * (out[idx] - o.potential);
    value2 += o.potential * o.potential;
  }
  return std::sqrt(error2 / value2);
}

/// The default kernel of `backend` holds the target; every other exact kernel of the backend
/// is measured and printed for comparison (no bound: the target is the defaults').
void check_backend(Backend backend, double spacing, std::size_t samples) {
  for (const auto& k : kernel_variants()) {
    if (k.backend != backend || k.accuracy != Accuracy::Exact || k.serial || !k.in_size_sweeps) continue;
    if (std::string why; !k.available(&why)) {
      std::printf("%-16s not measured: %s\n", std::string(k.name).c_str(), why.c_str());
      continue;
    }
    const double e = relative_rms_error(k, spacing, samples);
    std::printf("%-16s relative RMS error %.3e (289,620 atoms, %g Å grid, %zu samples)\n", std::string(k.name).c_str(),
                e, spacing, samples);
    // 2e-6: the target for the production kernels (float32's ulp is 1.2e-7 relative;
    // a correct float sum of 290k terms with positions at their own scale lands at ~1e-6).
    if (&k == &default_kernel(backend)) EXPECT_LE(e, 2e-6) << k.name;
  }
}

// The CPU at 12 Å (28 × 28 × 19 points: seconds on two cores), 400 oracle points.
TEST(Precision, DefaultCpuKernelIsAtTheRoundingFloorOnALargeStructure) {
  // The target is the production kernel's, cpu-simd's (positions relative to each tile, blocked
  // sums). Without Google Highway the CPU default is cpu-parallel, whose float32 positions are
  // relative to the grid origin (~8e-6 here): by design above the floor, so there is nothing to hold.
  const KernelVariant& simd = find_kernel("cpu-simd");
  if (!simd.not_built.empty())
    GTEST_SKIP() << "cpu-simd is not built here (" << simd.not_built
                 << "); the CPU default is then cpu-parallel, which is not meant to reach the rounding floor";
  check_backend(Backend::Cpu, 12.0, 400);
}

// The GPU at 2 Å (a 1.2e12-evaluation map: well under a second on an H100), 2,000 oracle points.
TEST(Precision, DefaultCudaKernelIsAtTheRoundingFloorOnALargeStructure) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  check_backend(Backend::Cuda, 2.0, 2000);
}

}  // namespace
}  // namespace espgrid
