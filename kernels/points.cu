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
#include <vector>

#include "kernels/device_common.cuh"
#include "src/compute/points_cuda_driver.h"
#include "src/core/stopwatch.h"

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

/// A block's work in potential_at_point_groups: one tile of kBlock points (from `point_first`, padded
/// to whole tiles) over `atom_tiles` tiles of atoms from `atom_first` (a multiple of kBlock).
struct GroupItem {
  int point_first;
  int atom_first;
  int atom_tiles;
};

/// The slices of a group's points: item `first_item + s` holds slice s's partial sums of the tile.
struct PointTile {
  int first_item;
  int slices;
};

template <class Potential>
__global__ void group_partials_kernel(float* __restrict__ partial, const GroupItem* __restrict__ items,
                                      const float4* __restrict__ points, const float4* __restrict__ atoms,
                                      const std::uint32_t* __restrict__ index, float a2, PairParameters pair) {
  __shared__ float4 tile[kBlock];
  const GroupItem item = items[blockIdx.x];
  const float4 point = points[item.point_first + static_cast<int>(threadIdx.x)];
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
                                  const PointTile* __restrict__ tiles, int padded_points) {
  const int p = static_cast<int>(blockIdx.x) * kBlock + static_cast<int>(threadIdx.x);
  if (p >= padded_points) return;
  const PointTile t = tiles[p / kBlock];
  float sum = 0.0f;
  for (int s = 0; s < t.slices; ++s)
    sum += partial[static_cast<std::size_t>(t.first_item + s) * kBlock + static_cast<std::size_t>(p % kBlock)];
  out[p] = sum;
}

/// Atom tiles a block at most: 64 × 128 = 8,192 atoms (~1 M terms a block).
constexpr int kSliceTiles = 64;

/// The padded host arrays of potential_at_point_groups: every atom once, then a q = 0 atom at the
/// centre that pads each group's indices to whole tiles; each group's points from a whole tile
/// (padding points at the centre, dropped); a block's items and each point tile's slices.
struct GroupLayout {
  std::vector<float4> atoms, points;
  std::vector<std::uint32_t> index;
  std::vector<GroupItem> items;
  std::vector<PointTile> tiles;
  std::vector<std::size_t> padded_first;  ///< each group's first point in `points`
};

GroupLayout layout_groups(const PointGroupProblem& problem) {
  const PointSumProblem& arrays = problem.arrays;
  if (arrays.atom_count >= static_cast<std::size_t>(UINT32_MAX))
    throw Error("too many atoms for one GPU run (at most 2^32 - 1)");
  GroupLayout l;
  l.atoms.assign(arrays.atom_count + 1, make_float4(0.f, 0.f, 0.f, 0.f));
  for (std::size_t a = 0; a < arrays.atom_count; ++a)
    l.atoms[a] = make_float4(arrays.x[a], arrays.y[a], arrays.z[a], arrays.q[a]);
  const auto pad = static_cast<std::uint32_t>(arrays.atom_count);
  l.padded_first.assign(problem.group_count, 0);
  std::size_t last_first = SIZE_MAX, last_count = 0, padded_atoms = 0;
  for (std::size_t g = 0; g < problem.group_count; ++g) {
    const PointGroup& group = problem.groups[g];
    if (group.point_first + group.point_count > arrays.point_count ||
        group.atom_first + group.atom_count > problem.index_count)
      throw Error("internal error: a point group reaches past its arrays");
    if (group.point_count == 0) continue;
    if (group.atom_first != last_first || group.atom_count != last_count) {  // a lattice's centres share its atoms
      last_first = group.atom_first;
      last_count = group.atom_count;
      padded_atoms = l.index.size();
      l.index.insert(l.index.end(), problem.atom_index + group.atom_first,
                     problem.atom_index + group.atom_first + group.atom_count);
      l.index.resize(padded_atoms + std::max<std::size_t>(1, (group.atom_count + kBlock - 1) / kBlock) * kBlock, pad);
    }
    const int atom_tiles = static_cast<int>(std::max<std::size_t>(1, (group.atom_count + kBlock - 1) / kBlock));
    l.padded_first[g] = l.points.size();
    for (std::size_t p = group.point_first; p < group.point_first + group.point_count; ++p)
      l.points.push_back(make_float4(arrays.px[p], arrays.py[p], arrays.pz[p], 0.f));
    l.points.resize((l.points.size() + kBlock - 1) / kBlock * kBlock, make_float4(0.f, 0.f, 0.f, 0.f));
    for (std::size_t first = l.padded_first[g]; first < l.points.size(); first += kBlock) {
      l.tiles.push_back({static_cast<int>(l.items.size()), (atom_tiles + kSliceTiles - 1) / kSliceTiles});
      for (int t = 0; t < atom_tiles; t += kSliceTiles)
        l.items.push_back({static_cast<int>(first), static_cast<int>(padded_atoms) + t * kBlock,
                           std::min(kSliceTiles, atom_tiles - t)});
    }
  }
  if (l.points.size() > static_cast<std::size_t>(INT32_MAX) || l.index.size() > static_cast<std::size_t>(INT32_MAX) ||
      l.items.size() > static_cast<std::size_t>(INT32_MAX) / kBlock)
    throw Error("too many points or atoms for one GPU run (at most 2^31 each)");
  return l;
}

}  // namespace

ComputeTiming potential_at_point_groups(const PointGroupProblem& problem, int device) {
  const Stopwatch wall;
  ComputeTiming timing;
  const PointSumProblem& arrays = problem.arrays;
  const GroupLayout layout = layout_groups(problem);
  const std::vector<float4>&h_atoms = layout.atoms, &h_points = layout.points;
  const std::vector<std::uint32_t>& h_index = layout.index;
  const std::vector<GroupItem>& items = layout.items;
  const std::vector<PointTile>& tiles = layout.tiles;
  const std::vector<std::size_t>& padded_first = layout.padded_first;
  if (items.empty()) return timing;
  DeviceGuard guard(device);
  timing.device = describe_device(device);
  DeviceBuffer<float4> d_atoms(h_atoms.size(), "atoms");
  DeviceBuffer<std::uint32_t> d_index(h_index.size(), "point-group atom indices");
  DeviceBuffer<float4> d_points(h_points.size(), "points");
  DeviceBuffer<GroupItem> d_items(items.size(), "point-group items");
  DeviceBuffer<PointTile> d_tiles(tiles.size(), "point-group tiles");
  DeviceBuffer<float> d_partial(items.size() * kBlock, "partial sums");
  DeviceBuffer<float> d_out(h_points.size(), "potential at the points");
  Stream stream;
  Event start, stop;
  const auto upload = [&](auto& device_buffer, const auto& host) {
    ESPGRID_CUDA_CHECK(
        cudaMemcpyAsync(device_buffer.get(), host.data(), device_buffer.bytes(), cudaMemcpyHostToDevice, stream.get()));
  };
  upload(d_atoms, h_atoms);
  upload(d_index, h_index);
  upload(d_points, h_points);
  upload(d_items, items);
  upload(d_tiles, tiles);
  start.record(stream.get());
  with_pair_potential(arrays.model, [&](auto potential) {
    using Potential = decltype(potential);
    group_partials_kernel<Potential><<<static_cast<unsigned>(items.size()), kBlock, 0, stream.get()>>>(
        d_partial.get(), d_items.get(), d_points.get(), d_atoms.get(), d_index.get(), arrays.softening2, arrays.pair);
    ESPGRID_CUDA_CHECK_LAUNCH();
  });
  group_sums_kernel<<<blocks_for(static_cast<std::int64_t>(h_points.size()), kBlock), kBlock, 0, stream.get()>>>(
      d_out.get(), d_partial.get(), d_tiles.get(), static_cast<int>(h_points.size()));
  ESPGRID_CUDA_CHECK_LAUNCH();
  stop.record(stream.get());
  std::vector<float> values(h_points.size());
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(values.data(), d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  timing.kernel_seconds = 1e-3 * Event::elapsed_ms(start, stop);
  for (std::size_t g = 0; g < problem.group_count; ++g) {
    const PointGroup& group = problem.groups[g];
    for (std::size_t p = 0; p < group.point_count; ++p)
      arrays.potential[group.point_first + p] = values[padded_first[g] + p];
  }
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
