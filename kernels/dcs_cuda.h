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
  Unrolled,   ///< espgrid's own design; see kernels/dcs_kernels.cu and benchmarks/NOTES.md
};

/// Launch shape override; 0 keeps the variant's tuned default.
struct LaunchShape {
  int block_x = 0;
  int block_y = 0;
  int coarsening = 0;  ///< points per thread along x (coarsened/unrolled variants only)
};

struct DeviceRunOptions {
  int device = 0;
  LaunchShape shape;
  /// Largest slab of the map kept on the device, bytes; 0 sizes it from free memory.
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
DeviceTiming compute_potential(Variant variant, const DcsProblem& problem,
                               const DeviceRunOptions& options);

/// Number of usable CUDA devices; 0 with `reason` filled when there are none (no driver,
/// no device, or a build without CUDA).
int usable_device_count(std::string* reason = nullptr);
/// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)".
std::string describe_device(int device);

/// The device's rsqrt throughput, measured by a microbenchmark of independent rsqrtf chains.
struct RsqrtCeiling {
  double rsqrt_per_second = 0;
  double sm_clock_ghz = 0;  ///< reported maximum SM clock
  int multiprocessors = 0;
};
RsqrtCeiling measure_rsqrt_ceiling(int device);

}  // namespace espgrid::cuda
