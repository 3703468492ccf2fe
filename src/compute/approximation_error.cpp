#include "src/compute/approximation_error.h"

#include <algorithm>
#include <cmath>

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

std::vector<std::uint8_t> near_atom_mask(const DcsProblem& p, double distance) {
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
ApproximationError compare(const DcsProblem& p, const float* values, const Exact* exact) {
  const std::vector<std::uint8_t> near = near_atom_mask(p);
  ApproximationErrorSum sum;
  for (std::size_t i = 0; i < near.size(); ++i) sum.add(values[i], static_cast<double>(exact[i]), near[i] != 0);
  return sum.result();
}

}  // namespace

ApproximationError approximation_error(const DcsProblem& p, const float* values, const float* exact) {
  return compare(p, values, exact);
}

ApproximationError approximation_error(const DcsProblem& p, const float* values, const double* exact) {
  return compare(p, values, exact);
}

}  // namespace espgrid
