#include "src/structure/pqr_ranges.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <sys/stat.h>

#include "src/core/on_threads.h"

namespace espgrid {
namespace {

/// The least a range holds (about 1,800 atoms): a thread's start (~0.1 ms) is then a few percent
/// of its range's parsing. A file of less than two such ranges is read by read_pqr.
constexpr std::size_t kMinRangeBytes = std::size_t{128} << 10;

/// The byte after the first line end ('\n') at or after `from`, looking at most
/// LineSource::kMaxLineBytes ahead; the file's size at its end; 0 when none is found (a file of
/// bare CR line ends, an overlong line: read_pqr says what it makes of them).
std::size_t next_line_start(int fd, std::size_t from, std::size_t size) {
  char window[1 << 16];
  for (std::size_t at = from; at < size && at - from <= LineSource::kMaxLineBytes;) {
    const ssize_t got = ::pread(fd, window, std::min(sizeof window, size - at), static_cast<off_t>(at));
    if (got <= 0) return 0;
    if (const void* lf = std::memchr(window, '\n', static_cast<std::size_t>(got)))
      return at + static_cast<std::size_t>(static_cast<const char*>(lf) - window) + 1;
    at += static_cast<std::size_t>(got);
  }
  return from >= size ? size : 0;
}

/// Range boundaries at line starts, about `ranges` of them over `size` bytes; empty when a
/// boundary cannot be placed.
std::vector<std::size_t> range_starts(const std::string& path, std::size_t size, int ranges) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::vector<std::size_t> starts{0};
  for (int r = 1; r < ranges; ++r) {
    const std::size_t nominal = size / static_cast<std::size_t>(ranges) * static_cast<std::size_t>(r);
    const std::size_t start = next_line_start(fd, std::max(nominal, starts.back()), size);
    if (start == 0) {
      starts.clear();
      break;
    }
    if (start < size && start > starts.back()) starts.push_back(start);
  }
  ::close(fd);
  if (!starts.empty()) starts.push_back(size);
  return starts;
}

struct RangeAtoms {
  Atoms atoms;
  std::vector<AtomLabel> labels;
  bool plain = false;  ///< read to its end: atom records and records without atoms only
};

/// Appends every range's atoms in file order, each range's copy on a thread of its own.
Structure join_ranges(std::vector<RangeAtoms>& ranges) {
  std::vector<std::size_t> offset{0};
  for (const RangeAtoms& r : ranges) offset.push_back(offset.back() + r.atoms.size());
  const std::size_t count = offset.back();
  Structure s;
  Atoms& a = s.atoms;
  for (std::vector<double>* v : {&a.x, &a.y, &a.z, &a.charge, &a.radius}) v->resize(count);
  a.element.resize(count);
  s.labels.resize(count);
  on_threads(ranges.size(), [&](std::size_t i) {
    const Atoms& from = ranges[i].atoms;
    const auto at = static_cast<std::ptrdiff_t>(offset[i]);
    std::copy(from.x.begin(), from.x.end(), a.x.begin() + at);
    std::copy(from.y.begin(), from.y.end(), a.y.begin() + at);
    std::copy(from.z.begin(), from.z.end(), a.z.begin() + at);
    std::copy(from.charge.begin(), from.charge.end(), a.charge.begin() + at);
    std::copy(from.radius.begin(), from.radius.end(), a.radius.begin() + at);
    std::copy(from.element.begin(), from.element.end(), a.element.begin() + at);
    std::copy(ranges[i].labels.begin(), ranges[i].labels.end(), s.labels.begin() + at);
    ranges[i] = RangeAtoms{};
  });
  return s;
}

}  // namespace

std::optional<Structure> read_pqr_in_ranges(const std::string& path, int threads) {
  struct stat st {};
  if (threads < 2 || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const auto size = static_cast<std::size_t>(st.st_size);
  const auto ranges_wanted = static_cast<int>(std::min<std::size_t>(threads, size / kMinRangeBytes));
  if (ranges_wanted < 2) return std::nullopt;
  const std::vector<std::size_t> starts = range_starts(path, size, ranges_wanted);
  if (starts.size() < 3) return std::nullopt;  // one range: read_pqr's own team is as fast
  std::vector<RangeAtoms> ranges(starts.size() - 1);
  on_threads(ranges.size(), [&](std::size_t i) {
    try {
      LineSource lines(path, starts[i], starts[i + 1]);
      ranges[i].atoms.reserve(affordable_atoms((starts[i + 1] - starts[i]) / 64));
      ranges[i].labels.reserve(ranges[i].atoms.x.capacity());
      ranges[i].plain = read_plain_pqr_atoms(lines, ranges[i].atoms, ranges[i].labels);
    } catch (...) {  // a read error, memory: read_pqr meets it again and reports it
      ranges[i].plain = false;
    }
  });
  for (const RangeAtoms& r : ranges)
    if (!r.plain) return std::nullopt;
  Structure s = join_ranges(ranges);
  if (s.atoms.empty()) return std::nullopt;  // read_pqr says that there is no atom
  return s;
}

}  // namespace espgrid
