// The CPU multilevel summation (row cpu-msm): every phase in double precision, on the plan's
// grids (src/msm/msm_plan.h), in an order that depends on the atoms and the lattice alone.
// It is the reference the CUDA phases (kernels/msm.cu) are tested against phase by phase, and
// the MSM that CI runs. The phases:
//
//   bin_atoms            atoms sorted by cell (stable), cell starts
//   anterpolate          q_1(m) = Σ_i q_i Φ_m(r_i)                         (atoms in file order)
//   restrict             q_{l+1}(n) = Σ_j w_j q_l(2n + j), one axis at a time
//   cutoff / top         e_l(m) = Σ_j K_l(j) q_l(m + j) (Coulomb: K_l = 2^-(l-1) K_1);  the top: all pairs of g_{a_L}
//   prolong              e_l(m) += Σ_n w_{m−2n} e_{l+1}(n), one axis at a time
//   interpolate          φ_long(r) = Σ_m Φ_m(r) e_1(m): z first (per plane), then y (per row), then x
//   short range          φ_short(r) = Σ_{|r−r_i|<a} q_i (f(√(|r−r_i|² + ε²)) − g_a(|r−r_i|))
//
// f is the plan's SplitKernel (msm_math.h): 1/r (g_a = γ(r/a)/a), e^(−κr)/r or 1/r².
#pragma once

#include <cstdint>
#include <vector>

#include "src/compute/compute_timing.h"
#include "src/compute/grid_sum_problem.h"
#include "src/msm/msm_plan.h"

namespace espgrid::msm {

/// The atoms sorted by plan cell, file order within a cell (a stable counting sort).
struct BinnedAtoms {
  std::vector<double> x, y, z, q;       ///< Å and charge, in sorted order
  std::vector<std::size_t> cell_start;  ///< plan.cells.points() + 1 offsets into the sorted atoms
};
BinnedAtoms bin_atoms(const GridSumProblem& problem, const Plan& plan);

/// The grid phases: anterpolation, restriction, the per-level sums and prolongation. Phase
/// times are appended to `phases` when given. `threads` 0: OpenMP's default.
LevelGrids<double> cpu_level_grids(const GridSumProblem& problem, const Plan& plan, int threads = 0,
                                   std::vector<PhaseTiming>* phases = nullptr);

/// The two parts of the map at every point of `problem` (nx·ny·nz doubles each): the
/// long range interpolated from e_1, and the short range summed over the binned atoms.
void cpu_map_parts(const GridSumProblem& problem, const Plan& plan, const LevelGrids<double>& grids,
                   const BinnedAtoms& atoms, double* long_range, double* short_range, int threads = 0);

/// The whole CPU MSM: writes problem.potential (float of long + short range) plane by plane,
/// calling `progress` and `planes_done` after each plane. Phase times are in the result.
ComputeTiming cpu_compute(const GridSumProblem& problem, const Plan& plan, int threads, const ProgressFn& progress,
                          const PlanesDoneFn& planes_done);

}  // namespace espgrid::msm
