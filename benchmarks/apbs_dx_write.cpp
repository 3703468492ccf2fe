// How fast `write pot dx` writes a big map, and where the time goes: the whole write to a file,
// the same to /dev/null (formatting and the writer's own work, no file system), and the bytes alone
// (a buffer of the file's size written in 8 MiB pieces: the file system's floor). Built on request
// only (`cmake --build BUILD --target apbs_dx_write`), never by CI.
//
//   apbs_dx_write NX NY NZ [DIR] [REPEATS]   (DIR default /tmp, REPEATS default 3; medians)
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/apbs/apbs_dx.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The bytes of a file of `size` written as one program would write them, in 8 MiB pieces.
double raw_write_seconds(const std::string& path, std::size_t size) {
  std::vector<char> piece(8u << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) std::exit(3);
  for (std::size_t done = 0; done < size;) {
    const std::size_t n = std::min(piece.size(), size - done);
    const ssize_t w = ::write(fd, piece.data(), n);
    if (w <= 0) std::exit(3);
    done += static_cast<std::size_t>(w);
  }
  ::close(fd);
  return seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: apbs_dx_write NX NY NZ [DIR] [REPEATS]\n");
    return 2;
  }
  espgrid::GridSpec grid;
  for (int a = 0; a < 3; ++a) {
    grid.dims[a] = std::atoi(argv[1 + a]);
    grid.spacing[a] = 0.5;  // Å
  }
  const std::string dir = argc > 4 ? argv[4] : "/tmp";
  const int repeats = argc > 5 ? std::max(1, std::atoi(argv[5])) : 3;
  // A potential-like field (kT/e): smooth, both signs, no two neighbours equal, never zero.
  std::vector<float> values(grid.point_count());
  for (std::size_t n = 0; n < values.size(); ++n)
    values[n] = static_cast<float>(std::sin(0.001 * static_cast<double>(n)) * 37.0 +
                                   1e-3 * static_cast<double>(n % 977) + 0.01);
  const auto block = espgrid::apbs::whole_grid(grid);
  const std::string path = dir + "/apbs_dx_write.dx";
  std::vector<double> to_file, to_null, raw;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    espgrid::apbs::write_apbs_dx(path, grid, values, block, "POTENTIAL (kT/e)", "benchmark", false);
    to_file.push_back(seconds_since(start));
    start = std::chrono::steady_clock::now();
    espgrid::apbs::write_apbs_dx("/dev/null", grid, values, block, "POTENTIAL (kT/e)", "benchmark", false);
    to_null.push_back(seconds_since(start));
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  const auto bytes = static_cast<std::size_t>(std::ftell(f));
  std::fclose(f);
  for (int r = 0; r < repeats; ++r) raw.push_back(raw_write_seconds(path + ".raw", bytes));
  std::remove(path.c_str());
  std::remove((path + ".raw").c_str());
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf("{\"points\": %zu, \"bytes\": %zu, \"dir\": \"%s\", \"repeats\": %d,\n", values.size(), bytes,
              dir.c_str(), repeats);
  std::printf(" \"to_file_s\": %.4f, \"to_dev_null_s\": %.4f, \"raw_bytes_s\": %.4f,\n", median(to_file),
              median(to_null), median(raw));
  std::printf(" \"to_file_MB_per_s\": %.0f, \"raw_MB_per_s\": %.0f}\n", mb / median(to_file), mb / median(raw));
  return 0;
}
