#include "src/view/molecular_surface.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"

namespace espgrid::surface {
namespace {

constexpr double kAlpha = 2.0;        // the Gaussian's steepness (render_potential.py: alpha)
constexpr double kCutoff = 2.6;       // atoms contribute within kCutoff·R (render_potential.py: cutoff)
constexpr double kMinRadius = 0.05;   // Å: atoms with smaller radii are left out of the surface
constexpr double kSpacingMin = 0.05;  // Å
constexpr double kSpacingMax = 10.0;  // Å

/// The atoms that make the surface, with their radii R = r + probe.
struct SurfaceAtoms {
  std::vector<double> x, y, z, r;
};

SurfaceAtoms surface_atoms(const Atoms& atoms, double probe) {
  SurfaceAtoms s;
  bool any = false;
  for (double r : atoms.radius) any = any || r > kMinRadius;
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    double r = atoms.radius[i];
    if (any && !(r > kMinRadius)) continue;
    if (!any) r = atoms.element[i] == ElementSymbol::from("H") ? 1.2 : 1.7;
    s.x.push_back(atoms.x[i]);
    s.y.push_back(atoms.y[i]);
    s.z.push_back(atoms.z[i]);
    s.r.push_back(r + probe);
  }
  return s;
}

struct DensityGrid {
  std::array<std::int64_t, 3> dims{};
  std::array<double, 3> origin{};
};

DensityGrid density_grid(const SurfaceAtoms& s, double spacing) {
  double lo[3] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                  std::numeric_limits<double>::infinity()};
  double hi[3] = {-lo[0], -lo[1], -lo[2]};
  double rmax = 0;
  for (std::size_t i = 0; i < s.r.size(); ++i) {
    const double p[3] = {s.x[i], s.y[i], s.z[i]};
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], p[a]);
      hi[a] = std::max(hi[a], p[a]);
    }
    rmax = std::max(rmax, s.r[i]);
  }
  const double pad = kCutoff * rmax + 2 * spacing;
  DensityGrid g;
  for (int a = 0; a < 3; ++a) {
    g.origin[a] = lo[a] - pad;
    const double extent = (hi[a] + pad) - g.origin[a];
    g.dims[a] = static_cast<std::int64_t>(std::ceil(extent / spacing)) + 1;
  }
  return g;
}

void check_spacing(double spacing, const char* what) {
  if (!(spacing >= kSpacingMin && spacing <= kSpacingMax))
    throw UsageError(std::string(what) + " must be between " + shortest_text(kSpacingMin) + " and " +
                     shortest_text(kSpacingMax) + " Å, got " + number_text(spacing));
}

}  // namespace

std::array<std::int64_t, 3> gaussian_grid_dims(const Atoms& atoms, double probe, double spacing) {
  const SurfaceAtoms s = surface_atoms(atoms, probe);
  if (s.r.empty()) throw UsageError("no atoms to make a surface of");
  return density_grid(s, spacing).dims;
}

GaussianDensity gaussian_density(const Atoms& atoms, double probe, double spacing) {
  check_spacing(spacing, "the surface's grid spacing");
  const SurfaceAtoms s = surface_atoms(atoms, probe);
  if (s.r.empty()) throw UsageError("no atoms to make a surface of");
  const DensityGrid g = density_grid(s, spacing);
  GaussianDensity d;
  d.dims = g.dims;
  d.origin = g.origin;
  d.spacing = spacing;
  d.atoms_used = s.r.size();
  const std::int64_t nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  d.values.assign(static_cast<std::size_t>(nx * ny * nz), 0.0f);

  // Each atom's box of grid points; every plane lists the atoms whose box crosses it, so each
  // thread owns whole planes and sums its atoms in file order (the same bits on any thread count).
  struct Box {
    std::int64_t lo[3], hi[3];  // [lo, hi) per axis
  };
  std::vector<Box> boxes(s.r.size());
  std::vector<std::vector<std::uint32_t>> on_plane(static_cast<std::size_t>(nz));
  for (std::size_t i = 0; i < s.r.size(); ++i) {
    const double c[3] = {s.x[i], s.y[i], s.z[i]};
    const double rc = kCutoff * s.r[i];
    for (int a = 0; a < 3; ++a) {
      boxes[i].lo[a] =
          std::max<std::int64_t>(static_cast<std::int64_t>(std::floor((c[a] - rc - g.origin[a]) / spacing)), 0);
      boxes[i].hi[a] = std::min<std::int64_t>(
          static_cast<std::int64_t>(std::ceil((c[a] + rc - g.origin[a]) / spacing)) + 1, g.dims[a]);
    }
    for (std::int64_t k = boxes[i].lo[2]; k < boxes[i].hi[2]; ++k)
      on_plane[static_cast<std::size_t>(k)].push_back(static_cast<std::uint32_t>(i));
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t k = 0; k < nz; ++k) {
    float* plane = d.values.data() + static_cast<std::size_t>(nx * ny * k);
    const double z = g.origin[2] + spacing * static_cast<double>(k);
    for (const std::uint32_t i : on_plane[static_cast<std::size_t>(k)]) {
      const Box& b = boxes[i];
      const double inv_r2 = 1.0 / (s.r[i] * s.r[i]);
      const double dz = z - s.z[i];
      for (std::int64_t j = b.lo[1]; j < b.hi[1]; ++j) {
        const double dy = g.origin[1] + spacing * static_cast<double>(j) - s.y[i];
        const double dyz = dy * dy + dz * dz;
        float* row = plane + nx * j;
        for (std::int64_t ii = b.lo[0]; ii < b.hi[0]; ++ii) {
          const double dx = g.origin[0] + spacing * static_cast<double>(ii) - s.x[i];
          row[ii] += static_cast<float>(std::exp(-kAlpha * ((dx * dx + dyz) * inv_r2 - 1.0)));
        }
      }
    }
  }
  return d;
}

SurfaceResult molecular_surface(const Atoms& atoms, const SurfaceOptions& options) {
  const Stopwatch clock;
  check_spacing(options.spacing, "--surface-spacing");
  if (!(options.probe >= 0 && options.probe <= 10))
    throw UsageError("--probe must be between 0 and 10 Å, got " + number_text(options.probe));
  if (atoms.empty()) throw UsageError("no atoms to make a surface of");
  double spacing = options.spacing;
  auto dims = gaussian_grid_dims(atoms, options.probe, spacing);
  const auto points = [](const std::array<std::int64_t, 3>& d) {
    return static_cast<double>(d[0]) * static_cast<double>(d[1]) * static_cast<double>(d[2]);
  };
  const auto limit = static_cast<double>(options.max_grid_points);
  while (points(dims) > limit) {
    if (!options.coarsen)
      throw UsageError("the surface's grid would have " + with_commas(static_cast<std::uint64_t>(points(dims))) +
                       " points at " + shortest_text(spacing) + " Å (at most " +
                       with_commas(static_cast<std::uint64_t>(limit)) + "): use a larger --surface-spacing");
    // Grow the spacing by the cube root of the excess (and a little), then check again: the
    // padding grows with it.
    spacing = std::ceil(spacing * std::cbrt(points(dims) / limit) * 1.02 * 100.0) / 100.0;
    if (spacing > kSpacingMax) throw UsageError("the structure is too large to make a surface of");
    dims = gaussian_grid_dims(atoms, options.probe, spacing);
  }
  // A vertex budget and a large grid: contour a small grid first (4 million points, no
  // smoothing) to learn how many vertices the asked spacing would give, instead of computing
  // the full-size density only to throw it away.
  constexpr double kProbePoints = 4.0e6;
  if (options.coarsen && options.max_vertices > 0 && points(dims) > 2 * kProbePoints) {
    const double probe_spacing = std::ceil(spacing * std::cbrt(points(dims) / kProbePoints) * 100.0) / 100.0;
    const GaussianDensity probe = gaussian_density(atoms, options.probe, probe_spacing);
    ScalarField field;
    field.values = probe.values.data();
    field.dims = probe.dims;
    field.origin = probe.origin;
    field.spacing = {probe_spacing, probe_spacing, probe_spacing};
    const double expected = double(outer_components(contour(field, 1.0, true)).vertex_count()) *
                            (probe_spacing / spacing) * (probe_spacing / spacing);
    if (expected > double(options.max_vertices))
      spacing = std::ceil(spacing * std::sqrt(expected / double(options.max_vertices)) * 1.05 * 100.0) / 100.0;
  }
  SurfaceResult result;
  for (int attempt = 0;; ++attempt) {
    const GaussianDensity density = gaussian_density(atoms, options.probe, spacing);
    ScalarField field;
    field.values = density.values.data();
    field.dims = density.dims;
    field.origin = density.origin;
    field.spacing = {spacing, spacing, spacing};
    result.mesh = outer_components(contour(field, 1.0, true));
    result.grid_dims = density.dims;
    result.atoms_used = density.atoms_used;
    const std::size_t count = result.mesh.vertex_count();
    if (!options.coarsen || options.max_vertices == 0 || count <= options.max_vertices || attempt == 3) break;
    spacing = std::ceil(spacing * std::sqrt(double(count) / double(options.max_vertices)) * 1.05 * 100.0) / 100.0;
    if (spacing > kSpacingMax) throw UsageError("the structure is too large to make a surface of");
  }
  if (result.mesh.empty()) throw Error("the molecular surface is empty (are all atom radii zero?)");
  smooth_windowed_sinc(result.mesh, options.smoothing_iterations, options.pass_band);
  compute_normals(result.mesh);
  result.spacing = spacing;
  result.seconds = clock.seconds();
  return result;
}

}  // namespace espgrid::surface
