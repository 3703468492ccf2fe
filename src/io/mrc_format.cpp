// MRC2014 (https://www.ccpem.ac.uk/mrc_format/mrc2014.php): a 1024-byte header, then the map as
// float32 (mode 2) with x fastest (MAPC, MAPR, MAPS = 1, 2, 3), in the byte order the machine
// stamp names. Read by ChimeraX, PyMOL, VMD, Coot, Mol* and mrcfile. Planes are written at their
// place as they come (io/map_stream.h); the header, which holds the statistics, last.
#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "src/core/errors.h"
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

PlaneStats plane_stats(const float* v, std::size_t n) {
  PlaneStats s;
  s.count = n;
  if (n == 0) return s;
  s.min = s.max = v[0];
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    s.min = std::min(s.min, v[i]);
    s.max = std::max(s.max, v[i]);
    sum += v[i];
  }
  s.mean = sum / static_cast<double>(n);
  double m2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = v[i] - s.mean;
    m2 += d * d;
  }
  s.squared_deviations = m2;
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
  std::vector<std::string> labels = {"espgrid " ESPGRID_VERSION ": electrostatic potential by direct Coulomb summation",
                                     physics_comment(map.physics) + ", model " + model_name(map.physics.model)};
  if (!map.source.empty()) labels.push_back(map.source);
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
  MrcPlaneWriter(const PotentialMap& map, OutputFile& file, int threads)
      : map_(map),
        file_(file),
        threads_(threads > 0 ? threads : omp_get_max_threads()),
        plane_points_(static_cast<std::size_t>(map.grid.dims[0]) * static_cast<std::size_t>(map.grid.dims[1])),
        stats_(static_cast<std::size_t>(map.grid.dims[2])) {}

  void write_planes(std::int64_t first, std::int64_t count) override {
    const float* values = map_.values.data() + static_cast<std::size_t>(first) * plane_points_;
    file_.write_at(kHeaderBytes + sizeof(float) * plane_points_ * static_cast<std::size_t>(first), values,
                   sizeof(float) * plane_points_ * static_cast<std::size_t>(count));
#pragma omp parallel for num_threads(threads_)        \
    schedule(static) if (threads_ > 1 && count > 1 && \
                         plane_points_ * static_cast <std::size_t>(count) > (std::size_t{1} << 20))
    for (std::int64_t k = first; k < first + count; ++k)
      stats_[static_cast<std::size_t>(k)] =
          plane_stats(map_.values.data() + static_cast<std::size_t>(k) * plane_points_, plane_points_);
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
  int threads_;
  std::size_t plane_points_;
  std::vector<PlaneStats> stats_;  ///< per z-plane, filled as planes are written
};

}  // namespace

std::unique_ptr<PlaneWriter> make_mrc_plane_writer(const PotentialMap& map, OutputFile& file, int threads) {
  return std::make_unique<MrcPlaneWriter>(map, file, threads);
}

void write_mrc_to(const PotentialMap& map, const std::string& path) {
  OutputFile file(path);
  MrcPlaneWriter writer(map, file, 0);
  writer.write_planes(0, map.grid.dims[2]);
  writer.finish();
  file.close();
}

}  // namespace espgrid
