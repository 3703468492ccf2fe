// Numbers as people read them in espgrid's messages and tables. One place, so that every
// message prints a value the same way. None of them depends on the locale (std::to_chars, not
// printf): a process that set LC_NUMERIC (a Python session after locale.setlocale) still writes
// "0.5", never "0,5", into messages and file headers (tests/test_float_text.cpp: Locale*).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace espgrid {

/// "%g": 1e300 prints as "1e+300", 1e-300 not as 0.000000; NaN as "nan".
std::string number_text(double value);
/// The shortest text that reads back as exactly `value` ("0.5", "298.15", "1e-07").
std::string shortest_text(double value);
/// 1234567 -> "1,234,567".
std::string with_commas(std::uint64_t value);
/// Bytes to "512 B", "3.5 MiB", "2.0 GiB".
std::string human_bytes(double bytes);
/// Seconds to "12.3 µs", "4.56 ms" or "1.234 s".
std::string seconds_text(double seconds);
/// Fixed notation with `decimals` digits after the point: "7.86".
std::string short_fixed(double value, int decimals);
/// "%.3g": throughputs and evaluation counts in summaries.
std::string short_scientific(double value);
/// "+4.0530" (e), with values within 5e-5 of zero printed as "+0.0000".
std::string signed_charge_text(double charge);
/// `s` with its ASCII letters upper case (record names, residue and atom names; no locale).
std::string ascii_upper(std::string_view s);

/// The time now in UTC, by strftime's `format`: ISO 8601 by default ("2026-11-24T10:31:02Z", what
/// summaries and result files record), or a reader's form ("%Y-%m-%d %H:%M UTC").
std::string utc_timestamp(const char* format = "%Y-%m-%dT%H:%M:%SZ");

}  // namespace espgrid
