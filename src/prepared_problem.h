// Turns atoms and a grid into the float32 problem the kernels take, owning its arrays.
#pragma once

#include <vector>

#include "src/atoms.h"
#include "src/dcs_problem.h"
#include "src/grid.h"

namespace espgrid {

class PreparedProblem {
 public:
  /// Positions relative to the grid origin (subtracted in double, then rounded to float),
  /// charges multiplied by `coulomb_factor` (k/ε) so kernels write the map's unit directly.
  PreparedProblem(const Atoms& atoms, const GridSpec& grid, double coulomb_factor);

  /// The problem writing into `output` (grid.point_count() floats).
  DcsProblem view(float* output) const;
  std::size_t atom_count() const noexcept { return x_.size(); }
  /// Largest |coordinate| a kernel handles (grid or atoms, relative to the origin), Å;
  /// sets the scale of float32 position rounding in the oracle's tolerance.
  double coordinate_extent() const noexcept { return extent_; }

 private:
  std::vector<float> x_, y_, z_, q_;
  GridSpec grid_;
  double extent_ = 0;
};

}  // namespace espgrid
