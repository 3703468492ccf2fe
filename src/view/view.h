// `espgrid view` and Python's Map.view in one call: the scene (view_scene.h) and the page
// (view_page.h) from a structure and a map in memory. The front ends read the files; this
// reads only the structure file's residue names (for a cartoon) and the web assets.
#pragma once

#include <string>
#include <vector>

#include "src/core/atoms.h"
#include "src/physics/potential_map.h"
#include "src/view/view_page.h"
#include "src/view/view_scene.h"

namespace espgrid {

struct ViewResult {
  std::string html;
  surface::ViewScene scene;  ///< what the page shows (its meshes included)
  ViewPageSizes sizes;
  bool cartoon = false;  ///< residue names were read: the page can draw a cartoon
  double seconds = 0;    ///< scene and page, wall time
};

/// The page for `atoms` (read from `structure_path`, whose residue names are read again for
/// the cartoon when it is a PQR file; empty for atoms from elsewhere) and `map`. `title`:
/// the page's heading (the map's file name when empty). Throws as build_view_scene and
/// load_web_assets do; the assets are read first, so a build without them fails at once.
ViewResult make_view(const Atoms& atoms, const std::string& structure_path, const std::string& structure_source,
                     const PotentialMap& map, const surface::MapOrigin& origin, const surface::ViewOptions& options,
                     const std::string& title = "");

/// The comment lines at the top of a text map (OpenDX: the '#' lines before the header),
/// without their '#': espgrid writes its version, the map's source and its physics there.
/// Empty for binary formats and files that cannot be read.
std::vector<std::string> map_header_comments(const std::string& path);

/// The header lines of a map read by read_map: a text map's own comment lines (map_header_comments);
/// for a binary one (.mrc, .vti, .dx.gz) its source and, when the file said, its physics line.
std::vector<std::string> map_header_lines(const std::string& path, const PotentialMap& map, bool physics_known);
/// Whether `header` holds espgrid's physics line ("Potential in ..."), i.e. the map records
/// an espgrid pair model that a direct sum reproduces (APBS's "POTENTIAL (kT/e)" does not).
bool header_has_espgrid_physics(const std::vector<std::string>& header);

}  // namespace espgrid
