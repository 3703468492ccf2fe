// What the Poisson-Boltzmann suites share (test_pb, test_pb_nonlinear, test_pb_physics,
// test_pb_scale): grids around a structure, the region where agreement is judged, and the error
// measure. Their GPU cases skip through test_support.h's ESPGRID_REQUIRE_CUDA_OR_SKIP.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/grid.h"

namespace espgrid::testing {

/// Relative RMS of a − b over the entries where `mask` is set (all when empty).
inline double relative_rms(const std::vector<double>& a, const std::vector<double>& b,
                           const std::vector<char>& mask = {}) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!mask.empty() && !mask[i]) continue;
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

inline std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

/// Nodes ≥ 1.4 Å outside every van der Waals sphere, boundary planes excluded: where the PB
/// agreement targets are stated (and where surface colourings look).
inline std::vector<char> outside_mask(const Atoms& atoms, const GridSpec& g) {
  std::vector<char> mask(g.point_count(), 0);
  for (std::int64_t k = 1; k < g.dims[2] - 1; ++k)
    for (std::int64_t j = 1; j < g.dims[1] - 1; ++j)
      for (std::int64_t i = 1; i < g.dims[0] - 1; ++i) {
        bool out = true;
        for (std::size_t a = 0; a < atoms.size() && out; ++a) {
          const double dx = g.position(0, i) - atoms.x[a], dy = g.position(1, j) - atoms.y[a],
                       dz = g.position(2, k) - atoms.z[a], r = atoms.radius[a] + 1.4;
          out = dx * dx + dy * dy + dz * dz >= r * r;
        }
        mask[static_cast<std::size_t>(i + g.dims[0] * (j + g.dims[1] * k))] = out;
      }
  return mask;
}

/// A grid around `atoms`: `padding` Å beyond their centres at `h` Å, `extra` more nodes along y
/// and 2 × `extra` along z so that the axes differ (awkward sizes: nothing is a power of two plus
/// one by accident).
inline GridSpec grid_around(const Atoms& atoms, double h, double padding, int extra = 0) {
  const BoundingBox box = bounding_box(atoms);
  GridSpec g;
  for (int d = 0; d < 3; ++d) {
    g.spacing[d] = h;
    g.dims[d] = static_cast<std::int64_t>(std::ceil((box.hi[d] - box.lo[d] + 2 * padding) / h)) + 1 + d * extra;
    g.origin[d] = 0.5 * (box.lo[d] + box.hi[d]) - 0.5 * h * static_cast<double>(g.dims[d] - 1);
  }
  return g;
}

}  // namespace espgrid::testing
