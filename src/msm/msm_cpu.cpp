// The CPU MSM phases (see msm_cpu.h). Every sum runs in an order fixed by the atoms and the
// lattice (never by the threads or by which planes are asked for), so the map is the same on
// every run and a slab of planes equals the same planes of the whole map bit for bit:
// restriction and the level sums read only the "charged" boxes, which depend on the atoms alone.
#include "src/msm/msm_cpu.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/thread_count.h"
#include "src/msm/msm_cpu_vectors.h"
#include "src/msm/msm_math.h"

namespace espgrid::msm {
namespace {

constexpr int kMaxTaps = 6;  // 2·support_width for the quintic

std::int64_t floor_div2(std::int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }
std::int64_t ceil_div2(std::int64_t v) { return -floor_div2(-v); }

std::vector<double> restriction_weights(int order) {
  const int rw = restriction_width(order);
  std::vector<double> w(static_cast<std::size_t>(2 * rw + 1));
  for (int j = -rw; j <= rw; ++j) w[static_cast<std::size_t>(j + rw)] = restriction_weight(j, order);
  return w;
}

void anterpolate(const GridSumProblem& p, const Plan& plan, std::vector<double>& q1) {
  const GridBox& box = plan.levels[0].grid;
  q1.assign(box.points(), 0.0);
  const double h = plan.params.spacing;
  const int taps = 2 * plan.support;
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const double c[3] = {p.x[a], p.y[a], p.z[a]};
    double w[3][kMaxTaps];
    std::int64_t first[3];
    for (int d = 0; d < 3; ++d) {
      const std::int64_t m = lattice_floor(c[d], h);
      first[d] = m - (plan.support - 1);
      point_weights(c[d] / h - static_cast<double>(m), plan.order, w[d]);
    }
    const double q = p.q[a];
    for (int kz = 0; kz < taps; ++kz)
      for (int ky = 0; ky < taps; ++ky) {
        const double qzy = q * w[2][kz] * w[1][ky];
        double* row = &q1[box.index(first[0], first[1] + ky, first[2] + kz)];
        for (int kx = 0; kx < taps; ++kx) row[kx] += qzy * w[0][kx];
      }
  }
}

/// One restriction (fine → coarse) or prolongation (coarse → fine) pass (msm_plan.h), in double:
/// each output element sums its taps in ascending order, skipping zero weights and input
/// elements outside the pass's range, as the CUDA kernels do in float.
void apply_pass(const AxisPass& p, bool restriction, const std::vector<double>& w, int rw, const double* in,
                double* out) {
  const auto axis = static_cast<std::size_t>(p.axis);
  std::array<std::int64_t, 3> o{};
  for (o[2] = 0; o[2] < p.out_n[2]; ++o[2])
    for (o[1] = 0; o[1] < p.out_n[1]; ++o[1])
      for (o[0] = 0; o[0] < p.out_n[0]; ++o[0]) {
        std::size_t base = p.in_offset;
        for (std::size_t d = 0; d < 3; ++d)
          if (d != axis) base += static_cast<std::size_t>(o[d]) * p.in_stride[d];
        const std::int64_t m = p.out_first + o[axis];
        double sum = 0;
        const auto tap = [&](double weight, std::int64_t f) {
          if (weight == 0 || f < 0 || f >= p.in_count) return;
          sum += weight * in[base + static_cast<std::size_t>(f) * p.in_stride[axis]];
        };
        if (restriction) {
          for (int j = -rw; j <= rw; ++j) tap(w[static_cast<std::size_t>(j + rw)], 2 * m + j - p.in_first);
        } else {
          for (std::int64_t n = ceil_div2(m - rw); n <= floor_div2(m + rw); ++n)
            tap(w[static_cast<std::size_t>(m - 2 * n + rw)], n - p.in_first);
        }
        const std::size_t at = p.out_offset + static_cast<std::size_t>(o[0]) * p.out_stride[0] +
                               static_cast<std::size_t>(o[1]) * p.out_stride[1] +
                               static_cast<std::size_t>(o[2]) * p.out_stride[2];
        out[at] = p.accumulate ? out[at] + sum : sum;
      }
}

/// in → scratch 1 → scratch 2 → out through the three passes.
void three_passes(const std::array<AxisPass, 3>& passes, bool restriction, int order, const double* in, double* out) {
  const int rw = restriction_width(order);
  const std::vector<double> w = restriction_weights(order);
  std::vector<double> t1(passes[0].points()), t2(passes[1].points());
  apply_pass(passes[0], restriction, w, rw, in, t1.data());
  apply_pass(passes[1], restriction, w, rw, t1.data(), t2.data());
  apply_pass(passes[2], restriction, w, rw, t2.data(), out);
}

/// q_{l+1} on coarse.grid from q_l on fine.grid, reading only fine.charged and writing only
/// coarse.charged (the rest stays zero), one axis at a time.
void restrict_level(const Level& fine, const std::vector<double>& qf, const Level& coarse, int order,
                    std::vector<double>& qc) {
  qc.assign(coarse.grid.points(), 0.0);
  three_passes(restriction_passes(fine, coarse), true, order, qf.data(), qc.data());
}

/// e_l's own part on a non-top level: Σ_j K_l(j) q_l(m + j) over the stencil (for Coulomb
/// K_l = 2^-(l-1) K_1: plan.level_stencil and level_scale), clipped to the charged box.
void cutoff_sum(const Plan& plan, int l, const std::vector<double>& q, std::vector<double>& out, int team) {
  const Level& level = plan.levels[static_cast<std::size_t>(l)];
  const GridBox& g = level.grid;
  const GridBox& c = level.charged;
  const int r = plan.stencil_radius;
  const double scale = plan.level_scale(l);
  const double* stencil = plan.level_stencil(l);
  out.assign(g.points(), 0.0);
  // q with kLatticePadding zeros before and after each x row, for the vector rows (cutoff_row).
  const std::int64_t width = g.n[0] + 2 * kLatticePadding;
  std::vector<double> padded(static_cast<std::size_t>(width * g.n[1] * g.n[2]), 0.0);
  for (std::int64_t row = 0; row < g.n[1] * g.n[2]; ++row)
    std::copy_n(&q[static_cast<std::size_t>(row * g.n[0])], g.n[0],
                &padded[static_cast<std::size_t>(row * width + kLatticePadding)]);
  CutoffRow level_row;  // what every row of this level shares; each row sets its y, z and clipping
  level_row.stencil = stencil, level_row.row_extent = plan.stencil_row_extent.data(), level_row.radius = r;
  level_row.padded = padded.data(), level_row.width = width, level_row.ny = g.n[1], level_row.nx = g.n[0];
  level_row.charged_lo = c.lo[0] - g.lo[0], level_row.charged_hi = c.lo[0] + c.n[0] - 1 - g.lo[0];
  level_row.scale = scale;
  const std::int64_t rows = g.n[1] * g.n[2];
#pragma omp parallel for num_threads(team) schedule(dynamic, 4)
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t my = g.lo[1] + row % g.n[1];
    const std::int64_t mz = g.lo[2] + row / g.n[1];
    const std::int64_t jz0 = std::max<std::int64_t>(-r, c.lo[2] - mz),
                       jz1 = std::min<std::int64_t>(r, c.lo[2] + c.n[2] - 1 - mz);
    const std::int64_t jy0 = std::max<std::int64_t>(-r, c.lo[1] - my),
                       jy1 = std::min<std::int64_t>(r, c.lo[1] + c.n[1] - 1 - my);
    CutoffRow vector_row = level_row;
    vector_row.y = my - g.lo[1], vector_row.z = mz - g.lo[2];
    vector_row.jy0 = jy0, vector_row.jy1 = jy1, vector_row.jz0 = jz0, vector_row.jz1 = jz1;
    if (cutoff_row(vector_row, &out[g.index(g.lo[0], my, mz)])) continue;
    for (std::int64_t mx = g.lo[0]; mx < g.lo[0] + g.n[0];
         ++mx) {  // without Highway: the same sums, one point at a time
      double sum = 0;
      for (std::int64_t jz = jz0; jz <= jz1; ++jz)
        for (std::int64_t jy = jy0; jy <= jy1; ++jy) {
          const int extent = plan.row_extent(static_cast<int>(jy), static_cast<int>(jz));
          const std::int64_t jx0 = std::max<std::int64_t>(-extent, c.lo[0] - mx);
          const std::int64_t jx1 = std::min<std::int64_t>(extent, c.lo[0] + c.n[0] - 1 - mx);
          if (jx0 > jx1) continue;
          const double* k =
              &stencil[static_cast<std::size_t>((jx0 + r) + (2 * r + 1) * ((jy + r) + (2 * r + 1) * (jz + r)))];
          const double* qs = &q[g.index(mx + jx0, my + jy, mz + jz)];
          for (std::int64_t j = 0; j <= jx1 - jx0; ++j) sum += k[j] * qs[j];
        }
      out[g.index(mx, my, mz)] = sum * scale;
    }
  }
}

/// The top level: all pairs of g_{a_L}, from every grid point to every charged point.
void top_sum(const Plan& plan, const std::vector<double>& q, std::vector<double>& out, int team) {
  const int l = plan.level_count() - 1;
  const Level& level = plan.levels[static_cast<std::size_t>(l)];
  const GridBox& g = level.grid;
  const GridBox& c = level.charged;
  const std::vector<double> kernel = top_kernel_table(plan);
  out.assign(g.points(), 0.0);
  const std::int64_t rows = g.n[1] * g.n[2];
#pragma omp parallel for num_threads(team) schedule(dynamic, 4)
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t my = g.lo[1] + row % g.n[1];
    const std::int64_t mz = g.lo[2] + row / g.n[1];
    for (std::int64_t mx = g.lo[0]; mx < g.lo[0] + g.n[0]; ++mx) {
      double sum = 0;
      for (std::int64_t nz = c.lo[2]; nz < c.lo[2] + c.n[2]; ++nz)
        for (std::int64_t ny = c.lo[1]; ny < c.lo[1] + c.n[1]; ++ny) {
          const std::int64_t dyz2 = (my - ny) * (my - ny) + (mz - nz) * (mz - nz);
          const double* qs = &q[g.index(c.lo[0], ny, nz)];
          for (std::int64_t nx = 0; nx < c.n[0]; ++nx) {
            const std::int64_t dx = mx - (c.lo[0] + nx);
            sum += kernel[static_cast<std::size_t>(dx * dx + dyz2)] * qs[nx];
          }
        }
      out[g.index(mx, my, mz)] = sum;
    }
  }
}

/// e_l += prolongation of e_{l+1} (the transpose of restriction), one axis at a time.
void prolong_level(const Level& coarse, const std::vector<double>& ec, const Level& fine, int order,
                   std::vector<double>& ef) {
  three_passes(prolongation_passes(coarse, fine), false, order, ec.data(), ef.data());
}

/// Distance from coordinate v to the cell [c·size, (c+1)·size), Å.
inline double distance_to_cell(double v, std::int64_t c, double size) {
  const double lo = static_cast<double>(c) * size, hi = lo + size;
  return v < lo ? lo - v : (v > hi ? v - hi : 0.0);
}

/// The short range along one map row (points x = i·hx, i < nx, at y, z), added into `out`
/// (zeroed by the caller, kShortRangePadding doubles longer than the row). For each row of
/// cells within the cutoff of the map row, each atom in it adds its term to the run of points
/// it reaches, so only pairs within the cutoff are visited and the cell search is paid once a
/// row, not once a point (a small molecule in a large box spent 1.2 s of 1.5 s there;
/// benchmarks/NOTES.md). Each point still receives its terms in the order of the cells (z, then
/// y, then x) and of the atoms in them, whatever the threads or the slab.
void short_range_row(const GridSumProblem& p, const Plan& plan, const BinnedAtoms& atoms, double y, double z,
                     double* out) {
  const double a = plan.params.cutoff, a2 = a * a, inv_a = 1.0 / a, inv_a2 = inv_a * inv_a;
  const double size = plan.cell;
  const double soft2 = p.softening2;
  const double hx = static_cast<double>(p.hx);
  const std::int64_t last = p.nx - 1;
  const GridBox& cells = plan.cells;
  const std::int64_t cz0 = std::max(cells.lo[2], lattice_floor(z - a, size));
  const std::int64_t cz1 = std::min(cells.lo[2] + cells.n[2] - 1, lattice_floor(z + a, size));
  const std::int64_t cy0 = std::max(cells.lo[1], lattice_floor(y - a, size));
  const std::int64_t cy1 = std::min(cells.lo[1] + cells.n[1] - 1, lattice_floor(y + a, size));
  // Cells along x that reach any point of the row, [-a, x_last + a].
  const std::int64_t cx0 = std::max(cells.lo[0], lattice_floor(-a, size));
  const std::int64_t cx1 =
      std::min(cells.lo[0] + cells.n[0] - 1, lattice_floor(static_cast<double>(last) * hx + a, size));
  if (cx0 > cx1) return;
  const bool coulomb = plan.kernel.coulomb();
  const double* c = plan.softened_cutoff.c;  // g_a's polynomial (kernels other than Coulomb)
  ShortRangeKernel vectorized;               // Coulomb and distance in vectors where Highway is built in
  vectorized.hx = hx, vectorized.a2 = a2, vectorized.inv_a = inv_a, vectorized.inv_a2 = inv_a2;
  vectorized.softening2 = soft2, vectorized.order = plan.order, vectorized.softened = c;
  vectorized.power = plan.kernel.power, vectorized.kappa = plan.kernel.kappa;
  const double* ax = atoms.x.data();
  const double* ay = atoms.y.data();
  const double* az = atoms.z.data();
  const double* aq = atoms.q.data();
  for (std::int64_t cz = cz0; cz <= cz1; ++cz) {
    const double dz_min = distance_to_cell(z, cz, size);
    for (std::int64_t cy = cy0; cy <= cy1; ++cy) {
      const double dy_min = distance_to_cell(y, cy, size);
      if (a2 - dz_min * dz_min - dy_min * dy_min <= 0) continue;
      const std::size_t begin = atoms.cell_start[cells.index(cx0, cy, cz)];
      const std::size_t end = atoms.cell_start[cells.index(cx1, cy, cz) + 1];
      for (std::size_t t = begin; t < end; ++t) {
        const double dy = y - ay[t], dz = z - az[t];
        const double dy2 = dy * dy, dz2 = dz * dz;
        // r2 below is at least dy² + dz² in floating point too (rounding is monotonic).
        const double across2 = dy2 + dz2;
        if (across2 >= a2) continue;
        // The points within the cutoff along x, one more each side: the test below decides.
        const double half = std::sqrt(a2 - across2);
        const std::int64_t i0 =
            std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor((ax[t] - half) / hx)) - 1);
        const std::int64_t i1 =
            std::min<std::int64_t>(last, static_cast<std::int64_t>(std::ceil((ax[t] + half) / hx)) + 1);
        const double x_atom = ax[t], q = aq[t];
        if (add_short_range_run(vectorized, x_atom, dy2, dz2, q, i0, i1, out)) continue;
        if (coulomb) {
          for (std::int64_t i = i0; i <= i1; ++i) {
            const double dx = static_cast<double>(i) * hx - x_atom;
            const double r2 = dx * dx + dy2 + dz2;
            if (r2 < a2) out[i] += q * (1.0 / std::sqrt(r2 + soft2) - gamma_inside(r2 * inv_a2, plan.order) * inv_a);
          }
        } else {
          for (std::int64_t i = i0; i <= i1; ++i) {
            const double dx = static_cast<double>(i) * hx - x_atom;
            const double r2 = dx * dx + dy2 + dz2;
            if (r2 < a2) out[i] += q * (kernel_value(r2 + soft2, plan.kernel) - softened_inside(r2 - a2, c));
          }
        }
      }
    }
  }
}

/// Planes [k0, k0 + count) of the map, in one parallel region: the long range (e_1 contracted
/// along z into one level-1 plane per map plane, then along y per row, then along x per point)
/// into `long_out` and the short range into `short_out` (count·nx·ny doubles each). The wall
/// time of each half is added to the two counters.
void map_chunk(const GridSumProblem& p, const Plan& plan, const std::vector<double>& e1, const BinnedAtoms& atoms,
               const AxisWeights& wx, const AxisWeights& wy, std::int64_t k0, std::int64_t count, double* long_out,
               double* short_out, int team, double& interpolation_seconds, double& short_seconds) {
  const GridBox& g = plan.levels[0].grid;
  const AxisWeights wz = axis_weights(plan, count, p.z_offset + k0, p.hz);
  const std::size_t level_plane = static_cast<std::size_t>(g.n[0] * g.n[1]);
  const std::size_t map_plane = p.plane_points();
  std::vector<double> contracted(level_plane * static_cast<std::size_t>(count));
  Stopwatch clock;
#pragma omp parallel num_threads(team)
  {
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < count * g.n[1]; ++r) {
      const std::int64_t c = r / g.n[1], y = r % g.n[1];
      const double* w = &wz.w[static_cast<std::size_t>(c) * wz.taps];
      for (std::int64_t x = 0; x < g.n[0]; ++x) {
        double sum = 0;
        for (int t = 0; t < wz.taps; ++t)
          sum += w[t] * e1[g.index(g.lo[0] + x, g.lo[1] + y, wz.first[static_cast<std::size_t>(c)] + t)];
        contracted[level_plane * static_cast<std::size_t>(c) + static_cast<std::size_t>(x + g.n[0] * y)] = sum;
      }
    }
    std::vector<double> row(static_cast<std::size_t>(g.n[0]));
    std::vector<double> padded_row(static_cast<std::size_t>(p.nx + kShortRangePadding));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < count * p.ny; ++r) {
      const std::int64_t c = r / p.ny, j = r % p.ny;
      const double* plane = &contracted[level_plane * static_cast<std::size_t>(c)];
      const std::int64_t y0 = wy.first[static_cast<std::size_t>(j)] - g.lo[1];
      const double* w = &wy.w[static_cast<std::size_t>(j) * wy.taps];
      for (std::int64_t x = 0; x < g.n[0]; ++x) {
        double sum = 0;
        for (int b = 0; b < wy.taps; ++b) sum += w[b] * plane[static_cast<std::size_t>(x + g.n[0] * (y0 + b))];
        row[static_cast<std::size_t>(x)] = sum;
      }
      double* out = long_out + map_plane * static_cast<std::size_t>(c) + static_cast<std::size_t>(p.nx * j);
      for (std::int64_t i = 0; i < p.nx; ++i) {
        const std::int64_t x0 = wx.first[static_cast<std::size_t>(i)] - g.lo[0];
        const double* wi = &wx.w[static_cast<std::size_t>(i) * wx.taps];
        double sum = 0;
        for (int a = 0; a < wx.taps; ++a) sum += wi[a] * row[static_cast<std::size_t>(x0 + a)];
        out[i] = sum;
      }
    }
#pragma omp single
    {
      interpolation_seconds += clock.seconds();
      clock.restart();
    }
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t r = 0; r < count * p.ny; ++r) {
      const std::int64_t c = r / p.ny, j = r % p.ny;
      const double z = static_cast<double>(p.z_offset + k0 + c) * static_cast<double>(p.hz);
      const double y = static_cast<double>(j) * static_cast<double>(p.hy);
      double* out = short_out + map_plane * static_cast<std::size_t>(c) + static_cast<std::size_t>(p.nx * j);
      std::fill(padded_row.begin(), padded_row.end(), 0.0);
      short_range_row(p, plan, atoms, y, z, padded_row.data());
      std::copy(padded_row.begin(), padded_row.begin() + p.nx, out);
    }
  }
  short_seconds += clock.seconds();
}

/// Planes per parallel region: few enough barriers, a small contracted-plane buffer.
constexpr std::int64_t kChunkPlanes = 8;

void add_phase(std::vector<PhaseTiming>* phases, const char* name, double seconds) {
  if (!phases) return;
  for (PhaseTiming& t : *phases)
    if (t.name == name) {
      t.seconds += seconds;
      return;
    }
  phases->push_back({name, seconds});
}

}  // namespace

BinnedAtoms bin_atoms(const GridSumProblem& p, const Plan& plan) {
  BinnedAtoms out;
  const GridBox& cells = plan.cells;
  out.cell_start.assign(cells.points() + 1, 0);
  if (p.atom_count == 0 || plan.levels.empty()) return out;
  std::vector<std::size_t> cell_of(p.atom_count);
  for (std::size_t a = 0; a < p.atom_count; ++a) {
    const std::int64_t c[3] = {lattice_floor(p.x[a], plan.cell), lattice_floor(p.y[a], plan.cell),
                               lattice_floor(p.z[a], plan.cell)};
    if (!cells.contains(c[0], c[1], c[2])) throw Error("internal error: MSM atom outside the plan's cells");
    cell_of[a] = cells.index(c[0], c[1], c[2]);
    ++out.cell_start[cell_of[a] + 1];
  }
  for (std::size_t c = 0; c < cells.points(); ++c) out.cell_start[c + 1] += out.cell_start[c];
  std::vector<std::size_t> next(out.cell_start.begin(), out.cell_start.end() - 1);
  out.x.resize(p.atom_count);
  out.y.resize(p.atom_count);
  out.z.resize(p.atom_count);
  out.q.resize(p.atom_count);
  for (std::size_t a = 0; a < p.atom_count; ++a) {  // stable: file order within a cell
    const std::size_t t = next[cell_of[a]]++;
    out.x[t] = p.x[a];
    out.y[t] = p.y[a];
    out.z[t] = p.z[a];
    out.q[t] = p.q[a];
  }
  return out;
}

LevelGrids<double> cpu_level_grids(const GridSumProblem& p, const Plan& plan, int threads,
                                   std::vector<PhaseTiming>* phases) {
  LevelGrids<double> g;
  const int levels = plan.level_count();
  if (levels == 0) return g;
  const int team = threads_to_use(threads);
  g.charge.resize(static_cast<std::size_t>(levels));
  g.direct.resize(static_cast<std::size_t>(levels));
  g.potential.resize(static_cast<std::size_t>(levels));
  Stopwatch clock;
  anterpolate(p, plan, g.charge[0]);
  add_phase(phases, "anterpolation", clock.seconds());
  clock.restart();
  for (int l = 0; l + 1 < levels; ++l)
    restrict_level(plan.levels[static_cast<std::size_t>(l)], g.charge[static_cast<std::size_t>(l)],
                   plan.levels[static_cast<std::size_t>(l + 1)], plan.order, g.charge[static_cast<std::size_t>(l + 1)]);
  add_phase(phases, "restriction", clock.seconds());
  clock.restart();
  for (int l = 0; l + 1 < levels; ++l)
    cutoff_sum(plan, l, g.charge[static_cast<std::size_t>(l)], g.direct[static_cast<std::size_t>(l)], team);
  add_phase(phases, "cutoff", clock.seconds());
  clock.restart();
  top_sum(plan, g.charge.back(), g.direct.back(), team);
  add_phase(phases, "top", clock.seconds());
  clock.restart();
  g.potential.back() = g.direct.back();
  for (int l = levels - 2; l >= 0; --l) {
    g.potential[static_cast<std::size_t>(l)] = g.direct[static_cast<std::size_t>(l)];
    prolong_level(plan.levels[static_cast<std::size_t>(l + 1)], g.potential[static_cast<std::size_t>(l + 1)],
                  plan.levels[static_cast<std::size_t>(l)], plan.order, g.potential[static_cast<std::size_t>(l)]);
  }
  add_phase(phases, "prolongation", clock.seconds());
  return g;
}

void cpu_map_parts(const GridSumProblem& p, const Plan& plan, const LevelGrids<double>& grids, const BinnedAtoms& atoms,
                   double* long_range, double* short_range, int threads) {
  const std::size_t plane = p.plane_points();
  if (plan.levels.empty()) {
    std::fill(long_range, long_range + p.point_count(), 0.0);
    std::fill(short_range, short_range + p.point_count(), 0.0);
    return;
  }
  const AxisWeights wx = axis_weights(plan, p.nx, 0, p.hx);
  const AxisWeights wy = axis_weights(plan, p.ny, 0, p.hy);
  double unused_a = 0, unused_b = 0;
  for (std::int64_t k = 0; k < p.nz; k += kChunkPlanes) {
    const std::int64_t count = std::min(kChunkPlanes, p.nz - k);
    map_chunk(p, plan, grids.potential[0], atoms, wx, wy, k, count, long_range + plane * static_cast<std::size_t>(k),
              short_range + plane * static_cast<std::size_t>(k), threads_to_use(threads), unused_a, unused_b);
  }
}

ComputeTiming cpu_compute(const GridSumProblem& p, const Plan& plan, int threads, const ProgressFn& progress,
                          const PlanesDoneFn& planes_done) {
  const Stopwatch wall;
  ComputeTiming timing;
  const std::size_t plane = p.plane_points();
  if (plan.levels.empty()) {  // no atoms: the map is zero
    std::fill(p.potential, p.potential + p.point_count(), 0.0f);
    if (planes_done && p.nz > 0) planes_done(0, p.nz);
    if (progress && p.nz > 0) progress(static_cast<std::size_t>(p.nz), static_cast<std::size_t>(p.nz));
    timing.kernel_seconds = timing.wall_seconds = wall.seconds();
    return timing;
  }
  const int team = threads_to_use(threads);
  Stopwatch clock;
  const BinnedAtoms atoms = bin_atoms(p, plan);
  timing.phases.push_back({"binning", clock.seconds()});
  const LevelGrids<double> grids = cpu_level_grids(p, plan, team, &timing.phases);
  const AxisWeights wx = axis_weights(plan, p.nx, 0, p.hx);
  const AxisWeights wy = axis_weights(plan, p.ny, 0, p.hy);
  std::vector<double> long_range(plane * static_cast<std::size_t>(std::min(kChunkPlanes, p.nz)));
  std::vector<double> short_range(long_range.size());
  double interpolation = 0, short_seconds = 0;
  for (std::int64_t k = 0; k < p.nz; k += kChunkPlanes) {
    const std::int64_t count = std::min(kChunkPlanes, p.nz - k);
    map_chunk(p, plan, grids.potential[0], atoms, wx, wy, k, count, long_range.data(), short_range.data(), team,
              interpolation, short_seconds);
    float* out = p.potential + plane * static_cast<std::size_t>(k);
    for (std::size_t n = 0; n < plane * static_cast<std::size_t>(count); ++n)
      out[n] = static_cast<float>(long_range[n] + short_range[n]);
    if (planes_done) planes_done(k, count);
    if (progress) progress(static_cast<std::size_t>(k + count), static_cast<std::size_t>(p.nz));
  }
  timing.phases.push_back({"interpolation", interpolation});
  timing.phases.push_back({"short_range", short_seconds});
  timing.kernel_seconds = timing.wall_seconds = wall.seconds();
  return timing;
}

}  // namespace espgrid::msm
