// One map computed by all the ranks of a Cluster: rank r computes a contiguous block of
// z-planes (rank_planes) as a slab problem of its own (GridSumProblem::z_offset), with its own
// kernel, GPU(s) or CPU threads; rank 0 gathers the planes into the whole map. Per-point
// sums do not depend on the split, so the map is bit-identical to a one-process map for
// every kernel but cuda-scatter.
#pragma once

#include <string>
#include <vector>

#include "src/compute/prepared_problem.h"
#include "src/registry/kernel_registry.h"
#include "src/scaleout/cluster.h"

namespace espgrid::scaleout {

/// What one rank computed, and how long it took.
struct RankReport {
  int rank = 0;
  std::string host;
  std::string kernel;  ///< the variant it ran
  std::string device;  ///< where (RunTiming::device): "CPU, 8 threads", a GPU, or several
  PlaneSpan planes;
  double kernel_seconds = 0;  ///< RunTiming::kernel_seconds of its share
  double wall_seconds = 0;    ///< RunTiming::wall_seconds of its share (transfers included)
};

struct DistributedRun {
  /// On rank 0: kernel = the slowest rank's kernel time; wall = from the start of the call
  /// until the whole map is on rank 0 (every rank's compute and the gather). Elsewhere: the
  /// rank's own timing.
  RunTiming timing;
  std::vector<RankReport> ranks;  ///< rank 0: every rank's, in rank order; elsewhere: its own
  double gather_seconds = 0;      ///< rank 0: receiving the other ranks' planes
};

/// Computes `problem`'s whole map over `cluster`. Rank r runs `kernel` with `options` on
/// rank_planes(nz, r, size) (options.progress only on rank 0, for its own planes). On rank 0,
/// `root_map` holds the whole map (point_count floats) and receives it; elsewhere it is not
/// used (may be null). ESPGRID_TEST_FAIL_RANK=R makes rank R fail before computing, for
/// the tests. A failure on any rank throws on every rank (Cluster::agree) before anything is
/// gathered. Collective: every rank calls it. With one process it is a plain kernel run.
DistributedRun compute_distributed(Cluster& cluster, const KernelVariant& kernel, const PreparedProblem& problem,
                                   float* root_map, const RunOptions& options);

/// Whether ESPGRID_TEST_FAIL_RANK names `rank` (the tests of the failure paths make that rank fail).
bool failure_injected(int rank);

/// The GPU a rank uses by default: local rank mod the number of usable devices (-1: none).
int rank_local_device(const Cluster& cluster, const std::vector<int>& usable_devices);

}  // namespace espgrid::scaleout
