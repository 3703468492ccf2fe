// The CUDA side of espgrid, as plain C++ (no CUDA headers): host code in src/ includes it, and
// a build without CUDA links kernels/cuda_unavailable.cpp instead of the .cu files.
//
// Two layers:
//   - kernel families (kernels/scatter.cu, gather.cu, constant.cu, coarsened.cu, unrolled.cu):
//     each defines the device kernels of one design and one launch function that queues them
//     for one slab of z-planes (SlabLaunch). A registry entry holds its family's launch function
//     and DeviceLayout (src/registry/kernel_registry.cpp).
//   - the device driver (kernels/device_driver.cu): carries out the host's LaunchPlan
//     (src/compute/launch_plan.h) slab by slab through double-buffered device memory on one
//     device, or on several devices through the host work queue (src/compute/device_scheduler.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/compute/compute_timing.h"
#include "src/compute/grid_sum_problem.h"
#include "src/compute/launch_plan.h"

namespace espgrid::cuda {

/// Everything a family's launch function needs for one slab: planes [k0, k0 + planes) of the
/// map (k0 counts from the map's plane 0, z_offset included) into `slab`, laid out as the
/// plan's padded pitch.
struct SlabLaunch {
  float* slab = nullptr;         ///< device, plan.pitch_x × plan.pitch_y × planes floats
  const float* atoms = nullptr;  ///< device, (x, y, z, q) per atom: float4, 16-byte aligned
  /// device, (x, y, z, q) per atom in double, positions relative to the grid origin
  /// (DeviceLayout::double_positions only, else null): 32 bytes an atom
  const double* atoms64 = nullptr;
  int atom_count = 0;
  int nx = 0, ny = 0;   ///< the map's extent (bounds of the unpadded families)
  std::int64_t k0 = 0;  ///< map z index of the slab's first plane
  int planes = 0;
  float hx = 0, hy = 0, hz = 0;         ///< grid spacing, Å
  double hx64 = 0, hy64 = 0, hz64 = 0;  ///< the same in double
  float softening2 = 0;                 ///< a², Å²
  PairModel model = PairModel::Coulomb;
  PairParameters pair;
  LaunchPlan plan;
  int sms = 0;             ///< multiprocessors of the device
  void* stream = nullptr;  ///< cudaStream_t
};

/// Queues one slab's kernels on the slab's stream; throws CudaError on a launch failure.
using LaunchFn = void (*)(const SlabLaunch&);

/// Settles what the plan leaves to the device (e.g. a tuned split) once per worker, before the
/// slab loop, with the worker's device current.
using PrepareFn = void (*)(LaunchPlan& plan, int device, const GridSumProblem& problem);

/// The device side of one registry entry.
struct DeviceKernel {
  LaunchFn launch = nullptr;  ///< null in a build without CUDA
  DeviceLayout layout;
  PrepareFn prepare = nullptr;  ///< optional
};

// The kernel families' launch functions (each in its own .cu file).
void launch_scatter(const SlabLaunch& s);
void launch_gather(const SlabLaunch& s);
void launch_constant(const SlabLaunch& s);
void launch_coarsened(const SlabLaunch& s);
void launch_unrolled(const SlabLaunch& s);
void launch_dualpipe(const SlabLaunch& s);
void prepare_dualpipe(LaunchPlan& plan, int device, const GridSumProblem& problem);
/// The dual-pipe family's FMA-pipe split for `model` on `device`: the value measured for the
/// device's kind (kernels/dualpipe.cu has the table and where it was measured), or a default.
int tuned_fma_split(int device, PairModel model);

/// Buffers kept between calls of compute_potential that pass the same workspace: the atoms' and
/// the slabs' device buffers and their pinned staging grow to the largest call and are reused,
/// instead of allocated and freed per call. A compute session holds one for its frames (on one
/// H200 allocation and freeing were 3 of the 4.4 ms of a 3,341-atom frame on a 1 Å grid). One
/// call at a time uses it (a mutex keeps it so); freed with the workspace. Single-device calls
/// only: compute_potential_multi and the other drivers ignore it.
class DeviceWorkspace {
 public:
  DeviceWorkspace();
  ~DeviceWorkspace();
  DeviceWorkspace(const DeviceWorkspace&) = delete;
  DeviceWorkspace& operator=(const DeviceWorkspace&) = delete;
  struct Buffers;  // kernels/device_driver.cu
  Buffers& buffers() noexcept { return *buffers_; }

 private:
  std::unique_ptr<Buffers> buffers_;
};

struct DeviceRunOptions {
  int device = 0;
  /// Buffers to reuse across calls (null: allocated for this call and freed after it).
  DeviceWorkspace* workspace = nullptr;
  LaunchShape shape;
  /// Device memory for the map, bytes (0: sized from free memory). A larger map is computed
  /// in slabs of z-planes through two buffers of half this each (at least one plane each).
  /// Tests set it small to exercise slab streaming.
  std::size_t max_slab_bytes = 0;
  /// Called from the calling thread as planes complete (compute_potential_multi too).
  ProgressFn progress;
  /// Each range of planes once it is in problem.potential (see PlanesDoneFn for the threads).
  PlanesDoneFn planes_done;
  /// compute_potential_multi: planes per work-queue chunk; 0 = automatic (auto_chunk_planes).
  /// A worker never takes more than its slab buffer holds.
  std::int64_t chunk_planes = 0;
  /// With a workspace: add the map's values to the workspace's exact frame sums on the device
  /// (frame_sums_math.h; Σp² too with sum_squares) instead of copying them to problem.potential,
  /// which is not written. A value that is not finite or not below 2^31 is an Error after the call.
  bool sum_frames = false;
  bool sum_squares = false;
  /// Tests: called in the worker's own thread before each chunk is queued, with the worker's
  /// index, its device and the chunk's first plane. An exception it throws fails that worker,
  /// and so the whole call.
  std::function<void(int worker, int device, std::int64_t k0)> chunk_hook;
};

/// Computes problem.potential on one GPU with `kernel` (named `variant` in messages). Throws
/// CudaError (an espgrid::Error) on failure. Calls of a family that uses __constant__ memory
/// on the same device are serialized; anything else may run concurrently on separate threads.
ComputeTiming compute_potential(std::string_view variant, const DeviceKernel& kernel, const GridSumProblem& problem,
                                const DeviceRunOptions& options);

/// Computes problem.potential on several GPUs: one host thread per entry of `devices`, each
/// with its own streams and slab buffers, pulls chunks of z-planes from a shared queue until
/// none are left, so devices of unequal speed or load all stay busy. The atoms are uploaded
/// once per distinct device. A device may appear more than once: its workers share the device
/// (and its atoms). Per-point sums do not depend on the split: the map is bit-identical to
/// compute_potential's for every deterministic family. options.device is ignored. When a
/// worker fails, the others stop taking chunks and the call throws that worker's error,
/// naming its device; nothing is left running.
ComputeTiming compute_potential_multi(std::string_view variant, const DeviceKernel& kernel,
                                      const GridSumProblem& problem, const std::vector<int>& devices,
                                      const DeviceRunOptions& options);

/// Copies the exact frame sums that runs with DeviceRunOptions::sum_frames added on the device
/// into `limbs` (`count` values, the FrameSums layout: limb-major, 2 or 5 limbs a point), zeroes
/// them there, and returns how many maps they hold (0, and `limbs` untouched, when there are none).
/// Error when `count` does not match.
std::uint64_t take_frame_sums(DeviceWorkspace& workspace, std::uint64_t* limbs, std::size_t count);

/// Number of usable CUDA devices (those whose compute capability this build has code for);
/// 0 with `reason` filled when there are none (no driver, no device, or a build without
/// CUDA). Never throws.
int usable_device_count(std::string* reason = nullptr);
/// Creates `device`'s context (the runtime's primary context, shared by every host thread), the
/// ~0.2 s the first CUDA call of a process otherwise pays, so that the pipeline can do it while
/// the input is read. Never throws: a failure shows again, with its message, when the device is used.
void warm_up_device(int device) noexcept;
/// Destroys `device`'s primary context (cudaDeviceReset) in a process that will not use the GPU
/// again and ends with _Exit (may_skip_exit_handlers): the driver's teardown, ~0.1 s that the
/// kernel otherwise spends when the process ends, can then run beside the work that remains (the
/// command line's `espgrid apbs` calls it on a thread of its own while the finest level's files
/// are written). Does nothing where no context was made or the exit handlers will run. Never throws.
void release_device(int device) noexcept;
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
