// cuda-unrolled (espgrid's design): each thread owns a CX × RY register tile: CX points along x
// one block-width apart (coalesced stores) times RY rows one block-height apart. Per atom, dx is
// computed once per column and shared by the RY rows, dy² + dz² once per row and shared by the
// CX columns, so the tile's inner body is FFMA (r²), MUFU, FFMA (accumulate) per point plus
// (CX + 2·RY) operations per atom. Atoms are staged through shared memory in tiles loaded from
// global memory, so ONE launch covers all atoms (no 4096-atom constant chunks: no per-chunk
// launch tail, no read-modify-write of the map, each result stored exactly once at the end).
// The loader also precomputes dz² + a² for the block's plane into the tile (the classic DCS
// "atominfo" layout x, y, dz², q), and pads the tile to an even count with zero-charge atoms so
// the atom loop is unrolled by two with no remainder. The grid covers the whole slab
// (blockIdx.z = plane), padded to whole tiles: no bounds tests. kernels/README.md has the
// operation counts; the shape is chosen on the host (src/compute/launch_plan.cpp).
#include "kernels/device_common.cuh"

namespace espgrid::cuda {
namespace {

/// Atom (x, y, dz²+a², q) applied to a CX × RY register tile.
template <int CX, int RY, class Potential>
__device__ __forceinline__ void unrolled_step(const float4 atom, const float (&gx)[CX], const float (&gy)[RY],
                                              float (&sum)[RY][CX], const PairParameters& pair) {
  float dx[CX];
#pragma unroll
  for (int c = 0; c < CX; ++c) dx[c] = gx[c] - atom.x;
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const float dy = gy[r] - atom.y;
    const float dyz2 = fmaf(dy, dy, atom.z);  // atom.z holds dz² + a² of this block's plane
#pragma unroll
    for (int c = 0; c < CX; ++c)
      sum[r][c] += Potential::template term<DeviceMath>(atom.w, fmaf(dx[c], dx[c], dyz2), pair);
  }
}

template <int CX, int RY, int MAX_THREADS, class Potential>
__global__ void __launch_bounds__(MAX_THREADS)
    unrolled_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n, Geometry g,
                    PairParameters pair) {
  constexpr int kTile = MAX_THREADS < 256 ? 256 : MAX_THREADS;  // atoms per shared tile (even)
  __shared__ float4 s_atoms[kTile];
  const int bx = static_cast<int>(blockDim.x);
  const int by = static_cast<int>(blockDim.y);
  const int threads = bx * by;
  const int tid = static_cast<int>(threadIdx.y) * bx + static_cast<int>(threadIdx.x);
  const int i0 = static_cast<int>(blockIdx.x) * (CX * bx) + static_cast<int>(threadIdx.x);
  const int j0 = static_cast<int>(blockIdx.y) * (RY * by) + static_cast<int>(threadIdx.y);
  const int plane = static_cast<int>(blockIdx.z);
  const float gz = grid_coord(g.k0 + plane, g.hz);
  float gx[CX];
  float gy[RY];
  float sum[RY][CX];
#pragma unroll
  for (int c = 0; c < CX; ++c) gx[c] = grid_coord(i0 + c * bx, g.hx);
#pragma unroll
  for (int r = 0; r < RY; ++r) gy[r] = grid_coord(j0 + r * by, g.hy);
#pragma unroll
  for (int r = 0; r < RY; ++r)
#pragma unroll
    for (int c = 0; c < CX; ++c) sum[r][c] = 0.0f;

  for (int base = 0; base < n; base += kTile) {
    const int count = min(kTile, n - base);
    const int even = (count + 1) & ~1;
    __syncthreads();  // every warp is done with the previous tile
    for (int t = tid; t < even; t += threads) {
      float4 s = make_float4(0.0f, 0.0f, 1.0f, 0.0f);  // padding: q = 0, r² ≥ 1
      if (t < count) {
        const float4 atom = atoms[base + t];
        const float dz = gz - atom.z;
        s = make_float4(atom.x, atom.y, fmaf(dz, dz, g.a2), atom.w);
      }
      s_atoms[t] = s;
    }
    __syncthreads();
    for (int a = 0; a < even; a += 2) {
      unrolled_step<CX, RY, Potential>(s_atoms[a], gx, gy, sum, pair);
      unrolled_step<CX, RY, Potential>(s_atoms[a + 1], gx, gy, sum, pair);
    }
  }

#pragma unroll
  for (int r = 0; r < RY; ++r) {
    float* p = slab + slab_index(g, i0, j0 + r * by, plane);
#pragma unroll
    for (int c = 0; c < CX; ++c) p[c * bx] = sum[r][c];
  }
}

template <int CX, int RY, class Potential>
void launch_tile(const SlabLaunch& s, const Geometry& g, dim3 grid, dim3 block) {
  // __launch_bounds__ buckets: up to 256 threads, and 257..1024 (64 registers a thread).
  if (s.plan.bx * s.plan.by <= kSmallBlockThreads)
    unrolled_kernel<CX, RY, kSmallBlockThreads, Potential>
        <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, s.pair);
  else
    unrolled_kernel<CX, RY, 1024, Potential>
        <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, s.pair);
}

}  // namespace

void launch_unrolled(const SlabLaunch& s) {
  const Geometry g = geometry_of(s);
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  const dim3 grid(blocks_for(s.plan.pitch_x, std::int64_t{s.plan.cx} * s.plan.bx),
                  blocks_for(s.plan.pitch_y, std::int64_t{s.plan.ry} * s.plan.by), static_cast<unsigned>(s.planes));
  with_pair_potential(s.model, [&](auto potential) {
    using P = decltype(potential);
    // The instantiations: exactly kRegisterTiles (src/compute/launch_plan.h).
    const int tile = s.plan.cx * 100 + s.plan.ry;
    switch (tile) {
      case 102:
        launch_tile<1, 2, P>(s, g, grid, block);
        break;
      case 202:
        launch_tile<2, 2, P>(s, g, grid, block);
        break;
      case 402:
        launch_tile<4, 2, P>(s, g, grid, block);
        break;
      case 802:
        launch_tile<8, 2, P>(s, g, grid, block);
        break;
      case 1601:
        launch_tile<16, 1, P>(s, g, grid, block);
        break;
      case 204:
        launch_tile<2, 4, P>(s, g, grid, block);
        break;
      case 404:
        launch_tile<4, 4, P>(s, g, grid, block);
        break;
      case 208:
        launch_tile<2, 8, P>(s, g, grid, block);
        break;
      default:
        throw Error("no register-tiled kernel for a " + std::to_string(s.plan.cx) + "x" + std::to_string(s.plan.ry) +
                    " tile");
    }
  });
  ESPGRID_CUDA_CHECK_LAUNCH();
}

}  // namespace espgrid::cuda
