// Reading VTK XML image data (.vti), all by espgrid's own parser: one piece, axis-aligned, a
// scalar Float32/Float64 point array "potential" (or the one PointData names as Scalars),
// espgrid's field data for the unit and physics. Every encoding VTK 9 writes is read: appended
// raw or base64 data, inline base64 ("binary") and ascii arrays, UInt32 or UInt64 byte counts,
// either byte order, uncompressed or in zlib, LZ4 or LZMA blocks (maps/vti_decoding.h). Every
// size is checked against the file, and a decompressed size against the grid, before anything
// is read or allocated: a truncated file or one whose byte counts run past its data is
// refused, never read as garbage. VTK's reader is not used: it crashed on damaged files
// (fuzz_map found three SIGSEGVs in it, the last in its block reader).
//
// Longer than 500 lines because it is one format's parser: the header scanner, the layout's
// checks and the array readers share the layout's types (the decoders are vti_decoding.cpp).
#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/maps/map_formats.h"
#include "src/maps/map_reading.h"
#include "src/maps/vti_decoding.h"

namespace espgrid {
namespace {

/// The XML header is read up to this many bytes: espgrid's is about 2 KiB, VTK's a few.
constexpr std::size_t kMaxHeaderBytes = std::size_t{1} << 20;
/// A file without appended data is read whole: its arrays are text inside the XML.
constexpr std::uint64_t kMaxInlineFileBytes = std::uint64_t{1} << 32;

/// One XML element of the header: its name, attributes, where it is, and which element holds it.
struct Element {
  std::string name;
  std::map<std::string, std::string, std::less<>> attributes;
  std::string parent;           ///< name of the enclosing element
  std::size_t line = 1;         ///< 1-based line of its '<'
  std::size_t begin = 0;        ///< byte offset of its '<'
  std::size_t end = 0;          ///< byte offset after its '>'
  bool has_content = false;     ///< text other than white space before its closing tag (inline data)
  std::size_t content_end = 0;  ///< byte offset of its closing tag's '<' (0: self-closing)

  const std::string* attribute(std::string_view key) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? nullptr : &it->second;
  }
};

/// The header's elements up to and including <AppendedData ...> (or the whole text when there
/// is none). A small strict scanner: enough for the XML VTK and espgrid write, InputError
/// naming the line on anything it cannot follow.
class HeaderScanner {
 public:
  HeaderScanner(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  std::vector<Element> scan() {
    std::vector<Element> elements;
    std::vector<std::size_t> open;  // indices of the elements not yet closed
    std::size_t pos = 0;
    while (true) {
      const std::size_t lt = text_.find('<', pos);
      const std::string_view between = text_.substr(pos, (lt == std::string_view::npos ? text_.size() : lt) - pos);
      if (!open.empty() && between.find_first_not_of(" \t\r\n") != std::string_view::npos)
        elements[open.back()].has_content = true;
      if (lt == std::string_view::npos) break;
      pos = lt;
      if (text_.substr(pos, 4) == "<!--") {
        pos = must_find("-->", pos + 4, "the comment's end '-->'") + 3;
        continue;
      }
      if (text_.substr(pos, 2) == "<?") {
        pos = must_find("?>", pos + 2, "the declaration's end '?>'") + 2;
        continue;
      }
      if (text_.substr(pos, 2) == "</") {
        const std::size_t gt = must_find(">", pos, "'>'");
        const std::string_view name = trim_space(text_.substr(pos + 2, gt - pos - 2));
        if (open.empty() || elements[open.back()].name != name)
          fail(pos, "closing tag </" + std::string(name) + "> does not match " +
                        (open.empty() ? std::string("any open element") : "<" + elements[open.back()].name + ">"));
        elements[open.back()].content_end = pos;
        open.pop_back();
        pos = gt + 1;
        continue;
      }
      Element e;
      e.begin = pos;
      e.line = line_at(pos);
      e.parent = open.empty() ? "" : elements[open.back()].name;
      std::size_t p = pos + 1;
      const std::size_t name_end = text_.find_first_of(" \t\r\n/>", p);
      if (name_end == std::string_view::npos || name_end == p) fail(pos, "an XML tag without a name");
      e.name = std::string(text_.substr(p, name_end - p));
      p = name_end;
      bool self_closing = false;
      while (true) {
        p = skip_space(p);
        if (p >= text_.size()) fail(pos, "the tag <" + e.name + "> does not end");
        if (text_[p] == '>') {
          ++p;
          break;
        }
        if (text_.substr(p, 2) == "/>") {
          self_closing = true;
          p += 2;
          break;
        }
        const std::size_t eq = text_.find('=', p);
        if (eq == std::string_view::npos) fail(p, "an attribute of <" + e.name + "> without '='");
        const std::string key(trim_space(text_.substr(p, eq - p)));
        p = skip_space(eq + 1);
        if (p >= text_.size() || (text_[p] != '"' && text_[p] != '\''))
          fail(p, "attribute " + key + " of <" + e.name + "> has no quoted value");
        const std::size_t close = text_.find(text_[p], p + 1);
        if (close == std::string_view::npos) fail(p, "attribute " + key + " of <" + e.name + "> has no closing quote");
        if (!e.attributes.emplace(key, std::string(text_.substr(p + 1, close - p - 1))).second)
          fail(p, "<" + e.name + "> has attribute " + key + " twice");
        p = close + 1;
      }
      e.end = p;
      elements.push_back(std::move(e));
      pos = p;
      if (elements.back().name == "AppendedData") break;  // raw bytes follow: the header ends here
      if (!self_closing) open.push_back(elements.size() - 1);
    }
    return elements;
  }

  std::size_t line_at(std::size_t offset) const {
    return 1 + static_cast<std::size_t>(
                   std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
  }
  [[noreturn]] void fail(std::size_t offset, const std::string& what) const {
    throw InputError(path_, line_at(std::min(offset, text_.size())), what);
  }

 private:
  std::size_t skip_space(std::size_t p) const {
    while (p < text_.size() && std::isspace(static_cast<unsigned char>(text_[p]))) ++p;
    return p;
  }
  std::size_t must_find(std::string_view what, std::size_t from, const std::string& name) const {
    const std::size_t at = text_.find(what, from);
    if (at == std::string_view::npos) fail(from, "the header ends before " + name);
    return at;
  }

  const std::string& path_;
  std::string_view text_;
};

/// An array of the file: where it is and what it holds.
struct ArrayInfo {
  std::size_t line = 0;   ///< of its element in the header; 0: no such array
  std::size_t index = 0;  ///< of its element among the header's
  std::string name, type, format;
  std::uint64_t offset = 0;                        ///< from the first byte after '_'
  std::size_t content_begin = 0, content_end = 0;  ///< an inline array's text in VtiLayout::text
  std::int64_t components = 1;
  std::optional<std::int64_t> tuples;
};

/// A size in bytes of one value of a VTK type, or 0 for a type espgrid does not read as numbers.
std::size_t value_bytes(std::string_view type) {
  if (type == "Float32" || type == "Int32" || type == "UInt32") return 4;
  if (type == "Float64" || type == "Int64" || type == "UInt64") return 8;
  if (type == "Int8" || type == "UInt8") return 1;
  if (type == "Int16" || type == "UInt16") return 2;
  return 0;
}

/// The parts of a .vti that espgrid reads, from its header.
struct VtiLayout {
  std::string path;
  bool little = true, uint64_counts = true;
  vti::Compressor compressor = vti::Compressor::None;
  std::string encoding;          ///< AppendedData's encoding, "" when there is none
  std::uint64_t data_begin = 0;  ///< first byte after '_'
  std::uint64_t data_end = 0;    ///< the '<' of </AppendedData>
  std::array<std::int64_t, 6> extent{};
  GridSpec grid;
  ArrayInfo potential;
  std::vector<ArrayInfo> fields;        ///< FieldData arrays
  std::vector<ArrayInfo> all_appended;  ///< every appended array, for the size checks
  bool all_raw = true;                  ///< uncompressed, raw appended data only (the fast path)
  std::string text;                     ///< the header (the whole file when it has no appended data)
};

std::vector<std::string_view> words(std::string_view text) { return split_whitespace(text); }

[[noreturn]] void fail_at(const std::string& path, const Element& e, const std::string& what) {
  throw InputError(path, e.line, what);
}

/// Attribute `key` of `e` as `count` finite numbers (`fallback` when it is missing).
std::vector<double> numbers_of(const std::string& path, const Element& e, const char* key, std::size_t count,
                               const char* fallback) {
  const auto* text = e.attribute(key);
  const auto tokens = words(text ? std::string_view(*text) : std::string_view(fallback));
  if (tokens.size() != count)
    fail_at(path, e,
            std::string(key) + " must hold " + std::to_string(count) + " numbers" +
                (text ? ", got " + espgrid::quoted(*text) : std::string(": it is missing")));
  std::vector<double> out;
  for (const auto t : tokens) {
    const auto value = parse_number(t);
    if (!value || !std::isfinite(*value))
      fail_at(path, e, std::string(key) + " value " + espgrid::quoted(t) + " is not a finite number");
    out.push_back(*value);
  }
  return out;
}

/// Attribute `key` of `e` as an extent: six whole numbers.
std::array<std::int64_t, 6> extent_of(const std::string& path, const Element& e, const char* key) {
  const auto* text = e.attribute(key);
  if (!text) fail_at(path, e, std::string("<") + e.name + "> has no " + key);
  const auto tokens = words(*text);
  if (tokens.size() != 6)
    fail_at(path, e, std::string(key) + " must hold six whole numbers, got " + espgrid::quoted(*text));
  std::array<std::int64_t, 6> out{};
  for (std::size_t i = 0; i < 6; ++i) {
    const auto value = parse_integer(tokens[i]);
    // kMaxOriginMagnitude bounds the start index too: far less than int64 can hold.
    if (!value || std::llabs(*value) > 1'000'000'000)
      fail_at(path, e,
              std::string(key) + " value " + espgrid::quoted(tokens[i]) + " is not a whole number of reasonable size");
    out[i] = *value;
  }
  return out;
}

/// Reads a .vti's header into a VtiLayout, one phase a method, in the order parse() calls them.
class LayoutParser {
 public:
  explicit LayoutParser(const ByteSource& bytes) : bytes_(bytes) { v_.path = bytes.path(); }

  VtiLayout parse() {
    read_header_text();
    HeaderScanner scanner(v_.path, head_);
    elements_ = scanner.scan();
    header_end_line_ = scanner.line_at(head_.size());
    read_file_attributes(*find_one("VTKFile", true));
    read_grid(*find_one("ImageData", true));
    const Element& piece = *find_one("Piece", true);
    if (extent_of(v_.path, piece, "Extent") != v_.extent) fail(piece, "the Piece's Extent is not the WholeExtent");
    const Element* appended = find_one("AppendedData", false);
    if (appended) read_appended_data(*appended);
    choose_potential(read_arrays(appended != nullptr), piece);
    v_.text = std::move(head_);
    return std::move(v_);
  }

 private:
  [[noreturn]] void fail(const Element& e, const std::string& what) const { fail_at(v_.path, e, what); }

  /// The XML header (the whole file when it has no appended data: the arrays are text in it).
  void read_header_text() {
    const std::string& path = v_.path;
    const std::size_t head_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(bytes_.size(), kMaxHeaderBytes));
    head_.assign(head_bytes, '\0');
    bytes_.read(0, head_.data(), head_bytes, "the XML header");
    if (head_.find("<VTKFile") == std::string::npos)
      throw InputError(path, 1, "no <VTKFile> element at the start: this is not a VTK XML file");
    if (head_.size() < bytes_.size() && head_.find("<AppendedData") == std::string::npos) {
      // No appended data in sight: the arrays are inline, and the whole file is XML text.
      if (bytes_.size() > kMaxInlineFileBytes)
        throw InputError(path, 0,
                         "a .vti of " + std::to_string(bytes_.size()) +
                             " bytes without appended data: espgrid reads inline arrays from files of up to 4 GiB");
      head_.resize(static_cast<std::size_t>(bytes_.size()));
      bytes_.read(head_bytes, head_.data() + head_bytes, head_.size() - head_bytes, "the XML text");
    }
  }

  /// The one element named `name`: a second is an error, and so is none when it is `required`.
  const Element* find_one(std::string_view name, bool required) const {
    const Element* found = nullptr;
    for (const Element& e : elements_) {
      if (e.name != name) continue;
      if (found) fail(e, "a second <" + std::string(name) + ">: espgrid reads one image of one piece");
      found = &e;
    }
    if (!found && required)
      throw InputError(v_.path, header_end_line_, "no <" + std::string(name) + "> element in the header");
    return found;
  }

  /// <VTKFile>: the type, byte order, byte count width and compressor.
  void read_file_attributes(const Element& file) {
    if (const auto* type = file.attribute("type"); !type || *type != "ImageData")
      fail(file, "the file holds VTK " + (type ? *type : std::string("(no type)")) + ", not ImageData (a .vti)");
    if (const auto* order = file.attribute("byte_order")) {
      if (*order == "LittleEndian")
        v_.little = true;
      else if (*order == "BigEndian")
        v_.little = false;
      else
        fail(file, "byte_order " + espgrid::quoted(*order) + " is neither LittleEndian nor BigEndian");
    }
    const auto* header_type = file.attribute("header_type");
    if (!header_type || *header_type == "UInt32")
      v_.uint64_counts = false;
    else if (*header_type == "UInt64")
      v_.uint64_counts = true;
    else
      fail(file, "header_type " + espgrid::quoted(*header_type) + " is neither UInt32 nor UInt64");
    if (const auto* compressor = file.attribute("compressor")) {
      const auto known = vti::compressor_named(*compressor);
      if (!known)
        fail(file, "compressor " + espgrid::quoted(*compressor) + " is not one VTK 9 writes (zlib, LZ4, LZMA)");
      if (!vti::can_decompress(*known))
        fail(file, "the data is compressed by " + *compressor +
                       ", which this espgrid cannot decompress (built without " + vti::package_for(*known) + ")");
      v_.compressor = *known;
      v_.all_raw = false;
    }
  }

  /// <ImageData>: the extent, origin, spacing and direction, checked as `espgrid map` checks a grid.
  void read_grid(const Element& image) {
    v_.extent = extent_of(v_.path, image, "WholeExtent");
    const std::vector<double> origin = numbers_of(v_.path, image, "Origin", 3, "0 0 0");
    const std::vector<double> spacing = numbers_of(v_.path, image, "Spacing", 3, "1 1 1");
    if (image.attribute("Direction")) {
      const std::vector<double> direction = numbers_of(v_.path, image, "Direction", 9, "");
      for (std::size_t i = 0; i < 9; ++i)
        if (direction[i] != (i % 4 == 0 ? 1.0 : 0.0))
          fail(image, "Direction is not the identity: espgrid reads axis-aligned grids only");
    }
    for (std::size_t a = 0; a < 3; ++a) {
      const std::int64_t first = v_.extent[2 * a], last = v_.extent[2 * a + 1];
      if (last < first) fail(image, "WholeExtent " + espgrid::quoted(*image.attribute("WholeExtent")) + " is empty");
      v_.grid.dims[a] = last - first + 1;
      v_.grid.spacing[a] = spacing[a];
      // VTK places point i (from the extent's start) at Origin + i * Spacing.
      v_.grid.origin[a] = origin[a] + static_cast<double>(first) * spacing[a];
    }
    check_read_grid(v_.grid, v_.path, image.line);
  }

  /// <AppendedData>: its encoding, where its bytes begin, and that the file ends right after them.
  void read_appended_data(const Element& appended) {
    const auto* encoding = appended.attribute("encoding");
    v_.encoding = encoding ? *encoding : "";
    if (v_.encoding != "raw" && v_.encoding != "base64")
      fail(appended, "AppendedData encoding " + espgrid::quoted(v_.encoding) + " is neither raw nor base64");
    if (v_.encoding == "base64") v_.all_raw = false;
    std::size_t p = appended.end;
    while (p < head_.size() && std::isspace(static_cast<unsigned char>(head_[p]))) ++p;
    if (p >= head_.size() || head_[p] != '_') fail(appended, "the appended data does not start with '_'");
    v_.data_begin = p + 1;
    // The closing tags, searched for from the file's end: the data may hold any bytes.
    const std::uint64_t tail_bytes = std::min<std::uint64_t>(bytes_.size() - v_.data_begin, 4096);
    std::string tail(static_cast<std::size_t>(tail_bytes), '\0');
    bytes_.read(bytes_.size() - tail_bytes, tail.data(), tail.size(), "the closing tags");
    const std::size_t close = tail.rfind("</AppendedData>");
    const std::size_t file_close = tail.rfind("</VTKFile>");
    if (close == std::string::npos || file_close == std::string::npos || file_close < close ||
        tail.find_first_not_of(" \t\r\n", close + 15) != file_close ||
        tail.find_first_not_of(" \t\r\n", file_close + 10) != std::string::npos)
      throw InputError(v_.path, 0,
                       "the file does not end with </AppendedData> and </VTKFile>: it is truncated or has bytes "
                       "after its end");
    v_.data_end = bytes_.size() - tail_bytes + close;
  }

  /// One array element, every attribute checked whether espgrid reads the array or not: a file
  /// it accepts is one ParaView can open (VTK's reader dereferenced a null array for an <Array>
  /// without a type).
  ArrayInfo read_array(const Element& e, bool has_appended) {
    ArrayInfo a;
    a.line = e.line;
    a.index = static_cast<std::size_t>(&e - elements_.data());
    a.name = e.attribute("Name") ? *e.attribute("Name") : "";
    a.type = e.attribute("type") ? *e.attribute("type") : "";
    a.format = e.attribute("format") ? *e.attribute("format") : "";
    if (e.parent != "PointData" && e.parent != "CellData" && e.parent != "FieldData")
      fail(e, "<" + e.name + "> outside PointData, CellData and FieldData");
    if (a.name.empty()) fail(e, "an array without a Name");
    if (value_bytes(a.type) == 0 && a.type != "String")
      fail(e, "array " + espgrid::quoted(a.name) + " has type " + espgrid::quoted(a.type) +
                  " (espgrid reads Float32, Float64, the integer types and String)");
    if (const auto* c = e.attribute("NumberOfComponents")) {
      const auto n = parse_integer(*c);
      if (!n || *n < 1 || *n > 64) fail(e, "NumberOfComponents " + espgrid::quoted(*c) + " is not 1 to 64");
      a.components = *n;
    }
    if (const auto* t = e.attribute("NumberOfTuples")) {
      const auto n = parse_integer(*t);
      // Field data is metadata; a point array has one tuple a point (VTK takes that count).
      if (!n || *n < 0 || *n > (e.parent == "FieldData" ? 4096 : kMaxAxisPoints * kMaxAxisPoints * 1024))
        fail(e, "NumberOfTuples " + espgrid::quoted(*t) + " is not a whole number espgrid reads here");
      a.tuples = *n;
    }
    if (e.parent == "FieldData" && !a.tuples)
      fail(e, "field array " + espgrid::quoted(a.name) + " has no NumberOfTuples");
    if (e.parent == "PointData") a.tuples = static_cast<std::int64_t>(v_.grid.point_count());
    if (e.parent == "CellData") {
      std::int64_t cells = 1;
      for (std::size_t d = 0; d < 3; ++d) cells *= std::max<std::int64_t>(v_.grid.dims[d] - 1, 1);
      a.tuples = cells;
    }
    if (a.format == "appended") {
      if (!has_appended)
        fail(e, "array " + espgrid::quoted(a.name) + " is appended, but the file has no <AppendedData>");
      const auto* offset = e.attribute("offset");
      const auto n = offset ? parse_integer(*offset) : std::nullopt;
      if (!n || *n < 0) fail(e, "array " + espgrid::quoted(a.name) + " has no valid offset");
      a.offset = static_cast<std::uint64_t>(*n);
      v_.all_appended.push_back(a);
    } else if (a.format == "ascii" || a.format == "binary") {
      v_.all_raw = false;
      if (e.content_end == 0) fail(e, "inline array " + espgrid::quoted(a.name) + " has no data (<" + e.name + "/>)");
      a.content_begin = e.end;
      a.content_end = e.content_end;
    } else {
      fail(e, "array " + espgrid::quoted(a.name) + " has format " + espgrid::quoted(a.format) +
                  " (expected appended, binary or ascii)");
    }
    return a;
  }

  /// Every array of the file (the field data kept in the layout); returns the point arrays.
  std::vector<ArrayInfo> read_arrays(bool has_appended) {
    std::vector<ArrayInfo> point_arrays;
    for (const Element& e : elements_) {
      // ParaView takes every element inside FieldData, PointData and CellData for an array; a
      // file that holds anything else there is refused (VTK's reader crashed on one, fuzz_map).
      const bool in_data = e.parent == "FieldData" || e.parent == "PointData" || e.parent == "CellData";
      if (in_data && e.name != "DataArray" && e.name != "Array")
        fail(e, "<" + e.name + "> inside <" + e.parent + ">, where only arrays belong");
      if (e.name != "DataArray" && e.name != "Array") continue;
      const ArrayInfo a = read_array(e, has_appended);
      if (e.parent == "FieldData") v_.fields.push_back(a);
      if (e.parent == "PointData") point_arrays.push_back(a);
    }
    return point_arrays;
  }

  /// The point array named "potential", else the one PointData names as its scalars: one
  /// Float32 or Float64 value a point.
  void choose_potential(const std::vector<ArrayInfo>& point_arrays, const Element& piece) {
    const std::string& path = v_.path;
    const Element* point_data = find_one("PointData", false);
    const std::string* scalars = point_data ? point_data->attribute("Scalars") : nullptr;
    for (const ArrayInfo& a : point_arrays)
      if (a.name == "potential") v_.potential = a;
    if (!v_.potential.line && scalars)
      for (const ArrayInfo& a : point_arrays)
        if (a.name == *scalars) v_.potential = a;
    if (!v_.potential.line) {
      std::string names;
      for (const Element& e : elements_)
        if (e.parent == "PointData" && e.attribute("Name")) names += (names.empty() ? "" : ", ") + *e.attribute("Name");
      throw InputError(path, piece.line,
                       "no point array named 'potential' (point arrays: " + (names.empty() ? "none" : names) + ")");
    }
    const ArrayInfo& p = v_.potential;
    if (p.type != "Float32" && p.type != "Float64")
      throw InputError(path, p.line,
                       "the potential is " + espgrid::quoted(p.type) + ": espgrid reads Float32 or Float64 maps");
    if (p.components != 1)
      throw InputError(
          path, p.line,
          "the potential has " + std::to_string(p.components) + " components: a map holds one value a point");
  }

  const ByteSource& bytes_;
  VtiLayout v_;
  std::string head_;  ///< the header's text, which the elements point into
  std::vector<Element> elements_;
  std::size_t header_end_line_ = 1;  ///< the line where the header ends, for "no <X> element"
};

VtiLayout parse_layout(const ByteSource& bytes) { return LayoutParser(bytes).parse(); }

/// The array's byte count word at `at` (the file's byte order and width).
std::uint64_t count_word(const ByteSource& bytes, const VtiLayout& v, std::uint64_t at, const std::string& what) {
  if (v.uint64_counts) {
    std::uint64_t n;
    bytes.read(at, &n, 8, what);
    return v.little == (std::endian::native == std::endian::little) ? n : __builtin_bswap64(n);
  }
  std::uint32_t n;
  bytes.read(at, &n, 4, what);
  return v.little == (std::endian::native == std::endian::little) ? n : __builtin_bswap32(n);
}

/// Checks that an uncompressed raw appended array (a byte count, then the bytes) lies inside
/// the appended data and returns where its bytes start and how many there are.
std::pair<std::uint64_t, std::uint64_t> locate(const ByteSource& bytes, const VtiLayout& v, const ArrayInfo& a,
                                               std::uint64_t* end_out) {
  const std::string what = "array '" + a.name + "'";
  const std::uint64_t word = v.uint64_counts ? 8 : 4;
  const std::uint64_t room = v.data_end - v.data_begin;
  const auto past_end = [&](std::uint64_t need) {
    throw InputError(v.path, a.line,
                     what + " needs " + std::to_string(need) + " bytes from offset " + std::to_string(a.offset) +
                         ", but the appended data holds " + std::to_string(room) + ": the file is truncated");
  };
  if (a.offset > room || room - a.offset < word) past_end(word);
  const std::uint64_t at = v.data_begin + a.offset;
  const std::uint64_t n = count_word(bytes, v, at, what);
  if (n > room - a.offset - word) past_end(word + n);
  *end_out = a.offset + word + n;
  return {at + word, n};
}

/// InputError unless an array's `bytes` are its tuples (one a grid point for point data, one a
/// cell for cell data, NumberOfTuples for field data) times its components and value size.
void check_array_bytes(const VtiLayout& v, const ArrayInfo& a, std::uint64_t bytes) {
  const std::size_t size = value_bytes(a.type);
  if (!size && bytes > (std::uint64_t{1} << 20))  // strings are metadata: a unit, a source, a model
    throw InputError(v.path, a.line, "string array '" + a.name + "' holds " + std::to_string(bytes) + " bytes");
  if (!size || !a.tuples) return;
  const std::uint64_t want = static_cast<std::uint64_t>(*a.tuples) * static_cast<std::uint64_t>(a.components) * size;
  if (bytes != want)
    throw InputError(v.path, a.line,
                     "array '" + a.name + "' holds " + std::to_string(bytes) + " bytes, not the " +
                         std::to_string(*a.tuples) + " x " + std::to_string(a.components) + " x " +
                         std::to_string(size) + " = " + std::to_string(want) + " of its " + std::to_string(*a.tuples) +
                         " tuples");
}

/// The physics from espgrid's field data (units, dielectric, temperature_K, model,
/// ionic_strength_M), read by `field(name)` returning the array's bytes or nullopt.
template <typename Field>
bool physics_from_fields(const std::string& path, const std::vector<ArrayInfo>& fields, Field field,
                         PhysicsOptions& physics, std::size_t& line) {
  const ArrayInfo* units = nullptr;
  for (const ArrayInfo& f : fields)
    if (f.name == "units") units = &f;
  if (!units) return false;
  const auto text_of = [&](const ArrayInfo& f) {
    if (f.type != "String") throw InputError(path, f.line, "field '" + f.name + "' is not a String");
    std::string text = field(f);
    return text.substr(0, text.find('\0'));
  };
  const auto number_of = [&](const ArrayInfo& f) {
    const std::string raw = field(f);
    if (f.type != "Float64" || raw.size() != sizeof(double))
      throw InputError(path, f.line, "field '" + f.name + "' is not one Float64");
    double value;
    std::memcpy(&value, raw.data(), sizeof value);
    return value;
  };
  PhysicsOptions parsed;
  try {
    parsed.unit = parse_unit(text_of(*units));
  } catch (const UsageError& e) {
    throw InputError(path, units->line, std::string("field 'units': ") + e.what());
  }
  line = units->line;
  for (const ArrayInfo& f : fields) {
    if (f.name != "model") continue;
    const std::string text = text_of(f);
    const std::string name = text.substr(0, text.find_first_of(" ("));
    if (name == "pb") {  // a Poisson-Boltzmann map: its parameters are not read back (as from .dx)
      parsed.method = MapMethod::PoissonBoltzmann;
      continue;
    }
    try {
      parsed.model = parse_model(name);
    } catch (const UsageError& e) {
      throw InputError(path, f.line, std::string("field 'model': ") + e.what());
    }
  }
  for (const ArrayInfo& f : fields) {
    if (f.name == "dielectric") parsed.dielectric = number_of(f);
    if (f.name == "temperature_K") parsed.temperature = number_of(f);
    if (f.name == "ionic_strength_M") parsed.ionic_strength = number_of(f);
    // The model's own parameters, each a number named as its option (physics/pair_potentials.h).
    with_pair_potential(parsed.model, [&](auto potential) {
      for (const ModelParameter& p : potential.parameters)
        if (f.name == p.name) parsed.set_parameter(p.name, number_of(f));
    });
    if (f.type == "Float64") line = f.line;
  }
  if (parsed.is_pb()) {  // what parse_model_header keeps of a PB map, for every format alike
    parsed.pb.solute_dielectric = parsed.dielectric;
    parsed.pb.temperature = parsed.temperature;
  }
  physics = parsed;
  return true;
}

/// A converted map's fields (written for PotentialMap::foreign: "converted", "values_unit"),
/// read into `map` by read_foreign_note; true when they say the unit.
template <class Field>
bool foreign_from_fields(const std::string& path, const std::vector<ArrayInfo>& fields, Field field, PotentialMap& map,
                         std::size_t& line) {
  bool known = false;
  for (const char* name : {"converted", "values_unit"})
    for (const ArrayInfo& f : fields) {
      if (f.name != name) continue;
      if (f.type != "String") throw InputError(path, f.line, "field '" + f.name + "' is not a String");
      std::string text = field(f);
      if (read_foreign_note(text.substr(0, text.find('\0')), map)) {
        known = true;
        line = f.line;
      }
    }
  return known;
}

PotentialMap read_uncompressed(const ByteSource& bytes, const VtiLayout& v, bool* unit_known) {
  PotentialMap map;
  map.grid = v.grid;
  const bool swap = v.little != (std::endian::native == std::endian::little);
  // Every appended array within the appended data, and nothing but white space after the last.
  std::uint64_t last_end = 0;
  for (const ArrayInfo& a : v.all_appended) {
    std::uint64_t end = 0;
    const auto [at, n] = locate(bytes, v, a, &end);
    (void)at;
    last_end = std::max(last_end, end);
    check_array_bytes(v, a, n);
  }
  std::uint64_t potential_end = 0;
  const auto [at, n] = locate(bytes, v, v.potential, &potential_end);
  const std::size_t size = v.potential.type == "Float32" ? 4 : 8;
  const std::size_t points = map.grid.point_count();
  if (n != static_cast<std::uint64_t>(points) * size)
    throw InputError(v.path, v.potential.line,
                     "the potential holds " + std::to_string(n) + " bytes, not the " + std::to_string(points) + " x " +
                         std::to_string(size) + " of the grid's " + std::to_string(points) + " points");
  {
    const std::uint64_t gap = v.data_end - v.data_begin - last_end;
    std::string rest(static_cast<std::size_t>(std::min<std::uint64_t>(gap, 64)), '\0');
    bytes.read(v.data_begin + last_end, rest.data(), rest.size(), "the end of the appended data");
    if (gap > 64 || rest.find_first_not_of(" \t\r\n") != std::string::npos)
      throw InputError(v.path, 0,
                       std::to_string(gap) +
                           " bytes after the last array of the appended data: its byte counts do "
                           "not describe the data");
  }
  const auto field = [&](const ArrayInfo& f) {
    std::uint64_t end = 0;
    const auto [field_at, field_bytes] = locate(bytes, v, f, &end);
    if (field_bytes > 4096) throw InputError(v.path, f.line, "field '" + f.name + "' is too long for metadata");
    std::string raw(static_cast<std::size_t>(field_bytes), '\0');
    bytes.read(field_at, raw.data(), raw.size(), "field '" + f.name + "'");
    if (swap && f.type == "Float64" && raw.size() == 8) std::reverse(raw.begin(), raw.end());
    return raw;
  };
  std::vector<ArrayInfo> appended_fields;
  for (const ArrayInfo& f : v.fields)
    if (f.format == "appended") appended_fields.push_back(f);
  std::size_t physics_line = 0;
  const bool known = physics_from_fields(v.path, appended_fields, field, map.physics, physics_line) ||
                     foreign_from_fields(v.path, appended_fields, field, map, physics_line);
  if (known) check_read_physics(map.physics, v.path, physics_line);
  if (unit_known) *unit_known = known;

  map.values.resize(points);
  if (size == 4) {
    bytes.read(at, map.values.data(), n, "the potential");
    if (swap)
      for (float& x : map.values) x = std::bit_cast<float>(__builtin_bswap32(std::bit_cast<std::uint32_t>(x)));
  } else {
    std::vector<std::uint64_t> chunk(std::size_t{1} << 16);
    for (std::size_t done = 0; done < points;) {
      const std::size_t count = std::min(chunk.size(), points - done);
      bytes.read(at + 8 * done, chunk.data(), 8 * count, "the potential");
      for (std::size_t i = 0; i < count; ++i) {
        const double x = std::bit_cast<double>(swap ? __builtin_bswap64(chunk[i]) : chunk[i]);
        if (std::isfinite(x) && std::fabs(x) > std::numeric_limits<float>::max())
          throw InputError(v.path, 0,
                           "the value " + number_text(x) + " at point " + std::to_string(done + i) +
                               " is beyond the range of a float32 map (±3.4e38)");
        map.values[done + i] = static_cast<float>(x);
      }
      done += count;
    }
  }
  check_read_values(map, v.path);
  return map;
}

/// An array's encoded data, as VTK writes it: raw appended bytes in the file, or base64 text
/// (appended, or inline "binary" with its white space removed). Base64 comes in units, each
/// padded on its own: an uncompressed array is one unit (its byte count, then its bytes), a
/// compressed one two (its block table, then its blocks).
class EncodedArray {
 public:
  /// Appended data: from the array's offset to the end of the appended data.
  EncodedArray(const ByteSource& file, const VtiLayout& v, const ArrayInfo& a)
      : v_(v), a_(a), file_(&file), base64_(v.encoding == "base64"), end_(v.data_end - v.data_begin) {
    if (a.offset > end_)
      throw InputError(v.path, a.line,
                       "array '" + a.name + "' starts at offset " + std::to_string(a.offset) +
                           ", after the end of the appended data (" + std::to_string(end_) +
                           " bytes): the file is truncated");
    pos_ = a.offset;
  }
  /// Inline base64 ("binary").
  EncodedArray(const VtiLayout& v, const ArrayInfo& a) : v_(v), a_(a), base64_(true) {
    for (std::size_t i = a.content_begin; i < a.content_end; ++i)
      if (!std::isspace(static_cast<unsigned char>(v.text[i]))) text_.push_back(v.text[i]);
    end_ = text_.size();
  }

  /// The first `n` decoded bytes from here, not consumed: the start of a unit.
  std::string peek(std::uint64_t n) const {
    const std::uint64_t chars = encoded(n);
    std::string out = decode(fetch(chars));
    if (out.size() < n) not_base64();
    out.resize(static_cast<std::size_t>(n));
    return out;
  }
  /// The next unit, of exactly `n` decoded bytes.
  std::string take(std::uint64_t n) {
    const std::uint64_t chars = encoded(n);
    std::string out = decode(fetch(chars));
    if (out.size() != n) not_base64();
    pos_ += chars;
    return out;
  }
  /// At most how many decoded bytes are left: the bound every size in a header is checked by.
  std::uint64_t left() const { return base64_ ? (end_ - pos_) / 4 * 3 : end_ - pos_; }
  [[noreturn]] void truncated(std::uint64_t need) const {
    throw InputError(v_.path, a_.line,
                     "array '" + a_.name + "' needs " + std::to_string(need) + " more bytes than its data holds (" +
                         std::to_string(left()) + "): the file is truncated or its byte counts are wrong");
  }

 private:
  std::uint64_t encoded(std::uint64_t n) const { return base64_ ? (n + 2) / 3 * 4 : n; }
  std::string fetch(std::uint64_t chars) const {
    if (chars > end_ - pos_) truncated(base64_ ? chars / 4 * 3 : chars);
    if (!file_) return text_.substr(static_cast<std::size_t>(pos_), static_cast<std::size_t>(chars));
    std::string out(static_cast<std::size_t>(chars), '\0');
    file_->read(v_.data_begin + pos_, out.data(), out.size(), "array '" + a_.name + "'");
    return out;
  }
  std::string decode(std::string chars) const {
    if (!base64_) return chars;
    auto out = vti::base64_decode(chars);
    if (!out) not_base64();
    return std::move(*out);
  }
  [[noreturn]] void not_base64() const {
    throw InputError(v_.path, a_.line,
                     "array '" + a_.name + "' is not valid base64 where its byte counts say it should be");
  }

  const VtiLayout& v_;
  const ArrayInfo& a_;
  const ByteSource* file_ = nullptr;
  std::string text_;  ///< inline base64, without white space
  bool base64_;
  std::uint64_t pos_ = 0, end_ = 0;
};

/// Reverses the bytes of each `size`-byte value of `bytes` (another byte order).
void swap_values(std::string& bytes, std::size_t size) {
  if (size < 2) return;
  for (std::size_t i = 0; i + size <= bytes.size(); i += size)
    std::reverse(bytes.begin() + i, bytes.begin() + i + size);
}

/// A binary array's values, in this machine's byte order (a String array: its strings, each
/// ended by a NUL). Every count in its header is checked against the data left and against
/// the array's size (check_array_bytes) before anything is allocated or decompressed.
std::string binary_array(const VtiLayout& v, const ArrayInfo& a, EncodedArray data) {
  const std::size_t word = v.uint64_counts ? 8 : 4;
  const bool swap = v.little != (std::endian::native == std::endian::little);
  const auto word_at = [&](const std::string& head, std::size_t i) {
    std::uint64_t n = 0;
    if (word == 8) {
      std::memcpy(&n, head.data() + 8 * i, 8);
      return swap ? __builtin_bswap64(n) : n;
    }
    std::uint32_t n32;
    std::memcpy(&n32, head.data() + 4 * i, 4);
    return std::uint64_t{swap ? __builtin_bswap32(n32) : n32};
  };
  std::string out;
  if (v.compressor == vti::Compressor::None) {
    const std::uint64_t n = word_at(data.peek(word), 0);
    if (n > data.left() - std::min<std::uint64_t>(data.left(), word)) data.truncated(word + n);
    check_array_bytes(v, a, n);
    out = data.take(word + n).substr(word);
  } else {
    const std::string head = data.peek(3 * word);
    const std::uint64_t blocks = word_at(head, 0), block_size = word_at(head, 1), last_size = word_at(head, 2);
    if (blocks > data.left() / word) data.truncated(word * (3 + blocks));
    // VTK writes 32 KiB blocks; 64 MiB is far above any writer's, and bounds each allocation.
    if ((blocks > 0 && block_size == 0) || block_size > (std::uint64_t{1} << 26) || last_size > block_size ||
        (blocks > 0 && blocks - 1 > (std::numeric_limits<std::uint64_t>::max() - block_size) / block_size))
      throw InputError(v.path, a.line, "array '" + a.name + "' has a block table that does not add up");
    const std::uint64_t total = blocks == 0 ? 0 : (blocks - 1) * block_size + (last_size ? last_size : block_size);
    check_array_bytes(v, a, total);
    const std::string table = data.take(word * (3 + blocks));
    std::vector<std::uint64_t> packed_size(static_cast<std::size_t>(blocks));
    std::uint64_t packed_total = 0;
    for (std::size_t b = 0; b < packed_size.size(); ++b) {
      packed_size[b] = word_at(table, 3 + b);
      if (packed_size[b] > data.left() - packed_total) data.truncated(packed_total + packed_size[b]);
      packed_total += packed_size[b];
    }
    const std::string packed = data.take(packed_total);
    out.assign(static_cast<std::size_t>(total), '\0');
    std::uint64_t from = 0;
    for (std::size_t b = 0; b < packed_size.size(); ++b) {
      const std::uint64_t size = b + 1 < packed_size.size() || last_size == 0 ? block_size : last_size;
      const std::string why = vti::decompress_block(v.compressor, std::string_view(packed).substr(from, packed_size[b]),
                                                    out.data() + b * block_size, static_cast<std::size_t>(size));
      if (!why.empty())
        throw InputError(v.path, a.line,
                         "array '" + a.name + "': block " + std::to_string(b + 1) + " of " + std::to_string(blocks) +
                             " does not decompress: " + why);
      from += packed_size[b];
    }
  }
  if (swap) swap_values(out, value_bytes(a.type));
  return out;
}

/// An ascii array's values in the form binary_array gives. VTK writes a String array as the
/// codes of its characters, each string ended by 0. Only the types espgrid reads are decoded
/// (Float32, Float64, String); another type gives no bytes, which the caller refuses.
std::string ascii_array(const VtiLayout& v, const ArrayInfo& a) {
  const std::string_view text = std::string_view(v.text).substr(a.content_begin, a.content_end - a.content_begin);
  const auto line_of = [&](std::size_t at) {
    return 1 +
           static_cast<std::size_t>(std::count(v.text.begin(), v.text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  };
  const std::size_t size = a.type == "String" ? 1 : a.type == "Float32" ? 4 : a.type == "Float64" ? 8 : 0;
  if (!size) return {};
  std::optional<std::uint64_t> want;
  if (a.tuples && a.type != "String")
    want = static_cast<std::uint64_t>(*a.tuples) * static_cast<std::uint64_t>(a.components);
  std::string out;
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < text.size();) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == text.size()) break;
    std::size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    const std::string_view token = text.substr(i, j - i);
    const auto bad = [&](const std::string& why) {
      throw InputError(
          v.path, line_of(a.content_begin + i),
          "array '" + a.name + "' value " + std::to_string(count) + " " + espgrid::quoted(token) + " " + why);
    };
    ++count;
    if (want && count > *want) bad("is one more than its " + std::to_string(*want) + " values");
    if (size == 1) {
      const auto code = parse_integer(token);
      if (!code || *code < 0 || *code > 255) bad("is not a character code (0 to 255)");
      if (out.size() >= (std::size_t{1} << 20)) bad("makes the string array longer than 1 MiB");
      out.push_back(static_cast<char>(*code));
    } else {
      const auto value = parse_number(token);
      if (!value) bad("is not a number");
      if (size == 4) {
        if (std::isfinite(*value) && std::fabs(*value) > std::numeric_limits<float>::max())
          bad("is beyond the range of a Float32");
        const float f = static_cast<float>(*value);
        out.append(reinterpret_cast<const char*>(&f), 4);
      } else {
        const double d = *value;
        out.append(reinterpret_cast<const char*>(&d), 8);
      }
    }
    i = j;
  }
  if (want && count != *want)
    throw InputError(v.path, line_of(a.content_begin),
                     "array '" + a.name + "' holds " + std::to_string(count) + " values, not the " +
                         std::to_string(*a.tuples) + " x " + std::to_string(a.components) + " of its " +
                         std::to_string(*a.tuples) + " tuples");
  return out;
}

/// A .vti whose arrays are not all raw, uncompressed and appended: each array espgrid reads
/// (the potential and the physics fields) decoded whole, every other array left unread.
PotentialMap read_encoded(const ByteSource& bytes, const VtiLayout& v, bool* unit_known) {
  const auto decoded = [&](const ArrayInfo& a) {
    if (a.format == "ascii") return ascii_array(v, a);
    return a.format == "appended" ? binary_array(v, a, EncodedArray(bytes, v, a))
                                  : binary_array(v, a, EncodedArray(v, a));
  };
  PotentialMap map;
  map.grid = v.grid;
  const std::size_t points = map.grid.point_count();
  const std::string potential = decoded(v.potential);  // sized by check_array_bytes or the ascii count
  map.values.resize(points);
  if (v.potential.type == "Float32") {
    std::memcpy(map.values.data(), potential.data(), 4 * points);
  } else {
    for (std::size_t i = 0; i < points; ++i) {
      double x;
      std::memcpy(&x, potential.data() + 8 * i, 8);
      if (std::isfinite(x) && std::fabs(x) > std::numeric_limits<float>::max())
        throw InputError(v.path, v.potential.line,
                         "the value " + number_text(x) + " at point " + std::to_string(i) +
                             " is beyond the range of a float32 map (±3.4e38)");
      map.values[i] = static_cast<float>(x);
    }
  }
  const auto field = [&](const ArrayInfo& f) {
    std::string raw = decoded(f);
    if (raw.size() > 4096) throw InputError(v.path, f.line, "field '" + f.name + "' is too long for metadata");
    return raw;
  };
  std::size_t physics_line = 0;
  const bool known = physics_from_fields(v.path, v.fields, field, map.physics, physics_line) ||
                     foreign_from_fields(v.path, v.fields, field, map, physics_line);
  if (known) check_read_physics(map.physics, v.path, physics_line);
  if (unit_known) *unit_known = known;
  check_read_values(map, v.path);
  return map;
}

}  // namespace

PotentialMap read_vti_bytes(const ByteSource& bytes, bool* unit_known) {
  const VtiLayout v = parse_layout(bytes);
  return v.all_raw ? read_uncompressed(bytes, v, unit_known) : read_encoded(bytes, v, unit_known);
}

}  // namespace espgrid
