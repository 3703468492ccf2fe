#include "src/pb/pb_slabs.h"

#include <algorithm>
#include <string>
#include <utility>

#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/pb/pb_pipeline_driver.h"

namespace espgrid::pb {
namespace {

/// The first coarse plane whose fine plane is at or after `fine` (n when none).
long first_coarse_at(const MgAxis& z, long fine) {
  const auto it = std::lower_bound(z.fine_of.begin(), z.fine_of.end(), static_cast<int>(fine));
  return static_cast<long>(it - z.fine_of.begin());
}

}  // namespace

std::vector<long> slab_cuts(long planes, std::size_t devices) {
  const long slabs = std::max(1L, std::min(static_cast<long>(devices), planes / kMinSlabPlanes));
  std::vector<long> cuts(static_cast<std::size_t>(slabs) + 1);
  for (long s = 0; s <= slabs; ++s) cuts[static_cast<std::size_t>(s)] = planes * s / slabs;
  return cuts;
}

SlabHierarchy slab_hierarchy(const std::vector<MgLevel>& global, std::size_t devices) {
  SlabHierarchy h;
  const std::size_t levels = global.size();
  h.cuts = slab_cuts(global[0].n[2], devices);
  const std::size_t slabs = h.cuts.size() - 1;
  h.gathered_level = levels;
  h.levels.assign(slabs, device_levels(global));
  h.own_first.assign(levels, std::vector<long>(slabs));
  h.own_end.assign(levels, std::vector<long>(slabs));
  for (std::size_t l = 0; l < levels; ++l)
    for (std::size_t s = 0; s < slabs; ++s) {
      const MgAxis& z = global[l].axes[2];
      if (l == 0) {
        h.own_first[l][s] = h.cuts[s];
        h.own_end[l][s] = h.cuts[s + 1];
      } else if (z.coarsened) {
        h.own_first[l][s] = first_coarse_at(z, h.own_first[l - 1][s]);
        h.own_end[l][s] = s + 1 == slabs ? global[l].n[2] : first_coarse_at(z, h.own_end[l - 1][s]);
      } else {
        h.own_first[l][s] = h.own_first[l - 1][s];
        h.own_end[l][s] = h.own_end[l - 1][s];
      }
      if (l > 0 && slabs > 1 && h.gathered_level == levels && h.own_end[l][s] - h.own_first[l][s] < kMinSlabLevelPlanes)
        h.gathered_level = l;
    }
  if (slabs == 1) return h;  // the whole grid: device_levels' shape
  // A slab's arrays: its planes and a halo at each cut on split levels; whole ones below.
  const auto lo = [&](std::size_t l, std::size_t s) {
    if (l >= h.gathered_level) return 0L;
    return s > 0 ? h.own_first[l][s] - 1 : h.own_first[l][s];
  };
  const auto hi = [&](std::size_t l, std::size_t s) {
    return l < h.gathered_level ? (s + 1 < slabs ? h.own_end[l][s] + 1 : h.own_end[l][s]) : global[l].n[2];
  };
  h.fine_of.assign(slabs, std::vector<std::vector<int>>(levels));
  h.coarse_lo.assign(slabs, std::vector<std::vector<int>>(levels));
  h.mid.assign(slabs, std::vector<std::vector<unsigned char>>(levels));
  for (std::size_t s = 0; s < slabs; ++s)
    for (std::size_t l = 0; l < levels; ++l) {
      cuda::PbMgLevel& v = h.levels[s][l];
      v.n[2] = hi(l, s) - lo(l, s);
      v.plane_offset = lo(l, s);
      v.span = l < h.gathered_level ? cuda::PbMgSpan::Slab
                                    : (l == h.gathered_level ? cuda::PbMgSpan::Gathered : cuda::PbMgSpan::Whole);
      v.own_begin =
          l < h.gathered_level ? h.own_first[l][s] - lo(l, s) : (l == h.gathered_level ? h.own_first[l][s] : 0);
      v.own_end =
          l < h.gathered_level ? h.own_end[l][s] - lo(l, s) : (l == h.gathered_level ? h.own_end[l][s] : v.n[2]);
      if (l == 0 || !v.coarsened[2]) continue;
      // z maps in the slab's plane numbers (a halo plane's entries may point past its arrays: unused).
      const MgAxis& z = global[l].axes[2];
      const long fine_lo = lo(l - 1, s), coarse_lo = lo(l, s), fine_n = hi(l - 1, s) - fine_lo;
      std::vector<int>& fine_of = h.fine_of[s][l];
      std::vector<int>& below = h.coarse_lo[s][l];
      std::vector<unsigned char>& mid = h.mid[s][l];
      for (long k = 0; k < v.n[2]; ++k)
        fine_of.push_back(z.fine_of[static_cast<std::size_t>(k + coarse_lo)] - static_cast<int>(fine_lo));
      for (long k = 0; k < fine_n; ++k) {
        below.push_back(z.coarse_lo[static_cast<std::size_t>(k + fine_lo)] - static_cast<int>(coarse_lo));
        mid.push_back(z.mid[static_cast<std::size_t>(k + fine_lo)]);
      }
      v.fine_of[2] = fine_of.data();
      v.coarse_lo[2] = below.data();
      v.mid[2] = mid.data();
    }
  return h;
}

PbMemoryPlan check_slab_memory(const PbMemoryPlan& memory, const GridSpec& grid, const std::vector<int>& devices) {
  const long planes = static_cast<long>(grid.dims[2]);
  const std::vector<long> cuts = slab_cuts(planes, devices.size());
  std::vector<std::pair<int, double>> share;  // device, planes held
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
    const double held = static_cast<double>(cuts[s + 1] - cuts[s] + 2);
    auto it = std::find_if(share.begin(), share.end(), [&](const auto& d) { return d.first == devices[s]; });
    if (it == share.end())
      share.emplace_back(devices[s], held);
    else
      it->second += held;
  }
  for (const auto& [device, held] : share) {
    PbMemoryPlan mine = memory;
    mine.device_bytes = memory.device_bytes * std::min(1.0, held / static_cast<double>(planes));
    std::size_t free = 0, total = 0;
    cuda::pb_device_memory(device, free, total);
    check_pb_memory(mine, grid, free, total, "GPU " + std::to_string(device), available_memory_bytes());
  }
  return memory;
}

PbMemoryPlan rank_slab_share(const PbMemoryPlan& memory, const GridSpec& grid, int ranks, int rank) {
  const std::vector<long> cuts =
      slab_cuts(static_cast<long>(grid.dims[2]), static_cast<std::size_t>(std::max(1, ranks)));
  const std::size_t r = static_cast<std::size_t>(rank);
  PbMemoryPlan mine = memory;  // its planes and two halos of the grid's
  if (r + 1 < cuts.size()) mine.device_bytes *= std::min(1.0, double(cuts[r + 1] - cuts[r] + 2) / double(grid.dims[2]));
  return mine;
}

PbMemoryPlan check_rank_slab_memory(const PbMemoryPlan& memory, const GridSpec& grid, const PbRankLink& ranks,
                                    int device, int device_sharing, int host_sharing) {
  const PbMemoryPlan mine = rank_slab_share(memory, grid, ranks.ranks, ranks.rank);
  std::size_t free = 0, total = 0;
  cuda::pb_device_memory(device, free, total);
  const int on_device = std::max(1, device_sharing), on_host = std::max(1, host_sharing);
  const std::string name = "GPU " + std::to_string(device) +
                           (on_device > 1 ? " (shared by " + std::to_string(on_device) + " MPI ranks)" : "");
  check_pb_memory(mine, grid, free / std::size_t(on_device), total, name, available_memory_bytes(on_host), on_host);
  return memory;
}

void check_split_plan(const GridSpec& grid, std::size_t devices, const PbRankLink* ranks, bool pipeline,
                      bool need_potential) {
  const char* what =
      "the device pipeline only (mol/smol, lpbe, direct, atoms on the grid, no coefficient maps; docs/pb.md)";
  if (devices > 1 && !pipeline)
    throw UsageError(std::string("a PB grid is split over several GPUs by ") + what + ": name one GPU (--device N)");
  if (!ranks) return;
  if (devices > 1)
    throw UsageError("under mpirun each rank solves its slab of a PB grid on one GPU: give --device N or none");
  if (!pipeline)
    throw UsageError(std::string("under mpirun the GPUs split a PB grid by ") + what +
                     ": give --backend cpu for one solve by hypre over the ranks' CPUs");
  const std::size_t slabs = slab_cuts(static_cast<long>(grid.dims[2]), std::size_t(ranks->ranks)).size() - 1;
  if (slabs < static_cast<std::size_t>(ranks->ranks))
    throw UsageError("the PB grid's " + std::to_string(grid.dims[2]) + " z-planes are too few for " +
                     std::to_string(ranks->ranks) + " MPI ranks with a GPU each (" + std::to_string(kMinSlabPlanes) +
                     " a rank at least): use at most " + std::to_string(slabs) + " ranks, or one process");
  if (need_potential)
    throw UsageError(
        "under mpirun the GPUs' PB solve returns the map only: energies other than APBS's total with spl2 "
        "charges, and maps that need the potential in double, run in one process (or with --backend cpu)");
}

}  // namespace espgrid::pb
