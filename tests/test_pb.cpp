// Poisson-Boltzmann maps (src/pb/): APBS's definitions reproduced piece by piece, the
// solvers against each other and against an exact answer, APBS 3.4.1's own maps (carried in
// tests/data/pb/, made by tests/data/pb/make_references.py), and the errors a user can meet.
// The CPU solvers run here; the CUDA multigrid's cases skip without a GPU (ESPGRID_REQUIRE_GPU=1
// makes them fail instead).
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "src/core/errors.h"
#include "src/maps/map_formats.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_hypre.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_solve.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_surface/pb_charges.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/registry/kernel_registry.h"
#include "tests/child_process.h"
#include "tests/pb_test_support.h"
#include "tests/resident_pages.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::as_double;
using testing::grid_around;
using testing::outside_mask;
using testing::relative_rms;

using pb::PbSystem;

bool have_hypre() { return pb::hypre_available(); }

/// A small charged "molecule": `count` atoms of radius 1.2–2 Å packed in a 12 Å ball.
Atoms small_molecule(unsigned seed, std::size_t count = 40) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1), radius(1.2, 2.0), charge(-0.8, 0.8);
  Atoms atoms;
  while (atoms.size() < count) {
    const double x = 6 * u(rng), y = 6 * u(rng), z = 6 * u(rng);
    if (x * x + y * y + z * z > 36) continue;
    atoms.push_back(x + 3.3, y - 1.7, z + 20.1, charge(rng), radius(rng));
  }
  return atoms;
}

PbOptions tight(PbOptions o = {}) {
  o.tolerance = 1e-10;
  o.max_iterations = 400;
  return o;
}

// ---- APBS's definitions, piece by piece -------------------------------------------------------

TEST(PbGeometry, ReferenceSphereMatchesApbsForFasciculin) {
  // APBS 3.4.1 on data/fasciculin2.pqr with srad 1.4 and ions of radius 2 logs "Max area =
  // 254.469" (4π·4.5²: largest radius 2.0 + max(2.0, 1.4) + 0.5) and "Using 2584-point reference
  // sphere": the request and the rings' rounding must give the same counts.
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const int request = pb::reference_sphere_request(fas, PbOptions{});
  EXPECT_EQ(request, 2545);
  const pb::ReferenceSphere s = pb::reference_sphere(request);
  EXPECT_EQ(s.x.size(), 2584u);
  for (std::size_t i = 0; i < s.x.size(); ++i)
    ASSERT_NEAR(s.x[i] * s.x[i] + s.y[i] * s.y[i] + s.z[i] * s.z[i], 1.0, 1e-12) << "point " << i;
}

TEST(PbGeometry, SplineWeightsPartitionTheCharge) {
  // Quadratic B-spline weights at any offset sum to 1 in each direction (sum rounding: 1e-15).
  for (double f = 0.0; f < 1.0; f += 0.037) {
    double sum = 0;
    for (int i = -2; i <= 2; ++i) sum += pb::bspline2(1.5 + i - f);
    EXPECT_NEAR(sum, 1.0, 1e-14) << "offset " << f;
  }
  const Atoms atoms = small_molecule(3);
  const GridSpec g = grid_around(atoms, 0.6, 8);
  const pb::PbCoefficients c = pb::build_coefficients(atoms, g, PbOptions{}, true, 1);
  const double spread = std::accumulate(c.charge.begin(), c.charge.end(), 0.0);
  EXPECT_NEAR(spread, atoms.total_charge(), 1e-12);
}

TEST(PbGeometry, SplineSwitchIsContinuousAndBounded) {
  const double r = 1.7, w = 0.3;
  EXPECT_EQ(pb::spline_switch((r - w) * (r - w) * 0.99, r, w), 0.0);
  EXPECT_EQ(pb::spline_switch((r + w) * (r + w), r, w), 1.0);
  double previous = 0;
  for (double d = r - w; d <= r + w; d += 0.001) {
    const double v = pb::spline_switch(d * d, r, w);
    EXPECT_GE(v, previous - 1e-15);  // monotone
    EXPECT_LE(v, 1.0 + 1e-15);
    EXPECT_LT(std::fabs(v - previous), 0.01);  // no jump: slope ≤ 3/(2w) = 5 per Å → ≤ 0.005 per step
    previous = v;
  }
}

TEST(PbGeometry, DielectricIsSoluteInsideAndSolventFarAway) {
  const Atoms atoms = small_molecule(5);
  const GridSpec g = grid_around(atoms, 0.5, 8);
  for (const PbSurface s : {PbSurface::Mol, PbSurface::Smol, PbSurface::Spline}) {
    PbOptions o;
    o.surface = s;
    const pb::PbCoefficients c = pb::build_coefficients(atoms, g, o, false, 2);
    // A face within 0.5 Å of an atom centre is inside its vdW sphere (radius ≥ 1.2 Å), and inside the
    // smoothing and spline reach too; a face 6 Å beyond every atom surface is solvent.
    for (std::int64_t k = 0; k < g.dims[2]; ++k)
      for (std::int64_t j = 0; j < g.dims[1]; ++j)
        for (std::int64_t i = 0; i < g.dims[0]; ++i) {
          const double p[3] = {g.position(0, i) + 0.5 * g.spacing[0], g.position(1, j), g.position(2, k)};
          double nearest = 1e9;
          for (std::size_t a = 0; a < atoms.size(); ++a)
            nearest = std::min(nearest, std::sqrt((p[0] - atoms.x[a]) * (p[0] - atoms.x[a]) +
                                                  (p[1] - atoms.y[a]) * (p[1] - atoms.y[a]) +
                                                  (p[2] - atoms.z[a]) * (p[2] - atoms.z[a])) -
                                            atoms.radius[a]);
          const double e = c.eps_x[static_cast<std::size_t>(i + g.dims[0] * (j + g.dims[1] * k))];
          if (nearest < -0.7) ASSERT_DOUBLE_EQ(e, o.solute_dielectric) << surface_name(s);
          if (nearest > 6.0) ASSERT_DOUBLE_EQ(e, o.solvent_dielectric) << surface_name(s);
          ASSERT_GE(e, o.solute_dielectric - 1e-12);
          ASSERT_LE(e, o.solvent_dielectric + 1e-12);
        }
  }
}

TEST(PbGeometry, CoefficientsDoNotDependOnThreads) {
  const Atoms atoms = small_molecule(7);
  const GridSpec g = grid_around(atoms, 0.55, 6);
  for (const PbSurface s : {PbSurface::Smol, PbSurface::Spline}) {
    PbOptions o;
    o.surface = s;
    const pb::PbCoefficients one = pb::build_coefficients(atoms, g, o, true, 1);
    const pb::PbCoefficients two = pb::build_coefficients(atoms, g, o, true, 2);
    EXPECT_EQ(one.eps_x, two.eps_x) << surface_name(s);
    EXPECT_EQ(one.eps_z, two.eps_z) << surface_name(s);
    EXPECT_EQ(one.accessibility, two.accessibility) << surface_name(s);
    EXPECT_EQ(one.charge, two.charge) << surface_name(s);
  }
}

/// Under mpirun each rank builds the coefficient maps and assembles the system on its planes only
/// (pb_solve.cpp, hypre_coefficient_planes): there they must be the whole build's bit for bit, or hypre's
/// rows would differ from one process's. Windows at both ends, in the middle, one plane, none; every
/// surface that builds by planes, with and without ions; a few hundred atoms so that windows cut
/// through the surface. The residual's sums over planes add up to the whole one's.
TEST(PbGeometry, ARanksPlanesAreTheWholeBuildsThere) {
  const Atoms atoms = small_molecule(11, 160);
  const GridSpec g = grid_around(atoms, 0.6, 6);
  const long nz = static_cast<long>(g.dims[2]), plane = static_cast<long>(g.dims[0] * g.dims[1]);
  std::mt19937 rng(20261128);
  std::vector<double> boundary(g.point_count());
  for (double& b : boundary) b = std::uniform_real_distribution<double>(-1, 1)(rng);
  std::vector<double> x(g.point_count());
  for (double& v : x) v = std::uniform_real_distribution<double>(-1, 1)(rng);
  const std::vector<pb::PlaneRange> windows = {
      {0, 7}, {nz - 9, nz}, {nz / 3, nz / 3 + 11}, {nz / 2, nz / 2 + 1}, {nz / 2, nz / 2}, {0, nz}};
  for (const PbSurface s : {PbSurface::Mol, PbSurface::Smol, PbSurface::Spline, PbSurface::Spline4})
    for (const double salt : {0.0, 0.15}) {
      PbOptions o;
      o.surface = s;
      o.ionic_strength = salt;
      const std::string what = surface_name(s) + (salt > 0 ? " with ions" : " without ions");
      const pb::PbCoefficients whole = pb::build_coefficients(atoms, g, o, true, 2);
      const PbSystem whole_system = pb::assemble_system(whole, boundary, o, PbFormulation::Direct, nullptr, 2);
      const pb::ResidualSums all = pb::residual_sums(whole_system, x, pb::all_planes(g), 2);
      for (const pb::PlaneRange w : windows) {
        const pb::PbCoefficients part = pb::build_coefficients_on_planes(atoms, g, o, true, w, 2);
        ASSERT_EQ(part.planes, w) << what;
        const auto at = [&](long k) { return static_cast<std::ptrdiff_t>(k * plane); };
        const auto same_planes = [&](const std::vector<double>& a, const std::vector<double>& b, pb::PlaneRange r) {
          return r.first >= r.end ||
                 std::equal(a.begin() + at(r.first), a.begin() + at(r.end), b.begin() + at(r.first));
        };
        EXPECT_TRUE(same_planes(part.eps_x, whole.eps_x, w)) << what << " planes " << w.first << "-" << w.end;
        EXPECT_TRUE(same_planes(part.eps_y, whole.eps_y, w)) << what << " planes " << w.first << "-" << w.end;
        EXPECT_TRUE(same_planes(part.eps_z, whole.eps_z, w)) << what << " planes " << w.first << "-" << w.end;
        EXPECT_TRUE(same_planes(part.accessibility, whole.accessibility, w)) << what;
        EXPECT_EQ(part.charge, whole.charge) << what;
        const PbSystem system = pb::assemble_system(part, boundary, o, PbFormulation::Direct, nullptr, 2);
        ASSERT_EQ(system.planes.first, w.first == 0 ? 0 : std::min(w.first + 1, w.end)) << what;
        ASSERT_EQ(system.planes.end, w.end) << what;
        for (const auto member : {&PbSystem::wx, &PbSystem::wy, &PbSystem::wz, &PbSystem::c, &PbSystem::rhs})
          EXPECT_TRUE(same_planes(system.*member, whole_system.*member, system.planes)) << what;
        EXPECT_EQ(system.fixed, whole_system.fixed) << what;  // the faces' values: always whole
      }
      // Two ranks' residual sums (planes split at a third) add up to the whole grid's, to rounding
      // of a sum of ~10⁵ positive terms (1e-12 relative).
      const long cut = nz / 3;
      const pb::PbCoefficients low = pb::build_coefficients_on_planes(atoms, g, o, true, {0, cut + 1}, 2);
      const pb::PbCoefficients high = pb::build_coefficients_on_planes(atoms, g, o, true, {cut - 2, nz}, 2);
      const PbSystem low_system = pb::assemble_system(low, boundary, o, PbFormulation::Direct, nullptr, 2);
      const PbSystem high_system = pb::assemble_system(high, boundary, o, PbFormulation::Direct, nullptr, 2);
      const pb::ResidualSums a = pb::residual_sums(low_system, x, {0, cut}, 2);
      const pb::ResidualSums b = pb::residual_sums(high_system, x, {cut, nz}, 2);
      EXPECT_NEAR(a.rr + b.rr, all.rr, 1e-12 * all.rr) << what;
      EXPECT_NEAR(a.bb + b.bb, all.bb, 1e-12 * all.bb) << what;
      EXPECT_THROW(pb::residual_sums(low_system, x, {cut, nz}, 2), Error) << what;  // rows it does not hold
      EXPECT_THROW(pb::relative_residual(low_system, x, 2), Error) << what;
    }
}

/// Under mpirun a rank holds only its planes of the coefficient maps and of the system's rows in
/// memory (the arrays keep the grid's shape; the other planes' pages are handed back, bulk_memory.h),
/// what lets hypre's ranks share a grid no one host holds. mincore right after the build, before
/// anything reads the other planes (huge pages off: testing::NoHugePages), the plane beside the kept
/// ones left out (a page may straddle them). And the system that takes the boundary values over as its fixed ones (no
/// second whole-grid array) gives the same potential as the one that copies their faces.
TEST(PbGeometry, ARankHoldsOnlyItsPlanesOfTheMapsAndRows) {
#if defined(__linux__)
  const testing::NoHugePages small_pages;
  const Atoms atoms = small_molecule(11, 160);
  const GridSpec g = grid_around(atoms, 0.5, 6);
  const long nz = static_cast<long>(g.dims[2]), plane = static_cast<long>(g.dims[0] * g.dims[1]);
  const long margin = 1;
  ASSERT_GT(plane * static_cast<long>(sizeof(double)), 4 * sysconf(_SC_PAGESIZE)) << "planes of a few pages";
  const pb::PlaneRange w{nz / 2 - 4, nz / 2 + 4};
  ASSERT_GT(w.first - 1 - margin, 4) << "the grid is too small for this test";
  ASSERT_LT(w.end + 1 + margin, nz - 4);
  std::mt19937 rng(20261129);
  std::vector<double> boundary(g.point_count()), x(g.point_count());
  for (double& b : boundary) b = std::uniform_real_distribution<double>(-1, 1)(rng);
  for (double& v : x) v = std::uniform_real_distribution<double>(-1, 1)(rng);
  // Resident pages of `a` beyond `margin` planes from `kept`, and whether all of `kept` is resident.
  const auto outside = [&](const std::vector<double>& a, pb::PlaneRange kept) {
    return testing::resident_pages(a.data(), a.data() + (kept.first - margin) * plane).resident +
           testing::resident_pages(a.data() + (kept.end + margin) * plane, a.data() + a.size()).resident;
  };
  const auto all_kept = [&](const std::vector<double>& a, pb::PlaneRange kept) {
    const testing::PageCount c = testing::resident_pages(a.data() + kept.first * plane, a.data() + kept.end * plane);
    return c.total > 0 && c.resident == c.total;
  };
  for (const PbSurface s : {PbSurface::Mol, PbSurface::Smol, PbSurface::Spline}) {
    PbOptions o;
    o.surface = s;
    const std::string what = surface_name(s);
    ASSERT_TRUE(pb::maps_held_on_planes(g, o, w)) << what;
    const pb::PbCoefficients part = pb::build_coefficients_on_planes(atoms, g, o, true, w, 2);
    const pb::PlaneRange maps{w.first - 1, w.end + 1};  // smol's mol values one plane beyond
    for (const auto member : {&pb::PbCoefficients::eps_x, &pb::PbCoefficients::eps_y, &pb::PbCoefficients::eps_z,
                              &pb::PbCoefficients::accessibility}) {
      EXPECT_EQ(outside(part.*member, maps), 0u) << what;
      EXPECT_TRUE(all_kept(part.*member, w)) << what << ": mincore must see the planes built";
    }
    PbSystem moved = pb::assemble_system(part, std::vector<double>(boundary), o, PbFormulation::Direct, nullptr, 2);
    for (const auto member : {&PbSystem::wx, &PbSystem::wy, &PbSystem::wz, &PbSystem::c})
      EXPECT_EQ(outside(moved.*member, part.planes), 0u) << what;
    EXPECT_EQ(outside(moved.rhs, moved.planes), 0u) << what;
    EXPECT_TRUE(all_kept(moved.rhs, moved.planes)) << what;
    const PbSystem copied = pb::assemble_system(part, boundary, o, PbFormulation::Direct, nullptr, 2);
    EXPECT_EQ(pb::combine(moved, x, nullptr, 2), pb::combine(copied, x, nullptr, 2)) << what;
  }
  PbOptions uniform;  // built whole: nothing to hold by planes
  uniform.solute_dielectric = uniform.solvent_dielectric;
  uniform.ionic_strength = 0;
  EXPECT_FALSE(pb::maps_held_on_planes(g, uniform, w));
  EXPECT_FALSE(pb::maps_held_on_planes(g, PbOptions{}, pb::all_planes(g)));
#else
  GTEST_SKIP() << "the pages are released on Linux only";
#endif
}

/// A rank whose solution goes to rank 0 spreads only its planes of the charges (pb_solve_plan.h
/// share_only): there every value is the whole spread's to the bit (the same atoms in the
/// same order; spl0's eight updates, spl2's 27 and spl4's 125 cut at the planes' ends), elsewhere 0,
/// and only its planes' pages resident. Random atoms on a 0.5 Å grid; ranges at an end, inside, and empty.
TEST(PbGeometry, ARankSpreadsOnlyItsPlanesOfTheCharges) {
#if defined(__linux__)
  const testing::NoHugePages small_pages;
  const Atoms atoms = small_molecule(17, 160);
  const GridSpec g = grid_around(atoms, 0.5, 6);
  const long nz = static_cast<long>(g.dims[2]);
  const std::size_t plane = g.dims[0] * g.dims[1];
  ASSERT_GT(plane * sizeof(double), 4 * static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) << "planes of a few pages";
  for (const PbChargeMethod m : {PbChargeMethod::Spl0, PbChargeMethod::Spl2, PbChargeMethod::Spl4}) {
    const std::vector<double> whole = pb::spread_charges(atoms, g, m);
    for (const pb::PlaneRange w : {pb::PlaneRange{0, nz / 3}, pb::PlaneRange{nz / 2 - 3, nz / 2 + 2},
                                   pb::PlaneRange{2 * nz / 3, nz}, pb::PlaneRange{nz / 2, nz / 2}}) {
      const std::string what = charge_method_name(m) + " planes " + std::to_string(w.first) + " to " +
                               std::to_string(w.end) + " of " + std::to_string(nz);
      const std::vector<double> part = pb::spread_charges_on_planes(atoms, g, m, w.first, w.end);
      ASSERT_EQ(part.size(), whole.size()) << what;
      // Before anything reads the pages: beyond a plane of either end, none is resident.
      const auto lo = part.data() + plane * static_cast<std::size_t>(std::max(0L, w.first - 1));
      const auto hi = part.data() + plane * static_cast<std::size_t>(std::min(nz, w.end + 1));
      EXPECT_EQ(testing::resident_pages(part.data(), lo).resident +
                    testing::resident_pages(hi, part.data() + part.size()).resident,
                0u)
          << what;
      std::size_t differ = 0, nonzero = 0;
      for (std::size_t i = 0; i < part.size(); ++i) {
        const long k = static_cast<long>(i / plane);
        const double expected = k >= w.first && k < w.end ? whole[i] : 0.0;
        differ += std::memcmp(&part[i], &expected, sizeof(double)) != 0;
        nonzero += k >= w.first && k < w.end && part[i] != 0.0;
      }
      EXPECT_EQ(differ, 0u) << what;
      if (w.end > w.first + 2) EXPECT_GT(nonzero, 0u) << what << ": planes with no charge test nothing";
    }
  }
#else
  GTEST_SKIP() << "the pages are released on Linux only";
#endif
}

/// A big structure's SAS carving runs batch by batch of atoms (pb::sas_batches): every atom that
/// reaches the planes asked for (with a radius) must be in exactly one batch, a batch must hold at
/// most the asked atoms (ties of height aside) and list every plane its atoms' points can carve.
/// Random atoms; whole grids and ranks' windows; limits from one atom to more than the structure.
TEST(PbGeometry, SasBatchesHoldEachAtomOnceAndReachItsPlanes) {
  const Atoms atoms = small_molecule(29, 300);
  const GridSpec g = grid_around(atoms, 0.7, 6);
  const long nz = static_cast<long>(g.dims[2]);
  const PbOptions o;
  const double carve = pb::max_radius(atoms) + 2 * o.probe_radius;  // a point's reach from its atom's centre
  for (const pb::PlaneRange window : {pb::all_planes(g), pb::PlaneRange{nz / 4, nz / 2}, pb::PlaneRange{0, 3}})
    for (const std::size_t limit : {std::size_t{1}, std::size_t{17}, std::size_t{120}, std::size_t{1000}}) {
      const std::string what = "planes " + std::to_string(window.first) + "-" + std::to_string(window.end) +
                               ", at most " + std::to_string(limit) + " atoms";
      const std::vector<pb::SasBatch> batches = pb::sas_batches(atoms, o, g.origin[2], g.spacing[2], nz, window, limit);
      ASSERT_FALSE(batches.empty()) << what;
      if (limit >= atoms.size()) EXPECT_EQ(batches.size(), 1u) << what;
      if (limit <= 17 && window == pb::all_planes(g)) EXPECT_GT(batches.size(), 10u) << what;  // the test cuts
      const bool whole = window == pb::all_planes(g);
      const pb::AtomZRange reaching =
          whole ? pb::AtomZRange{} : pb::atoms_reaching_planes(atoms, o, g.origin[2], g.spacing[2], window);
      for (std::size_t a = 0; a < atoms.size(); ++a) {
        int holders = 0;
        for (const pb::SasBatch& b : batches) {
          if (!b.atoms.contains(atoms.z[a])) continue;
          ++holders;
          // Every plane of the window whose faces (k·h .. (k + ½)·h above the origin) lie within the
          // atom's reach is the batch's.
          for (long k = window.first; k < window.end; ++k) {
            const double lo = g.origin[2] + static_cast<double>(k) * g.spacing[2], hi = lo + 0.5 * g.spacing[2];
            if (hi >= atoms.z[a] - carve && lo <= atoms.z[a] + carve)
              EXPECT_TRUE(k >= b.planes.first && k < b.planes.end) << what << ", atom " << a << ", plane " << k;
          }
        }
        EXPECT_EQ(holders, reaching.contains(atoms.z[a]) ? 1 : 0) << what << ", atom " << a;
      }
      for (const pb::SasBatch& b : batches) {
        std::size_t held = 0;
        for (std::size_t a = 0; a < atoms.size(); ++a) held += b.atoms.contains(atoms.z[a]) ? 1 : 0;
        EXPECT_LE(held, limit) << what;  // random heights: no ties
        EXPECT_GE(b.planes.first, window.first) << what;
        EXPECT_LE(b.planes.end, window.end) << what;
      }
    }
}

/// The maps of a carving in batches are the carving at once, bit for bit, and so is the count of SAS
/// points: mol, smol and the sampled surface, whole grids and a rank's planes, on random atoms and on
/// fasciculin-2 (906 atoms, the real surface's crowding).
TEST(PbGeometry, ACarvingInBatchesIsTheWholeCarving) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const Atoms random = small_molecule(31, 220);
  for (const Atoms* atoms : {&random, &fas}) {
    const GridSpec g = grid_around(*atoms, atoms == &fas ? 1.1 : 0.6, 6);
    const long nz = static_cast<long>(g.dims[2]);
    for (const PbSurface s : {PbSurface::Mol, PbSurface::Smol})
      for (const int sampling : {1, 2}) {
        PbOptions o;
        o.surface = s;
        o.sampling = sampling;
        for (const pb::PlaneRange w : {pb::all_planes(g), pb::PlaneRange{nz / 3, nz / 3 + 9}}) {
          if (sampling > 1 && !(w == pb::all_planes(g))) continue;  // the sampled surface builds whole
          const std::string what = (atoms == &fas ? "fasciculin-2 " : "random ") + surface_name(s) + " sampling " +
                                   std::to_string(sampling) + " planes " + std::to_string(w.first) + "-" +
                                   std::to_string(w.end);
          const pb::PbCoefficients once = pb::build_coefficients_on_planes(*atoms, g, o, false, w, 2);
          for (const std::size_t limit : {std::size_t{9}, atoms->size() / 4}) {
            const pb::PbCoefficients batched = pb::build_coefficients_on_planes(*atoms, g, o, false, w, 2, limit);
            EXPECT_EQ(batched.eps_x, once.eps_x) << what << ", at most " << limit;
            EXPECT_EQ(batched.eps_y, once.eps_y) << what << ", at most " << limit;
            EXPECT_EQ(batched.eps_z, once.eps_z) << what << ", at most " << limit;
            EXPECT_EQ(batched.accessibility, once.accessibility) << what << ", at most " << limit;
            EXPECT_EQ(batched.sas_points, once.sas_points) << what << ", at most " << limit;
          }
          EXPECT_GT(once.sas_points, 0u) << what;
        }
      }
  }
}

/// Ranks simulated by threads: add_across_ranks is a collective that sums every rank's vector.
class ThreadRanks {
 public:
  explicit ThreadRanks(int ranks) : ranks_(ranks), sync_(ranks) {}
  pb::FaceSumShare share(int rank) {
    return {rank, ranks_, [this, rank](std::vector<double>& values) {
              sync_.arrive_and_wait();  // the previous call's copies are done
              if (rank == 0) total_.assign(values.size(), 0.0);
              sync_.arrive_and_wait();
              {
                const std::lock_guard<std::mutex> lock(mutex_);
                for (std::size_t i = 0; i < values.size(); ++i) total_[i] += values[i];
              }
              sync_.arrive_and_wait();
              values = total_;
            }};
  }

 private:
  int ranks_;
  std::barrier<> sync_;
  std::mutex mutex_;
  std::vector<double> total_;
};

/// Under mpirun the boundary's banded face sums are shared out among the ranks
/// (pb::shared_among_ranks): every rank must end with the one-process boundary (every value has one
/// owner, so the added zeros change nothing), through every refinement round, and the ranks must
/// evaluate disjoint sums that cover all of them.
TEST(PbBoundary, FaceSumsSharedAmongRanksGiveEveryRankTheWholeBoundary) {
  const Atoms atoms = small_molecule(5, 160);
  const GridSpec g = grid_around(atoms, 0.7, 9);
  PbOptions o;
  o.boundary_accuracy = 1e-6;  // tight: more bands and refinement rounds
  const KernelVariant& kernel = default_kernel(Backend::Cpu);
  RunOptions run;
  run.threads = 1;
  pb::FaceSumReport whole_report;
  const std::vector<double> whole = pb::mdh_boundary(atoms, g, o, kernel, run, &whole_report);
  ASSERT_GT(whole_report.rounds, 0);
  for (const int ranks : {2, 3}) {
    ThreadRanks group(ranks);
    std::vector<std::vector<double>> got(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        const pb::FaceSumShare share = group.share(r);
        got[static_cast<std::size_t>(r)] = pb::mdh_boundary(atoms, g, o, kernel, run, nullptr, &share);
      });
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(got[static_cast<std::size_t>(r)], whole) << r << " of " << ranks;
  }
  // Which sums each rank evaluates: a fake evaluator records them and returns a value per node.
  std::vector<std::uint32_t> some(7), more(40);
  std::iota(some.begin(), some.end(), 0u);
  std::iota(more.begin(), more.end(), 0u);
  std::vector<pb::FacePlaneSum> sums(11);
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sums[i].dims = {static_cast<std::int64_t>(3 + i % 4), static_cast<std::int64_t>(2 + i % 3)};
    sums[i].level = static_cast<double>(i);
    sums[i].atoms = i % 2 ? &some : &more;
  }
  const auto values_of = [](const pb::FacePlaneSum& s) {
    std::vector<double> v(s.node_count());
    for (std::size_t n = 0; n < v.size(); ++n) v[n] = 100.0 * s.level + static_cast<double>(n) + 0.5;
    return v;
  };
  ThreadRanks group(3);
  std::vector<std::vector<double>> levels(3);
  std::vector<std::vector<std::vector<double>>> out(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      const pb::FaceSumEvaluator fake = [&, r](const std::vector<pb::FacePlaneSum>& mine) {
        std::vector<std::vector<double>> v;
        for (const pb::FacePlaneSum& s : mine)
          v.push_back(values_of(s)), levels[static_cast<std::size_t>(r)].push_back(s.level);
        return v;
      };
      out[static_cast<std::size_t>(r)] = pb::shared_among_ranks(fake, group.share(r))(sums);
    });
  for (std::thread& t : threads) t.join();
  std::vector<double> seen;
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(levels[static_cast<std::size_t>(r)].empty()) << "rank " << r << " evaluated nothing";
    seen.insert(seen.end(), levels[static_cast<std::size_t>(r)].begin(), levels[static_cast<std::size_t>(r)].end());
    ASSERT_EQ(out[static_cast<std::size_t>(r)].size(), sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) EXPECT_EQ(out[static_cast<std::size_t>(r)][i], values_of(sums[i]));
  }
  std::sort(seen.begin(), seen.end());
  std::vector<double> every(sums.size());
  for (std::size_t i = 0; i < sums.size(); ++i) every[i] = static_cast<double>(i);
  EXPECT_EQ(seen, every) << "the ranks' sums overlap or miss one";
}

TEST(PbGeometry, SampledSurfaceIsBetweenItsBoundsAndPureAwayFromIt) {
  // The flux-tube average of a two-valued region lies between the two values, is the solute's deep
  // inside and the solvent's far outside, and does not depend on the thread count.
  const Atoms atoms = small_molecule(23);
  const GridSpec g = grid_around(atoms, 0.8, 7);
  PbOptions o;
  o.sampling = 3;
  const pb::PbCoefficients one = pb::build_coefficients(atoms, g, o, false, 1);
  const pb::PbCoefficients two = pb::build_coefficients(atoms, g, o, false, 2);
  EXPECT_EQ(one.eps_y, two.eps_y);
  EXPECT_EQ(one.accessibility, two.accessibility);
  std::size_t mixed = 0;
  for (std::size_t i = 0; i < one.eps_y.size(); ++i) {
    ASSERT_GE(one.eps_y[i], o.solute_dielectric - 1e-12);
    ASSERT_LE(one.eps_y[i], o.solvent_dielectric + 1e-12);
    ASSERT_GE(one.accessibility[i], 0.0);
    ASSERT_LE(one.accessibility[i], 1.0);
    mixed += one.eps_y[i] > o.solute_dielectric && one.eps_y[i] < o.solvent_dielectric;
  }
  EXPECT_GT(mixed, 0u);  // the surface is resolved below the spacing, not a staircase
  // A face whose tube lies inside an atom's vdW sphere by 1 spacing is solute; the box's corner solvent.
  EXPECT_DOUBLE_EQ(one.eps_x[0], o.solvent_dielectric);
  EXPECT_DOUBLE_EQ(one.accessibility[0], 1.0);
}

// ---- the multigrid's pieces ------------------------------------------------------------------

TEST(PbMultigrid, CoarseningKeepsEveryOtherNodeAndTheLast) {
  const pb::MgAxis odd = pb::coarsen_axis(9);
  EXPECT_EQ(odd.fine_of, (std::vector<int>{0, 2, 4, 6, 8}));
  const pb::MgAxis even = pb::coarsen_axis(8);
  EXPECT_EQ(even.fine_of, (std::vector<int>{0, 2, 4, 6, 7}));  // the last interval is one fine spacing
  EXPECT_EQ(even.mid, (std::vector<unsigned char>{0, 1, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(even.coarse_lo, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 4}));
}

TEST(PbMultigrid, RestrictionIsTheTransposeOfProlongation) {
  // <Pᵀ r, e> = <r, P e> for random r (fine interior) and e (coarse interior): the V-cycle is a
  // symmetric preconditioner only if it holds. Sums of ~10⁴ products of O(1) values: 1e-12 relative.
  std::mt19937 rng(testing::test_seed());
  std::uniform_real_distribution<double> u(-1, 1);
  for (const std::array<long, 3> nf : {std::array<long, 3>{9, 8, 11}, std::array<long, 3>{12, 3, 7}}) {
    pb::MgAxis axes[3];
    bool coarsened[3];
    long nc[3];
    for (int d = 0; d < 3; ++d) {
      coarsened[d] = nf[d] > 3;
      axes[d] = coarsened[d] ? pb::coarsen_axis(nf[d]) : pb::MgAxis{};
      nc[d] = coarsened[d] ? static_cast<long>(axes[d].fine_of.size()) : nf[d];
    }
    const pb::MgAxisMap maps[3] = {axes[0].view(), axes[1].view(), axes[2].view()};
    std::vector<double> r(static_cast<std::size_t>(nf[0] * nf[1] * nf[2]), 0.0),
        e(static_cast<std::size_t>(nc[0] * nc[1] * nc[2]), 0.0);
    for (long k = 1; k < nf[2] - 1; ++k)
      for (long j = 1; j < nf[1] - 1; ++j)
        for (long i = 1; i < nf[0] - 1; ++i) r[static_cast<std::size_t>(i + nf[0] * (j + nf[1] * k))] = u(rng);
    for (long k = 1; k < nc[2] - 1; ++k)
      for (long j = 1; j < nc[1] - 1; ++j)
        for (long i = 1; i < nc[0] - 1; ++i) e[static_cast<std::size_t>(i + nc[0] * (j + nc[1] * k))] = u(rng);
    double left = 0, right = 0;
    for (long k = 1; k < nc[2] - 1; ++k)
      for (long j = 1; j < nc[1] - 1; ++j)
        for (long i = 1; i < nc[0] - 1; ++i)
          left += pb::restrict_value(r.data(), nf.data(), maps, coarsened, i, j, k) *
                  e[static_cast<std::size_t>(i + nc[0] * (j + nc[1] * k))];
    for (long k = 1; k < nf[2] - 1; ++k)
      for (long j = 1; j < nf[1] - 1; ++j)
        for (long i = 1; i < nf[0] - 1; ++i)
          right += r[static_cast<std::size_t>(i + nf[0] * (j + nf[1] * k))] *
                   pb::prolong_value(e.data(), nc, maps, coarsened, i, j, k);
    EXPECT_NEAR(left, right, 1e-12 * (std::fabs(left) + 1)) << nf[0] << "x" << nf[1] << "x" << nf[2];
  }
}

TEST(PbMultigrid, CoarseOperatorOfAUniformMediumIsItsRediscretization) {
  // ε = 3 everywhere on spacing h: the coarse face conductance is 3·(2h)²/(2h) = 6h (two faces in
  // series, full weighting across), exactly, at faces away from the short last interval.
  PbSystem s;
  const double h = 0.5;
  s.grid.dims = {13, 13, 13};
  s.grid.spacing = {h, h, h};
  const std::size_t n = s.grid.point_count();
  s.wx.assign(n, 3 * h);
  s.wy.assign(n, 3 * h);
  s.wz.assign(n, 3 * h);
  s.c.assign(n, 0.0);
  s.rhs.assign(n, 0.0);
  s.fixed.assign(n, 0.0);
  const std::vector<pb::MgLevel> levels = pb::build_hierarchy(s, pb::MgSettings{}, 1);
  ASSERT_GE(levels.size(), 2u);
  const pb::MgLevel& c = levels[1];
  EXPECT_EQ(c.n[0], 7);
  for (long k = 1; k < 6; ++k)
    for (long j = 1; j < 6; ++j)
      for (long i = 1; i < 5; ++i)
        EXPECT_NEAR(c.wx[static_cast<std::size_t>(i + 7 * (j + 7 * k))], 6 * h, 1e-12) << i << " " << j << " " << k;
}

// ---- solvers: exact answers, each other, APBS ------------------------------------------------

/// The split formulation in a uniform medium without salt is exact: φ = φ_Coulomb at every node
/// (the reaction field is 0; mdh boundary values are then Coulomb's too). Only the solver's
/// tolerance (1e-10) and the float32 direct sum (relative ~1e-6 of Σ|q|/r) separate them.
TEST(PbSolve, SplitInAUniformMediumIsTheCoulombSum) {
  const Atoms atoms = small_molecule(11);
  const GridSpec g = grid_around(atoms, 0.6, 6);
  PbOptions o = tight();
  o.solvent_dielectric = o.solute_dielectric;
  o.ionic_strength = 0;
  o.formulation = PbFormulation::Split;
  PhysicsOptions coulomb;
  coulomb.dielectric = o.solute_dielectric;
  const PreparedProblem problem = PreparedProblem::for_physics(atoms, g, coulomb);
  std::vector<float> exact(g.point_count()), scale(g.point_count());
  fast_reference_kernel().run(problem.view(exact.data()), RunOptions{});
  const PreparedProblem magnitudes = problem.with_absolute_charges();  // Σ|q|/r: float32 rounding's scale
  fast_reference_kernel().run(magnitudes.view(scale.data()), RunOptions{});
  double scale2 = 0;
  for (const float v : scale) scale2 += static_cast<double>(v) * v;
  std::vector<PbSolver> solvers = {PbSolver::CpuMultigrid};
  if (have_hypre()) solvers.push_back(PbSolver::Hypre);
  for (const PbSolver solver : solvers) {
    PbRun run;
    run.solver = solver;
    const PbResult r = solve_pb(atoms, g, o, run);
    // Against the scale of float32 rounding, RMS(Σ|q|/r): the float32 sums (the boundary faces, the
    // Coulomb map, the reference) carry ~(4√N + 8) ulp of it (src/compute/oracle.h), 2e-6 for
    // N = 40; the solve contributes ~1e-10. (Relative to φ itself it is larger where charges cancel.)
    double diff2 = 0;
    for (std::size_t i = 0; i < exact.size(); ++i) diff2 += std::pow(double(r.values[i]) - exact[i], 2);
    EXPECT_LT(std::sqrt(diff2 / scale2), 2e-6) << pb_solver_name(solver);
  }
}

TEST(PbSolve, DirectInAUniformMediumApproachesCoulombAtSecondOrder) {
  // APBS's discretization (spl2 charges) is not exact: its error away from the charges falls like
  // h². Measured here at 0.8 and 0.4 Å: the ratio must be near 4 (between 2.5 and 6: the error
  // is not yet purely asymptotic at 0.8 Å, and the float32 reference adds ~1e-6).
  const Atoms atoms = small_molecule(13, 20);
  PbOptions o = tight();
  o.solvent_dielectric = o.solute_dielectric;
  o.ionic_strength = 0;
  o.formulation = PbFormulation::Direct;
  double errors[2];
  for (int level = 0; level < 2; ++level) {
    const double h = level == 0 ? 0.8 : 0.4;
    GridSpec g = grid_around(atoms, h, 6.4);
    PhysicsOptions coulomb;
    coulomb.dielectric = o.solute_dielectric;
    const PreparedProblem problem = PreparedProblem::for_physics(atoms, g, coulomb);
    std::vector<float> exact(g.point_count());
    fast_reference_kernel().run(problem.view(exact.data()), RunOptions{});
    PbRun run;
    run.solver = PbSolver::CpuMultigrid;
    const PbResult r = solve_pb(atoms, g, o, run);
    errors[level] = relative_rms(as_double(r.values), as_double(exact), outside_mask(atoms, g));
  }
  EXPECT_GT(errors[0] / errors[1], 2.5) << errors[0] << " " << errors[1];
  EXPECT_LT(errors[0] / errors[1], 6.0) << errors[0] << " " << errors[1];
}

TEST(PbSolve, MultigridEmulationEqualsHypre) {
  if (!have_hypre()) GTEST_SKIP() << "this build has no hypre";
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(atoms, 1.2, 7);
  for (const PbFormulation f : {PbFormulation::Split, PbFormulation::Direct}) {
    PbOptions o = tight();
    o.formulation = f;
    PbRun a, b;
    a.solver = PbSolver::Hypre;
    b.solver = PbSolver::CpuMultigrid;
    const PbResult ra = solve_pb(atoms, g, o, a), rb = solve_pb(atoms, g, o, b);
    // Both stop at relative residual 1e-10; the condition number of the system (~10⁴ at this
    // spacing and dielectric jump) turns that into at most ~1e-6 in the solution; float32 output: 6e-8.
    EXPECT_LT(relative_rms(as_double(rb.values), as_double(ra.values)), 1e-6) << formulation_name(f);
    EXPECT_LE(rb.solve.iterations, 40) << "the multigrid preconditioner has lost its grip";
  }
}

/// APBS 3.4.1's own map of a bundled structure (tests/data/pb/, with the parameters that made it).
struct ApbsReference {
  const char* file;
  const char* structure;
  PbSurface surface;
  double ionic_strength;
};
constexpr ApbsReference kReferences[] = {
    {"fasciculin2_smol_I0.15.dx", "fasciculin2.pqr", PbSurface::Smol, 0.15},
    {"boxb_rna_mol_I0.dx", "boxb_rna_pdb2pqr3.pqr", PbSurface::Mol, 0.0},
};

/// The direct formulation is APBS's discretization: the maps agree to the solvers' tolerance.
/// APBS made these with etol 1e-10; its DX prints 7 significant digits (5e-7 relative); the
/// maps measured 3e-6..1e-5 apart at APBS's default etol 1e-6 (benchmarks/NOTES.md), so 1e-5 at
/// 1e-10 leaves room for float32 output and the boundary sums' float32 rounding (~1e-6).
void expect_matches_apbs(PbSolver solver) {
  for (const ApbsReference& ref : kReferences) {
    const PotentialMap apbs = read_dx(std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pb/" + ref.file);
    const Atoms atoms = testing::load_molecule(ref.structure);
    PbOptions o = tight();
    o.formulation = PbFormulation::Direct;
    o.surface = ref.surface;
    o.ionic_strength = ref.ionic_strength;
    PbRun run;
    run.solver = solver;
    const PbResult r = solve_pb(atoms, apbs.grid, o, run);
    const std::vector<char> outside = outside_mask(atoms, apbs.grid);
    EXPECT_LT(relative_rms(as_double(r.values), as_double(apbs.values), outside), 1e-5) << ref.file;
    EXPECT_LT(relative_rms(as_double(r.values), as_double(apbs.values)), 1e-5) << ref.file << " (every node)";
  }
}

TEST(PbSolve, DirectMatchesApbsWithHypre) {
  if (!have_hypre()) GTEST_SKIP() << "this build has no hypre";
  expect_matches_apbs(PbSolver::Hypre);
}

TEST(PbSolve, DirectMatchesApbsWithTheMultigridEmulation) { expect_matches_apbs(PbSolver::CpuMultigrid); }

TEST(PbSolveGpu, DirectMatchesApbsWithTheCudaMultigrid) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  expect_matches_apbs(PbSolver::CudaMultigrid);
}

TEST(PbSolveGpu, DeviceCoefficientsEqualTheHosts) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  // The same per-node functions, sums without FMA contraction on both sides: bit for bit.
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(atoms, 0.8, 8);
  for (const PbSurface s : {PbSurface::Mol, PbSurface::Smol, PbSurface::Spline}) {
    for (const double salt : {0.0, 0.15}) {
      PbOptions o;
      o.surface = s;
      o.ionic_strength = salt;
      const pb::PbCoefficients host = pb::build_coefficients(atoms, g, o, true, 0);
      const pb::PbCoefficients device = pb::build_coefficients_on_device(atoms, g, o, true, 0);
      EXPECT_EQ(device.eps_x, host.eps_x) << surface_name(s) << " I " << salt;
      EXPECT_EQ(device.eps_y, host.eps_y) << surface_name(s) << " I " << salt;
      EXPECT_EQ(device.eps_z, host.eps_z) << surface_name(s) << " I " << salt;
      EXPECT_EQ(device.accessibility, host.accessibility) << surface_name(s) << " I " << salt;
      EXPECT_EQ(device.sas_points, host.sas_points) << surface_name(s) << " I " << salt;
    }
  }
}

TEST(PbSolveGpu, CudaMultigridEqualsItsCpuEmulation) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(atoms, 0.7, 8);
  // The device-resident path (smol: maps, assembly and hierarchy on the device) with the split
  // formulation (the Coulomb map uploaded), and the hybrid one (the sampled surface from the host).
  for (const auto& [formulation, sampling] :
       {std::pair{PbFormulation::Split, 0}, std::pair{PbFormulation::Direct, 4}}) {
    PbOptions o = tight();
    o.formulation = formulation;
    o.sampling = sampling;
    PbRun gpu, cpu;
    gpu.solver = PbSolver::CudaMultigrid;
    cpu.solver = PbSolver::CpuMultigrid;
    cpu.direct_sum = &default_kernel(Backend::Cuda);  // the same φ_Coulomb on both sides
    const PbResult rg = solve_pb(atoms, g, o, gpu), rc = solve_pb(atoms, g, o, cpu);
    // The same arithmetic per node; only reduction order and FMA contraction differ, so the CG
    // iterates stay within rounding of each other: the iteration counts may differ by one, and
    // both solutions are within the 1e-10 residual (≲1e-6 in the solution, see above) of the answer.
    EXPECT_LT(relative_rms(as_double(rg.values), as_double(rc.values)), 1e-6) << formulation_name(formulation);
    EXPECT_NEAR(rg.solve.iterations, rc.solve.iterations, 1) << formulation_name(formulation);
    EXPECT_LT(rg.solve.relative_residual, 1e-9) << "recomputed on the device";
  }
}

// ---- what a user can get wrong -----------------------------------------------------------------

TEST(PbErrors, AtomOutsideTheGridIsNamed) {
  const Atoms atoms = small_molecule(17);
  GridSpec g = grid_around(atoms, 0.8, 1.0);  // 1 Å padding: atoms within two spacings of a face
  try {
    solve_pb(atoms, g, PbOptions{}, PbRun{PbSolver::CpuMultigrid});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("atom "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--padding"), std::string::npos) << e.what();
  }
}

TEST(PbErrors, AtomsWithoutRadiiAreRefused) {
  Atoms atoms = small_molecule(29);
  const GridSpec g = grid_around(atoms, 0.8, 6);
  std::fill(atoms.radius.begin(), atoms.radius.end(), 0.0);  // what positions + charges alone give
  EXPECT_THROW(solve_pb(atoms, g, PbOptions{}, PbRun{PbSolver::CpuMultigrid}), UsageError);
}

TEST(PbErrors, BadOptionsNameTheirOption) {
  const std::pair<void (*)(PbOptions&), const char*> cases[] = {
      {[](PbOptions& o) { o.probe_radius = -1; }, "--probe-radius"},
      {[](PbOptions& o) { o.ion_radius = 100; }, "--ion-radius"},
      {[](PbOptions& o) { o.solvent_dielectric = 0; }, "--solvent-dielectric"},
      {[](PbOptions& o) { o.ionic_strength = 20; }, "--ionic-strength"},
      {[](PbOptions& o) { o.tolerance = 2; }, "--pb-tolerance"},
      {[](PbOptions& o) { o.spline_window = 0; }, "--surface-window"},
      {[](PbOptions& o) { o.boundary_accuracy = -1; }, "--boundary-accuracy"},
      {[](PbOptions& o) { o.boundary_accuracy = 1e-12; }, "--boundary-accuracy"},  // under float32's rounding
      {[](PbOptions& o) { o.boundary_accuracy = std::nan(""); }, "--boundary-accuracy"},
  };
  for (const auto& [change, option] : cases) {
    PbOptions o;
    change(o);
    try {
      validate(o);
      ADD_FAILURE() << option << ": no error";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(option), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_surface("sas"), UsageError);
  EXPECT_EQ(parse_surface("spl2"), PbSurface::Spline);
}

TEST(PbErrors, NotConvergingIsAnError) {
  const Atoms atoms = small_molecule(19);
  const GridSpec g = grid_around(atoms, 0.7, 6);
  PbOptions o;
  o.tolerance = 1e-12;
  o.max_iterations = 2;
  try {
    solve_pb(atoms, g, o, PbRun{PbSolver::CpuMultigrid});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--pb-max-iterations"), std::string::npos) << e.what();
  }
}

// ---- the command line ---------------------------------------------------------------------------

testing::Outcome run_cli(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  testing::Child child(args, dir, {});
  return child.wait(600);
}

TEST(PbCli, MapWritesAPoissonBoltzmannMapThatSaysSo) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pb_cli";
  std::filesystem::create_directories(dir);
  const std::string dx = (dir / "fas.dx").string(), mrc = (dir / "fas.mrc").string();
  const testing::Outcome r = run_cli({"map", "data/fasciculin2.pqr", "-o", dx, "-o", mrc, "--model", "pb", "--spacing",
                                      "1.5", "--padding", "8", "--backend", "cpu"},
                                     dir);
  ASSERT_EQ(r.code, 0) << r;
  // The summary: method and parameters, iterations, final residual; no atom-evaluation rate.
  EXPECT_NE(r.out.find("pdie 2, sdie 78.54, I 0.15 M (ion radius 2 A), srfm smol"), std::string::npos) << r;
  EXPECT_NE(r.out.find("iterations, relative residual"), std::string::npos) << r;
  EXPECT_EQ(r.out.find("atom-evaluations/s"), std::string::npos) << r;
  // The file records the model, its parameters and the solve.
  std::ifstream in(dx);
  std::string header, line;
  for (int i = 0; i < 4 && std::getline(in, line); ++i) header += line + "\n";
  EXPECT_NE(header.find("linearized Poisson-Boltzmann"), std::string::npos) << header;
  EXPECT_NE(header.find("model pb: linearized PB, pdie 2, sdie 78.54"), std::string::npos) << header;
  EXPECT_NE(header.find("iterations, relative residual"), std::string::npos) << header;
  // The .mrc's 80-character labels carry the same, the parameters wrapped over several labels.
  std::ifstream m(mrc, std::ios::binary);
  std::string labels(800, ' ');
  m.seekg(224);
  m.read(labels.data(), 800);
  EXPECT_NE(labels.find("model pb"), std::string::npos) << labels;
  EXPECT_NE(labels.find("srfm smol (srad 1.4 A, sdens 10)"), std::string::npos) << labels;
  EXPECT_NE(labels.find("bcfl mdh"), std::string::npos) << labels;
  // Read back, it is a PB map in kT/e.
  bool unit_known = false;
  const PotentialMap back = read_dx(dx, &unit_known);
  EXPECT_TRUE(unit_known);
  EXPECT_TRUE(back.physics.is_pb());
}

// The kernel line names the kernel of each direct sum the solve made: --accuracy picks MSM for the
// split formulation's Coulomb part, while the boundary's sum stays exact; the line once said
// "direct sums: cpu-msm" for the direct formulation too, which sums nothing but the boundary.
TEST(PbCli, TheKernelLineNamesEachDirectSumsKernel) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pb_kernel_line";
  std::filesystem::create_directories(dir);
  const auto kernel_line = [](const std::string& out) {
    const auto at = out.find("\nkernel ");
    return at == std::string::npos ? std::string() : out.substr(at + 1, out.find('\n', at + 1) - at - 1);
  };
  for (const char* formulation : {"split", "direct"}) {
    SCOPED_TRACE(formulation);
    const testing::Outcome r =
        run_cli({"map", "data/fasciculin2.pqr", "-o", (dir / "fas.dx").string(), "--model", "pb", "--spacing", "1.5",
                 "--padding", "8", "--backend", "cpu", "--accuracy", "1e-3", "--pb-formulation", formulation},
                dir);
    if (std::string(formulation) == "direct") {
      // The direct formulation sums no Coulomb part: --accuracy would choose nothing, so it is
      // refused rather than shown beside the kernel it did not choose.
      EXPECT_EQ(r.code, 2) << r;
      EXPECT_NE(r.err.find("--accuracy with --model pb chooses the kernel of the Coulomb part that "
                           "--pb-formulation split sums"),
                std::string::npos)
          << r;
      continue;
    }
    ASSERT_EQ(r.code, 0) << r;
    const std::string line = kernel_line(r.out);
    EXPECT_NE(line.find("(direct sums: boundary cpu-"), std::string::npos) << line;
    EXPECT_EQ(line.find("boundary cpu-msm"), std::string::npos) << line;
    EXPECT_NE(line.find(", Coulomb part cpu-msm, --accuracy"), std::string::npos) << line;
    EXPECT_EQ(r.out.find("summed exactly"), std::string::npos) << r;  // MSM's Coulomb part is not exact
  }
}

// --backend cpu solves with espgrid's multigrid in one process (faster than hypre and needing no
// MPI: docs/pb.md); --pb-solver hypre asks for hypre. Both stop at the same relative residual, so
// their maps agree to the solve's accuracy: 1e-9 of the residual on this well-conditioned 1.5 Å
// grid is ~1e-8 relative in φ (conditioning ~1e3), far below the 1e-6 asked of the maps here.
TEST(PbCli, TheCpuSolverIsEspgridsMultigridAndHypreOnRequest) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pb_cpu_solvers";
  std::filesystem::create_directories(dir);
  const auto solve = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "map", "data/fasciculin2.pqr", "-o",  (dir / out).string(), "--model", "pb", "--spacing", "1.5", "--padding",
        "8",   "--pb-tolerance",       "1e-9"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, dir);
  };
  const testing::Outcome mg = solve("mg.dx", {"--backend", "cpu"});
  ASSERT_EQ(mg.code, 0) << mg;
  EXPECT_NE(mg.out.find("espgrid multigrid-preconditioned CG (on the CPU"), std::string::npos) << mg;
  EXPECT_EQ(mg.out.find("hypre"), std::string::npos) << mg;
  // Refused: hypre on the GPU, and any PB solver for a pair model.
  testing::Outcome r = solve("x.dx", {"--pb-solver", "hypre", "--backend", "cuda"});
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_NE(r.err.find("--pb-solver hypre runs on the CPU: drop --backend cuda"), std::string::npos) << r;
  r = run_cli({"map", "data/fasciculin2.pqr", "-o", (dir / "c.dx").string(), "--pb-solver", "hypre"}, dir);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_NE(r.err.find("--pb-solver applies to --model pb"), std::string::npos) << r;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.dx") || std::filesystem::exists(dir / "c.dx"));
  if (!have_hypre()) GTEST_SKIP() << "no hypre in this build: --pb-solver hypre cannot be compared";
  const testing::Outcome hy = solve("hypre.dx", {"--pb-solver", "hypre"});
  ASSERT_EQ(hy.code, 0) << hy;
  EXPECT_NE(hy.out.find("hypre PCG + PFMG"), std::string::npos) << hy;
  const PotentialMap a = read_dx((dir / "mg.dx").string()), b = read_dx((dir / "hypre.dx").string());
  ASSERT_EQ(a.values.size(), b.values.size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    diff += (double(a.values[i]) - b.values[i]) * (double(a.values[i]) - b.values[i]);
    norm += double(b.values[i]) * b.values[i];
  }
  EXPECT_LT(std::sqrt(diff / norm), 1e-6);
}

// A PB map written in every format reads back as a PB map in every format: the .vti reader knew
// only the pair models, so `espgrid convert x-pb.vti` (and espgrid-render, which reads through
// it) failed on the quickstart's own PB map.
TEST(PbMaps, EveryFormatReadsBackAsAPoissonBoltzmannMap) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pb_formats";
  std::filesystem::create_directories(dir);
  PotentialMap map;
  map.grid = testing::make_test_grid(6, 5, 7);
  map.physics.method = MapMethod::PoissonBoltzmann;
  map.physics.dielectric = 2.0;
  map.physics.pb.solute_dielectric = 2.0;
  map.values.resize(map.grid.point_count());
  for (std::size_t i = 0; i < map.values.size(); ++i) map.values[i] = 0.25f * static_cast<float>(i % 17) - 2.0f;
  for (const char* name : {"m.dx", "m.dx.gz", "m.mrc", "m.vti"}) {
    SCOPED_TRACE(name);
    const std::string path = (dir / name).string();
    write_map(map, path);
    bool unit_known = false;
    const PotentialMap back = read_map(path, &unit_known);
    EXPECT_TRUE(unit_known);
    EXPECT_TRUE(back.physics.is_pb());
    EXPECT_EQ(back.physics.dielectric, 2.0);
    EXPECT_EQ(back.values, map.values);
  }
}

TEST(PbCli, PbOptionsNeedModelPbAndBadValuesAreNamed) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pb_cli_errors";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "x.dx").string();
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--model", "debye", "--ionic-strength", "0.1", "--probe-radius", "1.2"},
       "--probe-radius applies to --model pb"},
      {{"--model", "pb", "--surface", "sas"}, "--surface must be mol, smol, spl2 or spl4"},
      {{"--model", "pb", "--boundary", "focus"}, "--boundary focus interpolates a coarser level's potential"},
      {{"--model", "pb", "--boundary", "mdm"}, "--boundary must be zero, sdh, mdh or focus"},
      {{"--model", "pb", "--charge-method", "spl3"}, "--charge-method must be spl0, spl2 or spl4"},
      {{"--model", "pb", "--charge-method", "spl0", "--pb-formulation", "split"},
       "--charge-method applies to --pb-formulation direct"},
      {{"--model", "pb", "--ion", "1,0.1,2"}, "the species are not electroneutral"},
      {{"--model", "pb", "--ion", "1,0.1"}, "--ion expects Z,C,R"},
      {{"--model", "pb", "--ion", "0,0.1,2", "--ion", "1,0,2"}, "the valence must be a non-zero number"},
      {{"--model", "pb", "--ion", "1,0.1,2", "--ion", "-1,0.1,2", "--ionic-strength", "0.1"},
       "give the ions as --ion species or as --ionic-strength/--ion-radius"},
      {{"--model", "debye", "--ionic-strength", "0.1", "--charge-method", "spl0"},
       "--charge-method applies to --model pb"},
      {{"--model", "pb", "--pb-energy", "all"}, "--pb-energy must be no, total or comps"},
      {{"--model", "pb", "--pb-formulation", "split", "--pb-energy", "total"}, "PB energies are APBS's"},
      {{"--model", "pb", "--pb-equation", "nlpbe"}, "--pb-equation must be lpbe or npbe"},
      {{"--model", "pb", "--ion-radius", "-2"}, "--ion-radius must be"},
      {{"--model", "pb", "--surface-sampling", "1"}, "--surface-sampling must be"},
      {{"--model", "pb", "--pb-formulation", "both"}, "--pb-formulation must be split or direct"},
  };
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"map", "data/fasciculin2.pqr", "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::Outcome r = run_cli(args, dir);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_NE(r.err.find(message), std::string::npos) << r;
  }
  // An explicit grid that cuts through the molecule: the atom is named, nothing is written.
  const testing::Outcome r =
      run_cli({"map", "data/fasciculin2.pqr", "-o", out, "--model", "pb", "--origin", "0,0,0", "--dims", "9,9,9"}, dir);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_NE(r.err.find("needs every atom at least two grid spacings inside the grid; atom 1 "), std::string::npos) << r;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace espgrid
