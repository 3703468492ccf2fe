// cuda-msm's grid phases, every one on the GPU in float on the host's plan
// (src/msm/msm_plan.h), each mirroring its CPU phase (src/msm/msm_cpu.cpp) and summing in
// an order fixed by the atoms and the lattice, never by the launch (no atomics):
//
//   binning        cell key per atom, stable radix sort (CUB), atoms gathered in cell order,
//                  each cell's first atom by binary search
//   anterpolation  one thread per level-1 point of the charged box: Σ q φφφ over the atoms of
//                  the 2·support cells per axis that touch it
//   restriction    one axis at a time: the three passes of msm::restriction_passes
//   cutoff         one thread per level point: the clipped stencil (Coulomb: K_1 table, ×2^-(l-1);
//                  other kernels: the level's own table)
//   top            one thread per top point: all charged points of the top level, g_{a_L} in float
//   prolongation   one axis at a time: the three passes of msm::prolongation_passes, added to
//                  the level's own sum
#include <cub/device/device_radix_sort.cuh>

#include "kernels/msm_device.cuh"

namespace espgrid::cuda::msm_gpu {
namespace {

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

/// Restriction: out(n) = Σ_j w_j in(2n + j), j ascending, over the input's elements.
__global__ void restrict_axis_kernel(const float* __restrict__ in, float* __restrict__ out, DevPass p, Weights w) {
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
__global__ void prolong_axis_kernel(const float* __restrict__ in, float* __restrict__ out, DevPass p, Weights w) {
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
  float scale;  ///< Plan::level_scale: 2^-(l-1) for Coulomb (level 1's table), else 1 (the level's own)
};

/// e_l(m) = scale·Σ_j K(j) q_l(m + j) (K: Plan::level_stencil), j over the stencil clipped to the charged box, in the
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
  /// Other kernels than Coulomb: g_{a_L} by squared lattice distance (built in double on the
  /// host, as the CPU's top_sum does); null for Coulomb, whose γ is evaluated here.
  const float* by_distance2;
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
      if (t.by_distance2) {
        const int dyz = (y - ny) * (y - ny) + (z - nz) * (z - nz);
        for (int nx = 0; nx < c.n[0]; ++nx) {
          const int dx = x - (c.lo[0] + nx);
          sum = fmaf(qs[nx], t.by_distance2[dx * dx + dyz], sum);
        }
        continue;
      }
      for (int nx = 0; nx < c.n[0]; ++nx) {
        const float dx = static_cast<float>(x - (c.lo[0] + nx));
        const float rho2 = t.h2 * fmaf(dx, dx, dyz2) * t.inv_a2;
        const float gamma = rho2 < 1.0f ? msm::gamma_inside(rho2, t.order) : rsqrtf(rho2);
        sum = fmaf(qs[nx], gamma * t.inv_a, sum);
      }
    }
  out[idx] = sum;
}

/// The binning's buffers: the atoms' staging, keys and atom indices before and after the radix
/// sort, its scratch.
struct Binning {
  PinnedBuffer<float4> staging;
  DeviceBuffer<unsigned> keys, keys_sorted, order, order_sorted;
  DeviceBuffer<unsigned char> temp;
  std::size_t temp_bytes = 0;
  int bits = 1;
};

/// Allocates every buffer the grid phases use and uploads the atoms: the events then time the
/// kernels alone.
void allocate(const GridSumProblem& p, const Plan& plan, DeviceState& st, Binning& bin, cudaStream_t stream) {
  const std::size_t cell_count = plan.cells.points();
  if (cell_count >= std::size_t{UINT_MAX}) throw UsageError("too many MSM cells for cuda-msm");
  bin.staging = PinnedBuffer<float4>(p.atom_count, "atoms (staging)");
  for (std::size_t i = 0; i < p.atom_count; ++i) bin.staging.get()[i] = make_float4(p.x[i], p.y[i], p.z[i], p.q[i]);
  st.atoms = DeviceBuffer<float4>(p.atom_count, "atoms");
  st.sorted = DeviceBuffer<float4>(p.atom_count, "atoms sorted by cell");
  ESPGRID_CUDA_CHECK(
      cudaMemcpyAsync(st.atoms.get(), bin.staging.get(), st.atoms.bytes(), cudaMemcpyHostToDevice, stream));
  bin.keys = DeviceBuffer<unsigned>(p.atom_count, "cell keys");
  bin.keys_sorted = DeviceBuffer<unsigned>(p.atom_count, "cell keys (sorted)");
  bin.order = DeviceBuffer<unsigned>(p.atom_count, "atom order");
  bin.order_sorted = DeviceBuffer<unsigned>(p.atom_count, "atom order (sorted)");
  while (bin.bits < 32 && (std::size_t{1} << bin.bits) <= cell_count) ++bin.bits;
  ESPGRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bin.temp_bytes, bin.keys.get(), bin.keys_sorted.get(),
                                                     bin.order.get(), bin.order_sorted.get(),
                                                     static_cast<int>(p.atom_count), 0, bin.bits, stream));
  bin.temp = DeviceBuffer<unsigned char>(std::max<std::size_t>(bin.temp_bytes, 1), "radix sort scratch");
  st.cell_start = DeviceBuffer<unsigned>(cell_count + 1, "cell starts");
  st.charge.clear();
  st.direct.clear();
  st.potential.clear();
  for (int l = 0; l < plan.level_count(); ++l) {
    const std::size_t points = plan.levels[static_cast<std::size_t>(l)].grid.points();
    const std::string level = " (level " + std::to_string(l + 1) + ")";
    st.charge.emplace_back(points, "MSM charges" + level);
    st.direct.emplace_back(points, "MSM level sums" + level);
    st.potential.emplace_back(points, "MSM potentials" + level);
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(st.charge.back().get(), 0, st.charge.back().bytes(), stream));
  }
}

/// Binning: a stable radix sort of (cell, atom index) pairs, the atoms gathered in that order.
void bin_atoms(const GridSumProblem& p, const Plan& plan, DeviceState& st, Binning& bin, cudaStream_t stream) {
  const int n = static_cast<int>(p.atom_count);
  const std::size_t cell_count = plan.cells.points();
  launch_linear(cell_keys_kernel, p.atom_count, stream, st.atoms.get(), n, static_cast<float>(plan.cell),
                dev_box(plan.cells), bin.keys.get(), bin.order.get());
  ESPGRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(bin.temp.get(), bin.temp_bytes, bin.keys.get(),
                                                     bin.keys_sorted.get(), bin.order.get(), bin.order_sorted.get(), n,
                                                     0, bin.bits, stream));
  launch_linear(gather_atoms_kernel, p.atom_count, stream, st.atoms.get(), bin.order_sorted.get(), n, st.sorted.get());
  launch_linear(cell_start_kernel, cell_count + 1, stream, bin.keys_sorted.get(), n, static_cast<unsigned>(cell_count),
                st.cell_start.get());
}

/// Three passes (msm_plan.h) through the scratch arrays t1 and t2: in → t1 → t2 → out.
template <class Kernel>
void three_passes(Kernel kernel, const std::array<msm::AxisPass, 3>& passes, const float* in, float* t1, float* t2,
                  float* out, const Weights& w, cudaStream_t stream) {
  const float* from[3] = {in, t1, t2};
  float* to[3] = {t1, t2, out};
  for (int i = 0; i < 3; ++i) {
    const msm::AxisPass& pass = passes[static_cast<std::size_t>(i)];
    launch_linear(kernel, pass.points(), stream, from[i], to[i], dev_pass(pass), w);
  }
}

/// Level l's own sum: the cutoff stencil below the top; all pairs at the top.
void level_sums(const Plan& plan, DeviceState& st, const Uploaded<float>& stencil, const Uploaded<int>& extent,
                const Uploaded<float>& top_table, cudaStream_t stream, std::array<Event, 7>& marks) {
  const int levels = plan.level_count();
  marks[3].record(stream);
  for (int l = 0; l + 1 < levels; ++l) {
    const msm::Level& level = plan.levels[static_cast<std::size_t>(l)];
    CutoffArgs c{dev_box(level.grid), dev_box(level.charged), plan.stencil_radius,
                 static_cast<float>(plan.level_scale(l))};
    const std::size_t offset = static_cast<std::size_t>(plan.level_stencil(l) - plan.stencil.data());
    launch_linear(cutoff_kernel, level.grid.points(), stream, st.charge[static_cast<std::size_t>(l)].get(),
                  stencil.device.get() + offset, extent.device.get(), c, st.direct[static_cast<std::size_t>(l)].get());
  }
  marks[4].record(stream);
  const int l = levels - 1;
  const msm::Level& top = plan.top();
  const double a_top = std::ldexp(plan.params.cutoff, l);
  TopArgs t{dev_box(top.grid),
            dev_box(top.charged),
            static_cast<float>(top.spacing * top.spacing),
            static_cast<float>(1.0 / a_top),
            static_cast<float>(1.0 / (a_top * a_top)),
            plan.order,
            top_table.device.get()};
  launch_linear(top_kernel, top.grid.points(), stream, st.charge.back().get(), t, st.direct.back().get());
}

}  // namespace

void grid_phases(const GridSumProblem& p, const Plan& plan, DeviceState& st, cudaStream_t stream,
                 std::array<Event, 7>& marks) {
  const int levels = plan.level_count();
  Binning bin;
  DeviceBuffer<float> t1, t2;
  Uploaded<float> d_stencil;
  Uploaded<int> d_extent;
  Uploaded<float> d_top_table;
  // Declared after every local buffer and before anything is queued: on an error, the queued
  // work is waited for before the buffers it reads are freed.
  const DrainOnExit drain{stream};
  allocate(p, plan, st, bin, stream);
  const std::size_t scratch_points = msm::pass_scratch_points(plan);
  t1 = DeviceBuffer<float>(scratch_points, "MSM pass scratch 1");
  t2 = DeviceBuffer<float>(scratch_points, "MSM pass scratch 2");
  d_stencil = upload<float>(std::vector<float>(plan.stencil.begin(), plan.stencil.end()), "MSM stencil", stream);
  d_extent = upload<int>(plan.stencil_row_extent, "MSM stencil rows", stream);
  if (!plan.kernel.coulomb()) d_top_table = upload<float>(msm::top_kernel_table(plan), "MSM top-level kernel", stream);
  const Weights w = restriction_weights(plan.order);

  marks[0].record(stream);
  bin_atoms(p, plan, st, bin, stream);

  marks[1].record(stream);
  const msm::Level& l1 = plan.levels[0];
  const AnterpolationArgs a{dev_box(l1.grid), dev_box(l1.charged), dev_box(plan.cells),
                            static_cast<float>(plan.params.spacing), plan.order};
  launch_linear(anterpolation_kernel, l1.charged.points(), stream, st.sorted.get(), st.cell_start.get(), a,
                st.charge[0].get());

  marks[2].record(stream);
  for (int l = 0; l + 1 < levels; ++l)
    three_passes(
        restrict_axis_kernel,
        msm::restriction_passes(plan.levels[static_cast<std::size_t>(l)], plan.levels[static_cast<std::size_t>(l + 1)]),
        st.charge[static_cast<std::size_t>(l)].get(), t1.get(), t2.get(),
        st.charge[static_cast<std::size_t>(l + 1)].get(), w, stream);

  level_sums(plan, st, d_stencil, d_extent, d_top_table, stream, marks);

  // Prolongation, top down, added to each level's own sum.
  marks[5].record(stream);
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(st.potential.back().get(), st.direct.back().get(), st.direct.back().bytes(),
                                     cudaMemcpyDeviceToDevice, stream));
  for (int l = levels - 2; l >= 0; --l) {
    const std::size_t fine = static_cast<std::size_t>(l), coarse = static_cast<std::size_t>(l + 1);
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(st.potential[fine].get(), st.direct[fine].get(), st.direct[fine].bytes(),
                                       cudaMemcpyDeviceToDevice, stream));
    three_passes(prolong_axis_kernel, msm::prolongation_passes(plan.levels[coarse], plan.levels[fine]),
                 st.potential[coarse].get(), t1.get(), t2.get(), st.potential[fine].get(), w, stream);
  }
  marks[6].record(stream);
  // The staging, scratch and sort buffers are freed when this returns: let the work finish first.
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace espgrid::cuda::msm_gpu
