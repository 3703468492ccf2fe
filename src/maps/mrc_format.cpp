// MRC2014 (https://www.ccpem.ac.uk/mrc_format/mrc2014.php): a 1024-byte header, then the map as
// float32 (mode 2) with x fastest (MAPC, MAPR, MAPS = 1, 2, 3), in the byte order the machine
// stamp names. Read by ChimeraX, PyMOL, VMD, Coot, Mol* and mrcfile. Planes are written at their
// place as they come (maps/map_stream.h); the header, which holds the statistics, last.
// Longer than 500 lines because the writer and the reader share the header's layout (its word
// numbers, labels and placement rules), which is kept in one place.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/maps/float4.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_reading.h"
#include "src/maps/map_stream.h"

namespace espgrid {
namespace {

constexpr std::size_t kHeaderBytes = 1024;
constexpr std::size_t kLabelBytes = 80;
constexpr int kLabels = 10;

/// One plane's statistics: its mean and sum of squared deviations combine exactly with other
/// planes' (Chan et al.), in plane order, so the header is the same whatever order planes came in.
struct PlaneStats {
  float min = 0, max = 0;
  double mean = 0;
  double squared_deviations = 0;  ///< Σ (v − mean)²
  std::size_t count = 0;
};

/// Two passes in double: the slow path when the fast one's float squares overflowed (a finite
/// map with values beyond ~10^19).
PlaneStats plane_stats_double(const float* v, std::size_t n) {
  PlaneStats s;
  s.count = n;
  if (n == 0) return s;
  s.min = *std::min_element(v, v + n);
  s.max = *std::max_element(v, v + n);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += v[i];
  s.mean = sum / static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) s.squared_deviations += (v[i] - s.mean) * (v[i] - s.mean);
  return s;
}

/// One pass over a plane, its values shifted by the first one (the shifted-data variance: no
/// cancellation unless the spread is far below the values), four floats at a time: each lane
/// sums 16 values in float before they are folded into double (a double accumulator chain took
/// several times as long). A float partial sum of 16 terms carries at most 16 ulp, 10⁻⁶ of its
/// magnitude, so the mean and RMS deviation come out within ~10⁻⁶ of the exact ones, written as
/// float32 for display. The order is fixed, so the result is too. The mean is NaN when a sum is
/// not finite: a value is NaN or infinite (finite floats never make the double sums overflow), or
/// the float squares overflowed (|v| beyond ~10^19); the caller tells which.
PlaneStats plane_stats(const float* v, std::size_t n) {
  PlaneStats s;
  s.count = n;
  if (n == 0) return s;
  constexpr std::size_t kFold = 64;  // values per lane group before folding into double
  const float shift = v[0];
  const Float4 shift4 = {shift, shift, shift, shift};
  Float4 lo = {v[0], v[0], v[0], v[0]}, hi = lo;
  double sum = 0, squares = 0;
  std::size_t i = 0;
  for (; i + kFold <= n; i += kFold) {
    Float4 partial = {0, 0, 0, 0}, partial_squares = partial;
    for (std::size_t b = 0; b < kFold; b += 4) {
      const Float4 x = load4(v + i + b), d = x - shift4;
      partial += d;
      partial_squares += d * d;
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    for (int l = 0; l < 4; ++l) {
      sum += partial[l];
      squares += partial_squares[l];
    }
  }
  float lowest = std::min(std::min(lo[0], lo[1]), std::min(lo[2], lo[3]));
  float highest = std::max(std::max(hi[0], hi[1]), std::max(hi[2], hi[3]));
  for (; i < n; ++i) {
    const double d = static_cast<double>(v[i]) - shift;
    sum += d;
    squares += d * d;
    lowest = std::min(lowest, v[i]);
    highest = std::max(highest, v[i]);
  }
  s.min = lowest;
  s.max = highest;
  s.mean = shift + sum / static_cast<double>(n);
  s.squared_deviations = std::max(0.0, squares - sum * sum / static_cast<double>(n));
  if (!std::isfinite(sum) || !std::isfinite(squares)) s.mean = std::numeric_limits<double>::quiet_NaN();
  return s;
}

void combine(PlaneStats& into, const PlaneStats& more) {
  if (more.count == 0) return;
  if (into.count == 0) {
    into = more;
    return;
  }
  const double n = static_cast<double>(into.count + more.count);
  const double delta = more.mean - into.mean;
  into.squared_deviations +=
      more.squared_deviations + delta * delta * static_cast<double>(into.count) * static_cast<double>(more.count) / n;
  into.mean += delta * static_cast<double>(more.count) / n;
  into.count += more.count;
  into.min = std::min(into.min, more.min);
  into.max = std::max(into.max, more.max);
}

/// The float32 cell length (CELLA, Å) for `points` samples of `spacing` Å. Readers compute the
/// voxel size as cell / points: those that keep it in float32 (mrcfile) get the float nearest
/// the spacing whenever some float cell gives it (the closest such cell within 4 ulps of
/// spacing × points); otherwise, and for readers in double, the nearest float to spacing ×
/// points, whose voxel size is within half a float32 ulp of the cell divided by points. A
/// float cell cannot do better: for large `points` its quotients step over some floats.
float cell_length(double spacing, std::int64_t points) {
  const auto target = static_cast<float>(spacing);
  const auto quotient = [points](float cell) { return static_cast<double>(cell) / static_cast<double>(points); };
  const auto nearest = static_cast<float>(spacing * static_cast<double>(points));
  float best = nearest;
  bool found = false;
  float up = nearest, down = nearest;
  for (int step = 0; step <= 4; ++step) {
    for (const float cell : {up, down}) {
      if (static_cast<float>(quotient(cell)) != target) continue;
      if (!found || std::fabs(quotient(cell) - spacing) < std::fabs(quotient(best) - spacing)) best = cell;
      found = true;
    }
    up = std::nextafter(up, std::numeric_limits<float>::infinity());
    down = std::nextafter(down, 0.0f);
  }
  return best;
}

/// Printable ASCII, at most 80 characters: a header label.
std::string label_text(const std::string& text) {
  std::string out = text.substr(0, kLabelBytes);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

template <typename T>
void put(std::array<char, kHeaderBytes>& header, int word, T value) {
  static_assert(sizeof(T) == 4);
  std::memcpy(header.data() + 4 * static_cast<std::size_t>(word - 1), &value, 4);  // words count from 1, as in the spec
}

/// The labels that carry a map's physics: mrc_physics_text split at ", " into pieces of at
/// most kLabelBytes characters, each but the last ending with ",".
std::vector<std::string> physics_labels(const PhysicsOptions& physics) {
  const std::string text = mrc_physics_text(physics);
  std::vector<std::string> labels;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.size();
    if (end - begin > kLabelBytes) {
      // the last ", " that leaves the label (with its ',') within the limit
      const std::size_t cut = text.rfind(", ", begin + kLabelBytes - 1);
      end = (cut == std::string::npos || cut <= begin) ? begin + kLabelBytes : cut + 1;
    }
    labels.push_back(text.substr(begin, end - begin));
    begin = end;
    while (begin < text.size() && text[begin] == ' ') ++begin;
  }
  return labels;
}

}  // namespace

std::string mrc_physics_text(const PhysicsOptions& physics) {
  return physics_comment(physics) + (physics.model == PairModel::Coulomb && !physics.is_pb() ? ", model coulomb" : "");
}

MrcPlacement mrc_placement(const GridSpec& grid) {
  MrcPlacement p;
  std::array<std::int32_t, 3> start{};
  for (std::size_t a = 0; a < 3; ++a) {
    const double voxels = grid.origin[a] / grid.spacing[a];
    // NXSTART + NX - 1 must fit in int32 too.
    const double limit = static_cast<double>(std::numeric_limits<std::int32_t>::max() - grid.dims[a]);
    if (!(std::fabs(voxels) < limit)) {
      p.exact = false;
      break;
    }
    start[a] = static_cast<std::int32_t>(std::llround(voxels));
    // make_grid's origins are within 5e-7 Å of the lattice (rounded to 1e-6 Å), and a float32
    // header places a map no better than ~1e-6 Å near 10 Å: closer than 1e-6 Å is on the lattice,
    // and closer than 1e-4 of a voxel for spacings below 0.01 Å (fuzz_map found 6.7e-7 Å
    // spacings, where 1e-6 Å is more than a voxel).
    const double tolerance = std::min(1e-6, 1e-4 * grid.spacing[a]);
    if (std::fabs(grid.origin[a] - start[a] * grid.spacing[a]) > tolerance) p.exact = false;
  }
  // All three axes one way: a reader that finds ORIGIN non-zero takes it for every axis.
  for (std::size_t a = 0; a < 3; ++a) {
    p.start[a] = p.exact ? start[a] : 0;
    p.origin[a] = p.exact ? 0.0f : static_cast<float>(grid.origin[a]);
  }
  return p;
}

namespace {

std::array<char, kHeaderBytes> mrc_header(const PotentialMap& map, const PlaneStats& stats) {
  const GridSpec& g = map.grid;
  for (const std::int64_t n : g.dims)
    if (n > std::numeric_limits<std::int32_t>::max())
      throw Error("internal error: MRC stores at most 2^31 - 1 points per axis");
  // Where the map is: NXSTART.. and ORIGIN as mrc_placement says (maps/map_formats.h).
  const MrcPlacement placement = mrc_placement(g);
  std::array<char, kHeaderBytes> h{};
  for (int a = 0; a < 3; ++a) {
    put(h, 1 + a, static_cast<std::int32_t>(g.dims[static_cast<std::size_t>(a)]));  // NX, NY, NZ
    put(h, 5 + a, placement.start[static_cast<std::size_t>(a)]);                    // NXSTART..
    put(h, 8 + a, static_cast<std::int32_t>(g.dims[static_cast<std::size_t>(a)]));  // MX, MY, MZ: sampling
    put(h, 11 + a,
        cell_length(g.spacing[static_cast<std::size_t>(a)], g.dims[static_cast<std::size_t>(a)]));  // CELLA, Å
    put(h, 14 + a, 90.0f);                                                                          // CELLB, degrees
    put(h, 17 + a, static_cast<std::int32_t>(a + 1));                                               // MAPC, MAPR, MAPS
    put(h, 50 + a, placement.origin[static_cast<std::size_t>(a)]);                                  // ORIGIN, Å
  }
  put(h, 4, std::int32_t{2});  // MODE 2: 32-bit float
  put(h, 20, stats.min);       // DMIN, DMAX, DMEAN, in the map's unit
  put(h, 21, stats.max);
  put(h, 22, static_cast<float>(stats.mean));
  put(h, 23, std::int32_t{1});      // ISPG 1: one volume (0 would mean a stack of images)
  put(h, 24, std::int32_t{0});      // NSYMBT: no extended header
  put(h, 28, std::int32_t{20140});  // NVERSION: MRC2014
  std::memcpy(h.data() + 208, "MAP ", 4);
  // MACHST: the byte order the numbers are in (this machine's; readers swap as needed).
  const std::uint8_t order = std::endian::native == std::endian::little ? 0x44 : 0x11;
  const std::uint8_t stamp[4] = {order, order, 0, 0};
  std::memcpy(h.data() + 212, stamp, 4);
  const double variance = stats.count ? stats.squared_deviations / static_cast<double>(stats.count) : 0.0;
  put(h, 55, static_cast<float>(std::sqrt(variance)));  // RMS: deviation from the mean
  std::vector<std::string> labels = {
      map.physics.is_pb() ? "espgrid " ESPGRID_VERSION ": electrostatic potential, Poisson-Boltzmann"
                          : "espgrid " ESPGRID_VERSION ": electrostatic potential by direct Coulomb summation"};
  if (!map.foreign.empty())  // no physics claimed for a map espgrid did not compute
    labels = {"espgrid " ESPGRID_VERSION ": converted, not computed by espgrid (" + map.foreign + ")",
              foreign_map_unit(map) + "; model and medium unknown"};
  else
    for (std::string& label : physics_labels(map.physics)) labels.push_back(std::move(label));
  if (!map.source.empty() && labels.size() < kLabels) labels.push_back(map.source);
  if (labels.size() > kLabels) labels.resize(kLabels);
  put(h, 56, static_cast<std::int32_t>(labels.size()));  // NLABL
  std::memset(h.data() + 224, ' ', kLabelBytes * kLabels);
  for (std::size_t l = 0; l < labels.size(); ++l) {
    const std::string text = label_text(labels[l]);
    std::memcpy(h.data() + 224 + kLabelBytes * l, text.data(), text.size());
  }
  return h;
}

class MrcPlaneWriter final : public PlaneWriter {
 public:
  MrcPlaneWriter(const PotentialMap& map, OutputFile& file)
      : map_(map),
        file_(file),
        plane_points_(static_cast<std::size_t>(map.grid.dims[0]) * static_cast<std::size_t>(map.grid.dims[1])),
        stats_(static_cast<std::size_t>(map.grid.dims[2])) {}

  void summarize_planes(std::int64_t first, std::int64_t count) override {
    for (std::int64_t k = first; k < first + count; ++k) {
      PlaneStats& s = stats_[static_cast<std::size_t>(k)];
      s = plane_stats(plane(k), plane_points_);
      if (std::isnan(s.mean)) {                           // the statistics are the pass that checks
        check_finite(map_, k, 1);                         // throws, naming the point
        s = plane_stats_double(plane(k), plane_points_);  // finite, but beyond float squares
      }
    }
  }

  void write_plane_bytes(std::int64_t first, std::int64_t count) noexcept override {
    file_.write_at(kHeaderBytes + sizeof(float) * plane_points_ * static_cast<std::size_t>(first), plane(first),
                   sizeof(float) * plane_points_ * static_cast<std::size_t>(count));
  }

  void finish() override {
    PlaneStats all;
    for (const PlaneStats& s : stats_) combine(all, s);
    const std::array<char, kHeaderBytes> header = mrc_header(map_, all);
    file_.write_at(0, header.data(), header.size());
  }

 private:
  const PotentialMap& map_;
  OutputFile& file_;
  std::size_t plane_points_;
  std::vector<PlaneStats> stats_;  ///< per z-plane, filled as planes are written

  const float* plane(std::int64_t k) const { return map_.values.data() + static_cast<std::size_t>(k) * plane_points_; }
};

}  // namespace

std::unique_ptr<PlaneWriter> make_mrc_plane_writer(const PotentialMap& map, OutputFile& file) {
  return std::make_unique<MrcPlaneWriter>(map, file);
}

void write_mrc_to(const PotentialMap& map, const std::string& path, int threads) {
  OutputFile file(path);
  MrcPlaneWriter writer(map, file);
  write_all_planes(map, writer, threads);
  file.close();
}

// ---- reading ------------------------------------------------------------------------------------

namespace {

/// The header's 4-byte words (counted from 1, as in the spec) in the file's byte order.
class HeaderWords {
 public:
  HeaderWords(const std::array<char, kHeaderBytes>& header, bool swap) : header_(header), swap_(swap) {}
  std::uint32_t word(int w) const {
    std::uint32_t v;
    std::memcpy(&v, header_.data() + 4 * static_cast<std::size_t>(w - 1), 4);
    return swap_ ? __builtin_bswap32(v) : v;
  }
  std::int32_t integer(int w) const { return std::bit_cast<std::int32_t>(word(w)); }
  float real(int w) const { return std::bit_cast<float>(word(w)); }
  /// Label l (0-based): its 80 bytes, trailing spaces and NULs dropped.
  std::string label(int l) const {
    std::string text(header_.data() + 224 + kLabelBytes * static_cast<std::size_t>(l), kLabelBytes);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.pop_back();
    return text;
  }

 private:
  const std::array<char, kHeaderBytes>& header_;
  bool swap_;
};

/// The physics espgrid's labels record (physics_labels; the single label older versions
/// wrote, ", model NAME" at its end), or false.
bool physics_from_labels(const HeaderWords& words, int labels, PhysicsOptions& physics) {
  for (int l = 0; l < labels; ++l) {
    std::string text = words.label(l);
    if (text.rfind("Potential in ", 0) != 0 && text.rfind("POTENTIAL (kT/e)", 0) != 0) continue;
    for (int next = l + 1; next < labels && !text.empty() && text.back() == ','; ++next) {
      text += ' ';
      text += words.label(next);
    }
    if (parse_physics_comment(text, physics)) return true;
    // "..., model NAME": what physics_comment leaves unsaid for the Coulomb model.
    const std::size_t model = text.rfind(", model ");
    if (model == std::string::npos) return false;
    PhysicsOptions parsed;
    if (!parse_physics_comment(std::string_view(text).substr(0, model), parsed)) return false;
    if (text.substr(model + 8) != model_name(parsed.model)) return false;
    physics = parsed;
    return true;
  }
  return false;
}

/// Whether the header's numbers are little-endian. The machine stamp names the byte order (0x44
/// 0x44 or 0x44 0x41: little-endian; 0x11 0x11: big-endian); without one, the order in which
/// MODE is a small number. InputError when neither tells.
bool little_endian_header(const std::array<char, kHeaderBytes>& header, const std::string& path) {
  const auto stamp = reinterpret_cast<const unsigned char*>(header.data() + 212);
  if (stamp[0] == 0x44 && (stamp[1] == 0x44 || stamp[1] == 0x41)) return true;
  if (stamp[0] == 0x11 && stamp[1] == 0x11) return false;
  std::uint32_t mode;
  std::memcpy(&mode, header.data() + 12, 4);
  const bool native_small = mode < 64, swapped_small = __builtin_bswap32(mode) < 64;
  if (native_small == swapped_small)
    throw InputError(path, 0, "the machine stamp at byte 212 names no byte order, and MODE does not tell");
  return (std::endian::native == std::endian::little) == native_small;
}

/// Where the n[0] x n[1] x n[2] floats start: after the header and `extended` bytes (NSYMBT),
/// and the file must end with them (InputError otherwise).
std::uint64_t data_offset(const ByteSource& bytes, std::int32_t extended, const std::array<std::int64_t, 3>& n) {
  const std::string& path = bytes.path();
  if (extended < 0) throw InputError(path, 0, "NSYMBT (the extended header's size) is " + std::to_string(extended));
  const std::uint64_t data_at = kHeaderBytes + static_cast<std::uint64_t>(extended);
  const std::uint64_t data_bytes = sizeof(float) * static_cast<std::uint64_t>(n[0]) * static_cast<std::uint64_t>(n[1]) *
                                   static_cast<std::uint64_t>(n[2]);
  const std::string floats = std::to_string(n[0]) + " x " + std::to_string(n[1]) + " x " + std::to_string(n[2]);
  if (bytes.size() < data_at + data_bytes)
    throw InputError(path, 0,
                     "the file has " + std::to_string(bytes.size()) + " bytes, but its header's grid of " + floats +
                         " floats needs " + std::to_string(data_at + data_bytes) + ": it is truncated");
  if (bytes.size() > data_at + data_bytes)
    throw InputError(path, 0,
                     "the file has " + std::to_string(bytes.size() - data_at - data_bytes) + " bytes after the " +
                         floats + " floats its header announces: a header that does not describe the data");
  return data_at;
}

/// The n[0] x n[1] x n[2] floats at `data_at` (columns, rows, sections along the grid axes
/// `axis`) into map.values, x fastest: read as they are when the file is x fastest in this
/// machine's byte order, else one section at a time, swapped and put at its place.
void read_values(const ByteSource& bytes, std::uint64_t data_at, const std::array<std::int64_t, 3>& n,
                 const std::array<std::int64_t, 3>& axis, bool swap, PotentialMap& map) {
  if (axis == std::array<std::int64_t, 3>{0, 1, 2} && !swap) {
    bytes.read(data_at, map.values.data(), sizeof(float) * map.values.size(), "the map's data");
    return;
  }
  const auto columns = static_cast<std::size_t>(n[0]), rows = static_cast<std::size_t>(n[1]);
  std::array<std::size_t, 3> stride{};  // x-fastest index step of one column, row, section
  const std::array<std::size_t, 3> grid_stride = {
      1, static_cast<std::size_t>(map.grid.dims[0]),
      static_cast<std::size_t>(map.grid.dims[0]) * static_cast<std::size_t>(map.grid.dims[1])};
  for (std::size_t c = 0; c < 3; ++c) stride[c] = grid_stride[static_cast<std::size_t>(axis[c])];
  std::vector<std::uint32_t> section(columns * rows);
  for (std::size_t s = 0; s < static_cast<std::size_t>(n[2]); ++s) {
    bytes.read(data_at + sizeof(float) * columns * rows * s, section.data(), sizeof(float) * section.size(),
               "the map's data");
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < columns; ++c) {
        std::uint32_t v = section[c + columns * r];
        if (swap) v = __builtin_bswap32(v);
        map.values[c * stride[0] + r * stride[1] + s * stride[2]] = std::bit_cast<float>(v);
      }
  }
}

}  // namespace

PotentialMap read_mrc_bytes(const ByteSource& bytes, bool* unit_known) {
  const std::string& path = bytes.path();
  const auto fail = [&path](const std::string& what) { throw InputError(path, 0, what); };
  if (bytes.size() < kHeaderBytes)
    fail("the file has " + std::to_string(bytes.size()) + " bytes; an MRC map starts with a 1024-byte header");
  std::array<char, kHeaderBytes> header{};
  bytes.read(0, header.data(), kHeaderBytes, "the header");
  if (std::memcmp(header.data() + 208, "MAP ", 4) != 0)
    fail("no 'MAP ' at byte 208: this is not an MRC2014 or CCP4 map");
  const bool little = little_endian_header(header, path);
  const HeaderWords w(header, little != (std::endian::native == std::endian::little));

  if (const std::int32_t mode = w.integer(4); mode != 2)
    fail("MODE is " + std::to_string(mode) + ": espgrid reads maps of 32-bit floats (MODE 2)");
  std::array<std::int64_t, 3> n{};  // NX, NY, NZ: columns, rows, sections
  for (int a = 0; a < 3; ++a) {
    n[static_cast<std::size_t>(a)] = w.integer(1 + a);
    if (n[static_cast<std::size_t>(a)] < 1 || n[static_cast<std::size_t>(a)] > kMaxAxisPoints)
      fail(std::string("N") + "XYZ"[a] + " is " + std::to_string(n[static_cast<std::size_t>(a)]) +
           "; espgrid takes 1 to " + std::to_string(kMaxAxisPoints) + " points an axis");
  }
  // axis[c]: the grid axis (0 = x) of columns, rows, sections; 64-bit so that a MAPC of -2^31 is an error, not
  // an overflow
  std::array<std::int64_t, 3> axis{};
  for (int c = 0; c < 3; ++c) axis[static_cast<std::size_t>(c)] = std::int64_t{w.integer(17 + c)} - 1;
  {
    std::array<std::int64_t, 3> sorted = axis;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::array<std::int64_t, 3>{0, 1, 2})
      fail("MAPC, MAPR, MAPS are " + std::to_string(axis[0] + 1) + ", " + std::to_string(axis[1] + 1) + ", " +
           std::to_string(axis[2] + 1) + ": not an order of the axes 1, 2, 3");
  }
  PotentialMap map;
  for (int a = 0; a < 3; ++a) {  // a: x, y, z
    const std::int32_t samples = w.integer(8 + a);
    const float cell = w.real(11 + a), angle = w.real(14 + a);
    if (samples < 1) fail(std::string("M") + "XYZ"[a] + " is " + std::to_string(samples) + "; it must be positive");
    if (!(std::fabs(angle - 90.0f) <= 1e-3f))
      fail("the cell angles are " + number_text(w.real(14)) + ", " + number_text(w.real(15)) + ", " +
           number_text(w.real(16)) + " degrees: espgrid reads orthogonal grids (90, 90, 90)");
    if (!std::isfinite(cell) || cell <= 0)
      fail(std::string("the cell length along ") + "xyz"[a] + " (CELLA) is " + number_text(cell) +
           " Å; it must be positive");
    // The voxel size as a float32 reader sees it, as the decimal that float stands for.
    map.grid.spacing[static_cast<std::size_t>(a)] =
        float_field(static_cast<float>(static_cast<double>(cell) / static_cast<double>(samples)));
  }
  std::array<std::int64_t, 3> start{};
  for (int c = 0; c < 3; ++c) {
    const auto a = static_cast<std::size_t>(axis[static_cast<std::size_t>(c)]);
    map.grid.dims[a] = n[static_cast<std::size_t>(c)];
    start[a] = w.integer(5 + c);  // NXSTART.. count along columns, rows, sections
  }
  // ORIGIN (Å) when it is not 0, else the start indices in voxels: what VMD, Mol* and PyMOL do
  // (maps/map_formats.h: mrc_placement). espgrid's files set one of the two.
  const bool has_origin = w.real(50) != 0 || w.real(51) != 0 || w.real(52) != 0;
  for (std::size_t a = 0; a < 3; ++a)
    map.grid.origin[a] = has_origin ? float_field(w.real(50 + static_cast<int>(a)))
                                    : static_cast<double>(start[a]) * map.grid.spacing[a];
  check_read_grid(map.grid, path, 0);

  const std::uint64_t data_at = data_offset(bytes, w.integer(24), n);

  const int labels = std::clamp(w.integer(56), 0, kLabels);
  bool known = physics_from_labels(w, labels, map.physics);
  for (int l = 0; l < labels && !known; ++l) known = read_foreign_note(w.label(l), map);  // a converted map
  if (known) check_read_physics(map.physics, path, 0);
  if (unit_known) *unit_known = known;

  map.values.resize(map.grid.point_count());
  read_values(bytes, data_at, n, axis, little != (std::endian::native == std::endian::little), map);
  check_read_values(map, path);
  return map;
}

}  // namespace espgrid
