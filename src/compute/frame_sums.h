// The mean and standard deviation of many maps on one grid (trajectory frames), from exact
// integer sums per point (src/compute/frame_sums_math.h): Σp and Σp² of p = round(φ · 2^48).
// Integer addition is associative, so frames added in any order, on any number of MPI ranks,
// devices or threads, and merged in any order give the same sums, and so the same mean and
// deviation, bit for bit. The cost: 16 bytes a point (40 with the deviation) and a few integer
// operations a value; the values are exact to 2^-49 of the map's unit (below float32's own
// rounding for |φ| ≥ 2^-24) and must stay below 2^31 in magnitude.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace espgrid {

class FrameSums {
 public:
  /// Zero sums over `points` points; `squares`: also Σp², for the deviation.
  FrameSums(std::size_t points, bool squares);

  std::size_t points() const noexcept { return points_; }
  bool squares() const noexcept { return squares_; }
  /// Frames added (merges included).
  std::uint64_t frames() const noexcept { return frames_; }

  /// Adds one frame of `points()` values (the map's unit), OpenMP over `threads` (0: all).
  /// Throws Error naming the first point whose value is not finite or not below 2^31 in
  /// magnitude (nothing is added then), and at 2^32 frames.
  void add(const float* values, int threads = 0);
  /// Adds another accumulator's sums (same points and squares), e.g. another rank's; OpenMP over
  /// `threads` (0: all).
  void merge(const FrameSums& other, int threads = 0);
  /// The same from raw limbs (limbs() of another accumulator) and its frame count.
  void merge(const std::uint64_t* limbs, std::size_t count, std::uint64_t frames, int threads = 0);
  /// Records `count` frames whose values were added to limbs() elsewhere (on a device).
  void count_frames(std::uint64_t count);

  /// The limbs, limb-major: limb L of point p at [L · points() + p]; 2 limbs (Σp) or 5 (and Σp²).
  const std::vector<std::uint64_t>& limbs() const noexcept { return limbs_; }
  std::vector<std::uint64_t>& limbs() noexcept { return limbs_; }

  /// Σφ / frames, rounded to float32 once per point (from the exact sum). Error without frames.
  std::vector<float> mean(int threads = 0) const;
  /// √(Σ(φ − mean)² / frames) (population form), from the exact n·Σp² − (Σp)²; Error without
  /// frames or without squares.
  std::vector<float> deviation(int threads = 0) const;

 private:
  std::size_t points_;
  bool squares_;
  std::uint64_t frames_ = 0;
  std::vector<std::uint64_t> limbs_;
};

}  // namespace espgrid
