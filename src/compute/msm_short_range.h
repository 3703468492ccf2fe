// cpu-msm's short range along a map row, vectorized: one atom's terms over the run of points
// it reaches, q·(f(r) − g_a(r)) for r < a, in vectors of doubles with Google Highway (the best
// vector unit at run time, as cpu-simd). The same operations as the scalar loop in msm_cpu.cpp,
// in the same order, with no FMA: IEEE sqrt, division, products and sums give each lane the
// scalar loop's bits, so the map is the same on every machine and with or without Highway.
#pragma once

#include <cstdint>

namespace espgrid::msm {

/// What a run needs of the plan, for one row.
struct ShortRangeKernel {
  double hx = 0;                 ///< map spacing along x, Å
  double a2 = 0;                 ///< cutoff², Å²
  double inv_a = 0, inv_a2 = 0;  ///< 1/a (1/Å), 1/a² (1/Å²)
  double softening2 = 0;         ///< Å²
  int order = 0;                 ///< interpolation order (γ's Taylor terms)
  int power = 1;                 ///< 1: Coulomb, 2: distance (1/r²); Debye is not vectorized
  const double* softened = nullptr;  ///< g_a's polynomial in r² − a² (power 2)
};

/// Extra doubles the caller's row needs past its last point: a run's last vector may reach them.
constexpr int kShortRangePadding = 8;

/// Adds one atom's terms (at x_atom Å along the row, dy² and dz² Å² across it, charge q) to
/// row[i0 ... i1]; points at or beyond the cutoff get nothing, and no other point changes
/// (row[i1 + 1 ...] up to kShortRangePadding past the row is read and written back as it was,
/// unless it holds -0.0). Returns false, doing nothing, where this build has no Highway or the
/// kernel is Debye (power 0 here): the caller's scalar loop then does the same sums.
bool add_short_range_run(const ShortRangeKernel& k, double x_atom, double dy2, double dz2, double q,
                         std::int64_t i0, std::int64_t i1, double* row);

}  // namespace espgrid::msm
