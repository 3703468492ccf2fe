// Which pages of a range are in memory (mincore, Linux): for tests of arrays that keep only a
// rank's share resident (src/core/bulk_memory.h assign_zeros_resident). A read of a page not yet
// written maps the kernel's zero page, which mincore counts: ask before reading.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <unistd.h>

#include <sys/mman.h>
#include <sys/prctl.h>
#include <vector>

namespace espgrid::testing {

/// The whole pages within [first, end): how many, and how many of them are resident.
struct PageCount {
  std::size_t total = 0;
  std::size_t resident = 0;
};

inline PageCount resident_pages(const void* first, const void* end) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(first) + page - 1) / page * page;
  const std::uintptr_t hi = reinterpret_cast<std::uintptr_t>(end) / page * page;
  PageCount count;
  if (hi <= lo) return count;
  count.total = (hi - lo) / page;
  std::vector<unsigned char> flags(count.total);
  if (mincore(reinterpret_cast<void*>(lo), hi - lo, flags.data()) != 0) return {count.total, count.total};
  for (const unsigned char f : flags) count.resident += f & 1u;
  return count;
}

/// Transparent huge pages off for this process while it lives (and back as they were after): a huge
/// page that straddles a kept range's end would keep, or khugepaged make, 2 MiB resident beside it.
class NoHugePages {
 public:
  NoHugePages() : was_(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0)) { prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }
  ~NoHugePages() {
    if (was_ == 0) prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
  }
  NoHugePages(const NoHugePages&) = delete;
  NoHugePages& operator=(const NoHugePages&) = delete;

 private:
  int was_;
};

}  // namespace espgrid::testing
#endif
