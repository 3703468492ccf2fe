#include "src/core/process_trace.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace espgrid {

namespace {

/// Seconds since boot at which this process was started (field 22 of /proc/self/stat, in clock
/// ticks), or a negative number where that cannot be read.
double process_start_seconds() {
  std::FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return -1;
  char text[1024] = {};
  const std::size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  text[n] = '\0';
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const char* p = std::strrchr(text, ')');
  if (!p) return -1;
  unsigned long long start_ticks = 0;
  int field = 2;
  for (const char* c = p + 1; *c; ++c) {
    if (*c != ' ') continue;
    if (++field == 22) {
      start_ticks = std::strtoull(c + 1, nullptr, 10);
      break;
    }
  }
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (field != 22 || ticks_per_second <= 0) return -1;
  return static_cast<double>(start_ticks) / static_cast<double>(ticks_per_second);
}

}  // namespace

void trace_process(const char* what) noexcept {
  static const bool enabled = std::getenv("ESPGRID_TRACE_PROCESS") != nullptr;
  if (!enabled) return;
  static const double start = process_start_seconds();
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const double seconds = static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
  if (start < 0)
    std::fprintf(stderr, "espgrid: process: %s (the start time is unreadable here)\n", what);
  else
    std::fprintf(stderr, "espgrid: process: %s at %.1f ms since exec\n", what, 1e3 * (seconds - start));
}

}  // namespace espgrid
