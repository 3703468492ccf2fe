// read_map: one entry for every map format espgrid writes, and the checks the readers share
// (maps/map_reading.h).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <sys/stat.h>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_reading.h"

namespace espgrid {
namespace {

const char* const kAxisName[3] = {"x", "y", "z"};

}  // namespace

void check_read_grid(const GridSpec& grid, const std::string& path, std::size_t line) {
  for (int a = 0; a < 3; ++a) {
    const std::int64_t n = grid.dims[a];
    if (n < 1 || n > kMaxAxisPoints)
      throw InputError(path, line,
                       std::string("the grid has ") + std::to_string(n) + " points along " + kAxisName[a] +
                           "; espgrid takes 1 to " + std::to_string(kMaxAxisPoints));
    const double h = grid.spacing[a];
    if (!std::isfinite(h) || h <= 0 || h > kMaxSpacing)
      throw InputError(path, line,
                       std::string("grid spacing along ") + kAxisName[a] + " is " + number_text(h) +
                           " Å; espgrid takes a positive spacing of at most " + number_text(kMaxSpacing) + " Å");
    const double o = grid.origin[a];
    if (!std::isfinite(o) || std::fabs(o) > kMaxOriginMagnitude)
      throw InputError(path, line,
                       std::string("grid origin along ") + kAxisName[a] + " is " + number_text(o) +
                           " Å; espgrid takes a finite origin within ±" + number_text(kMaxOriginMagnitude) + " Å");
  }
  try {
    check_grid_fits(grid);
  } catch (const UsageError& e) {
    throw UsageError(path + ": " + e.what());
  }
}

void check_read_physics(const PhysicsOptions& physics, const std::string& path, std::size_t line) {
  try {
    validate(physics);
  } catch (const UsageError& e) {
    throw InputError(path, line, std::string("the map's header says: ") + e.what());
  }
}

void check_read_values(const PotentialMap& map, const std::string& path) {
  const auto nx = static_cast<std::size_t>(map.grid.dims[0]), ny = static_cast<std::size_t>(map.grid.dims[1]);
  for (std::size_t n = 0; n < map.values.size(); ++n) {
    if (std::isfinite(map.values[n])) continue;
    throw InputError(path, 0,
                     "the value at grid point (" + std::to_string(n % nx) + ", " + std::to_string((n / nx) % ny) +
                         ", " + std::to_string(n / (nx * ny)) + ") is " +
                         (std::isnan(map.values[n]) ? "NaN" : "infinite") + "; a map holds finite numbers");
  }
}

double float_field(float value) {
  if (!std::isfinite(value)) return static_cast<double>(value);
  char text[32];
  const auto printed = std::to_chars(text, text + sizeof text, value);  // shortest round trip
  double out = 0;
  const auto parsed = std::from_chars(text, printed.ptr, out);
  return parsed.ec == std::errc{} ? out : static_cast<double>(value);
}

// ---- read_map -----------------------------------------------------------------------------------

PotentialMap read_map(const std::string& path, bool* unit_known) {
  return map_format_info(map_format_from_extension(path)).read(path, unit_known);
}

PotentialMap read_map_bytes(MapFormat format, const std::string& name, std::string bytes, bool* unit_known) {
  const MapFormatInfo& f = map_format_info(format);
  if (!f.read_bytes) throw UsageError("internal error: " + std::string(f.word()) + " is not read from memory");
  return f.read_bytes(name, std::move(bytes), unit_known);
}

}  // namespace espgrid
