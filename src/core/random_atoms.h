// Random charged atoms around a grid: the input of the benchmarks and of the randomized tests
// (one generator, so both draw from the same distribution).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/core/atoms.h"
#include "src/core/grid.h"

namespace espgrid {

/// `count` atoms uniform in the grid's box extended by 2 Å on every side (so some lie outside
/// the grid and some near grid points), charges uniform in [−1, 1] e and never exactly zero,
/// radius 1.5 Å, element "X"; the same seed gives the same atoms.
Atoms random_atoms(std::size_t count, const GridSpec& grid, std::uint64_t seed);

}  // namespace espgrid
