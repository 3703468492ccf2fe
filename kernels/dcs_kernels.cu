// The CUDA direct Coulomb summation kernels and their driver (kernels/dcs_cuda.h).
//
// Every kernel computes, in float32,
//   potential[i + nx*(j + ny*k)] = Σ_a q[a] * rsqrtf(dx² + (dy² + (dz² + a²)))
// with dx = float(i)*hx − x[a] (the product rounded once, as in src/cpu_kernels.cpp, hence
// __fmul_rn: it keeps nvcc from contracting the product and the subtraction into one FFMA),
// and the softening a² folded into the dz² term. With --ftz=true, rsqrtf is one MUFU.RSQ.
// kernels/README.md describes each variant and its operation count.
//
// Driver: the map is computed in slabs of whole z-planes, double-buffered on two streams:
//   stream b:  poison (or zero) the device slab → wait for the previous slab's kernels →
//              start event → kernels → stop event → copy the unpadded slab to pinned staging
//              → done event
//   host:      after queueing slab s, wait for slab s−1's done event, read its kernel time,
//              copy its staging buffer into problem.potential, report progress.
// So the copies of slab s−1 (device→pinned on the copy engine, pinned→pageable on the host)
// overlap the kernels of slab s. Kernels of consecutive slabs are serialized on purpose
// (cudaStreamWaitEvent): the event intervals never overlap, so their sum is the kernel time,
// and the single __constant__ atom buffer is never rewritten under a running kernel.
//
// That loop is one worker (run_worker): it takes its slabs as ranges of planes from a work
// queue (PlaneQueue, one atomic counter). compute_potential runs one worker in the calling
// thread, taking slabs of the budget's size in order: the fixed slab sequence. compute_potential_multi
// runs one worker per listed device, each in its own host thread with its own streams and
// buffers, all pulling chunks from one queue, so a faster or less loaded GPU simply takes more
// chunks. The atoms are uploaded once per device; the calling thread only reports progress.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "kernels/dcs_cuda.h"
#include "src/errors.h"

namespace espgrid::cuda {
namespace {

// ---- device side -----------------------------------------------------------------------

/// Atoms per __constant__ chunk: 4096 float4 = 64 KB, the whole constant bank.
constexpr int kConstantChunk = 4096;
/// (x, y, z, q) of the current chunk, for the Constant variant.
__constant__ float4 c_atoms[kConstantChunk];

/// Slab geometry, passed by value (kernel parameters live in the constant bank).
struct Geometry {
  int nx, ny;            ///< the map's extent: bounds for the unpadded variants
  int pitch_x, pitch_y;  ///< device slab layout: floats per row, rows per plane (padded)
  int k0;                ///< map z index of the slab's first plane
  float hx, hy, hz;      ///< grid spacing
  float a2;              ///< softening²
};

/// Grid coordinate float(i)*h, rounded once and never fused with a following add.
__device__ __forceinline__ float grid_coord(int i, float h) {
  return __fmul_rn(static_cast<float>(i), h);
}

__device__ __forceinline__ std::size_t slab_index(const Geometry& g, int i, int j, int plane) {
  return (static_cast<std::size_t>(plane) * static_cast<std::size_t>(g.pitch_y) + static_cast<std::size_t>(j)) *
             static_cast<std::size_t>(g.pitch_x) +
         static_cast<std::size_t>(i);
}

// Scatter: input-oriented. Thread = (atom, plane of the slab, every gridDim.z-th row); it adds
// its atom's contribution to each point of those rows with atomicAdd (RED.ADD.F32) into a
// zeroed slab. Each thread starts its x sweep at column atom % nx, so the 32 lanes of a warp
// (32 consecutive atoms) hit 32 consecutive floats instead of one address.
// Per evaluation: FMUL (x coordinate), FADD (dx), FFMA (r²), MUFU, FMUL (q·r), RED.ADD.
__global__ void scatter_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n,
                               Geometry g) {
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
      atomicAdd(row + i, atom.w * rsqrtf(fmaf(dx, dx, dyz2)));
      i = (i + 1 == g.nx) ? 0 : i + 1;
    }
  }
}

// Gather: one thread per grid point (2D blocks in x,y; blockIdx.z = plane of the slab); atoms
// read as float4 (x, y, z, q) from global memory (the whole warp reads the same atom: one
// broadcast L1 transaction). dx, dy, dz recomputed for every atom.
// Per evaluation: LDG.128, 3 FADD, 4 FFMA (dz²+a², dy²+…, dx²+…, accumulate), MUFU.
__global__ void gather_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n, Geometry g) {
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
    sum = fmaf(atom.w, rsqrtf(fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, g.a2)))), sum);
  }
  slab[slab_index(g, i, j, plane)] = sum;
}

// Constant: one thread per grid point over the whole slab; the chunk's atoms are in c_atoms.
// dz² + a² is precomputed per plane: each block (all its threads share one plane) first fills
// shared memory with dz² + a² of every atom of the chunk, read from the chunk's copy in global
// memory (coalesced; reading c_atoms at per-thread addresses would serialize). The inner loop
// then reads x, y, q from constant memory (warp-uniform address: no conflicts) and dz² + a²
// from shared memory (broadcast). The first chunk's launch writes each point; later chunks
// add to it (the running sum lives in the slab between launches).
// Per evaluation: 2 FADD (dx, dy), 3 FFMA (dy²+dz², dx²+…, accumulate), MUFU, LDS, LDC.
__global__ void constant_kernel(float* __restrict__ slab, const float4* __restrict__ chunk, int n, Geometry g,
                                int accumulate) {
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
    sum = fmaf(atom.w, rsqrtf(fmaf(dx, dx, fmaf(dy, dy, s_dz2[a]))), sum);
  }
  float* p = slab + slab_index(g, i, j, plane);
  *p = accumulate ? *p + sum : sum;
}

// Coarsened: each thread computes CX points along x, one block-width apart (so each of its
// CX stores is coalesced across the warp), for one row j of one plane. dy² + dz² + a² is
// computed once per atom and reused for the CX points. The device slab is padded to whole
// tiles (pitch_x a multiple of CX·blockDim.x, pitch_y of blockDim.y), so nothing in the
// kernel tests bounds. Atoms are read as float4 from global memory at a warp-uniform address
// (one broadcast L1 transaction per warp, amortized over CX points), so one launch covers
// all atoms and each result is written exactly once at the end.
// (A first version streamed the atoms through __constant__ chunks, as the classic DCS code
// does: on the H200 that ran at 33% of the rsqrt ceiling, because warps at different atoms
// keep missing the small per-SM constant cache; see benchmarks/NOTES.md.)
// Per evaluation: FADD (dx), FFMA (r²), MUFU, FFMA (accumulate); per atom: LDG, 2 FADD, 2 FFMA.
template <int CX, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS)
    coarsened_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n, Geometry g) {
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
      sum[c] = fmaf(atom.w, rsqrtf(fmaf(dx, dx, dyz2)), sum[c]);
    }
  }
  float* p = slab + slab_index(g, i0, j, plane);
#pragma unroll
  for (int c = 0; c < CX; ++c) p[c * bx] = sum[c];
}

/// Unrolled: atom (x, y, dz²+a², q) applied to a CX × RY register tile.
template <int CX, int RY>
__device__ __forceinline__ void unrolled_step(const float4 atom, const float (&gx)[CX], const float (&gy)[RY],
                                              float (&sum)[RY][CX]) {
  float dx[CX];
#pragma unroll
  for (int c = 0; c < CX; ++c) dx[c] = gx[c] - atom.x;
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const float dy = gy[r] - atom.y;
    const float dyz2 = fmaf(dy, dy, atom.z);  // atom.z holds dz² + a² of this block's plane
#pragma unroll
    for (int c = 0; c < CX; ++c) sum[r][c] = fmaf(atom.w, rsqrtf(fmaf(dx[c], dx[c], dyz2)), sum[r][c]);
  }
}

// Unrolled (espgrid's design): each thread owns a CX × RY register tile: CX points along x one
// block-width apart (coalesced stores) times RY rows one block-height apart. Per atom, dx is
// computed once per column and shared by the RY rows, dy² + dz² once per row and shared by
// the CX columns, so the tile's inner body is FFMA (r²), MUFU, FFMA (accumulate) per point
// plus (CX + 2·RY) operations per atom. Atoms are staged through shared memory in tiles
// loaded from global memory, so ONE launch covers all atoms (no 4096-atom constant chunks:
// no per-chunk launch tail, no read-modify-write of the map, each result stored exactly once
// at the end). The loader also precomputes dz² + a² for the block's plane into the tile (the
// classic DCS "atominfo" layout x, y, dz², q), and pads the tile to an even count with
// zero-charge atoms so the atom loop is unrolled by two with no remainder. The grid covers
// the whole slab (blockIdx.z = plane), padded to whole tiles: no bounds tests.
template <int CX, int RY, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS)
    unrolled_kernel(float* __restrict__ slab, const float4* __restrict__ atoms, int n, Geometry g) {
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
      unrolled_step<CX, RY>(s_atoms[a], gx, gy, sum);
      unrolled_step<CX, RY>(s_atoms[a + 1], gx, gy, sum);
    }
  }

#pragma unroll
  for (int r = 0; r < RY; ++r) {
    float* p = slab + slab_index(g, i0, j0 + r * by, plane);
#pragma unroll
    for (int c = 0; c < CX; ++c) p[c * bx] = sum[r][c];
  }
}

// ---- kernel tables (these are the explicit instantiations) ----------------------------------

/// Coarsening factors (points per thread along x) the coarsened/unrolled variants support.
constexpr std::array<int, 5> kCoarsenings = {1, 2, 4, 8, 16};
/// Unrolled's rows per thread for an explicitly requested coarsening factor (16 columns × 2
/// rows would not fit the 64 registers that 1024-thread blocks allow).
constexpr int unrolled_rows(int cx) { return cx >= 16 ? 1 : 2; }

// __launch_bounds__ buckets: blocks of up to 256 threads, and of 257..1024 threads (the latter
// capped at 64 registers so that a 1024-thread block fits an SM). The block's x/y split is a
// run-time launch parameter, so any shape of up to 1024 threads runs without its own
// instantiation.
constexpr int kSmallBlock = 256;
constexpr int kLargeBlock = 1024;

using CoarsenedFn = void (*)(float*, const float4*, int, Geometry);
using UnrolledFn = void (*)(float*, const float4*, int, Geometry);

template <int T>
constexpr std::array<CoarsenedFn, 5> kCoarsenedKernels = {
    &coarsened_kernel<1, T>, &coarsened_kernel<2, T>, &coarsened_kernel<4, T>, &coarsened_kernel<8, T>,
    &coarsened_kernel<16, T>};

struct UnrolledKernel {
  int cx, ry;
  UnrolledFn small_block, large_block;
};
template <int CX, int RY>
constexpr UnrolledKernel unrolled_entry() {
  return {CX, RY, &unrolled_kernel<CX, RY, kSmallBlock>, &unrolled_kernel<CX, RY, kLargeBlock>};
}
/// The register tiles: (c, unrolled_rows(c)) for every sweepable coarsening c, plus taller
/// tiles that the automatic shape choice uses to pad small or odd maps less.
constexpr std::array<UnrolledKernel, 8> kUnrolledKernels = {
    unrolled_entry<1, 2>(), unrolled_entry<2, 2>(), unrolled_entry<4, 2>(), unrolled_entry<8, 2>(),
    unrolled_entry<16, 1>(), unrolled_entry<2, 4>(), unrolled_entry<4, 4>(), unrolled_entry<2, 8>()};

// ---- host side -------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Scatter: return "cuda-scatter";
    case Variant::Gather: return "cuda-gather";
    case Variant::Constant: return "cuda-constant";
    case Variant::Coarsened: return "cuda-coarsened";
    case Variant::Unrolled: return "cuda-unrolled";
  }
  return "cuda-?";
}

bool uses_constant_memory(Variant v) { return v == Variant::Constant; }

/// Lowest compute capability (×10, e.g. 90) this build has code for.
int lowest_built_arch() {
#ifdef __CUDA_ARCH_LIST__
  constexpr int archs[] = {__CUDA_ARCH_LIST__};
  int lowest = archs[0];
  for (int a : archs) lowest = std::min(lowest, a);
  return lowest / 10;
#else
  return 90;
#endif
}

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  ESPGRID_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

void check_device_supported(int device) {
  const int cc = 10 * device_attribute(cudaDevAttrComputeCapabilityMajor, device) +
                 device_attribute(cudaDevAttrComputeCapabilityMinor, device);
  if (cc < lowest_built_arch())
    throw Error("CUDA device " + std::to_string(device) + " has compute capability " + std::to_string(cc / 10) +
                "." + std::to_string(cc % 10) + "; this espgrid was built for sm_" +
                std::to_string(lowest_built_arch()) + " and newer");
}

void validate(const DcsProblem& p) {
  constexpr std::int64_t kMaxExtent = std::int64_t{1} << 30;
  if (p.nx < 0 || p.ny < 0 || p.nz < 0)
    throw UsageError("grid dimensions must not be negative");
  if (p.z_offset < 0 || p.z_offset > kMaxExtent)
    throw UsageError("plane offset " + std::to_string(p.z_offset) + " is out of range for the CUDA kernels");
  if (p.nx > kMaxExtent || p.ny > kMaxExtent || p.nz > kMaxExtent - p.z_offset)
    throw UsageError("grid of " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" + std::to_string(p.nz) +
                     " points is too large for the CUDA kernels (at most 2^30 per axis)");
  if (p.atom_count > static_cast<std::size_t>(INT_MAX))
    throw UsageError("too many atoms for the CUDA kernels (at most " + std::to_string(INT_MAX) + ")");
  if (p.point_count() > 0 && p.potential == nullptr) throw Error("compute_potential: no output buffer");
  if (p.atom_count > 0 && (!p.x || !p.y || !p.z || !p.q)) throw Error("compute_potential: missing atom arrays");
}

std::int64_t round_up(std::int64_t value, std::int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }
std::int64_t ceil_div(std::int64_t value, std::int64_t divisor) { return (value + divisor - 1) / divisor; }

/// How one variant runs on this problem: block, coarsening, padded device layout, kernel.
struct Plan {
  Variant variant = Variant::Gather;
  int bx = 0, by = 0;  ///< block shape
  int cx = 1, ry = 1;  ///< points per thread along x, rows per thread
  int pitch_x = 0, pitch_y = 0;  ///< padded device plane: floats per row, rows
  int sms = 0;
  bool zero_slab = false;  ///< scatter accumulates into zeros; the others get NaN poison
  CoarsenedFn coarsened = nullptr;
  UnrolledFn unrolled = nullptr;
};

struct Shape {
  int bx, by, cx;
  int ry = 1;  ///< rows per thread (unrolled only)
};

/// The block and coarsening the caller asked for, with 0 replaced by the variant's default.
/// When only one of block_x / block_y is given, the other keeps the default thread count.
Shape resolve_shape(Variant v, const LaunchShape& s, Shape fallback, bool coarsens) {
  const std::string name = variant_name(v);
  if (s.block_x < 0 || s.block_y < 0 || s.coarsening < 0)
    throw UsageError(name + ": block sizes and coarsening must not be negative");
  Shape r = fallback;
  const int default_threads = fallback.bx * fallback.by;
  if (s.block_x > 0 && s.block_y > 0) {
    r.bx = s.block_x;
    r.by = s.block_y;
  } else if (s.block_x > 0) {
    r.bx = s.block_x;
    r.by = std::max(1, default_threads / s.block_x);
  } else if (s.block_y > 0) {
    r.by = s.block_y;
    r.bx = std::max(1, default_threads / s.block_y);
  }
  if (static_cast<long long>(r.bx) * r.by > 1024)
    throw UsageError(name + ": a block of " + std::to_string(r.bx) + "x" + std::to_string(r.by) + " = " +
                     std::to_string(static_cast<long long>(r.bx) * r.by) +
                     " threads is too large (at most 1024 threads per block)");
  if (s.coarsening > 0) r.cx = s.coarsening;
  if (!coarsens && r.cx != 1)
    throw UsageError(name + " computes one point per thread: coarsening must be 0 or 1 (got " +
                     std::to_string(r.cx) + ")");
  if (coarsens && std::find(kCoarsenings.begin(), kCoarsenings.end(), r.cx) == kCoarsenings.end())
    throw UsageError(name + ": coarsening must be 1, 2, 4, 8 or 16 (got " + std::to_string(r.cx) + ")");
  return r;
}

/// Unrolled's default shape: among a few register tiles and block shapes, the one that wastes
/// the least work on padding and on a ragged last wave of blocks for this map.
Shape choose_unrolled_shape(const DcsProblem& p, int sms) {
  const double planes = static_cast<double>(std::min<std::int64_t>(p.nz, 65535));
  const auto score = [&](const Shape& s) {
    const std::int64_t tile_x = std::int64_t{s.cx} * s.bx;
    const std::int64_t tile_y = std::int64_t{s.ry} * s.by;
    const std::int64_t px = round_up(p.nx, tile_x), py = round_up(p.ny, tile_y);
    const double useful = static_cast<double>(p.nx * p.ny) / static_cast<double>(px * py);
    const double blocks = static_cast<double>((px / tile_x) * (py / tile_y)) * planes;
    const double balance = blocks / (std::ceil(blocks / sms) * sms);
    // Too few warps per SM sub-partition leave the SFU idle between dependent instructions;
    // about 4 keep it busy. (Both factors are estimates, to be checked against timings.)
    const double warps_per_scheduler = std::min(16.0, blocks * (s.bx * s.by / 32.0) / (4.0 * sms));
    const double occupancy = std::min(1.0, 0.6 + 0.1 * warps_per_scheduler);
    // Smaller tiles pay more per-atom overhead per evaluation.
    const int points = s.cx * s.ry;
    const double ilp = points >= 16 ? 1.0 : (points >= 8 ? 0.985 : 0.96);
    return useful * balance * occupancy * ilp;
  };
  // The default (16x8 threads, 8x2 points each: 128x16-point tiles) unless another tile is
  // clearly (3%) better for this map.
  const Shape preferred{16, 8, 8, 2};
  static constexpr std::array<int, 2> kTiles[] = {{8, 2}, {4, 4}, {2, 8}, {4, 2}, {2, 4}, {2, 2}};
  static constexpr std::array<int, 2> kBlocks[] = {{16, 8}, {32, 4}, {8, 16}, {16, 4}, {8, 8},
                                                   {4, 16}, {8, 4}, {4, 8}};
  Shape best = preferred;
  double best_score = score(preferred);
  const double threshold = 1.03 * best_score;
  for (const auto& t : kTiles) {
    for (const auto& b : kBlocks) {
      const Shape s{b[0], b[1], t[0], t[1]};
      const double v = score(s);
      if (v > best_score + 1e-9 && v >= threshold) {
        best_score = v;
        best = s;
      }
    }
  }
  return best;
}

Plan make_plan(Variant v, const DcsProblem& p, const LaunchShape& shape, int sms) {
  Plan plan;
  plan.variant = v;
  plan.sms = sms;
  Shape s{};
  switch (v) {
    case Variant::Scatter: s = resolve_shape(v, shape, {128, 1, 1}, false); break;
    case Variant::Gather: s = resolve_shape(v, shape, {32, 4, 1}, false); break;
    case Variant::Constant: s = resolve_shape(v, shape, {32, 4, 1}, false); break;
    case Variant::Coarsened: s = resolve_shape(v, shape, {16, 8, 8}, true); break;
    case Variant::Unrolled:
      if (shape.block_x == 0 && shape.block_y == 0 && shape.coarsening == 0) {
        s = choose_unrolled_shape(p, sms);
      } else {
        s = resolve_shape(v, shape, {16, 8, 8}, true);
        s.ry = unrolled_rows(s.cx);
      }
      break;
  }
  plan.bx = s.bx;
  plan.by = s.by;
  plan.cx = s.cx;
  plan.ry = v == Variant::Unrolled ? s.ry : 1;
  plan.zero_slab = v == Variant::Scatter;

  std::int64_t px = p.nx, py = p.ny;
  const bool small = plan.bx * plan.by <= kSmallBlock;
  if (v == Variant::Coarsened) {
    const std::size_t index = static_cast<std::size_t>(
        std::find(kCoarsenings.begin(), kCoarsenings.end(), plan.cx) - kCoarsenings.begin());
    plan.coarsened = small ? kCoarsenedKernels<kSmallBlock>[index] : kCoarsenedKernels<kLargeBlock>[index];
  } else if (v == Variant::Unrolled) {
    for (const UnrolledKernel& k : kUnrolledKernels)
      if (k.cx == plan.cx && k.ry == plan.ry) plan.unrolled = small ? k.small_block : k.large_block;
    if (!plan.unrolled) throw Error("cuda-unrolled: no kernel for this tile");  // unreachable
  }
  if (v == Variant::Coarsened || v == Variant::Unrolled) {
    px = round_up(p.nx, std::int64_t{plan.cx} * plan.bx);
    py = round_up(p.ny, std::int64_t{plan.ry} * plan.by);
  }
  if (px > INT_MAX || py > INT_MAX)
    throw UsageError(std::string(variant_name(v)) + ": grid too large for the CUDA kernels");
  plan.pitch_x = static_cast<int>(px);
  plan.pitch_y = static_cast<int>(py);

  // Grid limits: y ≤ 65535 (planes are capped at 65535 per slab elsewhere).
  const std::int64_t grid_y = v == Variant::Scatter ? 1 : ceil_div(py, std::int64_t{plan.ry} * plan.by);
  if (grid_y > 65535)
    throw UsageError(std::string(variant_name(v)) + ": " + std::to_string(p.ny) +
                     " rows need more than 65535 blocks along y; use a taller block");
  return plan;
}

/// Launches the kernels of one slab (planes [k0, k0+planes)) on `stream`.
void enqueue_kernels(const Plan& plan, const DcsProblem& p, const float4* d_atoms, int n, float* d_slab,
                     std::int64_t k0, int planes, cudaStream_t stream) {
  Geometry g{};
  g.nx = static_cast<int>(p.nx);
  g.ny = static_cast<int>(p.ny);
  g.pitch_x = plan.pitch_x;
  g.pitch_y = plan.pitch_y;
  g.k0 = static_cast<int>(p.z_offset + k0);  // map plane index: grid z = (z_offset + k)·hz
  g.hx = p.hx;
  g.hy = p.hy;
  g.hz = p.hz;
  g.a2 = p.softening2;
  const dim3 block(static_cast<unsigned>(plan.bx), static_cast<unsigned>(plan.by));
  const auto up = [](std::int64_t a, std::int64_t b) { return static_cast<unsigned>(ceil_div(a, b)); };

  switch (plan.variant) {
    case Variant::Scatter: {
      if (n == 0) return;  // the slab is already zero
      const int threads = plan.bx * plan.by;
      const std::int64_t atom_threads = round_up(n, threads) * planes;
      // Split the rows of each plane over gridDim.z until the launch fills the GPU a few times.
      const std::int64_t target = std::int64_t{plan.sms} * 2048 * 4;
      const std::int64_t row_groups =
          std::clamp<std::int64_t>(ceil_div(target, atom_threads), 1, std::min<std::int64_t>(p.ny, 65535));
      const dim3 grid(up(n, threads), static_cast<unsigned>(planes), static_cast<unsigned>(row_groups));
      scatter_kernel<<<grid, block, 0, stream>>>(d_slab, d_atoms, n, g);
      ESPGRID_CUDA_CHECK_LAUNCH();
      return;
    }
    case Variant::Gather: {
      const dim3 grid(up(p.nx, plan.bx), up(p.ny, plan.by), static_cast<unsigned>(planes));
      gather_kernel<<<grid, block, 0, stream>>>(d_slab, d_atoms, n, g);
      ESPGRID_CUDA_CHECK_LAUNCH();
      return;
    }
    case Variant::Constant: {
      const int chunks = std::max(1, static_cast<int>(ceil_div(n, kConstantChunk)));
      for (int c = 0; c < chunks; ++c) {
        const int base = c * kConstantChunk;
        const int count = std::min(kConstantChunk, n - base);
        if (count > 0)
          ESPGRID_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_atoms, d_atoms + base, sizeof(float4) * count, 0,
                                                     cudaMemcpyDeviceToDevice, stream));
        const int accumulate = c > 0 ? 1 : 0;
        const dim3 grid(up(p.nx, plan.bx), up(p.ny, plan.by), static_cast<unsigned>(planes));
        const std::size_t shared = sizeof(float) * static_cast<std::size_t>(count);
        constant_kernel<<<grid, block, shared, stream>>>(d_slab, d_atoms + base, count, g, accumulate);
        ESPGRID_CUDA_CHECK_LAUNCH();
      }
      return;
    }
    case Variant::Coarsened: {
      const dim3 grid(up(plan.pitch_x, std::int64_t{plan.cx} * plan.bx), up(plan.pitch_y, plan.by),
                      static_cast<unsigned>(planes));
      plan.coarsened<<<grid, block, 0, stream>>>(d_slab, d_atoms, n, g);
      ESPGRID_CUDA_CHECK_LAUNCH();
      return;
    }
    case Variant::Unrolled: {
      const dim3 grid(up(plan.pitch_x, std::int64_t{plan.cx} * plan.bx),
                      up(plan.pitch_y, std::int64_t{plan.ry} * plan.by), static_cast<unsigned>(planes));
      plan.unrolled<<<grid, block, 0, stream>>>(d_slab, d_atoms, n, g);
      ESPGRID_CUDA_CHECK_LAUNCH();
      return;
    }
  }
}

/// Copies `planes` planes of the (possibly padded) device slab into densely packed staging.
void enqueue_copy_back(const Plan& plan, const DcsProblem& p, const float* d_slab, float* h_slab, int planes,
                       cudaStream_t stream) {
  const std::size_t row_bytes = sizeof(float) * static_cast<std::size_t>(p.nx);
  if (plan.pitch_x == p.nx && plan.pitch_y == p.ny) {
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(h_slab, d_slab, row_bytes * static_cast<std::size_t>(p.ny) * planes,
                                       cudaMemcpyDeviceToHost, stream));
    return;
  }
  cudaMemcpy3DParms copy{};
  copy.srcPtr = make_cudaPitchedPtr(const_cast<float*>(d_slab), sizeof(float) * static_cast<std::size_t>(plan.pitch_x),
                                    static_cast<std::size_t>(plan.pitch_x), static_cast<std::size_t>(plan.pitch_y));
  copy.dstPtr = make_cudaPitchedPtr(h_slab, row_bytes, static_cast<std::size_t>(p.nx), static_cast<std::size_t>(p.ny));
  copy.extent = make_cudaExtent(row_bytes, static_cast<std::size_t>(p.ny), static_cast<std::size_t>(planes));
  copy.kind = cudaMemcpyDeviceToHost;
  ESPGRID_CUDA_CHECK(cudaMemcpy3DAsync(&copy, stream));
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// Planes per slab. The budget is the device memory for the map: options.max_slab_bytes, or
/// (when 0) what free device memory allows, at most two buffers of 256 MiB, each about an
/// eighth of the map so that copies overlap kernels. A map within the budget is one slab in
/// one buffer; a larger one streams through two buffers of half the budget each (never less
/// than one plane).
std::int64_t planes_per_slab(const DcsProblem& p, const Plan& plan, std::size_t max_slab_bytes,
                             std::size_t atom_bytes) {
  const std::size_t plane_bytes =
      sizeof(float) * static_cast<std::size_t>(plan.pitch_x) * static_cast<std::size_t>(plan.pitch_y);
  const std::size_t map_bytes = plane_bytes * static_cast<std::size_t>(p.nz);
  std::size_t budget = max_slab_bytes;
  if (budget == 0) {
    std::size_t free_bytes = 0, total_bytes = 0;
    ESPGRID_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t reserve = 256 * kMiB + atom_bytes;
    const std::size_t available = free_bytes > reserve ? free_bytes - reserve : 0;
    budget = std::min(2 * std::clamp(map_bytes / 8, 32 * kMiB, 256 * kMiB), available);
  }
  std::int64_t planes = map_bytes <= budget ? p.nz : static_cast<std::int64_t>(budget / 2 / plane_bytes);
  planes = std::clamp<std::int64_t>(planes, 1, std::min<std::int64_t>(p.nz, 65535));
  const std::int64_t slabs = ceil_div(p.nz, planes);
  return ceil_div(p.nz, slabs);  // equal slabs, no sliver at the end
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Whole z-planes [k0, k0 + planes) of the problem.
struct PlaneRange {
  std::int64_t k0 = 0;
  std::int64_t planes = 0;
};

/// The work queue the workers share: consecutive ranges of z-planes handed out from one
/// atomic counter. Each take asks for at most what the taker's slab buffer holds, so workers
/// with different budgets share one queue; one worker alone gets exactly the fixed slab
/// sequence of the single-GPU driver. After stop() (a worker failed) nothing more is handed out.
class PlaneQueue {
 public:
  explicit PlaneQueue(std::int64_t nz) : nz_(nz) {}
  std::optional<PlaneRange> take(std::int64_t max_planes) {
    std::int64_t k0 = next_.load(std::memory_order_relaxed);
    for (;;) {
      if (stopped_.load(std::memory_order_relaxed) || k0 >= nz_) return std::nullopt;
      const std::int64_t count = std::min(std::max<std::int64_t>(max_planes, 1), nz_ - k0);
      if (next_.compare_exchange_weak(k0, k0 + count, std::memory_order_relaxed)) return PlaneRange{k0, count};
    }
  }
  void stop() noexcept { stopped_.store(true, std::memory_order_relaxed); }

 private:
  const std::int64_t nz_;
  std::atomic<std::int64_t> next_{0};
  std::atomic<bool> stopped_{false};
};

/// The atoms as float4 (x, y, z, q) on the current device, through pinned staging.
DeviceBuffer<float4> upload_atoms(const DcsProblem& p) {
  PinnedBuffer<float4> h_atoms(p.atom_count, "atoms (staging)");
  for (std::size_t a = 0; a < p.atom_count; ++a) h_atoms.get()[a] = make_float4(p.x[a], p.y[a], p.z[a], p.q[a]);
  DeviceBuffer<float4> d_atoms(p.atom_count, "atoms");
  if (p.atom_count > 0) {
    Stream stream;
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(d_atoms.get(), h_atoms.get(), d_atoms.bytes(), cudaMemcpyHostToDevice,
                                       stream.get()));
    stream.synchronize();  // every stream of every worker on this device reads them
  }
  return d_atoms;
}

struct WorkerResult {
  double kernel_seconds = 0;
  std::int64_t planes = 0;
  int chunks = 0;
};

/// Where a worker takes its planes from and what it reports.
struct WorkerContext {
  PlaneQueue* queue = nullptr;
  std::int64_t max_planes = 0;  ///< never take more than this per chunk (the whole map: no cap)
  std::size_t max_slab_bytes = 0;
  int worker = 0;
  int device = 0;
  /// Called in the worker's thread when a range is in problem.potential.
  std::function<void(const PlaneRange&)> done;
  std::function<void(int, int, std::int64_t)> hook;  ///< DeviceRunOptions::chunk_hook
};

/// One worker on the current device: takes ranges of planes from the queue and computes
/// them through two slab buffers on two streams (see the file comment), until the queue is
/// empty. Slab s uses buffer and stream s mod 2; kernels of consecutive slabs are
/// serialized, so the sum of their event intervals is this worker's kernel time.
WorkerResult run_worker(const Plan& plan, const DcsProblem& p, const float4* d_atoms, std::size_t atom_bytes,
                        const WorkerContext& ctx) {
  const int n = static_cast<int>(p.atom_count);

  // Device slabs: in automatic sizing, halve the slab if the allocation fails anyway.
  std::int64_t planes = std::min(planes_per_slab(p, plan, ctx.max_slab_bytes, atom_bytes),
                                 std::max<std::int64_t>(ctx.max_planes, 1));
  const std::size_t plane_points = static_cast<std::size_t>(plan.pitch_x) * static_cast<std::size_t>(plan.pitch_y);
  const std::size_t map_plane_points = static_cast<std::size_t>(p.nx) * static_cast<std::size_t>(p.ny);
  std::array<DeviceBuffer<float>, 2> d_slab;
  for (;;) {
    const bool two = planes < p.nz;
    try {
      d_slab[0] = DeviceBuffer<float>(plane_points * static_cast<std::size_t>(planes), "potential slab");
      d_slab[1] = two ? DeviceBuffer<float>(plane_points * static_cast<std::size_t>(planes), "potential slab (2nd buffer)")
                      : DeviceBuffer<float>();
      break;
    } catch (const CudaError& e) {
      if (ctx.max_slab_bytes != 0 || e.code() != cudaErrorMemoryAllocation || planes == 1) throw;
      d_slab[0].reset();
      d_slab[1].reset();
      planes = ceil_div(p.nz, ceil_div(p.nz, (planes + 1) / 2));
    }
  }
  std::array<PinnedBuffer<float>, 2> h_slab;
  h_slab[0] = PinnedBuffer<float>(map_plane_points * static_cast<std::size_t>(planes), "potential slab (staging)");
  if (planes < p.nz)
    h_slab[1] = PinnedBuffer<float>(map_plane_points * static_cast<std::size_t>(planes), "potential slab (staging 2)");

  // Streams after the buffers: their destructors wait for queued work before the buffers go.
  std::array<Stream, 2> streams;
  std::array<Event, 2> start, stop;
  std::array<Event, 2> done{Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};

  struct InFlight {
    PlaneRange range;
    int buffer;
  };
  std::optional<InFlight> pending;
  double kernel_ms = 0;
  WorkerResult result;
  const auto finish = [&](const InFlight& s) {
    done[s.buffer].synchronize();
    kernel_ms += Event::elapsed_ms(start[s.buffer], stop[s.buffer]);
    std::memcpy(p.potential + static_cast<std::size_t>(s.range.k0) * map_plane_points, h_slab[s.buffer].get(),
                sizeof(float) * map_plane_points * static_cast<std::size_t>(s.range.planes));
    result.planes += s.range.planes;
    if (ctx.done) ctx.done(s.range);
  };

  for (std::int64_t s = 0;; ++s) {
    const std::optional<PlaneRange> range = ctx.queue->take(planes);
    if (!range) break;
    if (ctx.hook) ctx.hook(ctx.worker, ctx.device, range->k0);
    const int b = static_cast<int>(s & 1);
    const std::int64_t k0 = range->k0;
    const int count = static_cast<int>(range->planes);
    const cudaStream_t stream = streams[b].get();
    float* slab = d_slab[b].get();
    // NaN poison (0xFFFFFFFF) shows any point a kernel fails to write; scatter needs zeros.
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(slab, plan.zero_slab ? 0 : 0xFF,
                                       sizeof(float) * plane_points * static_cast<std::size_t>(count), stream));
    if (s > 0) streams[b].wait(stop[1 - b].get());  // kernels run one slab at a time
    start[b].record(stream);
    enqueue_kernels(plan, p, d_atoms, n, slab, k0, count, stream);
    stop[b].record(stream);
    enqueue_copy_back(plan, p, slab, h_slab[b].get(), count, stream);
    done[b].record(stream);
    ++result.chunks;
    if (pending) finish(*pending);
    pending = InFlight{*range, b};
  }
  if (pending) finish(*pending);
  result.kernel_seconds = kernel_ms / 1000.0;
  return result;
}

/// The per-device lock of the variants that use the device's __constant__ atom buffer.
/// __constant__ memory is per device, so different devices never wait for each other.
std::mutex& constant_memory_mutex(int device) {
  static std::mutex table_mutex;
  static std::map<int, std::mutex> table;  // nodes never move: references stay valid
  std::lock_guard<std::mutex> lock(table_mutex);
  return table[device];
}

/// Planes per queue chunk for `workers` workers: about 8 chunks each, so that a slower or
/// busier device simply takes fewer and all finish within about one chunk of each other;
/// at least 2^21 points (a chunk fills a GPU); equal sizes, no sliver at the end.
std::int64_t auto_chunk_planes(const DcsProblem& p, int workers) {
  const std::int64_t plane_points = std::max<std::int64_t>(p.nx * p.ny, 1);
  const std::int64_t by_count = ceil_div(p.nz, std::int64_t{8} * std::max(workers, 1));
  const std::int64_t by_fill = ceil_div(std::int64_t{1} << 21, plane_points);
  const std::int64_t chunk = std::clamp<std::int64_t>(std::max(by_count, by_fill), 1, std::min<std::int64_t>(p.nz, 65535));
  return ceil_div(p.nz, ceil_div(p.nz, chunk));
}

/// The atoms on one device, shared by the workers on it: the first to arrive uploads them,
/// the last to leave frees them (on its own thread, with the device current).
struct SharedAtoms {
  std::mutex mutex;
  int users = 0;
  DeviceBuffer<float4> buffer;
  bool ready = false;
};

class AtomsLease {
 public:
  AtomsLease(SharedAtoms& shared, const DcsProblem& p) : shared_(shared) {
    std::lock_guard<std::mutex> lock(shared_.mutex);
    if (!shared_.ready) {
      shared_.buffer = upload_atoms(p);
      shared_.ready = true;
    }
    ++shared_.users;
  }
  ~AtomsLease() {
    std::lock_guard<std::mutex> lock(shared_.mutex);
    if (--shared_.users == 0) {
      shared_.buffer.reset();
      shared_.ready = false;
    }
  }
  AtomsLease(const AtomsLease&) = delete;
  AtomsLease& operator=(const AtomsLease&) = delete;
  const float4* get() const noexcept { return shared_.buffer.get(); }
  std::size_t bytes() const noexcept { return shared_.buffer.bytes(); }

 private:
  SharedAtoms& shared_;
};

/// `error` with "CUDA device N (worker W): " in front, keeping CudaError's code.
std::exception_ptr with_device(std::exception_ptr error, int device, int worker, bool several_on_device) {
  const std::string where = "CUDA device " + std::to_string(device) +
                            (several_on_device ? " (worker " + std::to_string(worker) + ")" : "") + ": ";
  try {
    std::rethrow_exception(error);
  } catch (const CudaError& e) {
    return std::make_exception_ptr(CudaError(e.code(), where + e.what()));
  } catch (const UsageError&) {
    return error;  // not about the device
  } catch (const Error& e) {
    return std::make_exception_ptr(Error(where + e.what()));
  } catch (...) {
    return error;
  }
}

}  // namespace

DeviceTiming compute_potential(Variant variant, const DcsProblem& problem, const DeviceRunOptions& options) {
  const auto wall_start = Clock::now();
  validate(problem);
  DeviceGuard guard(options.device);
  check_device_supported(options.device);
  DeviceTiming timing;
  timing.device_name = describe_device(options.device);
  std::unique_lock<std::mutex> lock(constant_memory_mutex(options.device), std::defer_lock);
  if (uses_constant_memory(variant)) lock.lock();
  WorkerResult result;
  if (problem.point_count() > 0) {
    const int sms = device_attribute(cudaDevAttrMultiProcessorCount, options.device);
    const Plan plan = make_plan(variant, problem, options.shape, sms);
    // Atoms, once per call; freed after the worker's streams have drained.
    const DeviceBuffer<float4> d_atoms = upload_atoms(problem);
    PlaneQueue queue(problem.nz);
    WorkerContext ctx;
    ctx.queue = &queue;
    ctx.max_planes = problem.nz;  // one worker: the slab budget alone sets the slabs
    ctx.max_slab_bytes = options.max_slab_bytes;
    ctx.device = options.device;
    ctx.hook = options.chunk_hook;
    if (options.progress)
      ctx.done = [&](const PlaneRange& r) {
        options.progress(static_cast<std::size_t>(r.k0 + r.planes), static_cast<std::size_t>(problem.nz));
      };
    result = run_worker(plan, problem, d_atoms.get(), d_atoms.bytes(), ctx);
  }
  timing.kernel_seconds = result.kernel_seconds;
  timing.wall_seconds = seconds_since(wall_start);
  timing.workers.push_back(WorkerTiming{options.device, timing.device_name, result.kernel_seconds, timing.wall_seconds,
                                        result.planes, result.chunks});
  return timing;
}

DeviceTiming compute_potential_multi(Variant variant, const DcsProblem& problem, const std::vector<int>& devices,
                                     const DeviceRunOptions& options) {
  const auto wall_start = Clock::now();
  validate(problem);
  if (devices.empty()) throw UsageError("compute_potential_multi: no CUDA devices given");
  int device_count = 0;
  ESPGRID_CUDA_CHECK(cudaGetDeviceCount(&device_count));
  for (const int d : devices) {
    if (d < 0 || d >= device_count)
      throw Error("CUDA device " + std::to_string(d) + " does not exist (this machine has " +
                  std::to_string(device_count) + (device_count == 1 ? " device" : " devices") + ")");
    check_device_supported(d);
  }
  const int workers = static_cast<int>(devices.size());
  DeviceTiming timing;
  std::map<int, std::string> names;
  std::map<int, int> per_device;
  for (const int d : devices) {
    if (!names.count(d)) names[d] = describe_device(d);
    ++per_device[d];
  }
  {
    std::string list;
    for (const int d : devices) list += (list.empty() ? "" : ",") + std::to_string(d);
    bool same = true;
    for (const auto& entry : names) same = same && entry.second == names.begin()->second;
    std::string what = names.begin()->second;
    if (!same) {
      what.clear();
      for (const auto& [d, name] : names) what += (what.empty() ? "" : "; ") + std::to_string(d) + ": " + name;
    }
    const std::size_t gpus = names.size();
    timing.device_name = (gpus == devices.size() ? std::to_string(gpus) + " GPUs"
                                                 : std::to_string(workers) + " workers on " + std::to_string(gpus) +
                                                       (gpus == 1 ? " GPU" : " GPUs")) +
                         " (devices " + list + "): " + (same && gpus > 1 ? std::to_string(gpus) + " x " : "") + what;
  }
  timing.workers.resize(devices.size());
  for (std::size_t w = 0; w < devices.size(); ++w) {
    timing.workers[w].device = devices[w];
    timing.workers[w].device_name = names[devices[w]];
  }
  if (problem.point_count() == 0) {
    timing.wall_seconds = seconds_since(wall_start);
    return timing;
  }

  const std::int64_t chunk = options.chunk_planes > 0 ? std::min<std::int64_t>(options.chunk_planes, problem.nz)
                                                      : auto_chunk_planes(problem, workers);
  PlaneQueue queue(problem.nz);
  std::map<int, SharedAtoms> atoms;  // built before the threads start; nodes never move
  for (const int d : devices) atoms[d];

  std::mutex state_mutex;
  std::condition_variable state_changed;
  std::int64_t planes_done = 0;
  int finished = 0;
  std::exception_ptr first_error;
  std::vector<WorkerResult> results(devices.size());

  const auto worker_main = [&](int w) {
    const int device = devices[static_cast<std::size_t>(w)];
    const auto start = Clock::now();
    std::exception_ptr error;
    try {
      ESPGRID_CUDA_CHECK(cudaSetDevice(device));  // this thread's device, for all it does
      std::unique_lock<std::mutex> lock(constant_memory_mutex(device), std::defer_lock);
      if (uses_constant_memory(variant)) lock.lock();
      const int sms = device_attribute(cudaDevAttrMultiProcessorCount, device);
      const Plan plan = make_plan(variant, problem, options.shape, sms);
      const AtomsLease lease(atoms.at(device), problem);  // outlives run_worker's streams
      WorkerContext ctx;
      ctx.queue = &queue;
      ctx.max_planes = chunk;
      ctx.max_slab_bytes = options.max_slab_bytes;
      ctx.worker = w;
      ctx.device = device;
      ctx.hook = options.chunk_hook;
      ctx.done = [&](const PlaneRange& r) {
        {
          std::lock_guard<std::mutex> guard(state_mutex);
          planes_done += r.planes;
        }
        state_changed.notify_one();
      };
      results[static_cast<std::size_t>(w)] = run_worker(plan, problem, lease.get(), lease.bytes(), ctx);
    } catch (...) {
      queue.stop();  // the others finish their chunks in flight and stop
      error = with_device(std::current_exception(), device, w, per_device.at(device) > 1);  // at(): no insertion
    }
    timing.workers[static_cast<std::size_t>(w)].wall_seconds = seconds_since(start);
    {
      std::lock_guard<std::mutex> guard(state_mutex);
      if (error && !first_error) first_error = error;
      ++finished;
    }
    state_changed.notify_one();
  };

  std::vector<std::thread> threads;
  threads.reserve(devices.size());
  struct Joiner {
    std::vector<std::thread>& threads;
    PlaneQueue& queue;
    ~Joiner() {
      queue.stop();  // only matters when unwinding: the workers stop after their chunks in flight
      for (std::thread& t : threads)
        if (t.joinable()) t.join();
    }
  } joiner{threads, queue};
  for (int w = 0; w < workers; ++w) threads.emplace_back(worker_main, w);

  // Progress from the calling thread, as the single-device driver does.
  {
    std::unique_lock<std::mutex> lock(state_mutex);
    std::int64_t reported = 0;
    while (finished < workers) {
      state_changed.wait(lock, [&] { return finished == workers || planes_done != reported; });
      // Always catch up with planes_done: after a failure the predicate must turn false again,
      // or this loop would spin holding state_mutex and the workers could never finish.
      if (planes_done != reported) {
        reported = planes_done;
        if (options.progress && !first_error) {
          lock.unlock();
          options.progress(static_cast<std::size_t>(reported), static_cast<std::size_t>(problem.nz));
          lock.lock();
        }
      }
    }
  }
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);

  for (std::size_t w = 0; w < devices.size(); ++w) {
    timing.workers[w].kernel_seconds = results[w].kernel_seconds;
    timing.workers[w].planes = results[w].planes;
    timing.workers[w].chunks = results[w].chunks;
    timing.kernel_seconds = std::max(timing.kernel_seconds, results[w].kernel_seconds);
  }
  timing.wall_seconds = seconds_since(wall_start);
  return timing;
}

std::vector<int> usable_devices(std::string* reason) {
  std::vector<int> out;
  if (usable_device_count(reason) == 0) return out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
  for (int d = 0; d < count; ++d) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (10 * major + minor >= lowest_built_arch()) out.push_back(d);
  }
  return out;
}

int usable_device_count(std::string* reason) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (reason)
      *reason = std::string("no usable CUDA driver or device (cudaGetDeviceCount: ") + cudaGetErrorName(status) +
                ", " + cudaGetErrorString(status) + ")";
    return 0;
  }
  if (count == 0) {
    if (reason) *reason = "no CUDA device found";
    return 0;
  }
  int usable = 0;
  for (int d = 0; d < count; ++d) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (10 * major + minor >= lowest_built_arch()) ++usable;
  }
  if (usable == 0 && reason)
    *reason = "no CUDA device of compute capability " + std::to_string(lowest_built_arch() / 10) + "." +
              std::to_string(lowest_built_arch() % 10) + " or newer (this espgrid was built for sm_" +
              std::to_string(lowest_built_arch()) + ")";
  return usable;
}

std::string describe_device(int device) {
  cudaDeviceProp prop{};
  ESPGRID_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs)";
}

}  // namespace espgrid::cuda
