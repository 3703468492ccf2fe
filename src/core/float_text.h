// A float as the nine significant digits "%.8e" prints, fast: the DX writer formats every
// grid point this way (152 M points for a 0.5 Å map of a large complex), and std::to_chars
// with a precision spends most of its time on the general case, which a float never needs.
#pragma once

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace espgrid {

/// Longest text write_scientific_9 writes: "-1.23456789e-45".
inline constexpr std::size_t kScientific9MaxChars = 15;

namespace float_text_detail {

// 10^p for p = kPow10First .. 55, each a literal the compiler rounds correctly (relative error
// at most 2^-53). 8 − (decimal exponent of any nonzero float, −46 .. 38) lies in this range.
inline constexpr int kPow10First = -31;
inline constexpr double kPow10[] = {
    1e-31, 1e-30, 1e-29, 1e-28, 1e-27, 1e-26, 1e-25, 1e-24, 1e-23, 1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17,
    1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9,  1e-8,  1e-7,  1e-6,  1e-5,  1e-4,  1e-3,  1e-2,
    1e-1,  1e0,   1e1,   1e2,   1e3,   1e4,   1e5,   1e6,   1e7,   1e8,   1e9,   1e10,  1e11,  1e12,  1e13,
    1e14,  1e15,  1e16,  1e17,  1e18,  1e19,  1e20,  1e21,  1e22,  1e23,  1e24,  1e25,  1e26,  1e27,  1e28,
    1e29,  1e30,  1e31,  1e32,  1e33,  1e34,  1e35,  1e36,  1e37,  1e38,  1e39,  1e40,  1e41,  1e42,  1e43,
    1e44,  1e45,  1e46,  1e47,  1e48,  1e49,  1e50,  1e51,  1e52,  1e53,  1e54,  1e55};

inline constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

inline char* general_case(float value, char* out) {
  return std::to_chars(out, out + kScientific9MaxChars + 1, static_cast<double>(value), std::chars_format::scientific,
                       8)
      .ptr;
}

inline void two_digits(char* out, unsigned value) { std::memcpy(out, kDigitPairs + 2 * value, 2); }

}  // namespace float_text_detail

/// Writes exactly the text std::to_chars(out, end, double(value), std::chars_format::scientific, 8)
/// writes ("-1.23456789e-05": nine significant digits, correctly rounded from the float's exact
/// value, enough to read back every float exactly) and returns the end. `out` needs
/// kScientific9MaxChars bytes.
///
/// Why it is exact: the value is scaled to x = |v|·10^(8−e) in [10^8, 10^9) with one double
/// multiplication by a correctly rounded power of ten, so x carries a relative error of at most
/// 2^-52, an absolute error below 2^-22 (x < 2^30). Rounding x to an integer can only go the
/// wrong way when its fraction is within that error of one half; every value whose fraction is
/// within 2^-20 of one half (ties included), and every NaN, infinity and zero, is handed to
/// std::to_chars instead. tests/test_writers.cpp compares both on millions of floats;
/// benchmarks/NOTES.md records the check over every finite float.
inline char* write_scientific_9(float value, char* out) {
  using namespace float_text_detail;
  const double v = std::fabs(static_cast<double>(value));
  if (!(v > 0) || !(v <= 3.5e38)) return general_case(value, out);  // zero, NaN, infinity
  // floor(e2·log10 2) from the binary exponent: the decimal exponent, or one less.
  const int e2 = static_cast<int>((std::bit_cast<std::uint64_t>(v) >> 52) & 0x7ff) - 1023;
  int e10 = (e2 * 78913) >> 18;
  e10 += v * kPow10[8 - e10 - kPow10First] >= 1e9;  // no branch: the sign of random data mispredicts
  const double x = v * kPow10[8 - e10 - kPow10First];
  // Just below 10^8 only when |v| is within rounding of a power of ten; it rounds to 10^8 then.
  if (x < 1e8 - 0.25) return general_case(value, out);
  const auto whole = static_cast<std::uint32_t>(x);        // truncation = floor: x > 0
  const double fraction = x - static_cast<double>(whole);  // exact: x < 2^30
  if (std::fabs(fraction - 0.5) <= 0x1p-20) return general_case(value, out);
  std::uint32_t digits = whole + (fraction > 0.5 ? 1u : 0u);
  if (digits >= 1000000000u) {  // 999999999.5 and up round to 1.00000000e(e+1)
    digits = 100000000u;
    ++e10;
  }
  *out = '-';
  out += std::signbit(value);
  const std::uint32_t rest = digits % 100000000u;
  out[0] = static_cast<char>('0' + digits / 100000000u);
  out[1] = '.';
  two_digits(out + 2, rest / 1000000u);
  two_digits(out + 4, rest / 10000u % 100u);
  two_digits(out + 6, rest / 100u % 100u);
  two_digits(out + 8, rest % 100u);
  out[10] = 'e';
  out[11] = e10 < 0 ? '-' : '+';
  two_digits(out + 12, static_cast<unsigned>(e10 < 0 ? -e10 : e10));
  return out + 14;
}

}  // namespace espgrid
