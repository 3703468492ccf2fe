// The potential at arbitrary points (src/compute/points_cuda_driver.h): one thread a point,
// 128 points a block; the block loads 128 atoms at a time into shared memory (float4: x, y, z,
// q) and every thread sums them in order, so a point's value is the same for any launch shape
// and chunking. Atoms are padded to whole tiles with q = 0 at the centre (a zero term: r² ≥ a²
// keeps f finite). Points are computed in chunks of at most kChunkEvaluations pair terms per
// launch, so no launch runs long enough to trip a display watchdog, and progress is reported
// between them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/device_common.cuh"
#include "src/compute/points_cuda_driver.h"
#include "src/core/process_trace.h"
#include "src/core/stopwatch.h"
#include "src/core/switches.h"

namespace espgrid::cuda {
namespace {

constexpr int kBlock = 128;                    ///< threads a block, and atoms a shared-memory tile
constexpr double kChunkEvaluations = 1 << 28;  ///< pair terms a launch at most (well under 1 ms on an H100)

/// `sum` plus the terms of the kBlock atoms of `tile` at `point`, in the tile's order.
template <class Potential>
__device__ float tile_sum(float4 point, const float4* tile, float sum, float a2, const PairParameters& pair) {
#pragma unroll 8
  for (int a = 0; a < kBlock; ++a) {
    const float4 atom = tile[a];
    const float dx = point.x - atom.x;
    const float dy = point.y - atom.y;
    const float dz = point.z - atom.z;
    sum += Potential::template term<DeviceMath>(atom.w, fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, a2))), pair);
  }
  return sum;
}

template <class Potential>
__global__ void points_kernel(float* __restrict__ out, const float4* __restrict__ points, int point_count,
                              const float4* __restrict__ atoms, int tiles, float a2, PairParameters pair) {
  __shared__ float4 tile[kBlock];
  const int p = static_cast<int>(blockIdx.x) * kBlock + static_cast<int>(threadIdx.x);
  const float4 point = p < point_count ? points[p] : make_float4(0.f, 0.f, 0.f, 0.f);
  float sum = 0.0f;
  for (int t = 0; t < tiles; ++t) {
    __syncthreads();
    tile[threadIdx.x] = atoms[t * kBlock + static_cast<int>(threadIdx.x)];
    __syncthreads();
    sum = tile_sum<Potential>(point, tile, sum, a2, pair);
  }
  if (p < point_count) out[p] = sum;
}

/// A plane group on the device: potential_on_plane_groups' PlaneGroup without its atoms.
struct DevicePlane {
  float origin[3], step_u[3], step_v[3];
  int dims_u, point_count;
};

/// A block's work: one tile of kBlock points of group `plane` (from `point_first` within it) over
/// `atom_tiles` tiles of padded atom indices from `atom_first`, into partial row blockIdx.x.
struct GroupItem {
  int plane, point_first, atom_first, atom_tiles;
};

/// A point tile's result: its slices are items first_item .. first_item + slices − 1, its `count`
/// points go to out_first onwards.
struct PointTile {
  int first_item, slices, out_first, count;
};

template <class Potential>
__global__ void group_partials_kernel(float* __restrict__ partial, const GroupItem* __restrict__ items,
                                      const DevicePlane* __restrict__ planes, const float4* __restrict__ atoms,
                                      const std::uint32_t* __restrict__ index, float a2, PairParameters pair) {
  __shared__ float4 tile[kBlock];
  const GroupItem item = items[blockIdx.x];
  const DevicePlane& plane = planes[item.plane];
  const int p = min(item.point_first + static_cast<int>(threadIdx.x), plane.point_count - 1);  // padding: a repeat
  const float a = static_cast<float>(p % plane.dims_u), b = static_cast<float>(p / plane.dims_u);
  const float4 point = make_float4(plane.origin[0] + a * plane.step_u[0] + b * plane.step_v[0],
                                   plane.origin[1] + a * plane.step_u[1] + b * plane.step_v[1],
                                   plane.origin[2] + a * plane.step_u[2] + b * plane.step_v[2], 0.f);
  float sum = 0.0f;
  for (int t = 0; t < item.atom_tiles; ++t) {
    __syncthreads();
    tile[threadIdx.x] = atoms[index[item.atom_first + t * kBlock + static_cast<int>(threadIdx.x)]];
    __syncthreads();
    sum = tile_sum<Potential>(point, tile, sum, a2, pair);
  }
  partial[static_cast<std::size_t>(blockIdx.x) * kBlock + threadIdx.x] = sum;
}

/// Each point's partial sums added in slice order.
__global__ void group_sums_kernel(float* __restrict__ out, const float* __restrict__ partial,
                                  const PointTile* __restrict__ tiles) {
  const PointTile t = tiles[blockIdx.x];
  if (static_cast<int>(threadIdx.x) >= t.count) return;
  float sum = 0.0f;
  for (int s = 0; s < t.slices; ++s) sum += partial[static_cast<std::size_t>(t.first_item + s) * kBlock + threadIdx.x];
  out[t.out_first + static_cast<int>(threadIdx.x)] = sum;
}

/// Atom tiles a block at most where a group has few point tiles: 64 × 128 = 8,192 atoms. A group of
/// kWideGroupTiles point tiles or more takes all its atoms in one slice (enough blocks already).
constexpr int kSliceTiles = 64;
constexpr int kWideGroupTiles = 512;

/// The host side of potential_on_plane_groups: the planes, every group's atom indices padded to
/// whole tiles (with the q = 0 atom after the last; a list shared by consecutive groups once), a
/// block's items and each point tile's slices.
struct GroupLayout {
  std::vector<DevicePlane> planes;
  std::vector<std::uint32_t> index;
  std::vector<GroupItem> items;
  std::vector<PointTile> tiles;
  std::size_t points = 0;
};

GroupLayout layout_groups(const PlaneGroupProblem& problem) {
  if (problem.atom_count >= static_cast<std::size_t>(UINT32_MAX))
    throw Error("too many atoms for one GPU run (at most 2^32 - 1)");
  GroupLayout l;
  const auto pad = static_cast<std::uint32_t>(problem.atom_count);
  // Whole tiles of a group's atoms (at least one: a group of none sums the pad atom), and whether
  // group g starts a list of its own (not the one before's).
  const auto atom_tiles_of = [](const PlaneGroup& group) {
    return std::max<std::size_t>(1, (group.atom_count + kBlock - 1) / kBlock);
  };
  const auto new_list = [&](std::size_t g) { return g == 0 || problem.groups[g].atoms != problem.groups[g - 1].atoms; };
  std::size_t index_size = 0;
  for (std::size_t g = 0; g < problem.group_count; ++g)
    if (new_list(g)) index_size += atom_tiles_of(problem.groups[g]) * kBlock;
  l.index.resize(index_size);
  std::size_t padded_atoms = 0, next_index = 0;
  for (std::size_t g = 0; g < problem.group_count; ++g) {
    const PlaneGroup& group = problem.groups[g];
    if (group.point_count > static_cast<std::size_t>(INT32_MAX) || group.dims_u == 0)
      throw Error("internal error: a plane group of " + std::to_string(group.point_count) + " points");
    const int atom_tiles = static_cast<int>(atom_tiles_of(group));
    if (new_list(g)) {
      padded_atoms = next_index;
      std::copy(group.atoms, group.atoms + group.atom_count,
                l.index.begin() + static_cast<std::ptrdiff_t>(padded_atoms));
      std::fill(
          l.index.begin() + static_cast<std::ptrdiff_t>(padded_atoms + group.atom_count),
          l.index.begin() + static_cast<std::ptrdiff_t>(padded_atoms + static_cast<std::size_t>(atom_tiles) * kBlock),
          pad);
      next_index = padded_atoms + static_cast<std::size_t>(atom_tiles) * kBlock;
    }
    DevicePlane plane;
    for (int d = 0; d < 3; ++d)
      plane.origin[d] = group.origin[d], plane.step_u[d] = group.step_u[d], plane.step_v[d] = group.step_v[d];
    plane.dims_u = static_cast<int>(group.dims_u);
    plane.point_count = static_cast<int>(group.point_count);
    l.planes.push_back(plane);
    const int point_tiles = static_cast<int>((group.point_count + kBlock - 1) / kBlock);
    const int slice = point_tiles >= kWideGroupTiles ? atom_tiles : kSliceTiles;
    for (int pt = 0; pt < point_tiles; ++pt) {
      l.tiles.push_back({static_cast<int>(l.items.size()), (atom_tiles + slice - 1) / slice,
                         static_cast<int>(l.points) + pt * kBlock,
                         std::min(kBlock, static_cast<int>(group.point_count) - pt * kBlock)});
      for (int t = 0; t < atom_tiles; t += slice)
        l.items.push_back({static_cast<int>(g), pt * kBlock, static_cast<int>(padded_atoms) + t * kBlock,
                           std::min(slice, atom_tiles - t)});
    }
    l.points += group.point_count;
  }
  if (l.points > static_cast<std::size_t>(INT32_MAX) || l.index.size() > static_cast<std::size_t>(INT32_MAX) ||
      l.items.size() > static_cast<std::size_t>(INT32_MAX) / kBlock)
    throw Error("too many points or atoms for one GPU run (at most 2^31 each)");
  return l;
}

/// Page-locked staging for potential_on_plane_groups' copies, kept for the process (grown, never
/// shrunk; the process's end frees it): page-locking costs ~30 ms a GB, and freeing it (cudaFreeHost),
/// like cudaFree, may synchronize with the whole device, where PB's boundary runs beside the surface.
struct KeptStaging {
  std::mutex mutex;
  PinnedBuffer<char> buffer;
};
KeptStaging& kept_staging() {
  static KeptStaging* const kept = new KeptStaging;  // never deleted: no free after CUDA's teardown
  return *kept;
}

/// A host-to-device copy of upload_pieces.
struct Piece {
  void* to;
  const void* from;
  std::size_t bytes;
};

/// Queues the pieces' copies on `st`: through the kept staging (grown to hold them and `back` bytes
/// copied back; the caller holds its mutex), whose start it returns, or with `pinned` false straight
/// from their pageable memory (null).
template <std::size_t N>
char* upload_pieces(const Piece (&pieces)[N], bool pinned, std::size_t back, cudaStream_t st) {
  const auto aligned = [](std::size_t bytes) { return (bytes + 255) / 256 * 256; };  // each piece's room
  char* staging = nullptr;
  if (pinned) {
    std::size_t staged = 0;
    for (const Piece& p : pieces) staged += aligned(p.bytes);
    PinnedBuffer<char>& kept = kept_staging().buffer;
    if (kept.size() < std::max(staged, back))
      kept = PinnedBuffer<char>(std::max(staged, back), "plane-group inputs (page-locked)");
    staging = kept.get();
  }
  std::size_t at = 0;
  for (const Piece& p : pieces) {
    const void* from = p.from;
    if (staging) {
      std::memcpy(staging + at, p.from, p.bytes);
      from = staging + at;
      at += aligned(p.bytes);
    }
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(p.to, from, p.bytes, cudaMemcpyHostToDevice, st));
  }
  return staging;
}

}  // namespace

ComputeTiming potential_on_plane_groups(const PlaneGroupProblem& problem, int device) {
  const Stopwatch wall;
  ComputeTiming timing;
  const GroupLayout l = layout_groups(problem);
  trace_process("boundary sums: groups laid out");
  if (l.items.empty()) return timing;
  DeviceGuard guard(device);
  timing.device = describe_device(device);
  // Held until the stream below has finished with the staging (declared before it).
  const bool pinned = !switched_off("ESPGRID_BOUNDARY_PINNED");
  std::unique_lock<std::mutex> staging_lock(kept_staging().mutex, std::defer_lock);
  if (pinned) staging_lock.lock();
  // Freed in the stream's order: cudaFree would wait for the solve's preparation, queued on the
  // device meanwhile (ESPGRID_BOUNDARY_ORDERED_FREE=0: cudaFree).
  Stream stream;
  const cudaStream_t st = stream.get();
  const bool ordered = !switched_off("ESPGRID_BOUNDARY_ORDERED_FREE");
  StreamBuffer<float4> d_atoms(problem.atom_count + 1, "atoms", st, ordered);
  StreamBuffer<std::uint32_t> d_index(l.index.size(), "plane-group atom indices", st, ordered);
  StreamBuffer<DevicePlane> d_planes(l.planes.size(), "plane groups", st, ordered);
  StreamBuffer<GroupItem> d_items(l.items.size(), "plane-group items", st, ordered);
  StreamBuffer<PointTile> d_tiles(l.tiles.size(), "plane-group tiles", st, ordered);
  StreamBuffer<float> d_partial(l.items.size() * kBlock, "partial sums", st, ordered);
  StreamBuffer<float> d_out(l.points, "potential at the points", st, ordered);
  trace_process("boundary sums: device buffers allocated");
  // The uploads and the copy back go through page-locked memory: PB's boundary runs beside the
  // surface's kernels, and uploads the driver stages from pageable memory waited for their end (the
  // capsid on an H200, 2026-11-29: waiting for the boundary values 110-117 -> 51-75 ms;
  // benchmarks/NOTES.md). ESPGRID_BOUNDARY_PINNED=0: straight from pageable memory.
  const Piece pieces[] = {{d_atoms.get(), problem.atoms_xyzq, problem.atom_count * sizeof(float4)},
                          {d_index.get(), l.index.data(), d_index.bytes()},
                          {d_planes.get(), l.planes.data(), d_planes.bytes()},
                          {d_items.get(), l.items.data(), d_items.bytes()},
                          {d_tiles.get(), l.tiles.data(), d_tiles.bytes()}};
  char* const staging = upload_pieces(pieces, pinned, d_out.bytes(), st);
  trace_process("boundary sums: uploads queued");
  ESPGRID_CUDA_CHECK(cudaMemsetAsync(d_atoms.get() + problem.atom_count, 0, sizeof(float4), st));  // pad
  Event start, stop;
  start.record(st);
  // Each kernel's first launch returns only when the device's work queued before it ends (lazy
  // loading; beside the surface 100-200 ms on the capsid, 2026-11-29): the kernels run after it.
  // Loading them eagerly (CUDA_MODULE_LOADING=EAGER) let them run beside it, slowing it as much.
  trace_process("boundary sums: pad set, start recorded");
  with_pair_potential(problem.model, [&](auto potential) {
    using Potential = decltype(potential);
    group_partials_kernel<Potential><<<static_cast<unsigned>(l.items.size()), kBlock, 0, st>>>(
        d_partial.get(), d_items.get(), d_planes.get(), d_atoms.get(), d_index.get(), problem.softening2, problem.pair);
    ESPGRID_CUDA_CHECK_LAUNCH();
  });
  trace_process("boundary sums: partial sums launched");
  group_sums_kernel<<<static_cast<unsigned>(l.tiles.size()), kBlock, 0, st>>>(d_out.get(), d_partial.get(),
                                                                              d_tiles.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  trace_process("boundary sums: group sums launched");
  stop.record(st);
  trace_process("boundary sums: uploaded, kernels queued");
  // Into the staging memory once the uploads from it are done (the same stream: in order).
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(pinned ? static_cast<void*>(staging) : problem.potential, d_out.get(),
                                     d_out.bytes(), cudaMemcpyDeviceToHost, st));
  stream.synchronize();
  if (pinned) std::memcpy(problem.potential, staging, d_out.bytes());
  trace_process("boundary sums: done, copied back");
  timing.kernel_seconds = 1e-3 * Event::elapsed_ms(start, stop);
  timing.wall_seconds = wall.seconds();
  return timing;
}

ComputeTiming potential_at_points(const PointSumProblem& problem, int device, const ProgressFn& progress) {
  const Stopwatch wall;
  ComputeTiming timing;
  if (problem.point_count == 0) return timing;
  if (problem.point_count > static_cast<std::size_t>(INT32_MAX) ||
      problem.atom_count > static_cast<std::size_t>(INT32_MAX) - kBlock)
    throw Error("too many points or atoms for one GPU run (at most 2^31 each)");
  DeviceGuard guard(device);
  timing.device = describe_device(device);
  const std::size_t tiles = std::max<std::size_t>(1, (problem.atom_count + kBlock - 1) / kBlock);
  std::vector<float4> h_atoms(tiles * kBlock, make_float4(0.f, 0.f, 0.f, 0.f));  // padding: q = 0
  for (std::size_t a = 0; a < problem.atom_count; ++a)
    h_atoms[a] = make_float4(problem.x[a], problem.y[a], problem.z[a], problem.q[a]);
  std::vector<float4> h_points(problem.point_count);
  for (std::size_t p = 0; p < problem.point_count; ++p)
    h_points[p] = make_float4(problem.px[p], problem.py[p], problem.pz[p], 0.f);
  DeviceBuffer<float4> d_atoms(h_atoms.size(), "atoms");
  DeviceBuffer<float4> d_points(h_points.size(), "points");
  DeviceBuffer<float> d_out(problem.point_count, "potential at the points");
  Stream stream;
  Event start, stop;
  ESPGRID_CUDA_CHECK(
      cudaMemcpyAsync(d_atoms.get(), h_atoms.data(), d_atoms.bytes(), cudaMemcpyHostToDevice, stream.get()));
  ESPGRID_CUDA_CHECK(
      cudaMemcpyAsync(d_points.get(), h_points.data(), d_points.bytes(), cudaMemcpyHostToDevice, stream.get()));
  // Points a launch: whole blocks, about kChunkEvaluations pair terms, but at least four blocks
  // an SM: with many atoms 2^28 terms are a few dozen blocks (47k atoms: 45), which left most of
  // an H200's 132 SMs idle (PB's boundary, 156k points: 114 ms where the terms take ~4).
  int sms = 1;
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const double per_point = static_cast<double>(tiles * kBlock);
  const std::size_t chunk = static_cast<std::size_t>(
      std::max<double>(4.0 * sms * kBlock, std::floor(kChunkEvaluations / per_point / kBlock) * kBlock));
  with_pair_potential(problem.model, [&](auto potential) {
    using Potential = decltype(potential);
    for (std::size_t first = 0; first < problem.point_count; first += chunk) {
      const int count = static_cast<int>(std::min(chunk, problem.point_count - first));
      start.record(stream.get());
      points_kernel<Potential><<<blocks_for(count, kBlock), kBlock, 0, stream.get()>>>(
          d_out.get() + first, d_points.get() + first, count, d_atoms.get(), static_cast<int>(tiles),
          problem.softening2, problem.pair);
      ESPGRID_CUDA_CHECK_LAUNCH();
      stop.record(stream.get());
      stop.synchronize();
      timing.kernel_seconds += 1e-3 * Event::elapsed_ms(start, stop);
      if (progress) progress(first + static_cast<std::size_t>(count), problem.point_count);
    }
  });
  ESPGRID_CUDA_CHECK(
      cudaMemcpyAsync(problem.potential, d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  timing.wall_seconds = wall.seconds();
  return timing;
}

}  // namespace espgrid::cuda
