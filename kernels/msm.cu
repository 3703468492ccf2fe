// cuda-msm: the multilevel summation with every phase on the GPU, in float, on the host's plan
// (src/msm/msm_plan.h). Each phase mirrors its CPU phase (src/msm/msm_cpu.cpp) and
// sums in an order fixed by the atoms and the lattice, never by the launch (no atomics), so
// the map is the same on every run and a slab of planes equals the same planes of the whole map
// bit for bit. The grid phases are in kernels/msm_levels.cu, the map's per slab in
// kernels/msm_map.cu; this file drives them: the grid phases once, then slabs of planes through
// two buffers on two streams.
// Functions longer than 80 lines because compute_msm queues the phases on one stream in their
// order, with the events that time them; the phases themselves are the other files' functions.
#include <cstring>
#include <optional>

#include "kernels/device_workspace.cuh"
#include "kernels/msm_device.cuh"
#include "src/core/bulk_memory.h"
#include "src/core/stopwatch.h"

namespace espgrid::cuda {
namespace {

using namespace msm_gpu;

void check_problem(const GridSumProblem& p) {
  constexpr std::int64_t kMaxExtent = std::int64_t{1} << 30;
  if (p.nx < 0 || p.ny < 0 || p.nz < 0) throw UsageError("grid dimensions must not be negative");
  if (p.nx > kMaxExtent || p.ny > static_cast<std::int64_t>(kTile) * 65535 || p.nz > kMaxExtent - p.z_offset ||
      p.z_offset < 0)
    throw UsageError("grid of " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" + std::to_string(p.nz) +
                     " points is too large for cuda-msm (at most 524,280 points along y)");
  if (p.atom_count >= static_cast<std::size_t>(INT_MAX))
    throw UsageError("too many atoms for cuda-msm (at most " + std::to_string(INT_MAX - 1) + ")");
  if (p.atom_count > 0 && (!p.x || !p.y || !p.z || !p.q)) throw Error("compute_msm: missing atom arrays");
}

const char* const kPhaseNames[6] = {"binning", "anterpolation", "restriction", "cutoff", "top", "prolongation"};

}  // namespace

ComputeTiming compute_msm(const GridSumProblem& p, const Plan& plan, const MsmRunOptions& options) {
  const Stopwatch wall;
  check_problem(p);
  if (p.point_count() > 0 && p.potential == nullptr) throw Error("compute_msm: no output buffer");
  ComputeTiming timing;
  const auto report = [&](std::int64_t k0, std::int64_t planes) {
    if (options.planes_done) options.planes_done(k0, planes);
    if (options.progress) options.progress(static_cast<std::size_t>(k0 + planes), static_cast<std::size_t>(p.nz));
  };
  DeviceGuard guard(options.device);
  timing.device = describe_device(options.device);
  if (plan.levels.empty()) {  // no atoms (or no points): the map is zero
    std::fill(p.potential, p.potential + p.point_count(), 0.0f);
    if (p.nz > 0) report(0, p.nz);
    timing.wall_seconds = wall.seconds();
    return timing;
  }

  // Buffers before the streams: the streams' destructors wait for their work, so nothing is
  // freed under a running kernel or copy, also when an error unwinds this function.
  DeviceState st;
  std::unique_lock<std::mutex> kept_lock;
  DeviceWorkspace::Buffers* kept = claim(options.workspace, options.device, kept_lock);
  SlabStorage own_slabs;
  std::array<DeviceBuffer<float>, 2> own_contracted;
  std::array<DeviceBuffer<float>, 2>& d_slab = kept ? kept->slabs.device : own_slabs.device;
  std::array<DeviceBuffer<float>, 2>& d_contracted = kept ? kept->contracted : own_contracted;
  std::array<PinnedBuffer<float>, 2>& h_slab = kept ? kept->slabs.staging : own_slabs.staging;
  std::array<Stream, 2> streams;
  std::array<Event, 7> marks;
  upload_axis_tables(p, plan, st, streams[0].get());
  grid_phases(p, plan, st, streams[0].get(), marks);
  for (int i = 0; i < 6; ++i)
    timing.phases.push_back(
        {kPhaseNames[i],
         Event::elapsed_ms(marks[static_cast<std::size_t>(i)], marks[static_cast<std::size_t>(i + 1)]) / 1000.0});

  // Slabs of planes through two buffers on two streams: slab s's kernels run while slab s−1
  // is copied out (kernels of consecutive slabs are serialized, so their events add up).
  std::size_t free_bytes = 0, total_bytes = 0;
  ESPGRID_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  free_bytes += d_slab[0].bytes() + d_slab[1].bytes() + d_contracted[0].bytes() + d_contracted[1].bytes();  // ours
  const std::int64_t planes = msm::slab_planes(p, plan, options.max_slab_bytes, free_bytes);
  const bool two = planes < p.nz;
  const std::size_t slab_points = p.plane_points() * static_cast<std::size_t>(planes);
  const std::size_t contracted_points =
      static_cast<std::size_t>(plan.levels[0].grid.n[0] * plan.levels[0].grid.n[1]) * static_cast<std::size_t>(planes);
  for (int b = 0; b < (two ? 2 : 1); ++b) {
    const auto bi = static_cast<std::size_t>(b);
    ensure_capacity(d_slab[bi], slab_points, b ? "potential slab (2nd buffer)" : "potential slab");
    ensure_capacity(d_contracted[bi], contracted_points, "MSM contracted planes");
    ensure_capacity(h_slab[bi], slab_points, "potential slab (staging)");
  }
  std::array<Event, 2> start, middle, stop;
  std::array<Event, 2> done{Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};
  double interpolation_ms = 0, short_ms = 0;
  struct InFlight {
    std::int64_t k0;
    int planes;
    int buffer;
  };
  std::optional<InFlight> pending;
  const auto finish = [&](const InFlight& s) {
    const std::size_t b = static_cast<std::size_t>(s.buffer);
    done[b].synchronize();
    interpolation_ms += Event::elapsed_ms(start[b], middle[b]);
    short_ms += Event::elapsed_ms(middle[b], stop[b]);
    copy_floats(p.potential + p.plane_points() * static_cast<std::size_t>(s.k0), h_slab[b].get(),
                p.plane_points() * static_cast<std::size_t>(s.planes));
    report(s.k0, s.planes);
  };
  streams[1].wait(marks[6].get());  // the grids are ready
  int slab_index = 0;
  for (std::int64_t k0 = 0; k0 < p.nz; k0 += planes, ++slab_index) {
    const int b = slab_index & 1;
    const std::size_t bi = static_cast<std::size_t>(b);
    const int count = static_cast<int>(std::min<std::int64_t>(planes, p.nz - k0));
    const cudaStream_t stream = streams[bi].get();
    if (slab_index > 0) streams[bi].wait(stop[1 - bi].get());
    start[bi].record(stream);
    queue_slab(p, plan, st, k0, count, d_slab[bi].get(), d_contracted[bi].get(), stream, &middle[bi], true, true);
    stop[bi].record(stream);
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(h_slab[bi].get(), d_slab[bi].get(),
                                       sizeof(float) * p.plane_points() * static_cast<std::size_t>(count),
                                       cudaMemcpyDeviceToHost, stream));
    done[bi].record(stream);
    if (pending) finish(*pending);
    pending = InFlight{k0, count, b};
  }
  if (pending) finish(*pending);
  timing.phases.push_back({"interpolation", interpolation_ms / 1000.0});
  timing.phases.push_back({"short_range", short_ms / 1000.0});
  for (const PhaseTiming& phase : timing.phases) timing.kernel_seconds += phase.seconds;
  timing.wall_seconds = wall.seconds();
  timing.parts.push_back(
      WorkerTiming{options.device, timing.device, timing.kernel_seconds, timing.wall_seconds, p.nz, slab_index});
  return timing;
}

msm::LevelGrids<float> msm_level_grids(const GridSumProblem& p, const Plan& plan, int device) {
  check_problem(p);
  DeviceGuard guard(device);
  msm::LevelGrids<float> out;
  if (plan.levels.empty()) return out;
  DeviceState st;
  Stream stream;
  std::array<Event, 7> marks;
  grid_phases(p, plan, st, stream.get(), marks);
  const auto copy = [&](std::vector<DeviceBuffer<float>>& from, std::vector<std::vector<float>>& to) {
    for (const DeviceBuffer<float>& level : from) {
      to.emplace_back(level.size());
      ESPGRID_CUDA_CHECK(cudaMemcpy(to.back().data(), level.get(), level.bytes(), cudaMemcpyDeviceToHost));
    }
  };
  copy(st.charge, out.charge);
  copy(st.direct, out.direct);
  copy(st.potential, out.potential);
  return out;
}

void msm_map_parts(const GridSumProblem& p, const Plan& plan, int device, float* long_range, float* short_range) {
  check_problem(p);
  DeviceGuard guard(device);
  if (plan.levels.empty()) {
    std::fill(long_range, long_range + p.point_count(), 0.0f);
    std::fill(short_range, short_range + p.point_count(), 0.0f);
    return;
  }
  DeviceState st;
  const int planes = static_cast<int>(p.nz);
  DeviceBuffer<float> slab(p.point_count(), "potential slab");
  DeviceBuffer<float> contracted(
      static_cast<std::size_t>(plan.levels[0].grid.n[0] * plan.levels[0].grid.n[1]) * static_cast<std::size_t>(planes),
      "MSM contracted planes");
  Stream stream;  // after the buffers: its destructor waits for the work on them
  std::array<Event, 7> marks;
  upload_axis_tables(p, plan, st, stream.get());
  grid_phases(p, plan, st, stream.get(), marks);
  queue_slab(p, plan, st, 0, planes, slab.get(), contracted.get(), stream.get(), nullptr, true, false);
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(long_range, slab.get(), slab.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  queue_slab(p, plan, st, 0, planes, slab.get(), contracted.get(), stream.get(), nullptr, false, true);
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(short_range, slab.get(), slab.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
}

}  // namespace espgrid::cuda
