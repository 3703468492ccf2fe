// The pieces the cuda-msm files share (kernels/msm_levels.cu: the grid phases; kernels/msm_map.cu:
// the map slabs; kernels/msm.cu: the driver): lattice boxes on the device, the pass geometry,
// host helpers for uploads and launches, and the device state that outlives the grid phases.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "src/compute/cuda_driver.h"
#include "src/core/errors.h"
#include "src/msm/msm_cuda_driver.h"
#include "src/msm/msm_math.h"

namespace espgrid::cuda::msm_gpu {

using msm::GridBox;
using msm::Plan;

constexpr int kLinearBlock = 256;   // threads of the one-dimensional kernels
constexpr int kMaxRestriction = 5;  // restriction_width of the quintic

/// A box of lattice points on the device. Every MSM grid has at most 2^28 points and lattice
/// indices within ±2^30 (checked on the host), so int holds them.
struct DevBox {
  int lo[3];
  int n[3];
};

inline DevBox dev_box(const GridBox& b) {
  DevBox d{};
  for (int a = 0; a < 3; ++a) {
    if (b.lo[a] < -(std::int64_t{1} << 30) || b.lo[a] + b.n[a] > (std::int64_t{1} << 30))
      throw UsageError(
          "MSM lattice indices out of range for cuda-msm (coordinates too far from the map origin for "
          "this spacing)");
    d.lo[a] = static_cast<int>(b.lo[a]);
    d.n[a] = static_cast<int>(b.n[a]);
  }
  return d;
}

__device__ __forceinline__ std::size_t box_index(const DevBox& b, int x, int y, int z) {
  return static_cast<std::size_t>(x - b.lo[0]) +
         static_cast<std::size_t>(b.n[0]) * (static_cast<std::size_t>(y - b.lo[1]) +
                                             static_cast<std::size_t>(b.n[1]) * static_cast<std::size_t>(z - b.lo[2]));
}

__device__ __forceinline__ std::size_t box_points(const DevBox& b) {
  return static_cast<std::size_t>(b.n[0]) * static_cast<std::size_t>(b.n[1]) * static_cast<std::size_t>(b.n[2]);
}

/// (x, y, z) of the idx-th point of `b` (x fastest).
__device__ __forceinline__ void box_point(const DevBox& b, std::size_t idx, int& x, int& y, int& z) {
  x = b.lo[0] + static_cast<int>(idx % static_cast<std::size_t>(b.n[0]));
  idx /= static_cast<std::size_t>(b.n[0]);
  y = b.lo[1] + static_cast<int>(idx % static_cast<std::size_t>(b.n[1]));
  z = b.lo[2] + static_cast<int>(idx / static_cast<std::size_t>(b.n[1]));
}

__device__ __forceinline__ int floor_div2(int v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }
__device__ __forceinline__ int ceil_div2(int v) { return -floor_div2(-v); }

/// Cell (lattice) index of a coordinate: floor(v / size) in IEEE float division, clamped to
/// [lo, lo + n − 1] (the plan pads its boxes by one, so clamping never moves a real atom).
__device__ __forceinline__ int cell_of(float v, float size, int lo, int n) {
  const int c = static_cast<int>(floorf(v / size));
  return min(max(c, lo), lo + n - 1);
}

/// Grid coordinate float(i)·h rounded once, as the exact kernels compute it.
__device__ __forceinline__ float grid_coord(int i, float h) { return __fmul_rn(static_cast<float>(i), h); }

inline std::size_t blocks_for(std::size_t n, std::size_t per_block) { return (n + per_block - 1) / per_block; }

// The short range's tiles (kernels/msm_map.cu); check_problem bounds the map by them.

constexpr int kTile = 8;                                                   // map points per tile edge
constexpr int kPointsPerThread = 4;                                        // along z
constexpr int kShortThreads = kTile * kTile * (kTile / kPointsPerThread);  // 128
constexpr int kRowBatch = 1024;  // cell rows per pass over the shared row table
constexpr int kRowsPerThread = kRowBatch / kShortThreads;
constexpr int kAtomTile = 256;  // candidate atoms per shared-memory tile

// ---- restriction and prolongation: one axis of a 3-D array at a time

struct Weights {
  float w[2 * kMaxRestriction + 1];  ///< w[j + width] = φ(j/2)
  int width;                         ///< restriction_width
};

/// A restriction or prolongation pass (msm::AxisPass, src/msm/msm_plan.h) on the device:
/// the same geometry, in the int widths the kernels index with (every MSM grid has at most
/// 2^28 points, checked on the host).
struct DevPass {
  int out_n[3];
  int axis;
  int in_first, in_count, out_first;
  std::size_t in_offset, in_stride[3];
  std::size_t out_offset, out_stride[3];
  int accumulate;
};

inline DevPass dev_pass(const msm::AxisPass& p) {
  DevPass d{};
  for (int a = 0; a < 3; ++a) {
    d.out_n[a] = static_cast<int>(p.out_n[static_cast<std::size_t>(a)]);
    d.in_stride[a] = p.in_stride[static_cast<std::size_t>(a)];
    d.out_stride[a] = p.out_stride[static_cast<std::size_t>(a)];
  }
  d.axis = p.axis;
  d.in_first = static_cast<int>(p.in_first);
  d.in_count = static_cast<int>(p.in_count);
  d.out_first = static_cast<int>(p.out_first);
  d.in_offset = p.in_offset;
  d.out_offset = p.out_offset;
  d.accumulate = p.accumulate ? 1 : 0;
  return d;
}

__device__ __forceinline__ std::size_t pass_points(const DevPass& p) {
  return static_cast<std::size_t>(p.out_n[0]) * static_cast<std::size_t>(p.out_n[1]) *
         static_cast<std::size_t>(p.out_n[2]);
}

__device__ __forceinline__ void pass_point(const DevPass& p, std::size_t idx, int (&o)[3]) {
  o[0] = static_cast<int>(idx % static_cast<std::size_t>(p.out_n[0]));
  idx /= static_cast<std::size_t>(p.out_n[0]);
  o[1] = static_cast<int>(idx % static_cast<std::size_t>(p.out_n[1]));
  o[2] = static_cast<int>(idx / static_cast<std::size_t>(p.out_n[1]));
}

// ---- host helpers

/// A host vector on the device, uploaded on `stream` (pinned staging, so the copy is truly
/// asynchronous; the staging lives until the stream is synchronized by the caller).
template <class T>
struct Uploaded {
  PinnedBuffer<T> staging;
  DeviceBuffer<T> device;
};

template <class T, class U>
Uploaded<T> upload(const std::vector<U>& host, const std::string& name, cudaStream_t stream) {
  Uploaded<T> out;
  out.staging = PinnedBuffer<T>(host.size(), name + " (staging)");
  out.device = DeviceBuffer<T>(host.size(), name);
  for (std::size_t i = 0; i < host.size(); ++i) out.staging.get()[i] = static_cast<T>(host[i]);
  if (!host.empty())
    ESPGRID_CUDA_CHECK(
        cudaMemcpyAsync(out.device.get(), out.staging.get(), out.device.bytes(), cudaMemcpyHostToDevice, stream));
  return out;
}

inline Weights restriction_weights(int order) {
  Weights w{};
  w.width = msm::restriction_width(order);
  for (int j = -w.width; j <= w.width; ++j) w.w[j + w.width] = static_cast<float>(msm::restriction_weight(j, order));
  return w;
}

template <class Kernel, class... Args>
void launch_linear(Kernel kernel, std::size_t n, cudaStream_t stream, Args... args) {
  if (n == 0) return;
  kernel<<<static_cast<unsigned>(blocks_for(n, kLinearBlock)), kLinearBlock, 0, stream>>>(args...);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

/// Waits for a stream's work when it goes out of scope (errors ignored: unwinding or done).
struct DrainOnExit {
  cudaStream_t stream;
  ~DrainOnExit() { cudaStreamSynchronize(stream); }
};

/// Everything on the device that outlives the grid phases: the sorted atoms, cell starts, the
/// level grids and the tables the slabs read.
struct DeviceState {
  DeviceBuffer<float4> atoms, sorted;
  DeviceBuffer<unsigned> cell_start;
  std::vector<DeviceBuffer<float>> charge, direct, potential;  ///< per level
  std::vector<Uploaded<float>> axis_w;                         ///< x, y, z weights
  std::vector<Uploaded<int>> axis_first;                       ///< x, y, z first taps
  int taps = 0;
};

// ---- the phases, by file

/// kernels/msm_levels.cu: runs the grid phases of `plan` on `stream`, recording an event at the
/// start of each phase (binning, anterpolation, restriction, cutoff, top, prolongation) and at
/// the end. Every buffer is allocated and every table uploaded before the first event, so the
/// events time the kernels alone.
void grid_phases(const GridSumProblem& p, const Plan& plan, DeviceState& st, cudaStream_t stream,
                 std::array<Event, 7>& marks);
/// kernels/msm_map.cu: the map-axis weight tables (double on the host, float on the device), for
/// x, y and every plane of the problem along z.
void upload_axis_tables(const GridSumProblem& p, const Plan& plan, DeviceState& st, cudaStream_t stream);
/// kernels/msm_map.cu: queues the interpolation (writing the slab) and the short range (adding
/// to it) of planes [k0, k0 + planes) of the problem on `stream`; `contracted` holds planes
/// level-1 planes.
void queue_slab(const GridSumProblem& p, const Plan& plan, const DeviceState& st, std::int64_t k0, int planes,
                float* slab, float* contracted, cudaStream_t stream, const Event* between, bool long_range,
                bool short_range);

}  // namespace espgrid::cuda::msm_gpu
