// The potential at every atom from every other charge: `espgrid sample --at-atoms`, Python's
// potential_at_atoms; what APBS's `write atompot` and ChimeraX's per-atom values give.
//
//   pair models  φᵢ = k/ε Σ_{j≠i} q_j f(r_ij): the exact sum over every other atom in double
//                precision on the CPU (surface::potential_at_atoms). The atom's own term is left
//                out: with the kernels' softening length it is 10⁴ qᵢ Å⁻¹ (about 10⁶ kT/e for a
//                partial charge), which is no potential the atom feels.
//   pb           APBS's atompot: the PB map of the job's grid interpolated trilinearly at each
//                atom's centre (APBS's Vgrid_value). The map holds each atom's own charge too,
//                spread onto the grid (finite, set by the spacing), as APBS's does; differences
//                of such values (bound − unbound, two states) cancel it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "src/job/map_job.h"
#include "src/pipeline/map_pipeline.h"

namespace espgrid {

struct AtomPotentials {
  std::vector<double> values;  ///< one an atom, in the physics' unit
  std::string method;          ///< "exact sum over the 905 other atoms, double precision", or the PB map's
  std::string device;          ///< "CPU, 2 threads", or where the PB solve ran
  double seconds = 0;
  std::optional<GridSpec> grid;  ///< pb: the map's grid
};

/// The checks made before anything is read: the map kernels' and the approximate method's
/// options refused for pair models (the sum runs over every pair, on the CPU), and
/// --backend cuda (UsageError naming what to do instead).
void check_atom_potential_job(const MapJob& job);

/// φ at every atom of `atoms` with the job's physics (and, for pb, its grid and compute
/// options). `observer` hears the progress (atoms, or the PB map's) and may stop the run.
AtomPotentials potential_at_atoms(const MapJob& job, const Atoms& atoms, MapObserver& observer);

}  // namespace espgrid
