// What the map readers share (maps/dx_format.cpp, maps/mrc_format.cpp, maps/vti_format.cpp,
// maps/map_readers.cpp): the checks every map read from a file passes before anything is
// allocated for it — the limits `espgrid map` puts on a grid and its physics, so a map file
// can never bring in what the program would refuse to compute — and random access to a binary
// file's bytes. Internal to src/maps/: callers use read_map (maps/map_formats.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/core/byte_source.h"
#include "src/physics/potential_map.h"

namespace espgrid {

/// Checks a grid read from a map file as `espgrid map` checks an explicit one (1 to
/// kMaxAxisPoints points an axis, spacing positive, finite and at most kMaxSpacing, origin
/// finite within ±kMaxOriginMagnitude): InputError(path, line, ...) otherwise. Then the point
/// count against ESPGRID_MAX_GRID_POINTS and the memory available (check_grid_fits):
/// UsageError "PATH: ..." (exit 2, as for `map`). Call it before the values are allocated.
void check_read_grid(const GridSpec& grid, const std::string& path, std::size_t line);

/// validate(physics) for physics read from a file: InputError(path, line, ...) otherwise
/// (a header saying "T = nan K" or a dielectric of 0).
void check_read_physics(const PhysicsOptions& physics, const std::string& path, std::size_t line);

/// InputError(path, 0, ...) naming the first grid point whose value is NaN or infinite.
void check_read_values(const PotentialMap& map, const std::string& path);

/// A float32 header field as the double its writer most likely meant: the shortest decimal
/// that rounds to it (0.35f reads 0.35, not 0.3499999940395355), so that a map read from an
/// .mrc and written as .dx says "delta 0.35". Every float reads back as itself.
double float_field(float value);

// The readers, one per format (selected by read_map from the extension). `unit_known` says
// whether the file said which unit its values are in.
PotentialMap read_dx_text(std::string name, std::string text, bool* unit_known);
PotentialMap read_mrc_bytes(const ByteSource& bytes, bool* unit_known);
PotentialMap read_vti_bytes(const ByteSource& bytes, bool* unit_known);

/// The MRC labels espgrid writes for a map's physics: physics_comment (plus ", model coulomb"
/// for the Coulomb model, which the comment leaves unsaid), split at ", " into labels of at
/// most 80 characters, each but the last ending with ",". mrc_physics_from_labels joins them
/// back and parses them (also the single label older espgrid versions wrote).
std::string mrc_physics_text(const PhysicsOptions& physics);

}  // namespace espgrid
