#include "src/core/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace espgrid {

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

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
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buffer;
}

std::string seconds_text(double s) {
  char buffer[32];
  if (s < 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.1f µs", s * 1e6);
  else if (s < 1)
    std::snprintf(buffer, sizeof buffer, "%.2f ms", s * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.3f s", s);
  return buffer;
}

std::string short_fixed(double value, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string short_scientific(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string signed_charge_text(double q) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.4f", std::fabs(q) < 5e-5 ? 0.0 : q);
  return buffer;
}

}  // namespace espgrid
