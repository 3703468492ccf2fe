// MRC2014 (https://www.ccpem.ac.uk/mrc_format/mrc2014.php): a 1024-byte header, then the map as
// float32 (mode 2) with x fastest (MAPC, MAPR, MAPS = 1, 2, 3), in the byte order the machine
// stamp names. Read by ChimeraX, PyMOL, VMD, Coot, Mol* and mrcfile. Planes are written at their
// place as they come (io/map_stream.h); the header, which holds the statistics, last.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "src/core/errors.h"
#include "src/io/float4.h"
#include "src/io/map_formats.h"
#include "src/io/map_stream.h"

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

std::array<char, kHeaderBytes> mrc_header(const PotentialMap& map, const PlaneStats& stats) {
  const GridSpec& g = map.grid;
  for (const std::int64_t n : g.dims)
    if (n > std::numeric_limits<std::int32_t>::max())
      throw Error("internal error: MRC stores at most 2^31 - 1 points per axis");
  std::array<char, kHeaderBytes> h{};
  for (int a = 0; a < 3; ++a) {
    put(h, 1 + a, static_cast<std::int32_t>(g.dims[static_cast<std::size_t>(a)]));  // NX, NY, NZ
    put(h, 5 + a, std::int32_t{0});                                                 // NXSTART..
    put(h, 8 + a, static_cast<std::int32_t>(g.dims[static_cast<std::size_t>(a)]));  // MX, MY, MZ: sampling
    put(h, 11 + a,
        cell_length(g.spacing[static_cast<std::size_t>(a)], g.dims[static_cast<std::size_t>(a)]));  // CELLA, Å
    put(h, 14 + a, 90.0f);                                                                          // CELLB, degrees
    put(h, 17 + a, static_cast<std::int32_t>(a + 1));                                               // MAPC, MAPR, MAPS
    put(h, 50 + a, static_cast<float>(g.origin[static_cast<std::size_t>(a)]));                      // ORIGIN, Å
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
  std::vector<std::string> labels = {map.physics.poisson_boltzmann ? "espgrid " ESPGRID_VERSION ": electrostatic potential, Poisson-Boltzmann"
                                                                 : "espgrid " ESPGRID_VERSION ": electrostatic potential by direct Coulomb summation",
                                     physics_comment(map.physics) + ", model " + model_label(map.physics)};
  if (map.physics.poisson_boltzmann) {  // issue 23: the PB parameters do not fit one label; wrap them at ", "
    PhysicsOptions plain = map.physics;
    plain.poisson_boltzmann = false;
    labels[1] = physics_comment(plain) + ", model pb";
    std::string line;
    const std::string parameters = describe(map.physics.pb);
    std::string_view rest = parameters;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(", ");
      const std::string_view piece = rest.substr(0, comma == std::string_view::npos ? rest.size() : comma + 2);
      if (!line.empty() && line.size() + piece.size() > kLabelBytes) {
        labels.push_back(line);
        line.clear();
      }
      line += piece;
      rest.remove_prefix(piece.size());
    }
    if (!line.empty()) labels.push_back(line);
  }
  if (!map.source.empty()) labels.push_back(map.source);
  if (labels.size() > static_cast<std::size_t>(kLabels)) labels.resize(kLabels);
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

void write_mrc_to(const PotentialMap& map, const std::string& path) {
  OutputFile file(path);
  MrcPlaneWriter writer(map, file);
  write_all_planes(map, writer);
  file.close();
}

}  // namespace espgrid
