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
#pragma unroll 8
    for (int a = 0; a < kBlock; ++a) {
      const float4 atom = tile[a];
      const float dx = point.x - atom.x;
      const float dy = point.y - atom.y;
      const float dz = point.z - atom.z;
      sum += Potential::template term<DeviceMath>(atom.w, fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, a2))), pair);
    }
  }
  if (p < point_count) out[p] = sum;
}

}  // namespace

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
