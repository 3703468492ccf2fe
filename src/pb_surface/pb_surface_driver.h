// What the PB coefficient maps need from the GPU, declared in plain C++ (no CUDA headers) and
// implemented by kernels/pb/pb_surface.cu (kernels/pb/pb_cuda_unavailable.cpp in a build without CUDA):
// src/pb_surface/ builds the maps on the host or asks the device for them through this one call.
#pragma once

#include <cstddef>

namespace espgrid::cuda {

/// The inputs of the PB coefficient maps on the device (host memory; src/pb_surface/pb_coefficients.cpp
/// prepares them). The maps are APBS's, computed by the same per-node functions as the host's
/// (src/pb_numerics/pb_geometry.h; kernels/pb/pb_surface.cu is built without FMA contraction, so the device's
/// maps equal the host's bit for bit).
struct PbSurfaceInput {
  long atoms = 0;
  const double* x = nullptr;  ///< atom centres, Å
  const double* y = nullptr;
  const double* z = nullptr;
  const double* radius = nullptr;  ///< Å
  long n[3] = {0, 0, 0};           ///< grid nodes per axis
  double origin[3] = {0, 0, 0};    ///< Å
  double spacing[3] = {0, 0, 0};   ///< Å
  int surface = 1;                 ///< 0 mol, 1 smol, 2 spl2
  double solute_dielectric = 2, solvent_dielectric = 78.54;
  double probe_radius = 1.4, ion_radius = 2, spline_window = 0.3;
  bool salt = true;  ///< ionic strength > 0
  // mol and smol: the reference sphere and each atom's SAS neighbours (CSR over the atoms)
  long reference_points = 0;
  const double* reference_x = nullptr;
  const double* reference_y = nullptr;
  const double* reference_z = nullptr;
  const long long* neighbour_start = nullptr;  ///< atoms + 1 entries
  const int* neighbours = nullptr;
  // spl2: for each (j, k) row of nodes, the atoms whose box covers it in ascending order (CSR over
  // n[1]·n[2] rows), and each atom's box along x
  const long long* row_start = nullptr;
  const int* row_atoms = nullptr;
  const long* box_x_lo = nullptr;
  const long* box_x_hi = nullptr;
  int device = 0;
};

struct PbSurfaceOutput {
  double* eps_x = nullptr;  ///< host, n[0]·n[1]·n[2] each: written
  double* eps_y = nullptr;
  double* eps_z = nullptr;
  double* accessibility = nullptr;
  std::size_t sas_points = 0;  ///< accessible SAS points (mol, smol)
  double kernel_seconds = 0;   ///< CUDA events around the kernels
  double wall_seconds = 0;     ///< the whole call: allocation, copies, kernels
};

/// Builds the dielectric (faces) and ion-accessibility (nodes) maps on `in.device`.
void build_pb_surface(const PbSurfaceInput& in, PbSurfaceOutput& out);

}  // namespace espgrid::cuda
