#include "src/view/vertex_potential.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "src/core/errors.h"
#include "src/core/thread_count.h"
#include "src/physics/pair_potentials.h"

namespace espgrid::surface {

std::vector<double> offset_points(const TriangleMesh& mesh, double offset) {
  std::vector<double> points(mesh.positions.size());
  const bool has_normals = mesh.normals.size() == mesh.positions.size();
  for (std::size_t i = 0; i < points.size(); ++i)
    points[i] =
        static_cast<double>(mesh.positions[i]) + (has_normals ? offset * static_cast<double>(mesh.normals[i]) : 0.0);
  return points;
}

namespace {

/// Σ_a k q_a f(r) in double at `count` points: `at(s, x, y, z)` places point s and returns the atom
/// whose own term it leaves out (atoms.size() for none). The same sum for mesh points and atoms.
template <class PointAt>
std::vector<double> pair_sums(const Atoms& atoms, const PhysicsOptions& physics, std::size_t count, int threads,
                              PointAt at) {
  std::vector<double> out(count);
  const double k = coulomb_factor(physics);
  const PairParameters pair = pair_parameters(physics);
  const double softening2 = kSofteningLength * kSofteningLength;
  std::vector<double> q(atoms.size());
  for (std::size_t a = 0; a < atoms.size(); ++a) q[a] = atoms.charge[a] * k;
  with_pair_potential(physics.model, [&](auto potential) {
    using Potential = decltype(potential);
    const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads_to_use(threads))
    for (std::int64_t s = 0; s < n; ++s) {
      double px = 0, py = 0, pz = 0;
      const std::size_t own = at(static_cast<std::size_t>(s), px, py, pz);
      double sum = 0;
      for (std::size_t a = 0; a < q.size(); ++a) {
        if (a == own) continue;
        const double dx = px - atoms.x[a], dy = py - atoms.y[a], dz = pz - atoms.z[a];
        sum += Potential::template term<HostMath, double>(q[a], dx * dx + dy * dy + dz * dz + softening2, pair);
      }
      out[static_cast<std::size_t>(s)] = sum;
    }
  });
  return out;
}

}  // namespace

std::vector<float> potential_at(const Atoms& atoms, const PhysicsOptions& physics, const std::vector<double>& points,
                                int threads) {
  // The pair evaluator of a PB physics is its Coulomb part only: summing it would label the vacuum
  // potential "pb". Every caller refuses --model pb with its own advice first; this is the floor.
  if (physics.is_pb())
    throw UsageError(
        "a Poisson-Boltzmann potential is a field solve, not a sum over the atoms: map it with "
        "--model pb and interpolate that map");
  const std::vector<double> sums =
      pair_sums(atoms, physics, points.size() / 3, threads, [&](std::size_t p, double& x, double& y, double& z) {
        x = points[3 * p], y = points[3 * p + 1], z = points[3 * p + 2];
        return atoms.size();
      });
  return std::vector<float>(sums.begin(), sums.end());
}

std::vector<double> potential_at_atoms(const Atoms& atoms, const PhysicsOptions& physics, std::size_t first,
                                       std::size_t count, int threads) {
  return pair_sums(atoms, physics, count, threads, [&](std::size_t s, double& x, double& y, double& z) {
    const std::size_t i = first + s;
    x = atoms.x[i], y = atoms.y[i], z = atoms.z[i];
    return i;
  });
}

namespace {

/// A point's coordinate u along one axis in grid steps is inside when within a millionth of a
/// spacing of [0, dims − 1].
bool inside_axis(double u, std::int64_t dims) { return u >= -1e-6 && u <= static_cast<double>(dims - 1) + 1e-6; }

}  // namespace

bool inside_box(const GridSpec& g, double x, double y, double z) {
  const double p[3] = {x, y, z};
  for (int a = 0; a < 3; ++a)
    if (!inside_axis((p[a] - g.origin[a]) / g.spacing[a], g.dims[a])) return false;
  return true;
}

std::vector<float> interpolate(const PotentialMap& map, const std::vector<double>& points) {
  const std::size_t n = points.size() / 3;
  std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());
  const GridSpec& g = map.grid;
  const std::int64_t nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  const auto at = [&](std::int64_t i, std::int64_t j, std::int64_t kk) {
    return static_cast<double>(map.values[static_cast<std::size_t>(i + nx * (j + ny * kk))]);
  };
  for (std::size_t p = 0; p < n; ++p) {
    double f[3];
    std::int64_t i0[3];
    bool inside = true;
    for (int a = 0; a < 3; ++a) {
      const double u = (points[3 * p + static_cast<std::size_t>(a)] - g.origin[a]) / g.spacing[a];
      const double last = static_cast<double>(g.dims[a] - 1);
      if (!inside_axis(u, g.dims[a])) {
        inside = false;
        break;
      }
      const double c = std::clamp(u, 0.0, last);
      i0[a] =
          std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(c)), std::max<std::int64_t>(g.dims[a] - 2, 0));
      f[a] = g.dims[a] > 1 ? c - static_cast<double>(i0[a]) : 0.0;
    }
    if (!inside) continue;
    const std::int64_t i1[3] = {std::min(i0[0] + 1, nx - 1), std::min(i0[1] + 1, ny - 1), std::min(i0[2] + 1, nz - 1)};
    double v = 0;
    for (int c = 0; c < 8; ++c) {
      const std::int64_t ii = (c & 1) ? i1[0] : i0[0], jj = (c & 2) ? i1[1] : i0[1], kk = (c & 4) ? i1[2] : i0[2];
      const double w = ((c & 1) ? f[0] : 1 - f[0]) * ((c & 2) ? f[1] : 1 - f[1]) * ((c & 4) ? f[2] : 1 - f[2]);
      v += w * at(ii, jj, kk);
    }
    out[p] = static_cast<float>(v);
  }
  return out;
}

}  // namespace espgrid::surface
