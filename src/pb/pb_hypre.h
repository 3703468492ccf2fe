// The CPU solver of the PB system: hypre's structured-grid interface (HYPRE_Struct*), conjugate
// gradients preconditioned by one PFMG V-cycle. hypre is optional (ESPGRID_HAVE_HYPRE): a build
// without it reports that the CPU PB solver is unavailable and why.
#pragma once

#include <string>
#include <vector>

#include "src/pb/pb_system.h"

namespace espgrid::pb {

/// Whether this build has hypre; otherwise `reason` says how to get it.
bool hypre_available(std::string* reason = nullptr);

/// Solves `system` (u = 0 on the faces on return, the interior solved to `tolerance`). Initializes
/// MPI (hypre needs it) when nothing has yet; runs on this process alone (MPI_COMM_SELF).
/// Throws Error when hypre is missing or fails.
SolveReport solve_hypre(const PbSystem& system, std::vector<double>& u, double tolerance, int max_iterations,
                        int threads = 0);

}  // namespace espgrid::pb
