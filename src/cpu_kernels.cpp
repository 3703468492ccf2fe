#include "src/cpu_kernels.h"

#include <omp.h>

#include <cmath>
#include <vector>

namespace espgrid::cpu {

void naive(const DcsProblem& p, const ProgressFn& progress) {
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
          sum += p.q[a] / std::sqrt(dx * dx + (dy * dy + (dz * dz + p.softening2)));
        }
        p.potential[static_cast<std::size_t>(i + p.nx * (j + p.ny * k))] = sum;
      }
    }
    if (progress) progress(static_cast<std::size_t>(k + 1), static_cast<std::size_t>(p.nz));
  }
}

namespace {

/// Adds every atom's contribution to one row of nx points, in atom order.
/// dz2 holds dz² + a² of each atom for this row's plane.
inline void accumulate_row(const DcsProblem& p, const float* gx, const float* dz2, float gy,
                           float* row) {
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
      row[i] += qa / std::sqrt(dx * dx + dyz2);
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

}  // namespace

void reference(const DcsProblem& p, const ProgressFn& progress) {
  const std::vector<float> gx = grid_x(p);
  std::vector<float> dz2(p.atom_count);
  for (std::int64_t k = 0; k < p.nz; ++k) {
    plane_dz2(p, k, dz2);
    for (std::int64_t j = 0; j < p.ny; ++j) {
      float* row = p.potential + static_cast<std::size_t>(p.nx * (j + p.ny * k));
      accumulate_row(p, gx.data(), dz2.data(), static_cast<float>(j) * p.hy, row);
    }
    if (progress) progress(static_cast<std::size_t>(k + 1), static_cast<std::size_t>(p.nz));
  }
}

void parallel(const DcsProblem& p, int threads, const ProgressFn& progress) {
  const std::vector<float> gx = grid_x(p);
  std::vector<float> dz2(p.atom_count);
  const int team = threads > 0 ? threads : omp_get_max_threads();
  for (std::int64_t k = 0; k < p.nz; ++k) {
    plane_dz2(p, k, dz2);
#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
    for (std::int64_t j = 0; j < p.ny; ++j) {
      float* row = p.potential + static_cast<std::size_t>(p.nx * (j + p.ny * k));
      accumulate_row(p, gx.data(), dz2.data(), static_cast<float>(j) * p.hy, row);
    }
    if (progress) progress(static_cast<std::size_t>(k + 1), static_cast<std::size_t>(p.nz));
  }
}

}  // namespace espgrid::cpu
