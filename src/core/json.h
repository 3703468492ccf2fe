// espgrid's one JSON writer: the summaries scripts read (`espgrid map --json`, Python's
// Map.summary()), the bench's result files, the view page's data. Objects keep their keys in the
// order they were set, numbers are written in the shortest form that reads back exactly, and
// text is escaped as RFC 8259 asks: well-formed UTF-8 passes through, and any byte that is not
// part of a well-formed sequence (a file name in another encoding) becomes U+FFFD, so the
// document is always valid UTF-8 and every JSON reader (Python's json decodes strictly) takes
// it. The one exception is text handed to Python in memory (Malformed::Keep), which decodes the
// bytes as the system names files (surrogate escapes), so a file name comes back as os.listdir
// gives it. Non-finite numbers, which JSON cannot hold, are written as null.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace espgrid {

/// What the writer does with bytes that are not well-formed UTF-8 in text.
enum class Malformed {
  Replace,  ///< U+FFFD: valid UTF-8 for any reader (files, standard output)
  Keep,     ///< the bytes as they are: for Python's os.fsdecode in memory (surrogate escapes)
};

class Json {
 public:
  Json() = default;  ///< null
  Json(std::nullptr_t) {}
  Json(bool value) : kind_(Kind::Bool), bool_(value) {}
  Json(double value) : kind_(Kind::Number), number_(value) {}
  /// A float32 value, written as the shortest text that reads back as that float (-1365.1884,
  /// not the double -1365.1883544921875).
  Json(float value) : kind_(Kind::Number), number_(value), single_(true) {}
  Json(int value) : kind_(Kind::Integer), integer_(value) {}
  Json(long value) : kind_(Kind::Integer), integer_(value) {}
  Json(long long value) : kind_(Kind::Integer), integer_(value) {}
  Json(unsigned long value) : kind_(Kind::Integer), integer_(static_cast<long long>(value)) {}
  Json(unsigned long long value) : kind_(Kind::Integer), integer_(static_cast<long long>(value)) {}
  Json(const char* text) : kind_(Kind::String), text_(text) {}
  Json(std::string text) : kind_(Kind::String), text_(std::move(text)) {}

  /// An empty object; set() adds its members in order.
  static Json object();
  /// An array of the values given.
  static Json array(std::vector<Json> items = {});
  /// An array of numbers.
  template <class Range>
  static Json numbers(const Range& values) {
    Json a = array();
    for (const auto& v : values) a.push(Json(v));
    return a;
  }

  /// Sets (or replaces) an object's member; returns *this for chaining.
  Json& set(const std::string& key, Json value);
  /// Appends to an array.
  Json& push(Json value);
  bool is_null() const noexcept { return kind_ == Kind::Null; }

  /// The text: `indent` spaces a level with one member or item a line, or all on one line when 0.
  std::string dump(int indent = 2, Malformed malformed = Malformed::Replace) const;

 private:
  enum class Kind { Null, Bool, Number, Integer, String, Array, Object };
  void write(std::string& out, int indent, int depth, Malformed malformed) const;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  bool single_ = false;  ///< number_ holds a float32 value
  long long integer_ = 0;
  std::string text_;
  std::vector<Json> items_;                            ///< an array's items
  std::vector<std::pair<std::string, Json>> members_;  ///< an object's members, in order
};

/// `text` as a JSON string literal, quotes included; bytes that are not well-formed UTF-8 (a
/// stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF) as \ufffd, or as
/// they are with Malformed::Keep.
std::string json_quoted(std::string_view text, Malformed malformed = Malformed::Replace);

}  // namespace espgrid
