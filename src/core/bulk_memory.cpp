#include "src/core/bulk_memory.h"

#include <omp.h>
#include <sys/mman.h>

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

/// Runs body(first, count) over [0, count) in chunks of kChunkBytes floats on `threads` threads.
template <class Body>
void in_chunks(std::size_t count, int threads, Body body) {
  const std::size_t chunk = kChunkBytes / sizeof(float);
  const auto chunks = static_cast<std::int64_t>((count + chunk - 1) / chunk);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t first = static_cast<std::size_t>(c) * chunk;
    body(first, std::min(chunk, count - first));
  }
}

}  // namespace

void assign_poisoned(std::vector<float>& values, std::size_t count) {
  constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();
  const std::size_t bytes = count * sizeof(float);
  const int threads = copy_threads(bytes);
  if (threads <= 1 || values.capacity() >= count) {
    values.assign(count, kPoison);
    return;
  }
  // Fresh storage (never touched: the allocator maps it), advised into huge pages, its pages
  // faulted in by all threads (floats are implicit-lifetime: writing them into the allocation is
  // defined); the assign below then writes resident memory at memory speed, no faults left.
  values.clear();
  values.shrink_to_fit();
  values.reserve(count);
  float* data = values.data();
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const std::uintptr_t first_huge = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t end_huge = (begin + bytes) & ~(kHuge - 1);
  if (end_huge > first_huge)  // advice only: without THP it fails harmlessly
    ::madvise(reinterpret_cast<void*>(first_huge), end_huge - first_huge, MADV_HUGEPAGE);
  constexpr std::size_t kPageFloats = 4096 / sizeof(float);
  in_chunks(count, threads, [&](std::size_t first, std::size_t n) {
    for (std::size_t i = 0; i < n; i += kPageFloats) data[first + i] = kPoison;
  });
  values.assign(count, kPoison);  // no reallocation: capacity is count
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

}  // namespace espgrid
