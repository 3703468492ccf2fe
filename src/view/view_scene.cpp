#include "src/view/view_scene.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/units.h"
#include "src/view/vertex_potential.h"

namespace espgrid::surface {
namespace {

/// Auto takes the direct sum only when it agrees with the map: the median |sum − interpolated
/// map| over the vertices inside the map at most this fraction of the median |sum|. Measured
/// on fasciculin-2 (2026-11-24): the map made from the same structure gives 0.0003 (Coulomb,
/// 0.5 Å grid), 0.0013 (Debye 0.5 Å; Coulomb 1 Å) and 0.0056 (Debye, 1 Å), trilinear
/// interpolation error that grows as h², so ≈ 0.02 at 2 Å; the same structure with charges 10% larger gives 0.09,
/// shifted by 1 Å 0.19, another dielectric or an APBS map far more. 0.05 separates the two.
constexpr double kAgreement = 0.05;

double one_kt_in(PotentialUnit unit, double temperature) {
  return coulomb_constant(unit, temperature) / coulomb_constant(PotentialUnit::KTPerE, temperature);
}

std::string level_text(double level, const std::string& units) {
  std::string text = level > 0 ? "+" : "";
  return text + number_text(level) + " " + units;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

VertexValues parse_vertex_values(const std::string& text) {
  if (text == "auto") return VertexValues::Auto;
  if (text == "sum") return VertexValues::Sum;
  if (text == "map") return VertexValues::Map;
  throw UsageError("--values must be auto, sum or map, got '" + text + "'");
}

double customary_limit(PotentialUnit unit, double temperature) {
  switch (unit) {
    case PotentialUnit::KTPerE:
      return 5.0;
    case PotentialUnit::KcalPerMolPerE:
      return 10.0;
    case PotentialUnit::Volt:
      return 5.0 * one_kt_in(PotentialUnit::Volt, temperature);
  }
  return 5.0;
}

double nice_ceiling(double x) {
  if (!(x > 0) || !std::isfinite(x)) return 1.0;
  const double e = std::floor(std::log10(x));
  for (double f : {1.0, 2.0, 3.0, 5.0, 10.0})
    if (f * std::pow(10.0, e) >= x * (1 - 1e-9)) return f * std::pow(10.0, e);
  return std::pow(10.0, e + 1);
}

std::pair<std::array<double, 3>, std::array<double, 3>> camera_axes(const Atoms& atoms, const std::string& view) {
  if (view != "auto") {
    static const std::string kViews[] = {"+x", "-x", "+y", "-y", "+z", "-z"};
    if (std::find(std::begin(kViews), std::end(kViews), view) == std::end(kViews))
      throw UsageError("--view must be auto, +x, -x, +y, -y, +z or -z, got '" + view + "'");
    const int axis = view[1] - 'x';
    std::array<double, 3> d{0, 0, 0}, up{0, 0, 0};
    d[static_cast<std::size_t>(axis)] = view[0] == '+' ? 1.0 : -1.0;
    up[axis != 2 ? 2 : 1] = 1.0;
    return {d, up};
  }
  if (atoms.size() < 3) return {{0, 0, -1}, {0, 1, 0}};
  double mean[3] = {0, 0, 0};
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    mean[0] += atoms.x[i];
    mean[1] += atoms.y[i];
    mean[2] += atoms.z[i];
  }
  for (double& m : mean) m /= double(atoms.size());
  double a[3][3] = {};
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    const double p[3] = {atoms.x[i] - mean[0], atoms.y[i] - mean[1], atoms.z[i] - mean[2]};
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) a[r][c] += p[r] * p[c];
  }
  // Cyclic Jacobi rotations: a symmetric 3 × 3 matrix converges to machine precision in a few
  // sweeps; the columns of v are the eigenvectors.
  double v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int sweep = 0; sweep < 50; ++sweep) {
    const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    if (off < 1e-30 * (a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2]) || off == 0) break;
    for (int p = 0; p < 2; ++p)
      for (int q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), sn = t * c;
        for (int k = 0; k < 3; ++k) {  // a = Jᵀ a J
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - sn * akq;
          a[k][q] = sn * akp + c * akq;
        }
        for (int k = 0; k < 3; ++k) {
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - sn * aqk;
          a[q][k] = sn * apk + c * aqk;
        }
        for (int k = 0; k < 3; ++k) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - sn * vkq;
          v[k][q] = sn * vkp + c * vkq;
        }
      }
  }
  int order[3] = {0, 1, 2};
  std::sort(order, order + 3, [&](int i, int j) { return a[i][i] < a[j][j]; });
  std::array<double, 3> d{}, up{};
  for (int k = 0; k < 3; ++k) {
    d[static_cast<std::size_t>(k)] = v[k][order[0]];
    up[static_cast<std::size_t>(k)] = v[k][order[1]];
  }
  const auto largest = [](const std::array<double, 3>& u) {
    return std::max_element(u.begin(), u.end(), [](double x, double y) { return std::fabs(x) < std::fabs(y); });
  };
  if (*largest(d) > 0)
    for (double& x : d) x = -x;
  if (*largest(up) < 0)
    for (double& x : up) x = -x;
  return {d, up};
}

SurfaceValues surface_values(const Atoms& atoms, const PotentialMap& map, const MapOrigin& origin,
                             const TriangleMesh& surface, const ViewOptions& options) {
  SurfaceValues out;
  const std::string units = unit_name(map.physics.unit);
  const std::vector<double> points = offset_points(surface, options.offset);
  const double pairs = static_cast<double>(surface.vertex_count()) * static_cast<double>(atoms.size()) *
                       (map.physics.model == PairModel::Debye ? 5.0 : 1.0);
  const std::string sum_text = "exact direct sum over " + with_commas(atoms.size()) + " atoms (" +
                               describe_model(map.physics) + ", dielectric " + shortest_text(map.physics.dielectric) +
                               ")";
  const std::string map_text = "trilinear interpolation of the map";
  // A Poisson-Boltzmann map is a field solve: no sum over the atoms gives it (the sum with its
  // physics would be the vacuum Coulomb potential at the solute's dielectric, labelled PB).
  const bool pb = map.physics.is_pb();
  if (pb && options.values == VertexValues::Sum)
    throw UsageError(
        "--values sum: the map is a Poisson-Boltzmann solution, which no sum over the atoms gives (the sum would be "
        "the vacuum Coulomb potential at the solute's dielectric " +
        shortest_text(map.physics.dielectric) + "); use --values map (or auto, which interpolates a PB map)");
  std::vector<float> interpolated = interpolate(map, points);
  if (pb) {
    out.values = std::move(interpolated);
    out.method = VertexValues::Map;
    out.method_text = map_text + " (a Poisson-Boltzmann map: no sum over the atoms gives it)";
  } else if (options.values == VertexValues::Map) {
    out.values = std::move(interpolated);
    out.method = VertexValues::Map;
    out.method_text = map_text + " (asked for)";
  } else if (options.values == VertexValues::Sum) {
    if (map.physics.is_pb())
      throw UsageError(
          "--values sum sums a pair model over the atoms; this map is a Poisson-Boltzmann solution, "
          "which no pair sum gives: leave --values out (the map's values are shown)");
    out.values = potential_at(atoms, map.physics, points);
    out.method = VertexValues::Sum;
    out.method_text = sum_text + " (asked for)";
  } else if (map.physics.is_pb()) {
    out.values = std::move(interpolated);
    out.method = VertexValues::Map;
    out.method_text = map_text + " (a Poisson-Boltzmann map: no pair sum over the atoms gives it)";
  } else if (!origin.espgrid_physics) {
    out.values = std::move(interpolated);
    out.method = VertexValues::Map;
    out.method_text = map_text + " (the map's header names no espgrid pair model to sum)";
  } else if (pairs > options.sum_budget) {
    out.values = std::move(interpolated);
    out.method = VertexValues::Map;
    out.method_text = map_text + " (a direct sum would take " + short_scientific(pairs) +
                      " Coulomb-equivalent pair evaluations; --values sum forces it)";
  } else {
    std::vector<float> sum = potential_at(atoms, map.physics, points);
    std::vector<double> difference, magnitude;
    for (std::size_t i = 0; i < sum.size(); ++i) {
      if (!std::isfinite(interpolated[i])) continue;
      difference.push_back(std::fabs(double(sum[i]) - double(interpolated[i])));
      magnitude.push_back(std::fabs(double(sum[i])));
    }
    const double d = median_of(difference), m = median_of(magnitude);
    if (difference.empty() || d <= kAgreement * m) {
      out.values = std::move(sum);
      out.method = VertexValues::Sum;
      out.method_text = sum_text + (difference.empty() ? ""
                                                       : "; agrees with the map (median difference " +
                                                             short_scientific(d) + " " + units + ")");
    } else {
      out.values = std::move(interpolated);
      out.method = VertexValues::Map;
      out.method_text = map_text + " (the structure's direct sum differs from the map: median " + short_scientific(d) +
                        " " + units + " of a median |potential| of " + short_scientific(m) + ")";
      out.notes.push_back("the structure's direct sum differs from the map at the surface (median " +
                          short_scientific(d) + " " + units +
                          "): the map's values are shown; is the structure the map's?");
    }
  }
  return out;
}

std::pair<double, std::string> colour_limit(const std::vector<float>& values, const ViewOptions& options,
                                            const PhysicsOptions& physics) {
  if (options.limit) return {*options.limit, "as asked"};
  if (options.limit_auto) {
    std::vector<double> finite_abs;
    for (float v : values)
      if (std::isfinite(v)) finite_abs.push_back(std::fabs(double(v)));
    double p95 = 0;
    if (!finite_abs.empty()) {
      std::sort(finite_abs.begin(), finite_abs.end());
      // numpy's default percentile: linear between the two nearest ranks.
      const double rank = 0.95 * static_cast<double>(finite_abs.size() - 1);
      const auto below = static_cast<std::size_t>(std::floor(rank));
      const std::size_t above = std::min(below + 1, finite_abs.size() - 1);
      p95 = finite_abs[below] + (rank - double(below)) * (finite_abs[above] - finite_abs[below]);
    }
    return {nice_ceiling(p95), "auto: the 95th percentile of |potential| at the surface, rounded up"};
  }
  return {customary_limit(physics.unit, physics.temperature),
          physics.unit == PotentialUnit::KTPerE           ? "APBS's and PyMOL's customary ±5 kT/e"
          : physics.unit == PotentialUnit::KcalPerMolPerE ? "ChimeraX's customary ±10 kcal/mol/e"
                                                          : "5 kT/e in volts"};
}

std::array<std::uint8_t, 3> potential_rgb(double value, double limit) {
  // viz/render_potential.py's DIVERGING stops (and web/src/viewer.js's STOPS): red at -limit,
  // white at 0, blue at +limit, equal steps, linear in RGB, clamped; NaN grey (0.6).
  static constexpr double kStops[7][3] = {{0.70, 0.04, 0.09}, {0.85, 0.25, 0.22}, {0.95, 0.60, 0.55},
                                          {0.97, 0.97, 0.97}, {0.58, 0.71, 0.94}, {0.25, 0.45, 0.85},
                                          {0.07, 0.22, 0.70}};
  double rgb[3] = {0.6, 0.6, 0.6};
  if (std::isfinite(value)) {
    const double t = std::clamp((value + limit) / (2 * limit), 0.0, 1.0) * 6.0;
    const int i = std::min(5, static_cast<int>(std::floor(t)));
    const double f = t - i;
    for (int c = 0; c < 3; ++c) rgb[c] = kStops[i][c] + f * (kStops[i + 1][c] - kStops[i][c]);
  }
  std::array<std::uint8_t, 3> out{};
  for (int c = 0; c < 3; ++c) out[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(std::lround(255.0 * rgb[c]));
  return out;
}

std::vector<std::string> structure_in_map_notes(const Atoms& atoms, const GridSpec& g) {
  // The structure must be the map's: at least one atom inside the map's box.
  std::size_t inside = 0;
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    const double p[3] = {atoms.x[i], atoms.y[i], atoms.z[i]};
    bool in = true;
    for (int a = 0; a < 3; ++a) {
      const double lo = g.origin[a], hi = g.position(a, g.dims[a] - 1);
      in = in && p[a] >= lo - 1e-6 && p[a] <= hi + 1e-6;
    }
    inside += in ? 1 : 0;
  }
  if (inside == 0)
    throw UsageError(
        "no atom of the structure lies inside the map's box: is it the structure the map was computed from?");
  if (inside < atoms.size())
    return {with_commas(atoms.size() - inside) + " of " + with_commas(atoms.size()) + " atoms lie outside the map"};
  return {};
}

void set_colour_limit(ViewOptions& options, const std::string& text) {
  if (text == "auto") {
    options.limit_auto = true;
    options.limit.reset();
    return;
  }
  const auto value = parse_number(text);
  if (!value || !(*value > 0 && std::isfinite(*value)))
    throw UsageError("--limit must be a positive number or 'auto', got '" + text + "'");
  options.limit = *value;
  options.limit_auto = false;
}

void check_view_options(const ViewOptions& options) {
  if (!(options.offset >= 0 && options.offset <= 20))
    throw UsageError("--offset must be between 0 and 20 Å, got " + number_text(options.offset));
  if (options.limit && !(*options.limit > 0 && std::isfinite(*options.limit)))
    throw UsageError("--limit must be a positive number or 'auto', got " + number_text(*options.limit));
  if (options.levels) {
    if (options.levels->empty()) throw UsageError("--levels needs at least one number");
    for (double level : *options.levels)
      if (!std::isfinite(level) || level == 0)
        throw UsageError("--levels must be non-zero numbers, got " + number_text(level));
  }
  camera_axes(Atoms{}, options.view);  // a view that is not one of the names
}

namespace {

/// The values' range, how many lie outside the map or beyond the colour scale, and the scale.
void add_value_statistics(ViewScene& scene, const ViewOptions& options, const PhysicsOptions& physics) {
  std::vector<double> finite_abs;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::size_t outside = 0;
  for (float v : scene.values) {
    if (!std::isfinite(v)) {
      ++outside;
      continue;
    }
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
    finite_abs.push_back(std::fabs(double(v)));
  }
  scene.value_min = finite_abs.empty() ? 0 : lo;
  scene.value_max = finite_abs.empty() ? 0 : hi;
  scene.outside_fraction = scene.values.empty() ? 0 : double(outside) / double(scene.values.size());
  if (scene.outside_fraction > 0)
    scene.notes.push_back(short_fixed(100 * scene.outside_fraction, 0) +
                          "% of the surface samples lie outside the map (drawn grey)");
  std::tie(scene.limit, scene.limit_text) = colour_limit(scene.values, options, physics);
  std::size_t clamped = 0;
  for (double a : finite_abs) clamped += a > scene.limit ? 1 : 0;
  scene.clamped_fraction = finite_abs.empty() ? 0 : double(clamped) / double(finite_abs.size());
  if (scene.clamped_fraction > 0.5)
    scene.notes.push_back(short_fixed(100 * scene.clamped_fraction, 0) + "% of the surface is beyond ±" +
                          number_text(scene.limit) + " " + scene.units + " (values " + number_text(scene.value_min) +
                          " to " + number_text(scene.value_max) + "): try --limit auto" +
                          (physics.model == PairModel::Coulomb && physics.dielectric < 10
                               ? std::string(", or map with --model debye --dielectric 78.54 --ionic-strength 0.15 "
                                             "(a Coulomb sum at dielectric ") +
                                     shortest_text(physics.dielectric) + " is far larger than a screened map)"
                               : std::string()));
}

/// The map's isosurfaces at the levels asked for (±1 kT/e by default), contoured at the smallest
/// stride that keeps the contoured grid within options.max_isosurface_points; returns the stride.
int add_isosurfaces(ViewScene& scene, const PotentialMap& map, const ViewOptions& options) {
  const GridSpec& g = map.grid;
  Stopwatch clock;
  std::vector<double> levels;
  if (options.levels) {
    levels = *options.levels;
  } else {
    const double one = one_kt_in(map.physics.unit, map.physics.temperature);
    levels = {-one, one};
  }
  int stride = 1;
  while (static_cast<double>((g.dims[0] - 1) / stride + 1) * static_cast<double>((g.dims[1] - 1) / stride + 1) *
             static_cast<double>((g.dims[2] - 1) / stride + 1) >
         options.max_isosurface_points)
    ++stride;
  ScalarField field;
  field.values = map.values.data();
  field.dims = g.dims;
  field.origin = g.origin;
  field.spacing = g.spacing;
  for (double level : levels) {
    Isosurface iso;
    iso.level = level;
    iso.stride = stride;
    iso.mesh = contour(field, level, level > 0, stride);
    compute_normals(iso.mesh);
    scene.isosurfaces.push_back(std::move(iso));
  }
  scene.seconds_isosurfaces = clock.seconds();

  return stride;
}

/// The page's provenance panel: where the map came from, its physics and grid, how the surface,
/// its values and the isosurfaces were made.
void add_provenance(ViewScene& scene, const PotentialMap& map, const MapOrigin& origin, const ViewOptions& options,
                    std::size_t atoms_used, int stride) {
  const GridSpec& g = map.grid;
  auto& prov = scene.provenance;
  if (!origin.path.empty()) prov.emplace_back("map", origin.path);
  for (const std::string& line : origin.header) prov.emplace_back("map header", line);
  if (!origin.kernel.empty()) prov.emplace_back("kernel", origin.kernel);
  prov.emplace_back("physics", describe_model(map.physics) + ", dielectric " + shortest_text(map.physics.dielectric) +
                                   ", " + shortest_text(map.physics.temperature) + " K, values in " + scene.units);
  prov.emplace_back("grid", std::to_string(g.dims[0]) + " × " + std::to_string(g.dims[1]) + " × " +
                                std::to_string(g.dims[2]) + " points, spacing " + shortest_text(g.spacing[0]) + ", " +
                                shortest_text(g.spacing[1]) + ", " + shortest_text(g.spacing[2]) + " Å, origin (" +
                                short_fixed(g.origin[0], 3) + ", " + short_fixed(g.origin[1], 3) + ", " +
                                short_fixed(g.origin[2], 3) + ") Å");
  prov.emplace_back("surface",
                    "Gaussian molecular surface (f = 1, α = 2) of " + with_commas(atoms_used) + " atoms on a " +
                        shortest_text(scene.surface_info.spacing) + " Å grid" +
                        (options.surface.probe > 0 ? ", probe " + shortest_text(options.surface.probe) + " Å" : "") +
                        ", smoothed: " + with_commas(scene.surface.vertex_count()) + " vertices, " +
                        with_commas(scene.surface.triangle_count()) + " triangles");
  prov.emplace_back("surface values", "potential " + shortest_text(options.offset) +
                                          " Å outside the surface along its normals: " + scene.method_text);
  prov.emplace_back("surface range", number_text(scene.value_min) + " to " + number_text(scene.value_max) + " " +
                                         scene.units + "; " + short_fixed(100 * scene.clamped_fraction, 0) +
                                         "% beyond ±" + number_text(scene.limit));
  std::string iso_text;
  for (const Isosurface& iso : scene.isosurfaces) {
    if (!iso_text.empty()) iso_text += "; ";
    iso_text += level_text(iso.level, scene.units) + ": " + with_commas(iso.mesh.triangle_count()) + " triangles";
  }
  if (stride > 1) iso_text += " (contoured on the map's points at stride " + std::to_string(stride) + ")";
  prov.emplace_back("isosurfaces", iso_text);
}

}  // namespace

ViewScene build_view_scene(const Atoms& atoms, const PotentialMap& map, const MapOrigin& origin,
                           const ViewOptions& options) {
  check_view_options(options);
  if (map.values.size() != map.grid.point_count() || map.grid.point_count() == 0)
    throw Error("internal error: the map holds no values for its grid");
  if (atoms.empty()) throw UsageError("the structure has no atoms");

  ViewScene scene;
  std::tie(scene.camera_direction, scene.camera_up) = camera_axes(atoms, options.view);
  scene.offset = options.offset;
  scene.units = unit_name(map.physics.unit);

  const std::vector<std::string> placement = structure_in_map_notes(atoms, map.grid);
  scene.notes.insert(scene.notes.end(), placement.begin(), placement.end());

  // The surface.
  SurfaceOptions surface_options = options.surface;
  surface_options.coarsen = true;
  Stopwatch clock;
  surface_options.max_vertices = options.max_surface_vertices;
  SurfaceResult result = molecular_surface(atoms, surface_options);
  scene.surface = std::move(result.mesh);
  scene.surface_info = result;
  scene.surface_info.mesh = TriangleMesh{};
  scene.seconds_surface = clock.seconds();
  if (scene.surface_info.spacing > options.surface.spacing)
    scene.notes.push_back("surface grid spacing " + short_fixed(scene.surface_info.spacing, 2) + " Å instead of " +
                          shortest_text(options.surface.spacing) + " Å: the structure is large (at most " +
                          with_commas(options.max_surface_vertices) + " vertices in a page)");

  // The values at the sample points.
  clock.restart();
  SurfaceValues values = surface_values(atoms, map, origin, scene.surface, options);
  scene.values = std::move(values.values);
  scene.method = values.method;
  scene.method_text = std::move(values.method_text);
  scene.notes.insert(scene.notes.end(), values.notes.begin(), values.notes.end());
  scene.seconds_values = clock.seconds();

  add_value_statistics(scene, options, map.physics);

  const int stride = add_isosurfaces(scene, map, options);

  add_provenance(scene, map, origin, options, result.atoms_used, stride);
  return scene;
}

}  // namespace espgrid::surface
