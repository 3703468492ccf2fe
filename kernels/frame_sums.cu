// Exact frame sums on the device: one thread a point, the per-point arithmetic of
// src/compute/frame_sums_math.h (the host's FrameSums uses the same functions, so the limbs
// are the same integers wherever a frame was added).
#include <climits>
#include <string>

#include "kernels/cuda_runtime_support.h"
#include "kernels/frame_sums.cuh"
#include "src/compute/frame_sums_math.h"

namespace espgrid::cuda {
namespace {

constexpr int kBlock = 256;

__global__ void add_slab_kernel(SlabSums sums, const float* slab, int pitch_x, int pitch_y, int nx, int ny, int planes,
                                std::int64_t k0) {
  const std::int64_t plane = static_cast<std::int64_t>(nx) * ny;
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= plane * planes) return;
  const int i = static_cast<int>(idx % nx);
  const int j = static_cast<int>((idx / nx) % ny);
  const int k = static_cast<int>(idx / plane);
  const float value = slab[i + static_cast<std::int64_t>(pitch_x) * (j + static_cast<std::int64_t>(pitch_y) * k)];
  const std::int64_t point = (k0 + k) * plane + static_cast<std::int64_t>(j) * nx + i;
  if (!frame_sums::add_value(value, sums.limbs, sums.points, point, sums.squares))
    atomicMin(sums.first_bad, static_cast<unsigned long long>(point));
}

}  // namespace

SlabSums prepare_frame_sums(FrameSumStorage& storage, std::int64_t points, bool squares, cudaStream_t stream) {
  const int limbs = frame_sums::kSumLimbs + (squares ? frame_sums::kSquareLimbs : 0);
  if (storage.limbs.get() == nullptr || storage.points != points || storage.squares != squares) {
    if (storage.frames != 0)
      throw Error("internal error: frame sums on the device for another map were not taken first");
    storage.limbs.reset();
    storage.limbs = DeviceBuffer<std::uint64_t>(static_cast<std::size_t>(points) * limbs, "frame sums");
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(storage.limbs.get(), 0, storage.limbs.bytes(), stream));
    storage.points = points;
    storage.squares = squares;
  }
  if (!storage.first_bad.get()) storage.first_bad = DeviceBuffer<unsigned long long>(1, "frame sums (bad point)");
  ESPGRID_CUDA_CHECK(cudaMemsetAsync(storage.first_bad.get(), 0xFF, sizeof(unsigned long long), stream));
  SlabSums s;
  s.limbs = storage.limbs.get();
  s.points = points;
  s.squares = squares;
  s.first_bad = storage.first_bad.get();
  return s;
}

void enqueue_slab_sums(const SlabSums& sums, const float* slab, int pitch_x, int pitch_y, int nx, int ny, int planes,
                       std::int64_t k0, cudaStream_t stream) {
  const std::int64_t count = static_cast<std::int64_t>(nx) * ny * planes;
  if (count == 0) return;
  const auto blocks = static_cast<unsigned>((count + kBlock - 1) / kBlock);
  add_slab_kernel<<<blocks, kBlock, 0, stream>>>(sums, slab, pitch_x, pitch_y, nx, ny, planes, k0);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

void finish_frame_sums(FrameSumStorage& storage) {
  unsigned long long bad = ULLONG_MAX;
  ESPGRID_CUDA_CHECK(cudaMemcpy(&bad, storage.first_bad.get(), sizeof bad, cudaMemcpyDeviceToHost));
  if (bad != ULLONG_MAX)
    throw Error("the map holds a value that is not finite, or not below 2^31 in magnitude, at point " +
                std::to_string(bad) +
                ": a trajectory average takes finite values below 2^31 (the frame sums on "
                "the device hold part of this map now; nothing is written)");
  ++storage.frames;
}

std::uint64_t take_frame_sums(DeviceWorkspace& workspace, std::uint64_t* limbs, std::size_t count) {
  DeviceWorkspace::Buffers& kept = workspace.buffers();
  const std::lock_guard<std::mutex> lock(kept.mutex);
  FrameSumStorage& sums = kept.sums;
  if (sums.frames == 0) return 0;
  if (count != sums.limbs.size())
    throw Error("internal error: frame sums of " + std::to_string(sums.limbs.size()) + " limbs taken into " +
                std::to_string(count));
  const DeviceGuard guard(kept.device);
  ESPGRID_CUDA_CHECK(cudaMemcpy(limbs, sums.limbs.get(), sums.limbs.bytes(), cudaMemcpyDeviceToHost));
  ESPGRID_CUDA_CHECK(cudaMemset(sums.limbs.get(), 0, sums.limbs.bytes()));
  const std::uint64_t frames = sums.frames;
  sums.frames = 0;
  return frames;
}

}  // namespace espgrid::cuda
