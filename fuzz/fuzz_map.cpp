// libFuzzer target for the map readers: the first byte picks the format (its value modulo the
// number of formats read from memory, in the format table's order: 0 .dx, 1 .mrc, 2 .vti), the
// rest is the file, read with espgrid::read_map_bytes(format,
// "fuzz", ...) as `espgrid convert`, espgrid-render and Python's read_map read files. Accepted:
// a map, an espgrid::InputError naming "fuzz" (in text, a line of the file), or a UsageError
// (ESPGRID_MAX_GRID_POINTS, set to 10^6 here so that a header cannot ask for gigabytes). Any
// other exception, a crash, an ASan/UBSan report or a hang is a finding, and so is a map that
// `espgrid map` could not have made: a grid outside its limits, a value that is not finite,
// physics that validate() refuses.
//
// A map read (up to 4096 points) is written back in the same format by espgrid's writer (into
// a memfd, as /proc/self/fd/N) and read again: the values and dims must come back bit for bit,
// the grid exactly (.dx, .vti) or to float32 precision (.mrc's header), the physics exactly, a
// known unit known again, an unknown one still unknown, a foreign map's program the same.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <vector>

#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nespgrid fuzz finding: %s\n", what.c_str());
  std::abort();  // libFuzzer saves the input as a crash
}

/// The formats read from memory, in the format table's order (maps/map_format_table.h).
const std::vector<const espgrid::MapFormatInfo*>& fuzzed_formats() {
  static const std::vector<const espgrid::MapFormatInfo*> formats = [] {
    std::vector<const espgrid::MapFormatInfo*> out;
    for (const espgrid::MapFormatInfo& f : espgrid::map_format_table())
      if (f.read_bytes) out.push_back(&f);
    return out;
  }();
  return formats;
}

void check_map(const espgrid::PotentialMap& m, bool unit_known) {
  const espgrid::GridSpec& g = m.grid;
  for (int a = 0; a < 3; ++a) {
    if (g.dims[a] < 1 || g.dims[a] > espgrid::kMaxAxisPoints) finding("dims out of range");
    if (!std::isfinite(g.spacing[a]) || g.spacing[a] <= 0 || g.spacing[a] > espgrid::kMaxSpacing)
      finding("spacing out of range: " + std::to_string(g.spacing[a]));
    if (!std::isfinite(g.origin[a]) || std::fabs(g.origin[a]) > espgrid::kMaxOriginMagnitude)
      finding("origin out of range: " + std::to_string(g.origin[a]));
  }
  if (m.values.size() != g.point_count()) finding("values do not match the grid");
  for (const float v : m.values)
    if (!std::isfinite(v)) finding("a value that is not finite");
  if (unit_known) {
    try {
      espgrid::validate(m.physics);
    } catch (const espgrid::UsageError& e) {
      finding(std::string("physics espgrid map would refuse: ") + e.what());
    }
  }
}

/// `map` written by espgrid's writer for `format`, as bytes.
std::string written(const espgrid::PotentialMap& map, const espgrid::MapFormatInfo& format) {
  const int fd = ::memfd_create("espgrid-fuzz-map", MFD_CLOEXEC);
  if (fd < 0) finding("memfd_create failed");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    format.write(map, path, {});
  } catch (const std::exception& e) {
    finding(std::string("writing a map that was read failed: ") + e.what());
  }
  std::string bytes(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)), '\0');
  if (::pread(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) finding("memfd read failed");
  ::close(fd);
  return bytes;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max({std::fabs(a), std::fabs(b), 1e-30}); }

void round_trip(const espgrid::PotentialMap& m, bool unit_known, const espgrid::MapFormatInfo& format) {
  bool again_known = false;
  espgrid::PotentialMap back;
  const std::string bytes = written(m, format);
  try {
    back = format.read_bytes("fuzz-round-trip", bytes, &again_known);
  } catch (const std::exception& e) {
    finding(std::string("a map espgrid wrote does not read back: ") + e.what());
  }
  if (back.grid.dims != m.grid.dims) finding("round trip: dims differ");
  if (std::memcmp(back.values.data(), m.values.data(), sizeof(float) * m.values.size()) != 0)
    finding("round trip: values differ");
  for (int a = 0; a < 3; ++a) {
    // .mrc holds float32 header fields: 1e-6 relative covers a few float32 roundings; an origin
    // on the lattice is written as whole voxels of a float32 cell, the lattice taken to
    // 1e-4 voxel (mrc_placement). .dx and .vti are exact.
    const bool exact = format.exact_grid;
    const double h = m.grid.spacing[a];
    if (exact ? back.grid.spacing[a] != h : !close(back.grid.spacing[a], h))
      finding("round trip: spacing " + std::to_string(h) + " came back " + std::to_string(back.grid.spacing[a]));
    if (exact ? back.grid.origin[a] != m.grid.origin[a]
              : std::fabs(back.grid.origin[a] - m.grid.origin[a]) > 1e-4 * h + 1e-6 * std::fabs(m.grid.origin[a]))
      finding("round trip: origin " + std::to_string(m.grid.origin[a]) + " came back " +
              std::to_string(back.grid.origin[a]));
  }
  // A map whose unit was known says it again, one whose unit was not does not claim one (a
  // converted map's "values in an unknown unit"), and a foreign map stays foreign, under the
  // program's name.
  if (again_known != unit_known)
    finding(unit_known ? "round trip: espgrid's file does not say the unit it was given"
                       : "round trip: a unit claimed for a map whose unit was unknown");
  if (back.foreign != m.foreign)
    finding("round trip: the map's program '" + m.foreign + "' came back '" + back.foreign + "'");
  if (unit_known) {
    const espgrid::PhysicsOptions &p = m.physics, &q = back.physics;
    if (p.unit != q.unit || p.model != q.model || p.dielectric != q.dielectric || p.temperature != q.temperature ||
        p.ionic_strength != q.ionic_strength)
      finding("round trip: physics differ");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("ESPGRID_MAX_GRID_POINTS", "1000000", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const espgrid::MapFormatInfo& format = *fuzzed_formats()[data[0] % fuzzed_formats().size()];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::size_t line_count = 1;
  for (const char c : text) line_count += (c == '\n' || c == '\r') ? 1 : 0;
  try {
    bool unit_known = false;
    const espgrid::PotentialMap m = espgrid::read_map_bytes(format.format, "fuzz", text, &unit_known);
    check_map(m, unit_known);
    if (m.values.size() <= 4096) round_trip(m, unit_known, format);
  } catch (const espgrid::InputError& e) {
    if (e.file() != "fuzz") finding("InputError names file '" + e.file() + "': " + e.what());
    if (e.line() > line_count) finding("InputError line outside the file: " + std::string(e.what()));
    if (format.format == espgrid::MapFormat::Dx && e.line() == 0) finding("a text map's error without a line");
  } catch (const espgrid::UsageError& e) {
    const std::string what = e.what();
    if (what.rfind("fuzz: ", 0) != 0) finding("UsageError that does not name the file: " + what);
  }
  return 0;
}
