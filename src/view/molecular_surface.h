// The molecular surface espgrid draws, by the definition of viz/render_potential.py
// (docs/viz.md, "Surface"): the level set f = 1 of the Gaussian density
//
//     f(x) = Σᵢ exp(−α (|x − cᵢ|² / Rᵢ² − 1)),   Rᵢ = rᵢ + probe,  α = 2,
//
// summed over atoms of radius > 0.05 Å within 2.6 Rᵢ (a box of that half-width, as the
// renderer does), sampled on a grid of `spacing` Å padded by 2.6 max R + 2 spacings, contoured
// (surface nets: mesh.h), rid of the walls of cavities inside (never seen; the renderer keeps
// only the largest piece, which also drops a second molecule: mesh.h, outer_components),
// smoothed by a windowed-sinc filter (15 iterations, pass band 0.1, as the renderer's VTK
// filter) and given outward vertex normals. When no atom has a radius (an XYZ file read with
// zero radii), every atom gets 1.2 Å (hydrogen) or 1.7 Å, as the renderer does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/core/atoms.h"
#include "src/view/mesh.h"

namespace espgrid::surface {

struct SurfaceOptions {
  double spacing = 0.5;  ///< Å, of the grid the Gaussian density is contoured on
  double probe = 0.0;    ///< Å added to every radius (1.4: a solvent-accessible surface)
  int smoothing_iterations = 15;
  double pass_band = 0.1;  ///< of the windowed-sinc filter, in VTK's units (0..2)
  /// Largest grid of the density accepted, points; a larger one is refused (UsageError) unless
  /// `coarsen` is set, in which case the spacing grows until the grid fits.
  std::int64_t max_grid_points = 60'000'000;
  bool coarsen = false;
  /// With `coarsen`: a surface of more vertices (counted before smoothing) is contoured again
  /// on a grid coarser by the square root of the excess (vertices scale as 1/spacing²); 0: no limit.
  std::size_t max_vertices = 0;
};

struct SurfaceResult {
  TriangleMesh mesh;                        ///< vertices with outward normals
  double spacing = 0;                       ///< Å, the spacing used (larger than asked when coarsened)
  std::array<std::int64_t, 3> grid_dims{};  ///< the density's grid
  std::size_t atoms_used = 0;               ///< atoms with a radius (all of them when none has one)
  double seconds = 0;                       ///< wall time
};

/// The molecular surface of `atoms`. Throws UsageError when the options are out of range or
/// the grid would exceed options.max_grid_points, and Error when the surface is empty.
SurfaceResult molecular_surface(const Atoms& atoms, const SurfaceOptions& options = {});

/// The Gaussian density on its grid (x fastest), for tests: f at grid point (i, j, k) is
/// values[i + nx*(j + ny*k)] at origin + (i, j, k) * spacing.
struct GaussianDensity {
  std::vector<float> values;
  std::array<std::int64_t, 3> dims{};
  std::array<double, 3> origin{};
  double spacing = 0;
  std::size_t atoms_used = 0;
};
GaussianDensity gaussian_density(const Atoms& atoms, double probe, double spacing);
/// The grid gaussian_density would use, without computing it.
std::array<std::int64_t, 3> gaussian_grid_dims(const Atoms& atoms, double probe, double spacing);

}  // namespace espgrid::surface
