#include "src/scaleout/pb_ranks.h"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "src/core/errors.h"

#if ESPGRID_HAVE_MPI
#include <mpi.h>
#endif

namespace espgrid::scaleout {
namespace {

#if ESPGRID_HAVE_MPI
int message_count(std::size_t count, const char* what) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw Error(std::string("a PB solve across MPI ranks: ") + what + " of " + std::to_string(count) +
                " values is too large for one MPI message");
  return static_cast<int>(count);
}
#endif

}  // namespace

PbRanks::PbRanks(const Cluster& cluster) : cluster_(cluster) {
  link_.rank = cluster.rank();
  link_.ranks = cluster.size();
#if ESPGRID_HAVE_MPI
  link_.all_ready = [this](bool failed) {
    int any = failed ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    vote_ = failed || any ? Vote::failed : Vote::passed;
    return any == 0;
  };
  link_.swap_with_neighbours = [this](const double* to_lower, double* from_lower, const double* to_upper,
                                      double* from_upper, std::size_t count) {
    const int n = message_count(count, "a halo plane");
    MPI_Request requests[4];
    int used = 0;
    if (link_.rank > 0) {
      MPI_Irecv(from_lower, n, MPI_DOUBLE, link_.rank - 1, 1, MPI_COMM_WORLD, &requests[used++]);
      MPI_Isend(to_lower, n, MPI_DOUBLE, link_.rank - 1, 0, MPI_COMM_WORLD, &requests[used++]);
    }
    if (link_.rank + 1 < link_.ranks) {
      MPI_Irecv(from_upper, n, MPI_DOUBLE, link_.rank + 1, 0, MPI_COMM_WORLD, &requests[used++]);
      MPI_Isend(to_upper, n, MPI_DOUBLE, link_.rank + 1, 1, MPI_COMM_WORLD, &requests[used++]);
    }
    MPI_Waitall(used, requests, MPI_STATUSES_IGNORE);
  };
  link_.share_parts = [this](double* whole, std::size_t begin, std::size_t count) {
    const long long mine[2] = {static_cast<long long>(begin), static_cast<long long>(count)};
    std::vector<long long> all(2 * static_cast<std::size_t>(link_.ranks));
    MPI_Allgather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, MPI_COMM_WORLD);
    std::vector<int> counts, offsets;
    for (int r = 0; r < link_.ranks; ++r) {
      offsets.push_back(message_count(static_cast<std::size_t>(all[2 * r]), "a coarse level"));
      counts.push_back(message_count(static_cast<std::size_t>(all[2 * r + 1]), "a coarse level"));
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, whole, counts.data(), offsets.data(), MPI_DOUBLE,
                   MPI_COMM_WORLD);
  };
  link_.every_value = [this](double value) {
    std::vector<double> all(static_cast<std::size_t>(link_.ranks));
    MPI_Allgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
    return all;
  };
  link_.gather_map = [this](float* map, long first, long end, long plane_points) {
    const float* own = link_.rank == 0 ? map + first * plane_points : map;
    cluster_.gather_planes(own, PlaneSpan{first, end}, plane_points, map, -1);
  };
#endif
}

void PbRanks::failed(const std::string& message) {
  if (vote_ == Vote::not_yet && link_.all_ready) {
    link_.all_ready(true);
    return;
  }
  if (vote_ != Vote::passed) return;
#if ESPGRID_HAVE_MPI
  std::fprintf(stderr,
               "error: rank %d of %d failed during the PB solve across the ranks' GPUs: %s; stopping every rank\n",
               link_.rank, link_.ranks, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
#else
  (void)message;
#endif
}

}  // namespace espgrid::scaleout

namespace espgrid::scaleout {

bool pb_on_rank_gpus(Cluster& cluster, const PbRankChoice& choice) {
  if (choice.gpus_refused) return false;
  if (choice.gpus_asked) {
    if (!choice.energies_on_devices)  // the same on every rank: refused before anything collective
      throw UsageError(
          "under mpirun the ranks' GPUs give the PB map and APBS's total energy with spl2 charges only: "
          "--pb-energy comps, --solvation-energy, --binding-parts and spl0/spl4 energies run in one process, or "
          "by hypre over the ranks' CPUs (--backend cpu), or with --pb-energy no");
    cluster.agree("looking for its GPU", [&] {
      if (!choice.has_gpu)
        throw UsageError(
            "--backend cuda under mpirun splits the PB grid over the ranks' GPUs, and this rank has none (" +
            choice.no_gpu_reason + "); give --backend cpu for hypre over the ranks' CPUs");
    });
    return true;
  }
  const std::vector<double> all = cluster.gather_values({choice.has_gpu ? 1.0 : 0.0});
  bool everywhere = true;
  for (const double v : all) everywhere = everywhere && v != 0.0;
  return cluster.broadcast_flag(everywhere) && choice.pipeline_runs && choice.energies_on_devices;
}

int ranks_sharing_device(const Cluster& cluster, std::size_t usable, bool device_named) {
  const int local = cluster.local_size();
  if (device_named || usable == 0) return local;
  const int gpus = static_cast<int>(usable), mine = cluster.local_rank() % gpus;
  return local / gpus + (mine < local % gpus ? 1 : 0);
}

}  // namespace espgrid::scaleout
