// Double-precision oracle for tests and `espgrid verify`: the same sum as the kernels, from
// the same float32 inputs, evaluated in double, together with the error scales that turn a
// float32 tolerance into a justified bound.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/dcs_problem.h"

namespace espgrid {

struct OracleValue {
  double potential = 0;  ///< Σ q / sqrt(r² + a²), double
  double magnitude = 0;  ///< Σ |q| / sqrt(r² + a²): the scale of float rounding in the sum
  double gradient = 0;   ///< Σ |q| / (r² + a²): sensitivity to a position error of 1 Å
};

/// Oracle value at grid point (i, j, k) of `problem` (problem.potential is not used).
OracleValue oracle_at(const DcsProblem& problem, std::int64_t i, std::int64_t j, std::int64_t k);

/// Largest error a correct float32 kernel may make at a point, for `atom_count` terms.
/// Rounding: each term carries a few ulp (rsqrt approximation ≤ 2 ulp, dx and r² rounding),
/// and a sequential float sum of n terms drifts like a random walk, ~√n ulp of the running
/// magnitude; 4√n + 8 ulp of `magnitude` bounds both with margin. Positions: grid and atom
/// coordinates each carry half an ulp of their size (≤ `coordinate_extent` Å), which moves
/// each term by up to |q|/r² × that error.
double float_tolerance(const OracleValue& oracle, std::size_t atom_count, double coordinate_extent);

}  // namespace espgrid
