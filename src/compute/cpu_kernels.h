// CPU implementations of the direct sum, for every pair model (physics/pair_potentials.h).
// All use float32 arithmetic like the GPU variants; the double-precision oracle in
// compute/oracle.h is what they are all tested against.
#pragma once

#include "src/compute/grid_sum_problem.h"

namespace espgrid::cpu {

/// One grid point at a time over all atoms, recomputing dx, dy, dz for every pair.
void naive(const GridSumProblem& problem, const ProgressFn& progress);
/// The classic sequential DCS: per plane, per atom dz² once; per row dy²+dz² once; then a
/// sweep along x. Sums over atoms in file order, like cpu-naive.
void reference(const GridSumProblem& problem, const ProgressFn& progress);
/// reference's arithmetic, rows spread over OpenMP threads and the x sweep vectorized.
/// Bit-identical to reference (same operations in the same order per point).
void parallel(const GridSumProblem& problem, int threads, const ProgressFn& progress);

}  // namespace espgrid::cpu
