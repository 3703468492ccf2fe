#include "src/compute/approximation_error.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "src/compute/oracle.h"

namespace espgrid {

void ApproximationErrorSum::add(double value, double exact, bool near_atom) {
  if (!std::isfinite(value)) {
    ++e_.nonfinite;
    return;
  }
  const double err = std::fabs(value - exact);
  e_.max_abs_anywhere = std::max(e_.max_abs_anywhere, err);
  if (near_atom) return;
  ++e_.points;
  e_.max_abs = std::max(e_.max_abs, err);
  err2_ += err * err;
  exact2_ += exact * exact;
}

void ApproximationErrorSum::merge(const ApproximationErrorSum& o) {
  e_.points += o.e_.points;
  e_.nonfinite += o.e_.nonfinite;
  e_.max_abs = std::max(e_.max_abs, o.e_.max_abs);
  e_.max_abs_anywhere = std::max(e_.max_abs_anywhere, o.e_.max_abs_anywhere);
  err2_ += o.err2_;
  exact2_ += o.exact2_;
}

ApproximationError ApproximationErrorSum::result() const {
  ApproximationError out = e_;
  if (out.points > 0) {
    out.rms_abs = std::sqrt(err2_ / static_cast<double>(out.points));
    // An exact map of zeros (no charge) is matched only by zeros.
    out.relative_rms = exact2_ > 0 ? std::sqrt(err2_ / exact2_) : (err2_ > 0 ? INFINITY : 0.0);
  }
  return out;
}

std::vector<std::uint8_t> near_atom_mask(const GridSumProblem& p, double distance) {
  std::vector<std::uint8_t> near(p.point_count(), 0);
  if (near.empty()) return near;
  const double d2 = distance * distance;
  const double h[3] = {p.hx, p.hy, p.hz};
  const std::int64_t n[3] = {p.nx, p.ny, p.nz};
  const std::int64_t offset[3] = {0, 0, p.z_offset};
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const double c[3] = {p.x[a], p.y[a], p.z[a]};
    std::int64_t lo[3], hi[3];
    bool inside = true;
    for (int d = 0; d < 3; ++d) {
      // Map index i lies at (offset + i)·h.
      const double first = std::ceil((c[d] - distance) / h[d]) - static_cast<double>(offset[d]);
      const double last = std::floor((c[d] + distance) / h[d]) - static_cast<double>(offset[d]);
      if (last < 0 || first > static_cast<double>(n[d] - 1)) inside = false;
      lo[d] = static_cast<std::int64_t>(std::max(first, 0.0));
      hi[d] = static_cast<std::int64_t>(std::min(last, static_cast<double>(n[d] - 1)));
    }
    if (!inside) continue;
    for (std::int64_t k = lo[2]; k <= hi[2]; ++k) {
      const double dz = static_cast<double>(offset[2] + k) * h[2] - c[2];
      for (std::int64_t j = lo[1]; j <= hi[1]; ++j) {
        const double dy = static_cast<double>(j) * h[1] - c[1];
        for (std::int64_t i = lo[0]; i <= hi[0]; ++i) {
          const double dx = static_cast<double>(i) * h[0] - c[0];
          if (dx * dx + dy * dy + dz * dz < d2) near[static_cast<std::size_t>(i + p.nx * (j + p.ny * k))] = 1;
        }
      }
    }
  }
  return near;
}

namespace {

template <class Exact>
ApproximationError compare(const GridSumProblem& p, const float* values, const Exact* exact) {
  const std::vector<std::uint8_t> near = near_atom_mask(p);
  ApproximationErrorSum sum;
  for (std::size_t i = 0; i < near.size(); ++i) sum.add(values[i], static_cast<double>(exact[i]), near[i] != 0);
  return sum.result();
}

}  // namespace

ApproximationError sampled_approximation_error(const GridSumProblem& p, std::size_t samples, std::uint64_t seed) {
  const std::size_t n = p.point_count();
  ApproximationErrorSum sum;
  if (n == 0 || samples == 0) return sum.result();
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, n - 1);
  const auto nx = static_cast<std::size_t>(p.nx), ny = static_cast<std::size_t>(p.ny);
  const double d2 = kAwayFromAtoms * kAwayFromAtoms;
  std::size_t drawn = 0, far = 0;
  // Batches of draws, each evaluated on every thread, until enough far points are in.
  while (far < samples && drawn < 20 * samples) {
    std::vector<std::size_t> batch;
    if (drawn == 0) {
      batch.push_back(0);
      batch.push_back(n - 1);
    }
    while (batch.size() < std::max<std::size_t>(64, samples - far)) batch.push_back(pick(rng));
    drawn += batch.size();
    std::vector<double> exact(batch.size());
    std::vector<std::uint8_t> near(batch.size());
#pragma omp parallel for schedule(dynamic, 4)
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(batch.size()); ++b) {
      const std::size_t idx = batch[static_cast<std::size_t>(b)];
      const auto i = static_cast<std::int64_t>(idx % nx), j = static_cast<std::int64_t>((idx / nx) % ny),
                 k = static_cast<std::int64_t>(idx / (nx * ny));
      const double x = static_cast<double>(i) * p.hx, y = static_cast<double>(j) * p.hy,
                   z = static_cast<double>(p.z_offset + k) * p.hz;
      bool close = false;
      for (std::size_t a = 0; a < p.atom_count && !close; ++a) {
        const double dx = x - p.x[a], dy = y - p.y[a], dz = z - p.z[a];
        close = dx * dx + dy * dy + dz * dz < d2;
      }
      near[static_cast<std::size_t>(b)] = close ? 1 : 0;
      exact[static_cast<std::size_t>(b)] = oracle_at(p, i, j, k).potential;
    }
    for (std::size_t b = 0; b < batch.size(); ++b) {
      sum.add(p.potential[batch[b]], exact[b], near[b] != 0);
      far += near[b] ? 0 : 1;
    }
  }
  return sum.result();
}

ApproximationError approximation_error(const GridSumProblem& p, const float* values, const float* exact) {
  return compare(p, values, exact);
}

ApproximationError approximation_error(const GridSumProblem& p, const float* values, const double* exact) {
  return compare(p, values, exact);
}

}  // namespace espgrid
