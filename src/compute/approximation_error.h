// How an approximate kernel (Accuracy::Approximate) is judged: its relative RMS error against
// the exact sum over the map points at least 1.4 Å from every atom, compared with the bound it
// declares (KernelVariant::bound_for). Near an atom the potential is dominated by that atom's
// nearly singular term, which every method sums directly, so a relative error there says
// nothing about the approximation; absolute errors are reported everywhere too. `espgrid
// verify`, `espgrid bench` and the tests all judge with this one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/compute/grid_sum_problem.h"

namespace espgrid {

/// Points closer than this to some atom are left out of the relative error, Å.
inline constexpr double kAwayFromAtoms = 1.4;

struct ApproximationError {
  std::size_t points = 0;       ///< points compared: at least kAwayFromAtoms from every atom
  double relative_rms = 0;      ///< ‖value − exact‖₂ / ‖exact‖₂ over those points
  double rms_abs = 0;           ///< ‖value − exact‖₂ / √points over those points, map unit
  double max_abs = 0;           ///< largest |value − exact| over those points, map unit
  double max_abs_anywhere = 0;  ///< largest |value − exact| over every point compared, near atoms too
  std::size_t nonfinite = 0;    ///< values that are NaN or infinite (never written)
  /// True when there was something to judge, everything was written and the error is in bounds.
  bool within(double bound) const { return points > 0 && nonfinite == 0 && relative_rms <= bound; }
};

/// Sums errors point by point (in double), then gives the ApproximationError.
class ApproximationErrorSum {
 public:
  void add(double value, double exact, bool near_atom);
  void merge(const ApproximationErrorSum& other);
  ApproximationError result() const;

 private:
  ApproximationError e_;
  double err2_ = 0, exact2_ = 0;
};

/// For each point of `problem`'s map (x fastest; z_offset honoured): 1 when it lies closer
/// than `distance` Å to some atom.
std::vector<std::uint8_t> near_atom_mask(const GridSumProblem& problem, double distance = kAwayFromAtoms);

/// problem.potential against the double oracle (compute/oracle.h) at up to `samples` points
/// drawn at random (seeded) among those at least kAwayFromAtoms from every atom (up to 20 ×
/// `samples` draws; the first and last point are always drawn). For maps too large to compute
/// exactly; max_abs_anywhere covers the drawn points only.
ApproximationError sampled_approximation_error(const GridSumProblem& problem, std::size_t samples, std::uint64_t seed);

/// `values` against `exact` over the whole map of `problem` (problem.potential is not used).
ApproximationError approximation_error(const GridSumProblem& problem, const float* values, const float* exact);
ApproximationError approximation_error(const GridSumProblem& problem, const float* values, const double* exact);

}  // namespace espgrid
