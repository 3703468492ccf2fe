// What `espgrid view` draws, computed from a structure and a map: the molecular surface with
// the potential 1.4 Å outside each vertex (the renderer's definition, docs/viz.md), the map's
// isosurfaces, the colour scale and the provenance lines. The page writer
// (src/view/view_page.h) turns a ViewScene into one HTML file; nothing here knows about HTML.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/core/atoms.h"
#include "src/physics/potential_map.h"
#include "src/view/mesh.h"
#include "src/view/molecular_surface.h"

namespace espgrid::surface {

/// How the potential at the surface's sample points is obtained.
enum class VertexValues {
  Auto,  ///< Sum when the map is an espgrid pair-model map, the sum affordable and agreeing with it; else Map
  Sum,   ///< the exact direct sum over the atoms, with the map's physics (vertex_potential.h)
  Map,   ///< trilinear interpolation of the map (NaN, drawn grey, outside it)
};
/// "auto", "sum", "map"; UsageError otherwise.
VertexValues parse_vertex_values(const std::string& text);

struct ViewOptions {
  SurfaceOptions surface;  ///< the molecular surface (its spacing grows for large structures)
  double offset = 1.4;     ///< Å outside the surface, along its normals, where the potential is taken
  /// Colour scale ±limit in the map's unit; unset: the customary range of the unit
  /// (customary_limit). `limit_auto`: the 95th percentile of |φ| at the surface, rounded up to
  /// 1, 2, 3 or 5 × 10ⁿ (the renderer's --limit auto).
  std::optional<double> limit;
  bool limit_auto = false;
  /// Isosurface levels in the map's unit; unset: ±1 kT/e in the map's unit.
  std::optional<std::vector<double>> levels;
  VertexValues values = VertexValues::Auto;
  /// The first view: "auto" looks along the atoms' thinnest principal axis with the largest
  /// extent across (the renderer's --view auto), or "+x", "-x", "+y", "-y", "+z", "-z": looking
  /// along that direction, with +z up (+y up for the z views).
  std::string view = "auto";
  /// Auto takes the sum only up to this many Coulomb-equivalent pair evaluations (vertices ×
  /// atoms, × 5 for Debye, whose exponential costs five times a Coulomb term: 0.40 s against
  /// 0.076 s for fasciculin-2's 2.2e7 pairs): about 2 s on 2 cores (measured 2026-11-24, under
  /// load); beyond it the map is interpolated.
  double sum_budget = 5.0e8;
  /// A surface of more vertices is contoured again on a coarser grid (vertices scale as
  /// 1/spacing²), so that a large structure's page stays a few tens of MB and a browser draws it:
  /// 600,000 vertices make about 14 MB of page.
  std::size_t max_surface_vertices = 600'000;
  /// The isosurfaces are contoured on every s-th map point, s the smallest stride that keeps
  /// the contoured grid within this many points (a page for a browser, not an archive).
  double max_isosurface_points = 8.0e6;
};

/// --limit's text: "auto" (limit_auto) or a positive number (limit); UsageError otherwise.
void set_colour_limit(ViewOptions& options, const std::string& text);
/// Checks the options every front end sets (`espgrid view`, `espgrid surface`, Python's
/// Map.view): an offset of 0 to 20 Å, a positive finite limit, at least one level and each
/// finite and non-zero, a known view; UsageError naming the option otherwise. (The surface's
/// spacing and probe are checked where the surface is made: molecular_surface.h.)
void check_view_options(const ViewOptions& options);

/// Where a map came from, for the page's provenance panel.
struct MapOrigin {
  std::string path;                 ///< the file as given; empty for a map made in Python
  std::vector<std::string> header;  ///< the file's comment lines (espgrid writes source and physics there)
  /// Whether the physics in the map is espgrid's own record (a header line "Potential in ..."
  /// or a map computed in this process), so that the direct sum computes the same thing.
  bool espgrid_physics = false;
  std::string kernel;  ///< the kernel that computed it, where known
};

struct Isosurface {
  double level = 0;  ///< map units
  TriangleMesh mesh;
  int stride = 1;  ///< map points per contoured point along each axis
};

struct ViewScene {
  TriangleMesh surface;       ///< the molecular surface, outward normals
  std::vector<float> values;  ///< potential at each vertex's sample point, map units; NaN outside the map
  double offset = 1.4;        ///< Å outside the surface where the values were taken
  VertexValues method = VertexValues::Map;
  std::string method_text;     ///< one line: how the values were obtained and why
  SurfaceResult surface_info;  ///< spacing, grid, atoms used, time (its mesh moved to `surface`)
  std::vector<Isosurface> isosurfaces;
  std::string units;                                            ///< "kT/e", "kcal/mol/e", "V"
  double limit = 5;                                             ///< colour scale ±limit
  std::string limit_text;                                       ///< why this limit
  double value_min = 0, value_max = 0;                          ///< over the finite values
  double clamped_fraction = 0;                                  ///< finite values beyond ±limit
  double outside_fraction = 0;                                  ///< values NaN (outside the map)
  std::array<double, 3> camera_direction{0, 0, -1};             ///< unit vector the first view looks along
  std::array<double, 3> camera_up{0, 1, 0};                     ///< unit vector up on the screen, ⟂ the direction
  std::vector<std::pair<std::string, std::string>> provenance;  ///< (label, text) lines
  std::vector<std::string> notes;                               ///< remarks for the user (stderr, and the page)
  double seconds_surface = 0, seconds_values = 0, seconds_isosurfaces = 0;
};

/// The customary colour range of a unit: ±5 kT/e (APBS, PyMOL), ±10 kcal/mol/e (ChimeraX's
/// coulombic), and in volts the 5 kT/e at `temperature` (0.128 V at 298.15 K).
double customary_limit(PotentialUnit unit, double temperature);
/// Smallest 1, 2, 3 or 5 × 10ⁿ at least x (x > 0), as the renderer rounds --limit auto.
double nice_ceiling(double x);

/// The first view's (direction, up) for `view` ("auto" or ±x, ±y, ±z; UsageError otherwise), by
/// viz/render_potential.py's camera_axes: for "auto" the eigenvectors of the atoms' covariance
/// with the smallest and middle eigenvalues, signs fixed so that the direction's largest
/// component is negative and up's positive.
std::pair<std::array<double, 3>, std::array<double, 3>> camera_axes(const Atoms& atoms, const std::string& view);

/// The potential at each vertex's sample point (offset outside along its normal) and how it was
/// obtained, by options.values (see VertexValues and docs/viz.md): shared by `espgrid view` and
/// `espgrid surface --map`. A Poisson-Boltzmann map is always interpolated (auto), and --values
/// sum is a UsageError for it: no sum over the atoms gives a PB potential.
struct SurfaceValues {
  std::vector<float> values;  ///< map units; NaN where interpolation falls outside the map
  VertexValues method = VertexValues::Map;
  std::string method_text;
  std::vector<std::string> notes;
};
SurfaceValues surface_values(const Atoms& atoms, const PotentialMap& map, const MapOrigin& origin,
                             const TriangleMesh& surface, const ViewOptions& options);

/// Throws UsageError when no atom lies inside the map's box (the structure is not the map's);
/// otherwise a note when some atoms lie outside it. `espgrid view` and `espgrid surface --map`.
std::vector<std::string> structure_in_map_notes(const Atoms& atoms, const GridSpec& grid);

/// The colour scale's ±limit for these values and why: options.limit, --limit auto (the 95th
/// percentile of |value|, rounded up by nice_ceiling) or the unit's customary range.
std::pair<double, std::string> colour_limit(const std::vector<float>& values, const ViewOptions& options,
                                            const PhysicsOptions& physics);

/// The renderer's colour (0..255 RGB) of `value` on ±limit: red negative, white 0, blue positive,
/// clamped; grey for NaN.
std::array<std::uint8_t, 3> potential_rgb(double value, double limit);

/// Computes the scene. Throws UsageError for bad options or a structure that lies outside the
/// map entirely, Error when the surface is empty.
ViewScene build_view_scene(const Atoms& atoms, const PotentialMap& map, const MapOrigin& origin,
                           const ViewOptions& options);

}  // namespace espgrid::surface
