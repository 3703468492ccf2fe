// cuda-coarsened (textbook thread coarsening): each thread computes CX points along x, one
// block-width apart (so each of its CX stores is coalesced across the warp), for one row j of
// one plane. dy² + dz² + a² is computed once per atom and reused for the CX points. The device
// slab is padded to whole tiles (pitch_x a multiple of CX·blockDim.x, pitch_y of blockDim.y),
// so nothing in the kernel tests bounds. Atoms are read as float4 from global memory at a
// warp-uniform address (one broadcast L1 transaction per warp, amortized over CX points), so
// one launch covers all atoms and each result is written exactly once at the end.
// (A first version streamed the atoms through __constant__ chunks, as the classic DCS code
// does: on the H200 that ran at 33% of the rsqrt ceiling, because warps at different atoms
// keep missing the small per-SM constant cache; see benchmarks/NOTES.md.)
// Per evaluation: FADD (dx), FFMA (r²), MUFU, FFMA (accumulate); per atom: LDG, 2 FADD, 2 FFMA.
#include "kernels/device_common.cuh"

namespace espgrid::cuda {
namespace {

template <int CX, int MAX_THREADS, class Potential>
__global__ void __launch_bounds__(MAX_THREADS)
    coarsened_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n, Geometry g,
                     PairParameters pair) {
  const int bx = static_cast<int>(blockDim.x);
  const int i0 = static_cast<int>(blockIdx.x) * (CX * bx) + static_cast<int>(threadIdx.x);
  const int j = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int plane = static_cast<int>(blockIdx.z);
  float gx[CX];
#pragma unroll
  for (int c = 0; c < CX; ++c) gx[c] = grid_coord(i0 + c * bx, g.hx);
  const float gy = grid_coord(j, g.hy);
  const float gz = grid_coord(g.k0 + plane, g.hz);
  float sum[CX];
#pragma unroll
  for (int c = 0; c < CX; ++c) sum[c] = 0.0f;
#pragma unroll 2
  for (int a = 0; a < n; ++a) {
    const float4 atom = __ldg(atoms + a);
    const float dy = gy - atom.y;
    const float dz = gz - atom.z;
    const float dyz2 = fmaf(dy, dy, fmaf(dz, dz, g.a2));
#pragma unroll
    for (int c = 0; c < CX; ++c) {
      const float dx = gx[c] - atom.x;
      sum[c] += Potential::template term<DeviceMath>(atom.w, fmaf(dx, dx, dyz2), pair);
    }
  }
  float* p = slab + slab_index(g, i0, j, plane);
#pragma unroll
  for (int c = 0; c < CX; ++c) p[c * bx] = sum[c];
}

template <int CX, class Potential>
void launch_tile(const SlabLaunch& s, const Geometry& g, dim3 grid, dim3 block) {
  // __launch_bounds__ buckets: blocks of up to 256 threads, and of 257..1024 threads (capped at
  // 64 registers so that a 1024-thread block fits an SM). The x/y split is a launch parameter.
  if (s.plan.bx * s.plan.by <= kSmallBlockThreads)
    coarsened_kernel<CX, kSmallBlockThreads, Potential>
        <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, s.pair);
  else
    coarsened_kernel<CX, 1024, Potential>
        <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, s.pair);
}

}  // namespace

void launch_coarsened(const SlabLaunch& s) {
  const Geometry g = geometry_of(s);
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  const dim3 grid(blocks_for(s.plan.pitch_x, std::int64_t{s.plan.cx} * s.plan.bx),
                  blocks_for(s.plan.pitch_y, s.plan.by), static_cast<unsigned>(s.planes));
  with_pair_potential_among<CoulombPotential>(s.model, [&](auto potential) {
    using P = decltype(potential);
    switch (s.plan.cx) {  // the instantiations: kCoarsenings
      case 1:
        launch_tile<1, P>(s, g, grid, block);
        break;
      case 2:
        launch_tile<2, P>(s, g, grid, block);
        break;
      case 4:
        launch_tile<4, P>(s, g, grid, block);
        break;
      case 8:
        launch_tile<8, P>(s, g, grid, block);
        break;
      case 16:
        launch_tile<16, P>(s, g, grid, block);
        break;
      default:
        throw Error("no coarsened kernel for coarsening " + std::to_string(s.plan.cx));
    }
  });
  ESPGRID_CUDA_CHECK_LAUNCH();
}

}  // namespace espgrid::cuda
