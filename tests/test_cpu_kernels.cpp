// Every CPU variant against the double oracle (an approximate one by its declared bound),
// analytic cases, and the softening rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

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
  for (const auto& m : testing::model_cases(kernel())) {
    SCOPED_TRACE(m.label);
    const PreparedProblem problem(atoms, grid, coulomb_factor({}), m.model, m.pair);
    const auto out = run_poisoned(kernel(), problem);
    testing::expect_matches_exact_sum(kernel(), problem, out, 7);  // every 7th point: ~4,000 oracle points of 906 atoms
  }
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

// The README promises cpu-simd as the default without a GPU, and scripts/install-deps.sh installs
// Google Highway for it: a build that silently lacks it (libhwy-dev missing) must fail here, not
// ship cpu-parallel as the default. Only -DESPGRID_SIMD=OFF turns it off on purpose.
TEST(CpuKernels, TheDefaultTheReadmePromisesIsBuilt) {
  if (ESPGRID_SIMD_TURNED_OFF) GTEST_SKIP() << "built with -DESPGRID_SIMD=OFF: cpu-simd left out on purpose";
  std::string why;
  EXPECT_TRUE(find_kernel("cpu-simd").available(&why)) << why;
  EXPECT_EQ(default_kernel(Backend::Cpu).name, "cpu-simd");
}

// cpu-simd covers the end of a row with narrower tiles (0 to 3 vectors, and the last points of
// 2, 4 or 8 rows packed into one or two mixed vectors), and on narrow grids under
// AVX-512 gives a task 4 or 8 rows (fewer at the plane's edge): a point must get the same bits
// whichever tile computed it. The same atoms on grids that differ only in width: every point of
// a narrow grid equals the wide grid's point at the same place, for every remainder a row can
// leave (0–3 vectors of 4 (SSE4) to 16 (AVX-512) lanes and parts of one, mixed or not). Under
// AVX-512 1, 5, 8, 17, 24, 40, 52, 70, 100, 116 and 200 end in a mixed vector after 0–3 whole
// ones; 17 and 16 take 8-row tasks, 3, 5, 8, 24, 32 and 33 4-row ones, and 11 rows leave each a
// plane edge of 3 rows.
TEST(CpuKernels, SimdPointsDoNotDependOnTheGridsWidth) {
  if (!find_kernel("cpu-simd").available()) GTEST_SKIP() << "cpu-simd is not built";
  std::mt19937 rng(testing::test_seed() + 5);
  const GridSpec wide = make_test_grid(300, 11, 2);
  const Atoms atoms = random_atoms(rng, 300, wide);
  for (const testing::ModelCase& m : testing::model_cases(find_kernel("cpu-simd"))) {
    const PreparedProblem wide_problem(atoms, wide, 1.0, m.model, m.pair);
    const auto reference = run_poisoned(find_kernel("cpu-simd"), wide_problem);
    for (const std::int64_t nx :
         {1, 3, 5, 8, 9, 16, 17, 24, 26, 32, 33, 40, 47, 52, 70, 90, 100, 116, 129, 200, 257, 299}) {
      SCOPED_TRACE(::testing::Message() << m.label << ", width " << nx);
      GridSpec narrow = wide;
      narrow.dims[0] = nx;
      const PreparedProblem problem(atoms, narrow, 1.0, m.model, m.pair);
      const auto out = run_poisoned(find_kernel("cpu-simd"), problem);
      std::size_t differ = 0;
      for (std::int64_t k = 0; k < narrow.dims[2]; ++k)
        for (std::int64_t j = 0; j < narrow.dims[1]; ++j)
          for (std::int64_t i = 0; i < nx; ++i) {
            const float a = out[static_cast<std::size_t>(i + nx * (j + narrow.dims[1] * k))];
            const float b = reference[static_cast<std::size_t>(i + wide.dims[0] * (j + wide.dims[1] * k))];
            if (std::memcmp(&a, &b, sizeof a) != 0) ++differ;
          }
      EXPECT_EQ(differ, 0u);
    }
  }
}

// The three CPU variants do the same float operations in the same order at every point,
// so their maps must be identical to the bit; a difference means one of them changed.
TEST(CpuKernels, ThoseThatSayTheyMatchTheReferenceDoSoBitForBit) {
  std::mt19937 rng(testing::test_seed() + 3);
  const GridSpec grid = make_test_grid(23, 9, 7);
  const PreparedProblem problem(random_atoms(rng, 333, grid), grid, 1.0);
  const auto reference = run_poisoned(reference_kernel(), problem);
  int checked = 0;
  for (const auto& k : kernel_variants()) {
    if (k.backend != Backend::Cpu || k.reproducibility != Reproducibility::MatchesReference) continue;
    SCOPED_TRACE(k.name);
    for (const int threads : {1, 2, 0}) {
      RunOptions options;
      options.threads = threads;
      EXPECT_EQ(run_poisoned(k, problem, options), reference) << threads << " threads";
    }
    ++checked;
  }
  EXPECT_GE(checked, 2);  // the reference and at least its parallel twin
}

TEST(Physics, DebyeLengthAtPhysiologicalSaltIsTheTextbookValue) {
  // κ⁻¹ = 0.304 nm / √(I/M) in water at 25 °C (Israelachvili): 7.85 Å at 0.15 M, with
  // ε = 78.54; our CODATA constants give 7.86 Å, and κ grows as √I and falls as 1/√(εT).
  EXPECT_NEAR(1.0 / debye_kappa(0.15, 78.54, 298.15), 7.86, 0.01);
  EXPECT_NEAR(debye_kappa(0.6, 78.54, 298.15), 2.0 * debye_kappa(0.15, 78.54, 298.15), 1e-12);
  EXPECT_NEAR(debye_kappa(0.15, 4 * 78.54, 298.15), 0.5 * debye_kappa(0.15, 78.54, 298.15), 1e-12);
  EXPECT_EQ(debye_kappa(0.0, 78.54, 298.15), 0.0);
  PhysicsOptions debye;
  debye.model = PairModel::Debye;
  debye.dielectric = 78.54;
  debye.ionic_strength = 0.15;
  EXPECT_FLOAT_EQ(pair_parameters(debye).kappa, static_cast<float>(debye_kappa(0.15, 78.54, 298.15)));
  EXPECT_EQ(describe_model(debye), "debye (I = 0.15 M, Debye length 7.86 A)");
  PhysicsOptions coulomb;
  EXPECT_EQ(pair_parameters(coulomb).kappa, 0.0f);  // only Debye screens
}

TEST(Physics, ModelNamesAndChecks) {
  for (int m = 0; m < kPairModelCount; ++m)
    EXPECT_EQ(parse_model(model_name(static_cast<PairModel>(m))), static_cast<PairModel>(m));
  EXPECT_THROW(parse_model("yukawa"), UsageError);
  PhysicsOptions o;
  o.ionic_strength = 0.15;  // an electrolyte with the Coulomb model means nothing: refused
  EXPECT_THROW(validate(o), UsageError);
  o.model = PairModel::Debye;
  EXPECT_NO_THROW(validate(o));
  for (const double bad : {-0.1, 11.0, std::nan(""), HUGE_VAL}) {
    o.ionic_strength = bad;
    EXPECT_THROW(validate(o), UsageError) << bad;
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
