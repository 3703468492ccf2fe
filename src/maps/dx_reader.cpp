// OpenDX: the reader, for maps of the layout espgrid, APBS and GridDataFormats write
// (maps/map_formats.h: read_dx), streamed line by line in bounded memory.
#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_parsing.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_reading.h"

namespace espgrid {
namespace {

/// Reads the DX text of `lines` by its structure (maps/map_formats.h: read_dx), one part of the
/// file a method: the grid, the array header, the values. The values are put straight into
/// their x-fastest places (the file has z fastest): no second copy of the map.
class DxReader {
 public:
  explicit DxReader(LineSource& lines) : lines_(lines), path_(lines.path()) { lines_.set_kind("text OpenDX map"); }

  PotentialMap read(bool* unit_known) {
    read_grid();
    const std::size_t total = read_array_header();
    if (known_) check_read_physics(map_.physics, path_, physics_line_);
    if (unit_known) *unit_known = known_;
    map_.values.resize(total);  // check_read_grid has checked the limits and the memory
    read_values(total);
    return std::move(map_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) { lines_.fail(what); }

  /// The next line that is not blank or a comment, split into tokens_; comments before the data
  /// may carry the physics (espgrid's line, APBS's "POTENTIAL (kT/e)").
  void next_tokens(const char* expected) {
    for (;;) {
      const auto line = lines_.next();
      if (!line)
        throw InputError(path_, std::max<std::size_t>(lines_.line_number(), 1),
                         std::string("the file ends before ") + expected + (lines_.empty() ? " (it is empty)" : ""));
      split_whitespace(*line, tokens_);
      if (tokens_.empty()) continue;
      if (tokens_[0].front() == '#') {
        const std::string_view comment = line->substr(line->find('#') + 1);
        if (!known_ && parse_physics_comment(comment, map_.physics)) {
          known_ = true;
          physics_line_ = lines_.line_number();
          // APBS's map says its unit and nothing of its physics (no pair model of espgrid's).
          if (line->find("POTENTIAL (kT/e)") != std::string_view::npos) map_.foreign = "APBS";
        } else if (!known_ && read_foreign_note(comment, map_)) {  // a converted map
          known_ = true;
          physics_line_ = lines_.line_number();
        }
        continue;
      }
      return;
    }
  }

  double number(std::string_view token, const char* what) {
    const auto v = parse_number(token);
    if (!v || !std::isfinite(*v)) fail(std::string(what) + " " + espgrid::quoted(token) + " is not a finite number");
    return *v;
  }

  /// "object N class KLASS counts NX NY NZ"'s counts.
  std::array<std::int64_t, 3> counts(const char* klass) {
    if (tokens_.size() != 8 || tokens_[0] != "object" || tokens_[2] != "class" || tokens_[3] != klass ||
        tokens_[4] != "counts")
      fail(std::string("expected 'object N class ") + klass + " counts NX NY NZ' (a 3-D grid)");
    std::array<std::int64_t, 3> n{};
    for (std::size_t a = 0; a < 3; ++a) {
      const auto v = parse_integer(tokens_[5 + a]);
      // Each count alone is held to espgrid's limit, so that their product cannot overflow.
      if (!v || *v < 1 || *v > kMaxAxisPoints)
        fail("grid count " + espgrid::quoted(tokens_[5 + a]) + " must be a whole number from 1 to " +
             std::to_string(kMaxAxisPoints));
      n[a] = *v;
    }
    return n;
  }

  /// gridpositions, origin, three axis-aligned deltas (checked as `espgrid map` checks a grid),
  /// and gridconnections with the same counts.
  void read_grid() {
    next_tokens("'object 1 class gridpositions counts NX NY NZ'");
    map_.grid.dims = counts("gridpositions");
    const std::size_t grid_line = lines_.line_number();
    next_tokens("'origin X Y Z'");
    if (tokens_.size() != 4 || tokens_[0] != "origin") fail("expected 'origin X Y Z'");
    for (std::size_t a = 0; a < 3; ++a) map_.grid.origin[a] = number(tokens_[1 + a], "origin");
    for (std::size_t a = 0; a < 3; ++a) {
      next_tokens("three 'delta' lines");
      if (tokens_.size() != 4 || tokens_[0] != "delta")
        fail("expected 'delta DX DY DZ' (" + std::to_string(a + 1) + " of 3)");
      for (std::size_t b = 0; b < 3; ++b) {
        const double d = number(tokens_[1 + b], "delta");
        if (b != a && d != 0.0)
          fail("delta " + std::to_string(a + 1) + " is not along the " + std::string(1, "xyz"[a]) +
               " axis: espgrid reads axis-aligned grids only");
        if (b == a) map_.grid.spacing[a] = d;
      }
      if (!(map_.grid.spacing[a] > 0))
        fail("grid spacing " + espgrid::quoted(tokens_[1 + a]) + " along " + std::string(1, "xyz"[a]) +
             " must be positive");
    }
    check_read_grid(map_.grid, path_, lines_.line_number());
    next_tokens("'object 2 class gridconnections counts NX NY NZ'");
    if (counts("gridconnections") != map_.grid.dims)
      fail("the gridconnections counts differ from the gridpositions counts of line " + std::to_string(grid_line));
  }

  /// "object 3 class array type double rank 0 items N data follows": a scalar number array of
  /// one item a grid point, as text after the header. Returns the item count.
  std::size_t read_array_header() {
    next_tokens("'object 3 class array type double rank 0 items N data follows'");
    if (tokens_.size() < 4 || tokens_[0] != "object" || tokens_[2] != "class" || tokens_[3] != "array")
      fail("expected 'object 3 class array type double rank 0 items N data follows'");
    std::optional<long long> items;
    bool follows = false;
    for (std::size_t t = 4; t < tokens_.size();) {
      const std::string_view key = tokens_[t];
      if (key == "type") {  // "double", "float", GridDataFormats' "\"float\"", "unsigned byte", ...
        t = check_array_type(t + 1);
      } else if (key == "rank" && t + 1 < tokens_.size()) {
        if (tokens_[t + 1] != "0")
          fail("the array has rank " + espgrid::quoted(tokens_[t + 1]) + ": a map holds scalars (rank 0)");
        t += 2;
      } else if (key == "shape" && t + 1 < tokens_.size()) {
        if (tokens_[t + 1] != "1")
          fail("the array has shape " + espgrid::quoted(tokens_[t + 1]) + ": a map holds scalars");
        t += 2;
      } else if (key == "items" && t + 1 < tokens_.size()) {
        items = parse_integer(tokens_[t + 1]);
        if (!items || *items < 0) fail("items " + espgrid::quoted(tokens_[t + 1]) + " is not a whole number");
        t += 2;
      } else if (key == "data" && t + 1 < tokens_.size() && tokens_[t + 1] == "follows" && t + 2 == tokens_.size()) {
        follows = true;
        t += 2;
      } else if (key == "ascii" || key == "text") {
        ++t;
      } else {
        fail("cannot read " + espgrid::quoted(key) +
             " in the array header: espgrid reads text data that follows the header ('" + "items N data follows')");
      }
    }
    if (!items) fail("the array header gives no 'items N'");
    if (!follows) fail("the array header does not end with 'data follows'");
    const std::size_t total = map_.grid.point_count();
    if (static_cast<unsigned long long>(*items) != total)
      fail("items " + std::to_string(*items) + " is not the grid's " + std::to_string(map_.grid.dims[0]) + " x " +
           std::to_string(map_.grid.dims[1]) + " x " + std::to_string(map_.grid.dims[2]) + " = " +
           std::to_string(total) + " points");
    return total;
  }

  /// The words of the array's type from token `t` on (up to the next keyword): a number type, or
  /// an error. Returns the token after them.
  std::size_t check_array_type(std::size_t t) {
    std::string type;
    for (; t < tokens_.size() && tokens_[t] != "rank" && tokens_[t] != "items" && tokens_[t] != "shape" &&
           tokens_[t] != "data";
         ++t) {
      if (!type.empty()) type += ' ';
      type.append(tokens_[t]);
    }
    if (type.size() >= 2 && type.front() == '"' && type.back() == '"') type = type.substr(1, type.size() - 2);
    static const char* const kNumeric[] = {"double",       "float",       "int",          "signed int",
                                           "unsigned int", "short",       "signed short", "unsigned short",
                                           "byte",         "signed byte", "unsigned byte"};
    if (std::find(std::begin(kNumeric), std::end(kNumeric), type) == std::end(kNumeric))
      fail("array type " + espgrid::quoted(type) + " is not a number type (double, float, int, ...)");
    return t;
  }

  /// A value too many on the first data line shows as a second line shorter than the first and
  /// a third no longer than the second: blame the first.
  void check_first_line_not_too_long(std::size_t count) const {
    if (short_index_ == 2 && count <= short_count_)
      throw InputError(path_, first_data_line_,
                       "this data line holds " + std::to_string(width_) + " values where the lines after it hold " +
                           std::to_string(short_count_) + ": is there a value too many?");
  }

  std::string missing_after(std::size_t total) const {
    return "the data ends after " + std::to_string(read_) + " of the " + std::to_string(total) +
           " values the array header announces";
  }

  /// The `total` values (z fastest), then only attribute, object and component lines. Every
  /// data line holds as many values as the first, the last one at most as many: a value too
  /// many or too few is found on its own line, not as a shift of every later value.
  void read_values(std::size_t total) {
    bool trailer = false;
    while (const auto line = lines_.next()) {
      split_whitespace(*line, tokens_);
      if (tokens_.empty() || tokens_[0].front() == '#') continue;
      const bool numeric = parse_number(tokens_[0]).has_value();
      if (trailer || read_ == total) {
        if (numeric && !trailer) check_first_line_not_too_long(tokens_.size());
        trailer = true;
        if (numeric)
          fail("a number after the " + std::to_string(total) + " values of the data: is there a value too many?");
        if (tokens_[0] != "attribute" && tokens_[0] != "object" && tokens_[0] != "component")
          fail("unexpected " + espgrid::quoted(tokens_[0]) +
               " after the data (expected attribute, object or component lines)");
        continue;
      }
      if (!numeric) {
        if (tokens_[0] == "attribute" || tokens_[0] == "object" || tokens_[0] == "component")
          fail(missing_after(total));
        fail("value " + espgrid::quoted(tokens_[0]) + " is not a number");
      }
      check_line_width();
      read_line_values(total);
    }
    if (read_ < total) throw InputError(path_, std::max<std::size_t>(lines_.line_number(), 1), missing_after(total));
  }

  /// The data line in tokens_ against the first one's width: longer is an error at once; shorter
  /// is remembered, and an error when another data line follows it.
  void check_line_width() {
    if (short_line_) {
      check_first_line_not_too_long(tokens_.size());
      throw InputError(path_, short_line_,
                       "this data line holds " + std::to_string(short_count_) + " values where the first (line " +
                           std::to_string(first_data_line_) + ") holds " + std::to_string(width_) +
                           ", and it is not the last: is a value missing?");
    }
    ++data_lines_;
    if (width_ == 0) {
      width_ = tokens_.size();
      first_data_line_ = lines_.line_number();
    } else if (tokens_.size() > width_) {
      fail("this data line holds " + std::to_string(tokens_.size()) + " values where the first (line " +
           std::to_string(first_data_line_) + ") holds " + std::to_string(width_) + ": is there a value too many?");
    } else if (tokens_.size() < width_) {
      short_line_ = lines_.line_number();
      short_count_ = tokens_.size();
      short_index_ = data_lines_;
    }
  }

  /// The values of the data line in tokens_, each into its x-fastest place.
  void read_line_values(std::size_t total) {
    const auto nx = static_cast<std::size_t>(map_.grid.dims[0]), ny = static_cast<std::size_t>(map_.grid.dims[1]),
               nz = static_cast<std::size_t>(map_.grid.dims[2]);
    for (const std::string_view token : tokens_) {
      if (read_ == total) check_first_line_not_too_long(tokens_.size());
      if (read_ == total)
        fail("this data line holds more than the " + std::to_string(total) +
             " values the array header announces: is there a value too many?");
      const auto v = parse_number(token);
      if (!v) fail("value " + espgrid::quoted(token) + " is not a number");
      if (!std::isfinite(*v)) fail("value " + espgrid::quoted(token) + " is not a finite number");
      if (std::fabs(*v) > std::numeric_limits<float>::max())
        fail("value " + espgrid::quoted(token) + " is beyond the range of a float32 map (±3.4e38)");
      map_.values[i_ + nx * (j_ + ny * k_)] = static_cast<float>(*v);
      ++read_;
      if (++k_ == nz) {
        k_ = 0;
        if (++j_ == ny) {
          j_ = 0;
          ++i_;
        }
      }
    }
  }

  LineSource& lines_;
  const std::string& path_;
  PotentialMap map_;
  bool known_ = false;            ///< the physics came from a header comment
  std::size_t physics_line_ = 0;  ///< that comment's line
  std::vector<std::string_view> tokens_;
  std::size_t read_ = 0, i_ = 0, j_ = 0, k_ = 0;  ///< values read; the next one is point (i, j, k)
  std::size_t width_ = 0, first_data_line_ = 0;   ///< values on the first data line, and its line
  std::size_t short_line_ = 0, short_count_ = 0;  ///< a data line with fewer than width_ values
  std::size_t data_lines_ = 0, short_index_ = 0;  ///< data lines so far; the short one's place among them
};

PotentialMap read_dx_lines(LineSource& lines, bool* unit_known) { return DxReader(lines).read(unit_known); }

}  // namespace

PotentialMap read_dx(const std::string& path, bool* unit_known) {
  // A .dx.gz is decompressed; zlib's gzread reads a plain .dx as it is, and a .dx that holds
  // gzip data (named without .gz) as what it is.
#if ESPGRID_HAVE_ZLIB
  LineSource lines(path, LineSource::Decompress::Gzip);
#else
  if (map_format_from_extension(path) == MapFormat::DxGz)
    throw UsageError("cannot read " + path + ": this espgrid was built without zlib; gunzip it first");
  LineSource lines(path);
#endif
  return read_dx_lines(lines, unit_known);
}

PotentialMap read_dx_text(std::string name, std::string text, bool* unit_known) {
  LineSource lines(std::move(name), std::move(text));
  return read_dx_lines(lines, unit_known);
}

}  // namespace espgrid
