// Trajectory frames summed where they are computed (DeviceRunOptions::sum_frames): the slab
// loop of device_driver.cu hands each finished slab to these instead of copying it back, so a
// frame's map never leaves the device; take_frame_sums (cuda_driver.h) fetches the sums once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/device_workspace.cuh"

namespace espgrid::cuda {

/// Where a slab's values go.
struct SlabSums {
  std::uint64_t* limbs = nullptr;  ///< device, limb-major (frame_sums_math.h)
  std::int64_t points = 0;         ///< the map's points (the limbs' stride)
  bool squares = false;
  unsigned long long* first_bad = nullptr;  ///< device: the lowest point that could not be added
};

/// Readies `storage` for a map of `points` points on the current device (allocated and zeroed at
/// first, or after take_frame_sums) and clears its bad-point flag, on `stream`.
SlabSums prepare_frame_sums(FrameSumStorage& storage, std::int64_t points, bool squares, cudaStream_t stream);

/// Queues on `stream` the addition of planes [k0, k0 + planes) of the map, held in `slab` with the
/// plan's padded pitch (pitch_x × pitch_y floats a plane), to the sums.
void enqueue_slab_sums(const SlabSums& sums, const float* slab, int pitch_x, int pitch_y, int nx, int ny, int planes,
                       std::int64_t k0, cudaStream_t stream);

/// After the run's last slab (its streams synchronized): Error naming the first point whose
/// value could not be added (not finite, or not below 2^31); otherwise counts the map.
void finish_frame_sums(FrameSumStorage& storage);

}  // namespace espgrid::cuda
