// Stand-in for kernels/msm.cu in a build without CUDA: cuda-msm stays in the registry (so
// `espgrid kernels` lists it) but reports why it cannot run.
#include "src/core/errors.h"
#include "src/msm/msm_cuda_driver.h"

namespace espgrid::cuda {

ComputeTiming compute_msm(const GridSumProblem&, const msm::Plan&, const MsmRunOptions&) {
  throw Error(kBuiltWithoutCuda);
}

msm::LevelGrids<float> msm_level_grids(const GridSumProblem&, const msm::Plan&, int) { throw Error(kBuiltWithoutCuda); }

void msm_map_parts(const GridSumProblem&, const msm::Plan&, int, float*, float*) { throw Error(kBuiltWithoutCuda); }

}  // namespace espgrid::cuda
