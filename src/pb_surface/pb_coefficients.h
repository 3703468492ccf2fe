// The coefficient maps of the linearized PB equation on a grid, built on the host exactly as
// APBS 3.4.1 builds them (src/pb_numerics/pb_geometry.h names each definition): dielectric on the faces,
// ion accessibility and spread charges on the nodes, multiple-Debye–Hückel boundary values.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/pb_surface/pb_surface_driver.h"
#include "src/physics/pb_options.h"

namespace espgrid::pb {

/// The z-planes [first, end) of a grid: the share of the maps one MPI rank builds. By default every
/// plane of any grid.
struct PlaneRange {
  long first = 0;
  long end = std::numeric_limits<long>::max();
  bool covers(const GridSpec& grid) const noexcept { return first <= 0 && end >= static_cast<long>(grid.dims[2]); }
  friend bool operator==(const PlaneRange&, const PlaneRange&) = default;
};
/// Every plane of `grid`, counted.
inline PlaneRange all_planes(const GridSpec& grid) { return {0, static_cast<long>(grid.dims[2])}; }

/// x fastest: index = i + nx·(j + ny·k), like every espgrid map.
struct PbCoefficients {
  GridSpec grid;
  std::vector<double> eps_x, eps_y,
      eps_z;                          ///< relative permittivity on the faces (i+½, j, k), (i, j+½, k), (i, j, k+½)
  std::vector<double> accessibility;  ///< ion accessibility λ ∈ [0, 1] at the nodes (0 everywhere without salt)
  std::vector<double> charge;         ///< `chgm spl2`: charge spread onto the nodes, e (Direct formulation)
  std::size_t sas_points = 0;         ///< accessible SAS points that carved the surface (mol, smol)
  /// The planes whose dielectric and accessibility values were built (every plane, unless a rank
  /// built its share: then the others hold no meaningful values and only the solve reads the maps).
  /// `charge` is whole.
  PlaneRange planes;
  bool whole() const noexcept { return planes.covers(grid); }
};

/// The reference sphere APBS places solvent-accessible-surface points with (vacc.c
/// VaccSurf_refSphere): unit vectors on rings of constant polar angle, about `points` of them.
struct ReferenceSphere {
  std::vector<double> x, y, z;
};
ReferenceSphere reference_sphere(int points);
/// The largest atom radius, Å (0 without atoms).
double max_radius(const Atoms& atoms);
/// The point count APBS asks the reference sphere for: ceil(4π R² · density), R = the largest
/// atom radius + the surface cell list's reach (the larger of probe and ion radius, + 0.5 Å).
int reference_sphere_request(const Atoms& atoms, const PbOptions& options);

/// The atoms whose centre lies within [z_lo, z_hi] (Å): a rank's share of the SAS work (by default
/// every atom).
struct AtomZRange {
  double z_lo = -std::numeric_limits<double>::infinity();
  double z_hi = std::numeric_limits<double>::infinity();
  bool contains(double z) const noexcept { return z >= z_lo && z <= z_hi; }
};

/// Every atom's accessible SAS points (the surface of the union of atom + probe spheres that
/// no other such sphere contains), as APBS's Vacc_atomSASPoints builds them. Concatenated.
struct SasPoints {
  std::vector<double> x, y, z;
  std::vector<std::size_t> atom_start;  ///< atom a's points are [atom_start[a], atom_start[a + 1])
};
/// With `only`, the atoms outside it get no points (their atom_start ranges are empty).
SasPoints accessible_sas_points(const Atoms& atoms, const PbOptions& options, int threads = 0,
                                const AtomZRange& only = {});
/// For each atom, the atoms that can block a point of its SAS sphere (CSR: atoms[start[a] ..
/// start[a+1])); empty for atoms without a radius. What the SAS test (pb_geometry.h
/// sas_point_open) loops over, on the host and on the device.
struct SasNeighbours {
  std::vector<std::int64_t> start;
  std::vector<std::int32_t> atoms;
};
/// With `only`, the atoms outside it get empty lists.
SasNeighbours sas_neighbours(const Atoms& atoms, const PbOptions& options, int threads = 0,
                             const AtomZRange& only = {});

/// The atoms whose SAS points can reach planes [first, end) of arrays whose plane k lies at
/// z0 + k·dz (face arrays up to dz/2 beyond): a point lies at radius + probe from its atom and
/// carves within a probe radius of itself, and one more dz keeps rounding on the safe side.
AtomZRange atoms_reaching_planes(const Atoms& atoms, const PbOptions& options, double z0, double dz, PlaneRange planes);

/// One batch of the atoms whose SAS points carve a surface: the atoms of heights in `atoms` (with a
/// radius) and the planes their points can reach (within the planes asked for).
struct SasBatch {
  AtomZRange atoms;
  PlaneRange planes;
};
/// The most atoms whose SAS points the host holds at once. A structure of more atoms is carved
/// batch by batch (a face is solvent when any point reaches it, so the batches' carvings add up to
/// the whole one, each point made once): the host's SAS memory is bounded by this, not by the
/// structure (1.93 M atoms' points, cells and lists at once took 10.4 GiB; benchmarks/NOTES.md).
/// 2^18 atoms: ≤ ~1.7 GB at the plan's 130 points an atom.
inline constexpr std::size_t kSasBatchAtoms = std::size_t{1} << 18;
/// The atoms that reach `planes` of `plane_count` (plane k at z0 + k·dz; faces up to dz/2 beyond),
/// in batches of consecutive heights of at most `max_atoms` (more only where atoms share a height);
/// one batch, today's range (every atom where `planes` covers the grid), when they are that few.
std::vector<SasBatch> sas_batches(const Atoms& atoms, const PbOptions& options, double z0, double dz, long plane_count,
                                  PlaneRange planes, std::size_t max_atoms = kSasBatchAtoms);

/// Throws UsageError when there is no atom, or no atom has a radius where the surface matters (a
/// uniform medium, as APBS's point-charge examples use, needs none).
void check_atoms_have_radii(const Atoms& atoms, const PbOptions& options);

/// Throws UsageError naming the first atom that lies outside the grid or within two spacings of
/// its boundary (charges there would be spread onto the fixed boundary values).
void check_atoms_inside(const Atoms& atoms, const GridSpec& grid, int threads = 0);

/// Dielectric, accessibility and (with `spread`) the charges spread by options.charges, OpenMP over
/// `threads` (0: all cores). Deterministic: the same maps for any thread count. Atoms off the
/// grid follow APBS's rules (pb_charges.h; the surface's "off the mesh" tests).
PbCoefficients build_coefficients(const Atoms& atoms, const GridSpec& grid, const PbOptions& options, bool spread,
                                  int threads = 0);
/// The same maps on `planes` only (bit for bit the whole build's there; the other planes 0), for a
/// rank's share of a solve across MPI ranks: mol and smol (the SAS points of the atoms that can reach
/// those planes only), spl2 and spl4. The sampled surface and a uniform medium are built whole
/// (PbCoefficients::planes says which). The charges are spread whole. `sas_batch_atoms`: the most
/// atoms whose SAS points are held at once (sas_batches; the maps do not depend on it).
/// Where maps_held_on_planes, only the planes' pages of the maps are resident (the arrays keep the
/// grid's shape; the other planes read 0 and take no memory: bulk_memory.h assign_zeros_resident).
PbCoefficients build_coefficients_on_planes(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                            bool spread, PlaneRange planes, int threads = 0,
                                            std::size_t sas_batch_atoms = kSasBatchAtoms);
/// Whether build_coefficients_on_planes(…, planes, …) holds only those planes of the maps in memory
/// (a rank's share that is not the whole grid, and a surface built by planes).
bool maps_held_on_planes(const GridSpec& grid, const PbOptions& options, PlaneRange planes);
/// Whether a rank's share of these options' maps is built by planes (not the sampled surface or a
/// uniform medium, which are built whole).
bool surface_built_by_planes(const PbOptions& options);
/// A uniform medium without ions: APBS solves the plain Laplacian (ε = pdie everywhere, no ions).
bool uniform_medium(const PbOptions& options);

/// The same maps built on CUDA device `device` (kernels/pb/pb_surface.cu; bit for bit the host's), for
/// mol, smol and spl2 with every atom on the mesh; the host builds the others (spl4, the sampled
/// surface, atoms off the grid). `kernel_seconds` (optional) receives the device's kernel time.
PbCoefficients build_coefficients_on_device(const Atoms& atoms, const GridSpec& grid, const PbOptions& options,
                                            bool spread, int device, int threads = 0, double* kernel_seconds = nullptr);

/// The inputs of the device's coefficient maps (src/pb_surface/pb_surface_driver.h) and the host arrays they
/// point into: the reference sphere and SAS neighbour lists (mol, smol) or the spline rows (spl2).
struct DeviceSurfaceInputs {
  cuda::PbSurfaceInput input;
  ReferenceSphere reference;
  SasNeighbours neighbours;
  std::vector<long long> neighbour_start, row_start;
  std::vector<int> row_atoms;
  std::vector<long> box_lo, box_hi;
};
std::unique_ptr<DeviceSurfaceInputs> device_surface_inputs(const Atoms& atoms, const GridSpec& grid,
                                                           const PbOptions& options, int device, int threads = 0);
/// Whether the device builds these options' maps (not for a uniform medium without salt, which is
/// trivial, nor for spl4 and the sampled surface, which the host builds).
bool surface_on_device(const PbOptions& options);
/// Whether every atom lies strictly inside the grid's box (APBS's "on the mesh"): else the device
/// path leaves the surface to the host, which applies APBS's rules for atoms off the mesh.
bool atoms_on_mesh(const Atoms& atoms, const GridSpec& grid, int threads = 0);

/// The charge scale of APBS's source term, zmagic = 4π e²/(kT·Å): the equation's right-hand side
/// is zmagic·(spread charge)/volume and u is in kT/e.
double source_scale(double temperature);

}  // namespace espgrid::pb
