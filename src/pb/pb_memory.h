// The memory a PB map will need, stated and checked before anything is allocated (issue 33): the
// device's and the host's share of the path solve_pb takes, by the code (each array counted, bytes
// a grid point and bytes an atom; docs/pb.md "Memory" tabulates them). A map that does not fit is
// refused with a UsageError that names the need, what is free and what to change, never left to
// fail in an allocation (or, under hypre, to end the process).
#pragma once

#include <cstddef>
#include <string>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/pb/pb_limits.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// Where the map is built and solved (solve_pb's plan).
enum class PbMemoryPath {
  Pipeline,    ///< the device pipeline (pb_pipeline.h): everything on the GPU from the atoms
  DeviceMaps,  ///< the GPU builds the maps from host-prepared inputs, solves (kernels/pb/pb_multigrid.cu)
  Hybrid,      ///< the host builds maps and system, the GPU solves
  Host,        ///< the CPU solves (hypre or the multigrid's emulation)
};
std::string memory_path_name(PbMemoryPath path);

struct PbMemoryPlan {
  PbMemoryPath path = PbMemoryPath::Host;
  double points = 0;
  double device_bytes = 0;  ///< the device's peak (0 on the host path)
  double host_bytes = 0;    ///< the host's peak beyond the atoms and the program
  /// "about 1.1 GiB on the GPU (52 B a point) and 64 MiB on the host (device pipeline)".
  std::string describe() const;
  /// "memory: estimated about ..., GPU peak 1.0 GiB, host peak 0.4 GiB (resident, the whole
  /// process)"; the GPU's peak only when `device_peak_bytes` > 0.
  std::string summary(double device_peak_bytes) const;
};

/// What solve_pb's plan decided, for the plan below.
struct PbMemoryRequest {
  PbHostPlan where = PbHostPlan::CpuMultigrid;  ///< which solver: the GPU's, or the CPU's multigrid or hypre
  bool host_maps = false;                       ///< the host builds the coefficient maps (hybrid on a GPU)
  bool pipeline = false;                        ///< the device pipeline runs (pb_pipeline.h)
  bool potential = false;                       ///< φ comes back in double (energies, maps, focusing)
  bool split = false;                           ///< the Split formulation (a Coulomb map)
  int ranks = 1;             ///< hypre across this many MPI ranks: each holds its share of hypre's structures
  bool maps_shared = false;  ///< ... and its planes of the coefficient maps and system rows (pb_limits.h)
};
PbMemoryPlan pb_memory_plan(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                            const PbMemoryRequest& request);
/// The same for `espgrid map`'s defaults (energies: the total; no write maps) where `where` solves
/// (hypre: a rank's of `ranks`): what the CLI states before the solve.
PbMemoryPlan pb_memory_plan(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, PbHostPlan where,
                            int ranks = 1);

/// Throws UsageError when the plan's device share exceeds `device_free` less a reserve (0: not
/// checked) or its host share exceeds 90 % of `host_available` (0: not checked). `device_name`
/// names the GPU in the message. `ranks_on_host` > 1: the plan is one MPI rank's and
/// `host_available` that rank's part of the host (available_memory_bytes(ranks_on_host)); the
/// message says how many ranks share the host.
void check_pb_memory(const PbMemoryPlan& plan, const GridSpec& grid, std::size_t device_free, std::size_t device_total,
                     const std::string& device_name, std::size_t host_available, int ranks_on_host = 1);

/// check_pb_memory's host share against this host's available memory now, which `ranks_on_host`
/// MPI ranks of the solve share (each counts on its part; an address-space limit is its own).
void check_pb_host_memory(const PbMemoryPlan& plan, const GridSpec& grid, int ranks_on_host = 1);

/// The process's peak resident memory so far, bytes (getrusage).
double host_peak_bytes();

/// Throws Error for an allocation or thread start that failed part-way through a solve the check
/// passed (under an address-space limit the threads' stacks and malloc arenas count too, which
/// the bytes a point do not): the grid, the estimate, what is available now and the remedy.
[[noreturn]] void throw_out_of_memory_part_way(const GridSpec& grid, const PbMemoryPlan& plan);

}  // namespace espgrid::pb
