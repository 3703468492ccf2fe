// read_map: one entry for every map format espgrid writes, and the checks the readers share
// (maps/map_reading.h).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <sys/stat.h>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/core/units.h"
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

namespace {

/// A map whose file records no espgrid physics is foreign (PotentialMap::foreign): its unit is
/// unknown until a caller names it.
PotentialMap marked(PotentialMap map, const bool& known, bool* unit_known) {  // known: after the reader ran
  if (!known) {
    if (map.foreign.empty()) map.foreign = "another program";
    map.unit_known = false;
  } else if (!map.foreign.empty()) {
    // A title that says "not computed by espgrid" and an espgrid physics line as well (a file edited
    // by hand, or by a fuzzer): foreign wins, so only the unit is known — what its file says again
    // when written (map_physics_text), instead of a model and medium it would then lose.
    PhysicsOptions unit_only;
    unit_only.unit = map.physics.unit;
    map.physics = unit_only;
  }
  if (unit_known) *unit_known = known;
  return map;
}

}  // namespace

std::string foreign_map_title(const PotentialMap& map) {
  return "map converted by espgrid " ESPGRID_VERSION "; not computed by espgrid (" + map.foreign +
         "): its values as read, their model and medium unknown";
}

std::string foreign_map_unit(const PotentialMap& map) {
  return map.unit_known ? "values in " + unit_name(map.physics.unit) : std::string("values in an unknown unit");
}

bool read_foreign_note(std::string_view text, PotentialMap& map) {
  constexpr std::string_view kProgram = "not computed by espgrid (";
  if (const std::size_t at = text.find(kProgram); at != std::string_view::npos) {
    if (!map.foreign.empty()) return false;  // the title comes first; a file name after it is not one
    const std::string_view rest = text.substr(at + kProgram.size());
    // The program's name ends at the ')' before "): its values" (.dx, .vti) or at the text's
    // last ')' (an .mrc label, "...(APBS)" padded with blanks).
    std::size_t end = rest.find("): ");
    if (end == std::string_view::npos) end = rest.rfind(')');
    const std::string_view name = rest.substr(0, end == std::string_view::npos ? 0 : end);
    // A name every format writes back as read (an .mrc label holds 80 characters); any other is
    // not trusted to be one.
    const bool plain =
        !name.empty() && name.size() <= kMaxForeignName &&
        std::all_of(name.begin(), name.end(), [](char c) { return c >= ' ' && c <= '~' && c != '(' && c != ')'; });
    map.foreign = plain ? std::string(name) : std::string("another program");
    return false;
  }
  constexpr std::string_view kUnit = "values in ";
  text = trim_space(text);
  if (text.rfind(kUnit, 0) != 0) return false;
  std::string_view unit = text.substr(kUnit.size());
  unit = trim_space(unit.substr(0, std::min(unit.find(';'), unit.size())));  // .mrc: "...; model and medium unknown"
  PhysicsOptions physics;  // a foreign map's physics: nothing known but the unit
  try {
    physics.unit = parse_unit(std::string(unit));
  } catch (const UsageError&) {
    return false;  // "values in an unknown unit", or a unit espgrid does not write
  }
  map.physics = physics;
  if (map.foreign.empty()) map.foreign = "another program";  // only converted maps say "values in"
  return true;
}

std::string map_physics_text(const PotentialMap& map) {
  return map.foreign.empty()
             ? physics_comment(map.physics)
             : "not computed by espgrid (" + map.foreign + "): " + foreign_map_unit(map) + ", model and medium unknown";
}

PotentialMap read_map(const std::string& path, bool* unit_known) {
  bool known = false;
  return marked(map_format_info(map_format_from_extension(path)).read(path, &known), known, unit_known);
}

PotentialMap read_map_bytes(MapFormat format, const std::string& name, std::string bytes, bool* unit_known) {
  const MapFormatInfo& f = map_format_info(format);
  if (!f.read_bytes) throw UsageError("internal error: " + std::string(f.word()) + " is not read from memory");
  bool known = false;
  return marked(f.read_bytes(name, std::move(bytes), &known), known, unit_known);
}

}  // namespace espgrid
