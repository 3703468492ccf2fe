// OpenDX: the writer (APBS layout) and a reader for maps of the same layout.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif

#include "src/core/errors.h"
#include "src/core/float_text.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_reading.h"
#include "src/os/file_output.h"

namespace espgrid {
namespace {

/// `text` made safe for one header comment line: control characters (a newline in a path
/// would end the comment and break VMD's and APBS's parsers) become '?', and the length is
/// capped well inside VMD's 2040-byte line buffer.
std::string comment_text(const std::string& text) {
  std::string out = text.substr(0, 200);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (text.size() > 200) out += "...";
  return out;
}

/// Values per block the DX writer formats on one thread: whole lines of three, about 1 MB of
/// text, so that a block is long enough to amortize scheduling and short enough to keep every
/// core busy until the end.
constexpr std::size_t kDxBlockValues = 3 * 21'846;

/// Formats the values at DX positions [first, end) (z fastest: n = k + nz·(j + ny·i)) into
/// `out`, three a line, and returns the end; `gathered` holds end − first floats. `first`
/// starts a line. The values are first gathered from the map (x fastest: each read is a new
/// cache line and often a new page), then formatted: in one loop the formatting hid too few
/// of those misses, and the loads took 80% of the time.
char* format_dx_values(const float* values, const GridSpec& g, std::size_t first, std::size_t end, float* gathered,
                       char* out) {
  const auto nx = static_cast<std::size_t>(g.dims[0]), ny = static_cast<std::size_t>(g.dims[1]),
             nz = static_cast<std::size_t>(g.dims[2]);
  const std::size_t total = g.point_count();
  const std::size_t plane = nx * ny;
  std::size_t k = first % nz, j = (first / nz) % ny, i = first / (nz * ny);
  for (std::size_t n = 0; n < end - first; ++n) {
    gathered[n] = values[i + nx * j + plane * k];
    if (++k == nz) {
      k = 0;
      if (++j == ny) {
        j = 0;
        ++i;
      }
    }
  }
  int column = 0;  // first starts a line
  for (std::size_t n = first; n < end; ++n) {
    out = write_scientific_9(gathered[n - first], out);
    *out++ = (++column == 3 || n + 1 == total) ? '\n' : ' ';
    if (column == 3) column = 0;
  }
  return out;
}

}  // namespace

namespace {

#if ESPGRID_HAVE_ZLIB
/// Compresses text into gzip members, one per call (deflate with the gzip wrapper), reusing its
/// zlib state. Level 1: the measured best trade for DX text (benchmarks/NOTES.md).
class GzipMembers {
 public:
  GzipMembers() {
    if (deflateInit2(&z_, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw Error("zlib's deflateInit2 failed (out of memory?)");
  }
  ~GzipMembers() { deflateEnd(&z_); }
  GzipMembers(const GzipMembers&) = delete;
  GzipMembers& operator=(const GzipMembers&) = delete;
  /// `bytes` of `text` as one gzip member in `out`; false when zlib fails.
  bool compress(const char* text, std::size_t bytes, std::vector<char>& out) noexcept {
    if (deflateReset(&z_) != Z_OK) return false;
    out.resize(deflateBound(&z_, static_cast<uLong>(bytes)));
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text));
    z_.avail_in = static_cast<uInt>(bytes);
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z_, Z_FINISH);
    out.resize(out.size() - z_.avail_out);
    return rc == Z_STREAM_END;
  }

 private:
  z_stream z_{};
};
#else
class GzipMembers {  // never made: check_map_format_supported refuses .dx.gz without zlib
 public:
  GzipMembers() { throw UsageError("this espgrid was built without zlib: it cannot write .dx.gz"); }
  bool compress(const char*, std::size_t, std::vector<char>&) noexcept { return false; }
};
#endif

/// The DX text of `map` into `path`, gzip members when `gzip`. Blocks of whole lines are
/// formatted (and compressed) on every thread, each into its own buffers, and written in order:
/// the text is the one a single thread would write, byte for byte. Plain threads that sleep
/// while they wait for their turn to write: OpenMP's `ordered` spun, and on a busy machine two
/// spinning threads wrote slower than one.
void write_dx(const PotentialMap& map, const std::string& path, const MapWriteOptions& options, bool gzip) {
  OutputFile file(path);
  const GridSpec& g = map.grid;
  const auto nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  std::string header;
  header += map.physics.poisson_boltzmann  // issue 23
                ? "# Electrostatic potential by espgrid " ESPGRID_VERSION " (linearized Poisson-Boltzmann)\n"
                : "# Electrostatic potential by espgrid " ESPGRID_VERSION " (direct Coulomb summation)\n";
  if (!map.source.empty()) header += "# " + comment_text(map.source) + "\n";
  header += "# " + physics_comment(map.physics) + "\n";
  header += "object 1 class gridpositions counts " + std::to_string(nx) + " " + std::to_string(ny) + " " +
            std::to_string(nz) + "\n";
  header += "origin " + shortest_text(g.origin[0]) + " " + shortest_text(g.origin[1]) + " " +
            shortest_text(g.origin[2]) + "\n";
  header += "delta " + shortest_text(g.spacing[0]) + " 0 0\n";
  header += "delta 0 " + shortest_text(g.spacing[1]) + " 0\n";
  header += "delta 0 0 " + shortest_text(g.spacing[2]) + "\n";
  header += "object 2 class gridconnections counts " + std::to_string(nx) + " " + std::to_string(ny) + " " +
            std::to_string(nz) + "\n";
  header += "object 3 class array type double rank 0 items " + std::to_string(g.point_count()) + " data follows\n";
  static constexpr char kTrailer[] =
      "attribute \"dep\" string \"positions\"\n"
      "object \"regular positions regular connections\" class field\n"
      "component \"positions\" value 1\n"
      "component \"connections\" value 2\n"
      "component \"data\" value 3\n";

  const std::size_t total = g.point_count();
  const auto blocks = static_cast<std::int64_t>((total + kDxBlockValues - 1) / kDxBlockValues);
  const int threads = static_cast<int>(std::clamp<std::int64_t>(
      options.threads > 0 ? options.threads : omp_get_max_threads(), 1, std::max<std::int64_t>(blocks, 1)));
  struct Buffers {
    std::vector<float> gathered = std::vector<float>(kDxBlockValues);
    std::vector<char> text = std::vector<char>(kDxBlockValues * (kScientific9MaxChars + 1));
    std::vector<char> compressed;
    std::unique_ptr<GzipMembers> gzip;
  };
  // Allocated here, so that bad_alloc (and zlib's failure to start) reaches the caller.
  std::vector<Buffers> buffers(static_cast<std::size_t>(threads));
  if (gzip)
    for (Buffers& b : buffers) b.gzip = std::make_unique<GzipMembers>();
  std::atomic<bool> gzip_failed{false};
  // Text as it goes into the file: as it is, or as a gzip member (compressed into `b`).
  const auto put = [&](Buffers& b, const char* text, std::size_t bytes) {
    if (!gzip) return file.append(text, bytes);
    if (!b.gzip->compress(text, bytes, b.compressed)) gzip_failed = true;
    file.append(b.compressed.data(), b.compressed.size());
  };
  put(buffers[0], header.data(), header.size());

  std::atomic<std::int64_t> next_block{0};
  std::mutex turn_mutex;
  std::condition_variable turn_changed;
  std::int64_t turn = 0;  // the block whose text goes into the file next
  const auto work = [&](Buffers& b) {
    for (;;) {
      const std::int64_t block = next_block.fetch_add(1);  // blocks are taken in order: no waiting on a later one
      if (block >= blocks) return;
      const std::size_t first = static_cast<std::size_t>(block) * kDxBlockValues;
      const std::size_t end = std::min(total, first + kDxBlockValues);
      const char* text_end = format_dx_values(map.values.data(), g, first, end, b.gathered.data(), b.text.data());
      const auto bytes = static_cast<std::size_t>(text_end - b.text.data());
      if (gzip && !b.gzip->compress(b.text.data(), bytes, b.compressed)) gzip_failed = true;
      std::unique_lock<std::mutex> lock(turn_mutex);
      turn_changed.wait(lock, [&] { return turn == block; });
      lock.unlock();
      if (gzip)
        file.append(b.compressed.data(), b.compressed.size());
      else
        file.append(b.text.data(), bytes);
      lock.lock();
      ++turn;
      turn_changed.notify_all();
    }
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(work, std::ref(buffers[static_cast<std::size_t>(t)]));
  work(buffers[0]);
  for (auto& h : helpers) h.join();
  put(buffers[0], kTrailer, sizeof kTrailer - 1);
  if (gzip_failed) throw Error("cannot write " + path + ": zlib failed to compress the text");
  file.close();
}

}  // namespace

void write_dx_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options) {
  write_dx(map, path, options, false);
}

void write_dx_gz_to(const PotentialMap& map, const std::string& path, const MapWriteOptions& options) {
  write_dx(map, path, options, true);
}

bool gzip_supported() noexcept { return ESPGRID_HAVE_ZLIB; }

namespace {

/// Reads the DX text of `lines` by its structure (maps/map_formats.h: read_dx), one part of the
/// file a method: the grid, the array header, the values. The values are put straight into
/// their x-fastest places (the file has z fastest): no second copy of the map.
class DxReader {
 public:
  explicit DxReader(LineSource& lines) : lines_(lines), path_(lines.path()) { lines_.set_kind("text OpenDX map"); }

  PotentialMap read(bool* unit_known) {
    read_grid();
    const std::size_t total = read_array_header();
    if (known_) check_read_physics(map_.physics, path_, physics_line_);
    if (unit_known) *unit_known = known_;
    map_.values.resize(total);  // check_read_grid has checked the limits and the memory
    read_values(total);
    return std::move(map_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) { lines_.fail(what); }

  /// The next line that is not blank or a comment, split into tokens_; comments before the data
  /// may carry the physics (espgrid's line, APBS's "POTENTIAL (kT/e)").
  void next_tokens(const char* expected) {
    for (;;) {
      const auto line = lines_.next();
      if (!line)
        throw InputError(path_, std::max<std::size_t>(lines_.line_number(), 1),
                         std::string("the file ends before ") + expected + (lines_.empty() ? " (it is empty)" : ""));
      split_whitespace(*line, tokens_);
      if (tokens_.empty()) continue;
      if (tokens_[0].front() == '#') {
        if (!known_ && parse_physics_comment(line->substr(line->find('#') + 1), map_.physics)) {
          known_ = true;
          physics_line_ = lines_.line_number();
        }
        continue;
      }
      return;
    }
  }

  double number(std::string_view token, const char* what) {
    const auto v = parse_number(token);
    if (!v || !std::isfinite(*v)) fail(std::string(what) + " " + quoted(token) + " is not a finite number");
    return *v;
  }

  /// "object N class KLASS counts NX NY NZ"'s counts.
  std::array<std::int64_t, 3> counts(const char* klass) {
    if (tokens_.size() != 8 || tokens_[0] != "object" || tokens_[2] != "class" || tokens_[3] != klass ||
        tokens_[4] != "counts")
      fail(std::string("expected 'object N class ") + klass + " counts NX NY NZ' (a 3-D grid)");
    std::array<std::int64_t, 3> n{};
    for (std::size_t a = 0; a < 3; ++a) {
      const auto v = parse_integer(tokens_[5 + a]);
      // Each count alone is held to espgrid's limit, so that their product cannot overflow.
      if (!v || *v < 1 || *v > kMaxAxisPoints)
        fail("grid count " + quoted(tokens_[5 + a]) + " must be a whole number from 1 to " +
             std::to_string(kMaxAxisPoints));
      n[a] = *v;
    }
    return n;
  }

  /// gridpositions, origin, three axis-aligned deltas (checked as `espgrid map` checks a grid),
  /// and gridconnections with the same counts.
  void read_grid() {
    next_tokens("'object 1 class gridpositions counts NX NY NZ'");
    map_.grid.dims = counts("gridpositions");
    const std::size_t grid_line = lines_.line_number();
    next_tokens("'origin X Y Z'");
    if (tokens_.size() != 4 || tokens_[0] != "origin") fail("expected 'origin X Y Z'");
    for (std::size_t a = 0; a < 3; ++a) map_.grid.origin[a] = number(tokens_[1 + a], "origin");
    for (std::size_t a = 0; a < 3; ++a) {
      next_tokens("three 'delta' lines");
      if (tokens_.size() != 4 || tokens_[0] != "delta")
        fail("expected 'delta DX DY DZ' (" + std::to_string(a + 1) + " of 3)");
      for (std::size_t b = 0; b < 3; ++b) {
        const double d = number(tokens_[1 + b], "delta");
        if (b != a && d != 0.0)
          fail("delta " + std::to_string(a + 1) + " is not along the " + std::string(1, "xyz"[a]) +
               " axis: espgrid reads axis-aligned grids only");
        if (b == a) map_.grid.spacing[a] = d;
      }
      if (!(map_.grid.spacing[a] > 0))
        fail("grid spacing " + quoted(tokens_[1 + a]) + " along " + std::string(1, "xyz"[a]) + " must be positive");
    }
    check_read_grid(map_.grid, path_, lines_.line_number());
    next_tokens("'object 2 class gridconnections counts NX NY NZ'");
    if (counts("gridconnections") != map_.grid.dims)
      fail("the gridconnections counts differ from the gridpositions counts of line " + std::to_string(grid_line));
  }

  /// "object 3 class array type double rank 0 items N data follows": a scalar number array of
  /// one item a grid point, as text after the header. Returns the item count.
  std::size_t read_array_header() {
    next_tokens("'object 3 class array type double rank 0 items N data follows'");
    if (tokens_.size() < 4 || tokens_[0] != "object" || tokens_[2] != "class" || tokens_[3] != "array")
      fail("expected 'object 3 class array type double rank 0 items N data follows'");
    std::optional<long long> items;
    bool follows = false;
    for (std::size_t t = 4; t < tokens_.size();) {
      const std::string_view key = tokens_[t];
      if (key == "type") {  // "double", "float", GridDataFormats' "\"float\"", "unsigned byte", ...
        t = check_array_type(t + 1);
      } else if (key == "rank" && t + 1 < tokens_.size()) {
        if (tokens_[t + 1] != "0")
          fail("the array has rank " + quoted(tokens_[t + 1]) + ": a map holds scalars (rank 0)");
        t += 2;
      } else if (key == "shape" && t + 1 < tokens_.size()) {
        if (tokens_[t + 1] != "1") fail("the array has shape " + quoted(tokens_[t + 1]) + ": a map holds scalars");
        t += 2;
      } else if (key == "items" && t + 1 < tokens_.size()) {
        items = parse_integer(tokens_[t + 1]);
        if (!items || *items < 0) fail("items " + quoted(tokens_[t + 1]) + " is not a whole number");
        t += 2;
      } else if (key == "data" && t + 1 < tokens_.size() && tokens_[t + 1] == "follows" && t + 2 == tokens_.size()) {
        follows = true;
        t += 2;
      } else if (key == "ascii" || key == "text") {
        ++t;
      } else {
        fail("cannot read " + quoted(key) + " in the array header: espgrid reads text data that follows the header ('" +
             "items N data follows')");
      }
    }
    if (!items) fail("the array header gives no 'items N'");
    if (!follows) fail("the array header does not end with 'data follows'");
    const std::size_t total = map_.grid.point_count();
    if (static_cast<unsigned long long>(*items) != total)
      fail("items " + std::to_string(*items) + " is not the grid's " + std::to_string(map_.grid.dims[0]) + " x " +
           std::to_string(map_.grid.dims[1]) + " x " + std::to_string(map_.grid.dims[2]) + " = " +
           std::to_string(total) + " points");
    return total;
  }

  /// The words of the array's type from token `t` on (up to the next keyword): a number type, or
  /// an error. Returns the token after them.
  std::size_t check_array_type(std::size_t t) {
    std::string type;
    for (; t < tokens_.size() && tokens_[t] != "rank" && tokens_[t] != "items" && tokens_[t] != "shape" &&
           tokens_[t] != "data";
         ++t)
      type += (type.empty() ? "" : " ") + std::string(tokens_[t]);
    if (type.size() >= 2 && type.front() == '"' && type.back() == '"') type = type.substr(1, type.size() - 2);
    static const char* const kNumeric[] = {"double",       "float",       "int",          "signed int",
                                           "unsigned int", "short",       "signed short", "unsigned short",
                                           "byte",         "signed byte", "unsigned byte"};
    if (std::find(std::begin(kNumeric), std::end(kNumeric), type) == std::end(kNumeric))
      fail("array type " + espgrid::quoted(type) + " is not a number type (double, float, int, ...)");
    return t;
  }

  /// A value too many on the first data line shows as a second line shorter than the first and
  /// a third no longer than the second: blame the first.
  void check_first_line_not_too_long(std::size_t count) const {
    if (short_index_ == 2 && count <= short_count_)
      throw InputError(path_, first_data_line_,
                       "this data line holds " + std::to_string(width_) + " values where the lines after it hold " +
                           std::to_string(short_count_) + ": is there a value too many?");
  }

  std::string missing_after(std::size_t total) const {
    return "the data ends after " + std::to_string(read_) + " of the " + std::to_string(total) +
           " values the array header announces";
  }

  /// The `total` values (z fastest), then only attribute, object and component lines. Every
  /// data line holds as many values as the first, the last one at most as many: a value too
  /// many or too few is found on its own line, not as a shift of every later value.
  void read_values(std::size_t total) {
    bool trailer = false;
    while (const auto line = lines_.next()) {
      split_whitespace(*line, tokens_);
      if (tokens_.empty() || tokens_[0].front() == '#') continue;
      const bool numeric = parse_number(tokens_[0]).has_value();
      if (trailer || read_ == total) {
        if (numeric && !trailer) check_first_line_not_too_long(tokens_.size());
        trailer = true;
        if (numeric)
          fail("a number after the " + std::to_string(total) + " values of the data: is there a value too many?");
        if (tokens_[0] != "attribute" && tokens_[0] != "object" && tokens_[0] != "component")
          fail("unexpected " + quoted(tokens_[0]) + " after the data (expected attribute, object or component lines)");
        continue;
      }
      if (!numeric) {
        if (tokens_[0] == "attribute" || tokens_[0] == "object" || tokens_[0] == "component")
          fail(missing_after(total));
        fail("value " + quoted(tokens_[0]) + " is not a number");
      }
      check_line_width();
      read_line_values(total);
    }
    if (read_ < total) throw InputError(path_, std::max<std::size_t>(lines_.line_number(), 1), missing_after(total));
  }

  /// The data line in tokens_ against the first one's width: longer is an error at once; shorter
  /// is remembered, and an error when another data line follows it.
  void check_line_width() {
    if (short_line_) {
      check_first_line_not_too_long(tokens_.size());
      throw InputError(path_, short_line_,
                       "this data line holds " + std::to_string(short_count_) + " values where the first (line " +
                           std::to_string(first_data_line_) + ") holds " + std::to_string(width_) +
                           ", and it is not the last: is a value missing?");
    }
    ++data_lines_;
    if (width_ == 0) {
      width_ = tokens_.size();
      first_data_line_ = lines_.line_number();
    } else if (tokens_.size() > width_) {
      fail("this data line holds " + std::to_string(tokens_.size()) + " values where the first (line " +
           std::to_string(first_data_line_) + ") holds " + std::to_string(width_) + ": is there a value too many?");
    } else if (tokens_.size() < width_) {
      short_line_ = lines_.line_number();
      short_count_ = tokens_.size();
      short_index_ = data_lines_;
    }
  }

  /// The values of the data line in tokens_, each into its x-fastest place.
  void read_line_values(std::size_t total) {
    const auto nx = static_cast<std::size_t>(map_.grid.dims[0]), ny = static_cast<std::size_t>(map_.grid.dims[1]),
               nz = static_cast<std::size_t>(map_.grid.dims[2]);
    for (const std::string_view token : tokens_) {
      if (read_ == total) check_first_line_not_too_long(tokens_.size());
      if (read_ == total)
        fail("this data line holds more than the " + std::to_string(total) +
             " values the array header announces: is there a value too many?");
      const auto v = parse_number(token);
      if (!v) fail("value " + quoted(token) + " is not a number");
      if (!std::isfinite(*v)) fail("value " + quoted(token) + " is not a finite number");
      if (std::fabs(*v) > std::numeric_limits<float>::max())
        fail("value " + quoted(token) + " is beyond the range of a float32 map (±3.4e38)");
      map_.values[i_ + nx * (j_ + ny * k_)] = static_cast<float>(*v);
      ++read_;
      if (++k_ == nz) {
        k_ = 0;
        if (++j_ == ny) {
          j_ = 0;
          ++i_;
        }
      }
    }
  }

  LineSource& lines_;
  const std::string& path_;
  PotentialMap map_;
  bool known_ = false;            ///< the physics came from a header comment
  std::size_t physics_line_ = 0;  ///< that comment's line
  std::vector<std::string_view> tokens_;
  std::size_t read_ = 0, i_ = 0, j_ = 0, k_ = 0;  ///< values read; the next one is point (i, j, k)
  std::size_t width_ = 0, first_data_line_ = 0;   ///< values on the first data line, and its line
  std::size_t short_line_ = 0, short_count_ = 0;  ///< a data line with fewer than width_ values
  std::size_t data_lines_ = 0, short_index_ = 0;  ///< data lines so far; the short one's place among them
};

PotentialMap read_dx_lines(LineSource& lines, bool* unit_known) { return DxReader(lines).read(unit_known); }

}  // namespace

PotentialMap read_dx(const std::string& path, bool* unit_known) {
  // A .dx.gz is decompressed; zlib's gzread reads a plain .dx as it is, and a .dx that holds
  // gzip data (named without .gz) as what it is.
#if ESPGRID_HAVE_ZLIB
  LineSource lines(path, LineSource::Decompress::Gzip);
#else
  if (map_format_from_extension(path) == MapFormat::DxGz)
    throw UsageError("cannot read " + path + ": this espgrid was built without zlib; gunzip it first");
  LineSource lines(path);
#endif
  return read_dx_lines(lines, unit_known);
}

PotentialMap read_dx_text(std::string name, std::string text, bool* unit_known) {
  LineSource lines(std::move(name), std::move(text));
  return read_dx_lines(lines, unit_known);
}

}  // namespace espgrid
