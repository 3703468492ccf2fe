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

/// Many small sums in one launch (PB's banded boundary, pb/pb_face_sums.h): group g sums the atoms
/// atom_index[atom_first .. atom_first + atom_count) at points [point_first, point_first + point_count).
/// Groups may share atom ranges (a lattice and its centres); every atom is uploaded once.
struct PointGroup {
  std::size_t point_first = 0, point_count = 0;
  std::size_t atom_first = 0, atom_count = 0;
};

/// PointSumProblem's arrays (atoms once, every group's points one after another), the groups'
/// atoms as indices into them, and the groups; `arrays.point_count` is the points' length.
struct PointGroupProblem {
  PointSumProblem arrays;
  const std::uint32_t* atom_index = nullptr;
  std::size_t index_count = 0;
  const PointGroup* groups = nullptr;
  std::size_t group_count = 0;
};

/// Fills problem.arrays.potential for every group's points. A block sums one tile of 128 points
/// over at most a slice of its group's atoms into a partial sum of its own, and the partials of a
/// point are added in slice order: a few hundred lattice points over 10⁵ atoms fill the device,
/// and each value is the same for any group layout. Throws CudaError on failure.
ComputeTiming potential_at_point_groups(const PointGroupProblem& problem, int device);

}  // namespace espgrid::cuda
