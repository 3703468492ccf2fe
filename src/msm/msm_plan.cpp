#include "src/msm/msm_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/text_format.h"
#include "src/msm/msm_math.h"

namespace espgrid::msm {
namespace {

std::int64_t floor_div2(std::int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }
std::int64_t ceil_div2(std::int64_t v) { return -floor_div2(-v); }

/// Lattice indices [lo, hi] per axis.
struct Range {
  std::array<std::int64_t, 3> lo{}, hi{};
  GridBox box() const {
    GridBox b;
    for (int d = 0; d < 3; ++d) {
      b.lo[d] = lo[d];
      b.n[d] = hi[d] - lo[d] + 1;
    }
    return b;
  }
};

/// The lattice points the interpolant touches for positions in [min, max] (Å) per axis, one
/// point of margin on each side: the CUDA phases round positions in float, which may move a
/// position that lies on a cell boundary into the neighbouring cell.
Range touched(const std::array<double, 3>& min, const std::array<double, 3>& max, double h, int support) {
  Range r;
  for (int d = 0; d < 3; ++d) {
    r.lo[d] = lattice_floor(min[d], h) - (support - 1) - 1;
    r.hi[d] = lattice_floor(max[d], h) + support + 1;
  }
  return r;
}

/// The next level's range: every coarse point that restriction from (or prolongation to)
/// the fine range touches.
Range coarsen(const Range& fine, int restriction) {
  Range c;
  for (int d = 0; d < 3; ++d) {
    c.lo[d] = ceil_div2(fine.lo[d] - restriction);
    c.hi[d] = floor_div2(fine.hi[d] + restriction);
  }
  return c;
}

Range join(const Range& a, const Range& b) {
  Range r;
  for (int d = 0; d < 3; ++d) {
    r.lo[d] = std::min(a.lo[d], b.lo[d]);
    r.hi[d] = std::max(a.hi[d], b.hi[d]);
  }
  return r;
}

std::int64_t widest(const Range& r) {
  return std::max({r.hi[0] - r.lo[0] + 1, r.hi[1] - r.lo[1] + 1, r.hi[2] - r.lo[2] + 1});
}

void check_size(const GridBox& box, const MsmParameters& p, const char* what) {
  const double points = static_cast<double>(box.n[0]) * static_cast<double>(box.n[1]) * static_cast<double>(box.n[2]);
  const auto too_large = [&] {
    return "the MSM " + std::string(what) + " would have " + std::to_string(box.n[0]) + "x" + std::to_string(box.n[1]) +
           "x" + std::to_string(box.n[2]) + " points at spacing " + number_text(p.spacing) + " Å";
  };
  if (points > static_cast<double>(kMaxGridPoints))
    throw UsageError(too_large() + " (at most " + std::to_string(kMaxGridPoints) +
                     "): the atoms or the map span too much space for this spacing; use a coarser --msm-spacing or "
                     "an exact kernel");
  // The lattices are grids too: ESPGRID_MAX_GRID_POINTS (shared machines, CI, fuzzing) caps
  // them like the map. A lattice covers the map's box at h whatever the map's own spacing, so
  // a coarse map far from its atoms can need a lattice far larger than the map.
  if (const std::uint64_t limit = max_grid_points_from_environment(); limit != 0 && points > static_cast<double>(limit))
    throw UsageError(too_large() + ", over the limit of " + with_commas(limit) +
                     " points set by ESPGRID_MAX_GRID_POINTS; use a coarser --msm-spacing or an exact kernel");
}

}  // namespace

AxisWeights axis_weights(const Plan& plan, std::int64_t count, std::int64_t offset, float map_spacing) {
  AxisWeights out;
  const double h = plan.params.spacing;
  out.taps = 2 * plan.support;
  out.first.resize(static_cast<std::size_t>(count));
  out.w.resize(static_cast<std::size_t>(count) * static_cast<std::size_t>(out.taps));
  for (std::int64_t i = 0; i < count; ++i) {
    const double x = static_cast<double>(offset + i) * static_cast<double>(map_spacing);
    const std::int64_t m = lattice_floor(x, h);
    out.first[static_cast<std::size_t>(i)] = m - (plan.support - 1);
    point_weights(x / h - static_cast<double>(m), plan.order, &out.w[static_cast<std::size_t>(i) * out.taps]);
  }
  return out;
}

std::int64_t slab_planes(const GridSumProblem& p, const Plan& plan, std::size_t max_slab_bytes,
                         std::size_t free_bytes) {
  constexpr std::size_t kPipelineSlabBytes = std::size_t{64} << 20;
  const std::int64_t nz = std::max<std::int64_t>(p.nz, 1);
  // Per plane: two slab buffers and the level-1 plane each map plane is contracted into.
  const std::size_t slab_plane = sizeof(float) * p.plane_points();
  const std::size_t contracted =
      plan.levels.empty()
          ? 0
          : sizeof(float) * static_cast<std::size_t>(plan.levels[0].grid.n[0] * plan.levels[0].grid.n[1]);
  std::int64_t planes = nz;
  if (max_slab_bytes > 0) {
    planes = static_cast<std::int64_t>(max_slab_bytes / 2 / std::max<std::size_t>(slab_plane, 1));
  } else {
    // Slabs of ~64 MiB, not the largest that fit: the GPU computes one in a few ms, so the map
    // is ready as fast as it can be copied out, and small slabs let the copy to the host, the
    // copy into the map and the streamed file writing start after the first slab and overlap
    // the rest (one slab of a 3.3 GiB map kept all three waiting; its pinned staging alone took
    // most of a second to allocate).
    const std::size_t per_plane = 2 * slab_plane + 2 * contracted;
    const std::size_t budget = std::min(free_bytes / 4, 2 * kPipelineSlabBytes);
    if (per_plane * static_cast<std::size_t>(nz) > budget)
      planes = static_cast<std::int64_t>(budget / std::max<std::size_t>(per_plane, 1));
  }
  planes = std::clamp<std::int64_t>(planes, 1, std::min<std::int64_t>(nz, 65535));
  const std::int64_t slabs = (nz + planes - 1) / planes;
  return (nz + slabs - 1) / slabs;  // equal slabs
}

std::vector<double> top_kernel_table(const Plan& plan) {
  const int l = plan.level_count() - 1;
  if (l < 0) return {};
  const Level& level = plan.top();
  const GridBox& g = level.grid;
  const GridBox& c = level.charged;
  const double a_top = std::ldexp(plan.params.cutoff, l);
  std::int64_t span2 = 0;  // the largest squared lattice distance from a grid point to a charged one
  for (int d = 0; d < 3; ++d) {
    const std::int64_t span =
        std::max(std::abs(g.lo[d] + g.n[d] - 1 - c.lo[d]), std::abs(c.lo[d] + c.n[d] - 1 - g.lo[d]));
    span2 += span * span;
  }
  const SoftenedKernel g_top(plan.kernel, a_top, plan.order);
  std::vector<double> kernel(static_cast<std::size_t>(span2 + 1));
  for (std::int64_t d2 = 0; d2 <= span2; ++d2)
    kernel[static_cast<std::size_t>(d2)] = g_top(level.spacing * level.spacing * static_cast<double>(d2));
  return kernel;
}

std::int64_t lattice_floor(double x, double h) {
  const double v = std::floor(x / h);
  if (!(std::fabs(v) < 1e15)) throw Error("MSM: coordinate " + number_text(x) + " Å is out of range");
  return static_cast<std::int64_t>(v);
}

SplitKernel split_kernel(PairModel model, const PairParameters& pair) {
  switch (model) {
    case PairModel::Coulomb:
      return {1, 0.0};
    case PairModel::Distance:
      return {2, 0.0};
    case PairModel::Debye:
      return {1, static_cast<double>(pair.kappa)};  // the oracle's κ (DebyePotential::value)
  }
  throw Error("internal error: multilevel summation splits the coulomb, distance and debye models only");
}

namespace {

/// The cutoff stencils, in double: K_l(r) = g_{a_l}(r) − g_{2a_l}(r), zero from r = 2a_l on, the
/// same lattice offsets on every level. Coulomb needs level 1's alone (level_scale).
void fill_cutoff_stencils(Plan& plan) {
  const double h = plan.params.spacing;
  const double a = plan.params.cutoff;
  int radius = static_cast<int>(std::floor(2 * a / h));
  if (radius * h >= 2 * a) --radius;
  plan.stencil_radius = radius;
  const int w = 2 * radius + 1;
  const std::size_t table = static_cast<std::size_t>(w) * w * w;
  const int tables = plan.kernel.coulomb() ? 1 : std::max(1, plan.level_count() - 1);
  plan.stencil.assign(table * static_cast<std::size_t>(tables), 0.0);
  plan.stencil_row_extent.assign(static_cast<std::size_t>(w) * w, -1);
  for (int l = 0; l < tables; ++l) {
    const double hl = std::ldexp(h, l), al = std::ldexp(a, l);
    const SoftenedKernel g_l(plan.kernel, al, plan.order), g_2l(plan.kernel, 2 * al, plan.order);
    double* k_l = plan.stencil.data() + table * static_cast<std::size_t>(l);
    for (int jz = -radius; jz <= radius; ++jz)
      for (int jy = -radius; jy <= radius; ++jy)
        for (int jx = -radius; jx <= radius; ++jx) {
          const int j2 = jx * jx + jy * jy + jz * jz;
          if (h * h * static_cast<double>(j2) >= 4 * a * a) continue;
          const double r2 = hl * hl * static_cast<double>(j2);
          k_l[(jx + radius) + w * ((jy + radius) + w * (jz + radius))] = g_l(r2) - g_2l(r2);
          int& extent = plan.stencil_row_extent[static_cast<std::size_t>((jy + radius) + w * (jz + radius))];
          extent = std::max(extent, std::abs(jx));
        }
  }
}

}  // namespace

Plan make_plan(const GridSumProblem& problem, const MsmParameters& params) {
  validate(params);
  Plan plan;
  plan.params = params;
  plan.kernel = split_kernel(problem.model, problem.pair);
  plan.softened_cutoff = SoftenedKernel(plan.kernel, params.cutoff, params.order);
  plan.order = params.order;
  plan.support = support_width(params.order);
  plan.restriction = restriction_width(params.order);
  const double h = params.spacing;
  if (problem.atom_count == 0 || problem.point_count() == 0) return plan;  // the map is zero (or empty)

  std::array<double, 3> amin, amax;
  amin.fill(std::numeric_limits<double>::infinity());
  amax.fill(-std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < problem.atom_count; ++i) {
    const double c[3] = {problem.x[i], problem.y[i], problem.z[i]};
    for (int d = 0; d < 3; ++d) {
      amin[d] = std::min(amin[d], c[d]);
      amax[d] = std::max(amax[d], c[d]);
    }
  }
  const std::array<double, 3> mmin = {0.0, 0.0, static_cast<double>(problem.z_offset) * problem.hz};
  const std::array<double, 3> mmax = {static_cast<double>(problem.nx - 1) * problem.hx,
                                      static_cast<double>(problem.ny - 1) * problem.hy,
                                      static_cast<double>(problem.z_offset + problem.nz - 1) * problem.hz};

  Range charged = touched(amin, amax, h, plan.support);
  Range grid = join(charged, touched(mmin, mmax, h, plan.support));
  double spacing = h;
  for (;;) {
    Level level;
    level.spacing = spacing;
    level.grid = grid.box();
    level.charged = charged.box();
    check_size(level.grid, params, plan.levels.empty() ? "level-1 grid" : "grid of a coarser level");
    plan.levels.push_back(level);
    // Coarsening stops on the atoms' extent alone (see the file comment), and at 40 levels,
    // which no grid within kMaxGridPoints reaches.
    if (widest(charged) <= kTopLevelAxisPoints || plan.levels.size() >= 40) break;
    charged = coarsen(charged, plan.restriction);
    grid = coarsen(grid, plan.restriction);
    spacing *= 2;
  }

  fill_cutoff_stencils(plan);

  plan.cell = h;
  Range cells;
  for (int d = 0; d < 3; ++d) {
    cells.lo[d] = lattice_floor(amin[d], h) - 1;
    cells.hi[d] = lattice_floor(amax[d], h) + 1;
  }
  plan.cells = cells.box();
  return plan;
}

namespace {

/// x-fastest strides of a dense array of n[0] × n[1] × n[2] elements.
std::array<std::size_t, 3> dense_strides(const std::array<std::int64_t, 3>& n) {
  return {1, static_cast<std::size_t>(n[0]), static_cast<std::size_t>(n[0] * n[1])};
}

/// The pass along `axis` from an array (`in_box` of `in_array`'s lattice, at `in_array`'s
/// strides) to an array (`out_box` in `out_array`), `out_n` elements, reading the input
/// elements of `read` along the axis.
AxisPass pass(int axis, const std::array<std::int64_t, 3>& out_n, const GridBox& read, std::int64_t out_first,
              const GridBox& in_array, const std::array<std::int64_t, 3>& in_lo, const GridBox& out_array,
              const std::array<std::int64_t, 3>& out_lo) {
  AxisPass p;
  p.out_n = out_n;
  p.axis = axis;
  p.in_first = read.lo[static_cast<std::size_t>(axis)];
  p.in_count = read.n[static_cast<std::size_t>(axis)];
  p.out_first = out_first;
  p.in_offset = in_array.index(in_lo[0], in_lo[1], in_lo[2]);
  p.in_stride = dense_strides(in_array.n);
  p.out_offset = out_array.index(out_lo[0], out_lo[1], out_lo[2]);
  p.out_stride = dense_strides(out_array.n);
  return p;
}

}  // namespace

std::array<AxisPass, 3> restriction_passes(const Level& fine, const Level& coarse) {
  const GridBox& fc = fine.charged;
  const GridBox& cc = coarse.charged;
  // Scratch arrays are dense boxes whose lattice origin is their element 0.
  const GridBox t1{{cc.lo[0], fc.lo[1], fc.lo[2]}, {cc.n[0], fc.n[1], fc.n[2]}};
  const GridBox t2{{cc.lo[0], cc.lo[1], fc.lo[2]}, {cc.n[0], cc.n[1], fc.n[2]}};
  return {pass(0, t1.n, fc, cc.lo[0], fine.grid, fc.lo, t1, t1.lo),     // x: fine charged box → T1
          pass(1, t2.n, t1, cc.lo[1], t1, t1.lo, t2, t2.lo),            // y: T1 → T2
          pass(2, cc.n, t2, cc.lo[2], t2, t2.lo, coarse.grid, cc.lo)};  // z: T2 → coarse charged box
}

std::array<AxisPass, 3> prolongation_passes(const Level& coarse, const Level& fine) {
  const GridBox& c = coarse.grid;
  const GridBox& f = fine.grid;
  const GridBox u{{c.lo[0], c.lo[1], f.lo[2]}, {c.n[0], c.n[1], f.n[2]}};
  const GridBox v{{c.lo[0], f.lo[1], f.lo[2]}, {c.n[0], f.n[1], f.n[2]}};
  std::array<AxisPass, 3> passes = {pass(2, u.n, c, f.lo[2], c, c.lo, u, u.lo),   // z: coarse grid → U
                                    pass(1, v.n, u, f.lo[1], u, u.lo, v, v.lo),   // y: U → V
                                    pass(0, f.n, v, f.lo[0], v, v.lo, f, f.lo)};  // x: V → added into the fine grid
  passes[2].accumulate = true;
  return passes;
}

std::size_t pass_scratch_points(const Plan& plan) {
  std::size_t most = 1;
  for (int l = 0; l + 1 < plan.level_count(); ++l) {
    const Level& fine = plan.levels[static_cast<std::size_t>(l)];
    const Level& coarse = plan.levels[static_cast<std::size_t>(l + 1)];
    for (const auto& passes : {restriction_passes(fine, coarse), prolongation_passes(coarse, fine)})
      for (int p = 0; p < 2; ++p) most = std::max(most, passes[static_cast<std::size_t>(p)].points());
  }
  return most;
}

}  // namespace espgrid::msm
