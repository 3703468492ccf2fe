// The --model pb map of a job: the Poisson-Boltzmann solve behind compute_map (src/pb/pb_solve.h)
// and the checks prepare_job makes of a PB job's input. map_pipeline.cpp is the run of every job;
// this is what only a PB job adds to it.
#pragma once

#include "src/pipeline/map_pipeline.h"

namespace espgrid {

/// --model pb: the map is a Poisson-Boltzmann solution; the selected kernel computes its direct
/// sums, and --backend/--pb-solver pick the solver. Fills `result` in place: the streamed files hold
/// a reference to result.map, so it must be the caller's object (compute_map returns it by its one
/// name: no move).
void compute_pb_map(MapResult& result, const Atoms& atoms, const MapRequest& request, const KernelSelection& kernel,
                    MapFiles* files);

/// --model pb: the atoms' radii draw the dielectric boundary. An XYZ file carries none: the reader's
/// Bondi radii are said (and an element without one is refused, not given 1.70 Å). Atoms near the
/// grid's faces get a boundary condition that only holds far from them: said.
void check_pb_input(const MapJob& job, const PreparedJob& prepared, MapObserver& observer);

}  // namespace espgrid
