// Driver functions for the CUDA kernels. Plain C++: no CUDA headers, so host code in src/
// can include it and a build without CUDA links kernels/cuda_unavailable.cpp instead.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/dcs_problem.h"

namespace espgrid::cuda {

/// The GPU algorithms. Keep in the order of the rows in src/kernel_registry.cpp.
enum class Variant {
  Scatter,    ///< one thread per atom, atomicAdd into a slab of the grid
  Gather,     ///< one thread per grid point, atoms from global memory
  Constant,   ///< one thread per grid point, atoms in __constant__ memory chunks
  Coarsened,  ///< 8 points per thread along x, one block-width apart, padded grid
  Unrolled,   ///< espgrid's own design: 2D register tile per thread, atoms in shared-memory
              ///< tiles, one launch per slab; see kernels/README.md
};

/// Launch shape override; 0 keeps the variant's tuned default. Any block of at most 1024
/// threads is accepted; when only one of block_x/block_y is set, the other is chosen to keep
/// the variant's default thread count. Unsupported values throw UsageError (an espgrid::Error).
/// For cuda-unrolled, all three at 0 choose the tile for the map (kernels/README.md).
struct LaunchShape {
  int block_x = 0;
  int block_y = 0;
  /// Points per thread along x: 1, 2, 4, 8 or 16 for coarsened/unrolled; 0 or 1 for the others.
  int coarsening = 0;
};

struct DeviceRunOptions {
  int device = 0;
  LaunchShape shape;
  /// Device memory for the map, bytes (0: sized from free memory). A larger map is computed
  /// in slabs of z-planes through two buffers of half this each (at least one plane each).
  /// Tests set it small to exercise slab streaming.
  std::size_t max_slab_bytes = 0;
  ProgressFn progress;
};

struct DeviceTiming {
  double kernel_seconds = 0;  ///< sum of kernel times, CUDA events
  double wall_seconds = 0;    ///< whole call: allocation, copies and kernels
  std::string device_name;
};

/// Computes problem.potential on the GPU. Throws CudaError (an espgrid::Error) on failure.
/// Calls for cuda-constant and cuda-coarsened are serialized process-wide (they share the
/// device's __constant__ atom buffer); the others may run concurrently on separate threads.
DeviceTiming compute_potential(Variant variant, const DcsProblem& problem,
                               const DeviceRunOptions& options);

/// Number of usable CUDA devices (those whose compute capability this build has code for);
/// 0 with `reason` filled when there are none (no driver, no device, or a build without
/// CUDA). Never throws.
int usable_device_count(std::string* reason = nullptr);
/// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)". Throws CudaError for a device that cannot be queried.
std::string describe_device(int device);

/// The device's rsqrt throughput, measured by a microbenchmark of independent rsqrtf chains.
struct RsqrtCeiling {
  double rsqrt_per_second = 0;
  double sm_clock_ghz = 0;  ///< reported maximum SM clock
  int multiprocessors = 0;
};
RsqrtCeiling measure_rsqrt_ceiling(int device);

}  // namespace espgrid::cuda
