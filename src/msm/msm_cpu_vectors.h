// cpu-msm's two heaviest loops in vectors of doubles with Google Highway (the best vector unit
// at run time, as cpu-simd): the short range along a map row (one atom's terms over the run of
// points it reaches, q·(f(r) − g_a(r)) for r < a) and a lattice row of a level's cutoff sums
// (neighbouring outputs in the lanes). The same operations as the scalar loops in msm_cpu.cpp,
// in the same order per point, with no FMA (-ffp-contract=off): IEEE sqrt, division, products
// and sums (and Debye's e^(−κr) by the steps of msm_math.h's exp_nonpositive) give each lane the
// scalar loop's bits, so maps are the same on every machine and
// with or without Highway (tests: MsmShortRange.*, MsmPhases.CutoffSumsAreTheSameBits...).
#pragma once

#include <cstdint>

namespace espgrid::msm {

/// What a run needs of the plan, for one row.
struct ShortRangeKernel {
  double hx = 0;                     ///< map spacing along x, Å
  double a2 = 0;                     ///< cutoff², Å²
  double inv_a = 0, inv_a2 = 0;      ///< 1/a (1/Å), 1/a² (1/Å²)
  double softening2 = 0;             ///< Å²
  int order = 0;                     ///< interpolation order (γ's Taylor terms)
  int power = 1;                     ///< f = e^(−κr)/r^power: 1 (Coulomb, Debye) or 2 (distance: 1/r²)
  double kappa = 0;                  ///< κ, 1/Å (Debye: e^(−κr) by msm_math.h's exp_nonpositive steps)
  const double* softened = nullptr;  ///< g_a's polynomial in r² − a² (every kernel but Coulomb)
};

/// Extra doubles the caller's row needs past its last point: a run's last vector may reach them.
constexpr int kShortRangePadding = 8;

/// Adds one atom's terms (at x_atom Å along the row, dy² and dz² Å² across it, charge q) to
/// row[i0 ... i1]; points at or beyond the cutoff get nothing, and no other point changes
/// (row[i1 + 1 ...] up to kShortRangePadding past the row is read and written back as it was,
/// unless it holds -0.0). Returns false, doing nothing, where this build has no Highway or the
/// power is neither 1 nor 2: the caller's scalar loop then does the same sums.
bool add_short_range_run(const ShortRangeKernel& k, double x_atom, double dy2, double dz2, double q, std::int64_t i0,
                         std::int64_t i1, double* row);

/// A lattice copied with this many zeros before and after every x row, for cutoff_row.
constexpr std::int64_t kLatticePadding = 16;

/// One row of outputs (my, mz) of a level's cutoff sum, Σ_j K(j) q(m + j) · scale, over the
/// stencil rows jz0..jz1 × jy0..jy1 (the caller's clipping to the charged box along y and z),
/// each row's jx up to its extent, on `q` padded along x (kLatticePadding zeros each side, and
/// zero outside the charged box): neighbouring outputs in the lanes of a vector, each lane
/// summing its terms in the scalar loop's order. The zeros a lane reads outside its own clipping
/// add +0.0 or -0.0 to a sum that is never -0.0, so each output gets the scalar loop's bits.
struct CutoffRow {
  const double* stencil = nullptr;              ///< the level's (2R+1)³ stencil, x fastest
  const int* row_extent = nullptr;              ///< (2R+1)² extents of its x rows
  int radius = 0;                               ///< R
  const double* padded = nullptr;               ///< q at (x = lattice lo, y, z) is padded[pad + width·(y' + ny·z')]
  std::int64_t width = 0, ny = 0;               ///< padded row width; rows per plane
  std::int64_t nx = 0;                          ///< outputs in the row (the lattice's x points)
  std::int64_t charged_lo = 0, charged_hi = 0;  ///< charged box along x, from the lattice's lo
  std::int64_t y = 0, z = 0;                    ///< the row, from the lattice's lo
  std::int64_t jy0 = 0, jy1 = 0, jz0 = 0, jz1 = 0;
  double scale = 1;
};
/// Writes the row's nx sums into out; false, doing nothing, without Highway.
bool cutoff_row(const CutoffRow& row, double* out);

}  // namespace espgrid::msm
