// A progress bar on stderr for long runs, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "src/core/stopwatch.h"

namespace espgrid::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  ///< clears the bar
  /// Clears the bar now (before printing a summary); later updates draw it again.
  void finish();
  /// Records progress; draws at most ten times a second and only after half a second.
  void update(std::size_t done, std::size_t total);

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_, last_draw_;
};

}  // namespace espgrid::cli
