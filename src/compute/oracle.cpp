#include "src/compute/oracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace espgrid {
namespace {

constexpr double kFloatUlp = 1.0 / (1 << 23);  // float32 unit in the last place at 1.0

// The true positions: the double ones where the problem has them (grid points at i·h from the
// origin, atoms before their rounding to float), else the float inputs.
template <class Potential>
OracleValue oracle_sum(const GridSumProblem& p, std::int64_t i, std::int64_t j, std::int64_t k) {
  const double gx = static_cast<double>(i) * (p.hx64 > 0 ? p.hx64 : p.hx);
  const double gy = static_cast<double>(j) * (p.hy64 > 0 ? p.hy64 : p.hy);
  const double gz = static_cast<double>(p.z_offset + k) * (p.hz64 > 0 ? p.hz64 : p.hz);
  const bool exact = p.x64 && p.y64 && p.z64;
  OracleValue out;
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const double dx = gx - (exact ? p.x64[a] : p.x[a]), dy = gy - (exact ? p.y64[a] : p.y[a]),
                 dz = gz - (exact ? p.z64[a] : p.z[a]);
    const double r2 = dx * dx + dy * dy + dz * dz + static_cast<double>(p.softening2);
    const double q = p.q[a];
    out.potential += Potential::template term<HostMath>(q, r2, p.pair);
    out.magnitude += std::fabs(q) * Potential::value(r2, p.pair);
    out.gradient += std::fabs(q) * Potential::slope(r2, p.pair);
    out.term_rounding += std::fabs(q) * Potential::value(r2, p.pair) * Potential::term_ulps(r2, p.pair) * kFloatUlp;
  }
  return out;
}

}  // namespace

OracleValue oracle_at(const GridSumProblem& p, std::int64_t i, std::int64_t j, std::int64_t k) {
  return with_pair_potential(p.model, [&](auto potential) { return oracle_sum<decltype(potential)>(p, i, j, k); });
}

double summation_rounding_bound(std::size_t atom_count) {
  return 4.0 * std::sqrt(static_cast<double>(atom_count)) * kFloatUlp;
}

double float_tolerance(const OracleValue& oracle, std::size_t atom_count, double coordinate_extent) {
  const double rounding = summation_rounding_bound(atom_count) * oracle.magnitude + oracle.term_rounding;
  const double position = 2.0 * kFloatUlp * coordinate_extent * oracle.gradient;
  return rounding + position;
}

double kernel_difference_bound(double magnitude, std::size_t atom_count, PairModel model, const PairParameters& pair) {
  const double term =
      with_pair_potential(model, [&](auto potential) { return decltype(potential)::typical_term_ulps(pair); });
  return 2.0 * (summation_rounding_bound(atom_count) + term * kFloatUlp) * magnitude;
}

std::size_t count_nonfinite(const float* values, std::size_t count) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) bad += std::isfinite(values[i]) ? 0 : 1;
  return bad;
}

OracleCheck check_against_oracle(const GridSumProblem& p, double coordinate_extent, std::size_t samples,
                                 std::uint64_t seed) {
  const std::size_t n = p.point_count();
  OracleCheck check;
  if (n == 0 || p.potential == nullptr) return check;
  std::vector<std::size_t> points;
  if (n <= samples + 2) {
    points.resize(n);
    for (std::size_t i = 0; i < n; ++i) points[i] = i;
  } else {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    points.push_back(0);
    points.push_back(n - 1);
    for (std::size_t s = 0; s < samples; ++s) points.push_back(pick(rng));
  }
  const auto nx = static_cast<std::size_t>(p.nx), ny = static_cast<std::size_t>(p.ny);
  const auto count = static_cast<std::int64_t>(points.size());
  double worst = 0;
  std::size_t failures = 0;
#pragma omp parallel for schedule(dynamic, 8) reduction(max : worst) reduction(+ : failures)
  for (std::int64_t s = 0; s < count; ++s) {
    const std::size_t idx = points[static_cast<std::size_t>(s)];
    const float value = p.potential[idx];
    if (!std::isfinite(value)) {
      worst = std::numeric_limits<double>::infinity();
      ++failures;
      continue;
    }
    const auto i = static_cast<std::int64_t>(idx % nx);
    const auto j = static_cast<std::int64_t>((idx / nx) % ny);
    const auto k = static_cast<std::int64_t>(idx / (nx * ny));
    const OracleValue o = oracle_at(p, i, j, k);
    const double tol = float_tolerance(o, p.atom_count, coordinate_extent);
    const double err = std::fabs(static_cast<double>(value) - o.potential);
    const double ratio = tol > 0 ? err / tol : (err == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    worst = std::max(worst, ratio);
    if (!(err <= tol)) ++failures;
  }
  check.checked = points.size();
  check.failures = failures;
  check.max_err_over_tol = worst;
  return check;
}

}  // namespace espgrid
