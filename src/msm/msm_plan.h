// The geometry of one MSM run, decided on the host from the problem and the parameters and
// shared by the CPU phases (src/msm/msm_cpu.cpp) and the CUDA phases (kernels/msm.cu), so
// both walk the same grids in the same order. C++17: nvcc reads it.
//
// Every lattice is anchored at the map origin (the problem's coordinate origin): level-l point
// m sits at m·h_l, h_l = h·2^(l-1), so level l+1's point n is level l's point 2n. The level-1
// grid covers the atoms and the problem's map points with the interpolant's support; each
// coarser grid covers what restriction and prolongation of the finer one touch. The number of
// levels and the "charged" boxes (the points that can hold charge) depend on the atoms alone,
// never on which planes are asked for: a slab of planes (GridSumProblem::z_offset) gets the same
// values at every lattice point as the whole map, so its planes are bit-identical to the whole
// map's.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/compute/grid_sum_problem.h"
#include "src/msm/msm_math.h"
#include "src/msm/msm_parameters.h"

namespace espgrid::msm {

/// A box of lattice points lo ... lo + n − 1 per axis (indices in the level's own units).
struct GridBox {
  std::array<std::int64_t, 3> lo{};
  std::array<std::int64_t, 3> n{};
  std::size_t points() const noexcept {
    return static_cast<std::size_t>(n[0]) * static_cast<std::size_t>(n[1]) * static_cast<std::size_t>(n[2]);
  }
  bool empty() const noexcept { return n[0] <= 0 || n[1] <= 0 || n[2] <= 0; }
  /// Flat index of lattice point (x, y, z) of this box, x fastest.
  std::size_t index(std::int64_t x, std::int64_t y, std::int64_t z) const noexcept {
    return static_cast<std::size_t>((x - lo[0]) + n[0] * ((y - lo[1]) + n[1] * (z - lo[2])));
  }
  bool contains(std::int64_t x, std::int64_t y, std::int64_t z) const noexcept {
    return x >= lo[0] && x < lo[0] + n[0] && y >= lo[1] && y < lo[1] + n[1] && z >= lo[2] && z < lo[2] + n[2];
  }
};

/// One level of the hierarchy.
struct Level {
  double spacing = 0;  ///< h_l, Å
  GridBox grid;        ///< every point the level computes
  GridBox charged;     ///< the points that can hold charge (inside `grid`)
};

struct Plan {
  MsmParameters params;
  int order = 3;              ///< params.order
  int support = 2;            ///< support_width(order)
  int restriction = 3;        ///< restriction_width(order)
  std::vector<Level> levels;  ///< levels[0] is level 1; the last is the top (all pairs, no cutoff)
  /// The kernel split (msm_math.h): Coulomb, Debye or 1/r², from the problem's pair model.
  SplitKernel kernel;
  /// g_a, the softened kernel at the cutoff: the short range subtracts it (its coefficients, for
  /// kernels other than Coulomb, on the CPU and the GPU alike).
  SoftenedKernel softened_cutoff;
  /// Cutoff stencils: K_l(j·h_l) = g_{a_l}(|j|h_l) − g_{2a_l}(|j|h_l) for j ∈ [−R, R]³, x fastest,
  /// 1/Å, zero where |j| ≥ 2a/h. For Coulomb one table, level 1's: level l uses 2^-(l-1) times it
  /// (1/r is scale-free). For other kernels one table per level below the top, level l's
  /// (0-based) at offset l·(2R+1)³ (level_stencil, level_scale say which to use).
  int stencil_radius = 0;
  std::vector<double> stencil;
  /// For each stencil row (jy, jz) (index (jy+R) + (2R+1)(jz+R)): the largest |jx| with a
  /// non-zero weight, or −1 for a row that is zero throughout.
  std::vector<int> stencil_row_extent;
  /// Atom cells of edge `cell` Å, anchored at the origin: atom → (floor(x/cell), ...). The same
  /// cells serve anterpolation (cell = h: an atom in cell m touches lattice points
  /// m − support + 1 ... m + support) and the short range (rows of cells along x are
  /// contiguous once atoms are sorted by cell).
  double cell = 0;
  GridBox cells;

  int level_count() const noexcept { return static_cast<int>(levels.size()); }
  const Level& top() const { return levels.back(); }
  double stencil_weight(int jx, int jy, int jz) const {
    const int w = 2 * stencil_radius + 1;
    return stencil[static_cast<std::size_t>((jx + stencil_radius) +
                                            w * ((jy + stencil_radius) + w * (jz + stencil_radius)))];
  }
  /// Level l's (0-based) stencil table and the factor its weights are used with.
  const double* level_stencil(int l) const {
    const std::size_t w = static_cast<std::size_t>(2 * stencil_radius + 1);
    return stencil.data() + (kernel.coulomb() ? 0 : static_cast<std::size_t>(l) * w * w * w);
  }
  double level_scale(int l) const { return kernel.coulomb() ? std::ldexp(1.0, -l) : 1.0; }
  int row_extent(int jy, int jz) const {
    const int w = 2 * stencil_radius + 1;
    return stencil_row_extent[static_cast<std::size_t>((jy + stencil_radius) + w * (jz + stencil_radius))];
  }
};

/// What the grid phases produced, per level (each on levels[l].grid, x fastest).
template <class Real>
struct LevelGrids {
  std::vector<std::vector<Real>> charge;     ///< q_l: anterpolation (level 1), restriction (l > 1)
  std::vector<std::vector<Real>> direct;     ///< level l's own sum: the cutoff stencil; all pairs at the top
  std::vector<std::vector<Real>> potential;  ///< e_l = direct + prolongation of e_{l+1} (e_L = direct at the top)
};

/// Largest number of points per axis of the top level's charged box: coarsening stops once
/// the atoms fit in it, so the top level's all-pairs sum stays small.
inline constexpr std::int64_t kTopLevelAxisPoints = 16;
/// Most points any MSM grid may have (level 1 is the largest): beyond it the grids would not
/// fit in memory; the error message asks for a coarser spacing.
inline constexpr std::size_t kMaxGridPoints = std::size_t{1} << 28;

/// The kernel MSM splits for a pair model; Error for a model it does not know (the registry's
/// rows list the three).
SplitKernel split_kernel(PairModel model, const PairParameters& pair);

/// The plan for `problem` with `params` (validated). A problem without atoms gets a plan with
/// no levels (its map is zero). Throws UsageError when a grid would exceed kMaxGridPoints.
Plan make_plan(const GridSumProblem& problem, const MsmParameters& params);

/// For each point of one map axis, the lattice points its value is interpolated from: the
/// first one's index and the 2·support weights (double; the CUDA phases upload them as float).
struct AxisWeights {
  std::vector<std::int64_t> first;  ///< lattice index of the first tap, per map point
  std::vector<double> w;            ///< `taps` weights per map point
  int taps = 0;
};

/// Map points (offset + i)·map_spacing, i ∈ [0, count), on the level-1 lattice of `plan`.
AxisWeights axis_weights(const Plan& plan, std::int64_t count, std::int64_t offset, float map_spacing);

/// One pass of a separable restriction (fine → coarse: out(n) = Σ_j w_j in(2n + j), j
/// ascending) or prolongation (coarse → fine, its transpose: out(m) = Σ_n w_{m−2n} in(n), n
/// ascending) along `axis`. Output element (o0, o1, o2) of an out_n-sized view reads the input
/// elements that differ from it along `axis` only; element (i0, i1, i2) of a view lives at
/// offset + Σ_d i_d·stride[d]. Input elements outside [in_first, in_first + in_count) along the
/// axis, and zero weights, are skipped. The CPU phases (msm_cpu.cpp, in double) and the CUDA
/// kernels (kernels/msm_levels.cu, in float) apply the same passes: the geometry is written once.
struct AxisPass {
  std::array<std::int64_t, 3> out_n{};
  int axis = 0;
  std::int64_t in_first = 0;   ///< lattice index of input element 0 along the axis
  std::int64_t in_count = 0;   ///< input elements along the axis
  std::int64_t out_first = 0;  ///< lattice index of output element 0 along the axis
  std::size_t in_offset = 0;
  std::array<std::size_t, 3> in_stride{};
  std::size_t out_offset = 0;
  std::array<std::size_t, 3> out_stride{};
  bool accumulate = false;  ///< add into the output instead of writing it
  std::size_t points() const noexcept {
    return static_cast<std::size_t>(out_n[0]) * static_cast<std::size_t>(out_n[1]) * static_cast<std::size_t>(out_n[2]);
  }
};

/// Restricting level `fine`'s charges (an array over fine.grid; only fine.charged is read) to
/// level `coarse` (an array over coarse.grid; only coarse.charged is written): x into scratch 1
/// (coarse x, fine y, fine z), y into scratch 2 (coarse x, coarse y, fine z), z into the output.
std::array<AxisPass, 3> restriction_passes(const Level& fine, const Level& coarse);
/// Prolonging level `coarse`'s potentials (over coarse.grid) and adding them to level `fine`'s
/// (over fine.grid): z into scratch 1 (coarse x, coarse y, fine z), y into scratch 2 (coarse x,
/// fine y, fine z), x added into the output.
std::array<AxisPass, 3> prolongation_passes(const Level& coarse, const Level& fine);
/// Elements either scratch array needs for every pass of `plan`.
std::size_t pass_scratch_points(const Plan& plan);

/// Planes per slab for the CUDA phases: `max_slab_bytes` caps the device memory of the two map
/// slab buffers together (at least one plane each), as for the exact kernels; 0 sizes them from
/// `free_bytes` (slabs of about 64 MiB each, a small map whole, and never more than a quarter of
/// the free memory together). Never more than the map's planes or 65,535.
std::int64_t slab_planes(const GridSumProblem& problem, const Plan& plan, std::size_t max_slab_bytes,
                         std::size_t free_bytes);

/// The top level's kernel g_{a_L} by squared lattice distance d² (0 ... the largest between a
/// top-grid point and a charged one), 1/Å, in double: the CPU's all-pairs sum reads it, and the
/// CUDA one for kernels other than Coulomb.
std::vector<double> top_kernel_table(const Plan& plan);

/// Lattice index of coordinate x (Å) on a lattice of spacing h: floor(x/h), the same rule for
/// the plan, the CPU and the GPU (which compute it from the same float inputs).
std::int64_t lattice_floor(double x, double h);

}  // namespace espgrid::msm
