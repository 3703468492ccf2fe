// The table of map formats (maps/map_format_table.h). Each entry's functions live in the
// format's own file (maps/dx_format.cpp, maps/mrc_format.cpp, maps/vti_format.cpp with
// maps/vti_reader.cpp); this file only lists them.
#include "src/maps/map_format_table.h"

#include <algorithm>

#include "src/core/byte_source.h"
#include "src/core/errors.h"
#include "src/maps/map_reading.h"
#include "src/maps/map_stream.h"

namespace espgrid {
namespace {

std::vector<MapFormatInfo> make_table() {
  std::vector<MapFormatInfo> table;
  // clang-format off
  table.push_back({MapFormat::Dx, "OpenDX", {".dx"}, "VMD, PyMOL, ChimeraX, APBS",
      &write_dx_to,
      nullptr,  // z fastest: its first line needs planes 0, 1 and 2
      [](const std::string& path, bool* unit_known) { return read_dx(path, unit_known); },
      [](const std::string& name, std::string bytes, bool* unit_known) {
        return read_dx_text(name, std::move(bytes), unit_known);
      },
      nullptr, /*exact_grid=*/true, /*bench_default=*/true});
  table.push_back({MapFormat::DxGz, "OpenDX (gzip)", {".dx.gz"}, "the same readers",
      &write_dx_gz_to,
      nullptr,
      [](const std::string& path, bool* unit_known) { return read_dx(path, unit_known); },
      nullptr,  // decompressed from files only
      [](const MapWriteOptions&) -> std::string {
        return gzip_supported() ? "" : ": this espgrid was built without zlib; write .dx, or rebuild with zlib1g-dev";
      },
      /*exact_grid=*/true, /*bench_default=*/false});
  table.push_back({MapFormat::Mrc, "MRC2014", {".mrc", ".map", ".ccp4"}, "MRC2014: ChimeraX, PyMOL, VMD, Coot, Mol*",
      [](const PotentialMap& map, const std::string& path, const MapWriteOptions& options) {
        write_mrc_to(map, path, options.threads);
      },
      [](const MapWriteOptions&) -> PlaneWriterMaker { return &make_mrc_plane_writer; },
      [](const std::string& path, bool* unit_known) { return read_mrc_bytes(ByteSource(path), unit_known); },
      [](const std::string& name, std::string bytes, bool* unit_known) {
        return read_mrc_bytes(ByteSource(name, std::move(bytes)), unit_known);
      },
      nullptr, /*exact_grid=*/false, /*bench_default=*/true});  // float32 header words
  table.push_back({MapFormat::Vti, "VTK image data", {".vti"}, "ParaView",
      &write_vti_to,
      [](const MapWriteOptions& options) -> PlaneWriterMaker {
        // compressed: VTK's writer, which takes the whole array
        return options.vti_compression == VtiCompression::None ? &make_vti_plane_writer : nullptr;
      },
      [](const std::string& path, bool* unit_known) { return read_vti_bytes(ByteSource(path), unit_known); },
      [](const std::string& name, std::string bytes, bool* unit_known) {
        return read_vti_bytes(ByteSource(name, std::move(bytes)), unit_known);
      },
      [](const MapWriteOptions& options) -> std::string {
        if (options.vti_compression == VtiCompression::None || vti_supported()) return "";
        return " with " + std::string(compression_name(options.vti_compression)) +
               " compression: this espgrid was built without VTK (ESPGRID_VTK=OFF or VTK 9 not found); use "
               "--compression none, write .dx or .mrc instead, or rebuild with libvtk9-dev";
      },
      /*exact_grid=*/true, /*bench_default=*/true});
  // clang-format on
  return table;
}

/// "A, B or C" (`conjunction` before the last item).
std::string listed(const std::vector<std::string>& items, std::string_view conjunction) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " " + std::string(conjunction) + " " : ", ";
    out += items[i];
  }
  return out;
}

std::string joined_extensions(const MapFormatInfo& f) {
  std::string out;
  for (const std::string_view e : f.extensions) out += (out.empty() ? "" : "/") + std::string(e);
  return out;
}

}  // namespace

const std::vector<MapFormatInfo>& map_format_table() {
  static const std::vector<MapFormatInfo> table = make_table();
  return table;
}

const MapFormatInfo& map_format_info(MapFormat format) {
  for (const MapFormatInfo& f : map_format_table())
    if (f.format == format) return f;
  throw Error("internal error: a map format without an entry in the format table");
}

const MapFormatInfo* find_map_format_word(std::string_view word) {
  for (const MapFormatInfo& f : map_format_table())
    if (f.word() == word) return &f;
  return nullptr;
}

std::string map_extensions_text(std::string_view conjunction) {
  std::vector<std::string> items;
  for (const MapFormatInfo& f : map_format_table()) items.push_back(joined_extensions(f));
  return listed(items, conjunction);
}

std::string map_formats_help() {
  std::vector<std::string> items, streamed;
  for (const MapFormatInfo& f : map_format_table()) {
    items.push_back(joined_extensions(f) + " (" + std::string(f.readers) + ")");
    if (f.plane_writer && f.plane_writer(MapWriteOptions{})) streamed.push_back(std::string(f.extensions.front()));
  }
  return listed(items, "or") + "; " + listed(streamed, "and") + (streamed.size() == 1 ? " is" : " are") +
         " written while the map is computed";
}

std::string map_format_words(bool defaults_only, std::string_view separator) {
  std::string out;
  for (const MapFormatInfo& f : map_format_table())
    if (!defaults_only || f.bench_default) out += (out.empty() ? "" : std::string(separator)) + std::string(f.word());
  return out;
}

}  // namespace espgrid
