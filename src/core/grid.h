// Geometry of the regular grid the potential is sampled on. Values are stored with x
// varying fastest: index = i + nx * (j + ny * k).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "src/core/atoms.h"
#include "src/core/text_format.h"

namespace espgrid {

struct GridSpec {
  std::array<std::int64_t, 3> dims{};  ///< points along x, y, z
  std::array<double, 3> origin{};      ///< position of point (0,0,0), Å
  std::array<double, 3> spacing{};     ///< distance between neighbouring points, Å

  std::size_t point_count() const noexcept {
    return static_cast<std::size_t>(dims[0]) * static_cast<std::size_t>(dims[1]) * static_cast<std::size_t>(dims[2]);
  }
  /// Position of point (i, j, k) along `axis`, Å.
  double position(int axis, std::int64_t index) const noexcept {
    return origin[axis] + static_cast<double>(index) * spacing[axis];
  }
};

/// How the user asked for the grid: either padding around the atoms or explicit origin/dims.
struct GridRequest {
  std::array<double, 3> spacing{0.5, 0.5, 0.5};  ///< Å
  double padding = 10.0;                         ///< Å on each side of the bounding box
  std::optional<std::array<double, 3>> origin;   ///< Å; set together with dims
  std::optional<std::array<std::int64_t, 3>> dims;
  /// APBS's gcent and glen (not with origin/dims): the grid centred on `center` (default: the
  /// centre of the atoms' box), at least `length` Å along each axis (default: the box plus
  /// padding on each side).
  std::optional<std::array<double, 3>> center;
  std::optional<std::array<double, 3>> length;
};

/// Largest number of points along one axis, and in all. Keeps 32-bit CUDA indexing within
/// an axis safe and turns typos like "--dims 1e9,..." into an error, not an allocation.
inline constexpr std::int64_t kMaxAxisPoints = 1 << 20;
/// Largest grid spacing accepted, Å. Keeps every grid position (at most kMaxAxisPoints
/// spacings from the origin), and its square, finite in float32: a spacing of 1e300 once
/// became an infinite float spacing and a NaN map.
inline constexpr double kMaxSpacing = 1.0e4;
/// Largest |origin| accepted along an axis, Å (the limit on atom coordinates too).
inline constexpr double kMaxOriginMagnitude = 1.0e6;

/// Throws UsageError unless the request's values are valid (positive finite spacing at most
/// kMaxSpacing; with dims: 1..kMaxAxisPoints points and a finite origin within ±1e6 Å, set
/// together, and no center or length; without: a finite non-negative padding, a center within
/// ±1e6 Å, positive lengths). Needs no atoms: callers check before reading.
void check_grid_request(const GridRequest& request);
/// The grid of a request with explicit origin and dims (checked), or nothing for a padded one.
std::optional<GridSpec> explicit_grid(const GridRequest& request);

/// Builds the grid: the bounding box of the atoms plus padding on every side, on the lattice
/// of the spacing (the origin a whole number of spacings from 0, to 1e-6 Å, and the fewest
/// points that cover the box: less than one spacing of slack on each side), or the explicit
/// origin and dims. The lattice is what crystallographic readers of an .mrc need (gemmi, Coot
/// and CCP4 place a map by NXSTART, a whole number of voxels: maps/mrc_format.cpp), and maps
/// of different structures at one spacing share their points. Validates every value (positive
/// finite spacing, non-negative finite padding, dims ≥ 1) and throws UsageError otherwise.
/// With a center or a length (APBS's gcent, glen), the grid is instead centred exactly on the
/// center, with the fewest points whose extent, (dims − 1) · spacing, reaches the length: not on
/// the lattice of the spacing.
GridSpec make_grid(const GridRequest& request, const Atoms& atoms);

/// Bytes the run needs in host memory for a float map of this grid, plus its DX text.
std::size_t map_bytes(const GridSpec& grid) noexcept;
/// Memory this machine could give the process now, bytes (MemAvailable, or less under an
/// address-space limit: RLIMIT_AS minus what the process maps), or 0 if unknown.
std::size_t available_memory_bytes();
/// The same for one of `sharing` processes of a job on this host (MPI ranks): each may count on
/// MemAvailable / sharing; an address-space limit is each process's own.
std::size_t available_memory_bytes(int sharing);
/// Throws UsageError when the map would not fit in `available` bytes (0 means "ask the OS"),
/// or when it has more points than the environment variable ESPGRID_MAX_GRID_POINTS allows
/// (a whole number; unset means no limit beyond memory). The variable lets fuzzers, CI jobs
/// and shared machines cap the work one run may take; see docs/reliability.md.
void check_grid_fits(const GridSpec& grid, std::size_t available = 0);
/// Host memory one atom takes in a run, bytes: as read (five doubles and an element symbol) and
/// as the kernels take it (four floats).
inline constexpr std::size_t kHostBytesPerAtom = 5 * sizeof(double) + 2 + 4 * sizeof(float);
/// Throws UsageError when `atoms` atoms would not fit in `available` bytes (0 means "ask the
/// OS"), before they are allocated.
void check_atoms_fit(std::size_t atoms, std::size_t available = 0);
/// The ESPGRID_MAX_GRID_POINTS limit, or 0 when it is unset. Throws UsageError when it is set
/// to anything but a positive whole number.
std::uint64_t max_grid_points_from_environment();

/// "97 x 97 x 97 = 912,673 points" for messages.
std::string describe(const GridSpec& grid);

}  // namespace espgrid
