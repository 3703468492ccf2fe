#include "src/compute/prepared_problem.h"

#include <algorithm>
#include <cmath>

namespace espgrid {

PreparedProblem::PreparedProblem(const Atoms& atoms, const GridSpec& grid, double charge_scale, PairModel model,
                                 PairParameters pair)
    : grid_(grid), model_(model), pair_(pair) {
  const std::size_t n = atoms.size();
  x_.resize(n);
  y_.resize(n);
  z_.resize(n);
  q_.resize(n);
  x64_.resize(n);
  y64_.resize(n);
  z64_.resize(n);
  for (std::size_t a = 0; a < n; ++a) {
    x64_[a] = atoms.x[a] - grid.origin[0];
    y64_[a] = atoms.y[a] - grid.origin[1];
    z64_[a] = atoms.z[a] - grid.origin[2];
    x_[a] = static_cast<float>(x64_[a]);
    y_[a] = static_cast<float>(y64_[a]);
    z_[a] = static_cast<float>(z64_[a]);
    q_[a] = static_cast<float>(atoms.charge[a] * charge_scale);
    extent_ = std::max({extent_, std::fabs(static_cast<double>(x_[a])), std::fabs(static_cast<double>(y_[a])),
                        std::fabs(static_cast<double>(z_[a]))});
  }
  for (int axis = 0; axis < 3; ++axis)
    extent_ = std::max(extent_, static_cast<double>(grid.dims[axis] - 1) * grid.spacing[axis]);
}

PreparedProblem PreparedProblem::for_physics(const Atoms& atoms, const GridSpec& grid, const PhysicsOptions& physics) {
  return PreparedProblem(atoms, grid, coulomb_factor(physics), physics.model, pair_parameters(physics));
}

PreparedProblem PreparedProblem::with_absolute_charges() const {
  PreparedProblem out = *this;
  for (float& q : out.q_) q = std::fabs(q);
  return out;
}

GridSumProblem PreparedProblem::view(float* output) const {
  GridSumProblem p;
  p.x = x_.data();
  p.y = y_.data();
  p.z = z_.data();
  p.q = q_.data();
  p.x64 = x64_.data();
  p.y64 = y64_.data();
  p.z64 = z64_.data();
  p.atom_count = x_.size();
  p.nx = grid_.dims[0];
  p.ny = grid_.dims[1];
  p.nz = grid_.dims[2];
  p.hx = static_cast<float>(grid_.spacing[0]);
  p.hy = static_cast<float>(grid_.spacing[1]);
  p.hz = static_cast<float>(grid_.spacing[2]);
  p.hx64 = grid_.spacing[0];
  p.hy64 = grid_.spacing[1];
  p.hz64 = grid_.spacing[2];
  p.softening2 = static_cast<float>(kSofteningLength * kSofteningLength);
  p.model = model_;
  p.pair = pair_;
  p.potential = output;
  return p;
}

}  // namespace espgrid
