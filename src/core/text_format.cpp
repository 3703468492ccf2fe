#include "src/core/text_format.h"

#include <charconv>
#include <cmath>
#include <ctime>
#include <string_view>

namespace espgrid {
namespace {

/// `value` as printf's "%.<precision>g" (general) or "%.<precision>f" (fixed) writes it in the
/// "C" locale: std::to_chars never looks at the locale, so a process that switched LC_NUMERIC
/// (Python: locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")) still gets "0.2000", never
/// "0,2000", in messages and in every file header.
std::string formatted(double value, std::chars_format format, int precision) {
  char buffer[512];  // a fixed 1e308 with a few decimals fits
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value, format, precision);
  if (error != std::errc()) return "?";
  return std::string(buffer, end);
}

}  // namespace

std::string number_text(double value) { return formatted(value, std::chars_format::general, 6); }

std::string shortest_text(double value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}

std::string with_commas(std::uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  const int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[static_cast<std::size_t>(i)];
  }
  return out;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return formatted(bytes, std::chars_format::fixed, u == 0 ? 0 : 1) + " " + units[u];
}

std::string seconds_text(double s) {
  if (s < 1e-3) return formatted(s * 1e6, std::chars_format::fixed, 1) + " µs";
  if (s < 1) return formatted(s * 1e3, std::chars_format::fixed, 2) + " ms";
  return formatted(s, std::chars_format::fixed, 3) + " s";
}

std::string short_fixed(double value, int decimals) {
  return formatted(value, std::chars_format::fixed, decimals < 0 ? 6 : decimals);
}

std::string short_scientific(double value) { return formatted(value, std::chars_format::general, 3); }

std::string signed_charge_text(double q) {
  const std::string text = formatted(std::fabs(q) < 5e-5 ? 0.0 : q, std::chars_format::fixed, 4);
  return text[0] == '-' ? text : "+" + text;  // printf's "%+.4f"
}

std::string utc_timestamp(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  return std::string(text, std::strftime(text, sizeof text, format, &utc));
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

}  // namespace espgrid
