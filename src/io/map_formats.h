// Map files: which formats espgrid writes and reads, chosen by extension. Every writer goes
// through write_map, which refuses non-finite values and replaces the destination atomically
// (io/atomic_output_file.h). Writers know nothing about kernels.
#pragma once

#include <string>
#include <string_view>

#include "src/core/potential_map.h"

namespace espgrid {

enum class MapFormat { Dx, Vti };

/// .dx or .vti from the output path's extension; UsageError otherwise.
MapFormat map_format_from_extension(const std::string& path);
/// Whether this build can write .vti (built with VTK).
bool vti_supported() noexcept;
/// UsageError when this build cannot write `path`'s format (e.g. .vti without VTK), so the
/// CLI can refuse before computing.
void check_map_format_supported(const std::string& path);

/// Writes the map atomically (temporary file, then rename). Throws Error when any value is
/// not finite, when the format is unsupported, or when writing fails; the destination is
/// then untouched.
void write_map(const PotentialMap& map, const std::string& path);

/// OpenDX in the layout APBS writes (z fastest, three values a line), straight to `path`.
void write_dx_to(const PotentialMap& map, const std::string& path);
/// VTK XML image data (compressed appended, point data "potential"), straight to `path`.
void write_vti_to(const PotentialMap& map, const std::string& path);

/// The header line that records a map's physics in every text format:
/// "Potential in kT/e (T = 298.15 K), dielectric 1".
std::string physics_comment(const PhysicsOptions& physics);

/// Reads a header comment (without its '#') written by physics_comment, or APBS's
/// "POTENTIAL (kT/e)", into `physics`; false (and `physics` untouched) for any other text.
bool parse_physics_comment(std::string_view comment, PhysicsOptions& physics);

/// Reads an OpenDX scalar field written by espgrid, APBS or another DX writer of the same
/// layout; throws InputError on anything else. The physics comes from espgrid's header line
/// (physics_comment) or APBS's "POTENTIAL (kT/e)"; `unit_known` says whether either was found.
PotentialMap read_dx(const std::string& path, bool* unit_known = nullptr);

}  // namespace espgrid
