// Wall-clock timing of host work (reading, preparing, writing; CPU kernels). GPU kernel time is
// measured with CUDA events in kernels/, never with this clock.
#pragma once

#include <chrono>

namespace espgrid {

using Clock = std::chrono::steady_clock;

/// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Started on construction; seconds() reads it.
class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  double seconds() const { return seconds_since(start_); }
  void restart() { start_ = Clock::now(); }

 private:
  Clock::time_point start_;
};

}  // namespace espgrid
