// Shared between kernels/pb/pb_surface.cu, kernels/pb/pb_multigrid.cu and kernels/pb/pb_pipeline.cu (CUDA
// only): the coefficient maps built into device memory, and a PB workspace's pool.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda_runtime_support.h"
#include "src/pb/pb_cuda_driver.h"

namespace espgrid::cuda {

/// The dielectric (faces) and ion-accessibility (nodes) maps on the current device.
struct DeviceSurface {
  DeviceBuffer<double> eps[3];
  DeviceBuffer<double> accessibility;
  std::size_t sas_points = 0;
  float kernel_ms = 0;
};

/// Builds them on `stream` (the current device is in.device's); returns when they are complete.
DeviceSurface build_surface_on_device(const PbSurfaceInput& in, cudaStream_t stream);

/// A PbDeviceWorkspace's buffers: a DevicePool (kernels/pb/pb_multigrid.cu and kernels/pb/pb_pipeline.cu
/// allocate from it under a DevicePoolScope).
struct PbDeviceWorkspace::Pool : DevicePool {};

}  // namespace espgrid::cuda
