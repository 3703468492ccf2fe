// A PB grid split over MPI ranks with a GPU each (issue 33): what the device pipeline's CG and its
// outputs need of MPI, as plain functions, so that the PB layer and the kernels include no mpi.h
// (src/scaleout/pb_rank_link.cpp implements them on MPI_COMM_WORLD). Rank r holds slab r of the grid's
// z-slabs (pb_slabs.h) on its own device; the halo planes, the coarse levels too thin to split and the
// dot products' partial sums travel through the host. Every call is collective (every rank makes
// it, in the same order) and comes from the thread that started MPI.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace espgrid::pb {

struct PbRankLink {
  int rank = 0;
  int ranks = 1;
  /// The pipeline's first collective step, once its slab is built: whether every rank got there
  /// without failing (`failed`: this rank did not). A rank whose solve fails before it casts its vote as
  /// failed (PbRankVote), so no rank waits in a later step for one that has stopped.
  std::function<bool(bool failed)> all_ready;
  /// `count` doubles of to_lower to rank − 1 and of to_upper to rank + 1; theirs into from_lower and
  /// from_upper. The first rank has no lower neighbour and the last no upper one (those pointers are
  /// not read or written).
  std::function<void(const double* to_lower, double* from_lower, const double* to_upper, double* from_upper,
                     std::size_t count)>
      swap_with_neighbours;
  /// Every rank's part whole[begin, begin + count) to every rank (the parts do not overlap).
  std::function<void(double* whole, std::size_t begin, std::size_t count)> share_parts;
  /// Every rank's `value`, in rank order, on every rank.
  std::function<std::vector<double>(double value)> every_value;
  /// Rank 0 receives every rank's planes [first, end) (`plane_points` floats each) into `map`, the whole
  /// map (its own planes already in place); the other ranks send theirs, `map` holding those alone.
  std::function<void(float* map, long first, long end, long plane_points)> gather_map;
};

}  // namespace espgrid::pb
