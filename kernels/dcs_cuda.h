// Driver functions for the CUDA kernels. Plain C++: no CUDA headers, so host code in src/
// can include it and a build without CUDA links kernels/cuda_unavailable.cpp instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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
  /// Called from the calling thread as planes complete (compute_potential_multi too).
  ProgressFn progress;
  /// compute_potential_multi: planes per work-queue chunk; 0 = automatic (about 8 chunks
  /// per worker, at least 2^21 points each, equal sizes). A worker never takes more than its
  /// slab buffer holds.
  std::int64_t chunk_planes = 0;
  /// Tests: called in the worker's own thread before each chunk is queued, with the worker's
  /// index, its device and the chunk's first plane. An exception it throws fails that worker,
  /// and so the whole call.
  std::function<void(int worker, int device, std::int64_t k0)> chunk_hook;
};

/// What one worker (one host thread on one device) did.
struct WorkerTiming {
  int device = 0;
  std::string device_name;
  double kernel_seconds = 0;  ///< sum of its kernels' times, CUDA events
  double wall_seconds = 0;    ///< its thread's whole run: setup, atoms, buffers, copies, kernels
  std::int64_t planes = 0;    ///< z-planes it computed
  int chunks = 0;             ///< plane ranges it took from the queue
};

struct DeviceTiming {
  /// compute_potential: sum of kernel times, CUDA events. compute_potential_multi: the
  /// largest worker's sum (the devices run concurrently; the busiest sets the pace).
  double kernel_seconds = 0;
  double wall_seconds = 0;    ///< whole call: allocation, copies and kernels (all threads)
  std::string device_name;    ///< the device's description; several devices: a summary
  std::vector<WorkerTiming> workers;  ///< one entry per worker (one for compute_potential)
};

/// Computes problem.potential on one GPU. Throws CudaError (an espgrid::Error) on failure.
/// Calls for cuda-constant on the same device are serialized (they share that device's
/// __constant__ atom buffer); calls on different devices, and of the other variants, may
/// run concurrently on separate threads.
DeviceTiming compute_potential(Variant variant, const DcsProblem& problem,
                               const DeviceRunOptions& options);

/// Computes problem.potential on several GPUs: one host thread per entry of `devices`, each
/// with its own streams and slab buffers, pulls chunks of z-planes from a shared queue (an
/// atomic counter) until none are left, so devices of unequal speed or load all stay busy.
/// The atoms are uploaded once per distinct device. A device may appear more than once:
/// its workers share the device (and its atoms). Per-point sums do not depend on the split:
/// the map is bit-identical to compute_potential's for every variant but cuda-scatter
/// (atomics). options.device is ignored. When a worker fails, the others stop taking chunks
/// and the call throws that worker's error, naming its device; nothing is left running.
DeviceTiming compute_potential_multi(Variant variant, const DcsProblem& problem, const std::vector<int>& devices,
                                     const DeviceRunOptions& options);

/// Number of usable CUDA devices (those whose compute capability this build has code for);
/// 0 with `reason` filled when there are none (no driver, no device, or a build without
/// CUDA). Never throws.
int usable_device_count(std::string* reason = nullptr);
/// The ordinals of the usable devices (those usable_device_count counts), for `--devices all`;
/// empty with `reason` filled when there are none. Never throws.
std::vector<int> usable_devices(std::string* reason = nullptr);
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
