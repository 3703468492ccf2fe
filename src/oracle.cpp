#include "src/oracle.h"

#include <cmath>

namespace espgrid {

OracleValue oracle_at(const DcsProblem& p, std::int64_t i, std::int64_t j, std::int64_t k) {
  const double gx = static_cast<double>(i) * p.hx;
  const double gy = static_cast<double>(j) * p.hy;
  const double gz = static_cast<double>(p.z_offset + k) * p.hz;
  OracleValue out;
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const double dx = gx - p.x[a], dy = gy - p.y[a], dz = gz - p.z[a];
    const double r2 = dx * dx + dy * dy + dz * dz + static_cast<double>(p.softening2);
    const double inv_r = 1.0 / std::sqrt(r2);
    out.potential += p.q[a] * inv_r;
    out.magnitude += std::fabs(p.q[a]) * inv_r;
    out.gradient += std::fabs(p.q[a]) * inv_r * inv_r;
  }
  return out;
}

double float_tolerance(const OracleValue& oracle, std::size_t atom_count, double coordinate_extent) {
  constexpr double ulp = 1.0 / (1 << 23);  // float32 unit in the last place at 1.0
  const double rounding = (4.0 * std::sqrt(static_cast<double>(atom_count)) + 8.0) * ulp * oracle.magnitude;
  const double position = 2.0 * ulp * coordinate_extent * oracle.gradient;
  return rounding + position;
}

}  // namespace espgrid
