// OpenDX: the writer, in the layout APBS writes (the reader is maps/dx_reader.cpp).

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
#include <system_error>
#include <thread>
#include <vector>

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif

#include "src/core/errors.h"
#include "src/core/float_text.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/core/thread_count.h"
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

/// The lines before the values: espgrid's comments (program, source, physics) and the grid.
std::string dx_header(const PotentialMap& map) {
  const GridSpec& g = map.grid;
  const auto nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  std::string header;
  if (!map.foreign.empty()) {  // no physics claimed for a map espgrid did not compute
    header += "# " + foreign_map_title(map) + "\n";
    if (!map.source.empty()) header += "# " + comment_text(map.source) + "\n";
    header += "# " + foreign_map_unit(map) + "\n";
  } else {
    header += !map.physics.is_pb() ? "# Electrostatic potential by espgrid " ESPGRID_VERSION
                                     " (direct Coulomb summation)\n"
              : map.physics.pb.equation == PbEquation::Nonlinear
                  ? "# Electrostatic potential by espgrid " ESPGRID_VERSION " (nonlinear Poisson-Boltzmann)\n"
                  : "# Electrostatic potential by espgrid " ESPGRID_VERSION " (linearized Poisson-Boltzmann)\n";
    if (!map.source.empty()) header += "# " + comment_text(map.source) + "\n";
    header += "# " + physics_comment(map.physics) + "\n";
  }
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
  return header;
}

/// The DX text of `map` into `path`, gzip members when `gzip`. Blocks of whole lines are
/// formatted (and compressed) on every thread, each into its own buffers, and written in order:
/// the text is the one a single thread would write, byte for byte. Plain threads that sleep
/// while they wait for their turn to write: OpenMP's `ordered` spun, and on a busy machine two
/// spinning threads wrote slower than one.
void write_dx(const PotentialMap& map, const std::string& path, const MapWriteOptions& options, bool gzip) {
  OutputFile file(path);
  const GridSpec& g = map.grid;
  const std::string header = dx_header(map);
  static constexpr char kTrailer[] =
      "attribute \"dep\" string \"positions\"\n"
      "object \"regular positions regular connections\" class field\n"
      "component \"positions\" value 1\n"
      "component \"connections\" value 2\n"
      "component \"data\" value 3\n";

  const std::size_t total = g.point_count();
  const auto blocks = static_cast<std::int64_t>((total + kDxBlockValues - 1) / kDxBlockValues);
  const int threads =
      static_cast<int>(std::clamp<std::int64_t>(threads_to_use(options.threads), 1, std::max<std::int64_t>(blocks, 1)));
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
  for (int t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work, std::ref(buffers[static_cast<std::size_t>(t)]));
    } catch (const std::system_error&) {
      break;  // no thread to be had (an address-space limit): the threads started write the rest
    }
  }
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

}  // namespace espgrid
