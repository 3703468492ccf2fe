// O_DIRECT writes of 949 MB from memory: threads x piece size, each thread its own aligned buffer
// (copy then pwrite, as src/os/file_output.cpp does), then fsync; and buffered pwrite + fsync.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
using clk = std::chrono::steady_clock;
static double ms(clk::time_point a) { return std::chrono::duration<double, std::milli>(clk::now() - a).count(); }
int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/bd.bin";
  const size_t n = size_t(629) * 629 * 629 * 4 / 4096 * 4096;
  std::vector<char> buf(n);
  for (size_t i = 0; i < n; i += 64) buf[i] = char(i * 7 + 3);
  for (int rep = 0; rep < 2; ++rep)
    for (size_t piece_mb : {8, 32})
      for (int threads : {2, 4, 8}) {
        const size_t piece = piece_mb << 20;
        ::unlink(path.c_str());
        auto t = clk::now();
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
        if (fd < 0) {
          std::perror("open O_DIRECT");
          return 1;
        }
        std::atomic<size_t> next{0};
        std::vector<std::thread> team;
        for (int i = 0; i < threads; ++i)
          team.emplace_back([&] {
            char* b = static_cast<char*>(std::aligned_alloc(4096, piece));
            for (;;) {
              size_t at = next.fetch_add(piece);
              if (at >= n) break;
              size_t k = std::min(piece, n - at);
              std::memcpy(b, buf.data() + at, k);
              size_t done = 0;
              while (done < k) {
                ssize_t w = ::pwrite(fd, b + done, k - done, at + done);
                if (w <= 0) {
                  std::perror("pwrite");
                  break;
                }
                done += w;
              }
            }
            std::free(b);
          });
        for (auto& th : team) th.join();
        double wr = ms(t);
        ::fsync(fd);
        double fs = ms(t);
        ::close(fd);
        std::printf("direct piece %2zu MB threads %d: written %.1f ms, +fsync %.1f ms (%.2f GB/s)\n", piece_mb, threads,
                    wr, fs, n / fs / 1e6);
      }
  ::unlink(path.c_str());
}
