// Stand-in for the CUDA driver functions in a build without CUDA: the GPU variants stay in
// the registry (so `espgrid kernels` lists them) but report why they cannot run. The kernel
// families' launch functions are not defined here: the registry's rows hold null for them in
// such a build (ESPGRID_CUDA_LAUNCH in src/registry/kernel_registry.cpp).
#include "src/compute/cuda_driver.h"
#include "src/core/errors.h"

namespace espgrid::cuda {

ComputeTiming compute_potential(std::string_view, const DeviceKernel&, const GridSumProblem&, const DeviceRunOptions&) {
  throw Error(kBuiltWithoutCuda);
}

ComputeTiming compute_potential_multi(std::string_view, const DeviceKernel&, const GridSumProblem&,
                                      const std::vector<int>&, const DeviceRunOptions&) {
  throw Error(kBuiltWithoutCuda);
}

std::vector<int> usable_devices(std::string* reason) {
  if (reason) *reason = kBuiltWithoutCuda;
  return {};
}

int usable_device_count(std::string* reason) {
  if (reason) *reason = kBuiltWithoutCuda;
  return 0;
}

std::string describe_device(int) { return "none"; }

void warm_up_device(int) noexcept {}
void release_device(int) noexcept {}

struct DeviceWorkspace::Buffers {};
DeviceWorkspace::DeviceWorkspace() : buffers_(std::make_unique<Buffers>()) {}
DeviceWorkspace::~DeviceWorkspace() = default;

RsqrtCeiling measure_rsqrt_ceiling(int) { throw Error(kBuiltWithoutCuda); }

std::uint64_t take_frame_sums(DeviceWorkspace&, std::uint64_t*, std::size_t) { throw Error(kBuiltWithoutCuda); }

}  // namespace espgrid::cuda
