// The meshes behind `espgrid view` and `espgrid surface` (src/view/): contouring, cavities,
// smoothing, normals, the molecular surface's definition, and the potential at arbitrary points
// against analytic values, the oracle and the map.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "src/compute/oracle.h"
#include "src/compute/prepared_problem.h"
#include "src/core/units.h"
#include "src/view/mesh.h"
#include "src/view/molecular_surface.h"
#include "src/view/vertex_potential.h"
#include "tests/test_support.h"

namespace {

using namespace espgrid;
using namespace espgrid::surface;

constexpr double kPi = 3.14159265358979323846;

/// Values of f on a grid (x fastest) and the field that views them.
struct Grid {
  std::vector<float> values;
  ScalarField field;
};

template <class F>
Grid sample(std::array<std::int64_t, 3> dims, std::array<double, 3> origin, double h, F f) {
  Grid g;
  g.values.resize(static_cast<std::size_t>(dims[0] * dims[1] * dims[2]));
  for (std::int64_t k = 0; k < dims[2]; ++k)
    for (std::int64_t j = 0; j < dims[1]; ++j)
      for (std::int64_t i = 0; i < dims[0]; ++i)
        g.values[static_cast<std::size_t>(i + dims[0] * (j + dims[1] * k))] =
            static_cast<float>(f(origin[0] + h * double(i), origin[1] + h * double(j), origin[2] + h * double(k)));
  g.field.values = g.values.data();
  g.field.dims = dims;
  g.field.origin = origin;
  g.field.spacing = {h, h, h};
  return g;
}

/// Directed edges of the mesh not matched by exactly one edge the other way: 0 for a closed,
/// consistently oriented manifold.
std::size_t unpaired_edges(const TriangleMesh& m, std::size_t* edges = nullptr) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> directed;
  for (std::size_t t = 0; t < m.triangle_count(); ++t)
    for (int c = 0; c < 3; ++c) ++directed[{m.triangles[3 * t + c], m.triangles[3 * t + (c + 1) % 3]}];
  std::size_t bad = 0;
  for (const auto& [edge, count] : directed) {
    const auto reverse = directed.find({edge.second, edge.first});
    if (count != 1 || reverse == directed.end() || reverse->second != 1) ++bad;
  }
  if (edges) *edges = directed.size();
  return bad;
}

void expect_closed_and_oriented(const TriangleMesh& m) {
  EXPECT_EQ(unpaired_edges(m), 0u) << "edges not shared by exactly two triangles in opposite directions";
}

double distance(const float* p, const std::array<double, 3>& c) {
  return std::sqrt((p[0] - c[0]) * (p[0] - c[0]) + (p[1] - c[1]) * (p[1] - c[1]) + (p[2] - c[2]) * (p[2] - c[2]));
}

TEST(Contour, SphereIsClosedOutwardAndInPlace) {
  const std::array<double, 3> c = {0.3, -0.2, 0.1};
  const double radius = 5.0, h = 0.5;
  const Grid g = sample({31, 31, 31}, {-7.5, -7.5, -7.5}, h, [&](double x, double y, double z) {
    return radius * radius - ((x - c[0]) * (x - c[0]) + (y - c[1]) * (y - c[1]) + (z - c[2]) * (z - c[2]));
  });
  TriangleMesh m = contour(g.field, 0.0, true);
  ASSERT_GT(m.triangle_count(), 1000u);
  expect_closed_and_oriented(m);
  // Each vertex is the mean of its cell's edge crossings, which lie on the sphere (to the
  // interpolation's error, h²/(8R) = 0.006 Å) in a cell of diagonal √3 h: the mean of points on
  // a sphere within one cell lies inside it by at most (√3 h)²/(2R) = 0.075 Å.
  for (std::size_t v = 0; v < m.vertex_count(); ++v)
    ASSERT_NEAR(distance(&m.positions[3 * v], c), radius, 0.08) << "vertex " << v;
  // Vertices between 0.08 Å inside and 0.006 Å outside: the volume within those spheres'.
  const double ball = 4.0 / 3.0 * kPi * radius * radius * radius;
  EXPECT_GT(signed_volume(m), ball * std::pow(1 - 0.08 / radius, 3));
  EXPECT_LT(signed_volume(m), ball * std::pow(1 + 0.006 / radius, 3));
  // Flat facets between those spheres: the area of the inner one at least, and at most the
  // outer one's times the facets' tilt (normals within 18° of radial, as checked below: 1/cos).
  EXPECT_GT(surface_area(m), 4 * kPi * std::pow(radius - 0.08, 2));
  EXPECT_LT(surface_area(m), 4 * kPi * std::pow(radius + 0.006, 2) / std::cos(18 * kPi / 180));
  compute_normals(m);
  for (std::size_t v = 0; v < m.vertex_count(); ++v) {
    const float* p = &m.positions[3 * v];
    const float* n = &m.normals[3 * v];
    const double radial = ((p[0] - c[0]) * n[0] + (p[1] - c[1]) * n[1] + (p[2] - c[2]) * n[2]) / distance(p, c);
    // A faceted sphere's vertex normal is within a few degrees of the radius; 0.95 is 18°.
    ASSERT_GT(radial, 0.95) << "vertex " << v << " normal does not point outwards";
  }
}

TEST(Contour, InsideBelowFlipsTheOrientation) {
  const Grid g =
      sample({21, 21, 21}, {-5, -5, -5}, 0.5, [](double x, double y, double z) { return x * x + y * y + z * z; });
  // Inside = below 9: the same ball of radius 3 as value > -9 of the negated field.
  const TriangleMesh m = contour(g.field, 9.0, false);
  expect_closed_and_oriented(m);
  EXPECT_GT(signed_volume(m), 0.95 * 4.0 / 3.0 * kPi * 27);
}

TEST(Contour, StrideUsesEveryOtherPoint) {
  const Grid g = sample({41, 41, 41}, {-10, -10, -10}, 0.5,
                        [](double x, double y, double z) { return 36 - x * x - y * y - z * z; });
  const TriangleMesh full = contour(g.field, 0.0, true), half = contour(g.field, 0.0, true, 2);
  expect_closed_and_oriented(half);
  // A grid twice as coarse has about a quarter of the cells on the surface.
  EXPECT_NEAR(double(half.triangle_count()) / double(full.triangle_count()), 0.25, 0.05);
  // At the coarse spacing h = 1 vertices lie up to (√3 h)²/(2R) = 0.25 Å inside (see above).
  EXPECT_GT(signed_volume(half), 4.0 / 3.0 * kPi * std::pow(6 - 0.25, 3));
  EXPECT_LT(signed_volume(half), 4.0 / 3.0 * kPi * std::pow(6 + 0.02, 3));
}

TEST(Contour, LeavingTheGridLeavesAnOpenEdgeAndNothingOutside) {
  // A plane z = 0.3 through the whole box: one open sheet, every vertex on the plane.
  const Grid g = sample({6, 7, 8}, {0, 0, -2}, 0.5, [](double, double, double z) { return z - 0.3; });
  const TriangleMesh m = contour(g.field, 0.0, true);
  EXPECT_EQ(m.vertex_count(), 5u * 6u);  // one vertex per crossed cell
  EXPECT_EQ(m.triangle_count(), 2u * 4u * 5u);
  for (std::size_t v = 0; v < m.vertex_count(); ++v) EXPECT_NEAR(m.positions[3 * v + 2], 0.3, 1e-6);
  const Grid none = sample({4, 4, 4}, {0, 0, 0}, 1, [](double, double, double) { return 1.0; });
  EXPECT_TRUE(contour(none.field, 0.0, true).empty());
}

TEST(Components, CavityWallsGoSeparateMoleculesStay) {
  // A thick shell (3 < r < 6) around the origin, with a hollow inside, and a ball of radius 2
  // at x = 12: the shell's inner wall faces into the cavity (negative volume) and is dropped;
  // the outer wall and the separate ball stay.
  const Grid g = sample({61, 33, 33}, {-8, -8, -8}, 0.5, [](double x, double y, double z) {
    const double r = std::sqrt(x * x + y * y + z * z), s = std::sqrt((x - 12) * (x - 12) + y * y + z * z);
    return std::max(std::min(r - 3.0, 6.0 - r), 2.0 - s);
  });
  const TriangleMesh all = contour(g.field, 0.0, true);
  const TriangleMesh outer = outer_components(all);
  expect_closed_and_oriented(outer);
  double near_cavity = 0, near_ball = 0;
  for (std::size_t v = 0; v < outer.vertex_count(); ++v) {
    const double r = distance(&outer.positions[3 * v], {0, 0, 0});
    near_cavity += r < 4.5 ? 1 : 0;
    near_ball += distance(&outer.positions[3 * v], {12, 0, 0}) < 3 ? 1 : 0;
  }
  EXPECT_EQ(near_cavity, 0) << "the cavity's wall was kept";
  EXPECT_GT(near_ball, 50) << "the separate ball was dropped";
  const double expected = 4.0 / 3.0 * kPi * (216.0 + 8.0);
  EXPECT_NEAR(signed_volume(outer), expected, 0.03 * expected);
  EXPECT_LT(signed_volume(all), signed_volume(outer) - 0.5 * 4.0 / 3.0 * kPi * 27) << "the cavity was not in the input";
}

TEST(Smoothing, KeepsASphereAndRemovesNoise) {
  const double radius = 6;
  const Grid g = sample({41, 41, 41}, {-10, -10, -10}, 0.5,
                        [&](double x, double y, double z) { return radius - std::sqrt(x * x + y * y + z * z); });
  TriangleMesh m = contour(g.field, 0.0, true);
  // Radial noise of ±0.1 Å (uniform: standard deviation 0.058 Å), the kind of roughness a
  // contoured grid has.
  std::mt19937 rng(espgrid::testing::test_seed());
  std::uniform_real_distribution<double> noise(-0.1, 0.1);
  for (std::size_t v = 0; v < m.vertex_count(); ++v) {
    float* p = &m.positions[3 * v];
    const double r = distance(p, {0, 0, 0}), scale = (r + noise(rng)) / r;
    for (int a = 0; a < 3; ++a) p[a] = static_cast<float>(p[a] * scale);
  }
  const auto spread = [](const TriangleMesh& mesh) {
    std::vector<double> r;
    for (std::size_t v = 0; v < mesh.vertex_count(); ++v) r.push_back(distance(&mesh.positions[3 * v], {0, 0, 0}));
    const double mean = std::accumulate(r.begin(), r.end(), 0.0) / double(r.size());
    double var = 0;
    for (double x : r) var += (x - mean) * (x - mean);
    return std::make_pair(mean, std::sqrt(var / double(r.size())));
  };
  const auto [mean0, sd0] = spread(m);
  const double volume0 = signed_volume(m);
  smooth_windowed_sinc(m, 15, 0.1);
  const auto [mean1, sd1] = spread(m);
  // The windowed-sinc filter is designed not to shrink (its offset makes the pass band's edge
  // 1): the mean radius moves by under 1% and the volume by under 3% (VTK's Hamming window is
  // known to err by up to 1% in size), while vertex-to-vertex noise, far above the pass band,
  // is mostly removed (measured 2026-11-24: its scatter drops to a third; without the filter
  // it would stay whole): at most half of it may remain.
  EXPECT_NEAR(mean1, mean0, 0.01 * radius);
  EXPECT_NEAR(signed_volume(m), volume0, 0.03 * volume0);
  EXPECT_LT(sd1, sd0 / 2) << "scatter " << sd0 << " -> " << sd1;
  TriangleMesh unchanged = contour(g.field, 0.0, true);
  const std::vector<float> before = unchanged.positions;
  smooth_windowed_sinc(unchanged, 0, 0.1);
  EXPECT_EQ(unchanged.positions, before);
}

TEST(MolecularSurface, OneAtomIsItsRadius) {
  // exp(-2(d²/R² - 1)) = 1 exactly at d = R: the surface of one atom is its sphere.
  Atoms atoms;
  atoms.push_back(1.0, 2.0, 3.0, 0.5, 1.8, ElementSymbol::from("C"));
  const SurfaceResult s = molecular_surface(atoms);
  ASSERT_GT(s.mesh.vertex_count(), 100u);
  expect_closed_and_oriented(s.mesh);
  // As for the contoured sphere (0.075 Å at R = 5: here 0.21 Å at R = 1.8 before smoothing),
  // and the smoothing's shrinkage, a few hundredths: 0.1 Å on average, 0.25 Å at most.
  double mean = 0;
  for (std::size_t v = 0; v < s.mesh.vertex_count(); ++v) {
    const double d = distance(&s.mesh.positions[3 * v], {1.0, 2.0, 3.0});
    ASSERT_NEAR(d, 1.8, 0.25);
    mean += d;
  }
  EXPECT_NEAR(mean / double(s.mesh.vertex_count()), 1.8, 0.1);
  EXPECT_EQ(s.atoms_used, 1u);
  EXPECT_EQ(s.spacing, 0.5);
}

TEST(MolecularSurface, ProbeAndZeroRadii) {
  Atoms atoms;
  atoms.push_back(0, 0, 0, 0, 1.5, ElementSymbol::from("C"));
  atoms.push_back(30, 0, 0, 0, 0.0, ElementSymbol::from("H"));  // no radius: left out
  const SurfaceResult s = molecular_surface(atoms, SurfaceOptions{0.5, 1.4});
  EXPECT_EQ(s.atoms_used, 1u);
  for (std::size_t v = 0; v < s.mesh.vertex_count(); ++v)
    ASSERT_NEAR(distance(&s.mesh.positions[3 * v], {0, 0, 0}), 2.9, 0.3);  // R + probe
  // No atom with a radius (an XYZ read with zero radii): the renderer's element radii.
  Atoms bare;
  bare.push_back(0, 0, 0, 0, 0.0, ElementSymbol::from("O"));
  const SurfaceResult b = molecular_surface(bare);
  EXPECT_EQ(b.atoms_used, 1u);
  EXPECT_NEAR(distance(&b.mesh.positions[0], {0, 0, 0}), 1.7, 0.3);
}

TEST(MolecularSurface, LargeGridsAreRefusedOrCoarsened) {
  Atoms atoms;
  atoms.push_back(0, 0, 0, 0, 1.5, ElementSymbol::from("C"));
  atoms.push_back(200, 0, 0, 0, 1.5, ElementSymbol::from("C"));
  SurfaceOptions o;
  o.max_grid_points = 100'000;
  EXPECT_THROW(molecular_surface(atoms, o), UsageError);
  o.coarsen = true;
  const SurfaceResult s = molecular_surface(atoms, o);
  EXPECT_GT(s.spacing, 0.5);
  EXPECT_LE(double(s.grid_dims[0]) * double(s.grid_dims[1]) * double(s.grid_dims[2]), 100'000.0);
  EXPECT_EQ(signed_volume(s.mesh) > 0, true);
  o.spacing = 0;
  EXPECT_THROW(molecular_surface(atoms, o), UsageError);
}

TEST(MolecularSurface, AVertexBudgetCoarsensTheGrid) {
  // A solid block of atoms (a 2 Å lattice of 1.5 Å atoms, whose densities overlap everywhere
  // inside; 40 Å on a side: its area hardly changes with the spacing). At 0.22 Å its grid has
  // 11 million points, so the budget is met from a probe contour (4 million points) and a retry
  // if needed; on fasciculin-2 by retries alone.
  Atoms block;
  for (int i = 0; i < 20; ++i)
    for (int j = 0; j < 20; ++j)
      for (int k = 0; k < 20; ++k) block.push_back(2.0 * i, 2.0 * j, 2.0 * k, 0, 1.5, ElementSymbol::from("C"));
  SurfaceOptions o;
  o.spacing = 0.22;
  o.coarsen = true;
  o.max_vertices = 10'000;
  const SurfaceResult s = molecular_surface(block, o);
  EXPECT_LE(s.mesh.vertex_count(), 10'000u);
  // Not coarser than needed: a spacing 20% finer would have broken the budget (vertices scale
  // as 1/spacing²: 1.2² = 1.44 times as many, while the budget leaves the 5% margin it adds).
  EXPECT_GT(double(s.mesh.vertex_count()) * 1.44, 10'000.0) << "spacing " << s.spacing;
  EXPECT_GT(s.spacing, 0.22);
  const Atoms fas = espgrid::testing::load_molecule("fasciculin2.pqr");
  o.spacing = 0.5;
  o.max_vertices = 8'000;
  const SurfaceResult f = molecular_surface(fas, o);
  EXPECT_LE(f.mesh.vertex_count(), 8'000u);
  EXPECT_GT(f.spacing, 0.5);
}

TEST(MolecularSurface, FasciculinIsClosedAndThreadCountDoesNotMatter) {
  const Atoms fas = espgrid::testing::load_molecule("fasciculin2.pqr");
  const SurfaceResult s = molecular_surface(fas);
  // Surface nets put one vertex in each cell the surface crosses, so where two sheets pass
  // through one cell (a neck narrower than the 0.5 Å spacing) they share a vertex and its edges
  // are used more than twice. Everywhere else the mesh is closed and oriented: such edges are a
  // few per thousand (measured: 70 of 145,000 directed edges).
  std::size_t edges = 0;
  const std::size_t unpaired = unpaired_edges(s.mesh, &edges);
  EXPECT_LT(unpaired, edges / 500) << unpaired << " of " << edges << " directed edges unpaired";
  EXPECT_GT(signed_volume(s.mesh), 5000.0);  // 906 atoms: about 8,800 Å³ measured
  EXPECT_EQ(s.atoms_used, fas.size());
  // The density is summed plane by plane, each plane's atoms in file order: the same bits on
  // any number of threads.
  const GaussianDensity d1 = gaussian_density(fas, 0, 0.5);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const GaussianDensity d2 = gaussian_density(fas, 0, 0.5);
  omp_set_num_threads(threads);
  EXPECT_EQ(d1.values, d2.values);
}

// ---- the potential at points --------------------------------------------------------------------

TEST(PotentialAt, OneChargeIsAnalytic) {
  Atoms atoms;
  atoms.push_back(1, 2, 3, -0.8, 1.5, ElementSymbol::from("O"));
  for (PairModel model : {PairModel::Coulomb, PairModel::Distance, PairModel::Debye}) {
    PhysicsOptions physics;
    physics.model = model;
    physics.dielectric = model == PairModel::Debye ? 78.54 : 4.0;
    physics.ionic_strength = model == PairModel::Debye ? 0.15 : 0.0;
    const std::vector<double> points = {1, 2, 8, 4, -1, 3, 1.5, 2.5, 3.5};
    const std::vector<float> phi = potential_at(atoms, physics, points);
    const double k = coulomb_factor(physics);
    const double kappa = model == PairModel::Debye ? debye_kappa(0.15, 78.54, physics.temperature) : 0;
    for (std::size_t p = 0; p < 3; ++p) {
      const double dx = points[3 * p] - 1, dy = points[3 * p + 1] - 2, dz = points[3 * p + 2] - 3;
      const double r2 = dx * dx + dy * dy + dz * dz + kSofteningLength * kSofteningLength, r = std::sqrt(r2);
      const double f = model == PairModel::Coulomb    ? 1 / r
                       : model == PairModel::Distance ? 1 / r2
                                                      : std::exp(-kappa * r) / r;
      // The sum is double; only the float32 result rounds (half an ulp, 6e-8), and κ travels
      // as float32 in PairParameters (its rounding moves e^(−κr) by about κr·6e-8): 1e-6.
      EXPECT_NEAR(phi[p], -0.8 * k * f, 1e-6 * std::fabs(0.8 * k * f)) << model_name(model) << " point " << p;
    }
  }
}

TEST(PotentialAt, EqualsTheOracleAtGridPoints) {
  // At grid points the direct sum is what every kernel's oracle computes (double, the same
  // evaluator): they agree to the float32 rounding of the result and of the oracle's float
  // inputs (positions relative to the origin): float_tolerance.
  std::mt19937 rng(espgrid::testing::test_seed());
  const GridSpec grid = espgrid::testing::make_test_grid(9, 8, 7);
  const Atoms atoms = espgrid::testing::random_atoms(rng, 60, grid);
  PhysicsOptions physics;
  physics.model = PairModel::Debye;
  physics.dielectric = 78.54;
  physics.ionic_strength = 0.15;
  const PreparedProblem prepared = PreparedProblem::for_physics(atoms, grid, physics);
  const GridSumProblem problem = prepared.view(nullptr);
  std::vector<double> points;
  std::vector<std::array<std::int64_t, 3>> index;
  for (std::int64_t k = 0; k < 7; k += 3)
    for (std::int64_t j = 0; j < 8; j += 3)
      for (std::int64_t i = 0; i < 9; i += 2) {
        points.insert(points.end(), {grid.position(0, i), grid.position(1, j), grid.position(2, k)});
        index.push_back({i, j, k});
      }
  const std::vector<float> phi = potential_at(atoms, physics, points);
  for (std::size_t p = 0; p < index.size(); ++p) {
    const OracleValue o = oracle_at(problem, index[p][0], index[p][1], index[p][2]);
    EXPECT_NEAR(phi[p], o.potential, float_tolerance(o, atoms.size(), prepared.coordinate_extent())) << "point " << p;
  }
}

TEST(Interpolate, ReproducesLinearFieldsAndRefusesOutside) {
  PotentialMap map;
  map.grid.dims = {4, 5, 6};
  map.grid.origin = {-1, 0.5, 2};
  map.grid.spacing = {0.5, 0.7, 0.9};
  map.values.resize(map.grid.point_count());
  const auto linear = [](double x, double y, double z) { return 2 * x - 3 * y + 0.5 * z + 1; };
  for (std::int64_t k = 0; k < 6; ++k)
    for (std::int64_t j = 0; j < 5; ++j)
      for (std::int64_t i = 0; i < 4; ++i)
        map.values[static_cast<std::size_t>(i + 4 * (j + 5 * k))] =
            static_cast<float>(linear(map.grid.position(0, i), map.grid.position(1, j), map.grid.position(2, k)));
  const std::vector<double> points = {-0.3, 1.1, 3.3, 0.5, 3.3, 6.5,  // inside; on the far corner
                                      -1.1, 1,   3,   0,   0,   3,    // outside in x; in y
                                      0,    1,   6.6};                // outside in z
  const std::vector<float> v = interpolate(map, points);
  // Trilinear interpolation is exact for a linear field; float32 values: 1e-5.
  EXPECT_NEAR(v[0], linear(-0.3, 1.1, 3.3), 1e-5);
  EXPECT_NEAR(v[1], linear(0.5, 3.3, 6.5), 1e-5);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_TRUE(std::isnan(v[4]));
}

TEST(OffsetPoints, MoveAlongTheNormals) {
  TriangleMesh m;
  m.positions = {0, 0, 0, 1, 2, 3};
  m.normals = {0, 0, 1, 1, 0, 0};
  EXPECT_EQ(offset_points(m, 1.4), (std::vector<double>{0, 0, 1.4, 1 + 1.4, 2, 3}));
}

}  // namespace
