// The PB physics of APBS's own inputs (issue 32): boundary conditions (zero, sdh, focus), charge
// methods (spl0, spl4), the spl4 surface, ion species, energies (total, comps, solvation,
// focusing's outside part) and APBS's write maps. Against APBS 3.4.1's own numbers (carried in
// tests/data/pb/energies.txt, comps_per_atom.txt and focus_fine.dx, made by
// tests/data/pb/make_references.py), against analytic answers, and piece by piece. The CPU
// emulation of the GPU multigrid solves (no hypre needed); the GPU cases skip without one
// (ESPGRID_REQUIRE_GPU=1 makes them fail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/units.h"
#include "src/maps/map_formats.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_maps.h"
#include "src/pb/pb_solve.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_surface/pb_charges.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/registry/kernel_registry.h"
#include "tests/child_process.h"
#include "tests/pb_test_support.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::outside_mask;

// APBS's constants are CGS 1986 ones in its source term (zmagic) and SI 1986 ones in its kJ/mol
// conversion; espgrid's are CODATA 2018: APBS's energies are (1 + 6.27e-6)(1 + 5.92e-6) espgrid's
// for the same discretization (the source term's ratio scales φ, the conversion's the energy).
constexpr double kApbsEnergyScale = (1 + 6.2696e-6) * (1 + 5.9169e-6);

std::string reference(const std::string& name) { return std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pb/" + name; }

/// energies.txt: name → {total, fixed, mobile, dielectric} kJ/mol (nan where APBS printed none).
std::map<std::string, std::vector<double>> apbs_energies() {
  std::ifstream in(reference("energies.txt"));
  std::map<std::string, std::vector<double>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name, word;
    words >> name;
    while (words >> word) out[name].push_back(word == "nan" ? std::nan("") : std::stod(word));
  }
  return out;
}

/// The grid energies.txt was made on (make_references.py ENERGY_GRID): 33 × 33 × 41 nodes around
/// fasciculin-2 at 1.5, 1.6, 1.4 Å, centred as apbs_physics.grid_around centres it.
GridSpec energy_grid(const Atoms& atoms) {
  const BoundingBox box = bounding_box(atoms);
  GridSpec g;
  g.dims = {33, 33, 41};
  g.spacing = {1.5, 1.6, 1.4};
  for (int d = 0; d < 3; ++d) {
    const double centre = 0.5 * (box.lo[d] + box.hi[d]);
    g.origin[d] = std::round((centre - g.spacing[d] * static_cast<double>(g.dims[d] - 1) / 2) * 1000) / 1000;
  }
  return g;
}

/// The options of each case of energies.txt (make_references.py ENERGY_CASES), over APBS's
/// customary ones (pdie 2, sdie 78.54, smol, spl2, mdh, ±1 at 0.15 M of radius 2 Å).
PbOptions energy_case(const std::string& name) {
  PbOptions o;
  o.tolerance = 1e-10;  // APBS made the references with etol 1e-10
  o.max_iterations = 400;
  o.energy.level = PbEnergyLevel::Total;
  o.ions = {PbIon{1, 0.15, 2.0}, PbIon{-1, 0.15, 2.0}};
  const std::vector<PbIon> two_one = {PbIon{2, 0.05, 2.0}, PbIon{-1, 0.1, 1.5}};
  if (name == "comps") o.energy.level = PbEnergyLevel::Components;
  if (name == "zero") o.boundary = PbBoundary::Zero;
  if (name == "sdh" || name == "sdh_no_ions") o.boundary = PbBoundary::Sdh;
  if (name == "sdh_no_ions") o.ions.clear(), o.ionic_strength = 0;
  if (name == "spl0" || name == "mol_spl0") o.charges = PbChargeMethod::Spl0;
  if (name == "spl4" || name == "spl4_spl4_2_1") o.charges = PbChargeMethod::Spl4;
  if (name == "srfm_spl4" || name == "spl4_spl4_2_1") o.surface = PbSurface::Spline4;
  if (name == "srfm_spl2") o.surface = PbSurface::Spline;
  if (name == "mol_spl0") o.surface = PbSurface::Mol;
  if (name == "ions_2_1" || name == "spl4_spl4_2_1") o.ions = two_one;
  if (name == "ions_three") o.ions = {PbIon{1, 0.1, 1.5}, PbIon{-1, 0.15, 2.5}, PbIon{2, 0.025, 2.0}};
  return o;
}

PbRun cpu_run() {
  PbRun run;
  run.solver = PbSolver::CpuMultigrid;
  return run;
}

double kj(const pb::PbEnergy& e, double kt) { return e.kj_per_mol(kt); }

// ---- charges ---------------------------------------------------------------------------------

TEST(PbCharges, EveryMethodConservesTheChargeOfAtomsInside) {
  std::mt19937 rng(testing::test_seed());
  std::uniform_real_distribution<double> u(3.0, 9.0), q(-1, 1);
  GridSpec g;
  g.dims = {13, 14, 15};
  g.spacing = {0.9, 1.0, 1.1};
  g.origin = {-1.0, 0.5, 2.0};
  Atoms atoms;
  for (int a = 0; a < 20; ++a) atoms.push_back(u(rng) - 1, u(rng) + 0.5, u(rng) + 2, q(rng), 1.5);
  for (const PbChargeMethod m : {PbChargeMethod::Spl0, PbChargeMethod::Spl2, PbChargeMethod::Spl4}) {
    const std::vector<double> c = pb::spread_charges(atoms, g, m);
    // Each method's weights sum to 1 (a partition of unity): rounding only, 1e-12 of the charges.
    EXPECT_NEAR(std::accumulate(c.begin(), c.end(), 0.0), atoms.total_charge(), 1e-12) << charge_method_name(m);
  }
  double sum = 0;
  for (int k = -5; k <= 5; ++k) sum += pb::bspline4(2.5 + k - 0.37);
  EXPECT_NEAR(sum, 1.0, 1e-14);
}

TEST(PbCharges, AtomsOffTheGridSpreadAsApbsDoes) {
  GridSpec g;
  g.dims = {9, 9, 9};
  g.spacing = {1, 1, 1};
  g.origin = {0, 0, 0};
  // Half a spacing outside the low x face: spl0 drops it, spl2 and spl4 keep what lands on nodes.
  Atoms off;
  off.push_back(-0.5, 4.2, 4.3, 1.0, 1.5);
  const std::vector<double> spl0 = pb::spread_charges(off, g, PbChargeMethod::Spl0);
  EXPECT_EQ(std::accumulate(spl0.begin(), spl0.end(), 0.0), 0.0);
  const std::vector<double> spl2 = pb::spread_charges(off, g, PbChargeMethod::Spl2);
  // spl2 weights at x nodes 0 and 1 for f = −0.5: bspline2(2.0) + bspline2(3.0) = 0.5 + 0.
  EXPECT_NEAR(std::accumulate(spl2.begin(), spl2.end(), 0.0), 0.5, 1e-14);
  // 2.5 spacings out: spl4 too drops it (its margin is 2 spacings).
  Atoms far;
  far.push_back(-2.5, 4.2, 4.3, 1.0, 1.5);
  const std::vector<double> spl4 = pb::spread_charges(far, g, PbChargeMethod::Spl4);
  EXPECT_EQ(std::accumulate(spl4.begin(), spl4.end(), 0.0), 0.0);
  EXPECT_FALSE(pb::charge_on_grid(-2.5, 4.2, 4.3, g, PbChargeMethod::Spl4));
  EXPECT_TRUE(pb::charge_on_grid(-1.5, 4.2, 4.3, g, PbChargeMethod::Spl4));
}

// ---- ions ------------------------------------------------------------------------------------

TEST(PbIons, IonicStrengthRadiusAndKappaFollowApbs) {
  PbOptions o;
  o.ions = {PbIon{2, 0.05, 2.0}, PbIon{-1, 0.1, 1.5}};
  EXPECT_NEAR(pb_ionic_strength(o), 0.5 * (0.05 * 4 + 0.1), 1e-15);  // ½ Σ c z²
  EXPECT_EQ(pb_ion_radius(o), 2.0);                                  // the largest
  PbOptions salt;                                                    // the 1:1 salt of the same strength
  salt.ionic_strength = 0.15;
  EXPECT_NEAR(pb_kappa(o), pb_kappa(salt), 1e-15);
  EXPECT_EQ(ion_species(salt).size(), 2u);
  salt.ionic_strength = 0;
  EXPECT_TRUE(ion_species(salt).empty());
  EXPECT_FALSE(pb_has_ions(salt));
  o.ions.push_back(PbIon{1, 0.01, 2.0});  // no longer neutral
  try {
    validate(o);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not electroneutral"), std::string::npos) << e.what();
  }
}

// ---- boundary conditions -----------------------------------------------------------------------

TEST(PbBoundary, SdhOfOneAtomIsItsMdh) {
  // One atom: the sdh sphere is the atom (centre, radius, charge; no dipole), so the two agree to
  // the direct-sum kernel's float32 rounding (1e-6).
  Atoms one;
  one.push_back(1.3, -0.7, 2.2, -1.0, 2.5);
  GridSpec g;
  g.dims = {11, 12, 13};
  g.spacing = {1.1, 1.0, 0.9};
  g.origin = {-4.5, -6.5, -3.2};
  PbOptions o;
  RunOptions run;
  const std::vector<double> sdh = pb::sdh_boundary(one, g, o);
  const std::vector<double> mdh = pb::mdh_boundary(one, g, o, default_kernel(Backend::Cpu), run);
  double worst = 0;
  for (const std::size_t i : pb::boundary_nodes(g))
    worst = std::max(worst, std::fabs(sdh[i] - mdh[i]) / std::fabs(mdh[i]));
  EXPECT_LT(worst, 2e-6);
}

TEST(PbBoundary, FocusInterpolatesALinearParentExactly) {
  GridSpec parent;
  parent.dims = {9, 10, 11};
  parent.spacing = {2.0, 2.1, 1.9};
  parent.origin = {-8, -9, -10};
  std::vector<double> phi(parent.point_count());
  for (std::int64_t k = 0; k < parent.dims[2]; ++k)
    for (std::int64_t j = 0; j < parent.dims[1]; ++j)
      for (std::int64_t i = 0; i < parent.dims[0]; ++i)
        phi[static_cast<std::size_t>(i + parent.dims[0] * (j + parent.dims[1] * k))] =
            0.3 * parent.position(0, i) - 0.7 * parent.position(1, j) + 0.2 * parent.position(2, k) + 1.5;
  GridSpec fine;
  fine.dims = {7, 8, 9};
  fine.spacing = {0.7, 0.8, 0.9};
  fine.origin = {-3.3, -4.1, -2.0};
  const std::vector<double> b = pb::focus_boundary(fine, parent, phi);
  for (const std::size_t idx : pb::boundary_nodes(fine)) {
    const auto i = static_cast<std::int64_t>(idx % 7), j = static_cast<std::int64_t>((idx / 7) % 8),
               k = static_cast<std::int64_t>(idx / 56);
    const double exact = 0.3 * fine.position(0, i) - 0.7 * fine.position(1, j) + 0.2 * fine.position(2, k) + 1.5;
    EXPECT_NEAR(b[idx], exact, 1e-12);  // trilinear interpolation is exact on a linear field
  }
  fine.origin[0] = -9;  // sticks out of the parent
  EXPECT_THROW(pb::focus_boundary(fine, parent, phi), UsageError);
}

// ---- energies against APBS -----------------------------------------------------------------------

/// The same discretization: the energies agree to the solvers' tolerance (both at 1e-10) once
/// APBS's constants are taken into account; 2e-7 leaves room for the boundary values' own constant
/// (−5.8e-6 relative on a term a thousandth of the total) and float32 direct sums (1e-7).
TEST(PbEnergy, EveryOptionsTotalEqualsApbs) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = energy_grid(atoms);
  const auto apbs = apbs_energies();
  ASSERT_GE(apbs.size(), 13u) << "tests/data/pb/energies.txt";
  for (const auto& [name, values] : apbs) {
    if (name == "focus") continue;
    const PbResult r = solve_pb(atoms, g, energy_case(name), cpu_run());
    const double ours = kj(r.energy, r.energy.total) * kApbsEnergyScale;
    std::printf("%-14s APBS %.10g kJ/mol, espgrid %.10g (%.10g with APBS's constants): %+.1e\n", name.c_str(),
                values[0], kj(r.energy, r.energy.total), ours, ours / values[0] - 1);
    EXPECT_NEAR(ours / values[0] - 1, 0, 2e-7) << name << ": espgrid " << ours << " APBS " << values[0];
  }
}

TEST(PbEnergy, ComponentsAndPerAtomEnergiesEqualApbs) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const auto apbs = apbs_energies();
  ASSERT_TRUE(apbs.count("comps"));
  const std::vector<double>& v = apbs.at("comps");
  const PbResult r = solve_pb(atoms, energy_grid(atoms), energy_case("comps"), cpu_run());
  const pb::PbEnergy& e = r.energy;
  // APBS prints its terms with %g (6 digits): 1e-5 relative.
  EXPECT_NEAR(kj(e, 0.5 * e.terms.fixed_charge) * kApbsEnergyScale / v[1] - 1, 0, 1e-5);
  EXPECT_NEAR(kj(e, e.terms.mobile_charge) * kApbsEnergyScale / v[2] - 1, 0, 1e-5);
  EXPECT_NEAR(kj(e, e.terms.dielectric) * kApbsEnergyScale / v[3] - 1, 0, 1e-5);
  std::ifstream in(reference("comps_per_atom.txt"));
  std::vector<double> per_atom;
  for (double x; in >> x;) per_atom.push_back(x);
  ASSERT_EQ(per_atom.size(), atoms.size());
  ASSERT_EQ(e.per_atom.size(), atoms.size());
  double worst = 0, largest = 0;
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    worst = std::max(worst, std::fabs(kj(e, e.per_atom[a]) * kApbsEnergyScale - per_atom[a]));
    largest = std::max(largest, std::fabs(per_atom[a]));
  }
  EXPECT_LT(worst / largest, 1e-6) << "largest per-atom energy " << largest << " kJ/mol";
}

/// APBS focusing (a coarse level with mdh, a fine one with bcfl focus whose box cuts through the
/// molecule): the fine level's energy counts the coarse level's outside its box; the fine map is
/// APBS's to the solvers' tolerance.
TEST(PbFocus, TwoLevelsEqualApbs) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const auto apbs = apbs_energies();
  ASSERT_TRUE(apbs.count("focus"));
  const PotentialMap apbs_fine = read_dx(reference("focus_fine.dx"));
  GridSpec coarse;
  const double glen = 80, centre[3] = {0.126, 1.73, 27.407};
  coarse.dims = {33, 33, 33};
  for (int d = 0; d < 3; ++d) coarse.spacing[d] = glen / 32, coarse.origin[d] = centre[d] - glen / 2;
  const GridSpec& fine = apbs_fine.grid;
  PbOptions o = energy_case("default");
  PbRun run = cpu_run();
  run.keep_potential = true;
  run.focus_child = &fine;
  const PbResult top = solve_pb(atoms, coarse, o, run);
  EXPECT_NEAR(kj(top.energy, top.energy.total) * kApbsEnergyScale / apbs.at("focus")[0] - 1, 0, 2e-7);
  const PbFocusParent parent{coarse, &top.potential, top.energy.outside_child};
  PbOptions focused = o;
  focused.boundary = PbBoundary::Focus;
  PbRun fine_run = cpu_run();
  fine_run.focus_parent = &parent;
  fine_run.atoms_outside = true;
  const PbResult low = solve_pb(atoms, fine, focused, fine_run);
  std::printf("focus levels: APBS %.10g, %.10g kJ/mol; espgrid %.10g, %.10g\n", apbs.at("focus")[0],
              apbs.at("focus")[1], kj(top.energy, top.energy.total), kj(low.energy, low.energy.total));
  EXPECT_NEAR(kj(low.energy, low.energy.total) * kApbsEnergyScale / apbs.at("focus")[1] - 1, 0, 2e-7);
  EXPECT_NE(low.energy.from_coarser.fixed_charge, 0.0);  // atoms outside the fine box counted
  // The map: the boundary comes through the coarse level, whose constants differ by 6e-6.
  double num = 0, den = 0;
  for (std::size_t i = 0; i < apbs_fine.values.size(); ++i) {
    num += std::pow(low.values[i] - apbs_fine.values[i], 2);
    den += std::pow(apbs_fine.values[i], 2);
  }
  EXPECT_LT(std::sqrt(num / den), 2e-5);
}

// ---- analytic ------------------------------------------------------------------------------------

/// The Born ion: a charge q at the centre of a sphere of radius a, ε_p inside, ε_s outside, no
/// ions: ΔG = −q²/(8π ε0 a) (1/ε_p − 1/ε_s). The solvation energy (solvated − reference on one
/// grid) converges to it with the spacing (the `mol` surface of one atom is its sphere).
TEST(PbEnergy, BornIonSolvationConvergesToTheAnalyticValue) {
  Atoms ion;
  ion.push_back(0.11, -0.07, 0.05, 1.0, 3.0);
  PbOptions o;
  o.solute_dielectric = 1;
  o.ionic_strength = 0;
  o.surface = PbSurface::Mol;
  o.tolerance = 1e-9;
  const double exact = -kCoulombKcalAngstrom * 4.184 / (2 * 3.0) * (1.0 - 1.0 / 78.54);  // kJ/mol
  double last_error = 1e300;
  for (const double h : {0.5, 0.25}) {
    GridSpec g;
    const auto n = static_cast<std::int64_t>(std::lround(16.0 / h)) + 1;
    g.dims = {n, n, n};
    g.spacing = {h, h, h};
    g.origin = {-8, -8, -8};
    const PbSolvation s = solvation_energy(ion, g, o, cpu_run());
    const double error = std::fabs(s.solvated.energy.kj_per_mol(s.energy) / exact - 1);
    std::printf("Born ion, h %.2f A: %.4f kJ/mol, analytic %.4f (%.2f%%)\n", h, s.solvated.energy.kj_per_mol(s.energy),
                exact, 100 * error);
    EXPECT_LT(error, last_error) << "h " << h;  // converges
    last_error = error;
  }
  EXPECT_LT(last_error, 0.01);  // measured: see docs/pb.md
}

/// APBS's 14 write maps of one solve (make_references.py WRITE_CASE: 2:1 salt, smol, spl2, mdh):
/// the maps made from the solve's coefficients and from the atoms alone equal APBS's to its DX
/// printing (%12.6e: 5e-7 relative), binary ones node for node; the maps made from φ to the
/// solvers' tolerance and the constants: φ carries APBS's source-term constant (6.3e-6), edens its
/// square (1.3e-5); 3e-5 relative RMS at nodes ≥ 1.4 Å outside (the target: 1e-3).
TEST(PbMaps, EveryWriteMapEqualsApbs) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = energy_grid(atoms);
  PbOptions o = energy_case("ions_2_1");
  PbRun run = cpu_run();
  const std::vector<std::string> kinds = {"pot",  "charge", "kappa", "dielx", "diely", "dielz", "smol",
                                          "sspl", "vdw",    "ivdw",  "lap",   "edens", "ndens", "qdens"};
  for (const std::string& kind : kinds) run.maps.push_back(pb::parse_pb_map_kind(kind));
  const PbResult r = solve_pb(atoms, g, o, run);
  const std::vector<char> outside = outside_mask(atoms, g);
  for (std::size_t m = 0; m < kinds.size(); ++m) {
    const PotentialMap apbs = read_map(reference("write_" + kinds[m] + ".dx.gz"));
    const pb::PbMapValues& ours = r.maps[m];
    EXPECT_EQ(ours.grid.dims, apbs.grid.dims) << kinds[m];
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(ours.grid.origin[d], apbs.grid.origin[d], 1e-6) << kinds[m];
    ASSERT_EQ(ours.values.size(), apbs.values.size()) << kinds[m];
    const bool from_potential = pb::pb_map_needs_potential(ours.kind);
    double num = 0, den = 0, worst = 0, scale = 0;
    std::size_t mismatched = 0;
    for (std::size_t i = 0; i < apbs.values.size(); ++i) scale = std::max(scale, std::fabs(double(apbs.values[i])));
    for (std::size_t i = 0; i < apbs.values.size(); ++i) {
      const double a = apbs.values[i], b = ours.values[i];
      worst = std::max(worst, std::fabs(a - b) / scale);
      mismatched += std::fabs(a - b) > 1e-6 * std::max(std::fabs(a), 1e-300) + 1e-12 * scale;
      if (outside[i]) num += (a - b) * (a - b), den += a * a;
    }
    const double rms = den > 0 ? std::sqrt(num / den) : 0;
    std::printf(
        "write %-6s: relative RMS outside %.2e, largest difference %.2e of the map's largest value, %zu of %zu "
        "nodes differ beyond APBS's printing\n",
        kinds[m].c_str(), rms, worst, mismatched, apbs.values.size());
    if (from_potential)
      EXPECT_LT(rms, 3e-5) << kinds[m];
    else
      EXPECT_EQ(mismatched, 0u) << kinds[m];
  }
}

TEST(PbMaps, ChargeKappaAndLaplacianMeanWhatApbsSays) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = energy_grid(atoms);
  PbOptions o = energy_case("default");
  PbRun run = cpu_run();
  run.maps = {pb::PbMapKind::Charge, pb::PbMapKind::Kappa, pb::PbMapKind::Vdw,   pb::PbMapKind::Smol,
              pb::PbMapKind::Ivdw,   pb::PbMapKind::Lap,   pb::PbMapKind::DielX, pb::PbMapKind::Potential};
  const PbResult r = solve_pb(atoms, g, o, run);
  ASSERT_EQ(r.maps.size(), run.maps.size());
  const double volume = g.spacing[0] * g.spacing[1] * g.spacing[2];
  const std::vector<double>& charge = r.maps[0].values;
  EXPECT_NEAR(std::accumulate(charge.begin(), charge.end(), 0.0) * volume, atoms.total_charge(), 1e-9);
  // vdW ⊂ molecular ⊂ ion-excluded regions: a node outside the ion layer is outside the molecule,
  // and a node outside the molecule is outside every van der Waals sphere.
  const std::vector<double>&kappa = r.maps[1].values, &vdw = r.maps[2].values, &smol = r.maps[3].values,
        &ivdw = r.maps[4].values;
  for (std::size_t i = 0; i < g.point_count(); ++i) {
    if (ivdw[i] == 1.0) EXPECT_EQ(smol[i], 1.0) << i;
    if (smol[i] == 1.0) EXPECT_EQ(vdw[i], 1.0) << i;
    EXPECT_EQ(kappa[i], ivdw[i]) << i;  // mol's accessibility is the ion-inflated spheres (ties aside)
  }
  EXPECT_EQ(r.maps[6].grid.origin[0], g.origin[0] + 0.5 * g.spacing[0]);  // dielx sits on the x faces
  EXPECT_EQ(r.maps[7].values.size(), g.point_count());
}

TEST(PbMaps, TheLaplacianOfAUniformMediumIsTheSource) {
  // −ε ∇²_h φ = zmagic ρ exactly where the operator is the plain Laplacian: APBS's lap map (∇²/3)
  // times 3 equals −zmagic·q/(ε V) at every interior node, to the solver's tolerance.
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  GridSpec g = energy_grid(atoms);
  PbOptions o;
  o.solvent_dielectric = o.solute_dielectric = 4;
  o.ionic_strength = 0;
  o.tolerance = 1e-11;
  o.max_iterations = 400;
  PbRun run = cpu_run();
  run.maps = {pb::PbMapKind::Lap, pb::PbMapKind::Charge};
  const PbResult r = solve_pb(atoms, g, o, run);
  const double zmagic = pb::source_scale(o.temperature);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < g.point_count(); ++i) {
    if (r.maps[0].values[i] == 0) continue;  // the faces
    const double source = -zmagic * r.maps[1].values[i] / o.solute_dielectric;
    num += std::pow(3 * r.maps[0].values[i] - source, 2);
    den += source * source;
  }
  EXPECT_LT(std::sqrt(num / den), 1e-6);
}

// ---- errors ------------------------------------------------------------------------------------

TEST(PbErrors, FocusNeedsItsParentAndNpbeReachesTheNewtonSolver) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = energy_grid(atoms);
  PbOptions o = energy_case("default");
  o.boundary = PbBoundary::Focus;
  EXPECT_THROW(solve_pb(atoms, g, o, cpu_run()), UsageError);
  // npbe through the same entry point: solved by inexact Newton, with APBS's npbe energy.
  o.boundary = PbBoundary::Mdh;
  o.equation = PbEquation::Nonlinear;
  const PbResult r = solve_pb(atoms, g, o, cpu_run());
  EXPECT_NE(r.solve.method.find("Newton"), std::string::npos) << r.solve.method;
  EXPECT_TRUE(std::isfinite(r.energy.total) && r.energy.total > 0) << r.energy.total;
}

TEST(PbErrors, AtomsWithoutRadiiOnlyWhereTheSurfaceDoesNotMatter) {
  // APBS's point-pmf examples: ions of radius 0 in a uniform dielectric without salt, where the
  // surface changes nothing. Solved there (the same map as with radii: κ = 0 makes the boundary's
  // Debye-Hückel factor 1 whatever the radius); anywhere else radii draw the surface and all-zero
  // radii are refused.
  const Atoms with_radii = testing::load_molecule("fasciculin2.pqr");
  Atoms points = with_radii;
  for (double& r : points.radius) r = 0;
  const GridSpec g = energy_grid(points);
  PbOptions o;
  o.solute_dielectric = o.solvent_dielectric = 78.54;
  o.ionic_strength = 0;
  o.energy.level = PbEnergyLevel::Total;
  const PbResult bare = solve_pb(points, g, o, cpu_run());
  const PbResult reference = solve_pb(with_radii, g, o, cpu_run());
  EXPECT_EQ(bare.values, reference.values);
  EXPECT_EQ(bare.energy.total, reference.energy.total);
  const auto refused = [&](const PbOptions& options) {
    try {
      (void)solve_pb(points, g, options, cpu_run());
      ADD_FAILURE() << "all-zero radii accepted with " << describe(options);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("needs atomic radii"), std::string::npos) << e.what();
    }
  };
  PbOptions dielectric_boundary = o;
  dielectric_boundary.solute_dielectric = 2;
  refused(dielectric_boundary);
  PbOptions salt = o;
  salt.ionic_strength = 0.1;
  refused(salt);
}

// ---- the command line ---------------------------------------------------------------------------

TEST(PbEnergyCli, MapReportsEnergiesSolvationAndBinding) {
  if (!pb::hypre_available() && !cuda_available()) GTEST_SKIP() << "neither hypre nor a GPU";
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pb_energy_cli";
  std::filesystem::create_directories(dir);
  // The complex and its two parts: the first and second half of boxB RNA's atoms.
  const Atoms rna = testing::load_molecule("boxb_rna_pdb2pqr3.pqr");
  std::string parts;
  for (int half = 0; half < 2; ++half) {
    const std::string path = (dir / ("part" + std::to_string(half) + ".pqr")).string();
    std::ofstream f(path);
    f << std::fixed << std::setprecision(4);
    const std::size_t begin = half ? rna.size() / 2 : 0, end = half ? rna.size() : rna.size() / 2;
    for (std::size_t a = begin; a < end; ++a)
      f << "ATOM  " << a + 1 << " X RES " << a + 1 << " " << rna.x[a] << " " << rna.y[a] << " " << rna.z[a] << " "
        << rna.charge[a] << " " << rna.radius[a] << "\n";
    parts += (half ? "," : "") + path;
  }
  const std::string json = (dir / "e.json").string();
  testing::Child child(
      {"map", std::string(ESPGRID_SOURCE_DIR) + "/data/boxb_rna_pdb2pqr3.pqr", "-o", (dir / "e.dx").string(), "--model",
       "pb", "--spacing", "1.5", "--solvation-energy", "--binding-parts", parts, "--json", json},
      dir, {});
  const testing::Outcome r = child.wait(600);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_NE(r.out.find("energy     "), std::string::npos) << r;
  EXPECT_NE(r.out.find("solvation  "), std::string::npos) << r;
  EXPECT_NE(r.out.find("binding    "), std::string::npos) << r;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"energy\": {", "\"solvation\": {", "\"binding\": {", "\"kJ_per_mol\""})
    EXPECT_NE(text.find(key), std::string::npos) << key << " in\n" << text;
}

// ---- the GPU ------------------------------------------------------------------------------------

/// The device path (surface, solve and the double potential on the GPU) and the hybrid path
/// (spl4, focus with atoms off the grid: host maps, device solve) give the CPU emulation's energies.
TEST(PbPhysicsGpu, DeviceEnergiesEqualTheCpuEmulations) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = energy_grid(atoms);
  for (const std::string name : {"default", "spl0", "sdh", "srfm_spl4", "ions_three"}) {
    const PbOptions o = energy_case(name);
    PbRun gpu;
    gpu.solver = PbSolver::CudaMultigrid;
    gpu.keep_potential = true;
    const PbResult d = solve_pb(atoms, g, o, gpu);
    const PbResult c = solve_pb(atoms, g, o, cpu_run());
    EXPECT_NEAR(d.energy.total / c.energy.total - 1, 0, 1e-8) << name;
    ASSERT_EQ(d.potential.size(), g.point_count()) << name;
  }
  // Focusing on the GPU: the fine level's atoms leave its box (host maps, device solve).
  const PotentialMap apbs_fine = read_dx(reference("focus_fine.dx"));
  GridSpec coarse;
  const double centre[3] = {0.126, 1.73, 27.407};
  coarse.dims = {33, 33, 33};
  for (int d = 0; d < 3; ++d) coarse.spacing[d] = 2.5, coarse.origin[d] = centre[d] - 40;
  PbRun top_run;
  top_run.solver = PbSolver::CudaMultigrid;
  top_run.keep_potential = true;
  top_run.focus_child = &apbs_fine.grid;
  const PbOptions o = energy_case("default");
  const PbResult top = solve_pb(atoms, coarse, o, top_run);
  const PbFocusParent parent{coarse, &top.potential, top.energy.outside_child};
  PbOptions focused = o;
  focused.boundary = PbBoundary::Focus;
  PbRun fine_run;
  fine_run.solver = PbSolver::CudaMultigrid;
  fine_run.focus_parent = &parent;
  fine_run.atoms_outside = true;
  const PbResult low = solve_pb(atoms, apbs_fine.grid, focused, fine_run);
  const double apbs_fine_energy = apbs_energies().at("focus")[1];
  EXPECT_NEAR(low.energy.kj_per_mol(low.energy.total) * kApbsEnergyScale / apbs_fine_energy - 1, 0, 2e-7);
}

}  // namespace
}  // namespace espgrid
