// The registry's two MSM entries as run functions: resolve the parameters (preset or explicit),
// make the plan, run the CPU phases (src/msm/msm_cpu.h) or the CUDA phases
// (src/msm/msm_cuda_driver.h), and say in the timing which method and parameters ran.
#pragma once

#include "src/compute/kernel_variant.h"

namespace espgrid {

/// cpu-msm: every phase on the CPU in double precision.
RunTiming run_cpu_msm(const GridSumProblem& problem, const RunOptions& options);
/// cuda-msm: every phase on one GPU in float.
RunTiming run_cuda_msm(const GridSumProblem& problem, const RunOptions& options);
/// The method with `params` as given (validated, but no bound from the measured table): what
/// `espgrid bench --sweep msm-accuracy` measures the table with. CPU or one GPU (options.device).
RunTiming run_msm_with(Backend backend, const GridSumProblem& problem, const MsmParameters& params,
                       const RunOptions& options);
/// The error bound an MSM run with `method` declares (resolve_msm's).
double msm_bound(const MethodParameters& method, PairModel model);

}  // namespace espgrid
