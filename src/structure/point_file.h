// Points to sample the potential at (`espgrid sample`) and the table of values it
// writes. A points file holds one point a line, "x y z" in Å separated by whitespace or by
// commas (APBS multivalue's CSV); '#' starts a comment (a whole line, or after a point), and
// blank lines and one header line "x,y,z" (or "x y z") are allowed. Any other line is an
// InputError "FILE:LINE: what".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace espgrid {

class LineSource;

struct PointList {
  std::string path;                ///< the file as named in messages ("<stdin>" for standard input)
  std::vector<double> xyz;         ///< x, y, z of each point, Å
  std::vector<std::size_t> lines;  ///< the line each point was read from (1-based)
  std::size_t size() const noexcept { return lines.size(); }
  /// "FILE:LINE" of point `index`, for messages.
  std::string where(std::size_t index) const;
};

/// Reads a points file ("-": standard input, named "<stdin>" in messages). Throws InputError
/// for a line that is not three finite numbers within ±1e6 Å (naming the field), for a file
/// with no points, and Error when the file cannot be read.
PointList read_points(const std::string& path);
/// The same from text in memory named `name` (tests and fuzzers).
PointList read_points_text(const std::string& name, const std::string& text);
/// The same from any line source (fuzzers read text in pieces through it).
PointList read_points(LineSource& lines);

/// How a table of sampled values is written.
enum class PointTableFormat {
  Text,  ///< '#' comment lines, then "x y z potential" a line (whitespace-separated)
  Csv,   ///< a header line "x,y,z,potential", then "x,y,z,value" a line (APBS multivalue's columns)
};
/// Csv for a name ending in .csv, else Text.
PointTableFormat point_table_format_from_extension(const std::string& path);
/// "text" or "csv"; UsageError otherwise.
PointTableFormat parse_point_table_format(const std::string& text);

/// The table: each point's coordinates (shortest text that reads back exactly) and its value
/// (the float's shortest text; "nan" for a NaN). `comments` become '#' lines in Text and are
/// left out of Csv, whose header names the columns only.
std::string point_table(const PointList& points, const std::vector<float>& values, PointTableFormat format,
                        const std::vector<std::string>& comments);

}  // namespace espgrid
