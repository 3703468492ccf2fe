// What a Poisson–Boltzmann map is refused for before anything is allocated or solved: a grid
// whose solve would not fit in memory (hypre ends the process through MPI_Abort when an
// allocation fails, so it must never be started short of memory), a sampled surface's fine grid
// over ESPGRID_MAX_GRID_POINTS, an atom whose sphere reaches the grid's faces (where the boundary
// values are set by a formula that holds only outside every atom), and a medium whose boundary
// charges overflow the float32 direct sum.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// Points of the fine grid the sampled surface (options.sampling ≥ 2) is built on; 0 without one.
std::uint64_t sampled_surface_points(const GridSpec& grid, const PbOptions& options);

/// Where a PB solve runs, for the host memory it needs.
enum class PbHostPlan {
  Gpu,           ///< the CUDA multigrid (its device memory is the driver's to report)
  CpuMultigrid,  ///< espgrid's multigrid on the CPU
  Hypre,         ///< hypre's PCG + PFMG on the CPU (and Open MPI's start)
};

/// Host bytes a PB solve of `grid` needs at its peak, beyond what the program already holds: the
/// larger of the surface phase (coefficient maps, the sampled surface's fine grid) and the solve
/// (espgrid's system and, on the CPU, the multigrid hierarchy or hypre's matrix, vectors and
/// levels). On the GPU with options the device pipeline runs (mol/smol, lpbe, direct, no sampled
/// surface), its host share, 12 B a point.
/// `surface_atom_bytes`: what the surface phase holds beside the grid's arrays for the atoms (their
/// SAS points and lists; pb_memory.h adds it where the atoms are known).
/// `ranks`: hypre over that many MPI ranks, each holding its share of hypre's own structures and,
/// with `maps_shared` (pb_coefficients.h maps_held_on_planes), of espgrid's coefficient maps and
/// system rows (its planes). Counted whole, as rank 0 holds them: the map, boundary values, charges
/// and solution (the other ranks hold the last three on their planes).
double pb_host_bytes(const GridSpec& grid, const PbOptions& options, PbHostPlan plan, double surface_atom_bytes = 0,
                     int ranks = 1, bool maps_shared = false);
/// The share of pb_host_bytes that hypre itself allocates (0 on the GPU).
double hypre_bytes(const GridSpec& grid);

/// Throws UsageError, before anything is allocated, when the sampled surface's fine grid is over
/// ESPGRID_MAX_GRID_POINTS or when pb_host_bytes exceeds 90 % of `available` bytes (0: the memory
/// available now, MemAvailable and any address-space limit). `ranks`, `maps_shared`: one MPI rank's
/// share, as pb_host_bytes; `available` is then that rank's part of its host.
void check_pb_fits(const GridSpec& grid, const PbOptions& options, PbHostPlan plan, std::size_t available = 0,
                   int ranks = 1, bool maps_shared = false);

/// Throws UsageError naming the atom when an atom's sphere (its radius) reaches one of the grid's
/// faces, where the multiple Debye–Hückel boundary values (APBS bcfl mdh) assume bulk solvent, or
/// when an atom's Debye–Hückel sphere charge, q·e^(κa)/(1 + κa)·k/ε_w, is beyond what the float32
/// direct sum of the boundary holds (κ from the temperature, the ionic strength and the solvent
/// dielectric: a temperature near 0 K makes κa huge). The message names the option to change.
void check_pb_boundary(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, int threads = 0);

/// Makes sure hypre's allocations for `grid` can succeed (called once MPI has started): asks the
/// system for hypre_bytes(grid) (plus a margin) and gives it back untouched. Throws Error naming the size when it
/// cannot be had, rather than letting hypre's allocation fail, which ends the process (MPI_Abort) with no message.
void reserve_for_hypre(const GridSpec& grid);

}  // namespace espgrid::pb
