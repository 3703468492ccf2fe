// Stand-in for kernels/points.cu in a build without CUDA.
#include "src/compute/points_cuda_driver.h"
#include "src/core/errors.h"

namespace espgrid::cuda {

ComputeTiming potential_at_points(const PointSumProblem&, int, const ProgressFn&) { throw Error(kBuiltWithoutCuda); }

ComputeTiming potential_on_plane_groups(const PlaneGroupProblem&, int) { throw Error(kBuiltWithoutCuda); }

}  // namespace espgrid::cuda
