// `espgrid view STRUCTURE MAP -o view.html`: one self-contained HTML page with the molecular
// surface coloured by the map's potential, its isosurfaces and the atoms, for any browser
// (docs/viz.md, "Interactive view"). The work is in src/view/view.h; this file reads the
// command line and the two files and prints the summary.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/map_pipeline.h"
#include "src/view/view.h"

namespace espgrid::cli {
namespace {

/// "--levels -1,1": cxxopts would read "-1,1" as options; glue a negative number to its option.
std::vector<std::string> glue_negative_values(int argc, char** argv) {
  std::vector<std::string> words;
  for (int i = 0; i < argc; ++i) {
    const std::string word = argv[i];
    if ((word == "--levels" || word == "--limit") && i + 1 < argc && argv[i + 1][0] == '-' &&
        (std::isdigit(static_cast<unsigned char>(argv[i + 1][1])) || argv[i + 1][1] == '.')) {
      words.push_back(word + "=" + argv[i + 1]);
      ++i;
      continue;
    }
    words.push_back(word);
  }
  return words;
}

/// The page's path: writable (os/atomic_output_file.h) and none of the inputs (same file by
/// device and inode: the page would replace its own input).
void check_page_path(const std::string& output, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(output, input, ec) && !ec)
      throw UsageError("-o " + output + " is the input " + input + "; name another file");
  }
  check_output_path(output);
}

}  // namespace

namespace {

/// The structure the map was computed from (--format when its extension does not say): a PQR
/// or XYZ, never the PDB/mmCIF file pdb2pqr read; its notices printed.
Structure load_map_structure(const std::string& structure_path, const cxxopts::ParseResult& args) {
  const std::optional<StructureFormat> format =
      args.count("format") ? std::optional(parse_format_name(args["format"].as<std::string>())) : std::nullopt;
  const StructureFormat structure_format = format ? *format : format_from_extension(structure_path);
  if (needs_charge_assignment(structure_format))
    throw UsageError(structure_path +
                     ": give the PQR the map was computed from (espgrid map keeps pdb2pqr's PQR "
                     "beside the map, or at --keep-pqr), not the PDB/mmCIF file");
  Structure structure = load_structure(structure_path, structure_format);
  for (const std::string& notice : structure.notices) std::fprintf(stderr, "note: %s\n", notice.c_str());
  return structure;
}

/// What `espgrid view` made: the structure, the map, the surface, the values, the page.
void print_view_report(const std::string& structure_path, const Atoms& atoms, const std::string& map_path,
                       const PotentialMap& map, const ViewResult& result) {
  const surface::ViewScene& s = result.scene;
  std::printf("structure  %s\n", describe_source(structure_path, atoms).c_str());
  std::printf("map        %s: %lld x %lld x %lld, %s\n", map_path.c_str(), static_cast<long long>(map.grid.dims[0]),
              static_cast<long long>(map.grid.dims[1]), static_cast<long long>(map.grid.dims[2]),
              describe_model(map.physics).c_str());
  std::printf("surface    %s vertices, %s triangles (grid %s Å, %s)\n", with_commas(s.surface.vertex_count()).c_str(),
              with_commas(s.surface.triangle_count()).c_str(), shortest_text(s.surface_info.spacing).c_str(),
              seconds_text(s.seconds_surface).c_str());
  std::printf("values     %s Å outside: %s (%s)\n", shortest_text(s.offset).c_str(), s.method_text.c_str(),
              seconds_text(s.seconds_values).c_str());
  std::printf("range      %s to %s %s at the surface; colours ±%s (%s)\n", number_text(s.value_min).c_str(),
              number_text(s.value_max).c_str(), s.units.c_str(), number_text(s.limit).c_str(), s.limit_text.c_str());
  for (const surface::Isosurface& iso : s.isosurfaces)
    std::printf("isosurface %+g %s: %s triangles\n", iso.level, s.units.c_str(),
                with_commas(iso.mesh.triangle_count()).c_str());
  for (const std::string& note : s.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  std::printf("page       %s (library %s, surface %s, isosurfaces %s, atoms %s%s) in %s\n",
              human_bytes(static_cast<double>(result.sizes.total)).c_str(),
              human_bytes(static_cast<double>(result.sizes.library)).c_str(),
              human_bytes(static_cast<double>(result.sizes.surface)).c_str(),
              human_bytes(static_cast<double>(result.sizes.isosurfaces)).c_str(),
              human_bytes(static_cast<double>(result.sizes.atoms)).c_str(),
              result.sizes.compressed ? ", data gzip-compressed" : "", seconds_text(result.seconds).c_str());
}

}  // namespace

int run_view(int argc, char** argv) {
  cxxopts::Options options(
      "espgrid view",
      "Write one self-contained HTML page (any browser, no network) showing the molecular surface coloured by the\n"
      "map's potential 1.4 Å outside it, the map's isosurfaces and the atoms.\n");
  options.custom_help("STRUCTURE.pqr|.xyz MAP.dx -o VIEW.html [options]");
  options.positional_help("");
  // clang-format off
  options.add_options("Input")
      ("structure", "the structure the map was computed from (.pqr, .xyz; for a PDB/mmCIF map, the PQR `espgrid map` kept)",
       cxxopts::value<std::string>())
      ("map", "the map: " + map_extensions_text() + " (any map espgrid writes; APBS's .dx)", cxxopts::value<std::string>())
      ("format", "structure format when the extension does not say: pqr or xyz", cxxopts::value<std::string>())
      ("units", "the map's unit when its header does not say (kT/e, kcal/mol/e or V)", cxxopts::value<std::string>());
  options.add_options("Output")
      ("o,output", "the page to write (.html)", cxxopts::value<std::string>())
      ("title", "the page's heading (default: the map's file name)", cxxopts::value<std::string>());
  options.add_options("Colours")
      ("limit", "colour scale ±LIMIT in the map's unit, or 'auto' (the 95th percentile of |potential| at the surface, "
                "rounded up to 1, 2, 3 or 5 x 10^n); default: ±5 kT/e, ±10 kcal/mol/e, or 5 kT/e in V (adjustable in the page)",
       cxxopts::value<std::string>())
      ("levels", "isosurface levels in the map's unit, comma list (default: -1,1 kT/e in the map's unit)",
       cxxopts::value<std::string>())
      ("values", "potential at the surface: auto (the exact direct sum over the atoms when the map is espgrid's, "
                 "the sum is affordable and agrees with the map; else the map interpolated), sum or map",
       cxxopts::value<std::string>()->default_value("auto"));
  options.add_options("View")
      ("view", "the first view: auto (along the atoms' thinnest axis, as espgrid-render draws), or +x, -x, +y, -y, +z, -z",
       cxxopts::value<std::string>()->default_value("auto"));
  options.add_options("Surface")
      ("offset", "sample the potential this far outside the surface along its normals, Å",
       cxxopts::value<std::string>()->default_value("1.4"))
      ("surface-spacing", "grid spacing of the surface, Å (larger for structures whose grid would not fit)",
       cxxopts::value<std::string>()->default_value("0.5"))
      ("probe", "add this to every radius, Å (1.4: a solvent-accessible surface)",
       cxxopts::value<std::string>()->default_value("0"));
  // clang-format on
  options.add_options()("h,help", "show this help");
  options.parse_positional({"structure", "map"});
  std::vector<std::string> words = glue_negative_values(argc, argv);
  std::vector<char*> args_v;
  for (std::string& w : words) args_v.push_back(w.data());
  const auto args = parse_args(options, static_cast<int>(args_v.size()), args_v.data());
  if (args.count("help")) {
    std::cout << options.help({"Input", "Output", "Colours", "View", "Surface", ""});
    return 0;
  }
  if (!args.count("structure") || !args.count("map"))
    throw UsageError("espgrid view needs the structure and the map: espgrid view STRUCTURE.pqr MAP.dx -o VIEW.html");
  if (!args.count("output")) throw UsageError("no output given: add -o VIEW.html");
  const std::string structure_path = args["structure"].as<std::string>();
  const std::string map_path = args["map"].as<std::string>();
  const std::string output = args["output"].as<std::string>();
  const std::string ext = std::filesystem::path(output).extension().string();
  if (ext != ".html" && ext != ".htm") throw UsageError("-o " + output + ": the page is HTML; name it NAME.html");

  const surface::ViewOptions view = view_options_from_args(args);  // checked before anything is read

  // Refused before anything is read: an output that cannot be written or that names an input.
  check_page_path(output, {structure_path, map_path});

  const Structure structure = load_map_structure(structure_path, args);
  // The map: any format espgrid writes (read_map).
  bool unit_known = false;
  PotentialMap map = read_map_with_unit(map_path, args, "units", &unit_known);
  surface::MapOrigin origin{map_path, map_header_lines(map_path, map, unit_known), false, ""};
  origin.espgrid_physics = header_has_espgrid_physics(origin.header);

  const std::string title = args.count("title") ? args["title"].as<std::string>() : "";
  const ViewResult result = make_view(structure.atoms, structure_path, describe_source(structure_path, structure.atoms),
                                      map, origin, view, title);
  write_text_file_atomically(output, result.html);

  print_view_report(structure_path, structure.atoms, map_path, map, result);
  std::printf("wrote      %s\n", output.c_str());
  return 0;
}

}  // namespace espgrid::cli
