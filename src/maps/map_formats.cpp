#include "src/maps/map_formats.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_stream.h"
#include "src/os/atomic_output_file.h"

namespace espgrid {
namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace

namespace {

/// Whether any of the n floats is NaN or infinite: all exponent bits set. Integer tests the
/// compiler vectorizes (std::isfinite in a loop with an early exit did not), a chunk at a time.
bool any_nonfinite(const float* values, std::size_t n) {
  constexpr std::uint32_t kExponent = 0x7f800000u;
  for (std::size_t start = 0; start < n; start += 4096) {
    const std::size_t end = std::min(n, start + 4096);
    std::uint32_t found = 0;
    for (std::size_t i = start; i < end; ++i)
      found |= (std::bit_cast<std::uint32_t>(values[i]) & kExponent) == kExponent;
    if (found) return true;
  }
  return false;
}

}  // namespace

void check_finite(const PotentialMap& map, std::int64_t first_plane, std::int64_t planes) {
  const GridSpec& g = map.grid;
  if (map.values.size() != g.point_count())
    throw Error("internal error: map holds " + std::to_string(map.values.size()) + " values for " + describe(g));
  const auto plane_points = static_cast<std::size_t>(g.dims[0]) * static_cast<std::size_t>(g.dims[1]);
  const std::size_t begin = static_cast<std::size_t>(first_plane) * plane_points;
  const std::size_t end = begin + static_cast<std::size_t>(planes) * plane_points;
  if (!any_nonfinite(map.values.data() + begin, end - begin)) return;
  for (std::size_t n = begin; n < end; ++n) {
    if (!std::isfinite(map.values[n])) {
      const auto nx = static_cast<std::size_t>(g.dims[0]), ny = static_cast<std::size_t>(g.dims[1]);
      throw Error("internal error: the potential at grid point (" + std::to_string(n % nx) + ", " +
                  std::to_string((n / nx) % ny) + ", " + std::to_string(n / (nx * ny)) +
                  ") is not finite; no map written");
    }
  }
}

MapFormat map_format_from_extension(const std::string& path) {
  // The name's last extension, and its last two together (".dx.gz"): the longer one decides.
  const std::string last = lower_extension(path);
  const std::string two = lower_extension(std::filesystem::path(path).stem().string()) + last;
  for (const std::string& ext : {two, last})
    for (const MapFormatInfo& f : map_format_table())
      if (!last.empty() && std::find(f.extensions.begin(), f.extensions.end(), ext) != f.extensions.end())
        return f.format;
  throw UsageError("cannot tell the map format of '" + path + "': name it " + map_extensions_text());
}

std::string_view map_format_name(MapFormat format) { return map_format_info(format).name; }

std::string_view compression_name(VtiCompression compression) {
  switch (compression) {
    case VtiCompression::None:
      return "none";
    case VtiCompression::Lz4:
      return "lz4";
    case VtiCompression::ZLib:
      return "zlib";
    case VtiCompression::Lzma:
      return "lzma";
  }
  return "?";
}

VtiCompression parse_compression(const std::string& text) {
  for (const VtiCompression c : {VtiCompression::None, VtiCompression::Lz4, VtiCompression::ZLib, VtiCompression::Lzma})
    if (text == compression_name(c)) return c;
  throw UsageError("--compression must be none, lz4, zlib or lzma, got '" + text + "'");
}

void check_map_format_supported(const std::string& path, const MapWriteOptions& options) {
  const MapFormatInfo& format = map_format_info(map_format_from_extension(path));
  if (!format.missing) return;
  if (const std::string missing = format.missing(options); !missing.empty())
    throw UsageError("cannot write " + path + missing);
}

std::string physics_comment(const PhysicsOptions& physics) {
  std::string text = "Potential in " + unit_name(physics.unit) + " (T = " + shortest_text(physics.temperature) +
                     " K), dielectric " + shortest_text(physics.dielectric);
  // The Coulomb model's line is what espgrid has always written (readers that parse it keep
  // working); the others name themselves and their parameters (their evaluators' header text).
  return text + model_header(physics);
}

bool parse_physics_comment(std::string_view comment, PhysicsOptions& physics) {
  comment = trim_space(comment);
  // APBS: "POTENTIAL (kT/e)" (its only unit).
  if (comment.rfind("POTENTIAL (kT/e)", 0) == 0) {
    physics = PhysicsOptions{};
    return true;
  }
  // espgrid: "Potential in UNIT (T = X K), dielectric Y"
  constexpr std::string_view kHead = "Potential in ";
  if (comment.rfind(kHead, 0) != 0) return false;
  comment.remove_prefix(kHead.size());
  const std::size_t open = comment.find(" (T = ");
  const std::size_t close = comment.find(" K), dielectric ");
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return false;
  PhysicsOptions parsed;
  try {
    parsed.unit = parse_unit(std::string(comment.substr(0, open)));
  } catch (const UsageError&) {
    return false;
  }
  const auto temperature = parse_number(comment.substr(open + 6, close - open - 6));
  std::string_view rest = comment.substr(close + 16);
  const std::size_t end = std::min(rest.find(','), rest.size());
  const auto dielectric = parse_number(trim_space(rest.substr(0, end)));
  if (!temperature || !dielectric) return false;
  parsed.temperature = *temperature;
  parsed.dielectric = *dielectric;
  rest.remove_prefix(end);
  if (!parse_model_header(rest, parsed)) return false;
  physics = parsed;
  return true;
}

void write_map(const PotentialMap& map, const std::string& path, const MapWriteOptions& options) {
  check_map_format_supported(path, options);
  const MapFormat format = map_format_from_extension(path);
  // Plane writers check each plane as they write it (one pass over memory instead of two); the
  // file is then removed, so no map is written either way.
  if (!has_plane_writer(format, options)) check_finite(map, 0, map.grid.dims[2]);
  AtomicOutputFile out(path);
  try {
    map_format_info(format).write(map, out.temporary_path(), options);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    // Name the map the user asked for, not the temporary file that is removed on the way out.
    std::string what = e.what();
    for (std::size_t at; (at = what.find(out.temporary_path())) != std::string::npos;)
      what.replace(at, out.temporary_path().size(), path);
    throw Error(what + " (nothing written to " + path + ")");
  }
  out.commit();
}

}  // namespace espgrid
