// The register-tile loop of the shared-memory families (cuda-unrolled, cuda-dualpipe), written
// once with what differs injected as template arguments (as OpenMM's nonbonded.cu injects its
// interaction): each thread owns a CX × RY tile (CX points along x one block-width apart, RY rows
// one block-height apart); atoms are staged through shared memory in tiles (tile_atoms), each
// padded to an even count with zero-charge atoms so the atom loop is unrolled by two; per atom,
// dx once per column and dy² + dz² once per row. The grid covers the whole slab (blockIdx.z =
// plane), padded to whole tiles: no bounds tests.
//
//   Frame    where positions are measured from (GridFrame: the grid origin, float atoms as
//            cuda-unrolled has them; TileFrame: each block's tile origin, from the atoms'
//            double positions, so a pair's dx, dy, dz carry the rounding of their own size);
//            the frame also loads an atom into the shared tile as (x, y, dz² + a², q).
//   Potential the pair evaluator (src/physics/pair_potentials.h).
//   SPLIT    points p = r·CX + c < SPLIT evaluate their term with FmaMath (every primitive on
//            the FMA pipe), the others with DeviceMath (MUFU): both pipes busy.
//   BLOCKED  sum each shared tile's atoms into a partial sum first (rounding drift √256 +
//            √(N/256) ulp instead of √N), or add every term to the total.
//   CHAIN    0, or (Debye only) the length of the exponential chains along a row: the thread's
//            CX columns are then adjacent grid points (not one block-width apart), and within
//            each run of CHAIN columns only the first point's e^(−κr) takes MUFU.EX2; the next
//            ones multiply it by e^(−κ(r_c − r_{c−1})), a degree-5 polynomial on the FMA pipe
//            (|κ·Δr| ≤ κ·hx ≤ kExpChainMaxKappaH: truncation < 0.3 ulp). The differences telescope
//            (each is exact: neighbouring r are within a factor 2), so the exponent is the direct
//            path's; each step adds ≤ 2 ulp of rounding. Per pair: one MUFU (RSQ) instead of two.
#pragma once

#include "kernels/device_common.cuh"

namespace espgrid::cuda {

/// Atoms per shared-memory tile (even): 256, or one per thread for larger blocks (every thread
/// loads one atom a tile).
constexpr int tile_atoms(int max_threads) { return max_threads < 256 ? 256 : max_threads; }

/// The grid spacing in double, for frames that form positions in double.
struct Spacing64 {
  double hx, hy, hz;
};

/// Positions relative to the grid origin: float atoms (x, y, z, q·k/ε) as the driver uploads them.
struct GridFrame {
  using Atom = float4;
  float gz;  ///< the block's plane, Å from the grid origin
  template <int CX, int RY, bool ADJACENT = false>
  __device__ __forceinline__ void init(const Geometry& g, const Spacing64&, int tile_i0, int tile_j0, int plane,
                                       float (&x)[CX], float (&y)[RY]) {
    static_assert(!ADJACENT, "the grid frame keeps columns one block-width apart");
    const int bx = static_cast<int>(blockDim.x), by = static_cast<int>(blockDim.y);
    gz = grid_coord(g.k0 + plane, g.hz);
#pragma unroll
    for (int c = 0; c < CX; ++c) x[c] = grid_coord(tile_i0 + static_cast<int>(threadIdx.x) + c * bx, g.hx);
#pragma unroll
    for (int r = 0; r < RY; ++r) y[r] = grid_coord(tile_j0 + static_cast<int>(threadIdx.y) + r * by, g.hy);
  }
  __device__ __forceinline__ float4 load(const Atom& atom, const Geometry& g) const {
    const float dz = gz - atom.z;
    return make_float4(atom.x, atom.y, fmaf(dz, dz, g.a2), atom.w);
  }
};

/// Positions relative to the block's tile origin, formed in double from the atoms' double
/// positions once per atom per block (cuda-dualpipe's float32 error at the rounding floor).
struct TileFrame {
  using Atom = AtomDouble;
  double ox, oy, oz;  ///< the tile's origin, Å from the grid origin
  template <int CX, int RY, bool ADJACENT = false>
  __device__ __forceinline__ void init(const Geometry& g, const Spacing64& h, int tile_i0, int tile_j0, int plane,
                                       float (&x)[CX], float (&y)[RY]) {
    const int bx = static_cast<int>(blockDim.x), by = static_cast<int>(blockDim.y);
    ox = static_cast<double>(tile_i0) * h.hx;
    oy = static_cast<double>(tile_j0) * h.hy;
    oz = static_cast<double>(g.k0 + plane) * h.hz;
    // This thread's points relative to the tile origin: at most a tile's width (~64 Å); columns
    // one block-width apart, or adjacent.
#pragma unroll
    for (int c = 0; c < CX; ++c) {
      const unsigned column = ADJACENT ? CX * threadIdx.x + c : threadIdx.x + c * bx;
      x[c] = static_cast<float>(static_cast<double>(column) * h.hx);
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) y[r] = static_cast<float>(static_cast<double>(threadIdx.y + r * by) * h.hy);
  }
  __device__ __forceinline__ float4 load(const Atom& a, const Geometry& g) const {
    const float dz = static_cast<float>(a.z - oz);
    return make_float4(static_cast<float>(a.x - ox), static_cast<float>(a.y - oy), fmaf(dz, dz, g.a2),
                       static_cast<float>(a.q));
  }
};

/// Largest κ·hx (κ in 1/Å, hx the grid's x spacing in Å) the exponential chain is used for: the
/// degree-5 Taylor polynomial of e^z for |z| ≤ 0.15 is within 0.15⁶/720·e^0.15 = 2e-8 (0.3 ulp).
inline constexpr double kExpChainMaxKappaH = 0.15;

/// e^(−κd) = Σ_{n≤5} (−κd)ⁿ/n! as a polynomial in d: its coefficients, from κ, once per thread.
struct ExpChain {
  float k1, k2, k3, k4, k5;
  __device__ __forceinline__ explicit ExpChain(float kappa)
      : k1(-kappa),
        k2(0.5f * kappa * kappa),
        k3(-kappa * kappa * kappa * (1.0f / 6.0f)),
        k4(kappa * kappa * kappa * kappa * (1.0f / 24.0f)),
        k5(-kappa * kappa * kappa * kappa * kappa * (1.0f / 120.0f)) {}
  __device__ __forceinline__ float factor(float d) const {
    return fmaf(d, fmaf(d, fmaf(d, fmaf(d, fmaf(d, k5, k4), k3), k2), k1), 1.0f);
  }
};

/// One atom (x, y in the frame; dz² + a² for the block's plane; q) applied to the tile: each
/// point's own term (SPLIT of them through FmaMath), or with CHAIN > 0 Debye's exponential chain
/// along each row (see the file comment): per point FFMA r², MUFU.RSQ, FMUL r, FADD Δr, 5 FFMA,
/// FMUL, FFMA; MUFU.EX2 once a run.
template <int CX, int RY, int SPLIT, int CHAIN, class Potential>
__device__ __forceinline__ void tile_step(const float4 atom, const float (&x)[CX], const float (&y)[RY],
                                          float (&sum)[RY][CX], const PairParameters& pair, const ExpChain& e) {
  static_assert(CHAIN == 0 || (Potential::model == PairModel::Debye && SPLIT == 0),
                "the exponential chain is Debye's, on the SFU path");
  float dx[CX];
#pragma unroll
  for (int c = 0; c < CX; ++c) dx[c] = x[c] - atom.x;
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const float dy = y[r] - atom.y;
    const float dyz2 = fmaf(dy, dy, atom.z);
    [[maybe_unused]] float previous_r = 0.0f, q_screen = 0.0f;  // the chain: r and q·e^(−κr) of the previous column
#pragma unroll
    for (int c = 0; c < CX; ++c) {
      const float r2 = fmaf(dx[c], dx[c], dyz2);
      if constexpr (CHAIN > 0) {
        const float inv_r = DeviceMath::rsqrt(r2);
        const float dist = r2 * inv_r;
        if (c % CHAIN == 0)
          q_screen = atom.w * DeviceMath::exp2(pair.exp2_scale * dist);
        else
          q_screen *= e.factor(dist - previous_r);
        previous_r = dist;
        sum[r][c] = fmaf(q_screen, inv_r, sum[r][c]);
      } else if (r * CX + c < SPLIT) {
        sum[r][c] += Potential::template term<FmaMath>(atom.w, r2, pair);
      } else {
        sum[r][c] += Potential::template term<DeviceMath>(atom.w, r2, pair);
      }
    }
  }
}

template <int CX, int RY>
__device__ __forceinline__ void zero(float (&v)[RY][CX]) {
#pragma unroll
  for (int r = 0; r < RY; ++r)
#pragma unroll
    for (int c = 0; c < CX; ++c) v[r][c] = 0.0f;
}

/// MIN_BLOCKS: __launch_bounds__'s minimum of resident blocks an SM; 0 leaves it out (ptxas then
/// kept cuda-dualpipe at 64–80 registers; given 1 it takes 84–95, and runs faster: dualpipe.cu).
template <int CX, int RY, int MAX_THREADS, class Frame, int SPLIT, bool BLOCKED, class Potential, int CHAIN = 0,
          int MIN_BLOCKS = 0>
__global__ void __launch_bounds__(MAX_THREADS, MIN_BLOCKS)
    tile_kernel(float* __restrict__ slab, const typename Frame::Atom* __restrict__ atoms, int n, Geometry g,
                Spacing64 h, PairParameters pair) {
  constexpr int kTile = tile_atoms(MAX_THREADS);
  __shared__ float4 s_atoms[kTile];
  const int bx = static_cast<int>(blockDim.x);
  const int by = static_cast<int>(blockDim.y);
  const int threads = bx * by;
  const int tid = static_cast<int>(threadIdx.y) * bx + static_cast<int>(threadIdx.x);
  const int tile_i0 = static_cast<int>(blockIdx.x) * (CX * bx);
  const int tile_j0 = static_cast<int>(blockIdx.y) * (RY * by);
  const int plane = static_cast<int>(blockIdx.z);
  Frame frame;
  float x[CX], y[RY];
  frame.template init<CX, RY, (CHAIN > 0)>(g, h, tile_i0, tile_j0, plane, x, y);
  float sum[RY][CX];
  zero(sum);
  const ExpChain chain(pair.kappa);

  for (int base = 0; base < n; base += kTile) {
    const int count = min(kTile, n - base);
    const int even = (count + 1) & ~1;
    __syncthreads();  // every warp is done with the previous tile
    for (int t = tid; t < even; t += threads)
      s_atoms[t] = t < count ? frame.load(atoms[base + t], g) : make_float4(0.0f, 0.0f, 1.0f, 0.0f);  // q = 0, r² ≥ 1
    __syncthreads();
    if constexpr (BLOCKED) {
      float part[RY][CX];
      zero(part);
      for (int a = 0; a < even; a += 2) {
        tile_step<CX, RY, SPLIT, CHAIN, Potential>(s_atoms[a], x, y, part, pair, chain);
        tile_step<CX, RY, SPLIT, CHAIN, Potential>(s_atoms[a + 1], x, y, part, pair, chain);
      }
#pragma unroll
      for (int r = 0; r < RY; ++r)
#pragma unroll
        for (int c = 0; c < CX; ++c) sum[r][c] += part[r][c];
    } else {
      for (int a = 0; a < even; a += 2) {
        tile_step<CX, RY, SPLIT, CHAIN, Potential>(s_atoms[a], x, y, sum, pair, chain);
        tile_step<CX, RY, SPLIT, CHAIN, Potential>(s_atoms[a + 1], x, y, sum, pair, chain);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < RY; ++r) {
    // Columns one block-width apart, or adjacent (CHAIN): column c of the thread is point
    // first + c·step along x.
    const int first = tile_i0 + (CHAIN > 0 ? CX * static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x));
    const int step = CHAIN > 0 ? 1 : bx;
    float* p = slab + slab_index(g, first, tile_j0 + static_cast<int>(threadIdx.y) + r * by, plane);
#pragma unroll
    for (int c = 0; c < CX; ++c) p[c * step] = sum[r][c];
  }
}

/// The launch grid of a tile family: whole CX × RY tiles of blocks over the padded slab.
inline dim3 tile_grid(const SlabLaunch& s, int cx, int ry) {
  return dim3(blocks_for(s.plan.pitch_x, std::int64_t{cx} * s.plan.bx),
              blocks_for(s.plan.pitch_y, std::int64_t{ry} * s.plan.by), static_cast<unsigned>(s.planes));
}

}  // namespace espgrid::cuda
