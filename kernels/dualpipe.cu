// cuda-dualpipe (espgrid's): cuda-unrolled's register tile (8 × 2 points a thread, atoms staged
// through shared memory, one launch per slab, padded grid) with three changes.
//
// 1. Both pipes busy. On Hopper the SFU issues 16 MUFU instructions per clock per SM against
//    128 FP32 lanes: cuda-unrolled spends one MUFU.RSQ and ~2.75 FP32 instructions an
//    evaluation, so the SFU is the limit (its "rsqrt ceiling") while the FMA pipe idles. Here
//    SPLIT of each thread's 16 points evaluate their pair term with FmaMath instead: the
//    reciprocal square root from the bit-level estimate 0x5f375a86 − (bits ≫ 1) (3.4% error),
//    one Newton step (1.8e-3) and one third-order Householder step (< 1e-8: float-accurate,
//    ≤ 2 ulp with the rounding of its last steps, as MUFU.RSQ), about 9 FP32 and 2 integer
//    instructions; reciprocals and exponentials likewise from Newton steps and
//    exp2_polynomial. Per atom and warp the SFU then needs 8·(16 − SPLIT) clocks and the issue
//    slots ~61 + 10·SPLIT: balanced near SPLIT = 4 (~1.25× the ceiling in theory; measured on an
//    H200: 0.955× at SPLIT = 2, limited by occupancy and dispatch, benchmarks/NOTES.md). The split is
//    a template argument (no run-time branch in the tile loop) chosen per device kind and model
//    by measurement (tuned_fma_split below; `espgrid bench --sweep split`).
// 2. Float32 error at the rounding floor, positions: each block forms every atom's offset from
//    its own tile origin in double (once per atom per block, from the atoms' double positions),
//    and each thread its points' offsets from that origin in double, so a pair's dx, dy, dz carry
//    the rounding of their own size, not of the coordinates' size (up to 1.5e-5 Å at 250 Å from
//    the grid origin in cuda-unrolled).
// 3. Float32 error at the rounding floor, sums: each thread sums a shared tile's 256 atoms into
//    a partial sum, then adds the partial to its total (blocked summation): rounding drift grows
//    like √256 + √(N/256) ulp instead of √N. One FADD per point per 256 atoms.
// Per evaluation on the SFU path: FFMA (r²), MUFU.RSQ, FFMA (accumulate); per atom per thread:
// LDS.128, 8 FADD (dx), 2 × (FADD dy, FFMA dy²+dz²).
#include <string_view>

#include "kernels/device_common.cuh"

namespace espgrid::cuda {
namespace {

constexpr int CX = kDualPipeColumns;
constexpr int RY = kDualPipeRows;
constexpr int kTile = 256;  ///< atoms per shared-memory tile (even)

/// Pair-term primitives on the FMA pipe (see the file comment). Host branches only give nvcc's
/// host pass a definition.
struct FmaMath {
  __host__ __device__ __forceinline__ static float rsqrt(float x) {
#ifdef __CUDA_ARCH__
    float y = __int_as_float(0x5f375a86 - (__float_as_int(x) >> 1));
    y = y * fmaf(-0.5f * x, y * y, 1.5f);           // Newton: 3.4e-2 → 1.8e-3
    const float e = fmaf(-x * y, y, 1.0f);          // 1 − x·y²
    return fmaf(y * e, fmaf(0.375f, e, 0.5f), y);   // y·(1 + e/2 + 3e²/8): 1.8e-3 → < 1e-8
#else
    return 1.0f / sqrtf(x);
#endif
  }
  __host__ __device__ __forceinline__ static float over_sqrt(float q, float r2) { return q * rsqrt(r2); }
  __host__ __device__ __forceinline__ static float over(float q, float r2) {
#ifdef __CUDA_ARCH__
    float y = __int_as_float(0x7EF311C3 - __float_as_int(r2));  // 1/x to 12%
    for (int i = 0; i < 3; ++i) y = fmaf(y, fmaf(-r2, y, 1.0f), y);  // Newton: 12% → 1.4e-2 → 2e-4 → 4e-8
    return q * y;
#else
    return q / r2;
#endif
  }
  __host__ __device__ __forceinline__ static float exp2(float x) { return exp2_polynomial(x); }
};

/// One atom (x, y relative to the tile origin; dz² + a² for the block's plane; q) applied to
/// the tile: points p = r·CX + c < SPLIT on the FMA pipe, the others on the SFU.
template <int SPLIT, class Potential>
__device__ __forceinline__ void dual_step(const float4 atom, const float (&lx)[CX], const float (&ly)[RY],
                                          float (&part)[RY][CX], const PairParameters& pair) {
  float dx[CX];
#pragma unroll
  for (int c = 0; c < CX; ++c) dx[c] = lx[c] - atom.x;
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const float dy = ly[r] - atom.y;
    const float dyz2 = fmaf(dy, dy, atom.z);
#pragma unroll
    for (int c = 0; c < CX; ++c) {
      const float r2 = fmaf(dx[c], dx[c], dyz2);
      if (r * CX + c < SPLIT)
        part[r][c] += Potential::template term<FmaMath>(atom.w, r2, pair);
      else
        part[r][c] += Potential::template term<DeviceMath>(atom.w, r2, pair);
    }
  }
}

struct Spacing64 {
  double hx, hy, hz;
};

template <int SPLIT, class Potential>
__global__ void __launch_bounds__(kSmallBlockThreads)
    dualpipe_kernel(float* __restrict__ slab, const AtomDouble* __restrict__ atoms, int n, Geometry g, Spacing64 h,
                    PairParameters pair) {
  __shared__ float4 s_atoms[kTile];
  const int bx = static_cast<int>(blockDim.x);
  const int by = static_cast<int>(blockDim.y);
  const int threads = bx * by;
  const int tid = static_cast<int>(threadIdx.y) * bx + static_cast<int>(threadIdx.x);
  const int tile_i0 = static_cast<int>(blockIdx.x) * (CX * bx);
  const int tile_j0 = static_cast<int>(blockIdx.y) * (RY * by);
  const int plane = static_cast<int>(blockIdx.z);
  // The tile's origin, Å from the grid origin, in double: grid point (i, j, k) lies at i·hx, ...
  const double ox = static_cast<double>(tile_i0) * h.hx;
  const double oy = static_cast<double>(tile_j0) * h.hy;
  const double oz = static_cast<double>(g.k0 + plane) * h.hz;
  // This thread's points relative to the tile origin: at most a tile's width (~64 Å).
  float lx[CX], ly[RY];
#pragma unroll
  for (int c = 0; c < CX; ++c) lx[c] = static_cast<float>(static_cast<double>(threadIdx.x + c * bx) * h.hx);
#pragma unroll
  for (int r = 0; r < RY; ++r) ly[r] = static_cast<float>(static_cast<double>(threadIdx.y + r * by) * h.hy);
  float sum[RY][CX];
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
        const AtomDouble a = atoms[base + t];
        const float dz = static_cast<float>(a.z - oz);
        s = make_float4(static_cast<float>(a.x - ox), static_cast<float>(a.y - oy), fmaf(dz, dz, g.a2),
                        static_cast<float>(a.q));
      }
      s_atoms[t] = s;
    }
    __syncthreads();
    float part[RY][CX];
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
      for (int c = 0; c < CX; ++c) part[r][c] = 0.0f;
    for (int a = 0; a < even; a += 2) {
      dual_step<SPLIT, Potential>(s_atoms[a], lx, ly, part, pair);
      dual_step<SPLIT, Potential>(s_atoms[a + 1], lx, ly, part, pair);
    }
#pragma unroll
    for (int r = 0; r < RY; ++r)
#pragma unroll
      for (int c = 0; c < CX; ++c) sum[r][c] += part[r][c];
  }

#pragma unroll
  for (int r = 0; r < RY; ++r) {
    float* p = slab + slab_index(g, tile_i0 + static_cast<int>(threadIdx.x), tile_j0 + static_cast<int>(threadIdx.y) + r * by, plane);
#pragma unroll
    for (int c = 0; c < CX; ++c) p[c * bx] = sum[r][c];
  }
}

template <int SPLIT, class Potential>
void launch_split(const SlabLaunch& s, const Geometry& g, dim3 grid, dim3 block) {
  dualpipe_kernel<SPLIT, Potential><<<grid, block, 0, stream_of(s)>>>(
      s.slab, atoms64_of(s), s.atom_count, g, Spacing64{s.hx64, s.hy64, s.hz64}, s.pair);
}

}  // namespace

void launch_dualpipe(const SlabLaunch& s) {
  // The kernel writes whole CX × RY tiles without bounds tests: the slab must be padded to them.
  if (s.plan.cx != CX || s.plan.ry != RY || s.plan.pitch_x % (CX * s.plan.bx) != 0 ||
      s.plan.pitch_y % (RY * s.plan.by) != 0)
    throw Error("internal error: cuda-dualpipe launched on a slab not padded to its 8 x 2 tiles");
  const Geometry g = geometry_of(s);
  const dim3 block(static_cast<unsigned>(s.plan.bx), static_cast<unsigned>(s.plan.by));
  const dim3 grid(blocks_for(s.plan.pitch_x, std::int64_t{CX} * s.plan.bx),
                  blocks_for(s.plan.pitch_y, std::int64_t{RY} * s.plan.by), static_cast<unsigned>(s.planes));
  with_pair_potential(s.model, [&](auto potential) {
    using P = decltype(potential);
    switch (s.plan.fma_split) {  // the instantiations: 0 .. kMaxFmaSplit
      case 0: launch_split<0, P>(s, g, grid, block); break;
      case 1: launch_split<1, P>(s, g, grid, block); break;
      case 2: launch_split<2, P>(s, g, grid, block); break;
      case 3: launch_split<3, P>(s, g, grid, block); break;
      case 4: launch_split<4, P>(s, g, grid, block); break;
      case 5: launch_split<5, P>(s, g, grid, block); break;
      case 6: launch_split<6, P>(s, g, grid, block); break;
      case 7: launch_split<7, P>(s, g, grid, block); break;
      case 8: launch_split<8, P>(s, g, grid, block); break;
      default: throw Error("no dual-pipe kernel for an FMA-pipe split of " + std::to_string(s.plan.fma_split));
    }
  });
  ESPGRID_CUDA_CHECK_LAUNCH();
}

// The split per device kind and model, from `espgrid bench --sweep split` (the fastest split,
// 16 × 8 blocks, 100,000 random atoms on 256 × 256 × 128 points). Devices not in the table get
// kDefaultSplit, the value the issue-slot model above predicts. A fixed table (not a tuning run
// at start-up) keeps a map's bits the same from run to run and across GPUs of one kind.
int tuned_fma_split(int device, PairModel model) {
  struct Entry {
    int compute_capability;  ///< ×10: 90 = Hopper (H100, H200)
    std::string_view model;  ///< the evaluator's name
    int split;
  };
  // Hopper: the H200 sweep of 2026-11-23 (benchmarks/results/h200-2026-11-23/bench): Coulomb
  // 2/16 (95.4% of the rsqrt ceiling; 0/16 91.8%), distance 4/16 (101.6%), Debye 2/16 (48.0%).
  // A model not measured here gets kDefaultSplit.
  static constexpr Entry kTable[] = {{90, "coulomb", 2}, {90, "distance", 4}, {90, "debye", 2}};
  constexpr int kDefaultSplit = 4;
  int major = 0, minor = 0;
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const std::string_view name = with_pair_potential(model, [](auto potential) { return potential.name; });
  for (const Entry& e : kTable)
    if (e.compute_capability == 10 * major + minor && e.model == name) return e.split;
  return kDefaultSplit;
}

void prepare_dualpipe(LaunchPlan& plan, int device, const DcsProblem& problem) {
  if (plan.fma_split < 0) plan.fma_split = tuned_fma_split(device, problem.model);
}

}  // namespace espgrid::cuda
