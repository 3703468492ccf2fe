// The potential at a list of points on a GPU (`espgrid sample`, Python's potential_at),
// as plain C++: host code includes this, kernels/points.cu implements it (a build without CUDA
// links kernels/points_cuda_unavailable.cpp). The points are no grid, so the map kernels'
// planes and slabs do not apply: one thread a point, the atoms streamed through shared memory
// in tiles, each pair through the model's evaluator with the device Math policy, exactly as the
// map kernels evaluate it (C++17: nvcc reads it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/compute/compute_timing.h"
#include "src/compute/grid_sum_problem.h"

namespace espgrid::cuda {

/// φ(p) = Σ_atoms term(q, |p − atom|² + a²) at every point, float32 like the map kernels.
/// Positions of atoms and points are relative to one centre near both, so float32 keeps its
/// resolution far from the coordinate origin.
struct PointSumProblem {
  const float* x = nullptr;  ///< atom x − centre x, Å
  const float* y = nullptr;
  const float* z = nullptr;
  const float* q = nullptr;  ///< charge × k/ε: output unit × Å
  std::size_t atom_count = 0;
  const float* px = nullptr;  ///< point x − centre x, Å
  const float* py = nullptr;
  const float* pz = nullptr;
  std::size_t point_count = 0;
  float softening2 = 0;  ///< a², Å²
  PairModel model = PairModel::Coulomb;
  PairParameters pair;
  float* potential = nullptr;  ///< host output, point_count values
};

/// Fills problem.potential on `device`; `progress(done, total)` (points) from the calling thread
/// after each launch. kernel_seconds: CUDA events around the launches; wall_seconds: the whole
/// call. Throws CudaError (an espgrid::Error) on failure, Error without CUDA.
ComputeTiming potential_at_points(const PointSumProblem& problem, int device, const ProgressFn& progress);

/// Many small sums over planes of points in one launch (PB's banded boundary, pb/pb_face_sums.h):
/// group g sums its atoms at the points origin + a·step_u + b·step_v, a < dims_u, a + dims_u·b <
/// point_count (positions relative to the problem's centre, Å; the device computes them).
struct PlaneGroup {
  float origin[3] = {0, 0, 0};
  float step_u[3] = {0, 0, 0};
  float step_v[3] = {0, 0, 0};
  std::size_t dims_u = 1, point_count = 0;
  const std::uint32_t* atoms = nullptr;  ///< indices into the problem's atoms; groups may share one list
  std::size_t atom_count = 0;
};

struct PlaneGroupProblem {
  const float* atoms_xyzq = nullptr;  ///< x, y, z (− centre, Å), q (× k) of each atom, 16-byte aligned
  std::size_t atom_count = 0;
  const PlaneGroup* groups = nullptr;
  std::size_t group_count = 0;
  float softening2 = 0;  ///< a², Å²
  PairModel model = PairModel::Coulomb;
  PairParameters pair;
  float* potential = nullptr;  ///< host output: every group's points, one group after another
};

/// Fills problem.potential. A block sums one tile of 128 points over its group's atoms, or over a
/// slice of them where the group has few points (a lattice of a few hundred points over 10⁵ atoms
/// still fills the device); a point's slices are added in order, so each value is the same for any
/// grouping. Throws CudaError on failure.
ComputeTiming potential_on_plane_groups(const PlaneGroupProblem& problem, int device);

}  // namespace espgrid::cuda
