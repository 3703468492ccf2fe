// The problem every kernel solves, as plain data (no CUDA, no STL containers) so that the
// CPU kernels and the CUDA driver functions in kernels/ share it (C++17: nvcc reads it).
//
//   potential[i + nx*(j + ny*k)] = Σ_atoms Evaluator::term(q, r²),
//   r² = (i·hx − x)² + (j·hy − y)² + ((z_offset+k)·hz − z)² + a²
//
// with the evaluator of `model` (physics/pair_potentials.h). Atom positions are relative to
// the grid origin, so grid coordinates stay small and float32 keeps its precision far from
// the coordinate origin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "src/physics/pair_potentials.h"

namespace espgrid {

struct GridSumProblem {
  const float* x = nullptr;  ///< atom x − grid origin x, Å
  const float* y = nullptr;  ///< atom y − grid origin y, Å
  const float* z = nullptr;  ///< atom z − grid origin z, Å
  const float* q = nullptr;  ///< charge × k/ε: output unit × Å
  /// The same positions relative to the grid origin in double (optional: null when only float
  /// ones exist). The oracle uses them as the true positions; kernels that keep float32 error at
  /// the rounding floor form each atom's offset from their tile's own origin from them.
  const double* x64 = nullptr;
  const double* y64 = nullptr;
  const double* z64 = nullptr;
  std::size_t atom_count = 0;
  std::int64_t nx = 0, ny = 0, nz = 0;   ///< grid points per axis
  float hx = 0, hy = 0, hz = 0;          ///< grid spacing, Å
  double hx64 = 0, hy64 = 0, hz64 = 0;   ///< the same in double (0: use the float spacing)
  float softening2 = 0;                  ///< a², Å²
  PairModel model = PairModel::Coulomb;  ///< which f(r) is summed
  PairParameters pair;                   ///< the model's parameters
  float* potential = nullptr;            ///< host output, nx*ny*nz values, x fastest
  /// Map z index of this problem's plane 0: a problem may be a slab of whole z-planes of a
  /// larger map (MPI ranks compute one each). Plane k lies at z = (z_offset + k)·hz, so a
  /// slab's values are bit-identical to the same planes of the whole map.
  std::int64_t z_offset = 0;

  std::size_t point_count() const noexcept {
    return static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny) * static_cast<std::size_t>(nz);
  }
  std::size_t plane_points() const noexcept { return static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny); }
};

/// Called by kernels from the calling thread as work completes: (done, total) in z-planes.
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;
/// Called with planes [first, first + count) of the problem once their values are in
/// problem.potential, so a writer can stream them out while the rest is computed. Every plane
/// is reported exactly once; in plane order from the calling thread for the CPU kernels and one
/// GPU, in any order and from the device workers' threads (possibly concurrently) for several GPUs.
using PlanesDoneFn = std::function<void(std::int64_t first, std::int64_t count)>;

}  // namespace espgrid
