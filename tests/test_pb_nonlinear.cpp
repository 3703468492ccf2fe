// The nonlinear Poisson-Boltzmann equation (APBS npbe; src/pb/pb_nonlinear.h): the Boltzmann term
// against its closed forms and its own derivatives, the Newton iteration's behaviour, the solvers
// against each other, APBS 3.4.1's own npbe map and energies (tests/data/pb/, made by
// tests/data/pb/make_references.py), the bad cases, and the command line. The CUDA cases skip
// without a GPU (ESPGRID_REQUIRE_GPU=1 makes them fail instead).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/maps/map_formats.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_nonlinear.h"
#include "src/pb/pb_solve.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/registry/kernel_registry.h"
#include "tests/child_process.h"
#include "tests/pb_test_support.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::as_double;
using testing::grid_around;
using testing::outside_mask;
using testing::relative_rms;

using pb::BoltzmannSpecies;

bool have_hypre() { return pb::hypre_available(); }

/// The CPU solver of these tests: hypre where this build has it, else the multigrid emulation.
PbSolver cpu_solver() { return have_hypre() ? PbSolver::Hypre : PbSolver::CpuMultigrid; }

PbOptions tight(PbOptions o = {}) {
  o.tolerance = 1e-10;
  o.max_iterations = 400;
  return o;
}

/// A 1:1 salt and a 2:1 one (MgCl₂: c(Mg²⁺) = c, c(Cl⁻) = 2c, I = 3c, α = 1/6 and 1/3).
BoltzmannSpecies one_to_one() { return pb::boltzmann_species(PbOptions{}); }
BoltzmannSpecies two_to_one() {
  BoltzmannSpecies ions;
  ions.count = 2;
  ions.charge[0] = 2.0;
  ions.weight[0] = 1.0 / 6.0;
  ions.charge[1] = -1.0;
  ions.weight[1] = 1.0 / 3.0;
  return ions;
}

// ---- the Boltzmann term ------------------------------------------------------------------------

TEST(PbNonlinearTerm, AOneToOneSaltIsSinhAndItsSlopeCosh) {
  const BoltzmannSpecies ions = one_to_one();
  const double c = 2.3;  // ε_w κ² λ · volume, Å: any positive value
  for (double u = -30; u <= 30; u += 0.37) {
    // exp and sinh/cosh each round within a few ulp: 1e-14 relative.
    EXPECT_NEAR(pb::boltzmann_value(ions, c, u), c * std::sinh(u), 1e-14 * c * std::cosh(u)) << u;
    EXPECT_NEAR(pb::boltzmann_slope(ions, c, u), c * std::cosh(u), 1e-14 * c * std::cosh(u)) << u;
  }
  EXPECT_EQ(pb::boltzmann_value(ions, 0.0, 5.0), 0.0);  // no ions at the node
}

TEST(PbNonlinearTerm, TheExponentIsClippedAt85AsInApbs) {
  const BoltzmannSpecies ions = one_to_one();
  const double at_limit = pb::boltzmann_value(ions, 1.0, 85.0);
  EXPECT_NEAR(at_limit, std::sinh(85.0), 1e-14 * std::sinh(85.0));
  EXPECT_EQ(pb::boltzmann_value(ions, 1.0, 400.0), at_limit);  // APBS: e^85 beyond (SINH_MAX)
  EXPECT_EQ(pb::boltzmann_value(ions, 1.0, -400.0), -at_limit);
  EXPECT_EQ(pb::boltzmann_slope(ions, 1.0, 400.0), 0.0);  // a constant has no slope
  EXPECT_TRUE(pb::boltzmann_clipped(ions, 1.0, 85.5));
  EXPECT_FALSE(pb::boltzmann_clipped(ions, 1.0, 84.5));
  EXPECT_FALSE(pb::boltzmann_clipped(ions, 0.0, 400.0));  // no ions: nothing to clip
  // APBS's ZSMALL guard: where |αzc| < 1e-20 the exponent is scaled by |αzc|·1e20, so the term
  // stays of the order of c instead of c·sinh(u).
  const double tiny = 1e-25;
  EXPECT_LT(std::fabs(pb::boltzmann_value(ions, tiny, 50.0)), 1.01 * tiny);
}

/// The slope is the derivative of the value, and the remainder the second-order part of the
/// value's primitive, for both salts, inside and across the clip: checked by central differences.
TEST(PbNonlinearTerm, SlopeAndRemainderAreTheValuesDerivativeAndPrimitive) {
  for (const BoltzmannSpecies& ions : {one_to_one(), two_to_one()}) {
    const double c = 0.8;
    for (double u = -12; u <= 12; u += 1.3) {
      const double e = 1e-5;
      const double slope = (pb::boltzmann_value(ions, c, u + e) - pb::boltzmann_value(ions, c, u - e)) / (2 * e);
      // Central difference: error ~ e²·N''' ~ 1e-10 relative, plus rounding 1e-16/e ~ 1e-11.
      EXPECT_NEAR(pb::boltzmann_slope(ions, c, u), slope, 1e-8 * std::fabs(slope)) << u;
      for (const double h : {-2.0, -0.1, 1e-3, 0.5, 3.0}) {
        // d/dh R(u, h) = N(u + h) − N(u), and R ≥ 0 (convexity).
        const double r1 = pb::boltzmann_remainder(ions, c, u, h + e), r0 = pb::boltzmann_remainder(ions, c, u, h - e);
        const double expected = pb::boltzmann_value(ions, c, u + h) - pb::boltzmann_value(ions, c, u);
        EXPECT_NEAR((r1 - r0) / (2 * e), expected, 1e-7 * (std::fabs(expected) + c)) << u << " " << h;
        EXPECT_GE(pb::boltzmann_remainder(ions, c, u, h), 0.0) << u << " " << h;
      }
    }
  }
  // Across the clip (u from 80 to 90 for the 1:1 salt): the primitive's tangent-line extension.
  const BoltzmannSpecies ions = one_to_one();
  const double e = 1e-6;
  const double r1 = pb::boltzmann_remainder(ions, 1.0, 80.0, 10.0 + e);
  const double r0 = pb::boltzmann_remainder(ions, 1.0, 80.0, 10.0 - e);
  const double expected = pb::boltzmann_value(ions, 1.0, 90.0) - pb::boltzmann_value(ions, 1.0, 80.0);
  EXPECT_NEAR((r1 - r0) / (2 * e), expected, 1e-6 * expected);
}

// ---- the solve, piece by piece (the double potential and the maps the energy needs) ------------

struct NpbeSolve {
  pb::PbCoefficients coefficients;
  pb::PbSystem system;
  std::vector<double> u, phi;
  pb::NonlinearReport report;
};

NpbeSolve solve_pieces(const Atoms& atoms, const GridSpec& g, const PbOptions& o, PbSolver solver) {
  NpbeSolve s;
  s.coefficients = pb::build_coefficients(atoms, g, o, true, 0);
  const std::vector<double> boundary = pb::mdh_boundary(atoms, g, o, default_kernel(Backend::Cpu), RunOptions{});
  s.system = pb::assemble_system(s.coefficients, boundary, o, PbFormulation::Direct, nullptr, 0);
  if (o.equation == PbEquation::Nonlinear) {
    s.report = pb::solve_nonlinear(s.system, s.u, pb::boltzmann_species(o), nullptr, solver, pb::newton_settings(o));
    EXPECT_TRUE(s.report.newton.converged);
  } else {
    const pb::SolveReport r = solver == PbSolver::Hypre
                                  ? pb::solve_hypre(s.system, s.u, o.tolerance, o.max_iterations)
                                  : pb::solve_multigrid_cpu(s.system, s.u, o.tolerance, o.max_iterations);
    EXPECT_TRUE(r.converged);
  }
  s.phi = pb::combine(s.system, s.u, nullptr);
  return s;
}

/// APBS's energies of a piece-by-piece solve through pb_energy.h, the code solve_pb reports with.
pb::PbEnergy energy_of(const Atoms& atoms, const NpbeSolve& s, const PbOptions& o, PbEnergyLevel level) {
  pb::EnergyInputs in;
  in.atoms = &atoms;
  in.grid = &s.coefficients.grid;
  in.options = &o;
  in.potential = &s.phi;
  in.charge = &s.coefficients.charge;
  in.coefficients = &s.coefficients;
  return pb::apbs_energy(in, level);
}

TEST(PbNonlinearSolve, WithoutIonsNpbeIsLpbe) {
  const Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  const GridSpec g = grid_around(atoms, 1.4, 7);
  PbOptions o = tight();
  o.ionic_strength = 0;
  const PbResult linear = solve_pb(atoms, g, o, PbRun{cpu_solver()});
  o.equation = PbEquation::Nonlinear;
  const PbResult nonlinear = solve_pb(atoms, g, o, PbRun{cpu_solver()});
  // The same linear system (no Boltzmann term), both solved to 1e-10: the same map to float rounding.
  EXPECT_LT(relative_rms(as_double(nonlinear.values), as_double(linear.values)), 1e-6);
  EXPECT_NE(nonlinear.solve.method.find("inexact Newton, 1 step,"), std::string::npos) << nonlinear.solve.method;
}

TEST(PbNonlinearSolve, WeakChargesMakeTheNonlinearMapTheLinearOne) {
  Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  const GridSpec g = grid_around(atoms, 1.4, 7);
  const auto difference = [&](double scale) {
    Atoms scaled = atoms;
    for (double& q : scaled.charge) q *= scale;
    PbOptions o = tight();
    o.ionic_strength = 0.5;
    const PbResult linear = solve_pb(scaled, g, o, PbRun{cpu_solver()});
    o.equation = PbEquation::Nonlinear;
    const PbResult nonlinear = solve_pb(scaled, g, o, PbRun{cpu_solver()});
    return relative_rms(as_double(nonlinear.values), as_double(linear.values));
  };
  // sinh u − u ≈ u³/6: at a thousandth of the charges |u| ≲ 0.01 and the maps differ by ≲ 1e-5
  // relative (measured 2e-6); at full charge the RNA's potential is far from linear (measured 2%).
  EXPECT_LT(difference(1e-3), 1e-5);
  EXPECT_GT(difference(1.0), 5e-3);
}

TEST(PbNonlinearSolve, NewtonsResidualFallsToTheToleranceQuadraticallyAtTheEnd) {
  const Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  const GridSpec g = grid_around(atoms, 1.2, 8);
  PbOptions o = tight();
  o.ionic_strength = 0.5;
  o.equation = PbEquation::Nonlinear;
  for (const PbSolver solver : {PbSolver::Hypre, PbSolver::CpuMultigrid}) {
    if (solver == PbSolver::Hypre && !have_hypre()) continue;
    SCOPED_TRACE(pb_solver_name(solver));
    const NpbeSolve s = solve_pieces(atoms, g, o, solver);
    const pb::NewtonOutcome& n = s.report.newton;
    for (std::size_t k = 0; k < n.residuals.size(); ++k)
      std::printf("step %zu: relative residual %.2e, step length %g\n", k, n.residuals[k],
                  k > 0 ? n.steps[k - 1] : 0.0);
    ASSERT_TRUE(n.converged);
    ASSERT_GE(n.residuals.size(), 3u);
    EXPECT_GE(n.iterations, 2) << "a charged RNA at 0.5 M is not linear";
    EXPECT_LE(n.iterations, 12) << "Newton should not need more steps than this";
    for (std::size_t k = 1; k < n.residuals.size(); ++k) EXPECT_LT(n.residuals[k], n.residuals[k - 1]) << "step " << k;
    EXPECT_LE(n.residuals.back(), o.tolerance);
    // Recomputed from the solution, independently of the iteration's bookkeeping.
    EXPECT_LE(pb::nonlinear_residual(s.system, s.u, pb::boltzmann_species(o)), 1.0001 * o.tolerance);
    EXPECT_EQ(n.steps.back(), 1.0) << "the last steps are full Newton steps";
    // Superlinear at the end (measured 3e-5 here): a linearly converging iteration (a wrong
    // Jacobian, a frozen forcing term) reduces by a constant factor, ≥ 0.1 with η ≤ 0.1.
    EXPECT_LT(n.residuals.back() / n.residuals[n.residuals.size() - 2], 1e-2);
  }
}

TEST(PbNonlinearSolve, HypreAndTheMultigridEmulationAgree) {
  if (!have_hypre()) GTEST_SKIP() << "this build has no hypre";
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(atoms, 1.2, 7);
  PbOptions o = tight();
  o.equation = PbEquation::Nonlinear;
  for (const PbFormulation f : {PbFormulation::Direct, PbFormulation::Split}) {
    o.formulation = f;
    const PbResult a = solve_pb(atoms, g, o, PbRun{PbSolver::Hypre});
    const PbResult b = solve_pb(atoms, g, o, PbRun{PbSolver::CpuMultigrid});
    // Both at ‖F‖/‖b‖ ≤ 1e-10; the Jacobian's condition number (~10⁴, as the linear operator's)
    // turns that into ≲ 1e-6 in the solution (test_pb.cpp's linear case measured the same bound).
    EXPECT_LT(relative_rms(as_double(b.values), as_double(a.values)), 1e-6) << formulation_name(f);
  }
}

/// The split formulation solves the same equation with the Coulomb part summed: in the linear
/// regime it is the linear split map, and at full charge it differs from direct npbe by what the
/// two formulations' discretizations differ by in lpbe.
TEST(PbNonlinearSolve, TheSplitFormulationSolvesTheSameEquation) {
  Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  const GridSpec g = grid_around(atoms, 1.2, 7);
  PbOptions o = tight();
  o.ionic_strength = 0.5;
  const auto map = [&](PbFormulation f, PbEquation e) {
    PbOptions x = o;
    x.formulation = f;
    x.equation = e;
    return as_double(solve_pb(atoms, g, x, PbRun{cpu_solver()}).values);
  };
  const std::vector<char> outside = outside_mask(atoms, g);
  const auto ls = map(PbFormulation::Split, PbEquation::Linearized),
             ld = map(PbFormulation::Direct, PbEquation::Linearized);
  const auto ns = map(PbFormulation::Split, PbEquation::Nonlinear),
             nd = map(PbFormulation::Direct, PbEquation::Nonlinear);
  const double linear_gap = relative_rms(ls, ld, outside), nonlinear_gap = relative_rms(ns, nd, outside);
  const double nonlinearity = relative_rms(nd, ld, outside);
  // The formulations differ near the surface by their charge discretization (~1e-2 at 1.2 Å,
  // docs/pb.md); the nonlinear term changes that gap only in proportion to its own size.
  EXPECT_LT(nonlinear_gap, linear_gap * 1.5 + 1e-4) << linear_gap << " " << nonlinear_gap;
  EXPECT_GT(nonlinearity, 2 * nonlinear_gap) << "the test would not see a wrong Boltzmann term";
  // And the npbe − lpbe change is the same in both formulations.
  std::vector<double> change_split(ns.size()), change_direct(ns.size());
  for (std::size_t i = 0; i < ns.size(); ++i) {
    change_split[i] = ns[i] - ls[i];
    change_direct[i] = nd[i] - ld[i];
  }
  EXPECT_LT(relative_rms(change_split, change_direct, outside), 0.1);
}

// ---- APBS 3.4.1 itself ---------------------------------------------------------------------------

/// One line of tests/data/pb/apbs_energies.txt.
struct ApbsRun {
  std::string name, structure, equation, surface;
  GridSpec grid;
  double ionic_strength = 0, total = NAN, qf = NAN, qm = NAN, diel = NAN;
};

std::vector<ApbsRun> apbs_runs() {
  std::ifstream in(std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pb/apbs_energies.txt");
  std::vector<ApbsRun> runs;
  std::string line;
  const auto triple = [](const std::string& text, auto& out) {
    std::stringstream ss(text);
    std::string part;
    for (int d = 0; d < 3 && std::getline(ss, part, ','); ++d)
      out[d] = static_cast<std::decay_t<decltype(out[d])>>(std::stod(part));
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ss(line);
    ApbsRun r;
    std::string dims, spacing, origin, total, qf, qm, diel;
    ss >> r.name >> r.structure >> dims >> spacing >> origin >> r.equation >> r.surface >> r.ionic_strength >> total >>
        qf >> qm >> diel;
    triple(dims, r.grid.dims);
    triple(spacing, r.grid.spacing);
    triple(origin, r.grid.origin);
    r.total = std::stod(total);
    r.qf = std::stod(qf);
    r.qm = std::stod(qm);
    r.diel = std::stod(diel);
    runs.push_back(r);
  }
  EXPECT_GE(runs.size(), 5u) << "tests/data/pb/apbs_energies.txt";
  return runs;
}

PbOptions options_of(const ApbsRun& r) {
  PbOptions o = tight();
  o.surface = parse_surface(r.surface);
  o.ionic_strength = r.ionic_strength;
  o.equation = parse_equation(r.equation);
  return o;
}

Atoms structure_of(const ApbsRun& r) {
  return read_structure(std::string(ESPGRID_SOURCE_DIR) + "/" + r.structure, StructureFormat::Pqr).atoms;
}

/// APBS's npbe map of the boxB RNA at 0.5 M (etol 1e-10), where the nonlinearity moves the map by ~2%.
void expect_npbe_map_matches_apbs(PbSolver solver) {
  const PotentialMap apbs = read_dx(std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pb/boxb_rna_smol_I0.5_npbe.dx");
  const Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  PbOptions o = tight();
  o.ionic_strength = 0.5;
  o.equation = PbEquation::Nonlinear;
  const PbResult r = solve_pb(atoms, apbs.grid, o, PbRun{solver});
  // The linear references' bound (test_pb.cpp): APBS's 7 printed digits, float output, the boundary
  // sums' float rounding, and the constants' 2e-5 (docs/pb.md) scaled by the potential's share near
  // the boundary: 1e-5.
  EXPECT_LT(relative_rms(as_double(r.values), as_double(apbs.values), outside_mask(atoms, apbs.grid)), 1e-5);
  EXPECT_LT(relative_rms(as_double(r.values), as_double(apbs.values)), 1e-5) << "every node";
}

TEST(PbNonlinearApbs, NpbeMapMatchesApbsWithHypre) {
  if (!have_hypre()) GTEST_SKIP() << "this build has no hypre";
  expect_npbe_map_matches_apbs(PbSolver::Hypre);
}

TEST(PbNonlinearApbs, NpbeMapMatchesApbsWithTheMultigridEmulation) {
  expect_npbe_map_matches_apbs(PbSolver::CpuMultigrid);
}

TEST(PbNonlinearApbsGpu, NpbeMapMatchesApbsWithTheCudaMultigrid) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  expect_npbe_map_matches_apbs(PbSolver::CudaMultigrid);
}

TEST(PbNonlinearApbs, EnergiesMatchApbs) {
  double npbe_minus_lpbe_apbs = 0, npbe_minus_lpbe_ours = 0;
  for (const ApbsRun& run : apbs_runs()) {
    SCOPED_TRACE(run.name);
    const PbOptions o = options_of(run);
    const Atoms atoms = structure_of(run);
    const NpbeSolve s = solve_pieces(atoms, run.grid, o, cpu_solver());
    // Every term of this solve's double potential (Components: the mobile and dielectric terms
    // for lpbe too, which APBS's total leaves out).
    const pb::PbEnergy e = energy_of(atoms, s, o, PbEnergyLevel::Components);
    const double qf = e.terms.fixed_charge, total = e.total;
    // qf is Σqφ over the spread charges: APBS's potential to ~1e-6 here (1e-10 on both sides, the
    // constants' 2e-5 scaled down by the charges' share of the boundary) — 2e-5 holds it.
    EXPECT_NEAR(qf, run.qf, 2e-5 * std::fabs(run.qf));
    if (std::isfinite(run.qm)) {  // APBS prints npbe's terms with ions
      std::printf("%-30s diel %+.1e, qm %+.1e relative\n", run.name.c_str(), e.terms.dielectric / run.diel - 1,
                  e.terms.mobile_charge / run.qm - 1);
      EXPECT_NEAR(e.terms.dielectric, run.diel, 2e-5 * std::fabs(run.diel));
      // qm sums e^(∓φ) − 1 over the ions' nodes: a relative error of the potential there of ~1e-5
      // becomes ≲ 1e-4 of qm (its terms are ~φ²/2 at small φ, the relative error doubles).
      EXPECT_NEAR(e.terms.mobile_charge, run.qm, 1e-4 * std::fabs(run.qm));
      EXPECT_DOUBLE_EQ(total, qf - e.terms.dielectric - e.terms.mobile_charge);
    } else {
      if (!pb_has_ions(o)) EXPECT_EQ(e.terms.mobile_charge, 0.0);
      EXPECT_DOUBLE_EQ(total, 0.5 * qf);  // lpbe, and npbe without ions: ½qf, as APBS
    }
    // The target is 0.1%; the same discretization agrees to the solvers' tolerance.
    EXPECT_NEAR(total, run.total, 2e-5 * std::fabs(run.total));
    // What `espgrid map` and `espgrid apbs` print: solve_pb's energy of its own solve.
    PbOptions asking = o;
    asking.energy.level = PbEnergyLevel::Total;
    PbRun program;
    program.solver = cpu_solver();
    const PbResult printed = solve_pb(atoms, run.grid, asking, program);
    EXPECT_NEAR(printed.energy.total, run.total, 2e-5 * std::fabs(run.total)) << "solve_pb's energy";
    std::printf("%-30s total %.6f kT (APBS %.6f, %+.1e relative), qf %+.1e relative\n", run.name.c_str(), total,
                run.total, total / run.total - 1, qf / run.qf - 1);
    if (run.name == "boxb_rna_smol_I0.5_npbe") {
      npbe_minus_lpbe_apbs += run.total;
      npbe_minus_lpbe_ours += total;
    } else if (run.name == "boxb_rna_smol_I0.5_lpbe") {
      npbe_minus_lpbe_apbs -= run.total;
      npbe_minus_lpbe_ours -= total;
    }
  }
  // What the nonlinearity does to the energy (−2.9 kT of ~980): each total is good to ~2e-5 of
  // 980 kT ≈ 0.02 kT, so the difference to ~1%.
  std::printf("npbe - lpbe (boxB RNA, 0.5 M): %.5f kT (APBS %.5f)\n", npbe_minus_lpbe_ours, npbe_minus_lpbe_apbs);
  EXPECT_NEAR(npbe_minus_lpbe_ours, npbe_minus_lpbe_apbs, 0.01 * std::fabs(npbe_minus_lpbe_apbs))
      << "APBS " << npbe_minus_lpbe_apbs << " kT";
  EXPECT_LT(npbe_minus_lpbe_apbs, -1.0) << "the reference should show the nonlinearity";
}

// ---- what can go wrong ---------------------------------------------------------------------------

/// Charges at the structure reader's limit (every atom −999 e: −618,000 e on the RNA) at low salt:
/// the boundary values reach −3000 kT/e, the Boltzmann term e^3000 without APBS's clip. The solve
/// converges (the clip keeps every term finite) and the map has no NaN; the energy, whose ion term
/// APBS refuses beyond the clip, is a clear error (solve_pb's, asked for with the map).
TEST(PbNonlinearErrors, HugeChargesConvergeWithoutNaNAndTheirEnergyIsRefused) {
  Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  for (double& q : atoms.charge) q = -999;
  const GridSpec g = grid_around(atoms, 1.4, 7);
  PbOptions o;
  o.ionic_strength = 0.001;
  o.equation = PbEquation::Nonlinear;
  for (const PbSolver solver : {PbSolver::Hypre, PbSolver::CpuMultigrid, PbSolver::CudaMultigrid}) {
    if (solver == PbSolver::Hypre && !have_hypre()) continue;
    if (solver == PbSolver::CudaMultigrid && !cuda_available() && !testing::gpu_required()) continue;
    SCOPED_TRACE(pb_solver_name(solver));
    const PbResult r = solve_pb(atoms, g, o, PbRun{solver});
    for (const float v : r.values) ASSERT_TRUE(std::isfinite(v));
    EXPECT_LE(r.solve.relative_residual, o.tolerance);
    EXPECT_LT(*std::min_element(r.values.begin(), r.values.end()), -1000.0f) << "the case is as extreme as meant";
  }
  o.energy.level = PbEnergyLevel::Total;
  try {
    (void)solve_pb(atoms, g, o, PbRun{PbSolver::CpuMultigrid});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cap of 85"), std::string::npos) << e.what();
  }
}

TEST(PbNonlinearErrors, NotConvergingIsAnError) {
  const Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  const GridSpec g = grid_around(atoms, 1.4, 7);
  PbOptions o;
  o.ionic_strength = 0.5;
  o.equation = PbEquation::Nonlinear;
  o.tolerance = 1e-12;
  o.max_iterations = 2;  // two Newton steps of at most two linear iterations each
  try {
    solve_pb(atoms, g, o, PbRun{PbSolver::CpuMultigrid});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--pb-max-iterations"), std::string::npos) << e.what();
  }
}

// ---- the GPU -------------------------------------------------------------------------------------

/// The device's Newton iteration (kernels/pb/pb_nonlinear.cu) against its CPU emulation: the
/// device-resident path (smol: maps, assembly, hierarchy and iteration on the device), with the
/// split formulation's offset, and the hybrid one (the sampled surface built on the host, its
/// system uploaded once and iterated on the device).
TEST(PbNonlinearGpu, TheDevicesNewtonEqualsItsCpuEmulation) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms atoms = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  const GridSpec g = grid_around(atoms, 0.9, 8);
  for (const auto& [formulation, sampling] :
       {std::pair{PbFormulation::Direct, 0}, std::pair{PbFormulation::Split, 0}, std::pair{PbFormulation::Direct, 4}}) {
    SCOPED_TRACE(formulation_name(formulation) + " sampling " + std::to_string(sampling));
    PbOptions o = tight();
    o.ionic_strength = 0.5;
    o.equation = PbEquation::Nonlinear;
    o.formulation = formulation;
    o.sampling = sampling;
    PbRun gpu, cpu;
    gpu.solver = PbSolver::CudaMultigrid;
    cpu.solver = PbSolver::CpuMultigrid;
    cpu.direct_sum = &default_kernel(Backend::Cuda);  // the same φ_Coulomb and boundary on both sides
    const PbResult rg = solve_pb(atoms, g, o, gpu), rc = solve_pb(atoms, g, o, cpu);
    // The same arithmetic per node; reduction order and FMA contraction differ, so the iterates
    // agree to rounding: the same Newton steps, the linear counts within one per step.
    EXPECT_LT(relative_rms(as_double(rg.values), as_double(rc.values)), 1e-6);
    const auto steps = [](const std::string& method) {
      const auto at = method.find("inexact Newton, ");
      return at == std::string::npos ? -1 : std::stoi(method.substr(at + 16));
    };
    ASSERT_GT(steps(rg.solve.method), 0) << rg.solve.method;
    // A rounding-level difference can move one line-search decision or the last step across the
    // tolerance: one Newton step, and a few linear iterations per step, either way.
    EXPECT_NEAR(steps(rg.solve.method), steps(rc.solve.method), 1) << rg.solve.method << "\n" << rc.solve.method;
    EXPECT_NEAR(rg.solve.iterations, rc.solve.iterations, 2 * steps(rc.solve.method) + 2);
    EXPECT_LT(rg.solve.relative_residual, 1e-9) << "recomputed on the device";
  }
}

// ---- the command line ---------------------------------------------------------------------------

testing::Outcome run_cli(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  testing::Child child(args, dir, {});
  return child.wait(600);
}

TEST(PbNonlinearCli, NpbeWritesANonlinearMapThatSaysSo) {
  if (!have_hypre() && !cuda_available()) GTEST_SKIP() << "neither hypre nor a GPU: --model pb has no solver here";
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "npbe_cli";
  std::filesystem::create_directories(dir);
  const std::string dx = (dir / "rna.dx").string();
  std::vector<std::string> args = {"map",
                                   "data/boxb_rna_pdb2pqr3.pqr",
                                   "-o",
                                   dx,
                                   "--model",
                                   "pb",
                                   "--spacing",
                                   "1.5",
                                   "--padding",
                                   "8",
                                   "--pb-equation",
                                   "npbe",
                                   "--ionic-strength",
                                   "0.5"};
  if (have_hypre()) args.insert(args.end(), {"--backend", "cpu"});
  const testing::Outcome r = run_cli(args, dir);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_NE(r.out.find("nonlinear PB, pdie 2"), std::string::npos) << r;
  EXPECT_NE(r.out.find("inexact Newton, "), std::string::npos) << r;
  std::ifstream in(dx);
  std::string header, line;
  for (int i = 0; i < 4 && std::getline(in, line); ++i) header += line + "\n";
  EXPECT_NE(header.find("(nonlinear Poisson-Boltzmann)"), std::string::npos) << header;
  EXPECT_NE(header.find("model pb: nonlinear PB"), std::string::npos) << header;
}

TEST(PbNonlinearCli, BadEquationsAreNamed) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "npbe_cli_errors";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "x.dx").string();
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--model", "pb", "--pb-equation", "smpbe"}, "--pb-equation must be lpbe or npbe"},
      {{"--model", "debye", "--pb-equation", "npbe"}, "--pb-equation applies to --model pb"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"map", "data/fasciculin2.pqr", "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::Outcome r = run_cli(args, dir);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_NE(r.err.find(message), std::string::npos) << r;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

}  // namespace
}  // namespace espgrid
