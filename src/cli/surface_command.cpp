// `espgrid surface STRUCTURE -o surf.glb|.ply|.vtp`: the molecular surface coloured by the
// potential 1.4 Å outside it, as a mesh file (docs/viz.md, "Surface meshes"). The
// potential is the exact direct sum over the atoms with the Physics options, or, with --map, the
// map's (summed where that agrees with the map, as `espgrid view` decides). The same surface
// and colours as `espgrid view` and the renderer.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/map_pipeline.h"
#include "src/view/mesh_formats.h"
#include "src/view/molecular_surface.h"
#include "src/view/vertex_potential.h"
#include "src/view/view.h"
#include "src/view/view_scene.h"

namespace espgrid::cli {

namespace {

/// The structure and the physics as `espgrid map` takes them (job/job_options.h).
const JobOptionSet kSurfaceJobOptions{{OptionGroup::Input, OptionGroup::Physics}, without_pdb_input_options()};

/// `espgrid surface`'s options: the structure and physics of kSurfaceJobOptions and its own.
cxxopts::Options surface_options() {
  cxxopts::Options options(
      "espgrid surface",
      "Write the molecular surface coloured by the potential 1.4 Å outside it as a mesh file: .glb (glTF: Blender,\n"
      "web viewers), .ply (Blender, MeshLab, ParaView) or .vtp (ParaView). Vertices carry the colour and the "
      "potential.\n");
  options.custom_help("STRUCTURE.pqr|.xyz -o SURFACE.glb|.ply|.vtp [--map MAP.dx] [options]");
  options.positional_help("");
  add_job_options(options, kSurfaceJobOptions, "structure file (.pqr, .xyz)");
  // clang-format off
  options.add_options("Output")
      ("o,output", "mesh to write: .glb, .ply or .vtp; repeat for several", cxxopts::value<std::vector<std::string>>());
  options.add_options("Potential")
      ("map", "take the potential from this map (" + map_extensions_text() + ": its physics) instead of summing with "
              "the Physics options", cxxopts::value<std::string>())
      ("values", "with --map: auto (the exact sum where it agrees with the map and is affordable), sum or map",
       cxxopts::value<std::string>()->default_value("auto"))
      ("map-units", "with --map: the map's unit when its header does not say", cxxopts::value<std::string>())
      ("limit", "colours: ±LIMIT in the potential's unit, or 'auto' (95th percentile of |potential|, rounded up); "
                "default ±5 kT/e, ±10 kcal/mol/e, 5 kT/e in V", cxxopts::value<std::string>());
  options.add_options("Surface")
      ("offset", "potential this far outside the surface, along its normals, Å", cxxopts::value<std::string>()->default_value("1.4"))
      ("surface-spacing", "grid spacing of the surface, Å", cxxopts::value<std::string>()->default_value("0.5"))
      ("probe", "add this to every radius, Å (1.4: a solvent-accessible surface)", cxxopts::value<std::string>()->default_value("0"));
  // clang-format on
  options.add_options()("h,help", "show this help");
  return options;
}

/// Refuses, before anything is read, an output of an unknown format, one that cannot be written,
/// one named twice or one that is an input.
void check_mesh_outputs(const std::vector<std::string>& outputs, const std::vector<std::string>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    mesh_format_from_extension(outputs[i]);
    for (std::size_t j = 0; j < i; ++j)
      if (outputs[j] == outputs[i]) throw UsageError("-o " + outputs[i] + " is given twice");
    for (const std::string& in : inputs) {
      std::error_code ec;
      if (std::filesystem::equivalent(outputs[i], in, ec) && !ec)
        throw UsageError("-o " + outputs[i] + " is the input " + in + "; name another file");
    }
    check_output_path(outputs[i]);
  }
}

/// --map takes the physics from the map's header; --values and --map-units apply with --map only.
void check_map_options(const cxxopts::ParseResult& args, bool with_map) {
  for (const JobOption& option : job_options())
    if (with_map && option.group == OptionGroup::Physics && args.count(std::string(option.name)))
      throw UsageError("--" + std::string(option.name) +
                       " does not apply with --map: the map's header gives its physics");
  for (const char* option : {"values", "map-units"})
    if (!with_map && args.count(option)) throw UsageError(std::string("--") + option + " applies with --map only");
}

/// --model pb without --map: the surface's values are a sum over the atoms, which no PB potential is.
void refuse_pb_sum(const PhysicsOptions& physics, const std::string& input) {
  if (physics.is_pb())
    throw UsageError(
        "--model pb: a Poisson-Boltzmann potential is a field solve, not a sum over the atoms; map it first and "
        "colour the surface with that map: espgrid map " +
        input + " --model pb -o pb.dx, then espgrid surface " + input + " --map pb.dx -o SURFACE");
}

/// The structure, which must carry its charges (a PQR or XYZ, not a PDB/mmCIF file); its notices
/// printed.
Structure load_charged_structure(const std::string& input, const MapJob& job) {
  const StructureFormat structure_format = job.input.format ? *job.input.format : format_from_extension(input);
  if (needs_charge_assignment(structure_format))
    throw UsageError(input +
                     ": give a structure with charges (.pqr, .xyz); for a PDB/mmCIF file, `espgrid map` "
                     "keeps pdb2pqr's PQR beside the map");
  Structure structure = load_structure(input, structure_format);
  for (const std::string& notice : structure.notices) std::fprintf(stderr, "note: %s\n", notice.c_str());
  return structure;
}

/// --map's map, read before the surface is built: a map that is not the structure's is refused
/// (or noted) now. Sets whether its header gives its unit.
PotentialMap read_surface_map(const cxxopts::ParseResult& args, const Atoms& atoms, bool& unit_known) {
  PotentialMap map = read_map_with_unit(args["map"].as<std::string>(), args, "map-units", &unit_known);  // any format
  for (const std::string& note : surface::structure_in_map_notes(atoms, map.grid))
    std::fprintf(stderr, "note: %s\n", note.c_str());
  return map;
}

/// The values' range, how many are beyond the colour limit and how many are outside the map (NaN).
struct ValueRange {
  double lo = 0, hi = 0;
  bool any = false;
  std::size_t clamped = 0, outside = 0;
};

/// `coloured`'s colours from its potential and limit, and the range of the values.
ValueRange colour_vertices(ColouredMesh& coloured) {
  ValueRange r;
  coloured.colours.reserve(coloured.potential->size());
  for (float v : *coloured.potential) {
    coloured.colours.push_back(surface::potential_rgb(v, coloured.limit));
    if (!std::isfinite(v)) {
      ++r.outside;
      continue;
    }
    r.lo = r.any ? std::min(r.lo, double(v)) : v;
    r.hi = r.any ? std::max(r.hi, double(v)) : v;
    r.any = true;
    r.clamped += std::fabs(v) > coloured.limit ? 1 : 0;
  }
  return r;
}

/// The potential at the surface's vertices from --map's `map` (summed where that agrees with the
/// map, as `espgrid view` decides); sets how (`method`), the map's physics and the map's comments.
std::vector<float> values_from_map(const std::string& map_path, const PotentialMap& map, bool unit_known,
                                   const Atoms& atoms, const surface::TriangleMesh& mesh,
                                   const surface::ViewOptions& view, std::string& method, PhysicsOptions& physics,
                                   std::vector<std::string>& comments) {
  surface::MapOrigin origin;
  origin.path = map_path;
  origin.header = map_header_lines(map_path, map, unit_known);
  origin.espgrid_physics = header_has_espgrid_physics(origin.header);
  surface::SurfaceValues v = surface::surface_values(atoms, map, origin, mesh, view);
  method = v.method_text;
  for (const std::string& note : v.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  physics = map.physics;
  comments.push_back("map: " + map_path);
  for (const std::string& line : origin.header) comments.push_back("map header: " + line);
  return std::move(v.values);
}

}  // namespace

int run_surface(int argc, char** argv) {
  cxxopts::Options options = surface_options();
  const auto args = parse_args(options, argc, argv, {"output"});
  if (args.count("help")) {
    std::cout << options.help({"Input", "Output", "Potential", "Physics", "Surface", ""});
    return 0;
  }
  if (!args.count("input")) throw UsageError("no structure given: espgrid surface STRUCTURE.pqr -o SURFACE.glb");
  if (!args.count("output"))
    throw UsageError("no output given: add -o SURFACE.glb, -o SURFACE.ply and/or -o SURFACE.vtp");
  const std::string input = args["input"].as<std::string>();
  const auto outputs = args["output"].as<std::vector<std::string>>();
  const bool with_map = args.count("map") > 0;
  check_map_options(args, with_map);

  const surface::ViewOptions view = view_options_from_args(args);
  const MapJob job = job_from_args(args, kSurfaceJobOptions, JobUse::Values);  // checks the physics
  PhysicsOptions physics = job.physics;
  refuse_pb_sum(physics, input);

  // Refused before anything is read: unknown formats, unwritable files, an output named twice
  // or naming an input.
  std::vector<std::string> inputs = {input};
  if (with_map) inputs.push_back(args["map"].as<std::string>());
  check_mesh_outputs(outputs, inputs);

  const Structure structure = load_charged_structure(input, job);
  std::optional<PotentialMap> map;
  bool unit_known = false;
  if (with_map) map = read_surface_map(args, structure.atoms, unit_known);

  const surface::SurfaceResult surf = surface::molecular_surface(structure.atoms, view.surface);
  Stopwatch clock;
  std::vector<float> values;
  std::string method;
  std::vector<std::string> comments = {"structure: " + describe_source(input, structure.atoms)};
  if (with_map) {
    values = values_from_map(args["map"].as<std::string>(), *map, unit_known, structure.atoms, surf.mesh, view, method,
                             physics, comments);
  } else {
    values = surface::potential_at(structure.atoms, physics, surface::offset_points(surf.mesh, view.offset));
    method = "exact direct sum over " + with_commas(structure.atoms.size()) + " atoms";
  }
  const double values_seconds = clock.seconds();
  const std::string units = unit_name(physics.unit);
  comments.push_back(physics_comment(physics));
  comments.push_back("potential " + shortest_text(view.offset) + " A outside the surface: " + method);
  const auto [limit, limit_text] = surface::colour_limit(values, view, physics);
  comments.push_back("colours: red -" + number_text(limit) + " to blue +" + number_text(limit) + " " + units +
                     ", white 0 (viz/render_potential.py's ramp)");

  ColouredMesh coloured;
  coloured.mesh = &surf.mesh;
  coloured.potential = &values;
  coloured.units = units;
  coloured.limit = limit;
  coloured.comments = comments;
  const auto [lo, hi, any, clamped, outside] = colour_vertices(coloured);

  std::printf("structure  %s\n", describe_source(input, structure.atoms).c_str());
  std::printf("surface    %s vertices, %s triangles (grid %s Å, %s)\n", with_commas(surf.mesh.vertex_count()).c_str(),
              with_commas(surf.mesh.triangle_count()).c_str(), shortest_text(surf.spacing).c_str(),
              seconds_text(surf.seconds).c_str());
  std::printf("values     %s Å outside: %s, %s (%s)\n", shortest_text(view.offset).c_str(), method.c_str(),
              describe_model(physics).c_str(), seconds_text(values_seconds).c_str());
  std::printf(
      "range      %s to %s %s; colours ±%s (%s)%s\n", number_text(lo).c_str(), number_text(hi).c_str(), units.c_str(),
      number_text(limit).c_str(), limit_text.c_str(),
      values.empty() || !any
          ? ""
          : (", " + short_fixed(100.0 * double(clamped) / double(values.size() - outside), 0) + "% beyond").c_str());
  if (outside > 0)
    std::fprintf(stderr, "note: %s of %s vertices sample outside the map: potential NaN, coloured grey\n",
                 with_commas(outside).c_str(), with_commas(values.size()).c_str());
  for (const std::string& path : outputs) {
    write_mesh(coloured, path);
    std::printf("wrote      %s (%s)\n", path.c_str(), mesh_format_name(mesh_format_from_extension(path)).c_str());
  }
  return 0;
}

}  // namespace espgrid::cli
