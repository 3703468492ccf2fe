#include "src/os/huge_pages.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#include "src/core/process_trace.h"
#include "src/core/switches.h"

namespace espgrid {
namespace {

/// Marks the restarted process, which removes GLIBC_TUNABLES and this mark again.
constexpr const char* kRestartMark = "ESPGRID_RESTARTED_FOR_HUGE_PAGES";

bool glibc_has_hugetlb_tunable() {
#if defined(__GLIBC__)
  int major = 0, minor = 0;
  if (std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) != 2) return false;
  return major > 2 || (major == 2 && minor >= 35);
#else
  return false;
#endif
}

std::string bracketed_thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(in, text);
  const std::size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return text.substr(open + 1, close - open - 1);
}

bool solves_pb(int argc, const char* const* argv) {
  if (argc < 2) return false;
  const std::string_view verb = argv[1];
  if (verb == "apbs") return true;
  if (verb != "map") return false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--model=pb" || (a == "--model" && i + 1 < argc && std::string_view(argv[i + 1]) == "pb")) return true;
  }
  return false;
}

}  // namespace

HugePageHost this_host_for_huge_pages() {
  HugePageHost host;
  host.glibc_has_tunable = glibc_has_hugetlb_tunable();
  host.thp_mode = bracketed_thp_mode();
  host.tunables_set = std::getenv("GLIBC_TUNABLES") != nullptr;
  host.switched_off = switched_off("ESPGRID_HUGE_PAGES");
  return host;
}

bool restart_for_huge_pages(const HugePageHost& host, int argc, const char* const* argv) {
  return host.glibc_has_tunable && host.thp_mode == "madvise" && !host.tunables_set && !host.switched_off &&
         solves_pb(argc, argv);
}

void restart_with_huge_pages_if_useful(int argc, char** argv) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  (void)argc, (void)argv;  // the sanitizer's allocator ignores glibc's tunables
#else
  if (std::getenv(kRestartMark)) {  // the restarted process: children get the user's environment
    unsetenv("GLIBC_TUNABLES");
    unsetenv(kRestartMark);
    trace_process("restarted with glibc.malloc.hugetlb=1 (src/os/huge_pages.h)");
    return;
  }
  try {
    if (!restart_for_huge_pages(this_host_for_huge_pages(), argc, argv)) return;
  } catch (...) {
    return;  // reading the host's settings failed: run as started
  }
  if (setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1) != 0 || setenv(kRestartMark, "1", 1) != 0) return;
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  unsetenv("GLIBC_TUNABLES");  // exec failed (no /proc?): go on with 4 KiB pages
  unsetenv(kRestartMark);
#endif
}

}  // namespace espgrid
