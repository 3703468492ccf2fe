// Turns atoms, a grid and the physics into the float32 problem the kernels take, owning its arrays.
#pragma once

#include <vector>

#include "src/compute/grid_sum_problem.h"
#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/physics/physics_options.h"

namespace espgrid {

class PreparedProblem {
 public:
  /// Positions relative to the grid origin (subtracted in double, then rounded to float),
  /// charges multiplied by `charge_scale` so kernels write the map's unit directly.
  PreparedProblem(const Atoms& atoms, const GridSpec& grid, double charge_scale, PairModel model = PairModel::Coulomb,
                  PairParameters pair = {});
  /// The problem of a map with this physics: charge scale k/ε, its model and parameters.
  static PreparedProblem for_physics(const Atoms& atoms, const GridSpec& grid, const PhysicsOptions& physics);

  /// The same problem with every charge replaced by its magnitude: its map is Σ|q|·f(r), the
  /// scale of float32 rounding at each point (used to bound kernel-to-kernel differences).
  PreparedProblem with_absolute_charges() const;

  /// The problem writing into `output` (grid.point_count() floats).
  GridSumProblem view(float* output) const;
  std::size_t atom_count() const noexcept { return x_.size(); }
  std::size_t point_count() const noexcept { return grid_.point_count(); }
  const GridSpec& grid() const noexcept { return grid_; }
  /// Largest |coordinate| a kernel handles (grid or atoms, relative to the origin), Å;
  /// sets the scale of float32 position rounding in the oracle's tolerance.
  double coordinate_extent() const noexcept { return extent_; }

 private:
  PreparedProblem() = default;
  std::vector<float> x_, y_, z_, q_;
  std::vector<double> x64_, y64_, z64_;  ///< positions relative to the origin before rounding to float
  GridSpec grid_;
  PairModel model_ = PairModel::Coulomb;
  PairParameters pair_;
  double extent_ = 0;
};

}  // namespace espgrid
