// The CUDA multilevel summation (row cuda-msm), as plain C++ (no CUDA headers): host code in
// src/ includes it, and a build without CUDA links kernels/msm_cuda_unavailable.cpp instead of
// kernels/msm.cu. Every phase runs on the GPU in float, mirroring the CPU phases of
// src/msm/msm_cpu.h on the same plan (src/msm/msm_plan.h), so each GPU phase can be
// tested against its CPU phase: binning (a stable radix sort by cell), anterpolation (a gather
// per lattice point over the cells it touches), restriction, the per-level cutoff sums, the top
// level's all-pairs sum, prolongation, then per slab of z-planes the interpolation to the map
// and the short range over the binned atoms.
#pragma once

#include <cstddef>

#include "src/compute/compute_timing.h"
#include "src/compute/cuda_driver.h"
#include "src/compute/grid_sum_problem.h"
#include "src/msm/msm_plan.h"

namespace espgrid::cuda {

struct MsmRunOptions {
  int device = 0;
  /// Device memory for the map, bytes (0: sized from free memory): a larger map is computed
  /// in slabs of z-planes. Tests set it small to exercise the slabs.
  std::size_t max_slab_bytes = 0;
  ProgressFn progress;       ///< from the calling thread, after each slab
  PlanesDoneFn planes_done;  ///< each slab once its values are in problem.potential
  /// The map's slab, contracted-plane and staging buffers kept between calls (a compute
  /// session's frames); null: allocated per call. The level grids are still per call.
  DeviceWorkspace* workspace = nullptr;
};

/// Computes problem.potential with `plan` on one GPU; per-phase CUDA-event times in the result.
/// Throws CudaError (an espgrid::Error) on failure, UsageError for a problem too large for it.
ComputeTiming compute_msm(const GridSumProblem& problem, const msm::Plan& plan, const MsmRunOptions& options);

/// Tests: every phase's grids as the GPU computed them, copied back.
msm::LevelGrids<float> msm_level_grids(const GridSumProblem& problem, const msm::Plan& plan, int device);

/// Tests: the long-range (interpolated) and short-range parts at every map point (nx·ny·nz each).
void msm_map_parts(const GridSumProblem& problem, const msm::Plan& plan, int device, float* long_range,
                   float* short_range);

}  // namespace espgrid::cuda
