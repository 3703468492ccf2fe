// Map files: which formats espgrid writes and reads, chosen by extension from the format table
// (maps/map_format_table.h). Every writer goes through write_map, which refuses non-finite
// values and replaces the destination atomically (os/atomic_output_file.h), or, for formats
// stored x fastest, through the streaming writer (maps/map_stream.h), which writes planes while
// they are computed. Writers know nothing about kernels.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/physics/potential_map.h"

namespace espgrid {

enum class MapFormat { Dx, DxGz, Vti, Mrc };

/// The format whose entry in the format table lists the path's extension (case aside; its last
/// two extensions together first: .dx.gz): .dx, .dx.gz (OpenDX, gzip), .mrc/.map/.ccp4
/// (MRC2014) or .vti; UsageError listing them otherwise.
MapFormat map_format_from_extension(const std::string& path);
/// The entry's name: "OpenDX", "OpenDX (gzip)", "MRC2014", "VTK image data".
std::string_view map_format_name(MapFormat format);

/// The compressors VTK 9 offers for .vti's appended data; ParaView 5.11 reads all four.
enum class VtiCompression { None, Lz4, ZLib, Lzma };
/// "none", "lz4", "zlib", "lzma".
std::string_view compression_name(VtiCompression compression);
/// Parses a compression_name; UsageError listing them otherwise.
VtiCompression parse_compression(const std::string& text);

/// How maps are written. The defaults are what `espgrid map` uses.
struct MapWriteOptions {
  /// .vti compressor. None by measurement (benchmarks/NOTES.md, "Writing maps"): float32
  /// potentials hardly compress (LZ4 saves nothing, zlib 15% at 20-30x the write time and 5x
  /// the read time, LZMA 33% at 200x), and uncompressed .vti is written plane by plane while
  /// the map is computed.
  VtiCompression vti_compression = VtiCompression::None;
  int threads = 0;     ///< threads that format .dx text; 0 = OpenMP's default (all cores)
  bool stream = true;  ///< write the formats that allow it while the map is computed (maps/map_stream.h)
};

/// UsageError when this build cannot write `path`'s format with `options` (compressed .vti
/// without VTK, .dx.gz without zlib), so the CLI can refuse before computing.
void check_map_format_supported(const std::string& path, const MapWriteOptions& options = {});
/// Whether this build has VTK, whose writer compresses .vti (lz4, zlib, lzma). Uncompressed
/// .vti is written by espgrid itself and needs no VTK.
bool vti_supported() noexcept;
/// Whether this build has zlib, for .dx.gz.
bool gzip_supported() noexcept;

/// Writes the map atomically (temporary file, then rename). Throws Error when any value is
/// not finite, when the format is unsupported, or when writing fails; the destination is
/// then untouched.
void write_map(const PotentialMap& map, const std::string& path, const MapWriteOptions& options = {});

/// OpenDX in the layout APBS writes (z fastest, three values a line, "%.8e": every float reads
/// back exactly), straight to `path`. Blocks of lines are formatted on options.threads threads
/// and written in order; the file is byte for byte what one thread would write.
void write_dx_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options = {});
/// The same text gzip-compressed (.dx.gz): each block a gzip member of its own, compressed on
/// the thread that formatted it (RFC 1952 allows members one after another; gunzip, zlib's
/// gzread, Python's gzip and PyMOL read them as one stream).
void write_dx_gz_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options = {});
/// VTK XML image data (appended, point data "potential"), straight to `path`: uncompressed by
/// espgrid's own writer (maps/map_stream.h: make_vti_plane_writer), compressed by VTK's.
void write_vti_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options = {});
/// MRC2014, mode 2 (float32), axes 1,2,3 (x fastest), straight to `path`; see maps/mrc_format.cpp.
/// threads: those that check and summarize a large map's planes (write_all_planes; 0 = all cores).
void write_mrc_to(const PotentialMap& map, const std::string& path, int threads = 1);

/// Where an .mrc places a grid. Readers disagree on which header fields hold the origin:
/// crystallographic ones (gemmi, Coot, CCP4, clipper) take NXSTART, NYSTART, NZSTART (whole
/// voxels of CELLA / MX) and ignore ORIGIN; VMD, Mol* and PyMOL 2 take ORIGIN (Å) when it is not
/// 0, else the start indices; GridDataFormats (MDAnalysis) and older PyMOL add the two. One
/// header satisfies all of them only when the origin is a whole number of voxels: then espgrid
/// writes the start indices and ORIGIN 0 (`exact`; every grid make_grid places is such, to
/// 1e-6 Å). An origin off that lattice (an explicit --origin) is written the cryo-EM way, start
/// 0 and ORIGIN the origin, as espgrid always wrote it: right in every reader above but the
/// crystallographic ones, which put it at the origin 0.
struct MrcPlacement {
  std::array<std::int32_t, 3> start{};  ///< NXSTART, NYSTART, NZSTART
  std::array<float, 3> origin{};        ///< ORIGIN, Å
  bool exact = true;                    ///< the same place in every reader
};
MrcPlacement mrc_placement(const GridSpec& grid);

/// Throws Error naming the first grid point among planes [first_plane, first_plane + planes)
/// whose value is not finite ("... grid point (i, j, k) is not finite; no map written"), or when
/// the map does not hold one value per grid point.
void check_finite(const PotentialMap& map, std::int64_t first_plane, std::int64_t planes);

/// The header line that records a map's physics in every text format:
/// "Potential in kT/e (T = 298.15 K), dielectric 1".
std::string physics_comment(const PhysicsOptions& physics);

/// Reads a header comment (without its '#') written by physics_comment, or APBS's
/// "POTENTIAL (kT/e)", into `physics`; false (and `physics` untouched) for any other text.
bool parse_physics_comment(std::string_view comment, PhysicsOptions& physics);

/// Reads any map file espgrid writes, with the reader of its entry in the format table (chosen by
/// extension as map_format_from_extension does):
/// .dx and .dx.gz (read_dx), .mrc/.map/.ccp4 (MRC2014 mode 2, any axis order and byte order)
/// and .vti (uncompressed by espgrid's own parser; compressed through VTK where this build has
/// it, UsageError otherwise). `unit_known` says whether the file said its unit (espgrid's
/// header line or field data, APBS's "POTENTIAL (kT/e)"); the physics is then the file's.
/// The `convert` verb, the renderer (through `convert`) and Python's espgrid.read_map read
/// maps here. Every reader checks what `espgrid map` checks before allocating (grid limits,
/// ESPGRID_MAX_GRID_POINTS, memory: maps/map_reading.h), reads the file by its structure (a
/// value too many or too few, a truncated file, bytes after the data are errors), and
/// returns only finite values. Defects of the file: InputError "FILE:LINE: what" (LINE only
/// in text); limits: UsageError; read errors: Error.
PotentialMap read_map(const std::string& path, bool* unit_known = nullptr);
/// What a file written from a foreign map (PotentialMap::foreign) says instead of espgrid's
/// physics: its title ("map converted by espgrid X; not computed by espgrid (APBS): ...") and
/// its values' unit ("values in kT/e", "values in an unknown unit").
std::string foreign_map_title(const PotentialMap& map);
std::string foreign_map_unit(const PotentialMap& map);
/// Reads those two texts back (in any of the three formats), so that a converted map converts
/// again as what it is: a title sets map.foreign to the program it names; "values in UNIT"
/// sets map.physics.unit and returns true (the unit is known); anything else returns false and
/// leaves `map` untouched but for the program's name.
/// A program's name longer than kMaxForeignName, or with other than printable ASCII, is read as
/// "another program".
bool read_foreign_note(std::string_view text, PotentialMap& map);
inline constexpr std::size_t kMaxForeignName = 24;
/// The physics line of a map: physics_comment's for espgrid's maps, what is known for a foreign one.
std::string map_physics_text(const PotentialMap& map);
/// The same from bytes in memory (fuzzers, tests); `name` stands for the file in messages.
/// Formats without a reader from memory in the table (.dx.gz) are refused.
PotentialMap read_map_bytes(MapFormat format, const std::string& name, std::string bytes, bool* unit_known = nullptr);

/// Reads an OpenDX scalar field written by espgrid, APBS, GridDataFormats or another writer of
/// that layout (`object 1 class gridpositions counts`, `origin`, three axis-aligned `delta`
/// lines, `gridconnections` with the same counts, a scalar `class array ... items N data
/// follows` and exactly N numbers, then only `attribute`/`object`/`component` lines), streamed
/// line by line in bounded memory; gzip-compressed (.dx.gz, or a .dx that is gzip) where this
/// build has zlib. Throws InputError naming the line on anything else. The physics comes from
/// espgrid's header line (physics_comment) or APBS's "POTENTIAL (kT/e)".
PotentialMap read_dx(const std::string& path, bool* unit_known = nullptr);

}  // namespace espgrid
