#include "src/structure/point_file.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_parsing.h"
#include "src/structure/structure_reader.h"

namespace espgrid {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// The line's fields: split at commas when it has any (each field trimmed), else at whitespace.
void fields_of(std::string_view line, std::vector<std::string_view>& fields) {
  if (line.find(',') == std::string_view::npos) {
    split_whitespace(line, fields);
    return;
  }
  fields.clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(
        trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) return;
    start = comma + 1;
  }
}

bool is_header(const std::vector<std::string_view>& fields) {
  if (fields.size() != 3) return false;
  static constexpr const char* kNames[] = {"x", "y", "z"};
  for (std::size_t a = 0; a < 3; ++a)
    if (fields[a] != kNames[a] && !(fields[a].size() == 1 && fields[a][0] == kNames[a][0] - 'a' + 'A')) return false;
  return true;
}

PointList read_from(LineSource& source) {
  source.set_kind("points file (x y z a line)");
  PointList points;
  points.path = source.path();
  std::vector<std::string_view> fields;
  bool seen_data = false;
  static constexpr const char* kAxis[] = {"x", "y", "z"};
  while (const auto next = source.next()) {
    // '#' starts a comment, at the start of a line or after a point ("0 0 10  # site A").
    const std::string_view line = trim(next->substr(0, next->find('#')));
    if (line.empty()) continue;
    fields_of(line, fields);
    if (!seen_data && points.xyz.empty() && is_header(fields)) {
      seen_data = true;  // one header line, before any point
      continue;
    }
    seen_data = true;
    if (fields.size() != 3)
      source.fail("expected three numbers x y z (Å), separated by spaces or commas; found " +
                  std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields"));
    for (std::size_t a = 0; a < 3; ++a) {
      if (fields[a].empty()) source.fail(std::string(kAxis[a]) + " is empty");
      const std::optional<double> v = parse_number(fields[a]);
      if (!v) source.fail(std::string(kAxis[a]) + " is not a number: " + espgrid::quoted(fields[a]));
      if (!std::isfinite(*v))
        source.fail(std::string(kAxis[a]) + " is " + std::string(fields[a]) + ": points must be finite numbers (Å)");
      if (std::fabs(*v) > kMaxCoordinate)
        source.fail(std::string(kAxis[a]) + " = " + std::string(fields[a]) +
                    " is beyond ±1e6 Å; check the file's units");
      points.xyz.push_back(*v);
    }
    points.lines.push_back(source.line_number());
  }
  if (points.lines.empty())
    throw InputError(points.path, source.empty() ? 0 : source.line_number(),
                     source.empty() ? "the file is empty: no points (x y z a line)"
                                    : "no points in the file (x y z a line; '#' starts a comment)");
  return points;
}

std::string shortest(double v) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, end);
}

std::string shortest(float v) {
  if (std::isnan(v)) return "nan";
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, end);
}

}  // namespace

std::string PointList::where(std::size_t index) const { return path + ":" + std::to_string(lines.at(index)); }

PointList read_points(const std::string& path) {
  // Standard input is streamed as any file (a pipe may bring more than memory holds), named
  // "<stdin>" in messages; a terminal, which the line source refuses as a device, is read whole.
  const bool standard_input = path == "-";
  if (standard_input && ::isatty(STDIN_FILENO)) {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) throw Error("cannot read the points from standard input");
    return read_points_text("<stdin>", text);
  }
  std::error_code ec;
  const std::string opened = !standard_input                             ? path
                             : std::filesystem::exists("/dev/stdin", ec) ? "/dev/stdin"
                                                                         : "/proc/self/fd/0";
  if (!standard_input && std::filesystem::is_directory(path, ec))
    throw Error(path + " is a directory, not a points file (x y z a line)");
  LineSource source(opened, LineSource::Decompress::None, standard_input ? "<stdin>" : path);
  return read_from(source);
}

PointList read_points_text(const std::string& name, const std::string& text) {
  LineSource source(name, text);
  return read_from(source);
}

PointList read_points(LineSource& lines) { return read_from(lines); }

PointTableFormat point_table_format_from_extension(const std::string& path) {
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "csv" ? PointTableFormat::Csv : PointTableFormat::Text;
}

PointTableFormat parse_point_table_format(const std::string& text) {
  if (text == "text") return PointTableFormat::Text;
  if (text == "csv") return PointTableFormat::Csv;
  throw UsageError("--table must be text or csv, got '" + text + "'");
}

std::string point_table(const PointList& points, const std::vector<float>& values, PointTableFormat format,
                        const std::vector<std::string>& comments) {
  std::string out;
  const bool csv = format == PointTableFormat::Csv;
  if (csv) {
    out += "x,y,z,potential\n";
  } else {
    for (const std::string& c : comments) out += "# " + c + "\n";
    out += "# x y z potential\n";
  }
  const char sep = csv ? ',' : ' ';
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (std::size_t a = 0; a < 3; ++a) {
      out += shortest(points.xyz[3 * i + a]);
      out += sep;
    }
    out += shortest(values.at(i));
    out += '\n';
  }
  return out;
}

}  // namespace espgrid
