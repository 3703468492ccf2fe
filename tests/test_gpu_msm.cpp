// cuda-msm (kernels/msm.cu) phase by phase against cpu-msm on the same plan, and against the
// exact sum by its declared bound: the GPU's float phases must equal the CPU's double phases
// within float rounding, so a wrong GPU phase shows up here by name. Without a usable GPU these
// tests skip with the reason (ESPGRID_REQUIRE_GPU=1 makes that a failure); the last tests (the
// one-GPU rule) run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "src/compute/approximation_error.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/msm/msm_cpu.h"
#include "src/msm/msm_cuda_driver.h"
#include "src/msm/msm_plan.h"
#include "src/pipeline/map_pipeline.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::run_poisoned;

/// Float rounding of one GPU phase against the CPU's double phase, as a share of the phase's
/// magnitude (the same phase run on |q|): float's unit roundoff is 6e-8, and the longest sums
/// (the cutoff stencils, up to ~2·10⁴ terms at a/h = 8) drift like √n roundoffs of their
/// terms' magnitudes, 140 × 6e-8 ≈ 1e-5; twice that for the phases that feed on earlier ones.
constexpr double kPhaseRounding = 2e-5;

const KernelVariant& cuda_msm() { return approximate_kernel(Backend::Cuda, PairModel::Coulomb); }
const KernelVariant& cpu_msm() { return approximate_kernel(Backend::Cpu, PairModel::Coulomb); }

class GpuMsm : public ::testing::Test {
 protected:
  void SetUp() override { ESPGRID_REQUIRE_CUDA_OR_SKIP(); }
};

double rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return v.empty() ? 0.0 : std::sqrt(s / static_cast<double>(v.size()));
}

/// RMS of gpu − cpu, as a share of `scale`'s RMS; prints the share so a failure says how far.
void expect_close(const std::vector<float>& gpu, const std::vector<double>& cpu, const std::vector<double>& scale,
                  const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double d2 = 0;
  std::size_t nonfinite = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    if (!std::isfinite(gpu[i])) ++nonfinite;
    d2 += (gpu[i] - cpu[i]) * (gpu[i] - cpu[i]);
  }
  const double share = gpu.empty() ? 0.0 : std::sqrt(d2 / static_cast<double>(gpu.size())) / rms(scale);
  std::printf("[ info     ] %-44s GPU vs CPU RMS difference %.2e of the magnitude\n", what.c_str(), share);
  EXPECT_EQ(nonfinite, 0u) << what;
  EXPECT_LE(share, kPhaseRounding) << what;
}

struct Case {
  std::string name;
  PreparedProblem problem;
  MsmParameters params;
};

std::vector<Case> phase_cases() {
  std::vector<Case> cases;
  std::mt19937 rng(testing::test_seed() + 500);
  const GridSpec grid = testing::make_test_grid(41, 37, 29, 1.1, {-7.5, 3.25, 18.0});
  const Atoms random_set = testing::random_atoms(rng, 700, grid);
  const PreparedProblem random(random_set, grid, 1.0);
  cases.push_back({"random, cubic", random, {7.0, 1.0, 3}});
  cases.push_back({"random, quintic", random, {6.0, 1.5, 5}});
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  GridRequest request;
  request.spacing = {1.0, 1.0, 1.0};
  request.padding = 5.0;
  const PreparedProblem molecule(fas, make_grid(request, fas), coulomb_factor({}));
  cases.push_back({"fasciculin-2, cubic", molecule, {12.0, 1.5, 3}});
  cases.push_back({"fasciculin-2, quintic", molecule, {12.0, 1.5, 5}});
  // The other kernels MSM splits: each level's own stencil, the top's table, the short range's
  // polynomial (msm_math.h).
  const PreparedProblem random_debye(random_set, grid, 1.0, PairModel::Debye, debye_parameters(1.0 / 7.86));
  const PreparedProblem random_distance(random_set, grid, 1.0, PairModel::Distance);
  const PreparedProblem molecule_debye(fas, make_grid(request, fas), coulomb_factor({}), PairModel::Debye,
                                       debye_parameters(1.0 / 7.86));
  cases.push_back({"random, debye, cubic", random_debye, {7.0, 1.0, 3}});
  cases.push_back({"random, distance, quintic", random_distance, {6.0, 1.5, 5}});
  cases.push_back({"fasciculin-2, debye, quintic", molecule_debye, {12.0, 1.5, 5}});
  return cases;
}

// Anterpolation, restriction, the level sums (cutoff and top) and prolongation: every level's
// grid from the GPU equals the CPU's within float rounding of the phase's magnitude.
TEST_F(GpuMsm, EveryGridPhaseMatchesTheCpuPhase) {
  for (const Case& c : phase_cases()) {
    SCOPED_TRACE(c.name);
    const GridSumProblem p = c.problem.view(nullptr);
    const msm::Plan plan = msm::make_plan(p, c.params);
    ASSERT_GE(plan.level_count(), 2) << "the case should exercise restriction and prolongation";
    const msm::LevelGrids<double> cpu = msm::cpu_level_grids(p, plan);
    const msm::LevelGrids<double> scale = msm::cpu_level_grids(c.problem.with_absolute_charges().view(nullptr), plan);
    const msm::LevelGrids<float> gpu = cuda::msm_level_grids(p, plan, 0);
    ASSERT_EQ(gpu.charge.size(), static_cast<std::size_t>(plan.level_count()));
    for (int l = 0; l < plan.level_count(); ++l) {
      const auto u = static_cast<std::size_t>(l);
      const std::string level = c.name + ", level " + std::to_string(l + 1) + " ";
      expect_close(gpu.charge[u], cpu.charge[u], scale.charge[u], level + (l == 0 ? "anterpolation" : "restriction"));
      expect_close(gpu.direct[u], cpu.direct[u], scale.direct[u],
                   level + (l + 1 == plan.level_count() ? "top sum" : "cutoff sum"));
      expect_close(gpu.potential[u], cpu.potential[u], scale.potential[u], level + "after prolongation");
    }
  }
}

// The map's two parts: the interpolated long range within float rounding of its magnitude, and
// the short range within the float32 bound of a sum of N terms at every point (the same error
// model as the exact kernels: compute/oracle.h), both against the CPU's double parts.
TEST_F(GpuMsm, MapPartsMatchTheCpuParts) {
  for (const Case& c : phase_cases()) {
    SCOPED_TRACE(c.name);
    const GridSumProblem p = c.problem.view(nullptr);
    const msm::Plan plan = msm::make_plan(p, c.params);
    const msm::BinnedAtoms atoms = msm::bin_atoms(p, plan);
    const msm::LevelGrids<double> grids = msm::cpu_level_grids(p, plan);
    std::vector<double> cpu_long(p.point_count()), cpu_short(p.point_count());
    msm::cpu_map_parts(p, plan, grids, atoms, cpu_long.data(), cpu_short.data());
    const PreparedProblem absolute = c.problem.with_absolute_charges();
    const GridSumProblem pa = absolute.view(nullptr);
    std::vector<double> abs_long(p.point_count()), abs_short(p.point_count());
    msm::cpu_map_parts(pa, plan, msm::cpu_level_grids(pa, plan), msm::bin_atoms(pa, plan), abs_long.data(),
                       abs_short.data());
    std::vector<float> gpu_long = testing::poisoned(p.point_count()), gpu_short = testing::poisoned(p.point_count());
    cuda::msm_map_parts(p, plan, 0, gpu_long.data(), gpu_short.data());
    expect_close(gpu_long, cpu_long, abs_long, c.name + ", interpolation");
    std::size_t failures = 0;
    for (std::size_t i = 0; i < gpu_short.size(); ++i) {
      const auto nx = static_cast<std::size_t>(p.nx), ny = static_cast<std::size_t>(p.ny);
      const OracleValue o = oracle_at(p, static_cast<std::int64_t>(i % nx), static_cast<std::int64_t>((i / nx) % ny),
                                      static_cast<std::int64_t>(i / (nx * ny)));
      // Σ|q|/r over all atoms bounds the short range's terms: the exact kernels' rounding model,
      // positions included (the GPU forms grid coordinates in float32, the CPU in double: for
      // 1/r² an atom 0.3 Å from a point turns that half ulp into 2e-5 of the term).
      const double tolerance = float_tolerance(o, p.atom_count, c.problem.coordinate_extent());
      const double err = std::fabs(static_cast<double>(gpu_short[i]) - cpu_short[i]);
      if (!(err <= tolerance) && ++failures <= 5)
        ADD_FAILURE() << "short range at point " << i << ": GPU " << gpu_short[i] << ", CPU " << cpu_short[i]
                      << ", |err| " << err << " > " << tolerance;
    }
    EXPECT_EQ(failures, 0u);
  }
}

// The whole map: cuda-msm (float) against cpu-msm (double) with the same parameters. The two
// approximate the exact sum identically; what differs is float rounding, which must stay a small
// share (a tenth) of the declared error at the points the bound speaks about: at the 1e-4
// preset that is 1e-5 relative, about 80 float32 roundoffs, room for the stencil sums of ~2·10⁴
// terms (√n ≈ 140 roundoffs of their terms, which partly cancel).
TEST_F(GpuMsm, WholeMapMatchesCpuMsm) {
  for (const char* name : {"fasciculin2.pqr", "boxb_rna_pdb2pqr3.pqr"}) {
    SCOPED_TRACE(name);
    const Atoms atoms = testing::load_molecule(name);
    GridRequest request;
    request.spacing = {0.8, 0.8, 0.8};
    request.padding = 6.0;
    const PreparedProblem problem(atoms, make_grid(request, atoms), coulomb_factor({}));
    for (const double accuracy : {1e-3, 1e-4}) {
      RunOptions o;
      o.method.accuracy = accuracy;
      const auto gpu = run_poisoned(cuda_msm(), problem, o);
      const auto cpu = run_poisoned(cpu_msm(), problem, o);
      const ApproximationError e = approximation_error(problem.view(nullptr), gpu.data(), cpu.data());
      std::printf("[ info     ] %s, accuracy %g: cuda-msm vs cpu-msm relative RMS %.2e at %zu points\n", name, accuracy,
                  e.relative_rms, e.points);
      EXPECT_TRUE(e.within(0.1 * cuda_msm().bound_for(o.method))) << e.relative_rms;
    }
  }
}

// Real molecules (net +4, a net −18 RNA, a protein–RNA complex, the actin dimer) against the
// exact sum at every point ≥ 1.4 Å from atoms: within the declared bound for both presets.
TEST_F(GpuMsm, RealMoleculesAreWithinTheDeclaredBound) {
  struct Model {
    PairModel model;
    PairParameters pair;
    const char* label;
  };
  for (const char* name : {"fasciculin2.pqr", "boxb_rna_pdb2pqr3.pqr", "npep_boxb_complex.pqr", "actin_dimer.pqr"})
    for (const Model& m :
         {Model{PairModel::Coulomb, {}, "coulomb"}, Model{PairModel::Debye, debye_parameters(0.1285), "debye 0.15 M"},
          Model{PairModel::Distance, {}, "distance"}}) {
      const Atoms atoms = testing::load_molecule(name);
      GridRequest request;
      request.spacing = {0.5, 0.5, 0.5};
      request.padding = 8.0;
      const PreparedProblem problem(atoms, make_grid(request, atoms), coulomb_factor({}), m.model, m.pair);
      const auto exact = run_poisoned(default_kernel(Backend::Cuda), problem);  // float32 rounding ~1e-7: negligible
      for (const double accuracy : {1e-3, 1e-4}) {
        SCOPED_TRACE(::testing::Message() << name << ", " << m.label << ", accuracy " << accuracy);
        RunOptions o;
        o.method.accuracy = accuracy;
        const auto out = run_poisoned(cuda_msm(), problem, o);
        const ApproximationError e = approximation_error(problem.view(nullptr), out.data(), exact.data());
        const double bound = cuda_msm().bound_for(o.method, m.model);
        std::printf("[ info     ] %-24s %-13s %g: relative RMS %.3e (bound %.0e), max |err| %.3e at %zu points\n", name,
                    m.label, accuracy, e.relative_rms, bound, e.max_abs, e.points);
        EXPECT_TRUE(e.within(bound)) << e.relative_rms;
      }
    }
}

/// Copies of a bundled molecule on an n×n×n lattice (pitch: its largest extent + 4 Å): a large
/// structure made of real charge distributions, generated here instead of shipped.
Atoms lattice_of(const std::string& name, int n) {
  const Atoms one = testing::load_molecule(name);
  double lo[3] = {1e30, 1e30, 1e30}, hi[3] = {-1e30, -1e30, -1e30};
  for (std::size_t a = 0; a < one.size(); ++a) {
    const double c[3] = {one.x[a], one.y[a], one.z[a]};
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], c[d]);
      hi[d] = std::max(hi[d], c[d]);
    }
  }
  const double pitch = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}) + 4.0;
  Atoms all;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k)
        for (std::size_t a = 0; a < one.size(); ++a)
          all.push_back(one.x[a] + i * pitch, one.y[a] + j * pitch, one.z[a] + k * pitch, one.charge[a], one.radius[a]);
  return all;
}

// A large structure (8 copies of acetylcholine-binding protein, 128,720 atoms) at 1 Å against
// the exact GPU kernel: within the bound, and faster than the exact kernel (printed; the
// timings that matter are in bench --sweep msm).
TEST_F(GpuMsm, LargeLatticeStructureIsWithinTheBoundAndFaster) {
  const Atoms atoms = lattice_of("achbp.pqr", 2);
  GridRequest request;
  request.spacing = {1.0, 1.0, 1.0};
  request.padding = 5.0;
  const PreparedProblem problem(atoms, make_grid(request, atoms), coulomb_factor({}));
  RunOptions exact_options;
  std::vector<float> exact = testing::poisoned(problem.point_count());
  const RunTiming te = default_kernel(Backend::Cuda).run(problem.view(exact.data()), exact_options);
  for (const double accuracy : {1e-3, 1e-4}) {
    RunOptions o;
    o.method.accuracy = accuracy;
    std::vector<float> out = testing::poisoned(problem.point_count());
    cuda_msm().run(problem.view(out.data()), o);  // warm-up
    out = testing::poisoned(problem.point_count());
    const RunTiming t = cuda_msm().run(problem.view(out.data()), o);
    const ApproximationError e = approximation_error(problem.view(nullptr), out.data(), exact.data());
    std::printf(
        "[ info     ] %zu atoms, %zu points, accuracy %g: relative RMS %.3e, cuda-msm %.1f ms (kernel) vs "
        "exact %.1f ms\n",
        atoms.size(), problem.point_count(), accuracy, e.relative_rms, 1e3 * t.kernel_seconds, 1e3 * te.kernel_seconds);
    for (const PhaseTiming& phase : t.phases)
      std::printf("[ info     ]   %-14s %8.2f ms\n", phase.name.c_str(), 1e3 * phase.seconds);
    EXPECT_TRUE(e.within(cuda_msm().bound_for(o.method))) << e.relative_rms;
    EXPECT_LT(t.kernel_seconds, te.kernel_seconds) << "MSM slower than the exact kernel on 128k atoms";
  }
}

// Every phase is timed, the kernel time is their sum, and two runs give the same bits.
TEST_F(GpuMsm, PhasesAreTimedAndRunsRepeatBitForBit) {
  std::mt19937 rng(testing::test_seed() + 510);
  const GridSpec grid = testing::make_test_grid(50, 40, 30);
  const PreparedProblem problem(testing::random_atoms(rng, 2000, grid), grid, 1.0);
  const auto first = run_poisoned(cuda_msm(), problem);
  std::vector<float> second = testing::poisoned(problem.point_count());
  const RunTiming t = cuda_msm().run(problem.view(second.data()), {});
  EXPECT_EQ(std::memcmp(first.data(), second.data(), sizeof(float) * first.size()), 0);
  const char* expected[] = {"binning", "anterpolation", "restriction",   "cutoff",
                            "top",     "prolongation",  "interpolation", "short_range"};
  ASSERT_EQ(t.phases.size(), 8u);
  double sum = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(t.phases[i].name, expected[i]);
    EXPECT_GE(t.phases[i].seconds, 0.0);
    sum += t.phases[i].seconds;
  }
  EXPECT_NEAR(t.kernel_seconds, sum, 1e-9);
  EXPECT_FALSE(t.method.empty());
}

// A map larger than its slab cap streams through many slabs (two buffers, two streams): the
// same bits as one slab, every plane reported once.
TEST_F(GpuMsm, SlabsGiveTheSameMapBitForBit) {
  std::mt19937 rng(testing::test_seed() + 520);
  const GridSpec grid = testing::make_test_grid(45, 23, 29);
  const PreparedProblem problem(testing::random_atoms(rng, 900, grid), grid, 1.0);
  const auto whole = run_poisoned(cuda_msm(), problem);
  RunOptions tiny;
  tiny.max_slab_bytes = 2 * 3 * 45 * 23 * sizeof(float);  // three planes per buffer
  std::vector<int> seen(29, 0);
  tiny.planes_done = [&](std::int64_t first, std::int64_t count) {
    for (std::int64_t k = first; k < first + count; ++k) seen[static_cast<std::size_t>(k)]++;
  };
  const auto sliced = run_poisoned(cuda_msm(), problem, tiny);
  EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), sizeof(float) * whole.size()), 0);
  for (int k = 0; k < 29; ++k) EXPECT_EQ(seen[static_cast<std::size_t>(k)], 1) << "plane " << k;
}

// ---- everywhere ---------------------------------------------------------------------------------------

// cuda-msm runs on one GPU: a device list is refused by the registry and by select_kernel,
// before anything runs, naming the way out.
TEST(GpuMsmRules, SeveralDevicesAreRefused) {
  const GridSpec grid = testing::make_test_grid(4, 4, 4);
  std::mt19937 rng(1);
  const PreparedProblem problem(testing::random_atoms(rng, 3, grid), grid, 1.0);
  RunOptions options;
  options.devices = {0, 0};
  try {
    run_poisoned(cuda_msm(), problem, options);
    FAIL() << "a device list was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("runs on one GPU"), std::string::npos) << e.what();
  }
  ComputeOptions compute;
  compute.kernel = std::string(cuda_msm().name);
  compute.run.devices = {0, 1};
  EXPECT_THROW(select_kernel(compute, PairModel::Coulomb), Error);
}

}  // namespace
}  // namespace espgrid
