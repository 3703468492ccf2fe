// cuda-gather (textbook): one thread per grid point (2D blocks in x,y; blockIdx.z = plane of
// the slab); atoms read as float4 (x, y, z, q) from global memory (the whole warp reads the same
// atom: one broadcast L1 transaction). dx, dy, dz recomputed for every atom.
// Per evaluation: LDG.128, 3 FADD, 4 FFMA (dz²+a², dy²+…, dx²+…, accumulate), MUFU.
#include "kernels/device_common.cuh"

namespace espgrid::cuda {
namespace {

template <class Potential>
__global__ void gather_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n, Geometry g,
                              PairParameters pair) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (i >= g.nx || j >= g.ny) return;
  const int plane = static_cast<int>(blockIdx.z);
  const float gx = grid_coord(i, g.hx);
  const float gy = grid_coord(j, g.hy);
  const float gz = grid_coord(g.k0 + plane, g.hz);
  float sum = 0.0f;
#pragma unroll 4
  for (int a = 0; a < n; ++a) {
    const float4 atom = __ldg(atoms + a);
    const float dx = gx - atom.x;
    const float dy = gy - atom.y;
    const float dz = gz - atom.z;
    sum += Potential::template term<DeviceMath>(atom.w, fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, g.a2))), pair);
  }
  slab[slab_index(g, i, j, plane)] = sum;
}

}  // namespace

void launch_gather(const SlabLaunch& s) {
  const Geometry g = geometry_of(s);
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  const dim3 grid(blocks_for(s.nx, s.plan.bx), blocks_for(s.ny, s.plan.by), static_cast<unsigned>(s.planes));
  with_pair_potential_among<CoulombPotential>(s.model, [&](auto potential) {
    gather_kernel<decltype(potential)><<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, s.pair);
  });
  ESPGRID_CUDA_CHECK_LAUNCH();
}

}  // namespace espgrid::cuda
