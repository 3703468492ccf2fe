// How a multilevel summation (MSM) run's parameters (compute/method_parameters.h) are chosen: the
// accuracy presets that choose them from measured error tables, and the error bound a run
// declares (what `verify`, `bench` and the tests judge it by). C++17: nvcc reads it.
#pragma once

#include <string>
#include <vector>

#include "src/compute/method_parameters.h"
#include "src/physics/pair_potentials.h"

namespace espgrid {

/// One measured setting: cutoff and spacing at an order, and the largest relative RMS error
/// (away from atoms) measured with it on the test structures (docs/msm.md).
struct MsmTableRow {
  int order;
  double cutoff;          ///< Å
  double spacing;         ///< Å
  double measured_error;  ///< worst relative RMS error over the structures measured (Coulomb)
  double bound;           ///< what a Coulomb run with this setting declares: measured_error with margin
  /// The same for the other models MSM splits, Debye (worst over the ionic strengths measured)
  /// and distance (1/r²): their relative errors run ~3× Coulomb's at the same setting, their
  /// potentials being smaller where the error is made (docs/msm.md). 0: none declared, the
  /// presets skip the row for them.
  double other_error = 0;
  double other_bound = 0;
};

/// What a run of `model` with this setting declares (0: no bound: the row is not for it).
double row_bound(const MsmTableRow& row, PairModel model);

/// The measured table, in the order the presets try it (quintic cheapest first, then cubic).
const std::vector<MsmTableRow>& msm_accuracy_table();

/// The accuracy the MSM entries declare when nothing is asked for (the registry's error_bound).
inline constexpr double kMsmDefaultAccuracy = 1e-3;

/// The parameters a run uses and the bound it declares.
struct ResolvedMsm {
  MsmParameters params;
  double error_bound = 0;  ///< relative RMS error against the exact sum at points ≥ 1.4 Å from atoms
  std::string origin;      ///< "--accuracy 1e-4 preset" or "--msm-* parameters"
};

/// The parameters and bound for `method` and the pair `model` (the bounds are measured per model): explicit --msm-*
/// parameters (all three, checked; the bound is the table's for the same order at the next smaller a/h, or a UsageError
/// when a/h is below every measured setting), else the cheapest table setting whose bound is at most `method.accuracy`
/// (default kMsmDefaultAccuracy); UsageError for an accuracy finer than the table reaches or a value outside (0, 1).
ResolvedMsm resolve_msm(const MethodParameters& method, PairModel model = PairModel::Coulomb);

/// Throws UsageError naming the option when `params` is not a usable setting: order 3 or 5,
/// finite positive spacing and cutoff, a/h from kMsmMinRatio to kMsmMaxRatio.
void validate(const MsmParameters& params);
inline constexpr double kMsmMinRatio = 2.0;     ///< below it the interpolation error is of order 1
inline constexpr double kMsmMaxRatio = 16.0;    ///< beyond it the grid stencils hold > 2·10⁵ points
inline constexpr double kMsmMaxSpacing = 50.0;  ///< Å

/// "a = 12 Å, h = 2 Å, cubic".
std::string describe(const MsmParameters& params);

}  // namespace espgrid
