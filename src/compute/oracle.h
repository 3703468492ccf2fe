// Double-precision oracle for tests, `espgrid verify` and the benchmark's checks: the same sum
// as the kernels, from the same float32 inputs, evaluated in double with the same pair
// evaluator, together with the error scales that turn a float32 tolerance into a justified
// bound. The one place the float32 error model lives.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/compute/grid_sum_problem.h"

namespace espgrid {

struct OracleValue {
  double potential = 0;      ///< Σ q·f(r), double
  double magnitude = 0;      ///< Σ |q|·f(r): the scale of float rounding in the sum
  double gradient = 0;       ///< Σ |q|·|f'(r)|: sensitivity to a position error of 1 Å
  double term_rounding = 0;  ///< Σ |q|·f(r)·(the term's float32 rounding, ulp) × ulp
};

/// Oracle value at grid point (i, j, k) of `problem` (problem.potential is not used).
OracleValue oracle_at(const GridSumProblem& problem, std::int64_t i, std::int64_t j, std::int64_t k);

/// The float32 rounding of the summation of `atom_count` terms, as a multiple of the sum's
/// magnitude Σ|q|·f(r): a sequential float sum of n terms drifts like a random walk, ~√n ulp of
/// the running magnitude; 4√n ulp bounds it with margin. Each term's own rounding (a few ulp:
/// rsqrt ≤ 2 ulp, dx and r²) is the evaluator's term_ulps, added separately.
double summation_rounding_bound(std::size_t atom_count);

/// Largest error a correct float32 kernel may make at a point, for `atom_count` terms: the
/// summation bound times the oracle's magnitude, each term's rounding (term_rounding: 8 ulp of
/// each Coulomb term, so (4√n + 8) ulp of Σ|q|/r in all), plus positions: grid and atom
/// coordinates each carry half an ulp of their size (≤ `coordinate_extent` Å), which moves each
/// term by up to |q|·|f'(r)| × that error.
double float_tolerance(const OracleValue& oracle, std::size_t atom_count, double coordinate_extent);

/// Largest difference between two correct float32 kernels at a point whose magnitude map
/// (Σ|q|·f(r), computed by a kernel from PreparedProblem::with_absolute_charges) is
/// `magnitude`, for the pair model `model`: each carries at most (4√n + the model's typical
/// term rounding) ulp of it, so twice that. Positions are the same float32 inputs for both,
/// so they add nothing here.
double kernel_difference_bound(double magnitude, std::size_t atom_count, PairModel model, const PairParameters& pair);

// ---- checking a computed map ---------------------------------------------------------------------

struct OracleCheck {
  std::size_t checked = 0;      ///< points compared with the oracle
  std::size_t failures = 0;     ///< of them, outside float_tolerance (or not finite)
  double max_err_over_tol = 0;  ///< largest |value − oracle| / tolerance; inf when a value is not finite
  bool ok() const noexcept { return checked > 0 && failures == 0; }
};

/// Compares `computed` (problem.potential filled for its nx × ny × nz) with the double oracle
/// at `samples` points drawn with `seed` (every point when there are fewer), plus the first
/// and last point, each within float_tolerance. Samples are spread over OpenMP threads. Used
/// by `espgrid verify --sample` and every benchmark row.
OracleCheck check_against_oracle(const GridSumProblem& computed, double coordinate_extent, std::size_t samples,
                                 std::uint64_t seed);

/// Values that are NaN or infinite (a NaN-poisoned point the kernel did not write).
std::size_t count_nonfinite(const float* values, std::size_t count);

}  // namespace espgrid
