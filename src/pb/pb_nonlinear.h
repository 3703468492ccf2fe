// The nonlinear Poisson–Boltzmann equation (APBS `npbe`): its solver (its energy: pb_energy.h).
//
//   −∇·(ε∇u) − ε_w κ² λ Σₛ (cₛ zₛ / 2I) e^(−zₛ u) = (4π e²/kT) Σ qᵢ δ(r − rᵢ)      (u = eφ/kT)
//
// discretized as the linear equation is (pb_system.h) with its mass term c·u replaced by APBS's
// Boltzmann term (pb_nonlinear_math.h), and solved by inexact Newton (pb_newton.h): each step's
// linear system J δ = F, J = A₀ + diag(N'(u)), goes to the linear solvers espgrid already has —
// hypre PCG + PFMG or the multigrid emulation on the CPU, the CUDA multigrid on the GPU, where the
// whole iteration stays on the device (kernels/pb/pb_nonlinear.cu). solve_pb (pb_solve.h) calls
// solve_nonlinear when PbOptions::equation is Nonlinear; everything before the solve (maps,
// boundary values, assembly) and after it (the combination into the map) is the linear path's.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/pb/pb_solve.h"
#include "src/pb/pb_system.h"
#include "src/pb_numerics/pb_newton.h"
#include "src/pb_numerics/pb_nonlinear_math.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// The Boltzmann term's species for `options`: the 1:1 salt of ionic_strength (αₛ = ½ each);
/// none without salt (then npbe is lpbe).
BoltzmannSpecies boltzmann_species(const PbOptions& options);

/// What solve_nonlinear did.
struct NonlinearReport {
  SolveReport solve;     ///< method (the linear solver's, "inside inexact Newton"), device, iterations =
                         ///< the linear iterations of every step together, relative_residual = ‖F‖₂/‖b‖₂
  NewtonOutcome newton;  ///< Newton steps, their residuals and step lengths
  std::size_t clipped_nodes = 0;  ///< interior nodes where APBS's exponent clip (±85) is active at the end
};

/// Solves the nonlinear system on the CPU (solver Hypre or CpuMultigrid) or through the CUDA
/// multigrid with the iteration on the device (CudaMultigrid). `system` is the linear system
/// assemble_system built for the same options: its c (ε_w κ² λ·volume) is the Boltzmann term's
/// coefficient, its rhs the source; it is used as scratch and restored on return. `coulomb`:
/// φ_Coulomb for the split formulation (the Boltzmann term then acts on u + φ_Coulomb, and the
/// iteration starts from the linear equation's solution), null for direct. `u` receives the
/// solution (0 on the faces, as the linear solvers leave it). `settings.tolerance`: ‖F‖₂/‖b‖₂.
/// Throws Error when the iteration fails (not a descent direction, a line search that stalls, a
/// non-finite residual); a run that reaches the iteration limit returns with converged = false.
NonlinearReport solve_nonlinear(PbSystem& system, std::vector<double>& u, const BoltzmannSpecies& ions,
                                const std::vector<double>* coulomb, PbSolver solver, const NewtonSettings& settings,
                                int threads = 0, bool across_ranks = false, int device = 0);

/// solve_pb's hook: the species and Newton settings of `options` (its tolerance and iteration
/// limit for the Newton steps and for each linear solve), and the Newton steps in the method's
/// name ("inexact Newton, 6 steps, over hypre PCG + PFMG ..."); `iterations` are the linear ones.
SolveReport solve_nonlinear(PbSystem& system, std::vector<double>& u, const PbOptions& options,
                            const std::vector<double>* coulomb, PbSolver solver, int threads = 0,
                            bool across_ranks = false, int device = 0);
/// The Newton settings of `options` (without ions, the one linear step solved to the tolerance).
NewtonSettings newton_settings(const PbOptions& options);
/// "inexact Newton, N steps, over " + the linear method (+ the clipped nodes, when any).
std::string newton_method(const std::string& linear_method, const NewtonOutcome& newton, std::size_t clipped_nodes);

/// The nonlinear residual ‖b − A₀u − N(u)‖₂/‖b‖₂ of a solution (interior u, 0 on the faces).
double nonlinear_residual(const PbSystem& system, const std::vector<double>& u, const BoltzmannSpecies& ions,
                          const std::vector<double>* coulomb = nullptr, int threads = 0);

}  // namespace espgrid::pb
