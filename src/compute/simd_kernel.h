// cpu-simd, the vectorized CPU kernel (src/compute/simd_kernel.cpp), and the CPU's own ceiling
// for it, measured like the GPU's rsqrt ceiling.
#pragma once

#include <string>

#include "src/compute/grid_sum_problem.h"

namespace espgrid::cpu {

/// Every model; OpenMP threads (0 = all); progress per plane, in plane order.
void simd(const GridSumProblem& problem, int threads, const ProgressFn& progress);
/// The vector unit the dispatch picked here: "AVX3" (AVX-512), "AVX2", "SSE4", ...
std::string simd_target();

/// The throughput of cpu-simd's Coulomb evaluation (FMA r², rsqrt estimate + Newton, FMA) with
/// no memory traffic: independent chains in registers, per core and on every core.
struct SimdCeiling {
  std::string target;
  int threads = 0;
  double per_core_evaluations_per_second = 0;
  double all_cores_evaluations_per_second = 0;
};
SimdCeiling measure_simd_ceiling(int threads);

}  // namespace espgrid::cpu
