// PB at scale (issue 33): the device pipeline's algorithms (src/pb_numerics/pb_pipeline_math.h) run by their
// CPU emulation against the host's builders, bit for bit (SAS neighbour lists, the surface, the
// spread charges, the assembled system, the map); the memory plan and its refusals; and, on a GPU,
// the pipeline against the all-on-device path it replaces. The CUDA cases skip without a GPU
// (ESPGRID_REQUIRE_GPU=1 makes them fail instead).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <sys/resource.h>
#include <utility>
#include <vector>

#include "src/compute/point_sum_inputs.h"
#include "src/compute/points_cuda_driver.h"
#include "src/core/errors.h"
#include "src/pb/pb_boundary.h"
#include "src/pb/pb_face_sums.h"
#include "src/pb/pb_limits.h"
#include "src/pb/pb_memory.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_pipeline.h"
#include "src/pb/pb_slabs.h"
#include "src/pb/pb_solve.h"
#include "src/pb_surface/pb_charges.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/physics/physics_options.h"
#include "src/registry/kernel_registry.h"
#include "tests/pb_test_support.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

using testing::grid_around;

/// `count` atoms of radius 0–2.2 Å (some without one) and charge ±0.9 e in a 14 Å ball, some
/// placed exactly on nodes of a 0.5 Å lattice (integer fractional indices: spl0's and the B-splines'
/// edge cases).
Atoms random_molecule(unsigned seed, std::size_t count) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1), radius(0.8, 2.2), charge(-0.9, 0.9);
  Atoms atoms;
  while (atoms.size() < count) {
    double x = 7 * u(rng), y = 7 * u(rng), z = 7 * u(rng);
    if (x * x + y * y + z * z > 49) continue;
    if (atoms.size() % 7 == 0) x = std::round(x * 2) / 2, y = std::round(y * 2) / 2, z = std::round(z * 2) / 2;
    atoms.push_back(x - 4.25, y + 1.5, z + 30.0, charge(rng), atoms.size() % 11 == 5 ? 0.0 : radius(rng));
  }
  return atoms;
}

int charge_code(PbChargeMethod m) { return m == PbChargeMethod::Spl0 ? 0 : (m == PbChargeMethod::Spl2 ? 1 : 2); }

// ---- the boundary by distance bands (pb_face_sums.h) ----------------------------------------------

/// The exact mdh face values and the banded ones at `bound` on `backend`, and the report.
struct BandedFaces {
  std::vector<double> exact, banded;
  pb::FaceSumReport report;
  double largest_difference() const {
    double worst = 0;
    for (std::size_t i = 0; i < exact.size(); ++i) worst = std::max(worst, std::abs(banded[i] - exact[i]));
    return worst;
  }
};

BandedFaces banded_faces(const Atoms& atoms, const GridSpec& g, double bound, Backend backend) {
  PbOptions o;
  RunOptions run;
  const KernelVariant& kernel = default_kernel(backend);
  BandedFaces out;
  o.boundary_accuracy = 0;
  out.exact = pb::face_values(pb::mdh_boundary(atoms, g, o, kernel, run), g);
  o.boundary_accuracy = bound;
  out.banded = pb::face_values(pb::mdh_boundary(atoms, g, o, kernel, run, &out.report), g);
  return out;
}

/// Copies of random_molecule scattered through a box of `extent` Å: atoms at every distance from
/// the faces, so every band is populated.
Atoms scattered_molecules(unsigned seed, int copies, double extent) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> where(0, extent);
  Atoms all;
  for (int c = 0; c < copies; ++c) {
    const Atoms one = random_molecule(seed + static_cast<unsigned>(c), 150);
    const double shift[3] = {where(rng), where(rng), where(rng) - 30.0};
    for (std::size_t a = 0; a < one.size(); ++a)
      all.push_back(one.x[a] + shift[0], one.y[a] + shift[1], one.z[a] + shift[2], one.charge[a], one.radius[a]);
  }
  return all;
}

TEST(PbFaceSums, BandsStayWithinTheBoundOfTheExactSumOnAProtein) {
  const Atoms actin = testing::load_molecule("actin_dimer.pqr");
  const GridSpec g = grid_around(actin, 1.0, 10, 1);  // 114 × 95 × 120: bands from 32 Å
  // The exact sums are float32: with Highway (cpu-simd, lanes summed apart) ~1e-7 relative to the
  // terms, bounds well above that; without it (cpu-parallel, one float running sum an x-sweep) the
  // two sums of different lengths differ by their rounding alone by up to 3.1e-6 kT/e here (measured
  // on an H200 host's build without Highway, 2026-11-28), so 1e-6 is held only where it can be.
  const double rounding = ESPGRID_HAVE_HWY ? 1e-7 : 4e-6;
  for (const double bound : {1e-5, 1e-6}) {
    if (bound < 2 * rounding) {
      std::cout << "bound " << bound << " not checked: the default CPU kernel's float32 sums round to ~" << rounding
                << " kT/e (a build without Highway)\n";
      continue;
    }
    const BandedFaces f = banded_faces(actin, g, bound, Backend::Cpu);
    EXPECT_LE(f.largest_difference(), bound) << "bound " << bound;
    EXPECT_LE(f.report.measured_error, bound);
    EXPECT_GT(f.report.measured_error, 0) << "no lattice was checked: the bands did not run";
    // Fewer terms than the exact sum: the point of the bands (1e-5: 22% measured on this grid).
    EXPECT_LT(f.report.pair_terms, 0.7 * f.report.exact_pair_terms) << "bound " << bound;
    EXPECT_EQ(f.report.exact_pair_terms, static_cast<double>(f.exact.size()) * static_cast<double>(actin.size()));
  }
}

TEST(PbFaceSums, EachFacesBandsHoldTheirAtomsInOrder) {
  // Each sum's atoms are recorded (values 0: every lattice meets the bound, one round); every face's
  // bands must partition the atoms, in order of distance, each band ascending and every atom in the
  // band its distance names (the order the sums add their terms in: the boundary's bits).
  const Atoms atoms = scattered_molecules(19, 700, 160);
  const GridSpec g = grid_around(atoms, 1.0, 10, 3);
  using Lists = std::vector<std::pair<std::array<double, 2>, std::vector<std::uint32_t>>>;  // (normal, level), atoms
  const auto bands = [&] {
    Lists lists;
    const pb::FaceSumEvaluator record = [&](const std::vector<pb::FacePlaneSum>& sums) {
      std::vector<std::vector<double>> values;
      const std::vector<std::uint32_t>* last = nullptr;
      for (const pb::FacePlaneSum& s : sums) {
        if (s.atoms != last) lists.push_back({{static_cast<double>(s.normal), s.level}, *s.atoms});
        last = s.atoms;
        values.emplace_back(static_cast<std::size_t>(s.node_count()), 0.0);
      }
      return values;
    };
    pb::FaceSumReport report;
    pb::banded_face_values(atoms, g, 1e-5, record, &report);
    EXPECT_EQ(report.rounds, 1);
    return lists;
  };
  const Lists lists = bands();
  const double* axis[3] = {atoms.x.data(), atoms.y.data(), atoms.z.data()};
  std::map<std::array<double, 2>, std::vector<int>> seen;  // per face: how often each atom was in a band
  std::map<std::array<double, 2>, double> last_band;
  std::size_t far_bands = 0;
  for (const auto& [face, list] : lists) {
    const int normal = static_cast<int>(face[0]);
    const double near = pb::kNearBandNodes * std::max(g.spacing[normal == 0 ? 1 : 0], g.spacing[normal == 2 ? 1 : 2]);
    std::vector<int>& count = seen[face];
    count.resize(atoms.size(), 0);
    ASSERT_FALSE(list.empty());
    double band = -1;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::uint32_t a = list[i];
      if (i > 0) EXPECT_LT(list[i - 1], a) << "a band's atoms out of order";
      ++count[a];
      const double rho = std::abs(axis[normal][a] - face[1]);
      const double k = rho < near ? 0.0 : 1.0 + std::floor(std::log2(rho / near));
      if (i == 0) band = k;
      EXPECT_EQ(k, band) << "atom " << a << " in the wrong band";
    }
    if (last_band.count(face)) EXPECT_GT(band, last_band[face]) << "a face's bands out of order";
    last_band[face] = band;
    far_bands += band > 0 ? 1 : 0;
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_GT(far_bands, 6u) << "no far bands: the test checks little";
  for (const auto& [face, count] : seen)
    for (std::size_t a = 0; a < atoms.size(); ++a) ASSERT_EQ(count[a], 1) << "atom " << a << " on a face";
}

/// The banded boundary's values with `sum` standing in for the direct sums: each plane's values a
/// smooth function of its nodes' positions (lattices then meet the bound) plus its face's constant.
std::vector<double> faked_bands(const Atoms& atoms, const GridSpec& g, int threads, pb::FaceSumReport* report,
                                double (*value)(int normal, double level, double u, double v, std::size_t atoms)) {
  const pb::FaceSumEvaluator sum = [&](const std::vector<pb::FacePlaneSum>& sums) {
    std::vector<std::vector<double>> out;
    for (const pb::FacePlaneSum& s : sums) {
      std::vector<double>& values = out.emplace_back();
      for (std::int64_t j = 0; j < s.dims[1]; ++j)
        for (std::int64_t i = 0; i < s.dims[0]; ++i)
          values.push_back(value(s.normal, s.level, s.origin[0] + static_cast<double>(i) * s.spacing[0],
                                 s.origin[1] + static_cast<double>(j) * s.spacing[1], s.atoms->size()));
    }
    return out;
  };
  return pb::banded_face_values(atoms, g, 1e-5, sum, report, threads);
}

TEST(PbFaceSums, TheFacesValuesAreTheSameOnAnyNumberOfThreads) {
  // The faces' rows are interpolated and put in order on the threads; each node's bands are added in
  // the same order whatever their number, so the values are the same bits (fails when the rows of a
  // face are split wrongly or a band is added twice).
  const Atoms atoms = scattered_molecules(23, 40, 150);
  GridSpec g = grid_around(atoms, 1.0, 10, 3);
  g.spacing = {1.0, 1.3, 0.8};
  const auto smooth = [](int normal, double level, double u, double v, std::size_t n) {
    return std::sin(0.011 * u + 1e-4 * static_cast<double>(n)) * std::cos(0.017 * v) + 1e-3 * level + normal;
  };
  pb::FaceSumReport report;
  const std::vector<double> one = faked_bands(atoms, g, 1, &report, smooth);
  EXPECT_GT(report.measured_error, 0) << "no lattice was interpolated";
  EXPECT_GT(report.rounds, 1) << "no lattice was refined: the centres' errors are checked little";
  for (const int threads : {2, 3, 8}) {
    // The centres' errors are measured on the threads too: the same largest error, the same refinement.
    pb::FaceSumReport on_more;
    EXPECT_EQ(faked_bands(atoms, g, threads, &on_more, smooth), one) << threads;
    EXPECT_EQ(on_more.measured_error, report.measured_error) << threads;
    EXPECT_EQ(on_more.rounds, report.rounds) << threads;
  }
}

TEST(PbFaceSums, SplitSumsGivesEachSumItsValuesOnAnyNumberOfThreads) {
  // One array of every sum's floats (the device's) split into a vector a sum, largest first on the
  // threads: each sum's values in order, as doubles, whatever the thread count.
  const std::vector<std::uint32_t> atoms = {0};
  std::vector<pb::FacePlaneSum> sums;
  for (const std::array<std::int64_t, 2> dims :
       {std::array<std::int64_t, 2>{3, 2}, {40, 31}, {1, 1}, {7, 90}, {2, 2}}) {
    pb::FacePlaneSum& s = sums.emplace_back();
    s.dims = dims;
    s.atoms = &atoms;
  }
  std::vector<float> values;
  for (const pb::FacePlaneSum& s : sums)
    for (std::size_t i = 0; i < s.node_count(); ++i) values.push_back(0.1f * static_cast<float>(values.size()) - 7.0f);
  std::vector<std::vector<double>> expected;
  std::size_t first = 0;
  for (const pb::FacePlaneSum& s : sums) {
    expected.emplace_back(values.begin() + static_cast<std::ptrdiff_t>(first),
                          values.begin() + static_cast<std::ptrdiff_t>(first + s.node_count()));
    first += s.node_count();
  }
  for (const int threads : {1, 2, 3, 8}) EXPECT_EQ(pb::split_sums(sums, values.data(), threads), expected) << threads;
  EXPECT_TRUE(pb::split_sums<float>({}, nullptr, 2).empty());
}

TEST(PbFaceSums, AnEdgeNodeTakesTheValueOfItsZThenYFace) {
  // Each face's sums hold a constant of their own (x faces 1 and 2, y 10 and 20, z 100 and 200): a
  // node's value is its face's constant times that face's bands (interpolating a constant rounds to
  // ~1e-15), and on an edge the z face's, else the y face's, as boundary_nodes' readers expect.
  const Atoms atoms = scattered_molecules(29, 20, 120);
  const GridSpec g = grid_around(atoms, 1.0, 10, 3);
  const auto constant = [](int normal, double level, double, double, std::size_t) {
    return std::pow(10.0, normal) * (level > 0 ? 2.0 : 1.0);
  };
  const std::vector<double> values = faked_bands(atoms, g, 3, nullptr, constant);
  const long n[3] = {static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])};
  ASSERT_GT(g.origin[2] + g.spacing[2] * static_cast<double>(n[2] - 1), 0) << "the far z face must lie at z > 0";
  ASSERT_LT(g.origin[2], 0) << "the near z face must lie at z < 0";
  // Each face's band count: its value at the face's middle node over its constant.
  std::map<std::pair<int, bool>, double> bands_of;
  for (int d = 0; d < 3; ++d)
    for (const bool far : {false, true}) {
      long at[3] = {n[0] / 2, n[1] / 2, n[2] / 2};
      at[d] = far ? n[d] - 1 : 0;
      const double v = values[static_cast<std::size_t>(pb::face_index(n, at[0], at[1], at[2]))];
      const double count = std::round(v / (std::pow(10.0, d) * (far ? 2.0 : 1.0)));
      ASSERT_GE(count, 1.0);
      bands_of[std::make_pair(d, far)] = count;
    }
  std::size_t edges = 0;
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        if (!pb::on_faces(n, i, j, k)) continue;
        const long at[3] = {i, j, k};
        int owner = 2;
        if (k != 0 && k != n[2] - 1) owner = (j == 0 || j == n[1] - 1) ? 1 : 0;
        const bool far = at[owner] == n[owner] - 1;
        const double c = std::pow(10.0, owner) * (far ? 2.0 : 1.0);
        const double v = values[static_cast<std::size_t>(pb::face_index(n, i, j, k))];
        const double expected = bands_of[std::make_pair(owner, far)] * c;
        ASSERT_NEAR(v, expected, 1e-9 * c) << "node " << i << " " << j << " " << k << " not its face's";
        edges += (i == 0 || i == n[0] - 1) + (j == 0 || j == n[1] - 1) + (k == 0 || k == n[2] - 1) > 1 ? 1 : 0;
      }
  EXPECT_GT(edges, 0u);
}

TEST(PbFaceSums, AFaceOverItsBoundIsRefinedUntilItHolds) {
  // Molecules everywhere in a 140 Å box on an anisotropic grid: near and far bands on every face,
  // and a bound tight enough that first lattices fail and are halved (more than one round).
  const Atoms atoms = scattered_molecules(7, 12, 120);
  GridSpec g = grid_around(atoms, 1.0, 10, 3);
  g.spacing = {1.0, 1.3, 0.8};
  // Its faces reach 11 kT/e: float32 sums carry ~4e-6 kT/e of rounding there, so no bound below that.
  for (const double bound : {1e-3, 1e-5}) {
    const BandedFaces f = banded_faces(atoms, g, bound, Backend::Cpu);
    EXPECT_LE(f.largest_difference(), bound) << "bound " << bound;
    EXPECT_LE(f.report.measured_error, bound);
    if (bound < 1e-4) EXPECT_GT(f.report.rounds, 1) << "the tight bound never refined a lattice";
    EXPECT_LT(f.report.pair_terms, f.report.exact_pair_terms * 1.2);
  }
}

TEST(PbFaceSums, TheMapsErrorIsAtMostTheFaces) {
  // The discrete maximum principle: two solves that differ only in their face values differ
  // nowhere by more than the faces do (solved to 1e-10 so the solver's own error is far below).
  const Atoms atoms = random_molecule(11, 60);
  const GridSpec g = grid_around(atoms, 0.5, 10, 1);  // 16 Å near band: half the atoms beyond it
  PbOptions o;
  o.tolerance = 1e-10;
  PbRun run;
  run.solver = PbSolver::CpuMultigrid;
  run.keep_potential = true;
  o.boundary_accuracy = 0;
  const PbResult exact = solve_pb(atoms, g, o, run);
  o.boundary_accuracy = 1e-3;  // loose, so the difference stands well above the solver's
  const PbResult banded = solve_pb(atoms, g, o, run);
  ASSERT_GT(banded.boundary.rounds, 0);
  ASSERT_GT(banded.boundary.measured_error, 1e-7) << "nothing approximated: the test would prove nothing";
  double worst = 0;
  for (std::size_t i = 0; i < exact.potential.size(); ++i)
    worst = std::max(worst, std::abs(banded.potential[i] - exact.potential[i]));
  EXPECT_LE(worst, o.boundary_accuracy);
  EXPECT_LE(worst, 1.01 * banded.boundary.measured_error + 1e-9) << "the map differs more than the faces";
  EXPECT_NE(banded.direct_sum.find("faces by distance bands"), std::string::npos) << banded.direct_sum;
  EXPECT_EQ(exact.direct_sum.find("distance bands"), std::string::npos) << exact.direct_sum;
}

TEST(PbFaceSumsGpu, PlaneGroupsAreThePointKernelsSums) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  // Groups of awkward sizes: 1 point, 127, 129, 70,000 (a wide group: one slice); 1 atom, 8,192
  // (one slice), 20,000 (three); two groups sharing one atom list (a lattice and its centres);
  // indices in no order; planes along every pair of axes.
  const Atoms atoms = scattered_molecules(3, 140, 90);  // 21,000 atoms
  const std::size_t shapes[][3] = {{1, 1, 1},      {127, 8192, 13}, {129, 20000, 40},
                                   {300, 150, 17}, {5, 20999, 2},   {70000, 3000, 280}};
  PhysicsOptions physics;
  physics.model = PairModel::Debye;
  physics.ionic_strength = 0.15;
  const PlaneGroupInputs inputs(atoms.x, atoms.y, atoms.z, atoms.charge, coulomb_factor(physics), {45, 45, 15});
  const std::vector<float>& xyzq = inputs.xyzq;
  std::vector<std::vector<std::uint32_t>> lists(std::size(shapes));
  std::vector<cuda::PlaneGroup> groups;
  std::size_t points = 0;
  for (std::size_t g = 0; g < std::size(shapes); ++g) {
    for (std::size_t a = 0; a < shapes[g][1]; ++a)
      lists[g].push_back(static_cast<std::uint32_t>((a * 7919 + g) % atoms.size()));
    cuda::PlaneGroup plane;
    const std::vector<std::uint32_t>& list = g == 4 ? lists[3] : lists[g];  // group 4 shares group 3's atoms
    plane.atoms = list.data();
    plane.atom_count = list.size();
    plane.point_count = shapes[g][0];
    plane.dims_u = shapes[g][2];
    plane.origin[0] = -60.5f + static_cast<float>(g), plane.origin[1] = -58.25f, plane.origin[2] = 47.0f;
    plane.step_u[g % 3] = 0.7f;
    plane.step_v[(g + 1) % 3] = 1.3f;
    groups.push_back(plane);
    points += plane.point_count;
  }
  std::vector<float> grouped(points, std::numeric_limits<float>::quiet_NaN());
  const cuda::PlaneGroupProblem problem =
      inputs.problem(physics.model, pair_parameters(physics), groups, grouped.data());
  cuda::potential_on_plane_groups(problem, 0);
  std::size_t first = 0;
  for (const cuda::PlaneGroup& g : groups) {
    std::vector<float> gx, gy, gz, gq, px, py, pz, alone(g.point_count, std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < g.atom_count; ++i) {
      const float* atom = &xyzq[4 * g.atoms[i]];
      gx.push_back(atom[0]), gy.push_back(atom[1]), gz.push_back(atom[2]), gq.push_back(atom[3]);
    }
    for (std::size_t p = 0; p < g.point_count; ++p) {
      const auto a = static_cast<float>(p % g.dims_u), b = static_cast<float>(p / g.dims_u);
      px.push_back(g.origin[0] + a * g.step_u[0] + b * g.step_v[0]);
      py.push_back(g.origin[1] + a * g.step_u[1] + b * g.step_v[1]);
      pz.push_back(g.origin[2] + a * g.step_u[2] + b * g.step_v[2]);
    }
    const cuda::PointSumProblem one{gx.data(),     gy.data(),    gz.data(),   gq.data(), gx.size(),
                                    px.data(),     py.data(),    pz.data(),   px.size(), problem.softening2,
                                    physics.model, problem.pair, alone.data()};
    cuda::potential_at_points(one, 0, nullptr);
    for (std::size_t p = 0; p<g.point_count; p += g.point_count> 1000 ? 97 : 1) {
      // Slices add the same terms in another order, and the device may round a node's position
      // differently (a fused multiply-add): float32 rounding, n·2⁻²⁴ of Σ|term| at worst (n ≤
      // 20,999); 1e-5 of Σ|term| covers the orders actually taken (~√n·2⁻²⁴) and 1 ulp of position.
      double magnitude = 0;
      for (std::size_t a = 0; a < gx.size(); ++a) {
        const double dx = px[p] - gx[a], dy = py[p] - gy[a], dz = pz[p] - gz[a];
        magnitude += std::abs(gq[a]) / std::sqrt(dx * dx + dy * dy + dz * dz + 1e-8);
      }
      ASSERT_TRUE(std::isfinite(grouped[first + p])) << "point " << p << " left unwritten";
      EXPECT_NEAR(grouped[first + p], alone[p], 1e-5 * magnitude) << "group of " << g.point_count;
    }
    first += g.point_count;
  }
}

TEST(PbFaceSumsGpu, BandsStayWithinTheBoundOnTheDevice) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  // Below kDeviceBandTerms the device sums exactly (the actin dimer at 1 Å: 8·10⁸ terms).
  const Atoms actin = testing::load_molecule("actin_dimer.pqr");
  EXPECT_EQ(banded_faces(actin, grid_around(actin, 1.0, 10), 1e-5, Backend::Cuda).report.rounds, 0);
  // Over it: 45,000 atoms in a 290 Å box at 1 Å (2.3·10¹⁰ terms).
  const Atoms atoms = scattered_molecules(9, 300, 260);
  const GridSpec g = grid_around(atoms, 1.0, 10, 1);
  const BandedFaces f = banded_faces(atoms, g, 1e-5, Backend::Cuda);
  ASSERT_GE(f.report.exact_pair_terms, pb::kDeviceBandTerms);
  EXPECT_LT(f.report.pair_terms, 0.5 * f.report.exact_pair_terms);
  // Where the two differ most, the double-precision sum decides: the float32 exact sum over 45,000
  // atoms carries rounding of its own (on the 1.9 M-atom capsid more than the bands' error).
  const std::vector<std::size_t> nodes = pb::boundary_nodes(g);
  std::vector<std::size_t> order(nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::partial_sort(order.begin(), order.begin() + 20, order.end(), [&](std::size_t a, std::size_t b) {
    return std::abs(f.banded[a] - f.exact[a]) > std::abs(f.banded[b] - f.exact[b]);
  });
  const auto n0 = static_cast<std::size_t>(g.dims[0]), n1 = static_cast<std::size_t>(g.dims[1]);
  for (std::size_t t = 0; t < 20; ++t) {
    const std::size_t idx = nodes[order[t]];
    const std::array<double, 3> p = {g.position(0, static_cast<std::int64_t>(idx % n0)),
                                     g.position(1, static_cast<std::int64_t>((idx / n0) % n1)),
                                     g.position(2, static_cast<std::int64_t>(idx / (n0 * n1)))};
    const double reference = pb::mdh_reference(atoms, PbOptions{}, p);
    EXPECT_LE(std::abs(f.banded[order[t]] - reference), 1e-5)
        << "node " << idx << ": exact float32 sum " << f.exact[order[t]] << ", double " << reference;
  }
}

// ---- the per-item arithmetic --------------------------------------------------------------------

TEST(PbPipelineMath, FaceIndexFollowsTheBoundaryNodesOrder) {
  for (const auto& dims : {std::array<std::int64_t, 3>{5, 5, 5}, {7, 6, 9}, {33, 17, 5}, {6, 31, 8}}) {
    GridSpec g;
    g.dims = dims;
    g.spacing = {1, 1, 1};
    const long n[3] = {static_cast<long>(dims[0]), static_cast<long>(dims[1]), static_cast<long>(dims[2])};
    const std::vector<std::size_t> nodes = pb::boundary_nodes(g);
    ASSERT_EQ(static_cast<long>(nodes.size()), pb::face_node_count(n));
    for (std::size_t f = 0; f < nodes.size(); ++f) {
      const long idx = static_cast<long>(nodes[f]);
      const long i = idx % n[0], j = (idx / n[0]) % n[1], k = idx / (n[0] * n[1]);
      ASSERT_TRUE(pb::on_faces(n, i, j, k));
      ASSERT_EQ(pb::face_index(n, i, j, k), static_cast<long>(f)) << i << "," << j << "," << k;
    }
  }
}

TEST(PbPipelineMath, QuarticBSplineIsTheHostsAndPartitionsUnity) {
  // pb::bspline4 now returns the shared function; the partition of unity is the B-spline's own test.
  for (double f = 0.0; f < 1.0; f += 0.0625) {
    double sum = 0;
    for (int i = -3; i <= 3; ++i) sum += pb::bspline4_weight(2.5 + i - f);
    EXPECT_NEAR(sum, 1.0, 1e-14) << f;
    EXPECT_EQ(pb::bspline4(2.5 - f), pb::bspline4_weight(2.5 - f));
  }
}

TEST(PbPipelineMath, ChargeOnMeshIsTheHostsTest) {
  // The atom bins leave out exactly the atoms pb::spread_charges leaves out: the same test, here
  // at and around the margins of each method (exact multiples of the spacing included).
  GridSpec g;
  g.dims = {9, 7, 8};
  g.spacing = {0.5, 0.75, 1.0};
  g.origin = {-1.0, 2.0, 0.25};
  const long n[3] = {9, 7, 8};
  for (const PbChargeMethod m : {PbChargeMethod::Spl0, PbChargeMethod::Spl2, PbChargeMethod::Spl4})
    for (double x = -3.0; x <= 4.0; x += 0.125)
      for (double z = -2.5; z <= 10.5; z += 0.25) {
        const double y = 4.0;
        EXPECT_EQ(pb::charge_on_mesh(g.origin.data(), g.spacing.data(), n, charge_code(m), x, y, z),
                  pb::charge_on_grid(x, y, z, g, m))
            << x << " " << z;
      }
}

TEST(PbPipelineMath, ConductanceTableOfMolIsTheTwoDielectrics) {
  const Atoms atoms = testing::load_molecule("fasciculin2.pqr");
  GridSpec g = grid_around(atoms, 0.9, 6);
  g.spacing = {0.9, 0.8, 1.1};
  PbOptions o;
  o.surface = PbSurface::Mol;
  const std::vector<double> t = pb::conductance_table(g, o);
  const pb::AssemblyArgs a = pb::assembly_args(g, o, false);
  for (int d = 0; d < 3; ++d)
    for (unsigned p = 0; p < pb::kPatterns; ++p)
      EXPECT_EQ(t[d * pb::kPatterns + p], ((p & 1u) ? o.solute_dielectric : o.solvent_dielectric) * a.geo[d]);
}

// ---- the emulation against the host's builders ---------------------------------------------------

TEST(PbPipelineEmulation, NeighbourListsAreTheHosts) {
  // The device's search (its own cell list, count, fill, sort) gives the host's lists entry for entry.
  for (const Atoms& atoms : {testing::load_molecule("fasciculin2.pqr"), random_molecule(5, 300)}) {
    for (const double probe : {1.4, 0.0, 2.1}) {
      PbOptions o;
      o.probe_radius = probe;
      const GridSpec g = grid_around(atoms, 1.0, 7);
      const pb::SasNeighbours host = pb::sas_neighbours(atoms, o);
      const pb::PipelineEmulation e =
          pb::emulate_pipeline(atoms, g, o, std::vector<double>(pb::boundary_nodes(g).size(), 0.0));
      EXPECT_EQ(e.neighbours.start, host.start) << atoms.size() << " atoms, probe " << probe;
      EXPECT_EQ(e.neighbours.atoms, host.atoms) << atoms.size() << " atoms, probe " << probe;
      EXPECT_GT(host.atoms.size(), atoms.size()) << "a test that searches nothing";
    }
  }
}

/// The emulated system (surface, charges, assembly from the codes and the face values) equals
/// assemble_system's from the host's maps, bit for bit.
void expect_system_is_the_hosts(const Atoms& atoms, const GridSpec& g, const PbOptions& o, const std::string& what) {
  const pb::PbCoefficients c = pb::build_coefficients(atoms, g, o, true, 0);
  const std::vector<double> boundary = pb::sdh_boundary(atoms, g, o);  // any values: they are moved in exactly
  const pb::PbSystem host = pb::assemble_system(c, boundary, o, PbFormulation::Direct, nullptr, 0);
  const pb::PipelineEmulation e = pb::emulate_pipeline(atoms, g, o, pb::face_values(boundary, g));
  EXPECT_EQ(e.charge, c.charge) << what;
  EXPECT_EQ(e.sas_points, c.sas_points) << what;
  EXPECT_EQ(e.system.wx, host.wx) << what;
  EXPECT_EQ(e.system.wy, host.wy) << what;
  EXPECT_EQ(e.system.wz, host.wz) << what;
  EXPECT_EQ(e.system.c, host.c) << what;
  EXPECT_EQ(e.system.rhs, host.rhs) << what;
  EXPECT_EQ(e.system.fixed, host.fixed) << what;
  double charge = 0;
  for (const double q : c.charge) charge += std::fabs(q);
  EXPECT_GT(charge, 0.1) << what << ": a test with no charge on the grid";
}

TEST(PbPipelineEmulation, SystemIsTheHostsForEverySurfaceChargeMethodAndSalt) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.85, 7, 1);
  for (const PbSurface s : {PbSurface::Smol, PbSurface::Mol})
    for (const double salt : {0.15, 0.0})
      for (const PbChargeMethod m : {PbChargeMethod::Spl2, PbChargeMethod::Spl0, PbChargeMethod::Spl4}) {
        PbOptions o;
        o.surface = s;
        o.ionic_strength = salt;
        o.charges = m;
        o.boundary = PbBoundary::Sdh;
        expect_system_is_the_hosts(fas, g, o,
                                   surface_name(s) + " I " + std::to_string(salt) + " " + charge_method_name(m));
      }
}

TEST(PbPipelineEmulation, SystemIsTheHostsOnFineAnisotropicGridsWithOddAtoms) {
  // Atoms on nodes (integer fractional indices), atoms without radius, unequal spacings, a wide
  // probe and ion radius: the places where a gather could differ from the host's scatter.
  const Atoms atoms = random_molecule(17, 120);
  GridSpec g = grid_around(atoms, 0.5, 6, 2);
  g.spacing = {0.5, 0.45, 0.6};
  for (const PbChargeMethod m : {PbChargeMethod::Spl0, PbChargeMethod::Spl2, PbChargeMethod::Spl4}) {
    PbOptions o;
    o.charges = m;
    o.probe_radius = 1.7;
    o.ion_radius = 2.4;
    o.boundary = PbBoundary::Sdh;
    expect_system_is_the_hosts(atoms, g, o, "random, " + charge_method_name(m));
  }
}

TEST(PbPipelineEmulation, MapIsTheHostPathsMap) {
  // The same system, the same solver (the CUDA multigrid's emulation): the same map, bit for bit.
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 1.0, 7);
  PbOptions o;
  o.boundary = PbBoundary::Sdh;
  PbRun run;
  run.solver = PbSolver::CpuMultigrid;
  const PbResult host = solve_pb(fas, g, o, run);
  const std::vector<double> boundary = pb::sdh_boundary(fas, g, o);
  const pb::PipelineEmulation e = pb::emulate_pipeline(fas, g, o, pb::face_values(boundary, g));
  std::vector<double> u;
  const pb::SolveReport r = pb::solve_multigrid_cpu(e.system, u, o.tolerance, o.max_iterations);
  const std::vector<double> phi = pb::combine(e.system, u, nullptr);
  ASSERT_EQ(phi.size(), host.values.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < phi.size(); ++i) differ += static_cast<float>(phi[i]) != host.values[i];
  EXPECT_EQ(differ, 0u);
  EXPECT_EQ(r.iterations, host.solve.iterations);
}

TEST(PbPipelineEmulation, FloatCycleTakesTheDoubleCyclesIterationsAndMap) {
  // The device pipeline's V-cycle stores in float (kernels/pb/pb_lean_solver.cuh); its CPU emulation
  // (MgSettings::float_cycle) against the double cycle on the pipeline's system. Bounds as the GPU test
  // FloatCycleGivesTheDoubleCyclesMapInLessMemory: at 1e-10 both within ~κ·1e-10 ≈ 1e-7 of the answer
  // (allowed 1e-6), at 1e-6 the same iterations and 1e-8 (measured 9.4e-13 here, 2026-11-29).
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 1.0, 7);
  PbOptions o;
  o.boundary = PbBoundary::Sdh;
  const pb::PipelineEmulation e = pb::emulate_pipeline(fas, g, o, pb::face_values(pb::sdh_boundary(fas, g, o), g));
  pb::MgSettings single;
  single.float_cycle = true;
  for (const double tolerance : {1e-6, 1e-10}) {
    std::vector<double> u_double, u_float;
    const pb::SolveReport d = pb::solve_multigrid_cpu(e.system, u_double, tolerance, 500);
    const pb::SolveReport f = pb::solve_multigrid_cpu(e.system, u_float, tolerance, 500, single);
    const double rms = testing::relative_rms(u_float, u_double);
    EXPECT_LE(f.relative_residual, tolerance) << tolerance;
    EXPECT_GT(rms, 0.0) << tolerance << ": the float cycle changed nothing (is it running?)";
    if (tolerance < 1e-8) {
      EXPECT_NEAR(f.iterations, d.iterations, 1) << tolerance;
      EXPECT_LE(rms, 1e-6) << tolerance;
    } else {
      EXPECT_EQ(f.iterations, d.iterations) << tolerance;
      EXPECT_LE(rms, 1e-8) << tolerance;
    }
    std::cout << "[ float    ] CPU emulation, tolerance " << tolerance << ": " << d.iterations << " -> " << f.iterations
              << " iterations, relative RMS " << rms << "\n";
  }
}

TEST(PbPipelineEnergy, FixedChargeSumGivesApbsTotal) {
  // APBS's lpbe total is ½ qf whatever qf's source; the device's sum enters as the host's does.
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 1.1, 7);
  PbOptions o;
  o.energy.level = PbEnergyLevel::Total;
  PbRun run;
  run.solver = PbSolver::CpuMultigrid;
  run.keep_potential = true;
  const PbResult r = solve_pb(fas, g, o, run);
  const std::vector<double> charge = pb::spread_charges(fas, g, o.charges);
  double qf = 0;
  for (std::size_t i = 0; i < charge.size(); ++i) qf += r.potential[i] * charge[i];
  const pb::PbEnergyTerms from{1.5, 0.25, -0.5};
  const pb::PbEnergy e = pb::energy_from_fixed_charge(o, PbEnergyLevel::Total, qf, from);
  EXPECT_DOUBLE_EQ(e.total, 0.5 * (qf + 1.5));
  EXPECT_DOUBLE_EQ(r.energy.total, 0.5 * qf);
  EXPECT_EQ(e.terms.mobile_charge, 0.25);
  EXPECT_EQ(pb::energy_from_fixed_charge(o, PbEnergyLevel::None, qf, from).total, 0.0);
}

// ---- memory ----------------------------------------------------------------------------------

TEST(PbMemory, DevicePipelineNeedsAtMost64BytesAPoint) {
  // A big grid around a small molecule: the per-point share decides (the atoms' is negligible).
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.25, 12);
  const pb::PbMemoryPlan plan = pb::pb_memory_plan(fas, g, PbOptions{}, pb::PbHostPlan::Gpu);
  ASSERT_EQ(plan.path, pb::PbMemoryPath::Pipeline);
  EXPECT_LE(plan.device_bytes / plan.points, 64.0) << plan.describe();
  EXPECT_GE(plan.device_bytes / plan.points, 44.0) << "the codes and five vectors at least: " << plan.describe();
  EXPECT_LE(plan.host_bytes / plan.points, 16.0) << plan.describe();
  // The path it replaces needs about twice as much.
  PbOptions split;
  split.formulation = PbFormulation::Split;
  const pb::PbMemoryPlan old = pb::pb_memory_plan(fas, g, split, pb::PbHostPlan::Gpu);
  EXPECT_EQ(old.path, pb::PbMemoryPath::DeviceMaps);
  EXPECT_GT(old.device_bytes / old.points, 120.0) << old.describe();
}

TEST(PbMemory, ARanksSlabHoldsItsShareOfTheDevicesPart) {
  // Under mpirun with a GPU a rank, each rank's device holds its slab (its planes and a halo plane at
  // each cut): the shares add up to the whole plus the halos, none exceeds the whole, and the host's
  // part (each rank holds the whole map) is not divided.
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.5, 10);
  const pb::PbMemoryPlan plan = pb::pb_memory_plan(fas, g, PbOptions{}, pb::PbHostPlan::Gpu);
  const double planes = static_cast<double>(g.dims[2]);
  for (const int ranks : {1, 2, 3, 5}) {
    double sum = 0;
    for (int r = 0; r < ranks; ++r) {
      const pb::PbMemoryPlan share = pb::rank_slab_share(plan, g, ranks, r);
      EXPECT_LE(share.device_bytes, plan.device_bytes);
      EXPECT_EQ(share.host_bytes, plan.host_bytes);
      sum += share.device_bytes;
    }
    const double halos = ranks == 1 ? 0.0 : 2.0 * ranks;  // at most two halo planes a slab
    EXPECT_GE(sum, plan.device_bytes * (ranks == 1 ? 1.0 : 1.0 + 1.0 / planes)) << ranks << " ranks";
    EXPECT_LE(sum, plan.device_bytes * (1.0 + halos / planes) + 1.0) << ranks << " ranks";
    if (ranks > 1) EXPECT_LT(pb::rank_slab_share(plan, g, ranks, 0).device_bytes, 0.75 * plan.device_bytes);
  }
}

TEST(PbSlabs, WhatTheRanksGpusCannotSplitIsRefusedNamingTheWayOut) {
  // The ranks' GPUs run the device pipeline, a slab of at least kMinSlabPlanes z-planes a rank, and give
  // back the map (and the spl2 total energy) only; each refusal says what to do instead.
  GridSpec g;
  g.dims = {40, 40, 3 * pb::kMinSlabPlanes};
  pb::PbRankLink three;
  three.ranks = 3;
  const auto refusal = [&](std::size_t devices, const pb::PbRankLink* ranks, bool pipeline, bool potential) {
    try {
      pb::check_split_plan(g, devices, ranks, pipeline, potential);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refusal(1, &three, true, false), "");
  EXPECT_EQ(refusal(1, nullptr, false, true), "") << "one process: nothing to split";
  EXPECT_NE(refusal(1, &three, false, false).find("--backend cpu"), std::string::npos);
  EXPECT_NE(refusal(1, &three, true, true).find("the map only"), std::string::npos);
  EXPECT_NE(refusal(2, &three, true, false).find("--device N"), std::string::npos);
  EXPECT_NE(refusal(2, nullptr, false, false).find("--device N"), std::string::npos);
  g.dims[2] = 3 * pb::kMinSlabPlanes - 1;  // two slabs' worth for three ranks
  EXPECT_NE(refusal(1, &three, true, false).find("use at most 2 ranks"), std::string::npos)
      << refusal(1, &three, true, false);
}

TEST(PbMemory, TheEarlyCheckCountsTheDevicePipelinesHostShare) {
  // Before the atoms are read, options the device pipeline runs count its 12 B a point on the host
  // (the float map, φ in double), not the hybrid path's 168: a 2·10⁹-point grid split over two GPUs
  // needs ~24 GB of the host, not ~330 GB. The other paths keep their estimates.
  GridSpec g;
  g.dims = {1000, 1000, 1000};
  PbOptions o;
  EXPECT_DOUBLE_EQ(pb::pb_host_bytes(g, o, pb::PbHostPlan::Gpu), 12e9);
  o.equation = PbEquation::Nonlinear;
  EXPECT_GE(pb::pb_host_bytes(g, o, pb::PbHostPlan::Gpu), 168e9);
  o = PbOptions{};
  o.surface = PbSurface::Spline;
  EXPECT_GE(pb::pb_host_bytes(g, o, pb::PbHostPlan::Gpu), 168e9);
  EXPECT_GE(pb::pb_host_bytes(g, PbOptions{}, pb::PbHostPlan::Hypre), 300e9);  // hypre's
  // measured 191-193 B a point (fasciculin-2 at 0.6, 0.45 and 0.35 A, 2026-11-29: the slope of the peaks)
  EXPECT_GE(pb::pb_host_bytes(g, PbOptions{}, pb::PbHostPlan::CpuMultigrid), 193e9);
}

TEST(PbMemory, WhatDoesNotFitIsRefusedNamingTheNeedAndTheRemedy) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.5, 10);
  const pb::PbMemoryPlan plan = pb::pb_memory_plan(fas, g, PbOptions{}, pb::PbHostPlan::Gpu);
  const std::size_t gib = std::size_t{1} << 30;
  EXPECT_NO_THROW(pb::check_pb_memory(plan, g, 70 * gib, 80 * gib, "GPU 0", 64 * gib));
  try {
    pb::check_pb_memory(plan, g, std::size_t(plan.device_bytes * 0.8), 80 * gib, "GPU 0", 64 * gib);
    FAIL() << "a device share beyond the free memory was not refused";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("GPU memory"), std::string::npos) << m;
    EXPECT_NE(m.find("bytes a point"), std::string::npos) << m;
    EXPECT_NE(m.find("--spacing"), std::string::npos) << m;
    EXPECT_NE(m.find("GPU 0"), std::string::npos) << m;
  }
  try {
    pb::check_pb_memory(plan, g, 70 * gib, 80 * gib, "GPU 0", std::size_t(plan.host_bytes));
    FAIL() << "a host share beyond 90 % of the available memory was not refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  // The CPU path has no device share, and says to use a GPU when the host is short.
  const pb::PbMemoryPlan cpu = pb::pb_memory_plan(fas, g, PbOptions{}, pb::PbHostPlan::CpuMultigrid);
  EXPECT_EQ(cpu.device_bytes, 0.0);
  // hypre needs its own matrix and levels beside espgrid's system (measured 309 against 204 B a point).
  EXPECT_GT(pb::pb_memory_plan(fas, g, PbOptions{}, pb::PbHostPlan::Hypre).host_bytes, 1.4 * cpu.host_bytes);
  EXPECT_NO_THROW(pb::check_pb_memory(cpu, g, 1, 80 * gib, "", 64 * gib));
  try {
    pb::check_pb_memory(cpu, g, 0, 0, "", std::size_t(cpu.host_bytes));
    FAIL() << "the CPU path's host share was not checked";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--backend cuda"), std::string::npos) << e.what();
  }
}

/// The host's SAS work where the host carves the surface (the CPU path, the hybrid one): points of at
/// most kSasBatchAtoms atoms at once (pb::sas_batches), so a structure of millions of atoms on a coarse
/// grid needs the batch's share, not 10 GiB (the capsid at 4 A before the batches), and the estimate
/// says so: it covers a batch's points at 48 B each, grows with the atoms beyond the batch only by
/// their lists' 56 B, and is absent where nothing is carved (spline surfaces).
TEST(PbMemory, TheHostsSasWorkIsCountedAndBoundedByItsChunk) {
  const auto lattice = [](std::size_t count) {  // atoms 3 A apart in a slab, radius 1.8 A
    Atoms atoms;
    const std::size_t side = 400;
    for (std::size_t i = 0; i < count; ++i)
      atoms.push_back(3.0 * double(i % side), 3.0 * double((i / side) % side), 3.0 * double(i / (side * side)), 0.1,
                      1.8);
    return atoms;
  };
  const std::size_t batch = pb::kSasBatchAtoms;
  const Atoms two = lattice(2 * batch), four = lattice(4 * batch);
  const GridSpec g = grid_around(four, 8.0, 10);  // coarse: the grid's own share is small beside the atoms'
  const double grid_only = pb::pb_host_bytes(g, PbOptions{}, pb::PbHostPlan::CpuMultigrid);
  const double with_two = pb::pb_memory_plan(two, g, PbOptions{}, pb::PbHostPlan::CpuMultigrid).host_bytes;
  const double with_four = pb::pb_memory_plan(four, g, PbOptions{}, pb::PbHostPlan::CpuMultigrid).host_bytes;
  EXPECT_GE(with_two - grid_only, double(batch) * 130 * 48) << "a batch's points at 130 an atom, 48 B each";
  EXPECT_LT(std::abs(with_four - with_two), 0.1 * (with_two - grid_only)) << "more atoms, the same batch";
  EXPECT_GE(with_four - grid_only, double(batch) * 130 * 48 + 56.0 * double(four.size())) << "every atom's lists";
  PbOptions spline;
  spline.surface = PbSurface::Spline;
  EXPECT_DOUBLE_EQ(pb::pb_memory_plan(four, g, spline, pb::PbHostPlan::CpuMultigrid).host_bytes,
                   pb::pb_host_bytes(g, spline, pb::PbHostPlan::CpuMultigrid));
}

/// Under mpirun each rank holds espgrid's whole arrays but only its share of hypre's matrix and
/// levels, and the ranks on one host share its memory: the plan counts hypre's 1/ranks, and the
/// check gives each rank its part of the host (four ranks whose plans each fit the host alone could
/// together run it out of memory). The refusal says how many ranks share the host and to use fewer.
TEST(PbMemory, RanksHoldTheirShareOfHypreAndShareTheirHost) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.5, 10);
  pb::PbMemoryRequest one;
  one.where = pb::PbHostPlan::Hypre;
  pb::PbMemoryRequest four = one;
  four.ranks = 4;
  const double alone = pb::pb_memory_plan(fas, g, PbOptions{}, one).host_bytes;
  const pb::PbMemoryPlan whole_maps = pb::pb_memory_plan(fas, g, PbOptions{}, four);
  EXPECT_NEAR(alone - whole_maps.host_bytes, 0.75 * pb::hypre_bytes(g), 1e-6 * alone)
      << "hypre's 3/4 held by the others";
  // A rank that builds its planes of the coefficient maps and rows (pb_coefficients.h
  // maps_held_on_planes) holds a quarter of their 72 B a point; `espgrid map`'s statement assumes so
  // for the options that allow it (linear, no energy components, a surface built by planes).
  four.maps_shared = true;
  const pb::PbMemoryPlan rank = pb::pb_memory_plan(fas, g, PbOptions{}, four);
  const double points = double(g.point_count());
  EXPECT_NEAR(whole_maps.host_bytes - rank.host_bytes, 0.75 * 72 * points, 1e-6 * alone) << "the maps' 3/4";
  EXPECT_DOUBLE_EQ(pb::pb_memory_plan(fas, g, PbOptions{}, pb::PbHostPlan::Hypre, 4).host_bytes, rank.host_bytes);
  PbOptions npbe;
  npbe.equation = PbEquation::Nonlinear;  // builds whole maps on every rank
  four.maps_shared = false;
  EXPECT_DOUBLE_EQ(pb::pb_memory_plan(fas, g, npbe, pb::PbHostPlan::Hypre, 4).host_bytes,
                   pb::pb_memory_plan(fas, g, npbe, four).host_bytes);
  // A host with room for one rank's plan 2.5 times: one rank fits; four ranks sharing it do not.
  const std::size_t host = static_cast<std::size_t>(2.5 * rank.host_bytes);
  EXPECT_NO_THROW(pb::check_pb_memory(rank, g, 0, 0, "", host, 1));
  try {
    pb::check_pb_memory(rank, g, 0, 0, "", host / 4, 4);
    FAIL() << "four ranks on a host with room for 2.5 of them were not refused";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("each MPI rank"), std::string::npos) << m;
    EXPECT_NE(m.find("4 ranks share this host"), std::string::npos) << m;
    EXPECT_NE(m.find("fewer ranks on a host"), std::string::npos) << m;
  }
  // Each rank's part of the host: MemAvailable divided (it does not grow twofold between two calls),
  // unless an address-space limit binds (each process's own, not divided).
  rlimit limit{};
  const bool no_limit = ::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
  const std::size_t whole = available_memory_bytes(1), part = available_memory_bytes(4);
  if (whole > 0 && no_limit) EXPECT_LE(part, whole / 2) << whole << " " << part;
}

TEST(PbMemory, TheSummaryStatesTheEstimateAndThePeak) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  PbRun run;
  run.solver = PbSolver::CpuMultigrid;
  const PbResult r = solve_pb(fas, grid_around(fas, 1.2, 7), PbOptions{}, run);
  EXPECT_NE(r.summary.find("memory: estimated about"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("host peak"), std::string::npos) << r.summary;
}

// A PB grid is not split over GPUs: several devices are refused, not quietly reduced to the first.
// ---- on a GPU: the pipeline against the path it replaces -------------------------------------------

/// f() with environment switch `name` set to 0 (src/core/switches.h), unset again after.
template <class F>
auto with_switched_off(const char* name, F&& f) {
  ::setenv(name, "0", 1);
  try {
    auto r = f();
    ::unsetenv(name);
    return r;
  } catch (...) {
    ::unsetenv(name);
    throw;
  }
}

/// solve_pb with the device pipeline turned off (ESPGRID_PB_PIPELINE=0): the all-on-device path.
PbResult without_pipeline(const Atoms& atoms, const GridSpec& g, const PbOptions& o, const PbRun& run) {
  return with_switched_off("ESPGRID_PB_PIPELINE", [&] { return solve_pb(atoms, g, o, run); });
}

/// solve_pb with the pipeline's V-cycle stored in double (ESPGRID_PB_FLOAT_CYCLE=0): pb_multigrid.cu's
/// arithmetic, node for node.
PbResult with_double_cycle(const Atoms& atoms, const GridSpec& g, const PbOptions& o, const PbRun& run) {
  return with_switched_off("ESPGRID_PB_FLOAT_CYCLE", [&] { return solve_pb(atoms, g, o, run); });
}

TEST(PbPipelineGpu, MapIsTheAllOnDevicePathsMap) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.7, 8, 1);
  struct Case {
    PbSurface surface;
    PbChargeMethod charges;
    PbBoundary boundary;
  };
  std::vector<Case> cases;
  for (const PbSurface s : {PbSurface::Smol, PbSurface::Mol})
    for (const PbChargeMethod m : {PbChargeMethod::Spl2, PbChargeMethod::Spl0, PbChargeMethod::Spl4})
      cases.push_back({s, m, PbBoundary::Mdh});
  // The other boundaries reach the pipeline as face values of their own (sdh_face_values, zeros).
  cases.push_back({PbSurface::Smol, PbChargeMethod::Spl2, PbBoundary::Sdh});
  cases.push_back({PbSurface::Smol, PbChargeMethod::Spl2, PbBoundary::Zero});
  for (const Case& c : cases) {
    PbOptions o;
    o.surface = c.surface;
    o.charges = c.charges;
    o.boundary = c.boundary;
    PbRun run;
    run.solver = PbSolver::CudaMultigrid;
    run.keep_potential = true;
    // The pipeline with its V-cycle in double (in float: FloatCycleGivesTheDoubleCyclesMapInLessMemory).
    const PbResult now = with_double_cycle(fas, g, o, run), before = without_pipeline(fas, g, o, run);
    const std::string what =
        surface_name(c.surface) + " " + charge_method_name(c.charges) + " bcfl " + boundary_name(c.boundary);
    // The pipeline's method line says so (short: it goes into the .dx header's source line).
    ASSERT_NE(now.solve.method.find("the whole map built on the device"), std::string::npos)
        << what << ": the pipeline did not run: " << now.solve.method;
    ASSERT_EQ(before.solve.method.find("the whole map built on the device"), std::string::npos) << what;
    // The same surface and charges (bit for bit, held by the emulation tests), the same solver
    // arithmetic: the same iterations and, node for node, the same map. A last-bit difference
    // (the compiler contracting the assembly's sums differently) would show as ≲1e-12 relative.
    EXPECT_EQ(now.solve.iterations, before.solve.iterations) << what;
    EXPECT_EQ(now.sas_points, before.sas_points) << what;
    std::size_t differ = 0;
    double num = 0, den = 0;
    for (std::size_t i = 0; i < now.values.size(); ++i) {
      differ += now.values[i] != before.values[i];
      num += std::pow(now.potential[i] - before.potential[i], 2);
      den += std::pow(before.potential[i], 2);
    }
    EXPECT_LE(std::sqrt(num / den), 1e-12) << what << ": " << differ << " float nodes differ";
    EXPECT_NEAR(now.solve.relative_residual, before.solve.relative_residual, 1e-12) << what;
  }
}

/// The pipeline's V-cycle in float (the default) against the same pipeline with it in double (which
/// MapIsTheAllOnDevicePathsMap holds to pb_multigrid.cu's map): the same CG, a preconditioner whose
/// stored values are rounded to float. Emulated on the CPU (benchmarks/results/pb-float-cycle-cpu-
/// 2026-11-29): the same iterations on three proteins at 1e-6 and 1e-10, maps ≤ 1.5e-10 relative RMS
/// apart at 1e-6. The bounds: at 1e-10 both solutions lie within ~κ·1e-10 ≈ 1e-7 of the answer (κ ~1e3
/// on these grids), allowed 1e-6 as the slab tests do; at 1e-6 with the same iterations, 1e-8 (60× the
/// emulation's largest; a different iteration count would show as ~1e-6). The GPU peak drops by the
/// coarse levels' 28 bytes a coarse point, exactly (the ledger counts every buffer).
TEST(PbPipelineGpu, FloatCycleGivesTheDoubleCyclesMapInLessMemory) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.7, 8, 1);
  for (const double tolerance : {1e-6, 1e-10})
    for (const PbSurface s : {PbSurface::Smol, PbSurface::Mol}) {
      PbOptions o;
      o.surface = s;
      o.charges = s == PbSurface::Mol ? PbChargeMethod::Spl0 : PbChargeMethod::Spl2;
      o.tolerance = tolerance;
      o.max_iterations = 500;
      PbRun run;
      run.solver = PbSolver::CudaMultigrid;
      run.keep_potential = true;
      const PbResult single = solve_pb(fas, g, o, run), twofold = with_double_cycle(fas, g, o, run);
      const std::string what = surface_name(s) + " tolerance " + std::to_string(tolerance);
      ASSERT_NE(single.solve.method.find("V-cycle in float"), std::string::npos) << what << ": " << single.solve.method;
      ASSERT_EQ(twofold.solve.method.find("V-cycle in float"), std::string::npos)
          << what << ": " << twofold.solve.method;
      ASSERT_EQ(single.potential.size(), twofold.potential.size()) << what;
      const double rms = testing::relative_rms(single.potential, twofold.potential);
      EXPECT_LE(single.solve.relative_residual, tolerance) << what << ": recomputed in double on the device";
      if (tolerance < 1e-8) {
        EXPECT_NEAR(single.solve.iterations, twofold.solve.iterations, 1) << what;
        EXPECT_LE(rms, 1e-6) << what;
      } else {
        EXPECT_EQ(single.solve.iterations, twofold.solve.iterations) << what;
        EXPECT_LE(rms, 1e-8) << what;
      }
      std::size_t bad = 0;
      for (const float v : single.values) bad += !std::isfinite(v);
      EXPECT_EQ(bad, 0u) << what;
      std::cout << "[ float    ] " << what << ": " << twofold.solve.iterations << " -> " << single.solve.iterations
                << " iterations, relative RMS " << rms << "\n";
    }
  // The peak, from the pipeline's own ledger.
  PbOptions o;
  o.boundary = PbBoundary::Sdh;
  pb::PipelineRequest request;
  request.faces = [&] { return pb::face_values(pb::sdh_boundary(fas, g, o), g); };
  std::vector<float> values;
  const pb::PipelineSolve single = pb::solve_with_pipeline(fas, g, o, request, values);
  const pb::PipelineSolve twofold =
      with_switched_off("ESPGRID_PB_FLOAT_CYCLE", [&] { return pb::solve_with_pipeline(fas, g, o, request, values); });
  double coarse = 0;
  const std::vector<pb::MgLevel> shape =
      pb::hierarchy_shape({static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])});
  for (std::size_t l = 1; l < shape.size(); ++l) coarse += static_cast<double>(shape[l].size());
  ASSERT_GT(coarse, 0.0);
  EXPECT_EQ(twofold.device_peak_bytes - single.device_peak_bytes, 28 * coarse)
      << single.device_peak_bytes << " B against " << twofold.device_peak_bytes << " B";
}

TEST(PbPipelineGpu, EnergyAndPotentialAreTheHostsAndThePeakIsMeasured) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = grid_around(fas, 0.6, 9);
  PbOptions o;
  o.energy.level = PbEnergyLevel::Total;
  PbRun run;
  run.solver = PbSolver::CudaMultigrid;
  const PbResult now = solve_pb(fas, g, o, run), before = without_pipeline(fas, g, o, run);
  // Σ φ·q over 10⁶ nodes in a different order: the sums differ by rounding, ~1e-15 relative.
  EXPECT_NEAR(now.energy.total, before.energy.total, 1e-11 * std::fabs(before.energy.total));
  EXPECT_NE(now.summary.find("GPU peak"), std::string::npos) << now.summary;
  const pb::PbMemoryPlan plan = pb::pb_memory_plan(fas, g, o, pb::PbHostPlan::Gpu);
  EXPECT_EQ(plan.path, pb::PbMemoryPath::Pipeline);
  std::cout << "[ plan     ] " << plan.describe() << "\n[ summary  ] " << now.summary << "\n";
}

// Each atom enters the boundary's float32 sum with log10 ≈ log10(|q|·k/ε) + (κa − ln(1 + κa))/ln 10,
// which must stay ≤ 35. The check now bounds every atom by the largest charge and the largest radius
// first (three logarithms an atom took ~0.1 s of the capsid's 1.93 M atoms) and visits the atoms
// only when that bound fails. Exactness both ways: an atom over the limit is still named, and two
// atoms that each pass, although the largest charge of one with the largest radius of the other
// would not, still pass. At 298.15 K, ε 78.54, 0.15 M: k/ε ≈ 7.1 kT/e·Å, κ ≈ 0.127/Å.
TEST(PbLimits, TheFloatBoundOfTheBoundarysSumIsExactForEveryAtom) {
  PbOptions o;
  GridSpec g;
  g.dims = {81, 81, 81};
  g.spacing = {1.0, 1.0, 1.0};
  g.origin = {-40.0, -40.0, -40.0};
  Atoms atoms;
  atoms.push_back(-5, 0, 0, 1e34, 1.0);  // log10 ≈ 34.85 + 0.003
  atoms.push_back(5, 0, 0, 1.0, 10.0);   // log10 ≈ 0.85 + 0.19; with the first's charge 35.05
  EXPECT_NO_THROW(pb::check_pb_boundary(atoms, g, o));
  atoms.push_back(0, 5, 0, 3e34, 1.0);  // log10 ≈ 35.33: over, and named
  try {
    pb::check_pb_boundary(atoms, g, o);
    FAIL() << "an atom over the float32 limit passed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("atom 3 "), std::string::npos) << e.what();
  }
}

// The atom checks run on every core, each thread over a run of atoms: the atom they name must be the
// one a loop in order names, on any number of threads. 10,000 atoms inside an 81³ grid; two atoms
// reach the x faces by the same 0.5 Å (atoms 2,001 and 7,001: the first is named, then the second
// once the first is moved in), and two lie off the mesh (atoms 3,001 and 9,001).
TEST(PbLimits, TheAtomNamedIsTheFirstInOrderOnAnyNumberOfThreads) {
  GridSpec g;
  g.dims = {81, 81, 81};
  g.spacing = {1.0, 1.0, 1.0};
  g.origin = {-40.0, -40.0, -40.0};
  std::mt19937 rng(20261129);
  std::uniform_real_distribution<double> inside(-30, 30);
  Atoms atoms;
  for (int a = 0; a < 10000; ++a) atoms.push_back(inside(rng), inside(rng), inside(rng), 0.1, 1.5);
  atoms.x[2000] = -39.0;  // radius 1.5 from the face at -40: 0.5 Å past it
  atoms.x[7000] = 39.0;   // the same 0.5 Å past the face at +40
  const auto named = [&](auto&& check) {
    try {
      check();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const int threads : {1, 2, 3, 7, 16}) {
    const std::string t = std::to_string(threads) + " threads";
    const std::string first = named([&] { pb::check_pb_boundary(atoms, g, PbOptions{}, threads); });
    EXPECT_NE(first.find("atom 2001 "), std::string::npos) << t << ": " << first;
    Atoms moved = atoms;
    moved.x[2000] = 0;
    const std::string second = named([&] { pb::check_pb_boundary(moved, g, PbOptions{}, threads); });
    EXPECT_NE(second.find("atom 7001 "), std::string::npos) << t << ": " << second;
    moved.x[7000] = 0;
    EXPECT_EQ(named([&] { pb::check_pb_boundary(moved, g, PbOptions{}, threads); }), "no error") << t;
    EXPECT_TRUE(pb::atoms_on_mesh(moved, g, threads)) << t;
    moved.y[9000] = 45;   // off the mesh
    moved.z[3000] = -41;  // off the mesh, and first
    EXPECT_FALSE(pb::atoms_on_mesh(moved, g, threads)) << t;
    const std::string outside = named([&] { pb::check_atoms_inside(moved, g, threads); });
    EXPECT_NE(outside.find("atom 3001 at"), std::string::npos) << t << ": " << outside;
    EXPECT_NE(outside.find("(grid z "), std::string::npos) << t << ": " << outside;
  }
}

TEST(PbPipelineGpu, AGridBeyondTheDeviceIsRefusedBeforeAnythingIsAllocated) {
  ESPGRID_REQUIRE_CUDA_OR_SKIP();
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  // ~10¹⁰ points: ~490 GB on the device, beyond any GPU. (0.03 Å, 3.0·10⁹ points, was 145 GiB at 52 B a
  // point; at 49 B with the float V-cycle it fit an H200's 139.8 GiB and was solved, in 14 s, 2026-11-29.)
  GridSpec g = grid_around(fas, 0.02, 6);
  PbRun run;
  run.solver = PbSolver::CudaMultigrid;
  try {
    solve_pb(fas, g, PbOptions{}, run);
    FAIL() << "a grid of " << g.point_count() << " points was not refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("needs about"), std::string::npos) << e.what();
    // Refused by the whole device's memory, before the host prepared anything or made a context.
    EXPECT_NE(std::string(e.what()).find(" in all"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace espgrid
