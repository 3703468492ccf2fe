// espgrid's geometric multigrid for the PB operator: the level hierarchy (built on the host, used
// by both implementations) and the CPU emulation of the GPU solver. The CUDA solver
// (src/pb/pb_cuda_driver.h) runs the same algorithm on the same hierarchy; the emulation is what tests
// check it against, and what lets the algorithm be tested on a machine without a GPU.
//
// Solver: conjugate gradients preconditioned by one V-cycle: on each level ν red-black
// Gauss–Seidel sweeps before (red, then black) and ν after (black, then red) the coarse
// correction, so the preconditioner is symmetric; restriction Pᵀ, prolongation P (linear);
// on the coarsest level (at most 3 nodes along every axis, one unknown... or a few) symmetric
// sweeps until it is solved. src/pb_numerics/pb_multigrid_math.h has the per-node arithmetic.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_system.h"
#include "src/pb_numerics/pb_multigrid_math.h"

namespace espgrid::pb {

/// The CPU multigrid's (and pb_nonlinear's) levels smaller than this run on one thread: a parallel
/// region's fork and barrier cost more than the work there, and on a busy machine a barrier waits
/// for a descheduled thread (measured on the loaded 2-core VM: 11 s with two threads, 0.25 s with
/// one, for the same 63³ solve).
inline constexpr long kParallelNodes = 1L << 17;

/// One axis of a coarse level relative to the level above it (see MgAxisMap).
struct MgAxis {
  bool coarsened = false;
  std::vector<int> fine_of;        ///< coarse index → fine index (coarsened axes)
  std::vector<int> coarse_lo;      ///< fine index → last coarse index at or before it
  std::vector<unsigned char> mid;  ///< fine index is a midpoint of two coarse nodes
  MgAxisMap view() const { return {fine_of.data(), coarse_lo.data(), mid.data()}; }
};

struct MgLevel {
  std::array<long, 3> n{};  ///< nodes per axis, faces included
  std::vector<double> wx, wy, wz, c;
  std::array<MgAxis, 3> axes;  ///< how this level maps onto the finer one (unused on level 0)
  std::size_t size() const { return static_cast<std::size_t>(n[0] * n[1] * n[2]); }
  MgOperator op() const {
    MgOperator a;
    for (int d = 0; d < 3; ++d) a.n[d] = n[d];
    a.wx = wx.data();
    a.wy = wy.data();
    a.wz = wz.data();
    a.c = c.data();
    return a;
  }
};

/// Multigrid settings (the same for both implementations).
struct MgSettings {
  int smoothing = 2;         ///< ν: red-black sweeps before and after the coarse correction
  int coarsest_sweeps = 50;  ///< symmetric sweeps on the coarsest level
  long coarsest_nodes = 3;   ///< an axis is coarsened while it has more nodes than this
  /// The V-cycle's values rounded to float where they are stored (the coarse operators, every level's
  /// x, residual and right-hand side), as the device pipeline stores them (kernels/pb/pb_lean_solver.cuh);
  /// the CPU solver's emulation of it, for tests. Level 0's operator and CG stay double.
  bool float_cycle = false;
};

/// The axis map for coarsening `n` fine nodes (n > 3): coarse nodes at min(2I, n − 1).
MgAxis coarsen_axis(long n);

/// The levels' sizes and axis maps for a grid of `dims` nodes, without their operators.
std::vector<MgLevel> hierarchy_shape(const std::array<long, 3>& dims, const MgSettings& settings = {});

/// Level 0 is the system's operator; each next level halves every axis with more than
/// settings.coarsest_nodes nodes, until none has. OpenMP over `threads`.
std::vector<MgLevel> build_hierarchy(const PbSystem& system, const MgSettings& settings, int threads = 0);

/// Solves system (A u = rhs, u = 0 on the faces) by multigrid-preconditioned CG on the CPU,
/// exactly the algorithm of the CUDA solver. `u` is resized to the grid and holds the solution
/// on return (its faces 0: add system.fixed for the potential).
SolveReport solve_multigrid_cpu(const PbSystem& system, std::vector<double>& u, double tolerance, int max_iterations,
                                const MgSettings& settings = {}, int threads = 0);

/// Total doubles the hierarchy's operators hold (for memory checks and messages).
std::size_t hierarchy_doubles(const std::vector<MgLevel>& levels);

/// The hierarchy's shape as the device solvers take it: pointers into `shape`'s axes (keep it alive).
std::vector<cuda::PbMgLevel> device_levels(const std::vector<MgLevel>& shape);

/// The system's operator as the per-node arithmetic (pb_multigrid_math.h) reads it: views of its
/// arrays, no copy.
MgOperator operator_of(const PbSystem& system);

}  // namespace espgrid::pb
