// Strict whole-token number parsing, shared by the readers, the command line and the
// environment variables: "1.5" is a number, "1.5x" and "" are not.
#pragma once

#include <optional>
#include <string_view>

namespace espgrid {

/// Parses the whole token as a decimal floating-point number ("1.5", "-2e3", "+0.1").
/// Returns nullopt when any character is left over or the value is out of double's range.
/// "nan"/"inf" parse; callers reject them.
std::optional<double> parse_number(std::string_view token);
/// Parses the whole token as a base-10 integer; nullopt when it does not fit in long long.
std::optional<long long> parse_integer(std::string_view token);

}  // namespace espgrid
