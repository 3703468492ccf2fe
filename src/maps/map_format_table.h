// The one table of map formats (maps/map_format_table.cpp), as the kernel registry is for
// kernels: each entry says how a format is named, recognised, written (whole, or plane by plane
// while the map is computed), read (from a file and from memory) and what this build needs for
// it. write_map, the streaming writer, read_map, read_map_bytes, fuzz_map, `espgrid bench
// --formats`, the tests and every help text that lists formats iterate it; a new format is its
// own file of functions and one entry here (docs/ARCHITECTURE.md, "Add an output format").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/maps/map_formats.h"

namespace espgrid {

class OutputFile;
class PlaneWriter;

/// Makes a format's plane writer into `file` for `map` (maps/map_stream.h).
using PlaneWriterMaker = std::unique_ptr<PlaneWriter> (*)(const PotentialMap& map, OutputFile& file);

/// One format of the table.
struct MapFormatInfo {
  MapFormat format;
  /// "OpenDX (gzip)": for messages.
  std::string_view name;
  /// Lower-case file name endings, the usual one first: {".mrc", ".map", ".ccp4"}. The first one
  /// without its dot ("dx.gz") is the format's word (`espgrid bench --formats`).
  std::vector<std::string_view> extensions;
  /// The programs that read it, for help texts: "ParaView".
  std::string_view readers;
  /// Writes the whole map to `path` as it is given: write_map supplies the temporary path and the
  /// atomic replace, and has refused non-finite values unless the format has a plane writer.
  void (*write)(const PotentialMap& map, const std::string& path, const MapWriteOptions& options) = nullptr;
  /// The plane writer for `options`, when the format stores the map x fastest and uncompressed
  /// with them (then MapFiles writes it while the map is computed); null otherwise.
  PlaneWriterMaker (*plane_writer)(const MapWriteOptions& options) = nullptr;
  /// Reads a file of the format (read_map).
  PotentialMap (*read)(const std::string& path, bool* unit_known) = nullptr;
  /// Reads the format from memory (read_map_bytes, fuzz_map); null when it is not read from memory.
  PotentialMap (*read_bytes)(const std::string& name, std::string bytes, bool* unit_known) = nullptr;
  /// What this build lacks to write it with `options`, as the end of "cannot write PATH...":
  /// ": this espgrid was built without zlib; ..."; empty when it can. Null: always writable.
  std::string (*missing)(const MapWriteOptions& options) = nullptr;
  /// Whether the grid reads back exactly (text or float64 fields), not as float32 header words.
  bool exact_grid = true;
  /// Whether `espgrid bench --sweep end-to-end` writes it unless --formats says otherwise.
  bool bench_default = false;

  /// The format's word: its first extension without the dot ("dx.gz").
  std::string_view word() const { return extensions.front().substr(1); }
  /// Whether this build writes the format with `options`.
  bool writable(const MapWriteOptions& options = {}) const { return !missing || missing(options).empty(); }
};

/// Every format, in a fixed order: fuzz_map's first byte picks among the formats read from
/// memory in this order, so a new format is appended.
const std::vector<MapFormatInfo>& map_format_table();
/// The entry of `format`.
const MapFormatInfo& map_format_info(MapFormat format);
/// The entry whose word (`espgrid bench --formats`) is `word`, or null.
const MapFormatInfo* find_map_format_word(std::string_view word);

// ---- help texts, from the table ----

/// ".dx, .dx.gz, .mrc/.map/.ccp4 or .vti": every format's extensions (`conjunction` before the last).
std::string map_extensions_text(std::string_view conjunction = "or");
/// ".dx (VMD, PyMOL, ...), ...; .mrc and .vti are written while the map is computed": the
/// formats with their readers, and which are streamed with the default write options.
std::string map_formats_help();
/// "dx, dx.gz, mrc, vti": the formats' words; `defaults_only`: only those bench writes by default.
std::string map_format_words(bool defaults_only = false, std::string_view separator = ", ");

}  // namespace espgrid
