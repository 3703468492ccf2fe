// The float32 inputs of cuda::potential_at_points (points_cuda_driver.h) built from double
// positions: every position relative to one centre near the atoms and the points, so float32
// keeps its resolution wherever the molecule lies. Used by `espgrid sample` (pipeline/
// point_sampling.cpp) and PB's boundary values (pb/pb_boundary.cpp); PlaneGroupInputs those of
// cuda::potential_on_plane_groups (PB's banded boundary).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "src/compute/points_cuda_driver.h"
#include "src/physics/physics_options.h"

namespace espgrid {

struct PointSumInputs {
  std::vector<float> x, y, z, q, px, py, pz;

  /// Atom a at (ax[a], ay[a], az[a]) Å with charge charges[a] e, scaled by k (output unit × Å / e);
  /// point p at points[3p], points[3p+1], points[3p+2] Å.
  PointSumInputs(const std::vector<double>& ax, const std::vector<double>& ay, const std::vector<double>& az,
                 const std::vector<double>& charges, double k, const std::vector<double>& points,
                 const std::array<double, 3>& centre)
      : x(ax.size()), y(ax.size()), z(ax.size()), q(ax.size()), px(points.size() / 3), py(px.size()), pz(px.size()) {
    for (std::size_t a = 0; a < ax.size(); ++a) {
      x[a] = static_cast<float>(ax[a] - centre[0]);
      y[a] = static_cast<float>(ay[a] - centre[1]);
      z[a] = static_cast<float>(az[a] - centre[2]);
      q[a] = static_cast<float>(charges[a] * k);
    }
    for (std::size_t p = 0; p < px.size(); ++p) {
      px[p] = static_cast<float>(points[3 * p] - centre[0]);
      py[p] = static_cast<float>(points[3 * p + 1] - centre[1]);
      pz[p] = static_cast<float>(points[3 * p + 2] - centre[2]);
    }
  }

  /// The problem over these arrays for `model`, writing point_count values to `potential`.
  cuda::PointSumProblem problem(PairModel model, const PairParameters& pair, float* potential) const {
    cuda::PointSumProblem out;
    out.x = x.data();
    out.y = y.data();
    out.z = z.data();
    out.q = q.data();
    out.atom_count = x.size();
    out.px = px.data();
    out.py = py.data();
    out.pz = pz.data();
    out.point_count = px.size();
    out.softening2 = static_cast<float>(kSofteningLength * kSofteningLength);
    out.model = model;
    out.pair = pair;
    out.potential = potential;
    return out;
  }
};

/// The atoms of cuda::potential_on_plane_groups built from double positions: x, y, z relative to
/// `centre` and the charge × k, interleaved as the device reads them (PB's banded boundary).
struct PlaneGroupInputs {
  std::vector<float> xyzq;

  PlaneGroupInputs(const std::vector<double>& ax, const std::vector<double>& ay, const std::vector<double>& az,
                   const std::vector<double>& charges, double k, const std::array<double, 3>& centre)
      : xyzq(4 * ax.size()) {
    for (std::size_t a = 0; a < ax.size(); ++a) {
      xyzq[4 * a] = static_cast<float>(ax[a] - centre[0]);
      xyzq[4 * a + 1] = static_cast<float>(ay[a] - centre[1]);
      xyzq[4 * a + 2] = static_cast<float>(az[a] - centre[2]);
      xyzq[4 * a + 3] = static_cast<float>(charges[a] * k);
    }
  }

  /// The problem of `groups` over these atoms for `model`, writing every group's points to `potential`.
  cuda::PlaneGroupProblem problem(PairModel model, const PairParameters& pair,
                                  const std::vector<cuda::PlaneGroup>& groups, float* potential) const {
    cuda::PlaneGroupProblem out;
    out.atoms_xyzq = xyzq.data();
    out.atom_count = xyzq.size() / 4;
    out.groups = groups.data();
    out.group_count = groups.size();
    out.softening2 = static_cast<float>(kSofteningLength * kSofteningLength);
    out.model = model;
    out.pair = pair;
    out.potential = potential;
    return out;
  }
};

}  // namespace espgrid
