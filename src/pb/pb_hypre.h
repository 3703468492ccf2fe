// The CPU solver of the PB system: hypre's structured-grid interface (HYPRE_Struct*), conjugate
// gradients preconditioned by one PFMG V-cycle. hypre is optional (ESPGRID_HAVE_HYPRE): a build
// without it reports that the CPU PB solver is unavailable and why.
#pragma once

#include <string>
#include <vector>

#include "src/pb/pb_face_sums.h"
#include "src/pb/pb_system.h"

namespace espgrid::pb {

/// Whether this program has the hypre solver; otherwise `reason` says how to get it. The solver
/// (pb_hypre.cpp, CMake target espgrid_hypre) is linked only into the programs that solve PB on
/// the CPU (espgrid, the Python module, the PB tests) and registers itself when they load: linking
/// libHYPRE (through superlu_dist's dependencies) keeps freed memory resident, which every other
/// program and test of espgrid_core should not pay.
bool hypre_available(std::string* reason = nullptr);

/// The solver's signatures, and their registration (pb_hypre.cpp calls it at load time).
/// Which ranks of a solve across ranks get the whole solution back.
enum class HypreSolution {
  EveryRank,  ///< every rank (the Newton iteration of npbe reads it whole on every rank)
  RankZero,   ///< rank 0 only (it writes the map); the others keep their planes and their neighbours' next plane
};
using HypreSolveFn = SolveReport (*)(const PbSystem& system, std::vector<double>& u, double tolerance,
                                     int max_iterations, int threads, bool across_ranks, HypreSolution where);
using HyprePlanesFn = PlaneRange (*)(const GridSpec& grid);
using HypreShareFn = FaceSumShare (*)();
void register_hypre_solver(HypreSolveFn solve, HyprePlanesFn planes_read, HypreShareFn face_sums);

/// Whether a rank of a hypre solve across ranks builds only its planes of the coefficient maps with these
/// options: not for npbe, energy components or write maps that read the coefficients (each reads them whole).
bool hypre_ranks_build_their_planes(const PbOptions& options, bool maps_need_coefficients);
/// The planes of the coefficient maps this rank's share of a solve across ranks needs: the system's
/// planes it reads (its own z-planes and the one below them) and one more below (a row of the system
/// reads the face below it); empty for a rank that owns no plane. Every plane without
/// `across_ranks`, on one rank, or without hypre. Needs MPI running across ranks.
PlaneRange hypre_coefficient_planes(const GridSpec& grid, bool across_ranks);
/// This process's rank in MPI_COMM_WORLD for a solve across ranks on hypre; 0 without `across_ranks`
/// or hypre. Needs MPI running across ranks.
int hypre_rank(bool across_ranks);
/// The boundary's face sums shared among the ranks of MPI_COMM_WORLD (their values added there by
/// MPI_Allreduce); one rank's share, all of them, without `across_ranks` or hypre.
FaceSumShare hypre_face_sum_share(bool across_ranks);

/// Solves `system` (u = 0 on the faces on return, the interior solved to `tolerance`). Initializes
/// MPI (hypre needs it) when nothing has yet. On this process alone (MPI_COMM_SELF), or with
/// `across_ranks` over every rank of MPI_COMM_WORLD (collective: every rank calls it with the same
/// system): each rank owns a contiguous block of z-planes of hypre's grid, and every rank gets the
/// whole solution back, or with HypreSolution::RankZero rank 0 alone (the others hold their planes
/// and the plane beyond each end, resident alone: SolveReport::solution_whole false). Throws Error
/// when hypre is missing or fails.
SolveReport solve_hypre(const PbSystem& system, std::vector<double>& u, double tolerance, int max_iterations,
                        int threads = 0, bool across_ranks = false, HypreSolution where = HypreSolution::EveryRank);

}  // namespace espgrid::pb
