// write_scientific_9 against std::to_chars(double, scientific, 8), the text the DX writer wrote
// before it was made fast: every difference is a defect (the DX files must stay byte for byte
// the same). The full check over every finite float takes minutes; ESPGRID_EXHAUSTIVE=1 runs it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <string>

#include "src/core/float_text.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"
#include "src/physics/physics_options.h"
#include "src/view/display_structure.h"
#include "tests/test_support.h"

namespace espgrid {
namespace {

std::string reference_text(float value) {
  char buffer[64];
  const auto end =
      std::to_chars(buffer, buffer + sizeof buffer, static_cast<double>(value), std::chars_format::scientific, 8);
  return std::string(buffer, end.ptr);
}

std::string fast_text(float value) {
  char buffer[kScientific9MaxChars + 1];
  char* end = write_scientific_9(value, buffer);
  EXPECT_LE(static_cast<std::size_t>(end - buffer), kScientific9MaxChars);
  return std::string(buffer, end);
}

/// Compares the two on every float bit pattern b = first, first + stride, ... (NaNs and
/// infinities included: they go through to_chars too). Returns the number of differences,
/// reporting the first few.
std::size_t count_differences(std::uint64_t first, std::uint64_t stride) {
  std::size_t differences = 0;
  for (std::uint64_t b = first; b <= 0xffffffffu; b += stride) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    const std::string want = reference_text(f), got = fast_text(f);
    if (want != got && ++differences <= 5)
      ADD_FAILURE() << "bits 0x" << std::hex << b << std::dec << ": to_chars " << want << ", fast " << got;
  }
  return differences;
}

TEST(FloatText, SpecialValues) {
  const float special[] = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.0f,
                           std::numeric_limits<float>::denorm_min(),
                           -std::numeric_limits<float>::denorm_min(),
                           std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::max(),
                           -std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           1e8f,
                           1e9f,
                           9.99999999e8f,
                           0.1f,
                           1.2345678e-30f,
                           -9.8765432e+20f,
                           5.8599731e+01f};
  for (const float f : special) EXPECT_EQ(fast_text(f), reference_text(f)) << f;
  EXPECT_EQ(fast_text(-1.5f), "-1.50000000e+00");
  EXPECT_EQ(fast_text(0.0f), "0.00000000e+00");
}

// Around every power of ten a float can hold, where the decimal exponent changes and the
// scaled value sits at the edges of [10^8, 10^9): 64 floats on each side.
TEST(FloatText, AroundPowersOfTen) {
  for (int e = -45; e <= 38; ++e) {
    const auto p = static_cast<float>(std::pow(10.0, e));
    float up = p, down = p;
    for (int step = 0; step < 64; ++step) {
      EXPECT_EQ(fast_text(up), reference_text(up));
      EXPECT_EQ(fast_text(down), reference_text(down));
      up = std::nextafter(up, std::numeric_limits<float>::infinity());
      down = std::nextafter(down, 0.0f);
    }
  }
}

// Floats whose tenth significant digit is exactly 5 (ties: round half to even) or within
// 2^-20 of it: the cases the fast path hands to std::to_chars. Built as d·10^-n + 5·10^-(n+1)
// for small integers, which floats hold exactly only at a few magnitudes; searched for, so
// the test also proves such values exist and go through the careful path.
TEST(FloatText, NearHalfwayCases) {
  std::size_t near_half = 0, careful_path = 0;
  for (std::uint32_t m = 1; m < (1u << 24); m += 7) {
    for (const int shift : {-24, -12, -3, 0, 3, 7}) {
      const float f = std::ldexp(static_cast<float>(m), shift);
      const int e10 = static_cast<int>(std::floor(std::log10(static_cast<double>(f))));
      const double x = static_cast<double>(f) * std::pow(10.0, 8 - e10);
      const double from_half = std::fabs(x - std::floor(x) - 0.5);
      if (from_half < 1e-4) {
        ++near_half;
        careful_path += from_half <= 0x1p-20 ? 1 : 0;
        EXPECT_EQ(fast_text(f), reference_text(f)) << f;
      }
    }
  }
  EXPECT_GT(near_half, 100u) << "the search found too few values near a rounding midpoint to test anything";
  EXPECT_GT(careful_path, 0u) << "no value within 2^-20 of a midpoint: the careful path went untested";
}

// One float bit pattern in 251 (a prime stride, so every exponent and sign and many mantissa
// patterns come up): 17 million values, about two seconds.
TEST(FloatText, StrideThroughEveryExponent) {
  EXPECT_EQ(count_differences(testing::test_seed() % 251, 251), 0u) << "seed " << testing::test_seed();
}

TEST(FloatText, RandomPotentials) {
  std::mt19937 rng(testing::test_seed());
  std::uniform_real_distribution<float> small(-50.0f, 50.0f);
  std::normal_distribution<double> log_magnitude(0.0, 6.0);
  std::size_t differences = 0;
  for (int n = 0; n < 2'000'000; ++n) {
    const float f = n % 2 ? small(rng) : static_cast<float>(std::exp(log_magnitude(rng)) * (n % 4 ? 1 : -1));
    if (fast_text(f) != reference_text(f) && ++differences <= 5)
      ADD_FAILURE() << f << ": " << fast_text(f) << " vs " << reference_text(f);
  }
  EXPECT_EQ(differences, 0u) << "seed " << testing::test_seed();
}

// Every one of the 2^32 bit patterns: minutes, so only on request (benchmarks/NOTES.md records
// a run). ESPGRID_EXHAUSTIVE=1 ./tests/test_float_text --gtest_filter=*EveryFloat*
TEST(FloatText, EveryFloat) {
  const char* on = std::getenv("ESPGRID_EXHAUSTIVE");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "set ESPGRID_EXHAUSTIVE=1 to compare all 2^32 floats (minutes)";
  EXPECT_EQ(count_differences(0, 1), 0u);
}

// ---- LC_NUMERIC ------------------------------------------------------------------------

/// printf's text of `value` in the current C locale.
template <class... Args>
std::string printf_text(const char* format, Args... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

/// human_bytes and seconds_text as they were written with printf, before they ignored LC_NUMERIC.
std::string printf_human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return printf_text(u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
}
std::string printf_seconds_text(double s) {
  if (s < 1e-3) return printf_text("%.1f µs", s * 1e6);
  if (s < 1) return printf_text("%.2f ms", s * 1e3);
  return printf_text("%.3f s", s);
}

// The message and header texts were printf's ("%g", "%.1f", "%+.4f", ...); they are std::to_chars
// now, which must write exactly what printf writes in the "C" locale.
TEST(Locale, TheFormattingIsPrintfsInTheCLocale) {
  ASSERT_STREQ(std::setlocale(LC_NUMERIC, nullptr), "C");
  std::mt19937_64 rng(21);
  std::vector<double> values = {0.0,
                                -0.0,
                                0.2,
                                -4.053,
                                1e-300,
                                1e300,
                                5e-5,
                                -5e-5,
                                4.99e-5,
                                0.5,
                                1.5,
                                999.95,
                                1023.95,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
  std::uniform_real_distribution<double> exponent(-30, 30), sign(-1, 1);
  for (int i = 0; i < 20000; ++i) values.push_back((sign(rng) < 0 ? -1 : 1) * std::pow(10.0, exponent(rng)));
  for (const double v : values) {
    SCOPED_TRACE(printf_text("%.17g", v));
    EXPECT_EQ(number_text(v), printf_text("%g", v));
    EXPECT_EQ(short_scientific(v), printf_text("%.3g", v));
    EXPECT_EQ(short_fixed(v, 2), printf_text("%.*f", 2, v));
    EXPECT_EQ(signed_charge_text(v), printf_text("%+.4f", std::fabs(v) < 5e-5 ? 0.0 : v));
    if (v >= 0 && std::isfinite(v)) {
      EXPECT_EQ(human_bytes(v), printf_human_bytes(v));
      EXPECT_EQ(seconds_text(v), printf_seconds_text(v));
    }
  }
}

/// Makes de_DE.UTF-8 (decimal comma) with localedef in a private folder and points glibc at it
/// (LOCPATH); returns why it cannot, or "".
std::string make_german_locale(const std::filesystem::path& folder) {
  if (std::system("command -v localedef >/dev/null 2>&1") != 0) return "localedef (libc-bin) is not installed";
  std::filesystem::create_directories(folder);
  const std::string command = "localedef -i de_DE -f UTF-8 '" + (folder / "de_DE.UTF-8").string() + "' >/dev/null 2>&1";
  [[maybe_unused]] const int status = std::system(command.c_str());  // warnings give a non-zero status
  if (!std::filesystem::is_directory(folder / "de_DE.UTF-8"))
    return "de_DE.UTF-8 cannot be made here (its source: Debian's `locales` package)";
  ::setenv("LOCPATH", folder.c_str(), 1);
  return "";
}

// After setlocale(LC_ALL, "de_DE.UTF-8") in the same process (a Python session that set its
// locale), a map header read "total charge +0,2000 e" and "T = 298,15 K", and a Debye header
// "ionic strength 0,15 M" could not be read back (strtod). Nothing espgrid writes or reads may
// follow LC_NUMERIC.
TEST(Locale, NumbersInMessagesAndHeadersIgnoreLcNumeric) {
  const auto folder = std::filesystem::temp_directory_path() / ("espgrid_locale_" + std::to_string(::getpid()));
  const std::string why = make_german_locale(folder);
  if (!why.empty()) GTEST_SKIP() << why;
  struct Restore {
    std::string before = std::setlocale(LC_ALL, nullptr);
    std::filesystem::path folder;
    ~Restore() {
      std::setlocale(LC_ALL, before.c_str());
      std::error_code ignored;
      std::filesystem::remove_all(folder, ignored);
    }
  } restore{std::setlocale(LC_ALL, nullptr), folder};
  PhysicsOptions debye;
  debye.model = parse_model("debye");
  debye.ionic_strength = 0.15;
  debye.temperature = 298.15;
  const std::string header = model_header(debye);
  ASSERT_NE(std::setlocale(LC_ALL, "de_DE.UTF-8"), nullptr) << "made but not usable";
  ASSERT_EQ(printf_text("%+.4f", 0.2), "+0,2000") << "the locale is not in force: the test would prove nothing";
  EXPECT_EQ(signed_charge_text(0.2), "+0.2000");
  EXPECT_EQ(signed_charge_text(-4.053), "-4.0530");
  EXPECT_EQ(number_text(298.15), "298.15");
  EXPECT_EQ(number_text(1e300), "1e+300");
  EXPECT_EQ(shortest_text(0.15), "0.15");
  EXPECT_EQ(short_fixed(7.861, 2), "7.86");
  EXPECT_EQ(short_scientific(12345.0), "1.23e+04");
  EXPECT_EQ(human_bytes(1536.0), "1.5 KiB");
  EXPECT_EQ(seconds_text(0.0123), "12.30 ms");
  EXPECT_EQ(seconds_text(1.5e-5), "15.0 µs");
  EXPECT_EQ(model_header(debye), header);  // written the same
  // The PDB text `espgrid view` and Python's Map.view give 3Dmol.js (the view page).
  Atoms atoms;
  atoms.push_back(-12.3456, 0.5, 1234.5, 0.1, 1.5, ElementSymbol::from("C"));
  const std::string pdb = display_pdb(atoms, nullptr);
  EXPECT_NE(pdb.find(" -12.346   0.5001234.500"), std::string::npos) << pdb;
  PhysicsOptions back;
  back.temperature = 298.15;
  ASSERT_TRUE(parse_model_header(header, back)) << header;  // and read back (it was strtod)
  EXPECT_EQ(back.ionic_strength, 0.15);
  EXPECT_EQ(parse_number("0.15"), 0.15);
}

}  // namespace
}  // namespace espgrid
