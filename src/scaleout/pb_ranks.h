// The MPI side of a PB grid split over ranks with a GPU each (pb::PbRankLink, src/pb/pb_rank_link.h),
// on MPI_COMM_WORLD, and the vote that keeps a rank that fails from leaving the others waiting in a
// collective step it will never reach.
#pragma once

#include <cstddef>
#include <string>

#include "src/pb/pb_rank_link.h"
#include "src/scaleout/cluster.h"

namespace espgrid::scaleout {

class PbRanks {
 public:
  /// This rank's link among `cluster`'s ranks (it must stay where it is: the link's functions refer to it).
  explicit PbRanks(const Cluster& cluster);
  PbRanks(const PbRanks&) = delete;
  PbRanks& operator=(const PbRanks&) = delete;

  const pb::PbRankLink& link() const noexcept { return link_; }

  /// After this rank's solve threw: before the vote, it votes "failed" (every rank then stops at the
  /// vote and reaches Cluster::agree, which reports it); after a vote that failed, nothing; once the
  /// collective steps had begun, the other ranks wait in one of them for this one, so it prints
  /// `message` naming the rank and stops them all (MPI_Abort): no map is written.
  void failed(const std::string& message);

 private:
  enum class Vote { not_yet, failed, passed };
  const Cluster& cluster_;
  pb::PbRankLink link_;
  Vote vote_ = Vote::not_yet;
};

/// What decides where `espgrid map --model pb` solves under mpirun.
struct PbRankChoice {
  bool gpus_asked = false;           ///< --backend cuda
  bool gpus_refused = false;         ///< --backend cpu or --pb-solver hypre
  bool has_gpu = false;              ///< this rank sees a usable GPU
  std::string no_gpu_reason;         ///< why not, when it does not
  bool pipeline_runs = false;        ///< the device pipeline runs these options (the same on every rank)
  bool energies_on_devices = false;  ///< no energy asked, or only APBS's total with spl2 (summed on the devices)
};
/// Whether the grid is split over the ranks' GPUs (a slab a rank) rather than solved by hypre over their
/// CPUs: asked (every rank must then have a GPU: one without fails, and Cluster::agree reports it; energies
/// the devices do not sum are refused), or not refused and every rank has a GPU and the pipeline runs the
/// options and their energies. Collective.
bool pb_on_rank_gpus(Cluster& cluster, const PbRankChoice& choice);

/// The ranks on this host that use this rank's GPU: all of them with a GPU named on the command line,
/// else those whose local rank is this one's modulo the `usable` GPUs (rank_local_device).
int ranks_sharing_device(const Cluster& cluster, std::size_t usable, bool device_named);

}  // namespace espgrid::scaleout
