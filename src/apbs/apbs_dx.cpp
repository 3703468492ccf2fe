#include "src/apbs/apbs_dx.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif

#include "src/core/errors.h"
#include "src/core/float_text.h"
#include "src/core/thread_count.h"

namespace espgrid::apbs {
namespace {

/// Values formatted per block on one thread: long enough to amortize the parallel region,
/// short enough that a block's text (≈16 bytes a value) stays a few MB.
constexpr std::size_t kBlockValues = 3 * 100'000;

/// A sink for the file's bytes: a plain file descriptor or a zlib stream.
class Sink {
 public:
  Sink(const std::string& path, bool gzip) : path_(path) {
    if (gzip) {
#if ESPGRID_HAVE_ZLIB
      gz_ = gzopen(path.c_str(), "wb1");  // level 1: DX text compresses nearly as well, much faster
      if (!gz_) throw Error("cannot write " + path + ": " + std::strerror(errno));
      return;
#else
      throw UsageError("this espgrid was built without zlib: it cannot write " + path +
                       " (write ... dx instead of gz)");
#endif
    }
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) throw Error("cannot write " + path + ": " + std::strerror(errno));
  }
  ~Sink() {
    if (fd_ >= 0) ::close(fd_);
#if ESPGRID_HAVE_ZLIB
    if (gz_) gzclose(static_cast<gzFile>(gz_));
#endif
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void write(const char* data, std::size_t bytes) {
#if ESPGRID_HAVE_ZLIB
    if (gz_) {
      while (bytes > 0) {
        const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(bytes, 1u << 30));
        if (gzwrite(static_cast<gzFile>(gz_), data, chunk) != static_cast<int>(chunk))
          throw Error("cannot write " + path_ + " (gzip)");
        data += chunk;
        bytes -= chunk;
      }
      return;
    }
#endif
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, data, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error("cannot write " + path_ + ": " + std::strerror(errno));
      data += n;
      bytes -= static_cast<std::size_t>(n);
    }
  }
  void close() {
#if ESPGRID_HAVE_ZLIB
    if (gz_) {
      const int rc = gzclose(static_cast<gzFile>(gz_));
      gz_ = nullptr;
      if (rc != Z_OK) throw Error("cannot write " + path_ + " (gzip)");
      return;
    }
#endif
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw Error("cannot write " + path_ + ": " + std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_ = -1;
  void* gz_ = nullptr;
};

std::string header(const GridSpec& grid, const NodeBlock& b, const std::string& title, const std::string& origin_line) {
  char line[256];
  std::string text =
      "# Data from espgrid " ESPGRID_VERSION " (APBS 3.4.1 input)\n# " + origin_line + "\n# " + title + "\n# \n";
  std::snprintf(line, sizeof line, "object 1 class gridpositions counts %lld %lld %lld\n",
                static_cast<long long>(b.count[0]), static_cast<long long>(b.count[1]),
                static_cast<long long>(b.count[2]));
  text += line;
  std::snprintf(line, sizeof line, "origin %12.6e %12.6e %12.6e\n", grid.position(0, b.first[0]),
                grid.position(1, b.first[1]), grid.position(2, b.first[2]));
  text += line;
  std::snprintf(line, sizeof line, "delta %12.6e %12.6e %12.6e\n", grid.spacing[0], 0.0, 0.0);
  text += line;
  std::snprintf(line, sizeof line, "delta %12.6e %12.6e %12.6e\n", 0.0, grid.spacing[1], 0.0);
  text += line;
  std::snprintf(line, sizeof line, "delta %12.6e %12.6e %12.6e\n", 0.0, 0.0, grid.spacing[2]);
  text += line;
  std::snprintf(line, sizeof line, "object 2 class gridconnections counts %lld %lld %lld\n",
                static_cast<long long>(b.count[0]), static_cast<long long>(b.count[1]),
                static_cast<long long>(b.count[2]));
  text += line;
  std::snprintf(line, sizeof line, "object 3 class array type double rank 0 items %lld data follows\n",
                static_cast<long long>(b.count[0] * b.count[1] * b.count[2]));
  text += line;
  return text;
}

/// Planes [first_plane, first_plane + planes) of block `b` (x fixed in each) in DX order, z fastest:
/// each (y, z) row of x values is read once, contiguously. Read in DX order instead, every value
/// sat on a page of its own (the z stride of a 449 x 449 grid is 806 KB): formatting 51.8 M values
/// took 0.34 s on 32 cores of an H200 host, nearly all of it waiting on page walks.
void dx_order(const GridSpec& grid, const std::vector<float>& values, const NodeBlock& b, std::size_t first_plane,
              std::size_t planes, float* out, int threads) {
  const auto ny = static_cast<std::size_t>(b.count[1]), nz = static_cast<std::size_t>(b.count[2]);
  const auto gx = static_cast<std::size_t>(grid.dims[0]), gy = static_cast<std::size_t>(grid.dims[1]);
  const std::size_t plane = ny * nz, x0 = static_cast<std::size_t>(b.first[0]) + first_plane;
  const auto y0 = static_cast<std::size_t>(b.first[1]), z0 = static_cast<std::size_t>(b.first[2]);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t j = 0; j < ny; ++j)
    for (std::size_t k = 0; k < nz; ++k) {
      const float* row = values.data() + x0 + gx * ((y0 + j) + gy * (z0 + k));
      float* to = out + j * nz + k;
      for (std::size_t p = 0; p < planes; ++p) to[p * plane] = row[p];
    }
}

/// The text of `ordered` (DX positions [begin, begin + count) of a block of `total` values), three a line.
char* format_values(const float* ordered, std::size_t begin, std::size_t count, std::size_t total, char* out) {
  for (std::size_t n = 0; n < count; ++n) {
    out = write_scientific_9(ordered[n], out);
    const std::size_t at = begin + n;
    *out++ = (at % 3 == 2 || at + 1 == total) ? '\n' : ' ';
  }
  return out;
}

}  // namespace

NodeBlock whole_grid(const GridSpec& grid) { return {{0, 0, 0}, {grid.dims[0], grid.dims[1], grid.dims[2]}}; }

void write_apbs_dx(const std::string& path, const GridSpec& grid, const std::vector<float>& values,
                   const NodeBlock& block, const std::string& title, const std::string& origin_line, bool gzip,
                   int threads) {
  if (values.size() != grid.point_count()) throw Error("internal: a map of the wrong size for " + path);
  Sink sink(path, gzip);
  const std::string head = header(grid, block, title, origin_line);
  sink.write(head.data(), head.size());
  const std::size_t total = static_cast<std::size_t>(block.count[0] * block.count[1] * block.count[2]);
  threads = threads_to_use(threads);
  const auto parts = static_cast<std::size_t>(threads);
  // Batches of whole x planes (contiguous in DX order) of about kBlockValues a thread: each put in
  // DX order, then formatted by all threads (one part each) while one thread writes the batch
  // before. An H200 host, 51.8 M values (benchmarks/apbs_dx_write.cpp): 0.87-0.91 s before, when
  // formatting (0.34-0.49 s) and writing (0.40-0.57 s) took turns; 0.71-0.79 s now, formatting
  // 0.26-0.32 s: the two overlap only in part (leaving the writer a core of its own changed
  // nothing measurable), for a reason not found yet.
  const std::size_t plane = static_cast<std::size_t>(block.count[1] * block.count[2]);
  const auto nx = static_cast<std::size_t>(block.count[0]);
  const std::size_t planes_per_batch = std::max<std::size_t>(1, parts * kBlockValues / std::max<std::size_t>(plane, 1));
  std::vector<float> ordered(std::min(nx, planes_per_batch) * plane);
  struct Batch {
    std::vector<std::vector<char>> text;
    std::vector<std::size_t> used;
  };
  const std::size_t largest_part = (ordered.size() + parts - 1) / parts;
  std::array<Batch, 2> batches;
  for (Batch& b : batches) {
    b.text.assign(parts, std::vector<char>(largest_part * (kScientific9MaxChars + 1)));
    b.used.assign(parts, 0);
  }
  const auto write_batch = [&sink](const Batch& b) {
    for (std::size_t t = 0; t < b.text.size(); ++t) sink.write(b.text[t].data(), b.used[t]);
  };
  std::future<void> writing;  // after the buffers: destroyed (joined) before them
  std::size_t parity = 0;
  for (std::size_t first_plane = 0; first_plane < nx; first_plane += planes_per_batch, parity ^= 1) {
    const std::size_t planes = std::min(planes_per_batch, nx - first_plane), count = planes * plane;
    const std::size_t begin = first_plane * plane, per_part = (count + parts - 1) / parts;
    dx_order(grid, values, block, first_plane, planes, ordered.data(), threads);
    Batch& b = batches[parity];  // written two batches ago: that write was waited for
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (std::size_t t = 0; t < parts; ++t) {
      const std::size_t from = std::min(count, t * per_part), to = std::min(count, from + per_part);
      char* text = b.text[t].data();
      b.used[t] =
          static_cast<std::size_t>(format_values(ordered.data() + from, begin + from, to - from, total, text) - text);
    }
    if (writing.valid()) writing.get();  // the batch before is written (its error, if any, thrown here)
    writing = std::async(std::launch::async, write_batch, std::cref(b));
  }
  if (writing.valid()) writing.get();
  static constexpr char kTrailer[] =
      "attribute \"dep\" string \"positions\"\n"
      "object \"regular positions regular connections\" class field\n"
      "component \"positions\" value 1\n"
      "component \"connections\" value 2\n"
      "component \"data\" value 3\n";
  sink.write(kTrailer, sizeof kTrailer - 1);
  sink.close();
}

}  // namespace espgrid::apbs
