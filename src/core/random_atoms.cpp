#include "src/core/random_atoms.h"

#include <random>

namespace espgrid {

Atoms random_atoms(std::size_t count, const GridSpec& grid, std::uint64_t seed) {
  constexpr double margin = 2.0;  // Å beyond the grid on every side: some atoms outside it
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> charge(-1.0, 1.0);
  std::uniform_real_distribution<double> axis[3] = {
      std::uniform_real_distribution<double>(grid.origin[0] - margin, grid.position(0, grid.dims[0] - 1) + margin),
      std::uniform_real_distribution<double>(grid.origin[1] - margin, grid.position(1, grid.dims[1] - 1) + margin),
      std::uniform_real_distribution<double>(grid.origin[2] - margin, grid.position(2, grid.dims[2] - 1) + margin)};
  Atoms atoms;
  atoms.reserve(count);
  for (std::size_t a = 0; a < count; ++a) {
    const double x = axis[0](rng), y = axis[1](rng), z = axis[2](rng);
    double q = 0;
    while (q == 0.0) q = charge(rng);
    atoms.push_back(x, y, z, q, 1.5);
  }
  return atoms;
}

}  // namespace espgrid
