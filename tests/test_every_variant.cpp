// The same test bodies on every registry entry, CPU and CUDA (the HOOMD-blue pattern): analytic
// cases (one charge gives kq/(εr), superposition, translating atoms and grid together changes
// nothing, an atom on a grid point), and a slab of planes with a non-zero plane offset (what
// an MPI rank computes) against the same planes of the whole map. CUDA entries skip without a
// usable GPU (ESPGRID_REQUIRE_GPU=1 makes that a failure); an entry added to the registry is
// tested here the moment it exists. Approximate entries (Accuracy::Approximate) are held to the
// error bound they declare where an exact entry is held to float32 rounding; identities that
// hold exactly for them too (linearity, translation) must hold to a rounding that is
// negligible against that bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>

#include "src/compute/approximation_error.h"
#include "src/compute/oracle.h"
#include "src/core/errors.h"
#include "src/pipeline/map_pipeline.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::make_test_grid;
using testing::random_atoms;
using testing::run_poisoned;

class EveryVariant : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ESPGRID_SKIP_UNLESS_RUNNABLE(kernel()); }
  const KernelVariant& kernel() const { return find_kernel(GetParam()); }
};

/// For an approximate entry, a difference that only rounding makes (a linear method's
/// superposition, translating everything together) must stay below this share of the declared
/// error, in RMS over the map: rounding must not eat into the error budget.
constexpr double kRoundingShareOfBound = 0.01;

/// RMS of `a − b` over RMS of `a`.
double relative_rms_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff2 += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    ref2 += static_cast<double>(a[i]) * a[i];
  }
  return std::sqrt(diff2 / ref2);
}

/// (i, j, k) of flat index `idx` in `grid`.
std::array<std::int64_t, 3> point_of(const GridSpec& grid, std::size_t idx) {
  const auto nx = static_cast<std::size_t>(grid.dims[0]), ny = static_cast<std::size_t>(grid.dims[1]);
  return {static_cast<std::int64_t>(idx % nx), static_cast<std::int64_t>((idx / nx) % ny),
          static_cast<std::int64_t>(idx / (nx * ny))};
}

// One charge, each model the variant computes: Coulomb k q/(ε r), the distance-dependent
// dielectric k q/(ε r²), Debye k q e^(−κr)/(ε r) (κ from 0.15 M, ε 78.54). Points at 0.5 .. 20
// Å; float32 gives ~1e-7 relative per operation (rsqrt, rcp ≤ 2 ulp), the softening length
// changes r by a²/2r ≤ 1e-8 Å there, so 2e-6 relative is a firm bound for Coulomb and the
// distance model. Debye's exponential argument −κr ≤ 2.6 carries ~2.6·2⁻²⁴ relative rounding,
// and __expf ≤ 2 ulp: 2e-6 still holds, by a wide margin.
TEST_P(EveryVariant, SingleChargeGivesEachModelsLaw) {
  const double q = -0.75;
  Atoms atoms;
  atoms.push_back(1.25, -2.5, 3.75, q, 1.0);
  GridSpec grid;
  grid.dims = {41, 1, 1};
  grid.origin = {1.25 + 0.5, -2.5, 3.75};
  grid.spacing = {0.5, 0.5, 0.5};
  int models = 0;
  for (int m = 0; m < kPairModelCount; ++m) {
    PhysicsOptions physics;
    physics.model = static_cast<PairModel>(m);
    if (!kernel().supports(physics.model)) continue;
    ++models;
    physics.unit = PotentialUnit::KcalPerMolPerE;
    physics.dielectric = physics.model == PairModel::Debye ? 78.54 : 4.0;
    if (physics.model == PairModel::Debye) physics.ionic_strength = 0.15;
    SCOPED_TRACE(describe_model(physics));
    const double kappa = debye_kappa(physics.ionic_strength, physics.dielectric, physics.temperature);
    const auto out = run_poisoned(kernel(), PreparedProblem::for_physics(atoms, grid, physics));
    ApproximationErrorSum approximate;
    for (std::int64_t i = 0; i < grid.dims[0]; ++i) {
      const double r = 0.5 + 0.5 * static_cast<double>(i);
      const double f = physics.model == PairModel::Coulomb    ? 1.0 / r
                       : physics.model == PairModel::Distance ? 1.0 / (r * r)
                                                              : std::exp(-kappa * r) / r;
      const double expected = kCoulombKcalAngstrom * q * f / physics.dielectric;
      if (kernel().approximate())
        approximate.add(out[static_cast<std::size_t>(i)], expected, r < kAwayFromAtoms);
      else
        EXPECT_NEAR(out[static_cast<std::size_t>(i)], expected, 2e-6 * std::fabs(expected)) << "r=" << r;
    }
    if (kernel().approximate()) {  // judged by its bound at the points >= 1.4 Å from the charge
      const ApproximationError e = approximate.result();
      EXPECT_EQ(e.nonfinite, 0u);
      EXPECT_EQ(e.points, 39u);  // r = 1.5 ... 20.5 Å
      EXPECT_LE(e.relative_rms, kernel().error_bound);
    }
  }
  EXPECT_GE(models, 1);
}

// Asking a variant for a model it lacks is a UsageError naming the variants that have it.
TEST_P(EveryVariant, AModelItLacksIsAClearError) {
  const GridSpec grid = make_test_grid(3, 3, 3);
  std::mt19937 rng(1);
  for (int m = 0; m < kPairModelCount; ++m) {
    const PairModel model = static_cast<PairModel>(m);
    if (kernel().supports(model)) continue;
    const PreparedProblem problem(random_atoms(rng, 5, grid), grid, 1.0, model);
    try {
      run_poisoned(kernel(), problem);
      FAIL() << "the " << model_name(model) << " model was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(model_name(model)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string(reference_kernel().name)), std::string::npos) << e.what();
    }
  }
}

// The map of all atoms equals the sum of the maps of two halves, within three float32 sums'
// rounding (each ≤ float_tolerance at the point, positions are the same inputs in all three).
TEST_P(EveryVariant, SuperpositionOfTwoHalves) {
  std::mt19937 rng(testing::test_seed() + 4);
  const GridSpec grid = make_test_grid(15, 8, 6);
  const Atoms all = random_atoms(rng, 400, grid);
  Atoms first, second;
  for (std::size_t a = 0; a < all.size(); ++a)
    (a % 2 ? second : first).push_back(all.x[a], all.y[a], all.z[a], all.charge[a], all.radius[a]);
  for (const auto& m : testing::model_cases(kernel())) {
    SCOPED_TRACE(m.label);
    const PreparedProblem prepared(all, grid, 1.0, m.model, m.pair);
    const auto whole = run_poisoned(kernel(), prepared);
    const auto part1 = run_poisoned(kernel(), PreparedProblem(first, grid, 1.0, m.model, m.pair));
    const auto part2 = run_poisoned(kernel(), PreparedProblem(second, grid, 1.0, m.model, m.pair));
    const GridSumProblem p = prepared.view(nullptr);
    if (kernel().approximate()) {  // linear in the charges: only rounding may differ
      std::vector<float> sum(whole.size());
      for (std::size_t idx = 0; idx < whole.size(); ++idx) sum[idx] = part1[idx] + part2[idx];
      EXPECT_LE(relative_rms_difference(whole, sum), kRoundingShareOfBound * kernel().error_bound)
          << "seed " << testing::test_seed();
      continue;
    }
    for (std::size_t idx = 0; idx < whole.size(); ++idx) {
      const auto [i, j, k] = point_of(grid, idx);
      const double tol = 3 * float_tolerance(oracle_at(p, i, j, k), all.size(), 0.0);
      EXPECT_NEAR(whole[idx], part1[idx] + part2[idx], tol) << "point " << idx << ", seed " << testing::test_seed();
    }
  }
}

// Moving atoms and grid together leaves every relative position, hence the map, unchanged:
// positions are made relative to the origin in double before rounding to float.
TEST_P(EveryVariant, TranslatingAtomsAndGridTogetherChangesNothing) {
  std::mt19937 rng(testing::test_seed() + 5);
  const GridSpec grid = make_test_grid(12, 10, 7);
  const Atoms atoms = random_atoms(rng, 250, grid);
  const double shift[3] = {123.25, -56.5, 89.125};  // exact in binary, as PDB coordinates are not
  Atoms moved = atoms;
  GridSpec moved_grid = grid;
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    moved.x[a] += shift[0];
    moved.y[a] += shift[1];
    moved.z[a] += shift[2];
  }
  for (int axis = 0; axis < 3; ++axis) moved_grid.origin[static_cast<std::size_t>(axis)] += shift[axis];
  for (const auto& m : testing::model_cases(kernel())) {
    SCOPED_TRACE(m.label);
    const PreparedProblem original(atoms, grid, 1.0, m.model, m.pair);
    const auto a = run_poisoned(kernel(), original);
    const auto b = run_poisoned(kernel(), PreparedProblem(moved, moved_grid, 1.0, m.model, m.pair));
    const GridSumProblem p = original.view(nullptr);
    if (kernel().approximate()) {  // the lattice moves with the grid's origin: only rounding may differ
      EXPECT_LE(relative_rms_difference(a, b), kRoundingShareOfBound * kernel().error_bound)
          << "seed " << testing::test_seed();
      continue;
    }
    for (std::size_t idx = 0; idx < a.size(); ++idx) {
      const auto [i, j, k] = point_of(grid, idx);
      // Relative positions agree to double rounding (~1e-14 Å) before the float cast, so the
      // float inputs differ by at most one rounding: the oracle's position term covers it; the
      // two sums each carry their rounding, hence twice the tolerance.
      EXPECT_NEAR(a[idx], b[idx],
                  2 * float_tolerance(oracle_at(p, i, j, k), atoms.size(), original.coordinate_extent()));
    }
  }
}

// Two atoms on one grid point and one on another: every value finite, and the point under the
// lone atom is 1/a (the two opposite charges 1 Å away cancel). rsqrt's approximation (≤ 2 ulp)
// and the float sum stay far inside 1e-6 relative. An approximate method sums the near-singular
// term directly too; its approximation error is confined to the smooth part (~1e-3 × 1/cutoff,
// below 1e-4 here), five orders below the 1e-2 this tolerance allows at 1/a = 10⁴.
TEST_P(EveryVariant, AtomOnAGridPointGivesLargeFiniteValue) {
  Atoms atoms;
  atoms.push_back(1.0, 1.0, 1.0, 0.5, 1.0);   // exactly on grid point (2, 2, 2)
  atoms.push_back(1.0, 1.0, 1.0, -0.5, 1.0);  // a second atom on the same point
  atoms.push_back(2.0, 1.0, 1.0, 1.0, 1.0);   // on point (4, 2, 2)
  GridSpec grid;
  grid.dims = {5, 5, 5};
  grid.origin = {0, 0, 0};
  grid.spacing = {0.5, 0.5, 0.5};
  const auto out = run_poisoned(kernel(), PreparedProblem(atoms, grid, 1.0));
  for (float v : out) ASSERT_TRUE(std::isfinite(v));
  EXPECT_NEAR(out[4 + 5 * (2 + 5 * 2)], 1.0 / kSofteningLength, 1e-6 / kSofteningLength);
}

// Planes [first, first + count) computed alone (GridSumProblem::z_offset = first: the slab an MPI
// rank computes) equal the same planes of the whole map: bit for bit for deterministic
// variants, within the oracle's tolerance for the others.
TEST_P(EveryVariant, SlabWithAPlaneOffsetEqualsThoseOfTheWholeMap) {
  std::mt19937 rng(testing::test_seed() + 6);
  const GridSpec grid = make_test_grid(21, 13, 11);
  const PreparedProblem problem(random_atoms(rng, 500, grid), grid, 1.0);
  const auto whole = run_poisoned(kernel(), problem);
  const std::size_t plane = static_cast<std::size_t>(grid.dims[0] * grid.dims[1]);
  for (const auto& [first, count] : {std::pair<std::int64_t, std::int64_t>{5, 4}, {10, 1}, {0, 11}}) {
    SCOPED_TRACE(::testing::Message() << "planes " << first << "+" << count);
    std::vector<float> slab = testing::poisoned(plane * static_cast<std::size_t>(count));
    compute_planes(kernel(), problem, slab.data(), first, count, {});
    const std::vector<float> expected(whole.begin() + static_cast<std::ptrdiff_t>(plane * first),
                                      whole.begin() + static_cast<std::ptrdiff_t>(plane * (first + count)));
    if (kernel().deterministic()) {
      EXPECT_EQ(std::memcmp(slab.data(), expected.data(), sizeof(float) * slab.size()), 0);
    } else {
      const GridSumProblem p = problem.view(nullptr);
      for (std::size_t n = 0; n < slab.size(); ++n) {
        const auto [i, j, k] = point_of(grid, n + plane * static_cast<std::size_t>(first));
        const OracleValue o = oracle_at(p, i, j, k);
        EXPECT_NEAR(slab[n], o.potential, float_tolerance(o, problem.atom_count(), problem.coordinate_extent()));
      }
    }
  }
  EXPECT_THROW(compute_planes(kernel(), problem, nullptr, 8, 4, {}), Error);  // past the last plane
}

// Every plane is reported once through RunOptions::planes_done, and when it is reported its
// values are already in the output (a streaming writer may take them from there at once).
TEST_P(EveryVariant, ReportsEveryPlaneOnceWhenItsValuesAreIn) {
  std::mt19937 rng(testing::test_seed() + 7);
  const GridSpec grid = make_test_grid(17, 9, 13);
  const PreparedProblem problem(random_atoms(rng, 60, grid), grid, 1.0);
  std::vector<float> out = testing::poisoned(grid.point_count());
  std::vector<int> seen(13, 0);
  std::size_t unwritten_when_reported = 0;
  std::mutex mutex;
  RunOptions options;
  options.max_slab_bytes = 4 * 64 * 64 * sizeof(float);  // CUDA: several slabs
  options.planes_done = [&](std::int64_t first, std::int64_t count) {
    std::lock_guard<std::mutex> lock(mutex);
    for (std::int64_t k = first; k < first + count; ++k) {
      seen[static_cast<std::size_t>(k)]++;
      for (std::size_t n = 0; n < 17 * 9; ++n) unwritten_when_reported += std::isnan(out[17 * 9 * k + n]) ? 1 : 0;
    }
  };
  kernel().run(problem.view(out.data()), options);
  for (int k = 0; k < 13; ++k) EXPECT_EQ(seen[static_cast<std::size_t>(k)], 1) << "plane " << k;
  EXPECT_EQ(unwritten_when_reported, 0u);
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryVariant, ::testing::ValuesIn(testing::all_variant_names()),
                         testing::param_name);

}  // namespace
}  // namespace espgrid
