// Shared between kernels/pb_surface.cu and kernels/pb_multigrid.cu (CUDA only): the coefficient
// maps built into device memory, for the device-resident PB pipeline.
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

}  // namespace espgrid::cuda
