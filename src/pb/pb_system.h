// The discrete linearized PB problem every solver takes: APBS's 7-point finite-volume
// operator (pmgc/buildAd.c VbuildA_fv) on the map's grid, Dirichlet values on its six faces.
//
//   (A u)ᵢ = Σ_faces w_f (uᵢ − u_nb) + cᵢ uᵢ = bᵢ   at every interior node,
//   w_f = ε_f · (face area) / (node distance),  cᵢ = ε_w κ² λᵢ · (cell volume),
//
// with u at the boundary nodes fixed. The solvers work on the interior: the boundary values are
// moved into b, and the unknown vector is the full grid with zeros on its faces.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/core/grid.h"
#include "src/pb_numerics/pb_system_math.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

struct PbSystem {
  GridSpec grid;
  /// Conductance of the face between node i and i+1 along x (stored at i), and likewise along y and
  /// z: relative permittivity × Å (ε·area/length). Faces beyond the last node are unused (0).
  std::vector<double> wx, wy, wz;
  std::vector<double> c;      ///< ε_w κ² λ · volume at every node, Å (0 on the faces)
  std::vector<double> rhs;    ///< b at the interior nodes, boundary values moved in; 0 on the faces
  std::vector<double> fixed;  ///< the Dirichlet values at the boundary nodes, kT/e (the interior is not read)
  /// The planes whose rows (wx, wy, wz, c, rhs) were assembled: every plane, unless a rank assembled
  /// its share of a solve across ranks (then only that rank's solver reads them). `fixed` is whole.
  PlaneRange planes;
  bool whole() const noexcept { return planes.covers(grid); }

  std::size_t size() const noexcept { return grid.point_count(); }
};

/// y = A x on the interior (x is 0 on the faces; y is written 0 there). Double precision, OpenMP.
void apply_operator(const PbSystem& system, const std::vector<double>& x, std::vector<double>& y, int threads = 0);
/// ‖b − A x‖₂ / ‖b‖₂ over the interior (0 when b = 0 and x solves it). The system must be whole.
double relative_residual(const PbSystem& system, const std::vector<double>& x, int threads = 0);
/// ‖b − A x‖₂² and ‖b‖₂² over the interior nodes of planes [first, end) (the system's rows there
/// assembled): one rank's part of the residual of a solve across ranks.
struct ResidualSums {
  double rr = 0;
  double bb = 0;
};
ResidualSums residual_sums(const PbSystem& system, const std::vector<double>& x, PlaneRange planes, int threads = 0);
/// √(rr/bb), or √rr when b = 0.
double relative_residual(const ResidualSums& sums);

/// What a solver reports.
struct SolveReport {
  std::string method;            ///< "hypre 2.26 PCG + PFMG (Galerkin, symmetric red-black GS)", ...
  std::string device;            ///< "CPU, 2 threads" or the GPU
  int iterations = 0;            ///< Krylov iterations
  double relative_residual = 0;  ///< ‖b − A u‖₂ / ‖b‖₂ at the end, recomputed by espgrid in double
  double setup_seconds = 0;      ///< building the solver's hierarchy
  double solve_seconds = 0;      ///< the iterations
  bool converged = false;
  /// Whether this rank holds the whole solution (false: a rank other than 0 of a solve across ranks
  /// that gathered it to rank 0 only; the rank holds its own planes).
  bool solution_whole = true;
};

/// The linear system of one formulation: Direct takes coefficients.charge (spread by options.charges) as the source;
/// Split takes `coulomb` (φ_Coulomb at every node) and solves for the reaction field. The rows are
/// assembled where the coefficients were built, less their first plane unless it is the grid's
/// (a row reads the face below it): PbSystem::planes.
PbSystem assemble_system(const PbCoefficients& coefficients, const std::vector<double>& boundary,
                         const PbOptions& options, PbFormulation formulation, const std::vector<double>* coulomb,
                         int threads = 0);
/// The same, the boundary values becoming the system's `fixed` (no second whole-grid array: 8 B a
/// point less while the solver runs).
PbSystem assemble_system(const PbCoefficients& coefficients, std::vector<double>&& boundary, const PbOptions& options,
                         PbFormulation formulation, const std::vector<double>* coulomb, int threads = 0);

/// The scalars of the assembly (dims, geometry, mass, source scale, ε_solute, formulation).
AssemblyArgs assembly_args(const GridSpec& grid, const PbOptions& options, bool split);

/// The potential in kT/e at every node from the solver's `u` (interior), the system's boundary
/// values and, for Split, φ_Coulomb.
std::vector<double> combine(const PbSystem& system, const std::vector<double>& u, const std::vector<double>* coulomb,
                            int threads = 0);

}  // namespace espgrid::pb
