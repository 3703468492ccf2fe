#include "src/core/number_parsing.h"

#include <charconv>
#include <system_error>

namespace espgrid {

std::optional<double> parse_number(std::string_view token) {
  if (token.size() > 1 && token.front() == '+' && token[1] != '-') token.remove_prefix(1);  // not "+-1"
  if (token.empty()) return std::nullopt;
  double value = 0.0;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, value);
  // out-of-range (e.g. 1e999) is reported as not a usable number rather than clamped
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

std::optional<long long> parse_integer(std::string_view token) {
  if (token.size() > 1 && token.front() == '+' && token[1] != '-') token.remove_prefix(1);  // not "+-1"
  if (token.empty()) return std::nullopt;
  long long value = 0;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

}  // namespace espgrid
