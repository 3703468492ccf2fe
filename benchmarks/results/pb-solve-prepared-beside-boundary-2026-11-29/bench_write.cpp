// How fast can 949 MB of floats get into a file: one write(), threads' pwrite(), or a mapping filled by threads.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>
using clk = std::chrono::steady_clock;
static double ms(clk::time_point a) { return std::chrono::duration<double, std::milli>(clk::now() - a).count(); }
int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/bw.bin";
  const size_t n = size_t(629) * 629 * 629 * 4;
  std::vector<char> buf(n);
  for (size_t i = 0; i < n; i += 4096) buf[i] = char(i * 7);
  for (int rep = 0; rep < 3; ++rep) {
    for (int threads : {1, 4, 8, 16}) {
      ::unlink(path.c_str());
      auto t = clk::now();
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      std::vector<std::thread> team;
      for (int i = 0; i < threads; ++i)
        team.emplace_back([&, i] {
          size_t a = n * i / threads, b = n * (i + 1) / threads;
          while (a < b) {
            ssize_t w = ::pwrite(fd, buf.data() + a, std::min<size_t>(b - a, 1 << 30), a);
            if (w <= 0) break;
            a += w;
          }
        });
      for (auto& th : team) th.join();
      double wr = ms(t);
      ::fsync(fd);
      double fs = ms(t);
      ::close(fd);
      std::printf("pwrite threads %2d: write %.1f ms, +fsync %.1f ms\n", threads, wr, fs);
    }
    for (int threads : {4, 8, 16}) {
      ::unlink(path.c_str());
      auto t = clk::now();
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
      int fa = ::posix_fallocate(fd, 0, n);
      double fal = ms(t);
      char* m = static_cast<char*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
      std::vector<std::thread> team;
      for (int i = 0; i < threads; ++i)
        team.emplace_back([&, i] {
          size_t a = n * i / threads, b = n * (i + 1) / threads;
          std::memcpy(m + a, buf.data() + a, b - a);
        });
      for (auto& th : team) th.join();
      double cp = ms(t);
      ::munmap(m, n);
      double um = ms(t);
      ::fsync(fd);
      double fs = ms(t);
      ::close(fd);
      std::printf("mmap threads %2d: fallocate rc %d %.1f ms, filled %.1f, unmapped %.1f, +fsync %.1f ms\n", threads,
                  fa, fal, cp, um, fs);
    }
  }
  ::unlink(path.c_str());
}
