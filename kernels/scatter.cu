// cuda-scatter: input-oriented (textbook). Thread = (atom, plane of the slab, every
// gridDim.z-th row); it adds its atom's contribution to each point of those rows with
// atomicAdd (RED.ADD.F32) into a zeroed slab. Each thread starts its x sweep at column
// atom % nx, so the 32 lanes of a warp (32 consecutive atoms) hit 32 consecutive floats
// instead of one address. The order of the additions varies between runs (not deterministic).
// Per evaluation: FMUL (x coordinate), FADD (dx), FFMA (r²), MUFU, FMUL (q·f), RED.ADD.
#include <algorithm>

#include "kernels/device_common.cuh"

namespace espgrid::cuda {
namespace {

template <class Potential>
__global__ void scatter_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n, Geometry g,
                               PairParameters pair) {
  const int threads = static_cast<int>(blockDim.x * blockDim.y);
  const int a = static_cast<int>(blockIdx.x) * threads + static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  if (a >= n) return;
  const int plane = static_cast<int>(blockIdx.y);
  const float4 atom = atoms[a];
  const float dz = grid_coord(g.k0 + plane, g.hz) - atom.z;
  const float dz2 = fmaf(dz, dz, g.a2);
  const int i_start = a % g.nx;
  for (int j = static_cast<int>(blockIdx.z); j < g.ny; j += static_cast<int>(gridDim.z)) {
    const float dy = grid_coord(j, g.hy) - atom.y;
    const float dyz2 = fmaf(dy, dy, dz2);
    float* row = slab + slab_index(g, 0, j, plane);
    int i = i_start;
    for (int t = 0; t < g.nx; ++t) {
      const float dx = grid_coord(i, g.hx) - atom.x;
      atomicAdd(row + i, Potential::template term<DeviceMath>(atom.w, fmaf(dx, dx, dyz2), pair));
      i = (i + 1 == g.nx) ? 0 : i + 1;
    }
  }
}

}  // namespace

void launch_scatter(const SlabLaunch& s) {
  if (s.atom_count == 0) return;  // the slab is already zero
  const Geometry g = geometry_of(s);
  const int threads = s.plan.bx * s.plan.by;
  const std::int64_t atom_threads = std::int64_t{blocks_for(s.atom_count, threads)} * threads * s.planes;
  // Split the rows of each plane over gridDim.z until the launch fills the GPU a few times.
  const std::int64_t target = std::int64_t{s.sms} * 2048 * 4;
  const std::int64_t row_groups =
      std::clamp<std::int64_t>((target + atom_threads - 1) / atom_threads, 1, std::min<std::int64_t>(s.ny, 65535));
  const dim3 grid(blocks_for(s.atom_count, threads), static_cast<unsigned>(s.planes),
                  static_cast<unsigned>(row_groups));
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  with_pair_potential_among<CoulombPotential>(s.model, [&](auto potential) {
    scatter_kernel<decltype(potential)><<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, s.pair);
  });
  ESPGRID_CUDA_CHECK_LAUNCH();
}

}  // namespace espgrid::cuda
