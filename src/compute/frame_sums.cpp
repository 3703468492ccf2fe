#include "src/compute/frame_sums.h"

#include <cmath>
#include <string>

#include "src/compute/frame_sums_math.h"
#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"

namespace espgrid {
namespace {

using frame_sums::add_carry;
using frame_sums::multiply;

/// Fewer frames than this keep Σp < 2^111 and Σp² < 2^190 (frame_sums_math.h).
constexpr std::uint64_t kMaxFrames = std::uint64_t{1} << 32;

/// The two's complement 128-bit hi:lo as a long double (one rounding to 64 bits of mantissa).
long double signed_value(std::uint64_t lo, std::uint64_t hi) {
  const bool negative = (hi >> 63) != 0;
  if (negative) {
    lo = ~lo + 1;
    hi = ~hi + (lo == 0 ? 1 : 0);
  }
  const long double v = std::ldexp(static_cast<long double>(hi), 64) + static_cast<long double>(lo);
  return negative ? -v : v;
}

/// n·Σp² − (Σp)² of one point, exactly (256 bits), as a long double; never negative
/// (Cauchy–Schwarz on the integers p).
long double spread(std::uint64_t n, const std::uint64_t s[3], std::uint64_t lo, std::uint64_t hi) {
  // A = n·Σp²
  std::uint64_t h0, l0, h1, l1, h2, l2;
  multiply(n, s[0], h0, l0);
  multiply(n, s[1], h1, l1);
  multiply(n, s[2], h2, l2);
  std::uint64_t a[4] = {l0, h0, h1, h2};
  std::uint64_t c = add_carry(a[1], l1, 0);
  c = add_carry(a[2], l2, c);
  a[3] += c;
  // B = |Σp|²
  if ((hi >> 63) != 0) {
    lo = ~lo + 1;
    hi = ~hi + (lo == 0 ? 1 : 0);
  }
  std::uint64_t x1, x0, y1, y0, z1, z0;
  multiply(lo, lo, x1, x0);
  multiply(lo, hi, y1, y0);  // hi < 2^47: 2·lo·hi < 2^112
  multiply(hi, hi, z1, z0);
  const std::uint64_t d1 = (y1 << 1) | (y0 >> 63), d0 = y0 << 1;
  std::uint64_t b[4] = {x0, x1, d1, z1};
  c = add_carry(b[1], d0, 0);
  c = add_carry(b[2], z0, c);
  b[3] += c;
  // A − B
  std::uint64_t borrow = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t before = a[i];
    a[i] = before - b[i] - borrow;
    borrow = (before < b[i] || (before == b[i] && borrow)) ? 1 : 0;
  }
  if (borrow) return 0;  // impossible for sums of integers and their squares; 0 rather than garbage
  long double v = 0;
  for (int i = 3; i >= 0; --i) v = std::ldexp(v, 64) + static_cast<long double>(a[i]);
  return v;
}

}  // namespace

FrameSums::FrameSums(std::size_t points, bool squares)
    : points_(points),
      squares_(squares),
      limbs_(points * (frame_sums::kSumLimbs + (squares ? frame_sums::kSquareLimbs : 0)), 0) {}

void FrameSums::add(const float* values, int threads) {
  if (frames_ + 1 >= kMaxFrames) throw Error("too many frames for one average (at most 2^32 - 1)");
  const auto n = static_cast<std::int64_t>(points_);
  const int t = threads_to_use(threads);
  std::uint64_t* sums = limbs_.data();
  const bool squares = squares_;
  std::int64_t bad = n;  // a value that cannot be added is skipped and named
#pragma omp parallel for num_threads(t) schedule(static) reduction(min : bad)
  for (std::int64_t p = 0; p < n; ++p)
    if (!frame_sums::add_value(values[p], sums, n, p, squares) && p < bad) bad = p;
  if (bad < n) {
    // Integer sums: adding the negated values takes the frame out exactly, so it adds nothing.
#pragma omp parallel for num_threads(t) schedule(static)
    for (std::int64_t p = 0; p < n; ++p) frame_sums::remove_value(values[p], sums, n, p, squares);
    throw Error("frame " + std::to_string(frames_) + "'s map holds " + number_text(values[bad]) + " at point " +
                std::to_string(bad) + ": a trajectory average takes finite values below 2^31 in magnitude");
  }
  ++frames_;
}

void FrameSums::merge(const FrameSums& other, int threads) {
  if (other.points_ != points_ || other.squares_ != squares_)
    throw Error("internal error: merging frame sums of different grids");
  merge(other.limbs_.data(), other.limbs_.size(), other.frames_, threads);
}

void FrameSums::merge(const std::uint64_t* limbs, std::size_t count, std::uint64_t frames, int threads) {
  if (count != limbs_.size()) throw Error("internal error: merging frame sums of a different size");
  if (frames_ + frames >= kMaxFrames) throw Error("too many frames for one average (at most 2^32 - 1)");
  const auto n = static_cast<std::int64_t>(points_);
  std::uint64_t* s = limbs_.data();
  const bool squares = squares_;
#pragma omp parallel for num_threads(threads_to_use(threads)) schedule(static)
  for (std::int64_t p = 0; p < n; ++p) {
    s[n + p] += limbs[n + p] + add_carry(s[p], limbs[p], 0);
    if (squares) {
      std::uint64_t c = add_carry(s[2 * n + p], limbs[2 * n + p], 0);
      c = add_carry(s[3 * n + p], limbs[3 * n + p], c);
      add_carry(s[4 * n + p], limbs[4 * n + p], c);
    }
  }
  frames_ += frames;
}

void FrameSums::count_frames(std::uint64_t count) {
  if (frames_ + count >= kMaxFrames) throw Error("too many frames for one average (at most 2^32 - 1)");
  frames_ += count;
}

std::vector<float> FrameSums::mean(int threads) const {
  if (frames_ == 0) throw Error("no frames were added, so there is no mean");
  std::vector<float> out(points_);
  const auto n = static_cast<std::int64_t>(points_);
  const long double scale = std::ldexp(1.0L, -frame_sums::kFractionBits) / static_cast<long double>(frames_);
#pragma omp parallel for num_threads(threads_to_use(threads)) schedule(static)
  for (std::int64_t p = 0; p < n; ++p)
    out[static_cast<std::size_t>(p)] =
        static_cast<float>(static_cast<double>(signed_value(limbs_[p], limbs_[n + p]) * scale));
  return out;
}

std::vector<float> FrameSums::deviation(int threads) const {
  if (!squares_) throw Error("internal error: the standard deviation was not asked for");
  if (frames_ == 0) throw Error("no frames were added, so there is no standard deviation");
  std::vector<float> out(points_);
  const auto n = static_cast<std::int64_t>(points_);
  const long double scale = std::ldexp(1.0L, -frame_sums::kFractionBits) / static_cast<long double>(frames_);
#pragma omp parallel for num_threads(threads_to_use(threads)) schedule(static)
  for (std::int64_t p = 0; p < n; ++p) {
    const std::uint64_t squares[3] = {limbs_[2 * n + p], limbs_[3 * n + p], limbs_[4 * n + p]};
    const long double d = spread(frames_, squares, limbs_[p], limbs_[n + p]);
    out[static_cast<std::size_t>(p)] = static_cast<float>(static_cast<double>(std::sqrt(d) * scale));
  }
  return out;
}

}  // namespace espgrid
