// cuda-constant (textbook, the classic DCS kernel): one thread per grid point over the whole
// slab; the atoms are streamed through __constant__ memory in 4096-atom chunks, one launch per
// chunk. dz² + a² is precomputed per plane: each block (all its threads share one plane) first
// fills shared memory with dz² + a² of every atom of the chunk, read from the chunk's copy in
// global memory (coalesced; reading c_atoms at per-thread addresses would serialize). The
// inner loop then reads x, y, q from constant memory (warp-uniform address: no conflicts) and
// dz² + a² from shared memory (broadcast). The first chunk's launch writes each point; later
// chunks add to it (the running sum lives in the slab between launches).
// Per evaluation: 2 FADD (dx, dy), 3 FFMA (dy²+dz², dx²+…, accumulate), MUFU, LDS, LDC.
//
// The one c_atoms buffer is per device: the driver serializes calls of this family on a
// device (DeviceLayout::uses_constant_memory), and a slab's chunk launches are queued on one
// stream, so no copy overwrites c_atoms under a running launch.
#include <algorithm>

#include "kernels/device_common.cuh"

namespace espgrid::cuda {
namespace {

/// Atoms per __constant__ chunk: 4096 float4 = 64 KB, the whole constant bank.
constexpr int kConstantChunk = 4096;
/// (x, y, z, q) of the current chunk.
__constant__ float4 c_atoms[kConstantChunk];

template <class Potential>
__global__ void constant_kernel(float* __restrict__ slab, const float4* __restrict__ chunk, int n, Geometry g,
                                int accumulate, PairParameters pair) {
  extern __shared__ float s_dz2[];
  const int plane = static_cast<int>(blockIdx.z);
  const float gz = grid_coord(g.k0 + plane, g.hz);
  const int threads = static_cast<int>(blockDim.x * blockDim.y);
  for (int t = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x); t < n; t += threads) {
    const float dz = gz - chunk[t].z;
    s_dz2[t] = fmaf(dz, dz, g.a2);
  }
  __syncthreads();
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (i >= g.nx || j >= g.ny) return;
  const float gx = grid_coord(i, g.hx);
  const float gy = grid_coord(j, g.hy);
  float sum = 0.0f;
#pragma unroll 4
  for (int a = 0; a < n; ++a) {
    const float4 atom = c_atoms[a];
    const float dx = gx - atom.x;
    const float dy = gy - atom.y;
    sum += Potential::template term<DeviceMath>(atom.w, fmaf(dx, dx, fmaf(dy, dy, s_dz2[a])), pair);
  }
  float* p = slab + slab_index(g, i, j, plane);
  *p = accumulate ? *p + sum : sum;
}

}  // namespace

void launch_constant(const SlabLaunch& s) {
  const Geometry g = geometry_of(s);
  const float4* atoms = atoms_of(s);
  const cudaStream_t stream = stream_of(s);
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  const dim3 grid(blocks_for(s.nx, s.plan.bx), blocks_for(s.ny, s.plan.by), static_cast<unsigned>(s.planes));
  const int chunks = std::max(1, static_cast<int>(blocks_for(s.atom_count, kConstantChunk)));
  for (int c = 0; c < chunks; ++c) {
    const int base = c * kConstantChunk;
    const int count = std::min(kConstantChunk, s.atom_count - base);
    if (count > 0)
      ESPGRID_CUDA_CHECK(
          cudaMemcpyToSymbolAsync(c_atoms, atoms + base, sizeof(float4) * count, 0, cudaMemcpyDeviceToDevice, stream));
    const int accumulate = c > 0 ? 1 : 0;
    const std::size_t shared = sizeof(float) * static_cast<std::size_t>(std::max(count, 0));
    with_pair_potential_among<CoulombPotential>(s.model, [&](auto potential) {
      constant_kernel<decltype(potential)>
          <<<grid, block, shared, stream>>>(s.slab, atoms + base, count, g, accumulate, s.pair);
    });
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace espgrid::cuda
