// A PB grid split over devices by z-planes (issue 33; kernels/pb/pb_pipeline.cu, kernels/pb/pb_slab_solver.cuh):
// where the grid is cut, each slab's share of every multigrid level, and each device's memory.
//
// Level 0 is cut at slab_cuts; a coarse plane belongs to the slab that owns the fine plane it sits
// on (its fine_of), so the cuts follow the hierarchy down. A slab's level holds its planes and, at
// each cut, the neighbour's nearest one (PbMgSpan::Slab). The first level on which some slab would
// own fewer than kMinSlabLevelPlanes planes is whole on every slab (Gathered: each computes its own
// planes and gathers the rest), and the levels below it are whole (each slab repeats them).
#pragma once

#include <cstddef>
#include <vector>

#include "src/core/grid.h"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb/pb_memory.h"
#include "src/pb/pb_multigrid.h"
#include "src/pb/pb_rank_link.h"

namespace espgrid::pb {

/// The fewest z-planes a slab holds when a grid is split over devices (fewer devices are used on
/// thinner grids): a slab's share of the first coarse levels must stay thick enough to split.
constexpr long kMinSlabPlanes = 16;
/// The fewest planes a slab owns of a split coarse level; a thinner level is gathered.
constexpr long kMinSlabLevelPlanes = 4;

/// Where a grid of `planes` z-planes is cut for `devices` slabs: slab s holds planes cuts[s] ..
/// cuts[s + 1] − 1 (as equal as whole planes allow; fewer slabs when they would be thinner than
/// kMinSlabPlanes).
std::vector<long> slab_cuts(long planes, std::size_t devices);

/// Every slab's levels (cuda::PbMgLevel, operators unset), pointing into this object's arrays and
/// `global`'s (the whole grid's hierarchy shape, which must outlive it).
struct SlabHierarchy {
  std::vector<long> cuts;                             ///< slab_cuts
  std::vector<std::vector<cuda::PbMgLevel>> levels;   ///< [slab][level]
  std::vector<std::vector<long>> own_first, own_end;  ///< [level][slab]: the whole level's planes owned
  std::size_t gathered_level = 0;                     ///< the first level not split (levels.size(): none)
  // The slabs' z maps in their arrays' plane numbers: [slab][level].
  std::vector<std::vector<std::vector<int>>> fine_of, coarse_lo;
  std::vector<std::vector<std::vector<unsigned char>>> mid;
};
SlabHierarchy slab_hierarchy(const std::vector<MgLevel>& global, std::size_t devices);

/// A grid split over `devices` (slab_cuts): each device's share of the plan's device bytes (its slabs'
/// planes with their halo planes, over the grid's) checked against its free memory, and the host's
/// share once (check_pb_memory's refusals). Returns `memory`.
PbMemoryPlan check_slab_memory(const PbMemoryPlan& memory, const GridSpec& grid, const std::vector<int>& devices);
/// Rank `rank`'s share of `memory`'s device bytes when the grid is split over `ranks` ranks, a slab
/// each (its planes and halos over the grid's); its host bytes as they are.
PbMemoryPlan rank_slab_share(const PbMemoryPlan& memory, const GridSpec& grid, int ranks, int rank);

/// A grid split over MPI ranks (a slab a rank): this rank's share of the device bytes checked against
/// `device`'s free memory divided among the `device_sharing` ranks that use it, and the host's share
/// against the host's available memory divided among the `host_sharing` ranks on it.
PbMemoryPlan check_rank_slab_memory(const PbMemoryPlan& memory, const GridSpec& grid, const PbRankLink& ranks,
                                    int device, int device_sharing, int host_sharing);

/// Refuses, naming what to change, a split plan the device pipeline cannot run: over `devices` GPUs of
/// one process (more than one) when the pipeline does not apply; over the ranks (`ranks`, not null) also
/// when the grid has too few z-planes for a slab a rank or when φ must come back in double.
void check_split_plan(const GridSpec& grid, std::size_t devices, const PbRankLink* ranks, bool pipeline,
                      bool need_potential);

}  // namespace espgrid::pb
