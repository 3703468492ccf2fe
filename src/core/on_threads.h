// Running a few independent pieces of work at once, each on a thread of its own: for host work
// outside OpenMP's loops (a file's byte ranges, a large copy's shares).
#pragma once

#include <cstddef>
#include <thread>
#include <vector>

namespace espgrid {

/// Runs work(0) ... work(count - 1), each on a thread of its own where one can be had (else on
/// this one: a failed start must not leave started threads unjoined), and waits for them all.
template <class Work>
void on_threads(std::size_t count, Work work) {
  std::vector<std::thread> threads;
  threads.reserve(count);
  std::size_t started = 0;
  try {
    for (; started < count; ++started) threads.emplace_back(work, started);
  } catch (...) {  // no thread to be had: the rest run here
  }
  for (std::size_t i = started; i < count; ++i) work(i);
  for (std::thread& t : threads) t.join();
}

}  // namespace espgrid
