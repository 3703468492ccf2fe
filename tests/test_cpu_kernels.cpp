// Every CPU variant against the double oracle, analytic cases, and the softening rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "src/compute/cpu_kernels.h"
#include "src/core/errors.h"
#include "src/core/units.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::expect_matches_oracle;
using testing::make_test_grid;
using testing::random_atoms;
using testing::run_poisoned;

class CpuKernel : public ::testing::TestWithParam<std::string> {
 protected:
  const KernelVariant& kernel() const { return find_kernel(GetParam()); }
};

// Sizes that are not multiples of any vector width, block or coarsening factor.
TEST_P(CpuKernel, RandomInputsMatchOracleAtEveryPoint) {
  testing::expect_random_cases_match_oracle(kernel(), {{1, 1, 1, 1}, {13, 7, 5, 1}, {17, 3, 9, 37}, {31, 11, 6, 600}});
}

TEST_P(CpuKernel, RealMoleculeMatchesOracle) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  GridRequest request;
  request.spacing = {1.5, 1.5, 1.5};
  request.padding = 4.0;
  const GridSpec grid = make_grid(request, atoms);
  const PreparedProblem problem(atoms, grid, coulomb_factor({}));
  const auto out = run_poisoned(kernel(), problem);
  expect_matches_oracle(problem, out, 7);  // every 7th point: ~4,000 oracle points of 906 atoms
}

TEST_P(CpuKernel, WritesEveryPointOfAPoisonedBuffer) {
  std::mt19937 rng(testing::test_seed() + 1);
  const GridSpec grid = make_test_grid(19, 5, 4);
  const PreparedProblem problem(random_atoms(rng, 50, grid), grid, 1.0);
  const auto out = run_poisoned(kernel(), problem);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); }));
}

TEST_P(CpuKernel, ReportsProgressToTheLastPlane) {
  std::mt19937 rng(testing::test_seed() + 2);
  const GridSpec grid = make_test_grid(6, 5, 9);
  const PreparedProblem problem(random_atoms(rng, 10, grid), grid, 1.0);
  std::size_t last_done = 0, last_total = 0;
  RunOptions options;
  options.progress = [&](std::size_t done, std::size_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  };
  run_poisoned(kernel(), problem, options);
  EXPECT_EQ(last_done, 9u);
  EXPECT_EQ(last_total, 9u);
}

INSTANTIATE_TEST_SUITE_P(AllCpuVariants, CpuKernel, ::testing::ValuesIn(testing::variant_names(Backend::Cpu)),
                         testing::param_name);

// The three CPU variants do the same float operations in the same order at every point,
// so their maps must be identical to the bit; a difference means one of them changed.
TEST(CpuKernels, AreBitIdenticalToEachOther) {
  std::mt19937 rng(testing::test_seed() + 3);
  const GridSpec grid = make_test_grid(23, 9, 7);
  const PreparedProblem problem(random_atoms(rng, 333, grid), grid, 1.0);
  const auto reference = run_poisoned(reference_kernel(), problem);
  EXPECT_EQ(run_poisoned(find_kernel("cpu-naive"), problem), reference);
  RunOptions one_thread;
  one_thread.threads = 1;
  EXPECT_EQ(run_poisoned(fast_reference_kernel(), problem, one_thread), reference);
  RunOptions two_threads;
  two_threads.threads = 2;
  EXPECT_EQ(run_poisoned(fast_reference_kernel(), problem, two_threads), reference);
}

// ---- analytic cases ---------------------------------------------------------------------

// One charge: φ = k q / (ε r). Points at 0.5 .. 20 Å; float32 gives ~1e-7 relative, the
// softening length changes 1/r by a²/2r² ≤ 2e-8 there, so 2e-6 relative is a firm bound.
TEST(Analytic, SingleChargeGivesCoulombLaw) {
  PhysicsOptions physics;
  physics.unit = PotentialUnit::KcalPerMolPerE;
  physics.dielectric = 4.0;
  const double q = -0.75;
  Atoms atoms;
  atoms.push_back(1.25, -2.5, 3.75, q, 1.0);
  GridSpec grid;
  grid.dims = {41, 1, 1};
  grid.origin = {1.25 + 0.5, -2.5, 3.75};
  grid.spacing = {0.5, 0.5, 0.5};
  const PreparedProblem problem(atoms, grid, coulomb_factor(physics));
  for (const auto& name : testing::variant_names(Backend::Cpu)) {
    const auto out = run_poisoned(find_kernel(name), problem);
    for (std::int64_t i = 0; i < grid.dims[0]; ++i) {
      const double r = 0.5 + 0.5 * static_cast<double>(i);
      const double expected = kCoulombKcalAngstrom * q / (physics.dielectric * r);
      EXPECT_NEAR(out[static_cast<std::size_t>(i)], expected, 2e-6 * std::fabs(expected)) << name << " r=" << r;
    }
  }
}

TEST(Analytic, SuperpositionOfTwoHalves) {
  std::mt19937 rng(testing::test_seed() + 4);
  const GridSpec grid = make_test_grid(15, 8, 6);
  const Atoms all = random_atoms(rng, 400, grid);
  Atoms first, second;
  for (std::size_t a = 0; a < all.size(); ++a)
    (a % 2 ? second : first).push_back(all.x[a], all.y[a], all.z[a], all.charge[a], all.radius[a]);
  const KernelVariant& k = fast_reference_kernel();
  const auto whole = run_poisoned(k, PreparedProblem(all, grid, 1.0));
  const auto part1 = run_poisoned(k, PreparedProblem(first, grid, 1.0));
  const auto part2 = run_poisoned(k, PreparedProblem(second, grid, 1.0));
  // Each sum carries ≲ (4√n+8) ulp of Σ|q|/r; Σ|q|/r ≤ 400 × 1/a only on a tiny set of points,
  // so bound by the oracle's magnitude at each point.
  const PreparedProblem prepared(all, grid, 1.0);
  const DcsProblem p = prepared.view(nullptr);
  for (std::size_t idx = 0; idx < whole.size(); ++idx) {
    const auto i = static_cast<std::int64_t>(idx % 15), j = static_cast<std::int64_t>((idx / 15) % 8),
               kk = static_cast<std::int64_t>(idx / 120);
    const double tol = 3 * float_tolerance(oracle_at(p, i, j, kk), all.size(), 0.0);
    EXPECT_NEAR(whole[idx], part1[idx] + part2[idx], tol) << "point " << idx;
  }
}

// Moving atoms and grid together leaves every relative position, hence the map, unchanged:
// positions are made relative to the origin in double before rounding to float.
TEST(Analytic, TranslatingAtomsAndGridTogetherChangesNothing) {
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
  const KernelVariant& k = reference_kernel();
  const PreparedProblem original(atoms, grid, 1.0);
  const auto a = run_poisoned(k, original);
  const auto b = run_poisoned(k, PreparedProblem(moved, moved_grid, 1.0));
  const DcsProblem p = original.view(nullptr);
  for (std::size_t idx = 0; idx < a.size(); ++idx) {
    const auto i = static_cast<std::int64_t>(idx % 12), j = static_cast<std::int64_t>((idx / 12) % 10),
               kk = static_cast<std::int64_t>(idx / 120);
    // relative positions agree to double rounding (~1e-14 Å) before the float cast, so the
    // float inputs differ by at most one rounding: the oracle's position term covers it.
    EXPECT_NEAR(a[idx], b[idx], float_tolerance(oracle_at(p, i, j, kk), atoms.size(), original.coordinate_extent()));
  }
}

// ---- the close-contact rule -------------------------------------------------------------

TEST(Softening, AtomOnAGridPointGivesLargeFiniteValue) {
  Atoms atoms;
  atoms.push_back(1.0, 1.0, 1.0, 0.5, 1.0);   // exactly on grid point (2, 2, 2)
  atoms.push_back(1.0, 1.0, 1.0, -0.5, 1.0);  // a second atom on the same point
  atoms.push_back(2.0, 1.0, 1.0, 1.0, 1.0);   // on point (4, 2, 2)
  GridSpec grid;
  grid.dims = {5, 5, 5};
  grid.origin = {0, 0, 0};
  grid.spacing = {0.5, 0.5, 0.5};
  const PreparedProblem problem(atoms, grid, 1.0);
  for (const auto& name : testing::variant_names(Backend::Cpu)) {
    const auto out = run_poisoned(find_kernel(name), problem);
    for (float v : out) ASSERT_TRUE(std::isfinite(v)) << name;
    // at (4,2,2): 1/a from the atom on it, plus the two opposite charges 1 Å away (cancel)
    EXPECT_NEAR(out[4 + 5 * (2 + 5 * 2)], 1.0 / kSofteningLength, 1e-6 / kSofteningLength) << name;
  }
}

TEST(Units, CoulombConstantsMatchReferenceValues) {
  // e/(4πε0 Å) = 14.3996 V; 332.0637 kcal/mol/e (the value CHARMM-era tools round to 332.06);
  // kT/e at 298.15 K = 25.693 mV, so k = 560.45 kT·Å/e².
  EXPECT_NEAR(kCoulombVoltAngstrom, 14.399645, 1e-6);
  EXPECT_NEAR(kCoulombKcalAngstrom, 332.0637, 1e-4);
  PhysicsOptions kt;
  EXPECT_NEAR(coulomb_factor(kt), 14.399645 / 0.02569257912, 1e-3);
  kt.dielectric = 2.0;
  kt.temperature = 310.0;
  EXPECT_NEAR(coulomb_factor(kt), 14.399645 / (0.02569257912 * 310.0 / 298.15) / 2.0, 1e-3);
  EXPECT_EQ(parse_unit("kcal/mol/e"), PotentialUnit::KcalPerMolPerE);
  EXPECT_EQ(parse_unit(" V "), PotentialUnit::Volt);
  EXPECT_THROW(parse_unit("furlongs"), UsageError);
  PhysicsOptions bad;
  bad.dielectric = 0;
  EXPECT_THROW(validate(bad), UsageError);
  bad.dielectric = std::nan("");
  EXPECT_THROW(validate(bad), UsageError);
}

}  // namespace
}  // namespace espgrid
