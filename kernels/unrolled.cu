// cuda-unrolled (espgrid's design): each thread owns a CX × RY register tile: CX points along x
// one block-width apart (coalesced stores) times RY rows one block-height apart. Per atom, dx is
// computed once per column and shared by the RY rows, dy² + dz² once per row and shared by the
// CX columns, so the tile's inner body is FFMA (r²), MUFU, FFMA (accumulate) per point plus
// (CX + 2·RY) operations per atom. Atoms are staged through shared memory in tiles loaded from
// global memory, so ONE launch covers all atoms (no 4096-atom constant chunks: no per-chunk
// launch tail, no read-modify-write of the map, each result stored exactly once at the end).
// The loader also precomputes dz² + a² for the block's plane into the tile (the classic DCS
// "atominfo" layout x, y, dz², q). The loop is kernels/tile_loop.cuh's, with positions from the
// grid origin (GridFrame), every term on the SFU and no blocked sums; kernels/README.md has the
// operation counts; the shape is chosen on the host (src/compute/launch_plan.cpp).
#include "kernels/tile_loop.cuh"

namespace espgrid::cuda {
namespace {

template <int CX, int RY, class Potential>
void launch_tile(const SlabLaunch& s, const Geometry& g, dim3 grid, dim3 block) {
  // __launch_bounds__ buckets: up to 256 threads, and 257..1024 (64 registers a thread). Every
  // term on the SFU (SPLIT 0), each term added to the total (no blocked sums).
  if (s.plan.bx * s.plan.by <= kSmallBlockThreads)
    tile_kernel<CX, RY, kSmallBlockThreads, GridFrame, 0, false, Potential>
        <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, Spacing64{}, s.pair);
  else
    tile_kernel<CX, RY, 1024, GridFrame, 0, false, Potential>
        <<<grid, block, 0, stream_of(s)>>>(s.slab, atoms_of(s), s.atom_count, g, Spacing64{}, s.pair);
}

}  // namespace

void launch_unrolled(const SlabLaunch& s) {
  const Geometry g = geometry_of(s);
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  const dim3 grid = tile_grid(s, s.plan.cx, s.plan.ry);
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
