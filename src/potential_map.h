// A computed map and the writers/readers for it. Writers know nothing about kernels.
#pragma once

#include <string>
#include <vector>

#include "src/grid.h"

namespace espgrid {

struct PotentialMap {
  GridSpec grid;
  std::vector<float> values;  ///< potential in `unit`, x fastest: i + nx*(j + ny*k)
  std::string unit = "kT/e";
  double dielectric = 1.0;
  double temperature = 298.15;  ///< K
  std::string source;           ///< one line on where the map came from, for file headers
};

enum class MapFormat { Dx, Vti };

/// .dx or .vti from the output path's extension; UsageError otherwise.
MapFormat map_format_from_extension(const std::string& path);
/// Whether this build can write .vti (built with VTK).
bool vti_supported() noexcept;

/// Writes the map atomically (temporary file, then rename). Throws Error when any value is
/// not finite, when the format is unsupported, or when writing fails; the destination is
/// then untouched.
void write_map(const PotentialMap& map, const std::string& path);

/// OpenDX in the layout APBS writes (z fastest, three values a line), straight to `path`.
void write_dx_to(const PotentialMap& map, const std::string& path);
/// VTK XML image data (compressed appended, point data "potential"), straight to `path`.
void write_vti_to(const PotentialMap& map, const std::string& path);

/// Reads an OpenDX scalar field written by espgrid, APBS or another DX writer of the same
/// layout; throws InputError on anything else. Used by tests and by `espgrid verify`.
PotentialMap read_dx(const std::string& path);

}  // namespace espgrid
