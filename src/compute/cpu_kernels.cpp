// The CPU loops are written once over the pair evaluator (Potential) and instantiated for
// every model through with_pair_potential. Potential::term<HostMath> is what each pair adds:
// q / sqrt(r²) for Coulomb, exactly the expression these loops had before the evaluator seam,
// so the maps are bit for bit what they were.
#include "src/compute/cpu_kernels.h"

#include <omp.h>

#include <cmath>
#include <vector>

namespace espgrid::cpu {
namespace {

template <class Potential>
void naive_sum(const DcsProblem& p, const ProgressFn& progress) {
  for (std::int64_t k = 0; k < p.nz; ++k) {
    for (std::int64_t j = 0; j < p.ny; ++j) {
      for (std::int64_t i = 0; i < p.nx; ++i) {
        const float gx = static_cast<float>(i) * p.hx;
        const float gy = static_cast<float>(j) * p.hy;
        const float gz = static_cast<float>(p.z_offset + k) * p.hz;
        float sum = 0.0f;
        for (std::size_t a = 0; a < p.atom_count; ++a) {
          const float dx = gx - p.x[a];
          const float dy = gy - p.y[a];
          const float dz = gz - p.z[a];
          sum += Potential::template term<HostMath>(p.q[a], dx * dx + (dy * dy + (dz * dz + p.softening2)), p.pair);
        }
        p.potential[static_cast<std::size_t>(i + p.nx * (j + p.ny * k))] = sum;
      }
    }
    if (progress) progress(static_cast<std::size_t>(k + 1), static_cast<std::size_t>(p.nz));
  }
}

/// Adds every atom's contribution to one row of nx points, in atom order.
/// dz2 holds dz² + a² of each atom for this row's plane.
template <class Potential>
inline void accumulate_row(const DcsProblem& p, const float* gx, const float* dz2, float gy, float* row) {
  const auto nx = static_cast<std::size_t>(p.nx);
  for (std::size_t i = 0; i < nx; ++i) row[i] = 0.0f;
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const float dy = gy - p.y[a];
    const float dyz2 = dy * dy + dz2[a];
    const float xa = p.x[a];
    const float qa = p.q[a];
#pragma omp simd
    for (std::size_t i = 0; i < nx; ++i) {
      const float dx = gx[i] - xa;
      row[i] += Potential::template term<HostMath>(qa, dx * dx + dyz2, p.pair);
    }
  }
}

std::vector<float> grid_x(const DcsProblem& p) {
  std::vector<float> gx(static_cast<std::size_t>(p.nx));
  for (std::size_t i = 0; i < gx.size(); ++i) gx[i] = static_cast<float>(i) * p.hx;
  return gx;
}

void plane_dz2(const DcsProblem& p, std::int64_t k, std::vector<float>& dz2) {
  const float gz = static_cast<float>(p.z_offset + k) * p.hz;
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const float dz = gz - p.z[a];
    dz2[a] = dz * dz + p.softening2;
  }
}

/// The row sweep over every plane; rows of a plane spread over `team` threads (1: in order).
template <class Potential>
void plane_sweep(const DcsProblem& p, int team, const ProgressFn& progress) {
  const std::vector<float> gx = grid_x(p);
  std::vector<float> dz2(p.atom_count);
  for (std::int64_t k = 0; k < p.nz; ++k) {
    plane_dz2(p, k, dz2);
#pragma omp parallel for num_threads(team) schedule(dynamic, 1) if (team > 1)
    for (std::int64_t j = 0; j < p.ny; ++j) {
      float* row = p.potential + static_cast<std::size_t>(p.nx * (j + p.ny * k));
      accumulate_row<Potential>(p, gx.data(), dz2.data(), static_cast<float>(j) * p.hy, row);
    }
    if (progress) progress(static_cast<std::size_t>(k + 1), static_cast<std::size_t>(p.nz));
  }
}

}  // namespace

void naive(const DcsProblem& p, const ProgressFn& progress) {
  with_pair_potential(p.model, [&](auto potential) { naive_sum<decltype(potential)>(p, progress); });
}

void reference(const DcsProblem& p, const ProgressFn& progress) {
  with_pair_potential(p.model, [&](auto potential) { plane_sweep<decltype(potential)>(p, 1, progress); });
}

void parallel(const DcsProblem& p, int threads, const ProgressFn& progress) {
  const int team = threads > 0 ? threads : omp_get_max_threads();
  with_pair_potential(p.model, [&](auto potential) { plane_sweep<decltype(potential)>(p, team, progress); });
}

}  // namespace espgrid::cpu
