// The per-node assembly of the PB system (src/pb/pb_system.h) and the final combination, written
// once for the host (src/pb/pb_solve.cpp) and the device (kernels/pb/pb_multigrid.cu).
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#if defined(__CUDACC__)
#define ESPGRID_SYS_HD __host__ __device__ __forceinline__
#else
#define ESPGRID_SYS_HD inline
#endif

namespace espgrid::pb {

/// Everything the assembly reads and writes, as plain pointers (host or device memory); arrays of
/// n[0]·n[1]·n[2] doubles, x fastest.
struct AssemblyArgs {
  long n[3] = {0, 0, 0};
  double geo[3] = {0, 0, 0};  ///< face area / node distance along x, y, z, Å
  double mass = 0;            ///< ε_solvent κ² · cell volume, Å (times the accessibility)
  double zmagic = 0;          ///< the source's scale 4π e²/(kT·Å)
  double eps_p = 0;           ///< ε_solute
  bool split = false;         ///< Split formulation (coulomb given) or Direct (charge given)
  const double* eps_x = nullptr;
  const double* eps_y = nullptr;
  const double* eps_z = nullptr;
  const double* accessibility = nullptr;
  const double* charge = nullptr;    ///< Direct: spl2 charges, e
  const double* coulomb = nullptr;   ///< Split: φ_Coulomb(ε_solute), kT/e
  const double* boundary = nullptr;  ///< the Dirichlet values at the boundary nodes (0 inside), kT/e
  double* wx = nullptr;              ///< written by assemble_coefficients
  double* wy = nullptr;
  double* wz = nullptr;
  double* c = nullptr;
  double* rhs = nullptr;  ///< written by assemble_rhs
};

/// Pass 1 at node (i, j, k): its three face conductances (0 for faces on the boundary planes and
/// past the last node: they join no interior node) and its mass term (0 on the boundary).
ESPGRID_SYS_HD void assemble_coefficients(const AssemblyArgs& a, long i, long j, long k) {
  const long* n = a.n;
  const long idx = i + n[0] * (j + n[1] * k);
  const bool ii = i > 0 && i<n[0] - 1, ij = j> 0 && j<n[1] - 1, ik = k> 0 && k < n[2] - 1;
  a.wx[idx] = (i < n[0] - 1 && ij && ik) ? a.eps_x[idx] * a.geo[0] : 0.0;
  a.wy[idx] = (j < n[1] - 1 && ii && ik) ? a.eps_y[idx] * a.geo[1] : 0.0;
  a.wz[idx] = (k < n[2] - 1 && ii && ij) ? a.eps_z[idx] * a.geo[2] : 0.0;
  a.c[idx] = (ii && ij && ik) ? a.mass * a.accessibility[idx] : 0.0;
}

/// Pass 2 at node (i, j, k) (after pass 1 everywhere): the right-hand side, boundary values moved
/// in; 0 on the boundary. Direct: zmagic·charge. Split: A φ_R = A_εsolute φ_C − A φ_C, a source
/// only where ε ≠ ε_solute and where the ions are.
ESPGRID_SYS_HD void assemble_rhs(const AssemblyArgs& a, long i, long j, long k) {
  const long* n = a.n;
  const long sy = n[0], sz = n[0] * n[1];
  const long idx = i + sy * j + sz * k;
  if (!(i > 0 && j > 0 && k > 0 && i < n[0] - 1 && j < n[1] - 1 && k < n[2] - 1)) {
    a.rhs[idx] = 0.0;
    return;
  }
  const long nb[6] = {idx - 1, idx + 1, idx - sy, idx + sy, idx - sz, idx + sz};
  const double w[6] = {a.wx[idx - 1], a.wx[idx], a.wy[idx - sy], a.wy[idx], a.wz[idx - sz], a.wz[idx]};
  const double gf[6] = {a.geo[0], a.geo[0], a.geo[1], a.geo[1], a.geo[2], a.geo[2]};
  const bool edge[6] = {i == 1, i == n[0] - 2, j == 1, j == n[1] - 2, k == 1, k == n[2] - 2};
  double b = 0.0;
  if (!a.split) {
    b = a.zmagic * a.charge[idx];
    for (int f = 0; f < 6; ++f)
      if (edge[f]) b += w[f] * a.boundary[nb[f]];
  } else {
    const double* phi = a.coulomb;
    for (int f = 0; f < 6; ++f) {
      b += (a.eps_p * gf[f] - w[f]) * (phi[idx] - phi[nb[f]]);
      if (edge[f]) b += w[f] * (a.boundary[nb[f]] - phi[nb[f]]);
    }
    b -= a.c[idx] * phi[idx];
  }
  a.rhs[idx] = b;
}

/// The potential at node (i, j, k), kT/e: the boundary value on the faces, else the solution (plus
/// φ_Coulomb for Split).
ESPGRID_SYS_HD double combined_value(const long* n, const double* boundary, const double* u, const double* coulomb,
                                     long i, long j, long k) {
  const long idx = i + n[0] * (j + n[1] * k);
  if (i == 0 || j == 0 || k == 0 || i == n[0] - 1 || j == n[1] - 1 || k == n[2] - 1) return boundary[idx];
  return u[idx] + (coulomb ? coulomb[idx] : 0.0);
}

}  // namespace espgrid::pb
