// Stand-in for the PB solver's CUDA driver in a build without CUDA.
#include <string>

#include "src/core/errors.h"
#include "src/pb/pb_cuda_driver.h"

namespace espgrid::cuda {

PbMgResult solve_pb_multigrid(const PbMgLevel*, int, const double*, double*, const PbMgRun&) {
  throw Error(std::string(kBuiltWithoutCuda) + ": the GPU PB solver is unavailable");
}

PbMgResult solve_pb_newton(const PbMgLevel*, int, const double*, const double*, double*, const PbMgRun&,
                           const PbNewtonInput&, pb::NewtonOutcome&, std::size_t&) {
  throw Error("this espgrid was built without CUDA: the GPU PB solver is unavailable");
}

}  // namespace espgrid::cuda

namespace espgrid::cuda {

void build_pb_surface(const PbSurfaceInput&, PbSurfaceOutput&) {
  throw Error("this espgrid was built without CUDA: the GPU PB surface is unavailable");
}

}  // namespace espgrid::cuda

namespace espgrid::cuda {

struct PbDeviceWorkspace::Pool {};
PbDeviceWorkspace::PbDeviceWorkspace() : pool_(std::make_unique<Pool>()) {}
PbDeviceWorkspace::~PbDeviceWorkspace() = default;

void solve_pb_on_device(const PbDeviceSolveInput&, PbDeviceSolveResult&) {
  throw Error("this espgrid was built without CUDA: the GPU PB solver is unavailable");
}

}  // namespace espgrid::cuda
