// cuda-msm's map phases, per slab of z-planes (two streams, two buffers, copies overlapping the
// next slab; kernels/msm.cu drives them):
//
//   interpolation  e_1 contracted along z per map plane, then 2-D taps per map point
//   short range    8×8×8-point tiles: the cell rows within the cutoff of the tile, their atoms
//                  staged through shared memory, four z-points per thread
#include <cub/block/block_scan.cuh>

#include "kernels/device_common.cuh"
#include "kernels/msm_device.cuh"

namespace espgrid::cuda::msm_gpu {
namespace {

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

struct ShortRangeArgs {
  int nx, ny;   ///< the map's extent
  int k_first;  ///< map z index (z_offset included) of the slab's plane 0
  int planes;   ///< planes in the slab
  float hx, hy, hz;
  float cutoff, cutoff2, inv_cutoff, inv_cutoff2;
  float soft2;  ///< softening², Å²
  int order;
  PairParameters pair;  ///< the model's parameters (κ for Debye)
  float smooth[4];      ///< other kernels than Coulomb: g_a's Taylor coefficients in r² − a² (msm_math.h)
  float cell;           ///< Å
  DevBox cells;
};

/// Distance from the interval [lo, hi] to the cell [c·size, (c+1)·size), Å.
__device__ __forceinline__ float interval_gap(float lo, float hi, int c, float size) {
  const float cell_lo = static_cast<float>(c) * size, cell_hi = cell_lo + size;
  return hi < cell_lo ? cell_lo - hi : (lo > cell_hi ? lo - cell_hi : 0.0f);
}

/// Adds Σ_{|r − r_i| < a} q_i (f(√(r² + ε²)) − g_a(r)) to every map point of the slab, f the
/// model's (Evaluator: Coulomb keeps its γ formula, the others use g_a's polynomial). Each block
/// takes an 8×8×8 tile; its candidates are the atoms of the cell rows (cy, cz) within the
/// cutoff of the tile's box, x-ranges narrowed to the cutoff, in (cz, cy, sorted-atom) order:
/// every point sums its atoms in that one global order, whatever the tiling.
template <class Evaluator>
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
          float term;
          if constexpr (Evaluator::model == PairModel::Coulomb) {
            const float smooth = msm::gamma_inside(r2 * a.inv_cutoff2, a.order) * a.inv_cutoff;
            term = p.w * (rsqrtf(r2 + a.soft2) - smooth);
          } else {
            term = Evaluator::template term<DeviceMath>(p.w, r2 + a.soft2, a.pair) -
                   p.w * msm::softened_inside(r2 - a.cutoff2, a.smooth);
          }
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

}  // namespace

/// The map-axis weight tables (double on the host, float on the device), for x, y and every
/// plane of the problem along z.
void upload_axis_tables(const GridSumProblem& p, const Plan& plan, DeviceState& st, cudaStream_t stream) {
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

/// Queues the interpolation (writing the slab) and the short range (adding to it) of planes
/// [k0, k0 + planes) of the problem on `stream`; `contracted` holds planes level-1 planes.
void queue_slab(const GridSumProblem& p, const Plan& plan, const DeviceState& st, std::int64_t k0, int planes,
                float* slab, float* contracted, cudaStream_t stream, const Event* between, bool long_range,
                bool short_range) {
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
  s.pair = p.pair;
  for (int n = 0; n < 4; ++n) s.smooth[n] = static_cast<float>(plan.softened_cutoff.c[n]);  // zeros for Coulomb
  const dim3 grid(static_cast<unsigned>(blocks_for(static_cast<std::size_t>(p.nx), kTile)),
                  static_cast<unsigned>(blocks_for(static_cast<std::size_t>(p.ny), kTile)),
                  static_cast<unsigned>(blocks_for(static_cast<std::size_t>(planes), kTile)));
  const dim3 block(kTile, kTile, kTile / kPointsPerThread);
  with_pair_potential_among<CoulombPotential, DistancePotential, DebyePotential>(p.model, [&](auto evaluator) {
    short_range_kernel<decltype(evaluator)><<<grid, block, 0, stream>>>(st.sorted.get(), st.cell_start.get(), s, slab);
  });
  ESPGRID_CUDA_CHECK_LAUNCH();
}

}  // namespace espgrid::cuda::msm_gpu
