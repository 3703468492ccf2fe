// cuda-msm: the multilevel summation with every phase on the GPU, in float, on the host's plan
// (src/compute/msm_plan.h). Each phase mirrors its CPU phase (src/compute/msm_cpu.cpp) and
// sums in an order fixed by the atoms and the lattice, never by the launch (no atomics), so
// the map is the same on every run and a slab of planes equals the same planes of the whole map
// bit for bit:
//
//   binning        cell key per atom, stable radix sort (CUB), atoms gathered in cell order,
//                  each cell's first atom by binary search
//   anterpolation  one thread per level-1 point of the charged box: Σ q φφφ over the atoms of
//                  the 2·support cells per axis that touch it
//   restriction    one axis at a time (three passes), as the CPU
//   cutoff         one thread per level point: the clipped stencil (K_1 table, ×2^-(l-1))
//   top            one thread per top point: all charged points of the top level, g_{a_L} in float
//   prolongation   one axis at a time (three passes), added to the level's own sum
//   per slab of z-planes (two streams, two buffers, copies overlapping the next slab):
//   interpolation  e_1 contracted along z per map plane, then 2-D taps per map point
//   short range    8×8×8-point tiles: the cell rows within the cutoff of the tile, their atoms
//                  staged through shared memory, four z-points per thread
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "src/compute/cuda_driver.h"
#include "src/compute/msm_cuda_driver.h"
#include "src/compute/msm_math.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"

namespace espgrid::cuda {
namespace {

using msm::GridBox;
using msm::Plan;

constexpr int kLinearBlock = 256;   // threads of the one-dimensional kernels
constexpr int kMaxRestriction = 5;  // restriction_width of the quintic

/// A box of lattice points on the device. Every MSM grid has at most 2^28 points and lattice
/// indices within ±2^30 (checked on the host), so int holds them.
struct DevBox {
  int lo[3];
  int n[3];
};

DevBox dev_box(const GridBox& b) {
  DevBox d{};
  for (int a = 0; a < 3; ++a) {
    if (b.lo[a] < -(std::int64_t{1} << 30) || b.lo[a] + b.n[a] > (std::int64_t{1} << 30))
      throw UsageError(
          "MSM lattice indices out of range for cuda-msm (coordinates too far from the map origin for "
          "this spacing)");
    d.lo[a] = static_cast<int>(b.lo[a]);
    d.n[a] = static_cast<int>(b.n[a]);
  }
  return d;
}

__device__ __forceinline__ std::size_t box_index(const DevBox& b, int x, int y, int z) {
  return static_cast<std::size_t>(x - b.lo[0]) +
         static_cast<std::size_t>(b.n[0]) * (static_cast<std::size_t>(y - b.lo[1]) +
                                             static_cast<std::size_t>(b.n[1]) * static_cast<std::size_t>(z - b.lo[2]));
}

__device__ __forceinline__ std::size_t box_points(const DevBox& b) {
  return static_cast<std::size_t>(b.n[0]) * static_cast<std::size_t>(b.n[1]) * static_cast<std::size_t>(b.n[2]);
}

/// (x, y, z) of the idx-th point of `b` (x fastest).
__device__ __forceinline__ void box_point(const DevBox& b, std::size_t idx, int& x, int& y, int& z) {
  x = b.lo[0] + static_cast<int>(idx % static_cast<std::size_t>(b.n[0]));
  idx /= static_cast<std::size_t>(b.n[0]);
  y = b.lo[1] + static_cast<int>(idx % static_cast<std::size_t>(b.n[1]));
  z = b.lo[2] + static_cast<int>(idx / static_cast<std::size_t>(b.n[1]));
}

__device__ __forceinline__ int floor_div2(int v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }
__device__ __forceinline__ int ceil_div2(int v) { return -floor_div2(-v); }

/// Cell (lattice) index of a coordinate: floor(v / size) in IEEE float division, clamped to
/// [lo, lo + n − 1] (the plan pads its boxes by one, so clamping never moves a real atom).
__device__ __forceinline__ int cell_of(float v, float size, int lo, int n) {
  const int c = static_cast<int>(floorf(v / size));
  return min(max(c, lo), lo + n - 1);
}

/// Grid coordinate float(i)·h rounded once, as the exact kernels compute it.
__device__ __forceinline__ float grid_coord(int i, float h) { return __fmul_rn(static_cast<float>(i), h); }

std::size_t blocks_for(std::size_t n, std::size_t per_block) { return (n + per_block - 1) / per_block; }

// ---- binning --------------------------------------------------------------------------------------

__global__ void cell_keys_kernel(const float4* __restrict__ atoms, int n, float cell, DevBox cells,
                                 unsigned* __restrict__ keys, unsigned* __restrict__ order) {
  const int a = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (a >= n) return;
  const float4 p = atoms[a];
  const int cx = cell_of(p.x, cell, cells.lo[0], cells.n[0]);
  const int cy = cell_of(p.y, cell, cells.lo[1], cells.n[1]);
  const int cz = cell_of(p.z, cell, cells.lo[2], cells.n[2]);
  keys[a] = static_cast<unsigned>(box_index(cells, cx, cy, cz));
  order[a] = static_cast<unsigned>(a);
}

__global__ void gather_atoms_kernel(const float4* __restrict__ atoms, const unsigned* __restrict__ order, int n,
                                    float4* __restrict__ sorted) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t < n) sorted[t] = atoms[order[t]];
}

/// cell_start[c] = the first sorted atom whose key is ≥ c (c = 0 ... cells): each cell's atoms
/// are [cell_start[c], cell_start[c + 1]).
__global__ void cell_start_kernel(const unsigned* __restrict__ keys, int n, unsigned cells,
                                  unsigned* __restrict__ cell_start) {
  const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c > cells) return;
  int lo = 0, hi = n;  // lower bound of c in keys[0, n)
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (keys[mid] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  cell_start[c] = static_cast<unsigned>(lo);
}

// ---- anterpolation -------------------------------------------------------------------------------

struct AnterpolationArgs {
  DevBox grid, charged, cells;
  float h;
  int order;
};

/// (v − m·h)/h: the lattice-unit offset of v from point m, one rounding for m·h − v.
__device__ __forceinline__ float lattice_offset(float v, int m, float h) {
  return __fdiv_rn(fmaf(-static_cast<float>(m), h, v), h);
}

__global__ void anterpolation_kernel(const float4* __restrict__ sorted, const unsigned* __restrict__ cell_start,
                                     AnterpolationArgs a, float* __restrict__ q1) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= box_points(a.charged)) return;
  int x, y, z;
  box_point(a.charged, idx, x, y, z);
  const int s = msm::support_width(a.order);
  const DevBox& c = a.cells;
  // Atoms in cell m touch points m − s + 1 ... m + s, so point (x, y, z) gathers cells x − s ... x + s − 1.
  const int cz0 = max(z - s, c.lo[2]), cz1 = min(z + s - 1, c.lo[2] + c.n[2] - 1);
  const int cy0 = max(y - s, c.lo[1]), cy1 = min(y + s - 1, c.lo[1] + c.n[1] - 1);
  const int cx0 = max(x - s, c.lo[0]), cx1 = min(x + s - 1, c.lo[0] + c.n[0] - 1);
  float sum = 0.0f;
  if (cx0 <= cx1) {
    for (int cz = cz0; cz <= cz1; ++cz)
      for (int cy = cy0; cy <= cy1; ++cy) {
        const unsigned begin = cell_start[box_index(c, cx0, cy, cz)];
        const unsigned end = cell_start[box_index(c, cx1, cy, cz) + 1];
        for (unsigned t = begin; t < end; ++t) {
          const float4 p = sorted[t];
          const float w = msm::phi(lattice_offset(p.x, x, a.h), a.order) *
                          msm::phi(lattice_offset(p.y, y, a.h), a.order) *
                          msm::phi(lattice_offset(p.z, z, a.h), a.order);
          sum = fmaf(p.w, w, sum);
        }
      }
  }
  q1[box_index(a.grid, x, y, z)] = sum;
}

// ---- restriction and prolongation: one axis of a 3-D array at a time ---------------------------

struct Weights {
  float w[2 * kMaxRestriction + 1];  ///< w[j + width] = φ(j/2)
  int width;                         ///< restriction_width
};

/// A pass along `axis`: output element (o0, o1, o2) of an out_n-sized view reads input
/// elements that differ from it along `axis` only. Element (i0, i1, i2) of a view lives at
/// offset + i0·stride[0] + i1·stride[1] + i2·stride[2].
struct AxisPass {
  int out_n[3];
  int axis;
  int in_first;   ///< lattice index of input element 0 along the axis
  int in_count;   ///< input elements along the axis
  int out_first;  ///< lattice index of output element 0 along the axis
  std::size_t in_offset, in_stride[3];
  std::size_t out_offset, out_stride[3];
  int accumulate;  ///< add into the output instead of writing it
};

__device__ __forceinline__ std::size_t pass_points(const AxisPass& p) {
  return static_cast<std::size_t>(p.out_n[0]) * static_cast<std::size_t>(p.out_n[1]) *
         static_cast<std::size_t>(p.out_n[2]);
}

__device__ __forceinline__ void pass_point(const AxisPass& p, std::size_t idx, int (&o)[3]) {
  o[0] = static_cast<int>(idx % static_cast<std::size_t>(p.out_n[0]));
  idx /= static_cast<std::size_t>(p.out_n[0]);
  o[1] = static_cast<int>(idx % static_cast<std::size_t>(p.out_n[1]));
  o[2] = static_cast<int>(idx / static_cast<std::size_t>(p.out_n[1]));
}

/// Restriction: out(n) = Σ_j w_j in(2n + j), j ascending, over the input's elements.
__global__ void restrict_axis_kernel(const float* __restrict__ in, float* __restrict__ out, AxisPass p, Weights w) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= pass_points(p)) return;
  int o[3];
  pass_point(p, idx, o);
  const int n = p.out_first + o[p.axis];
  std::size_t base = p.in_offset;
  for (int d = 0; d < 3; ++d)
    if (d != p.axis) base += static_cast<std::size_t>(o[d]) * p.in_stride[d];
  float sum = 0.0f;
  for (int j = -w.width; j <= w.width; ++j) {
    const float wj = w.w[j + w.width];
    const int f = 2 * n + j - p.in_first;
    if (wj == 0.0f || f < 0 || f >= p.in_count) continue;
    sum = fmaf(wj, in[base + static_cast<std::size_t>(f) * p.in_stride[p.axis]], sum);
  }
  const std::size_t at = p.out_offset + static_cast<std::size_t>(o[0]) * p.out_stride[0] +
                         static_cast<std::size_t>(o[1]) * p.out_stride[1] +
                         static_cast<std::size_t>(o[2]) * p.out_stride[2];
  out[at] = p.accumulate ? out[at] + sum : sum;
}

/// Prolongation: out(m) = Σ_n w_{m−2n} in(n) over the coarse n that touch m, ascending.
__global__ void prolong_axis_kernel(const float* __restrict__ in, float* __restrict__ out, AxisPass p, Weights w) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= pass_points(p)) return;
  int o[3];
  pass_point(p, idx, o);
  const int m = p.out_first + o[p.axis];
  std::size_t base = p.in_offset;
  for (int d = 0; d < 3; ++d)
    if (d != p.axis) base += static_cast<std::size_t>(o[d]) * p.in_stride[d];
  float sum = 0.0f;
  for (int n = ceil_div2(m - w.width); n <= floor_div2(m + w.width); ++n) {
    const float wj = w.w[m - 2 * n + w.width];
    const int f = n - p.in_first;
    if (wj == 0.0f || f < 0 || f >= p.in_count) continue;
    sum = fmaf(wj, in[base + static_cast<std::size_t>(f) * p.in_stride[p.axis]], sum);
  }
  const std::size_t at = p.out_offset + static_cast<std::size_t>(o[0]) * p.out_stride[0] +
                         static_cast<std::size_t>(o[1]) * p.out_stride[1] +
                         static_cast<std::size_t>(o[2]) * p.out_stride[2];
  out[at] = p.accumulate ? out[at] + sum : sum;
}

// ---- the level sums ------------------------------------------------------------------------------

struct CutoffArgs {
  DevBox grid, charged;
  int radius;   ///< stencil radius R
  float scale;  ///< 2^-(l-1)
};

/// e_l(m) = scale·Σ_j K_1(j) q_l(m + j), j over the stencil clipped to the charged box, in the
/// CPU's order (z, y, then x ascending).
__global__ void cutoff_kernel(const float* __restrict__ q, const float* __restrict__ stencil,
                              const int* __restrict__ row_extent, CutoffArgs c, float* __restrict__ out) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= box_points(c.grid)) return;
  int x, y, z;
  box_point(c.grid, idx, x, y, z);
  const int r = c.radius, w = 2 * r + 1;
  const DevBox& ch = c.charged;
  const int jz0 = max(-r, ch.lo[2] - z), jz1 = min(r, ch.lo[2] + ch.n[2] - 1 - z);
  const int jy0 = max(-r, ch.lo[1] - y), jy1 = min(r, ch.lo[1] + ch.n[1] - 1 - y);
  float sum = 0.0f;
  for (int jz = jz0; jz <= jz1; ++jz)
    for (int jy = jy0; jy <= jy1; ++jy) {
      const int row = (jy + r) + w * (jz + r);
      const int extent = row_extent[row];
      const int jx0 = max(-extent, ch.lo[0] - x), jx1 = min(extent, ch.lo[0] + ch.n[0] - 1 - x);
      // A count from zero, not `for (jx = jx0; jx <= jx1; ++jx)`: with that form, nvcc 13.0's
      // sm_90 code computed the unrolled loop's remainder from max(lo − x, extent, jx1) (a
      // three-way VIMNMX3 that lost the negation of −extent) while exiting on jx1, so it read up
      // to 3 values past the row (compute-sanitizer: reads past the charge grid; wrong sums).
      const int count = jx1 - jx0 + 1;
      if (count <= 0) continue;
      const float* k = stencil + static_cast<std::size_t>(row) * w + r + jx0;
      const float* qs = q + box_index(c.grid, x + jx0, y + jy, z + jz);
      for (int i = 0; i < count; ++i) sum = fmaf(k[i], qs[i], sum);
    }
  out[idx] = sum * c.scale;
}

struct TopArgs {
  DevBox grid, charged;
  float h2;      ///< h_L², Å²
  float inv_a;   ///< 1/a_L, 1/Å
  float inv_a2;  ///< 1/a_L²
  int order;
};

/// e_L(m) = Σ_n g_{a_L}(|m − n|·h_L) q_L(n) over every charged point, z, y, x ascending.
__global__ void top_kernel(const float* __restrict__ q, TopArgs t, float* __restrict__ out) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= box_points(t.grid)) return;
  int x, y, z;
  box_point(t.grid, idx, x, y, z);
  const DevBox& c = t.charged;
  float sum = 0.0f;
  for (int nz = c.lo[2]; nz < c.lo[2] + c.n[2]; ++nz)
    for (int ny = c.lo[1]; ny < c.lo[1] + c.n[1]; ++ny) {
      const float dy = static_cast<float>(y - ny), dz = static_cast<float>(z - nz);
      const float dyz2 = fmaf(dy, dy, dz * dz);
      const float* qs = q + box_index(t.grid, c.lo[0], ny, nz);
      for (int nx = 0; nx < c.n[0]; ++nx) {
        const float dx = static_cast<float>(x - (c.lo[0] + nx));
        const float rho2 = t.h2 * fmaf(dx, dx, dyz2) * t.inv_a2;
        const float gamma = rho2 < 1.0f ? msm::gamma_inside(rho2, t.order) : rsqrtf(rho2);
        sum = fmaf(qs[nx], gamma * t.inv_a, sum);
      }
    }
  out[idx] = sum;
}

// ---- interpolation to the map --------------------------------------------------------------------

/// contracted[c][y'][x'] = Σ_t wz(k)[t] e_1(x', y', first_z(k) + t), k = k_first + c (problem plane).
__global__ void contract_z_kernel(const float* __restrict__ e1, DevBox grid, const float* __restrict__ wz,
                                  const int* __restrict__ first_z, int taps, int k_first, int planes,
                                  float* __restrict__ contracted) {
  const std::size_t plane = static_cast<std::size_t>(grid.n[0]) * static_cast<std::size_t>(grid.n[1]);
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= plane * static_cast<std::size_t>(planes)) return;
  const int c = static_cast<int>(idx / plane);
  const std::size_t in_plane = idx % plane;
  const int k = k_first + c;
  const float* w = wz + static_cast<std::size_t>(k) * taps;
  const int z0 = first_z[k];
  float sum = 0.0f;
  for (int t = 0; t < taps; ++t)
    sum = fmaf(w[t], e1[in_plane + plane * static_cast<std::size_t>(z0 + t - grid.lo[2])], sum);
  contracted[idx] = sum;
}

struct InterpolationArgs {
  int nx, ny, planes;
  int grid_lo_x, grid_lo_y, grid_nx, grid_ny;  ///< the level-1 plane the map planes were contracted into
  int taps;
};

/// slab[c][j][i] = Σ_b wy(j)[b] Σ_a wx(i)[a] contracted[c][first_y(j) + b][first_x(i) + a].
__global__ void interpolate_kernel(const float* __restrict__ contracted, const float* __restrict__ wx,
                                   const int* __restrict__ first_x, const float* __restrict__ wy,
                                   const int* __restrict__ first_y, InterpolationArgs a, float* __restrict__ slab) {
  const std::size_t map_plane = static_cast<std::size_t>(a.nx) * static_cast<std::size_t>(a.ny);
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= map_plane * static_cast<std::size_t>(a.planes)) return;
  const int c = static_cast<int>(idx / map_plane);
  const int j = static_cast<int>((idx % map_plane) / static_cast<std::size_t>(a.nx));
  const int i = static_cast<int>(idx % static_cast<std::size_t>(a.nx));
  const std::size_t level_plane = static_cast<std::size_t>(a.grid_nx) * static_cast<std::size_t>(a.grid_ny);
  const float* plane = contracted + level_plane * static_cast<std::size_t>(c);
  const int x0 = first_x[i] - a.grid_lo_x, y0 = first_y[j] - a.grid_lo_y;
  const float* wxi = wx + static_cast<std::size_t>(i) * a.taps;
  const float* wyj = wy + static_cast<std::size_t>(j) * a.taps;
  float sum = 0.0f;
  for (int b = 0; b < a.taps; ++b) {
    const float* row = plane + static_cast<std::size_t>(y0 + b) * static_cast<std::size_t>(a.grid_nx) + x0;
    float along_x = 0.0f;
    for (int t = 0; t < a.taps; ++t) along_x = fmaf(wxi[t], row[t], along_x);
    sum = fmaf(wyj[b], along_x, sum);
  }
  slab[idx] = sum;
}

// ---- the short range -----------------------------------------------------------------------------

constexpr int kTile = 8;                                                   // map points per tile edge
constexpr int kPointsPerThread = 4;                                        // along z
constexpr int kShortThreads = kTile * kTile * (kTile / kPointsPerThread);  // 128
constexpr int kRowBatch = 1024;  // cell rows per pass over the shared row table
constexpr int kRowsPerThread = kRowBatch / kShortThreads;
constexpr int kAtomTile = 256;  // candidate atoms per shared-memory tile

struct ShortRangeArgs {
  int nx, ny;   ///< the map's extent
  int k_first;  ///< map z index (z_offset included) of the slab's plane 0
  int planes;   ///< planes in the slab
  float hx, hy, hz;
  float cutoff, cutoff2, inv_cutoff, inv_cutoff2;
  float soft2;  ///< softening², Å²
  int order;
  float cell;  ///< Å
  DevBox cells;
};

/// Distance from the interval [lo, hi] to the cell [c·size, (c+1)·size), Å.
__device__ __forceinline__ float interval_gap(float lo, float hi, int c, float size) {
  const float cell_lo = static_cast<float>(c) * size, cell_hi = cell_lo + size;
  return hi < cell_lo ? cell_lo - hi : (lo > cell_hi ? lo - cell_hi : 0.0f);
}

/// Adds Σ_{|r − r_i| < a} q_i (1/√(r² + ε²) − γ(r/a)/a) to every map point of the slab. Each block
/// takes an 8×8×8 tile; its candidates are the atoms of the cell rows (cy, cz) within the
/// cutoff of the tile's box, x-ranges narrowed to the cutoff, in (cz, cy, sorted-atom) order:
/// every point sums its atoms in that one global order, whatever the tiling.
__global__ void __launch_bounds__(kShortThreads)
    short_range_kernel(const float4* __restrict__ atoms, const unsigned* __restrict__ cell_start, ShortRangeArgs a,
                       float* __restrict__ slab) {
  // The block is 3-D: CUB must be told its shape, or it ranks threads by threadIdx.x alone (the
  // first device run read past the atoms that way).
  using Scan = cub::BlockScan<int, kTile, cub::BLOCK_SCAN_RAKING, kTile, kTile / kPointsPerThread>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ unsigned s_begin[kRowBatch];
  __shared__ int s_prefix[kRowBatch + 1];
  __shared__ float4 s_atoms[kAtomTile];

  const int tid = static_cast<int>(threadIdx.x + kTile * (threadIdx.y + kTile * threadIdx.z));
  const int i0 = static_cast<int>(blockIdx.x) * kTile, j0 = static_cast<int>(blockIdx.y) * kTile;
  const int c0 = static_cast<int>(blockIdx.z) * kTile;
  const int i = i0 + static_cast<int>(threadIdx.x), j = j0 + static_cast<int>(threadIdx.y);
  const int cfirst = c0 + static_cast<int>(threadIdx.z) * kPointsPerThread;
  const float x = grid_coord(i, a.hx), y = grid_coord(j, a.hy);
  float z[kPointsPerThread], sum[kPointsPerThread];
#pragma unroll
  for (int m = 0; m < kPointsPerThread; ++m) {
    z[m] = grid_coord(a.k_first + cfirst + m, a.hz);
    sum[m] = 0.0f;
  }
  // The tile's box (its points inside the map), Å.
  const int i1 = min(i0 + kTile, a.nx) - 1, j1 = min(j0 + kTile, a.ny) - 1, c1 = min(c0 + kTile, a.planes) - 1;
  const float xlo = grid_coord(i0, a.hx), xhi = grid_coord(i1, a.hx);
  const float ylo = grid_coord(j0, a.hy), yhi = grid_coord(j1, a.hy);
  const float zlo = grid_coord(a.k_first + c0, a.hz), zhi = grid_coord(a.k_first + c1, a.hz);
  const DevBox& cells = a.cells;
  const int cy0 = max(cells.lo[1], static_cast<int>(floorf((ylo - a.cutoff) / a.cell)));
  const int cy1 = min(cells.lo[1] + cells.n[1] - 1, static_cast<int>(floorf((yhi + a.cutoff) / a.cell)));
  const int cz0 = max(cells.lo[2], static_cast<int>(floorf((zlo - a.cutoff) / a.cell)));
  const int cz1 = min(cells.lo[2] + cells.n[2] - 1, static_cast<int>(floorf((zhi + a.cutoff) / a.cell)));
  const int rows_y = cy1 - cy0 + 1;
  const int rows = (rows_y > 0 && cz1 >= cz0) ? rows_y * (cz1 - cz0 + 1) : 0;

  for (int batch = 0; batch < rows; batch += kRowBatch) {
    const int count = min(kRowBatch, rows - batch);
    int local[kRowsPerThread];
    int local_sum = 0;
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int row = tid * kRowsPerThread + r;
      int n = 0;
      if (row < count) {
        const int g = batch + row;
        const int cy = cy0 + g % rows_y, cz = cz0 + g / rows_y;
        const float gy = interval_gap(ylo, yhi, cy, a.cell), gz = interval_gap(zlo, zhi, cz, a.cell);
        const float room = a.cutoff2 - gy * gy - gz * gz;
        unsigned begin = 0;
        if (room > 0.0f) {
          const float half = sqrtf(room);
          const int cx0 = max(cells.lo[0], static_cast<int>(floorf((xlo - half) / a.cell)));
          const int cx1 = min(cells.lo[0] + cells.n[0] - 1, static_cast<int>(floorf((xhi + half) / a.cell)));
          if (cx0 <= cx1) {
            begin = cell_start[box_index(cells, cx0, cy, cz)];
            n = static_cast<int>(cell_start[box_index(cells, cx1, cy, cz) + 1] - begin);
          }
        }
        s_begin[row] = begin;
      }
      local[r] = n;
      local_sum += n;
    }
    int offset = 0, total = 0;
    Scan(scan_storage).ExclusiveSum(local_sum, offset, total);
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int row = tid * kRowsPerThread + r;
      if (row < count) s_prefix[row] = offset;
      offset += local[r];
    }
    __syncthreads();
    for (int base = 0; base < total; base += kAtomTile) {
      const int in_tile = min(kAtomTile, total - base);
      for (int v = tid; v < in_tile; v += kShortThreads) {
        const int g = base + v;
        int lo = 0, hi = count - 1;  // the last row whose prefix is ≤ g holds candidate g
        while (lo < hi) {
          const int mid = (lo + hi + 1) / 2;
          if (s_prefix[mid] <= g)
            lo = mid;
          else
            hi = mid - 1;
        }
        s_atoms[v] = atoms[s_begin[lo] + static_cast<unsigned>(g - s_prefix[lo])];
      }
      __syncthreads();
      for (int t = 0; t < in_tile; ++t) {
        const float4 p = s_atoms[t];
        const float dx = x - p.x, dy = y - p.y;
        const float dxy2 = fmaf(dx, dx, dy * dy);
#pragma unroll
        for (int m = 0; m < kPointsPerThread; ++m) {
          const float dz = z[m] - p.z;
          const float r2 = fmaf(dz, dz, dxy2);
          const float smooth = msm::gamma_inside(r2 * a.inv_cutoff2, a.order) * a.inv_cutoff;
          const float term = p.w * (rsqrtf(r2 + a.soft2) - smooth);
          sum[m] += r2 < a.cutoff2 ? term : 0.0f;
        }
      }
      __syncthreads();  // the next tile overwrites s_atoms
    }
    __syncthreads();  // the next batch overwrites s_begin and s_prefix (also when total was 0)
  }
  if (i >= a.nx || j >= a.ny) return;
#pragma unroll
  for (int m = 0; m < kPointsPerThread; ++m) {
    const int c = cfirst + m;
    if (c < a.planes) {
      const std::size_t at =
          (static_cast<std::size_t>(c) * static_cast<std::size_t>(a.ny) + static_cast<std::size_t>(j)) *
              static_cast<std::size_t>(a.nx) +
          static_cast<std::size_t>(i);
      slab[at] += sum[m];
    }
  }
}

// ---- the host side -------------------------------------------------------------------------------

/// A host vector on the device, uploaded on `stream` (pinned staging, so the copy is truly
/// asynchronous; the staging lives until the stream is synchronized by the caller).
template <class T>
struct Uploaded {
  PinnedBuffer<T> staging;
  DeviceBuffer<T> device;
};

template <class T, class U>
Uploaded<T> upload(const std::vector<U>& host, const std::string& name, cudaStream_t stream) {
  Uploaded<T> out;
  out.staging = PinnedBuffer<T>(host.size(), name + " (staging)");
  out.device = DeviceBuffer<T>(host.size(), name);
  for (std::size_t i = 0; i < host.size(); ++i) out.staging.get()[i] = static_cast<T>(host[i]);
  if (!host.empty())
    ESPGRID_CUDA_CHECK(
        cudaMemcpyAsync(out.device.get(), out.staging.get(), out.device.bytes(), cudaMemcpyHostToDevice, stream));
  return out;
}

Weights restriction_weights(int order) {
  Weights w{};
  w.width = msm::restriction_width(order);
  for (int j = -w.width; j <= w.width; ++j) w.w[j + w.width] = static_cast<float>(msm::restriction_weight(j, order));
  return w;
}

/// Dense strides of a box-shaped array.
void dense_strides(const GridBox& b, std::size_t (&s)[3]) {
  s[0] = 1;
  s[1] = static_cast<std::size_t>(b.n[0]);
  s[2] = static_cast<std::size_t>(b.n[0] * b.n[1]);
}

void dense_strides(const int (&n)[3], std::size_t (&s)[3]) {
  s[0] = 1;
  s[1] = static_cast<std::size_t>(n[0]);
  s[2] = static_cast<std::size_t>(n[0]) * static_cast<std::size_t>(n[1]);
}

std::size_t offset_in(const GridBox& outer, const GridBox& inner) {
  return static_cast<std::size_t>((inner.lo[0] - outer.lo[0]) +
                                  outer.n[0] *
                                      ((inner.lo[1] - outer.lo[1]) + outer.n[1] * (inner.lo[2] - outer.lo[2])));
}

template <class Kernel, class... Args>
void launch_linear(Kernel kernel, std::size_t n, cudaStream_t stream, Args... args) {
  if (n == 0) return;
  kernel<<<static_cast<unsigned>(blocks_for(n, kLinearBlock)), kLinearBlock, 0, stream>>>(args...);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

/// Waits for a stream's work when it goes out of scope (errors ignored: unwinding or done).
struct DrainOnExit {
  cudaStream_t stream;
  ~DrainOnExit() { cudaStreamSynchronize(stream); }
};

/// Everything on the device that outlives the grid phases: the sorted atoms, cell starts, the
/// level grids and the tables the slabs read.
struct DeviceState {
  DeviceBuffer<float4> atoms, sorted;
  DeviceBuffer<unsigned> cell_start;
  std::vector<DeviceBuffer<float>> charge, direct, potential;  ///< per level
  std::vector<Uploaded<float>> axis_w;                         ///< x, y, z weights
  std::vector<Uploaded<int>> axis_first;                       ///< x, y, z first taps
  int taps = 0;
};

/// Runs the grid phases of `plan` on `stream`, recording an event at the start of each phase
/// (binning, anterpolation, restriction, cutoff, top, prolongation) and at the end. Every
/// buffer is allocated and every table uploaded before the first event, so the events time
/// the kernels alone.
void grid_phases(const DcsProblem& p, const Plan& plan, DeviceState& st, cudaStream_t stream,
                 std::array<Event, 7>& marks) {
  const int n = static_cast<int>(p.atom_count);
  const int levels = plan.level_count();
  const DevBox cells = dev_box(plan.cells);
  const std::size_t cell_count = plan.cells.points();
  if (cell_count >= std::size_t{UINT_MAX}) throw UsageError("too many MSM cells for cuda-msm");

  // ---- buffers and tables
  PinnedBuffer<float4> h_atoms(p.atom_count, "atoms (staging)");
  for (std::size_t i = 0; i < p.atom_count; ++i) h_atoms.get()[i] = make_float4(p.x[i], p.y[i], p.z[i], p.q[i]);
  st.atoms = DeviceBuffer<float4>(p.atom_count, "atoms");
  st.sorted = DeviceBuffer<float4>(p.atom_count, "atoms sorted by cell");
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(st.atoms.get(), h_atoms.get(), st.atoms.bytes(), cudaMemcpyHostToDevice, stream));
  DeviceBuffer<unsigned> keys(p.atom_count, "cell keys"), keys_sorted(p.atom_count, "cell keys (sorted)");
  DeviceBuffer<unsigned> order(p.atom_count, "atom order"), order_sorted(p.atom_count, "atom order (sorted)");
  int bits = 1;
  while (bits < 32 && (std::size_t{1} << bits) <= cell_count) ++bits;
  std::size_t temp_bytes = 0;
  ESPGRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.get(), keys_sorted.get(), order.get(),
                                                     order_sorted.get(), n, 0, bits, stream));
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1), "radix sort scratch");
  st.cell_start = DeviceBuffer<unsigned>(cell_count + 1, "cell starts");
  st.charge.clear();
  st.direct.clear();
  st.potential.clear();
  for (int l = 0; l < levels; ++l) {
    const std::size_t points = plan.levels[static_cast<std::size_t>(l)].grid.points();
    const std::string level = " (level " + std::to_string(l + 1) + ")";
    st.charge.emplace_back(points, "MSM charges" + level);
    st.direct.emplace_back(points, "MSM level sums" + level);
    st.potential.emplace_back(points, "MSM potentials" + level);
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(st.charge.back().get(), 0, st.charge.back().bytes(), stream));
  }
  std::size_t scratch_points = 1;
  for (int l = 0; l + 1 < levels; ++l) {
    const GridBox& fc = plan.levels[static_cast<std::size_t>(l)].charged;
    const GridBox& cc = plan.levels[static_cast<std::size_t>(l + 1)].charged;
    const GridBox& fg = plan.levels[static_cast<std::size_t>(l)].grid;
    const GridBox& cg = plan.levels[static_cast<std::size_t>(l + 1)].grid;
    scratch_points = std::max({scratch_points, static_cast<std::size_t>(cc.n[0] * fc.n[1] * fc.n[2]),
                               static_cast<std::size_t>(cc.n[0] * cc.n[1] * fc.n[2]),
                               static_cast<std::size_t>(cg.n[0] * cg.n[1] * fg.n[2]),
                               static_cast<std::size_t>(cg.n[0] * fg.n[1] * fg.n[2])});
  }
  DeviceBuffer<float> t1(scratch_points, "MSM pass scratch 1"), t2(scratch_points, "MSM pass scratch 2");
  const std::vector<float> stencil(plan.stencil.begin(), plan.stencil.end());
  const Uploaded<float> d_stencil = upload<float>(stencil, "MSM stencil", stream);
  const Uploaded<int> d_extent = upload<int>(plan.stencil_row_extent, "MSM stencil rows", stream);
  const Weights w = restriction_weights(plan.order);
  // Declared after every local buffer: on an error, wait for the queued work before they are freed.
  const DrainOnExit drain{stream};

  // ---- binning: a stable radix sort of (cell, atom index) pairs
  marks[0].record(stream);
  launch_linear(cell_keys_kernel, p.atom_count, stream, st.atoms.get(), n, static_cast<float>(plan.cell), cells,
                keys.get(), order.get());
  ESPGRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys.get(), keys_sorted.get(), order.get(),
                                                     order_sorted.get(), n, 0, bits, stream));
  launch_linear(gather_atoms_kernel, p.atom_count, stream, st.atoms.get(), order_sorted.get(), n, st.sorted.get());
  launch_linear(cell_start_kernel, cell_count + 1, stream, keys_sorted.get(), n, static_cast<unsigned>(cell_count),
                st.cell_start.get());

  // ---- anterpolation
  marks[1].record(stream);
  {
    const msm::Level& l1 = plan.levels[0];
    AnterpolationArgs a{dev_box(l1.grid), dev_box(l1.charged), cells, static_cast<float>(plan.params.spacing),
                        plan.order};
    launch_linear(anterpolation_kernel, l1.charged.points(), stream, st.sorted.get(), st.cell_start.get(), a,
                  st.charge[0].get());
  }

  // ---- restriction, one axis at a time
  marks[2].record(stream);
  for (int l = 0; l + 1 < levels; ++l) {
    const msm::Level& fine = plan.levels[static_cast<std::size_t>(l)];
    const msm::Level& coarse = plan.levels[static_cast<std::size_t>(l + 1)];
    const GridBox& fc = fine.charged;
    const GridBox& cc = coarse.charged;
    // x: fine charged box → T1 (coarse x, fine y, fine z).
    AxisPass px{};
    px.out_n[0] = static_cast<int>(cc.n[0]);
    px.out_n[1] = static_cast<int>(fc.n[1]);
    px.out_n[2] = static_cast<int>(fc.n[2]);
    px.axis = 0;
    px.in_first = static_cast<int>(fc.lo[0]);
    px.in_count = static_cast<int>(fc.n[0]);
    px.out_first = static_cast<int>(cc.lo[0]);
    px.in_offset = offset_in(fine.grid, fc);
    dense_strides(fine.grid, px.in_stride);
    px.out_offset = 0;
    dense_strides(px.out_n, px.out_stride);
    launch_linear(restrict_axis_kernel, static_cast<std::size_t>(cc.n[0] * fc.n[1] * fc.n[2]), stream,
                  st.charge[static_cast<std::size_t>(l)].get(), t1.get(), px, w);
    // y: T1 → T2 (coarse x, coarse y, fine z).
    AxisPass py{};
    py.out_n[0] = static_cast<int>(cc.n[0]);
    py.out_n[1] = static_cast<int>(cc.n[1]);
    py.out_n[2] = static_cast<int>(fc.n[2]);
    py.axis = 1;
    py.in_first = static_cast<int>(fc.lo[1]);
    py.in_count = static_cast<int>(fc.n[1]);
    py.out_first = static_cast<int>(cc.lo[1]);
    py.in_offset = 0;
    dense_strides(px.out_n, py.in_stride);
    py.out_offset = 0;
    dense_strides(py.out_n, py.out_stride);
    launch_linear(restrict_axis_kernel, static_cast<std::size_t>(cc.n[0] * cc.n[1] * fc.n[2]), stream, t1.get(),
                  t2.get(), py, w);
    // z: T2 → the coarse grid's charged box.
    AxisPass pz{};
    pz.out_n[0] = static_cast<int>(cc.n[0]);
    pz.out_n[1] = static_cast<int>(cc.n[1]);
    pz.out_n[2] = static_cast<int>(cc.n[2]);
    pz.axis = 2;
    pz.in_first = static_cast<int>(fc.lo[2]);
    pz.in_count = static_cast<int>(fc.n[2]);
    pz.out_first = static_cast<int>(cc.lo[2]);
    pz.in_offset = 0;
    dense_strides(py.out_n, pz.in_stride);
    pz.out_offset = offset_in(coarse.grid, cc);
    dense_strides(coarse.grid, pz.out_stride);
    launch_linear(restrict_axis_kernel, cc.points(), stream, t2.get(), st.charge[static_cast<std::size_t>(l + 1)].get(),
                  pz, w);
  }

  // ---- the cutoff sums of every level below the top
  marks[3].record(stream);
  for (int l = 0; l + 1 < levels; ++l) {
    const msm::Level& level = plan.levels[static_cast<std::size_t>(l)];
    CutoffArgs c{dev_box(level.grid), dev_box(level.charged), plan.stencil_radius,
                 static_cast<float>(std::ldexp(1.0, -l))};
    launch_linear(cutoff_kernel, level.grid.points(), stream, st.charge[static_cast<std::size_t>(l)].get(),
                  d_stencil.device.get(), d_extent.device.get(), c, st.direct[static_cast<std::size_t>(l)].get());
  }

  // ---- the top level: all pairs
  marks[4].record(stream);
  {
    const int l = levels - 1;
    const msm::Level& top = plan.top();
    const double a_top = std::ldexp(plan.params.cutoff, l);
    TopArgs t{dev_box(top.grid),
              dev_box(top.charged),
              static_cast<float>(top.spacing * top.spacing),
              static_cast<float>(1.0 / a_top),
              static_cast<float>(1.0 / (a_top * a_top)),
              plan.order};
    launch_linear(top_kernel, top.grid.points(), stream, st.charge.back().get(), t, st.direct.back().get());
  }

  // ---- prolongation, top down, one axis at a time, added to each level's own sum
  marks[5].record(stream);
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(st.potential.back().get(), st.direct.back().get(), st.direct.back().bytes(),
                                     cudaMemcpyDeviceToDevice, stream));
  for (int l = levels - 2; l >= 0; --l) {
    const msm::Level& fine = plan.levels[static_cast<std::size_t>(l)];
    const msm::Level& coarse = plan.levels[static_cast<std::size_t>(l + 1)];
    const GridBox& f = fine.grid;
    const GridBox& c = coarse.grid;
    ESPGRID_CUDA_CHECK(
        cudaMemcpyAsync(st.potential[static_cast<std::size_t>(l)].get(), st.direct[static_cast<std::size_t>(l)].get(),
                        st.direct[static_cast<std::size_t>(l)].bytes(), cudaMemcpyDeviceToDevice, stream));
    // z: the coarse grid → U (coarse x, coarse y, fine z).
    AxisPass pz{};
    pz.out_n[0] = static_cast<int>(c.n[0]);
    pz.out_n[1] = static_cast<int>(c.n[1]);
    pz.out_n[2] = static_cast<int>(f.n[2]);
    pz.axis = 2;
    pz.in_first = static_cast<int>(c.lo[2]);
    pz.in_count = static_cast<int>(c.n[2]);
    pz.out_first = static_cast<int>(f.lo[2]);
    pz.in_offset = 0;
    dense_strides(c, pz.in_stride);
    pz.out_offset = 0;
    dense_strides(pz.out_n, pz.out_stride);
    launch_linear(prolong_axis_kernel, static_cast<std::size_t>(c.n[0] * c.n[1] * f.n[2]), stream,
                  st.potential[static_cast<std::size_t>(l + 1)].get(), t1.get(), pz, w);
    // y: U → V (coarse x, fine y, fine z).
    AxisPass py{};
    py.out_n[0] = static_cast<int>(c.n[0]);
    py.out_n[1] = static_cast<int>(f.n[1]);
    py.out_n[2] = static_cast<int>(f.n[2]);
    py.axis = 1;
    py.in_first = static_cast<int>(c.lo[1]);
    py.in_count = static_cast<int>(c.n[1]);
    py.out_first = static_cast<int>(f.lo[1]);
    py.in_offset = 0;
    dense_strides(pz.out_n, py.in_stride);
    py.out_offset = 0;
    dense_strides(py.out_n, py.out_stride);
    launch_linear(prolong_axis_kernel, static_cast<std::size_t>(c.n[0] * f.n[1] * f.n[2]), stream, t1.get(), t2.get(),
                  py, w);
    // x: V → added into the fine grid.
    AxisPass px{};
    px.out_n[0] = static_cast<int>(f.n[0]);
    px.out_n[1] = static_cast<int>(f.n[1]);
    px.out_n[2] = static_cast<int>(f.n[2]);
    px.axis = 0;
    px.in_first = static_cast<int>(c.lo[0]);
    px.in_count = static_cast<int>(c.n[0]);
    px.out_first = static_cast<int>(f.lo[0]);
    px.in_offset = 0;
    dense_strides(py.out_n, px.in_stride);
    px.out_offset = 0;
    dense_strides(f, px.out_stride);
    px.accumulate = 1;
    launch_linear(prolong_axis_kernel, f.points(), stream, t2.get(), st.potential[static_cast<std::size_t>(l)].get(),
                  px, w);
  }
  marks[6].record(stream);
  // The staging, scratch and sort buffers are freed when this returns: let the work finish first.
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream));
}

/// The map-axis weight tables (double on the host, float on the device), for x, y and every
/// plane of the problem along z.
void upload_axis_tables(const DcsProblem& p, const Plan& plan, DeviceState& st, cudaStream_t stream) {
  const msm::AxisWeights axes[3] = {msm::axis_weights(plan, p.nx, 0, p.hx), msm::axis_weights(plan, p.ny, 0, p.hy),
                                    msm::axis_weights(plan, p.nz, p.z_offset, p.hz)};
  st.taps = axes[0].taps;
  st.axis_w.clear();
  st.axis_first.clear();
  for (int d = 0; d < 3; ++d) {
    st.axis_w.push_back(upload<float>(axes[d].w, "MSM map weights", stream));
    st.axis_first.push_back(upload<int>(axes[d].first, "MSM map taps", stream));
  }
}

void check_problem(const DcsProblem& p) {
  constexpr std::int64_t kMaxExtent = std::int64_t{1} << 30;
  if (p.nx < 0 || p.ny < 0 || p.nz < 0) throw UsageError("grid dimensions must not be negative");
  if (p.nx > kMaxExtent || p.ny > static_cast<std::int64_t>(kTile) * 65535 || p.nz > kMaxExtent - p.z_offset ||
      p.z_offset < 0)
    throw UsageError("grid of " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" + std::to_string(p.nz) +
                     " points is too large for cuda-msm (at most 524,280 points along y)");
  if (p.atom_count >= static_cast<std::size_t>(INT_MAX))
    throw UsageError("too many atoms for cuda-msm (at most " + std::to_string(INT_MAX - 1) + ")");
  if (p.atom_count > 0 && (!p.x || !p.y || !p.z || !p.q)) throw Error("compute_msm: missing atom arrays");
}

/// Queues the interpolation (writing the slab) and the short range (adding to it) of planes
/// [k0, k0 + planes) of the problem on `stream`; `contracted` holds planes level-1 planes.
void queue_slab(const DcsProblem& p, const Plan& plan, const DeviceState& st, std::int64_t k0, int planes, float* slab,
                float* contracted, cudaStream_t stream, const Event* between, bool long_range, bool short_range) {
  const GridBox& g = plan.levels[0].grid;
  const std::size_t level_plane = static_cast<std::size_t>(g.n[0] * g.n[1]);
  const std::size_t map_points = p.plane_points() * static_cast<std::size_t>(planes);
  if (long_range) {
    launch_linear(contract_z_kernel, level_plane * static_cast<std::size_t>(planes), stream, st.potential[0].get(),
                  dev_box(g), st.axis_w[2].device.get(), st.axis_first[2].device.get(), st.taps, static_cast<int>(k0),
                  planes, contracted);
    InterpolationArgs a{static_cast<int>(p.nx),
                        static_cast<int>(p.ny),
                        planes,
                        static_cast<int>(g.lo[0]),
                        static_cast<int>(g.lo[1]),
                        static_cast<int>(g.n[0]),
                        static_cast<int>(g.n[1]),
                        st.taps};
    launch_linear(interpolate_kernel, map_points, stream, contracted, st.axis_w[0].device.get(),
                  st.axis_first[0].device.get(), st.axis_w[1].device.get(), st.axis_first[1].device.get(), a, slab);
  } else {
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(slab, 0, sizeof(float) * map_points, stream));
  }
  if (between) between->record(stream);
  if (!short_range) return;
  ShortRangeArgs s{};
  s.nx = static_cast<int>(p.nx);
  s.ny = static_cast<int>(p.ny);
  s.k_first = static_cast<int>(p.z_offset + k0);
  s.planes = planes;
  s.hx = p.hx;
  s.hy = p.hy;
  s.hz = p.hz;
  s.cutoff = static_cast<float>(plan.params.cutoff);
  s.cutoff2 = static_cast<float>(plan.params.cutoff * plan.params.cutoff);
  s.inv_cutoff = static_cast<float>(1.0 / plan.params.cutoff);
  s.inv_cutoff2 = static_cast<float>(1.0 / (plan.params.cutoff * plan.params.cutoff));
  s.soft2 = p.softening2;
  s.order = plan.order;
  s.cell = static_cast<float>(plan.cell);
  s.cells = dev_box(plan.cells);
  const dim3 grid(static_cast<unsigned>(blocks_for(static_cast<std::size_t>(p.nx), kTile)),
                  static_cast<unsigned>(blocks_for(static_cast<std::size_t>(p.ny), kTile)),
                  static_cast<unsigned>(blocks_for(static_cast<std::size_t>(planes), kTile)));
  const dim3 block(kTile, kTile, kTile / kPointsPerThread);
  short_range_kernel<<<grid, block, 0, stream>>>(st.sorted.get(), st.cell_start.get(), s, slab);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

const char* const kPhaseNames[6] = {"binning", "anterpolation", "restriction", "cutoff", "top", "prolongation"};

}  // namespace

ComputeTiming compute_msm(const DcsProblem& p, const Plan& plan, const MsmRunOptions& options) {
  const Stopwatch wall;
  check_problem(p);
  if (p.point_count() > 0 && p.potential == nullptr) throw Error("compute_msm: no output buffer");
  ComputeTiming timing;
  const auto report = [&](std::int64_t k0, std::int64_t planes) {
    if (options.planes_done) options.planes_done(k0, planes);
    if (options.progress) options.progress(static_cast<std::size_t>(k0 + planes), static_cast<std::size_t>(p.nz));
  };
  DeviceGuard guard(options.device);
  timing.device = describe_device(options.device);
  if (plan.levels.empty()) {  // no atoms (or no points): the map is zero
    std::fill(p.potential, p.potential + p.point_count(), 0.0f);
    if (p.nz > 0) report(0, p.nz);
    timing.wall_seconds = wall.seconds();
    return timing;
  }

  // Buffers before the streams: the streams' destructors wait for their work, so nothing is
  // freed under a running kernel or copy, also when an error unwinds this function.
  DeviceState st;
  std::array<DeviceBuffer<float>, 2> d_slab, d_contracted;
  std::array<PinnedBuffer<float>, 2> h_slab;
  std::array<Stream, 2> streams;
  std::array<Event, 7> marks;
  upload_axis_tables(p, plan, st, streams[0].get());
  grid_phases(p, plan, st, streams[0].get(), marks);
  for (int i = 0; i < 6; ++i)
    timing.phases.push_back(
        {kPhaseNames[i],
         Event::elapsed_ms(marks[static_cast<std::size_t>(i)], marks[static_cast<std::size_t>(i + 1)]) / 1000.0});

  // Slabs of planes through two buffers on two streams: slab s's kernels run while slab s−1
  // is copied out (kernels of consecutive slabs are serialized, so their events add up).
  std::size_t free_bytes = 0, total_bytes = 0;
  ESPGRID_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::int64_t planes = msm::slab_planes(p, plan, options.max_slab_bytes, free_bytes);
  const bool two = planes < p.nz;
  const std::size_t slab_points = p.plane_points() * static_cast<std::size_t>(planes);
  const std::size_t contracted_points =
      static_cast<std::size_t>(plan.levels[0].grid.n[0] * plan.levels[0].grid.n[1]) * static_cast<std::size_t>(planes);
  for (int b = 0; b < (two ? 2 : 1); ++b) {
    d_slab[static_cast<std::size_t>(b)] =
        DeviceBuffer<float>(slab_points, b ? "potential slab (2nd buffer)" : "potential slab");
    d_contracted[static_cast<std::size_t>(b)] = DeviceBuffer<float>(contracted_points, "MSM contracted planes");
    h_slab[static_cast<std::size_t>(b)] = PinnedBuffer<float>(slab_points, "potential slab (staging)");
  }
  std::array<Event, 2> start, middle, stop;
  std::array<Event, 2> done{Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};
  double interpolation_ms = 0, short_ms = 0;
  struct InFlight {
    std::int64_t k0;
    int planes;
    int buffer;
  };
  std::optional<InFlight> pending;
  const auto finish = [&](const InFlight& s) {
    const std::size_t b = static_cast<std::size_t>(s.buffer);
    done[b].synchronize();
    interpolation_ms += Event::elapsed_ms(start[b], middle[b]);
    short_ms += Event::elapsed_ms(middle[b], stop[b]);
    std::memcpy(p.potential + p.plane_points() * static_cast<std::size_t>(s.k0), h_slab[b].get(),
                sizeof(float) * p.plane_points() * static_cast<std::size_t>(s.planes));
    report(s.k0, s.planes);
  };
  streams[1].wait(marks[6].get());  // the grids are ready
  int slab_index = 0;
  for (std::int64_t k0 = 0; k0 < p.nz; k0 += planes, ++slab_index) {
    const int b = slab_index & 1;
    const std::size_t bi = static_cast<std::size_t>(b);
    const int count = static_cast<int>(std::min<std::int64_t>(planes, p.nz - k0));
    const cudaStream_t stream = streams[bi].get();
    if (slab_index > 0) streams[bi].wait(stop[1 - bi].get());
    start[bi].record(stream);
    queue_slab(p, plan, st, k0, count, d_slab[bi].get(), d_contracted[bi].get(), stream, &middle[bi], true, true);
    stop[bi].record(stream);
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(h_slab[bi].get(), d_slab[bi].get(),
                                       sizeof(float) * p.plane_points() * static_cast<std::size_t>(count),
                                       cudaMemcpyDeviceToHost, stream));
    done[bi].record(stream);
    if (pending) finish(*pending);
    pending = InFlight{k0, count, b};
  }
  if (pending) finish(*pending);
  timing.phases.push_back({"interpolation", interpolation_ms / 1000.0});
  timing.phases.push_back({"short_range", short_ms / 1000.0});
  for (const PhaseTiming& phase : timing.phases) timing.kernel_seconds += phase.seconds;
  timing.wall_seconds = wall.seconds();
  timing.parts.push_back(
      WorkerTiming{options.device, timing.device, timing.kernel_seconds, timing.wall_seconds, p.nz, slab_index});
  return timing;
}

msm::LevelGrids<float> msm_level_grids(const DcsProblem& p, const Plan& plan, int device) {
  check_problem(p);
  DeviceGuard guard(device);
  msm::LevelGrids<float> out;
  if (plan.levels.empty()) return out;
  DeviceState st;
  Stream stream;
  std::array<Event, 7> marks;
  grid_phases(p, plan, st, stream.get(), marks);
  const auto copy = [&](std::vector<DeviceBuffer<float>>& from, std::vector<std::vector<float>>& to) {
    for (const DeviceBuffer<float>& level : from) {
      to.emplace_back(level.size());
      ESPGRID_CUDA_CHECK(cudaMemcpy(to.back().data(), level.get(), level.bytes(), cudaMemcpyDeviceToHost));
    }
  };
  copy(st.charge, out.charge);
  copy(st.direct, out.direct);
  copy(st.potential, out.potential);
  return out;
}

void msm_map_parts(const DcsProblem& p, const Plan& plan, int device, float* long_range, float* short_range) {
  check_problem(p);
  DeviceGuard guard(device);
  if (plan.levels.empty()) {
    std::fill(long_range, long_range + p.point_count(), 0.0f);
    std::fill(short_range, short_range + p.point_count(), 0.0f);
    return;
  }
  DeviceState st;
  const int planes = static_cast<int>(p.nz);
  DeviceBuffer<float> slab(p.point_count(), "potential slab");
  DeviceBuffer<float> contracted(
      static_cast<std::size_t>(plan.levels[0].grid.n[0] * plan.levels[0].grid.n[1]) * static_cast<std::size_t>(planes),
      "MSM contracted planes");
  Stream stream;  // after the buffers: its destructor waits for the work on them
  std::array<Event, 7> marks;
  upload_axis_tables(p, plan, st, stream.get());
  grid_phases(p, plan, st, stream.get(), marks);
  queue_slab(p, plan, st, 0, planes, slab.get(), contracted.get(), stream.get(), nullptr, true, false);
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(long_range, slab.get(), slab.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  queue_slab(p, plan, st, 0, planes, slab.get(), contracted.get(), stream.get(), nullptr, false, true);
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(short_range, slab.get(), slab.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
}

}  // namespace espgrid::cuda
