// The multilevel summation on the CPU (src/compute/msm_*.h, row cpu-msm): the method's
// identities (the kernel splitting, the interpolants, charge on every level, each level's sum
// against a brute-force lattice sum, prolongation as restriction's transpose), its error
// against the exact sum on real molecules and its convergence with h, and the invariances an
// approximate map must still have (superposition, q → −q, translation, a sub-box of a larger
// map). The presets and the plan's rules are checked too. These are the tests
// /work/shared/MSM.md lists; the GPU phases are compared with these CPU phases in
// tests/test_gpu_msm.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <sys/wait.h>
#include <vector>
#if ESPGRID_HAVE_HWY
#include <hwy/targets.h>
#endif

#include "src/compute/approximation_error.h"
#include "src/core/errors.h"
#include "src/msm/msm_cpu.h"
#include "src/msm/msm_cpu_vectors.h"
#include "src/msm/msm_math.h"
#include "src/msm/msm_parameters.h"
#include "src/msm/msm_plan.h"
#include "src/pipeline/map_pipeline.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::random_atoms;
using testing::run_poisoned;

const KernelVariant& cpu_msm() {
  for (const auto& k : kernel_variants())
    if (k.backend == Backend::Cpu && k.approximate()) return k;
  throw Error("no approximate CPU row");
}

RunOptions with_params(MsmParameters p) {
  RunOptions o;
  o.method.msm = p;
  return o;
}

/// A molecule's map at `spacing` with `padding`, exact (double oracle, every point) and by cpu-msm.
struct Compared {
  ApproximationError error;
  double bound = 0;
};

PreparedProblem molecule_problem(const std::string& name, double spacing, double padding,
                                 PairModel model = PairModel::Coulomb, PairParameters pair = {}) {
  const Atoms atoms = testing::load_molecule(name);
  GridRequest request;
  request.spacing = {spacing, spacing, spacing};
  request.padding = padding;
  return PreparedProblem(atoms, make_grid(request, atoms), coulomb_factor({}), model, pair);
}

// ---- the method's formulas ---------------------------------------------------------------------------

// γ joins 1/ρ at ρ = 1 with k continuous derivatives (k = 2 for the cubic's Taylor-2, 3 for
// the quintic's Taylor-3): compared by finite differences of order up to k, step 1e-3, whose
// truncation error (~1e-3 relative for the k-th derivative) sets the 1e-2 tolerance.
TEST(MsmFormulas, SofteningJoinsOneOverRhoSmoothly) {
  for (const int order : {3, 5}) {
    const int k = msm::taylor_terms(order);
    EXPECT_DOUBLE_EQ(msm::gamma_inside(1.0, order), 1.0);
    const auto inside = [&](double rho) { return msm::gamma_inside(rho * rho, order); };
    const auto outside = [](double rho) { return 1.0 / rho; };
    const double step = 1e-3;
    // One-sided differences from ρ = 1 into each piece.
    for (int derivative = 1; derivative <= k; ++derivative) {
      double left = 0, right = 0;
      for (int i = 0; i <= derivative; ++i) {
        const double c = std::tgamma(derivative + 1) / (std::tgamma(i + 1) * std::tgamma(derivative - i + 1)) *
                         ((derivative - i) % 2 ? -1.0 : 1.0);
        left += c * inside(1.0 - (derivative - i) * step);
        right += c * outside(1.0 + i * step);
      }
      left /= std::pow(step, derivative);
      right /= std::pow(step, derivative);
      EXPECT_NEAR(left, right, 1e-2 * std::fabs(right) + 1e-2 * derivative) << "order " << order << ", d" << derivative;
    }
  }
}

// 1/r = short range + Σ levels + top, with the plan's own stencil table for every level below
// the top (scaled by 2^-(l-1)) and the cutoffs where the plan puts them: the splitting adds
// back to 1/r to double rounding (1e-13 relative) at lattice distances of every level.
TEST(MsmFormulas, SplittingAddsUpToOneOverR) {
  for (const int order : {3, 5}) {
    const MsmParameters params{9.0, 1.5, order};
    // 40 random atoms spread over 200 Å: enough levels (the plan coarsens on the atoms' extent).
    std::mt19937 rng(7);
    GridSpec grid = testing::make_test_grid(5, 5, 5, 1.0, {0, 0, 0});
    Atoms atoms;
    std::uniform_real_distribution<double> u(0, 200);
    for (int i = 0; i < 40; ++i) atoms.push_back(u(rng), u(rng), u(rng), 1.0, 1.0);
    const PreparedProblem problem(atoms, grid, 1.0);
    const msm::Plan plan = msm::make_plan(problem.view(nullptr), params);
    ASSERT_GE(plan.level_count(), 3) << "the test needs several levels";
    const int levels = plan.level_count();
    const double a = params.cutoff, h = params.spacing;
    const int r = plan.stencil_radius;
    for (int jz = 0; jz <= r; ++jz)
      for (int jy = 0; jy <= jz; ++jy)
        for (int jx = 0; jx <= jy; ++jx) {
          if (jx + jy + jz == 0) continue;
          for (int scale = 0; scale < levels; ++scale) {  // distances on level `scale`'s lattice
            const double dist = std::ldexp(h, scale) * std::sqrt(double(jx * jx + jy * jy + jz * jz));
            double sum = dist < a ? 1.0 / dist - msm::smoothed_coulomb(dist * dist, a, order) : 0.0;
            for (int l = 0; l + 1 < levels; ++l) {
              // K_l(dist) = 2^-l K_1(dist / 2^l): a lattice offset on level 1 when dist/2^l is one.
              const double on_level1 = dist / std::ldexp(1.0, l) / h;
              const double rounded = std::round(on_level1 * on_level1);
              double k = 0;
              if (std::fabs(on_level1 * on_level1 - rounded) < 1e-9) {
                // Find an offset with that squared length in the table (the kernel is radial).
                bool found = false;
                for (int x = 0; x <= r && !found; ++x)
                  for (int y = 0; y <= r && !found; ++y)
                    for (int z = 0; z <= r && !found; ++z)
                      if (x * x + y * y + z * z == static_cast<int>(rounded)) {
                        k = plan.stencil_weight(x, y, z);
                        found = true;
                      }
                if (!found) k = 0;  // beyond the stencil: zero by the cutoff 2a
              } else {
                k = msm::smoothed_coulomb(dist * dist / std::ldexp(1.0, 2 * l), a, order) -
                    msm::smoothed_coulomb(dist * dist / std::ldexp(1.0, 2 * l), 2 * a, order);
                if (dist / std::ldexp(1.0, l) >= 2 * a) k = 0;
              }
              sum += std::ldexp(k, -l);
            }
            sum += msm::smoothed_coulomb(dist * dist, std::ldexp(a, levels - 1), order);
            EXPECT_NEAR(sum, 1.0 / dist, 1e-13 / dist) << "order " << order << ", r " << dist;
          }
        }
  }
}

// Interpolant weights at any fractional position sum to one and reproduce x^n for n up to
// degree − 1 (cubic: 2, quintic: 4); the next power is not reproduced (the test can fail).
// Double rounding of sums of six terms of size ≤ 3^4: 1e-12.
TEST(MsmFormulas, InterpolantWeightsSumToOneAndReproducePolynomials) {
  for (const int order : {3, 5}) {
    const int width = msm::support_width(order);
    const int exact_degree = order - 1;
    double worst_beyond = 0;
    for (int step = 0; step < 64; ++step) {
      const double t = step / 64.0;
      double w[6];
      msm::point_weights(t, order, w);
      for (int n = 0; n <= exact_degree + 1; ++n) {
        double sum = 0;
        for (int k = 0; k < 2 * width; ++k) sum += w[k] * std::pow(static_cast<double>(k - (width - 1)), n);
        if (n <= exact_degree)
          EXPECT_NEAR(sum, std::pow(t, n), 1e-12) << "order " << order << ", n " << n << ", t " << t;
        else
          worst_beyond = std::max(worst_beyond, std::fabs(sum - std::pow(t, n)));
      }
    }
    EXPECT_GT(worst_beyond, 1e-3) << "order " << order << " reproduces one degree more than expected";
  }
}

// The restriction stencils are φ at half-integers: the cubic's is −1/16, 0, 9/16, 1, 9/16, 0,
// −1/16 (the design note); each sums to 2 (one coarse point per two fine ones per axis).
TEST(MsmFormulas, RestrictionWeightsAreTheInterpolantAtHalfPoints) {
  const double cubic[] = {-1.0 / 16, 0, 9.0 / 16, 1, 9.0 / 16, 0, -1.0 / 16};
  for (int j = -3; j <= 3; ++j) EXPECT_DOUBLE_EQ(msm::restriction_weight(j, 3), cubic[j + 3]) << j;
  const double quintic[] = {3.0 / 256, 0, -25.0 / 256, 0, 75.0 / 128, 1, 75.0 / 128, 0, -25.0 / 256, 0, 3.0 / 256};
  for (int j = -5; j <= 5; ++j) EXPECT_DOUBLE_EQ(msm::restriction_weight(j, 5), quintic[j + 5]) << j;
}

// ---- the phases --------------------------------------------------------------------------------------

struct RandomSystem {
  PreparedProblem problem;
  msm::Plan plan;
};

RandomSystem random_system(unsigned seed, std::size_t atoms, MsmParameters params) {
  std::mt19937 rng(seed);
  const GridSpec grid = testing::make_test_grid(19, 17, 15, 1.3, {-4.0, 3.0, 20.0});
  const PreparedProblem problem(random_atoms(rng, atoms, grid), grid, 1.0);
  msm::Plan plan = msm::make_plan(problem.view(nullptr), params);
  return {problem, plan};
}

// Anterpolation and restriction keep the total charge and the dipole on every level: the
// interpolant sums to one and reproduces linear functions (the coarse lattice's positions are
// exact multiples of h). Double rounding over ~10^4 terms: 1e-10 of Σ|q|·extent.
TEST(MsmPhases, ChargeAndDipoleAreTheSameOnEveryLevel) {
  for (const int order : {3, 5}) {
    const RandomSystem s = random_system(testing::test_seed() + 100 + order, 300, {6.0, 1.0, order});
    const GridSumProblem p = s.problem.view(nullptr);
    ASSERT_GE(s.plan.level_count(), 2);
    double q = 0, abs_q = 0, dipole[3] = {0, 0, 0};
    for (std::size_t a = 0; a < p.atom_count; ++a) {
      q += p.q[a];
      abs_q += std::fabs(p.q[a]);
      dipole[0] += p.q[a] * static_cast<double>(p.x[a]);
      dipole[1] += p.q[a] * static_cast<double>(p.y[a]);
      dipole[2] += p.q[a] * static_cast<double>(p.z[a]);
    }
    const msm::LevelGrids<double> g = msm::cpu_level_grids(p, s.plan);
    for (int l = 0; l < s.plan.level_count(); ++l) {
      SCOPED_TRACE(::testing::Message() << "order " << order << ", level " << l + 1);
      const msm::Level& level = s.plan.levels[static_cast<std::size_t>(l)];
      const std::vector<double>& ql = g.charge[static_cast<std::size_t>(l)];
      double total = 0, m[3] = {0, 0, 0};
      for (std::int64_t z = 0; z < level.grid.n[2]; ++z)
        for (std::int64_t y = 0; y < level.grid.n[1]; ++y)
          for (std::int64_t x = 0; x < level.grid.n[0]; ++x) {
            const double v = ql[static_cast<std::size_t>(x + level.grid.n[0] * (y + level.grid.n[1] * z))];
            total += v;
            m[0] += v * static_cast<double>(level.grid.lo[0] + x) * level.spacing;
            m[1] += v * static_cast<double>(level.grid.lo[1] + y) * level.spacing;
            m[2] += v * static_cast<double>(level.grid.lo[2] + z) * level.spacing;
          }
      EXPECT_NEAR(total, q, 1e-12 * abs_q);
      for (int d = 0; d < 3; ++d) EXPECT_NEAR(m[d], dipole[d], 1e-10 * abs_q * 100);
    }
  }
}

/// Each level's own sum at `samples` random points of the level equals the brute-force lattice sum
/// Σ_n K_l(|r_m − r_n|) q_l(n) over every point of the level, K_l = g(a_l) − g(2a_l) (zero beyond
/// 2a_l) evaluated from `g_s(r², s)` directly (not from the plan's tables), and the top level's
/// the all-pairs sum of g(a_L): 1e-12 of Σ|K q| (double rounding).
template <class Softened>
void expect_level_sums_are_lattice_sums(const GridSumProblem& p, const msm::Plan& plan, int samples, Softened g_s) {
  const msm::LevelGrids<double> g = msm::cpu_level_grids(p, plan);
  const int levels = plan.level_count();
  ASSERT_GE(levels, 2);
  for (int l = 0; l < levels; ++l) {
    SCOPED_TRACE(::testing::Message() << "level " << l + 1 << " of " << levels);
    const msm::Level& level = plan.levels[static_cast<std::size_t>(l)];
    const msm::GridBox& box = level.grid;
    const double al = std::ldexp(plan.params.cutoff, l);
    const bool top = l == levels - 1;
    std::mt19937 rng(static_cast<unsigned>(l));
    for (int sample = 0; sample < samples; ++sample) {
      const std::int64_t mx = box.lo[0] + static_cast<std::int64_t>(rng() % static_cast<unsigned>(box.n[0]));
      const std::int64_t my = box.lo[1] + static_cast<std::int64_t>(rng() % static_cast<unsigned>(box.n[1]));
      const std::int64_t mz = box.lo[2] + static_cast<std::int64_t>(rng() % static_cast<unsigned>(box.n[2]));
      double sum = 0, scale = 0;
      for (std::int64_t nz = box.lo[2]; nz < box.lo[2] + box.n[2]; ++nz)
        for (std::int64_t ny = box.lo[1]; ny < box.lo[1] + box.n[1]; ++ny)
          for (std::int64_t nx = box.lo[0]; nx < box.lo[0] + box.n[0]; ++nx) {
            const double r2 =
                level.spacing * level.spacing *
                static_cast<double>((mx - nx) * (mx - nx) + (my - ny) * (my - ny) + (mz - nz) * (mz - nz));
            double k = g_s(r2, al);
            if (!top) k = r2 < 4 * al * al ? k - g_s(r2, 2 * al) : 0.0;
            const double qn = g.charge[static_cast<std::size_t>(l)][box.index(nx, ny, nz)];
            sum += k * qn;
            scale += std::fabs(k * qn);
          }
      EXPECT_NEAR(g.direct[static_cast<std::size_t>(l)][box.index(mx, my, mz)], sum, 1e-12 * scale + 1e-300);
    }
  }
}

// Coulomb: each level's cutoff sum and the top's all-pairs sum against the lattice sums of γ.
TEST(MsmPhases, EachLevelSumEqualsABruteForceLatticeSum) {
  for (const int order : {3, 5}) {
    SCOPED_TRACE(::testing::Message() << "order " << order);
    const RandomSystem s = random_system(testing::test_seed() + 200 + order, 200, {5.0, 1.25, order});
    expect_level_sums_are_lattice_sums(s.problem.view(nullptr), s.plan, 40, [&](double r2, double scale) {
      return msm::smoothed_coulomb(r2, scale, order);
    });
  }
}

// Prolongation is restriction's transpose: <R q, e> = <q, P e> for random fine q and coarse e
// (double rounding: 1e-12 of the sum of magnitudes).
TEST(MsmPhases, ProlongationIsTheTransposeOfRestriction) {
  for (const int order : {3, 5}) {
    const RandomSystem s = random_system(testing::test_seed() + 300 + order, 100, {6.0, 1.0, order});
    ASSERT_GE(s.plan.level_count(), 2);
    const GridSumProblem p = s.problem.view(nullptr);
    const msm::LevelGrids<double> g = msm::cpu_level_grids(p, s.plan);
    // Restriction of level 1's charges is level 2's charges; prolongation of the top's
    // potential is part of level 1's potential: compare the two bilinear forms via the
    // phases' own outputs, with level 2's potential as e.
    const msm::Level& fine = s.plan.levels[0];
    const msm::Level& coarse = s.plan.levels[1];
    // <R q1, e2> over the coarse grid.
    double lhs = 0, scale = 0;
    for (std::size_t i = 0; i < coarse.grid.points(); ++i) {
      lhs += g.charge[1][i] * g.potential[1][i];
      scale += std::fabs(g.charge[1][i] * g.potential[1][i]);
    }
    // <q1, P e2> = <q1, e1 − direct1>.
    double rhs = 0;
    for (std::size_t i = 0; i < fine.grid.points(); ++i) rhs += g.charge[0][i] * (g.potential[0][i] - g.direct[0][i]);
    EXPECT_NEAR(lhs, rhs, 1e-11 * scale) << "order " << order;
  }
}

// ---- error against the exact sum ---------------------------------------------------------------------

/// cpu-msm's map of `problem` with `params` against the double oracle at every point.
ApproximationError msm_error(const PreparedProblem& problem, const std::vector<double>& exact, const RunOptions& o) {
  const auto out = run_poisoned(cpu_msm(), problem, o);
  return approximation_error(problem.view(nullptr), out.data(), exact.data());
}

// ---- screened and 1/r² kernels (Debye, distance) --------------------------------------------------------

/// The kernels other than Coulomb that the MSM rows split: Debye at 0.15 M (κ = 1/7.86 Å) and at
/// a strong screening (κ = 1/Å), and 1/r².
struct SplitCase {
  PairModel model;
  PairParameters pair;
  const char* label;
};
std::vector<SplitCase> split_cases() {
  return {{PairModel::Debye, debye_parameters(1.0 / 7.86), "debye kappa=1/7.86"},
          {PairModel::Debye, debye_parameters(1.0), "debye kappa=1"},
          {PairModel::Distance, {}, "distance"}};
}

// taylor_coefficients gives Coulomb's γ/s exactly (1e-15: double rounding), and for the other
// kernels the derivatives of f(t) = e^(−κ√t)/√t^p at t = s²: against central differences of f
// with step δ = 1e-3·s² (truncation ~δ² relative of the next derivative; the n-th difference's
// cancellation ~1e-16/δⁿ), so 1e-4 relative through the third derivative.
TEST(MsmKernels, TaylorCoefficientsAreTheKernelsDerivatives) {
  for (const int order : {3, 5}) {
    double c[4];
    msm::taylor_coefficients(msm::SplitKernel{1, 0.0}, 9.0, order, c);
    for (const double r : {0.0, 2.5, 6.0, 8.999}) {
      const double t = r * r - 81.0;
      EXPECT_NEAR(msm::softened_inside(t, c), msm::gamma_inside(r * r / 81.0, order) / 9.0, 1e-15) << r;
    }
    for (const SplitCase& sc : split_cases()) {
      SCOPED_TRACE(::testing::Message() << sc.label << ", order " << order);
      const msm::SplitKernel k = msm::split_kernel(sc.model, sc.pair);
      for (const double s : {6.0, 12.0}) {
        msm::taylor_coefficients(k, s, order, c);
        const double t0 = s * s, d = 1e-3 * t0;
        const auto f = [&](double t) { return msm::kernel_value(t, k); };
        const double d1 = (f(t0 + d) - f(t0 - d)) / (2 * d);
        const double d2 = (f(t0 + d) - 2 * f(t0) + f(t0 - d)) / (d * d);
        const double d3 = (f(t0 + 2 * d) - 2 * f(t0 + d) + 2 * f(t0 - d) - f(t0 - 2 * d)) / (2 * d * d * d);
        EXPECT_NEAR(c[0], f(t0), 1e-15 * f(t0));
        EXPECT_NEAR(c[1], d1, 1e-4 * std::fabs(d1));
        EXPECT_NEAR(c[2], d2 / 2, 1e-4 * std::fabs(d2 / 2));
        if (msm::taylor_terms(order) >= 3)
          EXPECT_NEAR(c[3], d3 / 6, 1e-4 * std::fabs(d3 / 6));
        else
          EXPECT_EQ(c[3], 0.0);
      }
    }
  }
}

// Each level below the top has its own stencil, K_l(j·h_l) = g_{a_l} − g_{2a_l} of the kernel
// (no 2^-(l-1) scaling: e^(−κr) is not scale-free), and the cutoff sums are the brute-force
// lattice sums of that K_l, the top the all-pairs sum of g_{a_L}: 1e-12 of Σ|K q| (double
// rounding), as for Coulomb in MsmPhases.EachLevelSumEqualsABruteForceLatticeSum.
TEST(MsmKernels, EachLevelSumsItsOwnKernelOfTheScreenedAndInverseSquareModels) {
  for (const SplitCase& sc : split_cases()) {
    for (const int order : {3, 5}) {
      SCOPED_TRACE(::testing::Message() << sc.label << ", order " << order);
      std::mt19937 rng(testing::test_seed() + 250 + order);
      const GridSpec grid = testing::make_test_grid(19, 17, 15, 1.3, {-4.0, 3.0, 20.0});
      Atoms atoms = random_atoms(rng, 200, grid);
      // The atoms' extent alone sets the level count (msm_plan.cpp); two atoms at the far corners
      // of the box random_atoms draws from (2 Å beyond the grid) fix it at three levels for every
      // seed (without them about one seed in 30 drew atoms close enough for two).
      for (int a = 0; a < 3; ++a) {
        const double lo = grid.origin[static_cast<std::size_t>(a)] - 2.0;
        const double hi = grid.position(a, grid.dims[static_cast<std::size_t>(a)] - 1) + 2.0;
        (a == 0 ? atoms.x : a == 1 ? atoms.y : atoms.z)[0] = lo;
        (a == 0 ? atoms.x : a == 1 ? atoms.y : atoms.z)[1] = hi;
      }
      const PreparedProblem problem(atoms, grid, 1.0, sc.model, sc.pair);
      const GridSumProblem p = problem.view(nullptr);
      const msm::Plan plan = msm::make_plan(p, {5.0, 1.25, order});
      const int levels = plan.level_count();
      ASSERT_GE(levels, 3);
      EXPECT_FALSE(plan.kernel.coulomb());
      // The tables: level 2's is not level 1's scaled (the test can tell the Coulomb rule apart).
      const double* k1 = plan.level_stencil(0);
      const double* k2 = plan.level_stencil(1);
      const int r = plan.stencil_radius, w = 2 * r + 1;
      const std::size_t one_step = static_cast<std::size_t>(r + 1 + w * (r + w * r));  // offset (1, 0, 0)
      EXPECT_GT(std::fabs(k2[one_step] - 0.5 * k1[one_step]), 1e-6 * std::fabs(k1[one_step]));
      // g_s from its definition: f beyond s, the Taylor polynomial inside.
      expect_level_sums_are_lattice_sums(p, plan, 20, [&](double r2, double scale) {
        if (r2 >= scale * scale) return msm::kernel_value(r2, plan.kernel);
        double c[4];
        msm::taylor_coefficients(plan.kernel, scale, order, c);
        const double t = r2 - scale * scale;
        return c[0] + t * (c[1] + t * (c[2] + t * c[3]));
      });
    }
  }
}

/// RMS of a − b over RMS of a.
double rms_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double d2 = 0, a2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d2 += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    a2 += double(a[i]) * a[i];
  }
  return std::sqrt(d2 / a2);
}

// Debye at κ → 0 is Coulomb: a Debye MSM map at I = 1e-12 M (Debye length ~3·10⁶ Å) equals the
// Coulomb MSM map to 1e-9 relative RMS (the polynomial path's rounding against γ's, in double,
// plus e^(−κr) − 1 ≈ 3e-6·r/10⁶); a real κ changes it (the test can fail).
TEST(MsmKernels, DebyeWithoutSaltIsTheCoulombMap) {
  const PreparedProblem coulomb = molecule_problem("fasciculin2.pqr", 1.5, 5.0);
  const PreparedProblem unsalted =
      molecule_problem("fasciculin2.pqr", 1.5, 5.0, PairModel::Debye, debye_parameters(1e-9));
  const PreparedProblem salted =
      molecule_problem("fasciculin2.pqr", 1.5, 5.0, PairModel::Debye, debye_parameters(1.0 / 7.86));
  const RunOptions o = with_params({10.0, 2.0, 5});
  const auto a = run_poisoned(cpu_msm(), coulomb, o);
  const auto b = run_poisoned(cpu_msm(), unsalted, o);
  const auto c = run_poisoned(cpu_msm(), salted, o);
  EXPECT_LE(rms_difference(a, b), 1e-6);  // float maps: their rounding, 6e-8, dominates
  EXPECT_GT(rms_difference(a, c), 0.1);
}

// Debye (0.15 M and 1 M) and the 1/r² model on real molecules (net +4, a net −18 RNA, a
// protein–RNA complex), every point ≥ 1.4 Å from atoms: within the bound each preset declares
// for the model (the table's other_bound column, measured in docs/msm.md).
TEST(MsmKernels, RealMoleculesAreWithinTheDeclaredBoundForEveryModel) {
  for (const char* name : {"fasciculin2.pqr", "boxb_rna_pdb2pqr3.pqr", "npep_boxb_complex.pqr"}) {
    for (const SplitCase& sc : {SplitCase{PairModel::Debye, debye_parameters(0.1285), "debye 0.15 M"},
                                SplitCase{PairModel::Debye, debye_parameters(0.3318), "debye 1 M"},
                                SplitCase{PairModel::Distance, {}, "distance"}}) {
      SCOPED_TRACE(::testing::Message() << name << ", " << sc.label);
      const PreparedProblem problem = molecule_problem(name, 1.0, 6.0, sc.model, sc.pair);
      const std::vector<double> exact = testing::oracle_map(problem);
      for (const double accuracy : {1e-3, 1e-4}) {
        RunOptions o;
        o.method.accuracy = accuracy;
        const double bound = cpu_msm().bound_for(o.method, sc.model);
        const ApproximationError e = msm_error(problem, exact, o);
        std::printf("%-24s %-14s accuracy %g: rel RMS %.3e (bound %.1e), max |err| %.3e over %zu points\n", name,
                    sc.label, accuracy, e.relative_rms, bound, e.max_abs, e.points);
        EXPECT_TRUE(e.within(bound)) << "relative RMS " << e.relative_rms << " > bound " << bound;
        EXPECT_GT(e.points, problem.point_count() / 4);
      }
    }
  }
}

// The default preset on real molecules of both signs of net charge and a neutral-ish protein,
// every point ≥ 1.4 Å from atoms: relative RMS error within the declared bound.
TEST(MsmAccuracy, RealMoleculesAreWithinTheDeclaredBound) {
  for (const char* name : {"fasciculin2.pqr", "boxb_rna_pdb2pqr3.pqr", "npep_boxb_complex.pqr"}) {
    SCOPED_TRACE(name);
    const PreparedProblem problem = molecule_problem(name, 1.0, 6.0);
    const std::vector<double> exact = testing::oracle_map(problem);
    for (const double accuracy : {1e-3, 1e-4}) {
      RunOptions o;
      o.method.accuracy = accuracy;
      const double bound = cpu_msm().bound_for(o.method);
      const ApproximationError e = msm_error(problem, exact, o);
      std::printf("%-24s accuracy %g: %s: rel RMS %.3e (bound %.1e), max |err| %.3e kT/e over %zu points\n", name,
                  accuracy, describe(resolve_msm(o.method).params).c_str(), e.relative_rms, bound, e.max_abs, e.points);
      EXPECT_TRUE(e.within(bound)) << "relative RMS " << e.relative_rms << " > bound " << bound;
      EXPECT_GT(e.points, problem.point_count() / 4);
    }
  }
}

// Halving h at fixed a cuts the error by the method's order: the cubic interpolant reproduces
// polynomials up to degree 2 (third order: 8× per halving), the quintic up to degree 4 (fifth
// order: 32×). Measured here from a/h = 4 to 16 on two charges: 10.8× and 9.9× (cubic, an
// effective order of 3.3), 27× and 25× (quintic, 4.7); the design note's prototype saw 4 and 5.6
// on a synthetic globule. The test asks for 7× and 14×, a little below the third- and
// fourth-order floors: a second-order defect (4×) fails it.
TEST(MsmAccuracy, ErrorConvergesWithTheGridSpacing) {
  GridSpec grid = testing::make_test_grid(40, 40, 40, 0.5, {0, 0, 0});
  grid.spacing = {0.5, 0.5, 0.5};
  Atoms atoms;
  atoms.push_back(10.13, 9.71, 10.37, 1.0, 1.0);
  atoms.push_back(7.13, 12.71, 8.37, -0.6, 1.0);
  const PreparedProblem problem(atoms, grid, 1.0);
  const std::vector<double> exact = testing::oracle_map(problem);
  // The raw method (no preset table: a/h = 16 is beyond the measured settings).
  const auto error_with = [&](MsmParameters params) {
    std::vector<float> out = testing::poisoned(problem.point_count());
    const GridSumProblem p = problem.view(out.data());
    msm::cpu_compute(p, msm::make_plan(p, params), 0, nullptr, nullptr);
    return approximation_error(p, out.data(), exact.data()).relative_rms;
  };
  for (const int order : {3, 5}) {
    double previous = 0;
    for (const double h : {1.5, 0.75, 0.375}) {
      const double error = error_with({6.0, h, order});
      std::printf("order %d, a = 6 Å, h = %.3f Å: relative RMS %.3e\n", order, h, error);
      if (previous > 0)
        EXPECT_GT(previous / error, order == 3 ? 7.0 : 14.0)
            << "order " << order << ": halving h to " << h << " cut the error only " << previous / error << "x";
      previous = error;
    }
  }
}

// The MSM lattice is anchored at the map's origin, so a map whose origin is moved by an offset
// that is no multiple of h sees the molecule at another place relative to the lattice: its
// values at the points both maps share differ only by the two approximations' errors (each
// within the bound, so the difference within twice it), never by a shifted geometry.
// A sub-box whose origin is a multiple of the top level's spacing away puts every level's
// lattice in the same place: the same values up to the float rounding of the positions
// (1e-6 relative).
TEST(MsmInvariance, SubBoxEqualsTheSameRegionOfALargerMap) {
  const Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  GridRequest request;
  request.spacing = {0.5, 0.5, 0.5};
  request.padding = 5.0;
  const GridSpec large = make_grid(request, atoms);
  const PreparedProblem whole(atoms, large, coulomb_factor({}));
  const RunOptions o;  // the default preset
  const msm::Plan plan = msm::make_plan(whole.view(nullptr), resolve_msm(o.method).params);
  const double h = plan.top().spacing;
  ASSERT_LE(h, 12.0) << "the map is too small for an aligned sub-box";
  const auto big = run_poisoned(cpu_msm(), whole, o);
  const auto top_step = static_cast<std::int64_t>(std::lround(h / 0.5));
  for (const std::array<std::int64_t, 3> start :
       {std::array<std::int64_t, 3>{3, 5, 7}, std::array<std::int64_t, 3>{top_step, top_step, top_step}}) {
    GridSpec sub = large;
    sub.dims = {large.dims[0] - start[0] - 9, large.dims[1] - start[1] - 4, large.dims[2] - start[2] - 6};
    for (int d = 0; d < 3; ++d)
      sub.origin[static_cast<std::size_t>(d)] += 0.5 * static_cast<double>(start[static_cast<std::size_t>(d)]);
    const bool aligned = std::fmod(0.5 * static_cast<double>(start[0]), h) == 0 &&
                         std::fmod(0.5 * static_cast<double>(start[1]), h) == 0 &&
                         std::fmod(0.5 * static_cast<double>(start[2]), h) == 0;
    SCOPED_TRACE(aligned ? "origin moved by multiples of h" : "origin moved by non-multiples of h");
    const PreparedProblem part(atoms, sub, coulomb_factor({}));
    const auto small = run_poisoned(cpu_msm(), part, o);
    std::vector<float> same(small.size());
    for (std::int64_t k = 0; k < sub.dims[2]; ++k)
      for (std::int64_t j = 0; j < sub.dims[1]; ++j)
        for (std::int64_t i = 0; i < sub.dims[0]; ++i)
          same[static_cast<std::size_t>(i + sub.dims[0] * (j + sub.dims[1] * k))] = big[static_cast<std::size_t>(
              (i + start[0]) + large.dims[0] * ((j + start[1]) + large.dims[1] * (k + start[2])))];
    const ApproximationError d = approximation_error(part.view(nullptr), small.data(), same.data());
    std::printf("sub-box %s: relative RMS difference %.3e at %zu points\n", aligned ? "aligned" : "not aligned",
                d.relative_rms, d.points);
    if (aligned)
      EXPECT_LT(d.relative_rms, 1e-6);
    else
      EXPECT_LT(d.relative_rms, 2 * cpu_msm().bound_for(o.method));
    EXPECT_GT(d.points, small.size() / 4);
  }
}

// Translating the molecule relative to a fixed map by non-grid offsets (fractions of h along
// every axis) changes the map by the shift, not by the method: each shifted map stays within
// the bound of its own exact sum.
TEST(MsmInvariance, MoleculeAtNonGridOffsetsStaysWithinTheBound) {
  const Atoms base = testing::load_molecule("fasciculin2.pqr");
  GridRequest request;
  request.spacing = {1.0, 1.0, 1.0};
  request.padding = 6.0;
  const GridSpec grid = make_grid(request, base);
  for (const std::array<double, 3> shift :
       {std::array<double, 3>{0.37, -0.61, 0.23}, std::array<double, 3>{1.1, 0.5, -0.9}}) {
    Atoms moved = base;
    for (std::size_t a = 0; a < moved.size(); ++a) {
      moved.x[a] += shift[0];
      moved.y[a] += shift[1];
      moved.z[a] += shift[2];
    }
    const PreparedProblem problem(moved, grid, coulomb_factor({}));
    const ApproximationError e = msm_error(problem, testing::oracle_map(problem), {});
    EXPECT_TRUE(e.within(cpu_msm().error_bound)) << e.relative_rms;
  }
}

// q → −q gives exactly −φ: every operation of the method is linear and IEEE negation is exact,
// so the maps are each other's negation bit for bit.
TEST(MsmInvariance, NegatedChargesGiveTheNegatedMapExactly) {
  const Atoms atoms = testing::load_molecule("npep_boxb_complex.pqr");
  Atoms negated = atoms;
  for (double& q : negated.charge) q = -q;
  GridRequest request;
  request.spacing = {1.25, 1.25, 1.25};
  request.padding = 4.0;
  const GridSpec grid = make_grid(request, atoms);
  const auto plus = run_poisoned(cpu_msm(), PreparedProblem(atoms, grid, coulomb_factor({})));
  const auto minus = run_poisoned(cpu_msm(), PreparedProblem(negated, grid, coulomb_factor({})));
  std::size_t differ = 0;
  for (std::size_t i = 0; i < plus.size(); ++i) differ += plus[i] == -minus[i] ? 0 : 1;
  EXPECT_EQ(differ, 0u);
}

// Superposition: the map of all atoms is the sum of the maps of two halves up to the float
// rounding of the three outputs (the phases run in double): 3 half-ulp of each value's size.
TEST(MsmInvariance, SuperpositionHoldsToRounding) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  Atoms a, b;
  for (std::size_t i = 0; i < atoms.size(); ++i)
    (i % 3 ? a : b).push_back(atoms.x[i], atoms.y[i], atoms.z[i], atoms.charge[i], atoms.radius[i]);
  GridRequest request;
  request.spacing = {1.5, 1.5, 1.5};
  request.padding = 4.0;
  const GridSpec grid = make_grid(request, atoms);
  const auto all = run_poisoned(cpu_msm(), PreparedProblem(atoms, grid, 1.0));
  const auto pa = run_poisoned(cpu_msm(), PreparedProblem(a, grid, 1.0));
  const auto pb = run_poisoned(cpu_msm(), PreparedProblem(b, grid, 1.0));
  const double ulp = 1.0 / (1 << 23);
  for (std::size_t i = 0; i < all.size(); ++i)
    ASSERT_NEAR(all[i], pa[i] + pb[i], 1.5 * ulp * (std::fabs(all[i]) + std::fabs(pa[i]) + std::fabs(pb[i])) + 1e-30)
        << "point " << i;
}

// ---- the plan --------------------------------------------------------------------------------------

// The level-1 grid covers every atom's and every map point's interpolation support; each
// coarser grid covers what restriction touches; charged boxes lie inside their grids; the top
// level's charged box is small; the number of levels and the charged boxes depend on the atoms
// only (a slab of planes gets the same ones).
// The screened kernel's e^x (msm_math.h: exp_nonpositive, plain operations so that vectors can
// repeat it bit for bit) against the C library's, over the whole range a map meets: within 2 ulp
// (range reduction, a rounded degree-13 polynomial and the 2^k product each round once or
// twice; measured: at most 1 ulp), exact at 0, and −700 for anything lower.
TEST(MsmMath, ExpOfNonPositiveIsWithinTwoUlpOfTheLibrary) {
  std::mt19937 rng(testing::test_seed() + 17);
  std::uniform_real_distribution<double> small(-5.0, 0.0), wide(-700.0, 0.0);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? small(rng) : wide(rng);
    const double got = msm::exp_nonpositive(x), want = std::exp(x);
    const double ulp = std::nextafter(want, 2 * want) - want;
    worst = std::max(worst, std::abs(got - want) / ulp);
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(msm::exp_nonpositive(0.0), 1.0);
  EXPECT_EQ(msm::exp_nonpositive(-800.0), msm::exp_nonpositive(-700.0));
  EXPECT_GT(msm::exp_nonpositive(-700.0), 0.0);
}

#if ESPGRID_HAVE_HWY
// The short range's vector runs (msm_cpu_vectors.h) against the scalar loop's expression, on
// every vector unit this machine has (SSE4, AVX2, AVX-512 as Highway dispatches them): the same
// bits at every point of the run, and no other point changed, for Coulomb (both γ orders), the
// distance model and Debye (κ for 0.15 and 1 M: e^(−κr) in lanes by exp_nonpositive's steps),
// runs of every length from empty to the whole row and ending anywhere in a vector. An FMA
// contraction, or a lane past the run's end within the cutoff, would show here.
TEST(MsmShortRange, VectorRunsGiveTheScalarLoopsBitsOnEveryVectorUnit) {
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const double c[4] = {0.0123, -3.1e-4, 5.3e-6, -7.7e-8};  // a polynomial of g_a's size and signs
  constexpr std::int64_t nx = 37;
  std::vector<std::int64_t> units;
  for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) units.push_back(target);
  ASSERT_FALSE(units.empty());
  for (const double kappa : {0.0, 0.127, 0.33})
    for (const int power : {1, 2})
      for (const int order : {3, 5}) {
        if (kappa > 0 && power == 2) continue;  // the screened kernel is e^(−κr)/r
        msm::ShortRangeKernel k;
        const double a = 9.0;
        k.hx = 0.37, k.a2 = a * a, k.inv_a = 1.0 / a, k.inv_a2 = 1.0 / (a * a);
        k.softening2 = power == 1 && kappa == 0 ? 0.0 : 0.25, k.order = order, k.power = power, k.softened = c;
        k.kappa = kappa;
        const msm::SplitKernel split{power, kappa};
        for (int trial = 0; trial < 300; ++trial) {
          const double x_atom = 6.0 + 10.0 * unit(rng), dy = 9.0 * unit(rng), dz = 9.0 * unit(rng), q = unit(rng);
          const double dy2 = dy * dy, dz2 = dz * dz;
          const std::int64_t i0 = static_cast<std::int64_t>(rng() % nx);
          const std::int64_t i1 = std::min<std::int64_t>(nx - 1, i0 - 1 + static_cast<std::int64_t>(rng() % (nx + 1)));
          std::vector<double> start(nx + msm::kShortRangePadding);
          for (double& v : start) v = 1.0 + unit(rng);  // never -0.0: adding +0.0 keeps every bit
          std::vector<double> expected = start;
          for (std::int64_t i = i0; i <= i1; ++i) {  // msm_cpu.cpp's scalar loop
            const double dx = static_cast<double>(i) * k.hx - x_atom;
            const double r2 = dx * dx + dy2 + dz2;
            if (r2 >= k.a2) continue;
            expected[static_cast<std::size_t>(i)] +=
                split.coulomb()
                    ? q * (1.0 / std::sqrt(r2 + k.softening2) - msm::gamma_inside(r2 * k.inv_a2, order) * k.inv_a)
                    : q * (msm::kernel_value(r2 + k.softening2, split) - msm::softened_inside(r2 - k.a2, c));
          }
          for (const std::int64_t target : units) {
            hwy::SetSupportedTargetsForTest(target);
            std::vector<double> row = start;
            ASSERT_TRUE(msm::add_short_range_run(k, x_atom, dy2, dz2, q, i0, i1, row.data()));
            for (std::size_t i = 0; i < row.size(); ++i)
              ASSERT_EQ(std::bit_cast<std::uint64_t>(row[i]), std::bit_cast<std::uint64_t>(expected[i]))
                  << hwy::TargetName(target) << " power " << power << " kappa " << kappa << " order " << order
                  << " run " << i0 << ".." << i1 << " point " << i << ": " << row[i] << " vs " << expected[i];
          }
        }
      }
  hwy::SetSupportedTargetsForTest(0);
}

// The level-1 and coarser cutoff sums (msm_cpu_vectors.h: cutoff_row) on every vector unit equal
// Highway's scalar target, whose one lane sums each output in the original loop's order: bit for
// bit, on a lattice much wider than the charged box (atoms in a third of the map along x, so most
// outputs clip their stencil rows there) and with Debye's unscaled per-level stencils.
TEST(MsmPhases, CutoffSumsAreTheSameBitsOnEveryVectorUnit) {
  std::mt19937 rng(testing::test_seed() + 900);
  const GridSpec grid = testing::make_test_grid(41, 17, 15, 1.3, {-4.0, 3.0, 20.0});
  GridSpec third = grid;
  third.dims[0] = 13;
  const Atoms atoms = random_atoms(rng, 300, third);
  // The list first: under a mock, SupportedAndGeneratedTargets lists only the mocked target.
  const std::vector<std::int64_t> units = hwy::SupportedAndGeneratedTargets();
  ASSERT_GE(units.size(), 2u) << "a vector unit besides Highway's scalar target";
  for (const bool debye : {false, true}) {
    SCOPED_TRACE(debye ? "debye" : "coulomb");
    const PreparedProblem problem =
        debye ? PreparedProblem(atoms, grid, 1.0, PairModel::Debye, debye_parameters(1.0 / 7.86))
              : PreparedProblem(atoms, grid, 1.0);
    const GridSumProblem p = problem.view(nullptr);
    const msm::Plan plan = msm::make_plan(p, {5.0, 1.0, 5});
    ASSERT_GE(plan.level_count(), 2);
    ASSERT_LT(plan.levels[0].charged.n[0], plan.levels[0].grid.n[0] / 2) << "the case needs clipping along x";
    hwy::SetSupportedTargetsForTest(HWY_SCALAR);
    const msm::LevelGrids<double> scalar = msm::cpu_level_grids(p, plan, 2);
    for (const std::int64_t target : units) {
      hwy::SetSupportedTargetsForTest(target);
      const msm::LevelGrids<double> vectors = msm::cpu_level_grids(p, plan, 2);
      for (std::size_t l = 0; l < scalar.direct.size(); ++l)
        for (std::size_t i = 0; i < scalar.direct[l].size(); ++i)
          ASSERT_EQ(std::bit_cast<std::uint64_t>(vectors.direct[l][i]),
                    std::bit_cast<std::uint64_t>(scalar.direct[l][i]))
              << hwy::TargetName(target) << " level " << l + 1 << " point " << i << ": " << vectors.direct[l][i]
              << " vs " << scalar.direct[l][i];
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}
#endif

TEST(MsmPlan, GridsCoverAtomsAndMapAndDependOnTheAtomsAlone) {
  std::mt19937 rng(testing::test_seed() + 400);
  const GridSpec grid = testing::make_test_grid(60, 50, 40, 1.0, {-20.0, 5.0, 100.0});
  const PreparedProblem problem(random_atoms(rng, 500, grid), grid, 1.0);
  GridSumProblem p = problem.view(nullptr);
  for (const int order : {3, 5}) {
    const MsmParameters params{8.0, 2.0, order};
    const msm::Plan plan = msm::make_plan(p, params);
    ASSERT_GE(plan.level_count(), 2);
    const msm::Level& l1 = plan.levels[0];
    const int s = msm::support_width(order);
    for (std::size_t a = 0; a < p.atom_count; ++a) {
      const std::int64_t m[3] = {msm::lattice_floor(p.x[a], 2.0), msm::lattice_floor(p.y[a], 2.0),
                                 msm::lattice_floor(p.z[a], 2.0)};
      EXPECT_TRUE(l1.charged.contains(m[0] - s + 1, m[1] - s + 1, m[2] - s + 1));
      EXPECT_TRUE(l1.charged.contains(m[0] + s, m[1] + s, m[2] + s));
      EXPECT_TRUE(plan.cells.contains(m[0], m[1], m[2]));
    }
    EXPECT_TRUE(l1.grid.contains(-s + 1, -s + 1, msm::lattice_floor(100.0 * 0.9 * 0 + 0.0, 2.0) - s + 1));
    const std::int64_t far[3] = {msm::lattice_floor(59 * 1.0, 2.0), msm::lattice_floor(49 * 1.1, 2.0),
                                 msm::lattice_floor(39 * 0.9, 2.0)};
    EXPECT_TRUE(l1.grid.contains(far[0] + s, far[1] + s, far[2] + s));
    for (int l = 0; l < plan.level_count(); ++l) {
      const msm::Level& level = plan.levels[static_cast<std::size_t>(l)];
      EXPECT_DOUBLE_EQ(level.spacing, std::ldexp(2.0, l));
      for (int d = 0; d < 3; ++d) {
        EXPECT_GE(level.charged.lo[d], level.grid.lo[d]);
        EXPECT_LE(level.charged.lo[d] + level.charged.n[d], level.grid.lo[d] + level.grid.n[d]);
      }
    }
    for (int d = 0; d < 3; ++d) EXPECT_LE(plan.top().charged.n[d], msm::kTopLevelAxisPoints);
    // A slab of planes far from the first: the same levels and charged boxes.
    GridSumProblem slab = p;
    slab.z_offset = 31;
    slab.nz = 4;
    const msm::Plan sp = msm::make_plan(slab, params);
    ASSERT_EQ(sp.level_count(), plan.level_count());
    for (int l = 0; l < plan.level_count(); ++l) {
      EXPECT_EQ(sp.levels[static_cast<std::size_t>(l)].charged.lo, plan.levels[static_cast<std::size_t>(l)].charged.lo);
      EXPECT_EQ(sp.levels[static_cast<std::size_t>(l)].charged.n, plan.levels[static_cast<std::size_t>(l)].charged.n);
    }
  }
}

// Atoms spread so far that the level-1 grid would be absurd: a clear error naming the
// parameter to change, not an allocation failure or a wrong map.
TEST(MsmPlan, AGridTooLargeIsAClearError) {
  GridSpec grid = testing::make_test_grid(3, 3, 3, 1.0, {0, 0, 0});
  Atoms atoms;
  atoms.push_back(0, 0, 0, 1, 1);
  atoms.push_back(5000, 5000, 5000, -1, 1);
  const PreparedProblem problem(atoms, grid, 1.0);
  try {
    msm::make_plan(problem.view(nullptr), {4.0, 1.0, 3});
    FAIL() << "accepted a grid of ~10^11 points";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--msm-spacing"), std::string::npos) << e.what();
  }
  // Through the registry too: the run throws before writing anything.
  EXPECT_THROW(run_poisoned(cpu_msm(), problem, with_params({4.0, 1.0, 3})), UsageError);
}

/// Sets an environment variable for a scope, then restores what was there.
struct ScopedEnvironment {
  std::string name;
  std::optional<std::string> before;
  ScopedEnvironment(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* old = std::getenv(name.c_str())) before = old;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment() { before ? ::setenv(name.c_str(), before->c_str(), 1) : ::unsetenv(name.c_str()); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
};

// ESPGRID_MAX_GRID_POINTS caps MSM's lattices like the map: 83 map points 55 Å apart need a
// level-1 lattice over 2,000 points long at h = 2 Å (fuzzing found such a map taking 25 s under
// ASan, 2026-11-26). A limit of exactly the lattice's points lets the plan be made; one less is
// a clear error naming the variable.
TEST(MsmPlan, TheGridPointLimitCapsTheLattices) {
  const ScopedEnvironment no_limit("ESPGRID_MAX_GRID_POINTS", "1000000000");  // whatever the caller set
  GridSpec grid = testing::make_test_grid(83, 2, 2, 1.0, {0, 0, 0});
  grid.spacing = {55.0, 1.0, 1.0};
  Atoms atoms;
  atoms.push_back(1, 0.5, 0.5, 1, 1);
  atoms.push_back(3, 0.5, 1.5, -0.5, 1);
  const PreparedProblem problem(atoms, grid, 1.0);
  const MsmParameters params{10.0, 2.0, 5};
  const msm::Plan plan = msm::make_plan(problem.view(nullptr), params);
  const msm::GridBox& level1 = plan.levels.at(0).grid;
  const auto lattice_points = static_cast<std::uint64_t>(level1.n[0] * level1.n[1] * level1.n[2]);
  ASSERT_GT(lattice_points, 20000u);  // far more than the map's 332 points
  {
    ScopedEnvironment limit("ESPGRID_MAX_GRID_POINTS", std::to_string(lattice_points - 1));
    try {
      msm::make_plan(problem.view(nullptr), params);
      FAIL() << "a lattice of " << lattice_points << " points passed a limit one below it";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("ESPGRID_MAX_GRID_POINTS"), std::string::npos) << e.what();
    }
  }
  ScopedEnvironment limit("ESPGRID_MAX_GRID_POINTS", std::to_string(lattice_points));
  EXPECT_NO_THROW(msm::make_plan(problem.view(nullptr), params));
}

// No atoms: a zero map, every plane reported.
TEST(MsmPlan, NoAtomsGiveAZeroMap) {
  const GridSpec grid = testing::make_test_grid(7, 5, 3);
  const auto out = run_poisoned(cpu_msm(), PreparedProblem(Atoms{}, grid, 1.0));
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

// ---- parameters, presets and the registry ----------------------------------------------------------

TEST(MsmParameters, PresetsComeFromTheMeasuredTable) {
  for (const PairModel model : {PairModel::Coulomb, PairModel::Distance, PairModel::Debye})
    for (const double accuracy : {1e-3, 1e-4}) {
      SCOPED_TRACE(::testing::Message() << model_name(model) << ", accuracy " << accuracy);
      MethodParameters m;
      m.accuracy = accuracy;
      const ResolvedMsm r = resolve_msm(m, model);
      EXPECT_LE(r.error_bound, accuracy);
      bool in_table = false;
      for (const MsmTableRow& row : msm_accuracy_table())
        in_table = in_table || (row.order == r.params.order && row.cutoff == r.params.cutoff &&
                                row.spacing == r.params.spacing && row_bound(row, model) == r.error_bound);
      EXPECT_TRUE(in_table);
      // The default preset holds the registry's bound for every model.
      EXPECT_LE(resolve_msm({}, model).error_bound, cpu_msm().error_bound);
    }
  // Every table row's measured error is inside the bound it declares, per model; the other
  // models' errors are larger at the same setting, so their presets choose finer settings.
  for (const MsmTableRow& row : msm_accuracy_table()) {
    if (row.bound > 0) EXPECT_LT(row.measured_error, row.bound);
    if (row.other_bound > 0) EXPECT_LT(row.other_error, row.other_bound);
  }
  MethodParameters coarse;
  coarse.accuracy = 1e-3;
  EXPECT_GT(resolve_msm(coarse, PairModel::Debye).params.cutoff / resolve_msm(coarse, PairModel::Debye).params.spacing,
            resolve_msm(coarse).params.cutoff / resolve_msm(coarse).params.spacing);
  EXPECT_EQ(resolve_msm({}).error_bound, cpu_msm().error_bound);
  MethodParameters too_fine;
  too_fine.accuracy = 1e-9;
  EXPECT_THROW(resolve_msm(too_fine), UsageError);
  MethodParameters zero_like;
  zero_like.accuracy = 1.5;
  EXPECT_THROW(resolve_msm(zero_like), UsageError);
}

TEST(MsmParameters, ExplicitParametersAreCheckedAndGetTheTablesBound) {
  MethodParameters m;
  m.msm = {12.0, 1.5, 3};
  const ResolvedMsm r = resolve_msm(m);
  EXPECT_EQ(r.params.cutoff, 12.0);
  EXPECT_GT(r.error_bound, 0.0);
  MethodParameters partial;
  partial.msm.cutoff = 10;
  EXPECT_THROW(resolve_msm(partial), UsageError);
  MethodParameters both = m;
  both.accuracy = 1e-3;
  EXPECT_THROW(resolve_msm(both), UsageError);
  for (const MsmParameters bad : {MsmParameters{10, 2, 4}, MsmParameters{10, 0, 3}, MsmParameters{1, 2, 3},
                                  MsmParameters{100, 2, 3}, MsmParameters{NAN, 2, 3}}) {
    MethodParameters b;
    b.msm = bad;
    EXPECT_THROW(resolve_msm(b), UsageError) << describe(bad);
  }
  MethodParameters below_table;
  below_table.msm = {4.0, 1.9, 3};  // a/h = 2.1: below every measured setting
  EXPECT_THROW(resolve_msm(below_table), UsageError);
}

// The rows: approximate, never a default or the reference, deterministic, with a bound; the
// three built-in pair models (an added model is refused: tests/test_added_model.cpp).
TEST(MsmRegistry, RowsAreApproximateAlternativesForTheBuiltInModels) {
  int rows = 0;
  for (const auto& k : kernel_variants()) {
    if (!k.approximate()) {
      EXPECT_EQ(k.error_bound, 0.0) << k.name;
      continue;
    }
    ++rows;
    EXPECT_EQ(k.role, KernelRole::Alternative) << k.name;
    EXPECT_GT(k.error_bound, 0.0) << k.name;
    EXPECT_TRUE(k.deterministic()) << k.name;
    EXPECT_TRUE(k.supports(PairModel::Coulomb)) << k.name;
    EXPECT_TRUE(k.supports(PairModel::Distance)) << k.name;
    EXPECT_TRUE(k.supports(PairModel::Debye)) << k.name;
  }
  EXPECT_EQ(rows, 2);
  EXPECT_FALSE(default_kernel(Backend::Cpu).approximate());
  EXPECT_FALSE(default_kernel(Backend::Cuda).approximate());
}

// select_kernel: --backend auto never picks an approximate row; --accuracy or --msm-* do, and
// an exact kernel named with them is an error.
TEST(MsmRegistry, OnlyAnExplicitRequestSelectsTheApproximateMethod) {
  ComputeOptions plain;
  EXPECT_FALSE(select_kernel(plain, PairModel::Coulomb).kernel->approximate());
  ComputeOptions cpu;
  cpu.backend = BackendChoice::Cpu;
  cpu.run.method.accuracy = 1e-4;
  const KernelSelection s = select_kernel(cpu, PairModel::Coulomb);
  EXPECT_TRUE(s.kernel->approximate());
  EXPECT_EQ(s.kernel->backend, Backend::Cpu);
  EXPECT_LE(s.error_bound, 1e-4);
  ComputeOptions exact_named = cpu;
  exact_named.kernel = std::string(default_kernel(Backend::Cpu).name);
  EXPECT_THROW(select_kernel(exact_named, PairModel::Coulomb), UsageError);
  ComputeOptions named;
  named.kernel = std::string(cpu_msm().name);
  EXPECT_EQ(select_kernel(named, PairModel::Coulomb).error_bound, cpu_msm().error_bound);
}

// ---- the command line ------------------------------------------------------------------------------

struct CliRun {
  int code;
  std::string out;
};

CliRun espgrid(const std::string& args) {
  const std::string command = std::string("cd ") + ESPGRID_SOURCE_DIR + " && " + ESPGRID_BINARY + " " + args + " 2>&1";
  CliRun r{0, ""};
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  while (pipe && fgets(buffer, sizeof buffer, pipe)) r.out += buffer;
  const int status = pipe ? pclose(pipe) : -1;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(MsmCli, AccuracyPresetMapsSayTheMethodAndItsError) {
  const std::string out = ::testing::TempDir() + "espgrid_msm_cli.dx";
  const CliRun r = espgrid("map data/fasciculin2.pqr -o " + out + " --spacing 1.5 --accuracy 1e-3 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("cpu-msm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("multilevel summation (approximate)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected relative RMS error <= 0.001"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("short_range"), std::string::npos) << r.out;
  std::remove(out.c_str());
  const CliRun plain = espgrid("map data/fasciculin2.pqr -o " + out + " --spacing 1.5 --backend cpu");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("approximate"), std::string::npos) << "an exact request got an approximate method";
  std::remove(out.c_str());
}

TEST(MsmCli, BadRequestsFailBeforeAnythingIsWritten) {
  const std::string out = ::testing::TempDir() + "espgrid_msm_cli_bad.dx";
  std::remove(out.c_str());
  for (const std::string args :
       {"--accuracy 1e-9", "--accuracy 0", "--accuracy fast", "--kernel cpu-parallel --accuracy 1e-3",
        "--msm-cutoff 10", "--msm-cutoff 10 --msm-spacing 2 --msm-order 4",
        "--accuracy 1e-3 --msm-cutoff 10 --msm-spacing 2 --msm-order 3"}) {
    const CliRun r = espgrid("map data/fasciculin2.pqr -o " + out + " --spacing 2 " + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("espgrid: error:"), std::string::npos) << r.out;
    EXPECT_FALSE(std::ifstream(out).good()) << args << " left " << out;
  }
  // The presets are per model: an accuracy finer than Debye's table is refused for Debye, by name,
  // with Debye's finest bound (not Coulomb's).
  const CliRun r = espgrid("map data/fasciculin2.pqr -o " + out +
                           " --spacing 2 --model debye --dielectric 78.54 "
                           "--ionic-strength 0.15 --accuracy 3e-5");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("for the debye model (best 6e-05)"), std::string::npos) << r.out;
  EXPECT_FALSE(std::ifstream(out).good()) << out;
}

// A Debye map by --accuracy takes Debye's preset and says so in the summary.
TEST(MsmCli, DebyeMapsTakeTheirOwnPreset) {
  const std::string out = ::testing::TempDir() + "espgrid_msm_cli_debye.mrc";
  std::remove(out.c_str());
  const CliRun r = espgrid("map data/fasciculin2.pqr -o " + out +
                           " --spacing 2 --model debye --dielectric 78.54 "
                           "--ionic-strength 0.15 --accuracy 1e-3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("a = 12 Å, h = 2 Å, quintic"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected relative RMS error <= 0.001"), std::string::npos) << r.out;
  EXPECT_TRUE(std::ifstream(out).good());
  std::remove(out.c_str());
}

TEST(MsmCli, VerifyJudgesTheApproximateKernelByItsBound) {
  const CliRun r = espgrid("verify data/boxb_rna_pdb2pqr3.pqr --kernel cpu-msm --spacing 1.5 --accuracy 1e-4");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("pass (approximate: relative RMS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bound 1.0e-04"), std::string::npos) << r.out;
}
}  // namespace
}  // namespace espgrid
