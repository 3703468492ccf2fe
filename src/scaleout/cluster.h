// The process group a distributed `espgrid map` runs in: MPI ranks when this espgrid was built
// with MPI (ESPGRID_MPI) and started by an MPI launcher, otherwise one process. Plain C++: no
// mpi.h here, so host code and tests include it in every build.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "src/core/errors.h"

namespace espgrid::scaleout {

/// Planes [begin, end) of a map's z axis.
struct PlaneSpan {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t count() const noexcept { return end - begin; }
  friend bool operator==(const PlaneSpan&, const PlaneSpan&) = default;
};

/// Rank `rank`'s share of `nz` planes among `ranks`: contiguous blocks in rank order, balanced
/// (the first nz mod ranks ranks get one plane more); a rank gets none when nz < ranks.
PlaneSpan rank_planes(std::int64_t nz, int rank, int ranks);

/// Whether this espgrid was built with MPI.
bool mpi_built() noexcept;

/// Thrown by Cluster::agree on the ranks other than 0 when some rank failed: rank 0 reports
/// every failure; the others stop quietly (the CLI's other ranks exit 0 once rank 0 has
/// printed the error, and rank 0's non-zero status is the job's: an early non-zero exit
/// would make mpirun kill rank 0 before it reports).
class PeerFailure : public Error {
 public:
  using Error::Error;
};

class Cluster {
 public:
  /// The process group. On first use, when built with MPI and started by an MPI launcher
  /// (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK in the environment), initializes MPI
  /// (MPI_THREAD_FUNNELED: only the calling thread talks MPI) and finalizes it at exit.
  /// Otherwise a group of one, and MPI is never touched.
  static Cluster& world();

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// Rank among the ranks on this node, and their count (for the rank-local GPU).
  int local_rank() const noexcept { return local_rank_; }
  int local_size() const noexcept { return local_size_; }
  bool is_root() const noexcept { return rank_ == 0; }
  /// More than one rank: `espgrid map` splits the planes.
  bool distributed() const noexcept { return size_ > 1; }
  /// This node's name (gethostname).
  std::string host() const;

  /// Runs `body` on every rank, then the ranks agree whether it failed anywhere. With one
  /// process, a failure is simply rethrown. With several, when any rank failed: rank 0 throws
  /// an Error naming each failed rank and its message ("rank 1 of 3 failed while
  /// computing: ..."), or rethrows its own error when every rank failed the same way; the
  /// other ranks throw PeerFailure. Collective: every rank calls it, in the same order.
  void agree(const std::string& phase, const std::function<void()>& body);

  /// Rank 0 receives every rank's planes (its `span`, any split) into `root_map` (the whole map,
  /// nz planes of `plane_points` floats, nz < 0: not checked; rank 0's own planes must already be
  /// in place). The other ranks send `local` (span.count() planes). Messages are at most 256 MiB.
  /// Collective.
  void gather_planes(const float* local, const PlaneSpan& span, std::int64_t plane_points, float* root_map,
                     std::int64_t nz) const;

  /// Every rank's `text`, in rank order, on rank 0 (empty elsewhere). Collective.
  std::vector<std::string> gather_text(const std::string& text) const;
  /// Every rank's `values` (the same count on every rank), concatenated in rank order, on
  /// rank 0 (empty elsewhere). Collective.
  std::vector<double> gather_values(const std::vector<double>& values) const;
  /// Rank 0's `value` on every rank. Collective.
  bool broadcast_flag(bool value) const;
  double broadcast_value(double value) const;
  /// Waits for every rank. Collective.
  void barrier() const;

  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

 private:
  Cluster();
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  bool mpi_ = false;
};

}  // namespace espgrid::scaleout
