// The CPU loops are written once over the pair evaluator (Potential) and instantiated for
// every model through with_pair_potential. Potential::term<HostMath> is what each pair adds:
// q / sqrt(r²) for Coulomb, exactly the expression these loops had before the evaluator seam,
// so the maps are bit for bit what they were.
#include "src/compute/cpu_kernels.h"

#include <cmath>
#include <vector>

#include "src/compute/plane_tasks.h"

namespace espgrid::cpu {
namespace {

template <class Potential>
void naive_sum(const GridSumProblem& p, const ProgressFn& progress) {
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
inline void accumulate_row(const GridSumProblem& p, const float* gx, const float* dz2, float gy, float* row) {
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

std::vector<float> grid_x(const GridSumProblem& p) {
  std::vector<float> gx(static_cast<std::size_t>(p.nx));
  for (std::size_t i = 0; i < gx.size(); ++i) gx[i] = static_cast<float>(i) * p.hx;
  return gx;
}

void plane_dz2(const GridSumProblem& p, std::int64_t k, std::vector<float>& dz2) {
  const float gz = static_cast<float>(p.z_offset + k) * p.hz;
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const float dz = gz - p.z[a];
    dz2[a] = dz * dz + p.softening2;
  }
}

/// One thread's dz² + a² of every atom for the plane it is working on.
struct PlaneScratch {
  std::int64_t plane = -1;
  std::vector<float> dz2;
};

/// The row sweep over every plane; rows spread over `threads` threads (1: in order).
template <class Potential>
void plane_sweep(const GridSumProblem& p, int threads, const ProgressFn& progress) {
  const std::vector<float> gx = grid_x(p);
  // Per point one pair per atom, plus the row's own loop overhead.
  const double work = static_cast<double>(p.point_count()) * (static_cast<double>(p.atom_count) + 8.0);
  run_plane_tasks<PlaneScratch>(
      p.nz, p.ny, team_for(work, threads, p.nz * p.ny), progress, [&](std::int64_t k, std::int64_t j, PlaneScratch& s) {
        if (s.plane != k) {
          s.dz2.resize(p.atom_count);
          plane_dz2(p, k, s.dz2);
          s.plane = k;
        }
        float* row = p.potential + static_cast<std::size_t>(p.nx * (j + p.ny * k));
        accumulate_row<Potential>(p, gx.data(), s.dz2.data(), static_cast<float>(j) * p.hy, row);
      });
}

}  // namespace

void naive(const GridSumProblem& p, const ProgressFn& progress) {
  with_pair_potential(p.model, [&](auto potential) { naive_sum<decltype(potential)>(p, progress); });
}

void reference(const GridSumProblem& p, const ProgressFn& progress) {
  with_pair_potential(p.model, [&](auto potential) { plane_sweep<decltype(potential)>(p, 1, progress); });
}

void parallel(const GridSumProblem& p, int threads, const ProgressFn& progress) {
  with_pair_potential(p.model, [&](auto potential) { plane_sweep<decltype(potential)>(p, threads, progress); });
}

}  // namespace espgrid::cpu
