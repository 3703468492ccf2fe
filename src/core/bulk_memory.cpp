#include "src/core/bulk_memory.h"

#include <omp.h>
#if defined(__linux__)
#include <unistd.h>

#include <sys/mman.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace espgrid {
namespace {

constexpr std::size_t kParallelBytes = std::size_t{64} << 20;  // below this one thread is as fast
constexpr std::size_t kChunkBytes = std::size_t{4} << 20;      // dynamic chunks: a busy core takes fewer
constexpr int kMaxThreads = 8;                                 // memory bandwidth saturates before

int copy_threads(std::size_t bytes) {
  if (bytes < kParallelBytes) return 1;
  return std::max(1, std::min({kMaxThreads, omp_get_max_threads(), static_cast<int>(bytes / kChunkBytes)}));
}

/// Runs body(first, count) over [0, count) values of type T in chunks of kChunkBytes on `threads`
/// threads.
template <class T = float, class Body>
void in_chunks(std::size_t count, int threads, Body body) {
  const std::size_t chunk = kChunkBytes / sizeof(T);
  const auto chunks = static_cast<std::int64_t>((count + chunk - 1) / chunk);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t first = static_cast<std::size_t>(c) * chunk;
    body(first, std::min(chunk, count - first));
  }
}

template <class T>
void assign_values(std::vector<T>& values, std::size_t count, const T fill) {
  const std::size_t bytes = count * sizeof(T);
  const int threads = copy_threads(bytes);
  if (threads <= 1 || values.capacity() >= count) {
    values.assign(count, fill);
    return;
  }
  // Fresh storage (never touched: the allocator maps it) has its pages faulted in by all threads
  // (floats are implicit-lifetime: writing them into the allocation is defined); the assign below
  // then writes resident memory at memory speed. Not advised into huge pages: with the usual
  // THP setting (defrag=madvise) such faults may compact memory first, and one fill of 1.1 GiB
  // took 3 s instead of 0.3 s on a VM whose memory held written maps in its page cache.
  values.clear();
  values.shrink_to_fit();
  values.reserve(count);
  T* data = values.data();
  constexpr std::size_t kPageValues = 4096 / sizeof(T);
  in_chunks<T>(count, threads, [&](std::size_t first, std::size_t n) {
    for (std::size_t i = 0; i < n; i += kPageValues) data[first + i] = fill;
  });
  values.assign(count, fill);  // no reallocation: capacity is count
}

}  // namespace

void assign_poisoned(std::vector<float>& values, std::size_t count) {
  assign_values(values, count, std::numeric_limits<float>::quiet_NaN());
}

void assign_poisoned(std::vector<double>& values, std::size_t count) {
  assign_values(values, count, std::numeric_limits<double>::quiet_NaN());
}

void assign_zeros(std::vector<double>& values, std::size_t count) { assign_values(values, count, 0.0); }

namespace {

/// The whole pages within [first, end) handed back (they read as zeros again).
void release_zero_pages(double* first, double* end) {
#if defined(__linux__)
  const long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0 || first >= end) return;
  const auto page = static_cast<std::uintptr_t>(page_size);
  const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(first) + page - 1) / page * page;
  const std::uintptr_t hi = reinterpret_cast<std::uintptr_t>(end) / page * page;
  // A failure leaves the pages resident: more memory, the same values.
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
#else
  (void)first;
  (void)end;
#endif
}

}  // namespace

void assign_zeros_resident(std::vector<double>& values, std::size_t count, std::size_t keep_first,
                           std::size_t keep_end) {
  assign_zeros(values, count);
  release_outside(values, keep_first, keep_end);
}

void release_outside(std::vector<double>& values, std::size_t keep_first, std::size_t keep_end) {
  const std::size_t count = values.size();
  keep_end = std::min(keep_end, count);
  keep_first = std::min(keep_first, keep_end);
  release_zero_pages(values.data(), values.data() + keep_first);
  release_zero_pages(values.data() + keep_end, values.data() + count);
}

void copy_floats(float* to, const float* from, std::size_t count) {
  const int threads = copy_threads(count * sizeof(float));
  if (threads <= 1) {
    std::memcpy(to, from, count * sizeof(float));
    return;
  }
  in_chunks(count, threads,
            [&](std::size_t first, std::size_t n) { std::memcpy(to + first, from + first, n * sizeof(float)); });
}

std::pair<float, float> float_range(const float* values, std::size_t count) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const std::size_t chunk = kChunkBytes / sizeof(float);
  const std::size_t chunks = (count + chunk - 1) / chunk;
  std::vector<std::pair<float, float>> parts(chunks, {kNaN, kNaN});
  in_chunks(count, copy_threads(count * sizeof(float)), [&](std::size_t first, std::size_t n) {
    // Branch-free min/max (vectorizes); a comparison with NaN is false, so NaN never enters, and
    // +inf/−inf start values make the first finite value win.
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (std::size_t i = first; i < first + n; ++i) {
      const float v = values[i];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    parts[first / chunk] = {lo, hi};
  });
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (const auto& [part_lo, part_hi] : parts) {
    lo = part_lo < lo ? part_lo : lo;
    hi = part_hi > hi ? part_hi : hi;
  }
  if (lo > hi) return {kNaN, kNaN};  // no value that is not NaN
  return {lo, hi};
}

}  // namespace espgrid
