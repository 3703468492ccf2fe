#include "src/core/grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/resource.h>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"

namespace espgrid {
namespace {

const char* const kAxis[3] = {"x", "y", "z"};

void check_spacing(const std::array<double, 3>& spacing) {
  for (int a = 0; a < 3; ++a)
    if (!std::isfinite(spacing[a]) || spacing[a] <= 0.0 || spacing[a] > kMaxSpacing)
      throw UsageError(std::string("grid spacing along ") + kAxis[a] +
                       " must be a positive number of Å (at most 10000), got " + number_text(spacing[a]));
}

}  // namespace

void check_grid_request(const GridRequest& request) {
  check_spacing(request.spacing);
  if (request.dims.has_value() != request.origin.has_value())
    throw UsageError(request.dims ? "--dims needs --origin too" : "--origin needs --dims too");
  if (request.dims) {
    for (int a = 0; a < 3; ++a) {
      const std::int64_t n = (*request.dims)[a];
      if (n < 1 || n > kMaxAxisPoints)
        throw UsageError(std::string("grid dims along ") + kAxis[a] + " must be 1.." + std::to_string(kMaxAxisPoints) +
                         ", got " + std::to_string(n));
      if (!std::isfinite((*request.origin)[a]) || std::fabs((*request.origin)[a]) > kMaxOriginMagnitude)
        throw UsageError(std::string("grid origin along ") + kAxis[a] + " must be a finite number of Å within ±1e6");
    }
    if (request.center || request.length)
      throw UsageError(
          "--center and --length place the grid around a point (APBS's gcent and glen); --origin with "
          "--dims places it exactly: give one or the other");
    return;
  }
  if (!std::isfinite(request.padding) || request.padding < 0.0)
    throw UsageError("padding must be a non-negative number of Å, got " + number_text(request.padding));
  for (int a = 0; a < 3; ++a) {
    if (request.center && !(std::fabs((*request.center)[a]) <= kMaxOriginMagnitude))
      throw UsageError(std::string("--center along ") + kAxis[a] + " must be a finite number of Å within ±1e6");
    if (request.length && !((*request.length)[a] > 0 && (*request.length)[a] <= kMaxSpacing * kMaxAxisPoints))
      throw UsageError(std::string("--length along ") + kAxis[a] + " must be a positive number of Å, got " +
                       number_text((*request.length)[a]));
  }
}

std::optional<GridSpec> explicit_grid(const GridRequest& request) {
  check_grid_request(request);
  if (!request.dims) return std::nullopt;
  GridSpec grid;
  grid.spacing = request.spacing;
  grid.dims = *request.dims;
  grid.origin = *request.origin;
  return grid;
}

namespace {

/// APBS's gcent/glen: centred on the center, the fewest points reaching the length.
GridSpec centred_grid(const GridRequest& request, const Atoms& atoms) {
  GridSpec grid;
  grid.spacing = request.spacing;
  if ((!request.center || !request.length) && atoms.empty())
    throw UsageError("cannot place a grid around zero atoms: give --center and --length");
  const BoundingBox box = atoms.empty() ? BoundingBox{} : bounding_box(atoms);
  for (int a = 0; a < 3; ++a) {
    const double h = grid.spacing[a];
    const double centre = request.center ? (*request.center)[a] : 0.5 * (box.lo[a] + box.hi[a]);
    const double extent = request.length ? (*request.length)[a] : box.hi[a] - box.lo[a] + 2 * request.padding;
    const double points = std::ceil(extent / h - 1e-9) + 1;  // (points − 1)·h ≥ extent, within rounding
    if (!(points <= static_cast<double>(kMaxAxisPoints)))
      throw UsageError(std::string("grid along ") + kAxis[a] + " would need " + number_text(points) +
                       " points (limit " + std::to_string(kMaxAxisPoints) +
                       "); use a larger --spacing or a smaller --length");
    grid.dims[a] = std::max<std::int64_t>(1, static_cast<std::int64_t>(points));
    grid.origin[a] = centre - 0.5 * static_cast<double>(grid.dims[a] - 1) * h;
    if (!(std::fabs(grid.origin[a]) <= kMaxOriginMagnitude))
      throw UsageError(std::string("the grid's origin along ") + kAxis[a] + " would lie beyond ±1e6 Å");
  }
  return grid;
}

}  // namespace

GridSpec make_grid(const GridRequest& request, const Atoms& atoms) {
  if (const std::optional<GridSpec> grid = explicit_grid(request)) return *grid;
  if (request.center || request.length) return centred_grid(request, atoms);
  GridSpec grid;
  grid.spacing = request.spacing;
  if (atoms.empty()) throw UsageError("cannot place a grid around zero atoms");
  const BoundingBox box = bounding_box(atoms);
  for (int a = 0; a < 3; ++a) {
    const double h = grid.spacing[a];
    // The lattice points just outside the padded box (a tiny slack for rounding: a side that
    // falls on a lattice point within 1e-9 of a spacing takes that point).
    const double first = std::floor((box.lo[a] - request.padding) / h + 1e-9);
    const double last = std::ceil((box.hi[a] + request.padding) / h - 1e-9);
    if (!(last - first + 1 <= static_cast<double>(kMaxAxisPoints)))
      throw UsageError(std::string("grid along ") + kAxis[a] + " would need " + number_text(last - first + 1) +
                       " points (limit " + std::to_string(kMaxAxisPoints) +
                       "); use a larger --spacing or smaller --padding");
    grid.dims[a] = static_cast<std::int64_t>(last - first) + 1;
    // Rounded to 1e-6 Å so the origin prints short ("-12.95", not "-12.949999999999999");
    // it stays within 5e-7 Å of the lattice point.
    grid.origin[a] = std::round(first * h * 1e6) / 1e6;
  }
  return grid;
}

std::size_t map_bytes(const GridSpec& grid) noexcept { return grid.point_count() * sizeof(float); }

namespace {

/// A "Key: N kB" line of a /proc file, bytes, or 0 when absent.
std::size_t proc_kib_field(const char* file, const std::string& wanted) {
  std::ifstream in(file);
  std::string key, unit;
  std::size_t kib = 0;
  while (in >> key) {
    if (key == wanted && in >> kib) return kib * 1024;
    in.ignore(1 << 16, '\n');
  }
  return 0;
}

}  // namespace

std::size_t available_memory_bytes() { return available_memory_bytes(1); }

std::size_t available_memory_bytes(int sharing) {
  std::size_t available =
      proc_kib_field("/proc/meminfo", "MemAvailable:") / static_cast<std::size_t>(std::max(1, sharing));
  // An address-space limit (ulimit -v, a batch system's) binds before the machine's memory does.
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const std::size_t used = proc_kib_field("/proc/self/status", "VmSize:");
    const std::size_t room = limit.rlim_cur > used ? static_cast<std::size_t>(limit.rlim_cur) - used : 1;
    available = available == 0 ? room : std::min(available, room);
  }
  return available;
}

std::uint64_t max_grid_points_from_environment() {
  const char* text = std::getenv("ESPGRID_MAX_GRID_POINTS");
  if (text == nullptr || *text == '\0') return 0;
  const auto value = parse_integer(text);
  if (!value || *value < 1)
    throw UsageError(std::string("ESPGRID_MAX_GRID_POINTS must be a positive whole number, got '") + text + "'");
  return static_cast<std::uint64_t>(*value);
}

void check_grid_fits(const GridSpec& grid, std::size_t available) {
  const double points =
      static_cast<double>(grid.dims[0]) * static_cast<double>(grid.dims[1]) * static_cast<double>(grid.dims[2]);
  if (points > 1e12) throw UsageError("grid of " + describe(grid) + " is absurdly large");
  if (const std::uint64_t limit = max_grid_points_from_environment(); limit != 0 && points > static_cast<double>(limit))
    throw UsageError("grid of " + describe(grid) + " is over the limit of " + with_commas(limit) +
                     " points set by ESPGRID_MAX_GRID_POINTS");
  if (available == 0) available = available_memory_bytes();
  const double needed = static_cast<double>(map_bytes(grid));
  if (available != 0 && needed > 0.9 * static_cast<double>(available))
    throw UsageError("grid of " + describe(grid) + " needs " + human_bytes(needed) + " for the map but only " +
                     human_bytes(static_cast<double>(available)) +
                     " of memory is available; use a larger --spacing or a smaller region");
}

void check_atoms_fit(std::size_t atoms, std::size_t available) {
  if (available == 0) available = available_memory_bytes();
  const double needed = static_cast<double>(atoms) * static_cast<double>(kHostBytesPerAtom);
  if (available != 0 && needed > 0.9 * static_cast<double>(available))
    throw UsageError(with_commas(atoms) + " atoms need " + human_bytes(needed) + " of memory but only " +
                     human_bytes(static_cast<double>(available)) + " is available");
}

std::string describe(const GridSpec& grid) {
  // std::to_string, not a stream: a stream takes the C++ global locale's digit grouping.
  return std::to_string(grid.dims[0]) + " x " + std::to_string(grid.dims[1]) + " x " + std::to_string(grid.dims[2]) +
         " = " +
         with_commas(static_cast<std::uint64_t>(grid.dims[0]) * static_cast<std::uint64_t>(grid.dims[1]) *
                     static_cast<std::uint64_t>(grid.dims[2])) +
         " points";
}

}  // namespace espgrid
