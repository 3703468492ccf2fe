#include "src/compute/oracle.h"

#include <cmath>

namespace espgrid {
namespace {

constexpr double kFloatUlp = 1.0 / (1 << 23);  // float32 unit in the last place at 1.0

// The true positions: the double ones where the problem has them (grid points at i·h from the
// origin, atoms before their rounding to float), else the float inputs.
template <class Potential>
OracleValue oracle_sum(const DcsProblem& p, std::int64_t i, std::int64_t j, std::int64_t k) {
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

OracleValue oracle_at(const DcsProblem& p, std::int64_t i, std::int64_t j, std::int64_t k) {
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

double kernel_difference_bound(double magnitude, std::size_t atom_count, PairModel model,
                               const PairParameters& pair) {
  const double term = with_pair_potential(model, [&](auto potential) {
    return decltype(potential)::typical_term_ulps(pair);
  });
  return 2.0 * (summation_rounding_bound(atom_count) + term * kFloatUlp) * magnitude;
}

}  // namespace espgrid
