#include "src/view/view.h"

#include <filesystem>
#include <fstream>

#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/maps/map_formats.h"
#include "src/view/display_structure.h"

namespace espgrid {

std::vector<std::string> map_header_comments(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  // espgrid's and APBS's DX headers are a few lines; stop at the first non-comment line.
  for (int n = 0; n < 64 && std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] != '#') break;
    std::size_t start = 1;
    while (start < line.size() && line[start] == ' ') ++start;
    bool printable = true;
    for (unsigned char c : line) printable = printable && (c >= 0x20 || c == '\t');
    if (printable && start < line.size()) lines.push_back(line.substr(start, 300));
  }
  return lines;
}

std::vector<std::string> map_header_lines(const std::string& path, const PotentialMap& map, bool physics_known) {
  if (map_format_from_extension(path) == MapFormat::Dx) return map_header_comments(path);
  std::vector<std::string> lines;
  if (!map.source.empty()) lines.push_back(map.source);
  if (physics_known) lines.push_back(physics_comment(map.physics));
  return lines;
}

bool header_has_espgrid_physics(const std::vector<std::string>& header) {
  for (const std::string& line : header)
    if (line.rfind("Potential in ", 0) == 0) return true;
  return false;
}

ViewResult make_view(const Atoms& atoms, const std::string& structure_path, const std::string& structure_source,
                     const PotentialMap& map, const surface::MapOrigin& origin, const surface::ViewOptions& options,
                     const std::string& title) {
  const Stopwatch clock;
  const WebAssets assets = load_web_assets();
  ViewResult result;
  result.scene = surface::build_view_scene(atoms, map, origin, options);
  ViewPageText text;
  text.title = !title.empty()         ? title
               : !origin.path.empty() ? std::filesystem::path(origin.path).filename().string()
                                      : std::string("potential map");
  text.subtitle = structure_source;
  std::optional<std::vector<DisplayLabel>> labels;
  if (!structure_path.empty()) {
    const std::string ext = std::filesystem::path(structure_path).extension().string();
    if (ext == ".pqr" || ext == ".PQR") labels = read_pqr_labels(structure_path, atoms.size());
  }
  std::size_t skipped = 0;
  text.structure_pdb = display_pdb(atoms, labels ? &*labels : nullptr, &skipped);
  if (skipped > 0)
    result.scene.notes.push_back(with_commas(skipped) + " atoms beyond ±9999 Å are not drawn (PDB's columns)");
  if (labels) {
    for (const DisplayLabel& l : *labels) {
      if (l.name == "CA" || l.name == "P") {  // a protein or nucleic-acid backbone
        text.cartoon = true;
        break;
      }
    }
  }
  result.cartoon = text.cartoon;
  result.html = view_page_html(result.scene, text, assets, &result.sizes);
  result.seconds = clock.seconds();
  return result;
}

}  // namespace espgrid
