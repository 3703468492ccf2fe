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
#include <cmath>
#include <cstring>
#include <numeric>

#include "src/compute/approximation_error.h"
#include "src/compute/msm_cpu.h"
#include "src/compute/msm_math.h"
#include "src/compute/msm_parameters.h"
#include "src/compute/msm_plan.h"
#include "src/core/errors.h"
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

std::vector<double> exact_map(const PreparedProblem& problem) {
  const DcsProblem p = problem.view(nullptr);
  std::vector<double> exact(p.point_count());
  const auto nx = static_cast<std::size_t>(p.nx), ny = static_cast<std::size_t>(p.ny);
  const auto n = static_cast<std::int64_t>(exact.size());
#pragma omp parallel for schedule(dynamic, 64)
  for (std::int64_t idx = 0; idx < n; ++idx) {
    const auto u = static_cast<std::size_t>(idx);
    exact[u] = oracle_at(p, static_cast<std::int64_t>(u % nx), static_cast<std::int64_t>((u / nx) % ny),
                         static_cast<std::int64_t>(u / (nx * ny)))
                   .potential;
  }
  return exact;
}

PreparedProblem molecule_problem(const std::string& name, double spacing, double padding) {
  const Atoms atoms = testing::load_molecule(name);
  GridRequest request;
  request.spacing = {spacing, spacing, spacing};
  request.padding = padding;
  return PreparedProblem(atoms, make_grid(request, atoms), coulomb_factor({}));
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
    const DcsProblem p = s.problem.view(nullptr);
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

// Each level's cutoff sum equals the brute-force lattice sum Σ_n K_l(|r_m − r_n|) q_l(n) over
// every point of the level, evaluated from γ directly (not from the stencil table), and the
// top level's sum equals the all-pairs sum of g_{a_L}: 1e-12 of Σ|K q| (double rounding).
TEST(MsmPhases, EachLevelSumEqualsABruteForceLatticeSum) {
  for (const int order : {3, 5}) {
    const RandomSystem s = random_system(testing::test_seed() + 200 + order, 200, {5.0, 1.25, order});
    const DcsProblem p = s.problem.view(nullptr);
    const msm::LevelGrids<double> g = msm::cpu_level_grids(p, s.plan);
    const int levels = s.plan.level_count();
    ASSERT_GE(levels, 2);
    for (int l = 0; l < levels; ++l) {
      SCOPED_TRACE(::testing::Message() << "order " << order << ", level " << l + 1 << " of " << levels);
      const msm::Level& level = s.plan.levels[static_cast<std::size_t>(l)];
      const msm::GridBox& box = level.grid;
      const double al = std::ldexp(s.plan.params.cutoff, l);
      const bool top = l == levels - 1;
      std::mt19937 rng(static_cast<unsigned>(l));
      for (int sample = 0; sample < 40; ++sample) {
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
              double k = msm::smoothed_coulomb(r2, al, order);
              if (!top) k = r2 < 4 * al * al ? k - msm::smoothed_coulomb(r2, 2 * al, order) : 0.0;
              const double qn = g.charge[static_cast<std::size_t>(l)][box.index(nx, ny, nz)];
              sum += k * qn;
              scale += std::fabs(k * qn);
            }
        EXPECT_NEAR(g.direct[static_cast<std::size_t>(l)][box.index(mx, my, mz)], sum, 1e-12 * scale + 1e-300);
      }
    }
  }
}

// Prolongation is restriction's transpose: <R q, e> = <q, P e> for random fine q and coarse e
// (double rounding: 1e-12 of the sum of magnitudes).
TEST(MsmPhases, ProlongationIsTheTransposeOfRestriction) {
  for (const int order : {3, 5}) {
    const RandomSystem s = random_system(testing::test_seed() + 300 + order, 100, {6.0, 1.0, order});
    ASSERT_GE(s.plan.level_count(), 2);
    const DcsProblem p = s.problem.view(nullptr);
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

// The default preset on real molecules of both signs of net charge and a neutral-ish protein,
// every point ≥ 1.4 Å from atoms: relative RMS error within the declared bound.
TEST(MsmAccuracy, RealMoleculesAreWithinTheDeclaredBound) {
  for (const char* name : {"fasciculin2.pqr", "boxb_rna_pdb2pqr3.pqr", "npep_boxb_complex.pqr"}) {
    SCOPED_TRACE(name);
    const PreparedProblem problem = molecule_problem(name, 1.0, 6.0);
    const std::vector<double> exact = exact_map(problem);
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

}  // namespace
}  // namespace espgrid
