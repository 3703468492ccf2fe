// The device driver (src/compute/cuda_driver.h): carries out a host LaunchPlan on one or several GPUs.
// Longer than 500 lines because the one-GPU and the multi-GPU drivers share the slab loop's
// buffers and helpers. Functions longer than 80 lines because run_worker and
// compute_potential_multi are each one stream pipeline whose order of events is the design
// (below): split, the order of waits and records would be spread over several places.
//
// The map is computed in slabs of whole z-planes, double-buffered on two streams:
//   stream b:  poison (or zero) the device slab → wait for the previous slab's kernels →
//              start event → the family's launch function → stop event → copy the unpadded
//              slab to pinned staging → done event
//   host:      after queueing slab s, wait for slab s−1's done event, read its kernel time,
//              copy its staging buffer into problem.potential, report progress.
// So the copies of slab s−1 (device→pinned on the copy engine, pinned→pageable on the host)
// overlap the kernels of slab s. Kernels of consecutive slabs are serialized on purpose
// (cudaStreamWaitEvent): the event intervals never overlap, so their sum is the kernel time,
// and the single __constant__ atom buffer is never rewritten under a running kernel.
//
// That loop is one worker (run_worker): it takes its slabs as ranges of planes from a work
// queue (src/compute/device_scheduler.h). compute_potential runs one worker in the calling
// thread, taking slabs of the budget's size in order. compute_potential_multi runs one worker
// per listed device through run_plane_workers, each in its own host thread with its own
// streams and buffers, all pulling chunks from one queue. The atoms are uploaded once per
// device. Plans, slab and chunk sizes are decided by host code (src/compute/launch_plan.h).
#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/device_common.cuh"
#include "kernels/device_workspace.cuh"
#include "kernels/frame_sums.cuh"
#include "src/compute/device_scheduler.h"
#include "src/core/errors.h"
#include "src/core/process_exit.h"
#include "src/core/process_trace.h"
#include "src/core/stopwatch.h"

namespace espgrid::cuda {
namespace {

/// Lowest compute capability (×10, e.g. 90) this build has code for.
int lowest_built_arch() {
#ifdef __CUDA_ARCH_LIST__
  constexpr int archs[] = {__CUDA_ARCH_LIST__};
  int lowest = archs[0];
  for (int a : archs) lowest = std::min(lowest, a);
  return lowest / 10;
#else
  return 90;
#endif
}

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

void check_device_supported(int device) {
  const int cc = 10 * device_attribute(cudaDevAttrComputeCapabilityMajor, device) +
                 device_attribute(cudaDevAttrComputeCapabilityMinor, device);
  if (cc < lowest_built_arch())
    throw Error("CUDA device " + std::to_string(device) + " has compute capability " + std::to_string(cc / 10) + "." +
                std::to_string(cc % 10) + "; this espgrid was built for sm_" + std::to_string(lowest_built_arch()) +
                " and newer");
}

void validate(const GridSumProblem& p) {
  constexpr std::int64_t kMaxExtent = std::int64_t{1} << 30;
  if (p.nx < 0 || p.ny < 0 || p.nz < 0) throw UsageError("grid dimensions must not be negative");
  if (p.z_offset < 0 || p.z_offset > kMaxExtent)
    throw UsageError("plane offset " + std::to_string(p.z_offset) + " is out of range for the CUDA kernels");
  if (p.nx > kMaxExtent || p.ny > kMaxExtent || p.nz > kMaxExtent - p.z_offset)
    throw UsageError("grid of " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" + std::to_string(p.nz) +
                     " points is too large for the CUDA kernels (at most 2^30 per axis)");
  if (p.atom_count > static_cast<std::size_t>(INT_MAX))
    throw UsageError("too many atoms for the CUDA kernels (at most " + std::to_string(INT_MAX) + ")");
  if (p.point_count() > 0 && p.potential == nullptr) throw Error("compute_potential: no output buffer");
  if (p.atom_count > 0 && (!p.x || !p.y || !p.z || !p.q)) throw Error("compute_potential: missing atom arrays");
}

/// Copies `planes` planes of the (possibly padded) device slab into densely packed staging.
void enqueue_copy_back(const LaunchPlan& plan, const GridSumProblem& p, const float* d_slab, float* h_slab, int planes,
                       cudaStream_t stream) {
  const std::size_t row_bytes = sizeof(float) * static_cast<std::size_t>(p.nx);
  if (plan.pitch_x == p.nx && plan.pitch_y == p.ny) {
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(h_slab, d_slab, row_bytes * static_cast<std::size_t>(p.ny) * planes,
                                       cudaMemcpyDeviceToHost, stream));
    return;
  }
  cudaMemcpy3DParms copy{};
  copy.srcPtr = make_cudaPitchedPtr(const_cast<float*>(d_slab), sizeof(float) * static_cast<std::size_t>(plan.pitch_x),
                                    static_cast<std::size_t>(plan.pitch_x), static_cast<std::size_t>(plan.pitch_y));
  copy.dstPtr = make_cudaPitchedPtr(h_slab, row_bytes, static_cast<std::size_t>(p.nx), static_cast<std::size_t>(p.ny));
  copy.extent = make_cudaExtent(row_bytes, static_cast<std::size_t>(p.ny), static_cast<std::size_t>(planes));
  copy.kind = cudaMemcpyDeviceToHost;
  ESPGRID_CUDA_CHECK(cudaMemcpy3DAsync(&copy, stream));
}

/// The atoms on the current device: float4 (x, y, z, q) for every family, and for the families
/// that form tile-relative offsets (DeviceLayout::double_positions) their double positions too.
struct DeviceAtoms {
  const float4* xyzq = nullptr;
  const AtomDouble* xyz64 = nullptr;  ///< (x, y, z, q): Å relative to the grid origin, and q; null unless asked for
  std::size_t count = 0;
  std::size_t bytes() const noexcept { return count * (sizeof(float4) + (xyz64 ? sizeof(AtomDouble) : 0)); }
};

/// Uploads the atoms through pinned staging into `storage` (grown as needed).
DeviceAtoms upload_atoms(const GridSumProblem& p, bool with_double_positions, AtomStorage& storage) {
  ensure_capacity(storage.staging, p.atom_count, "atoms (staging)");
  ensure_capacity(storage.xyzq, p.atom_count, "atoms");
  for (std::size_t a = 0; a < p.atom_count; ++a) storage.staging.get()[a] = make_float4(p.x[a], p.y[a], p.z[a], p.q[a]);
  if (with_double_positions) {
    if (p.atom_count > 0 && (!p.x64 || !p.y64 || !p.z64))
      throw Error("internal error: this kernel needs the atoms' double positions");
    ensure_capacity(storage.staging64, p.atom_count, "atoms in double (staging)");
    ensure_capacity(storage.xyz64, p.atom_count, "atoms in double");
    for (std::size_t a = 0; a < p.atom_count; ++a)
      storage.staging64.get()[a] = AtomDouble{p.x64[a], p.y64[a], p.z64[a], static_cast<double>(p.q[a])};
  }
  if (p.atom_count > 0) {
    Stream stream;
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(storage.xyzq.get(), storage.staging.get(), sizeof(float4) * p.atom_count,
                                       cudaMemcpyHostToDevice, stream.get()));
    if (with_double_positions)
      ESPGRID_CUDA_CHECK(cudaMemcpyAsync(storage.xyz64.get(), storage.staging64.get(),
                                         sizeof(AtomDouble) * p.atom_count, cudaMemcpyHostToDevice, stream.get()));
    stream.synchronize();  // every stream of every worker on this device reads them
  }
  DeviceAtoms out;
  out.xyzq = storage.xyzq.get();
  out.xyz64 = with_double_positions ? storage.xyz64.get() : nullptr;
  out.count = p.atom_count;
  return out;
}

/// Where a worker takes its planes from and what it reports.
struct WorkerContext {
  PlaneQueue* queue = nullptr;
  std::int64_t max_planes = 0;  ///< never take more than this per chunk (the whole map: no cap)
  std::size_t max_slab_bytes = 0;
  int worker = 0;
  int device = 0;
  int sms = 0;
  std::function<void(const PlaneRange&)> done;       ///< called in the worker's thread when a range is in the output
  std::function<void(int, int, std::int64_t)> hook;  ///< DeviceRunOptions::chunk_hook
  const SlabSums* sums = nullptr;                    ///< sum_frames: each slab is added to these, not copied back
};

/// One worker on the current device: takes ranges of planes from the queue and computes
/// them through two slab buffers on two streams (see the file comment), until the queue is
/// empty. Slab s uses buffer and stream s mod 2; kernels of consecutive slabs are
/// serialized, so the sum of their event intervals is this worker's kernel time.
WorkerResult run_worker(const DeviceKernel& kernel, const LaunchPlan& plan, const GridSumProblem& p,
                        const DeviceAtoms& d_atoms, const WorkerContext& ctx, SlabStorage& slabs) {
  const std::size_t atom_bytes = d_atoms.bytes();
  std::size_t free_bytes = 0, total_bytes = 0;
  if (ctx.max_slab_bytes == 0) {
    ESPGRID_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    free_bytes += slabs.device_bytes();  // kept from an earlier call: ours to reuse
  }
  // Device slabs: in automatic sizing, halve the slab if the allocation fails anyway.
  std::int64_t planes = std::min(planes_per_slab(p, plan, ctx.max_slab_bytes, free_bytes, atom_bytes),
                                 std::max<std::int64_t>(ctx.max_planes, 1));
  const std::size_t plane_points = plan.plane_floats();
  const std::size_t map_plane_points = p.plane_points();
  std::array<DeviceBuffer<float>, 2>& d_slab = slabs.device;
  for (;;) {
    const bool two = planes < p.nz;
    try {
      ensure_capacity(d_slab[0], plane_points * static_cast<std::size_t>(planes), "potential slab");
      if (two)
        ensure_capacity(d_slab[1], plane_points * static_cast<std::size_t>(planes), "potential slab (2nd buffer)");
      break;
    } catch (const CudaError& e) {
      if (ctx.max_slab_bytes != 0 || e.code() != cudaErrorMemoryAllocation || planes == 1) throw;
      d_slab[0].reset();
      d_slab[1].reset();
      const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
      planes = ceil_div(p.nz, ceil_div(p.nz, (planes + 1) / 2));  // equal slabs of about half the size
    }
  }
  std::array<PinnedBuffer<float>, 2>& h_slab = slabs.staging;
  if (!ctx.sums) {  // summed on the device: nothing comes back
    ensure_capacity(h_slab[0], map_plane_points * static_cast<std::size_t>(planes), "potential slab (staging)");
    if (planes < p.nz)
      ensure_capacity(h_slab[1], map_plane_points * static_cast<std::size_t>(planes), "potential slab (staging 2)");
  }

  // Streams after the buffers: their destructors wait for queued work before the buffers go.
  std::array<Stream, 2> streams;
  std::array<Event, 2> start, stop;
  std::array<Event, 2> done{Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};

  SlabLaunch launch;
  launch.atoms = reinterpret_cast<const float*>(d_atoms.xyzq);
  launch.atoms64 = reinterpret_cast<const double*>(d_atoms.xyz64);
  launch.atom_count = static_cast<int>(p.atom_count);
  launch.nx = static_cast<int>(p.nx);
  launch.ny = static_cast<int>(p.ny);
  launch.hx = p.hx;
  launch.hy = p.hy;
  launch.hz = p.hz;
  launch.hx64 = p.hx64 > 0 ? p.hx64 : p.hx;
  launch.hy64 = p.hy64 > 0 ? p.hy64 : p.hy;
  launch.hz64 = p.hz64 > 0 ? p.hz64 : p.hz;
  launch.softening2 = p.softening2;
  launch.model = p.model;
  launch.pair = p.pair;
  launch.plan = plan;
  launch.sms = ctx.sms;

  struct InFlight {
    PlaneRange range;
    int buffer;
  };
  std::optional<InFlight> pending;
  double kernel_ms = 0;
  WorkerResult result;
  const auto finish = [&](const InFlight& s) {
    done[s.buffer].synchronize();
    kernel_ms += Event::elapsed_ms(start[s.buffer], stop[s.buffer]);
    if (!ctx.sums)
      std::memcpy(p.potential + static_cast<std::size_t>(s.range.k0) * map_plane_points, h_slab[s.buffer].get(),
                  sizeof(float) * map_plane_points * static_cast<std::size_t>(s.range.planes));
    result.planes += s.range.planes;
    if (ctx.done) ctx.done(s.range);
  };

  for (std::int64_t s = 0;; ++s) {
    const std::optional<PlaneRange> range = ctx.queue->take(planes);
    if (!range) break;
    if (ctx.hook) ctx.hook(ctx.worker, ctx.device, range->k0);
    const int b = static_cast<int>(s & 1);
    const int count = static_cast<int>(range->planes);
    const cudaStream_t stream = streams[b].get();
    float* slab = d_slab[b].get();
    // NaN poison (0xFFFFFFFF) shows any point a kernel fails to write; atomics need zeros.
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(slab, plan.zero_slab ? 0 : 0xFF,
                                       sizeof(float) * plane_points * static_cast<std::size_t>(count), stream));
    if (s > 0) streams[b].wait(stop[1 - b].get());  // kernels run one slab at a time
    start[b].record(stream);
    launch.slab = slab;
    launch.k0 = p.z_offset + range->k0;  // map plane index: grid z = (z_offset + k)·hz
    launch.planes = count;
    launch.stream = stream;
    kernel.launch(launch);
    stop[b].record(stream);
    // The slab to the host, or (sum_frames) into the sums on the device while the next slab's
    // kernels run on the other stream.
    if (ctx.sums)
      enqueue_slab_sums(*ctx.sums, slab, plan.pitch_x, plan.pitch_y, static_cast<int>(p.nx), static_cast<int>(p.ny),
                        count, range->k0, stream);
    else
      enqueue_copy_back(plan, p, slab, h_slab[b].get(), count, stream);
    done[b].record(stream);
    ++result.chunks;
    if (pending) finish(*pending);
    pending = InFlight{*range, b};
  }
  if (pending) finish(*pending);
  result.kernel_seconds = kernel_ms / 1000.0;
  return result;
}

/// The per-device lock of the families that use the device's __constant__ atom buffer.
/// __constant__ memory is per device, so different devices never wait for each other.
std::mutex& constant_memory_mutex(int device) {
  static std::mutex table_mutex;
  static std::map<int, std::mutex> table;  // nodes never move: references stay valid
  std::lock_guard<std::mutex> lock(table_mutex);
  return table[device];
}

/// The atoms on one device, shared by the workers on it: the first to arrive uploads them,
/// the last to leave frees them (on its own thread, with the device current).
struct SharedAtoms {
  std::mutex mutex;
  int users = 0;
  AtomStorage storage;
  DeviceAtoms buffer;
  bool ready = false;
};

class AtomsLease {
 public:
  AtomsLease(SharedAtoms& shared, const GridSumProblem& p, bool with_double_positions) : shared_(shared) {
    std::lock_guard<std::mutex> lock(shared_.mutex);
    if (!shared_.ready) {
      shared_.buffer = upload_atoms(p, with_double_positions, shared_.storage);
      shared_.ready = true;
    }
    ++shared_.users;
  }
  ~AtomsLease() {
    std::lock_guard<std::mutex> lock(shared_.mutex);
    if (--shared_.users == 0) {
      shared_.buffer = DeviceAtoms{};
      shared_.storage = AtomStorage{};
      shared_.ready = false;
    }
  }
  AtomsLease(const AtomsLease&) = delete;
  AtomsLease& operator=(const AtomsLease&) = delete;
  const DeviceAtoms& get() const noexcept { return shared_.buffer; }

 private:
  SharedAtoms& shared_;
};

/// `error` with "CUDA device N (worker W): " in front, keeping CudaError's code.
std::exception_ptr with_device(std::exception_ptr error, int device, int worker, bool several_on_device) {
  const std::string where = "CUDA device " + std::to_string(device) +
                            (several_on_device ? " (worker " + std::to_string(worker) + ")" : "") + ": ";
  try {
    std::rethrow_exception(error);
  } catch (const CudaError& e) {
    return std::make_exception_ptr(CudaError(e.code(), where + e.message(), e.location()));
  } catch (const UsageError&) {
    return error;  // not about the device
  } catch (const Error& e) {
    return std::make_exception_ptr(Error(where + e.what()));
  } catch (...) {
    return error;
  }
}

void check_kernel(std::string_view variant, const DeviceKernel& kernel) {
  if (!kernel.launch) throw Error(std::string(variant) + " has no device kernel in this build");
}

}  // namespace

DeviceWorkspace::DeviceWorkspace() : buffers_(std::make_unique<Buffers>()) {}

DeviceWorkspace::~DeviceWorkspace() {
  if (!buffers_ || buffers_->device < 0) return;
  int previous = -1;
  if (cudaGetDevice(&previous) == cudaSuccess && previous != buffers_->device) cudaSetDevice(buffers_->device);
  buffers_->release();  // CudaBuffer ignores a failed free (a process already tearing CUDA down)
  if (previous >= 0 && previous != buffers_->device) cudaSetDevice(previous);
  cudaGetLastError();
}

ComputeTiming compute_potential(std::string_view variant, const DeviceKernel& kernel, const GridSumProblem& problem,
                                const DeviceRunOptions& options) {
  const Stopwatch wall;
  validate(problem);
  check_kernel(variant, kernel);
  DeviceGuard guard(options.device);
  check_device_supported(options.device);
  ComputeTiming timing;
  timing.device = describe_device(options.device);
  std::unique_lock<std::mutex> lock(constant_memory_mutex(options.device), std::defer_lock);
  if (kernel.layout.uses_constant_memory) lock.lock();
  WorkerResult result;
  if (problem.point_count() > 0) {
    WorkerContext ctx;
    ctx.sms = device_attribute(cudaDevAttrMultiProcessorCount, options.device);
    LaunchPlan plan = make_launch_plan(variant, kernel.layout, problem, options.shape, ctx.sms);
    if (kernel.prepare) kernel.prepare(plan, options.device, problem);
    // Atoms and slabs: this call's own, or the workspace's, kept from earlier calls. Either
    // outlives the worker's streams, which drain before run_worker returns.
    std::unique_lock<std::mutex> kept_lock;
    DeviceWorkspace::Buffers* kept = claim(options.workspace, options.device, kept_lock);
    AtomStorage own_atoms;
    SlabStorage own_slabs;
    const DeviceAtoms d_atoms = upload_atoms(problem, kernel.layout.double_positions, kept ? kept->atoms : own_atoms);
    PlaneQueue queue(problem.nz);
    ctx.queue = &queue;
    ctx.max_planes = problem.nz;  // one worker: the slab budget alone sets the slabs
    ctx.max_slab_bytes = options.max_slab_bytes;
    ctx.device = options.device;
    ctx.hook = options.chunk_hook;
    ctx.done = [&](const PlaneRange& r) {
      if (options.planes_done) options.planes_done(r.k0, r.planes);
      if (options.progress)
        options.progress(static_cast<std::size_t>(r.k0 + r.planes), static_cast<std::size_t>(problem.nz));
    };
    std::optional<SlabSums> sums;
    if (options.sum_frames) {
      if (!kept) throw Error("internal error: frame sums on the device need a workspace");
      if (problem.z_offset != 0) throw Error("internal error: frame sums on the device take whole maps");
      Stream setup;
      sums = prepare_frame_sums(kept->sums, static_cast<std::int64_t>(problem.point_count()), options.sum_squares,
                                setup.get());
      setup.synchronize();
      ctx.sums = &*sums;
    }
    result = run_worker(kernel, plan, problem, d_atoms, ctx, kept ? kept->slabs : own_slabs);
    if (sums) finish_frame_sums(kept->sums);
  }
  timing.kernel_seconds = result.kernel_seconds;
  timing.wall_seconds = wall.seconds();
  timing.parts.push_back(WorkerTiming{options.device, timing.device, result.kernel_seconds, timing.wall_seconds,
                                      result.planes, result.chunks});
  return timing;
}

ComputeTiming compute_potential_multi(std::string_view variant, const DeviceKernel& kernel,
                                      const GridSumProblem& problem, const std::vector<int>& devices,
                                      const DeviceRunOptions& options) {
  const Stopwatch wall;
  validate(problem);
  check_kernel(variant, kernel);
  if (devices.empty()) throw UsageError("compute_potential_multi: no CUDA devices given");
  int device_count = 0;
  ESPGRID_CUDA_CHECK(cudaGetDeviceCount(&device_count));
  for (const int d : devices) {
    if (d < 0 || d >= device_count)
      throw Error("CUDA device " + std::to_string(d) + " does not exist (this machine has " +
                  std::to_string(device_count) + (device_count == 1 ? " device" : " devices") + ")");
    check_device_supported(d);
  }
  const int workers = static_cast<int>(devices.size());
  ComputeTiming timing;
  std::map<int, std::string> names;
  std::map<int, int> per_device;
  for (const int d : devices) {
    if (!names.count(d)) names[d] = describe_device(d);
    ++per_device[d];
  }
  {
    std::string list;
    for (const int d : devices) list += (list.empty() ? "" : ",") + std::to_string(d);
    bool same = true;
    for (const auto& entry : names) same = same && entry.second == names.begin()->second;
    std::string what = names.begin()->second;
    if (!same) {
      what.clear();
      for (const auto& [d, name] : names) what += (what.empty() ? "" : "; ") + std::to_string(d) + ": " + name;
    }
    const std::size_t gpus = names.size();
    timing.device = (gpus == devices.size() ? std::to_string(gpus) + " GPUs"
                                            : std::to_string(workers) + " workers on " + std::to_string(gpus) +
                                                  (gpus == 1 ? " GPU" : " GPUs")) +
                    " (devices " + list + "): " + (same && gpus > 1 ? std::to_string(gpus) + " x " : "") + what;
  }
  timing.parts.resize(devices.size());
  for (std::size_t w = 0; w < devices.size(); ++w) {
    timing.parts[w].device = devices[w];
    timing.parts[w].device_name = names[devices[w]];
  }
  if (problem.point_count() == 0) {
    timing.wall_seconds = wall.seconds();
    return timing;
  }

  const std::int64_t chunk = options.chunk_planes > 0 ? std::min<std::int64_t>(options.chunk_planes, problem.nz)
                                                      : auto_chunk_planes(problem, workers);
  std::map<int, SharedAtoms> atoms;  // built before the threads start; nodes never move
  for (const int d : devices) atoms[d];

  const PlaneWorker worker = [&](int w, PlaneQueue& queue, const std::function<void(const PlaneRange&)>& done) {
    const int device = devices[static_cast<std::size_t>(w)];
    try {
      ESPGRID_CUDA_CHECK(cudaSetDevice(device));  // this thread's device, for all it does
      std::unique_lock<std::mutex> lock(constant_memory_mutex(device), std::defer_lock);
      if (kernel.layout.uses_constant_memory) lock.lock();
      WorkerContext ctx;
      ctx.sms = device_attribute(cudaDevAttrMultiProcessorCount, device);
      LaunchPlan plan = make_launch_plan(variant, kernel.layout, problem, options.shape, ctx.sms);
      // Every worker settles the plan the same way on devices of one kind: the same map bits.
      if (kernel.prepare) kernel.prepare(plan, device, problem);
      const AtomsLease lease(atoms.at(device), problem, kernel.layout.double_positions);  // outlives the streams
      ctx.queue = &queue;
      ctx.max_planes = chunk;
      ctx.max_slab_bytes = options.max_slab_bytes;
      ctx.worker = w;
      ctx.device = device;
      ctx.hook = options.chunk_hook;
      ctx.done = [&](const PlaneRange& r) {
        if (options.planes_done) options.planes_done(r.k0, r.planes);
        done(r);
      };
      SlabStorage slabs;  // declared after the lease: freed before the atoms
      return run_worker(kernel, plan, problem, lease.get(), ctx, slabs);
    } catch (...) {
      std::rethrow_exception(with_device(std::current_exception(), device, w, per_device.at(device) > 1));
    }
  };
  const std::vector<WorkerResult> results = run_plane_workers(workers, problem.nz, worker, options.progress);

  for (std::size_t w = 0; w < devices.size(); ++w) {
    timing.parts[w].kernel_seconds = results[w].kernel_seconds;
    timing.parts[w].wall_seconds = results[w].wall_seconds;
    timing.parts[w].planes = results[w].planes;
    timing.parts[w].chunks = results[w].chunks;
    timing.kernel_seconds = std::max(timing.kernel_seconds, results[w].kernel_seconds);
  }
  timing.wall_seconds = wall.seconds();
  return timing;
}

std::vector<int> usable_devices(std::string* reason) {
  std::vector<int> out;
  if (usable_device_count(reason) == 0) return out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
  for (int d = 0; d < count; ++d) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (10 * major + minor >= lowest_built_arch()) out.push_back(d);
  }
  return out;
}

void warm_up_device(int device) noexcept {
  trace_process("device context: creating (beside the input's reading)");
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    cudaGetLastError();  // no GPU here (a CPU host's automatic choice): nothing made, nothing to skip at exit
    trace_process("device context: none (no usable device)");
    return;
  }
  note_gpu_context_made();
  trace_process("device context: made");
}

void release_device(int device) noexcept {
  if (!may_skip_exit_handlers()) return;  // static objects' destructors may still free device memory
  trace_process("device context: releasing (cudaDeviceReset, beside the outputs)");
  if (cudaSetDevice(device) != cudaSuccess || cudaDeviceReset() != cudaSuccess) cudaGetLastError();
  trace_process("device context: released");
}

int usable_device_count(std::string* reason) {
  int count = 0;
  static std::atomic<bool> first_call{true};  // the driver starts on the first call: stamp that one
  const bool stamp = first_call.exchange(false);
  if (stamp) trace_process("CUDA driver: initialising (cudaGetDeviceCount)");
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (stamp) trace_process("CUDA driver: initialised");
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (reason)
      *reason = std::string("no usable CUDA driver or device (cudaGetDeviceCount: ") + cudaGetErrorName(status) + ", " +
                cudaGetErrorString(status) + ")";
    return 0;
  }
  if (count == 0) {
    if (reason) *reason = "no CUDA device found";
    return 0;
  }
  int usable = 0;
  for (int d = 0; d < count; ++d) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (10 * major + minor >= lowest_built_arch()) ++usable;
  }
  if (usable == 0 && reason)
    *reason = "no CUDA device of compute capability " + std::to_string(lowest_built_arch() / 10) + "." +
              std::to_string(lowest_built_arch() % 10) + " or newer (this espgrid was built for sm_" +
              std::to_string(lowest_built_arch()) + ")";
  return usable;
}

std::string describe_device(int device) {
  // Asked once per device: cudaGetDeviceProperties fills every field, and every map asks.
  static std::mutex mutex;
  static std::map<int, std::string> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(device); it != known.end()) return it->second;
  }
  cudaDeviceProp prop{};
  ESPGRID_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::string text = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                     std::to_string(prop.multiProcessorCount) + " SMs)";
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(device, text);
  return text;
}

}  // namespace espgrid::cuda
