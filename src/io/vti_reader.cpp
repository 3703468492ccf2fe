// Reading VTK XML image data (.vti). espgrid's own parser reads what espgrid writes, and any
// .vti of that layout: one piece, axis-aligned, appended raw data (UInt32 or UInt64 byte
// counts, either byte order), a scalar Float32/Float64 point array "potential" (or the one
// PointData names as Scalars), espgrid's field data for the unit and physics. It checks every
// size against the file before reading: a truncated file or one whose byte counts run past the
// appended data is refused, never read as garbage. Compressed data, base64 and inline arrays
// go to VTK's reader where this build has VTK, after the same checks of the XML header (and,
// for compressed data, of every array's block table), since VTK 9.1 aborts the process on
// some truncated files.
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
#include "src/io/map_formats.h"
#include "src/io/map_reading.h"
#include "src/io/text_parsing.h"

#if ESPGRID_HAVE_VTK
#include <vtkAbstractArray.h>
#include <vtkCallbackCommand.h>
#include <vtkCommand.h>
#include <vtkDataArray.h>
#include <vtkExecutive.h>
#include <vtkFieldData.h>
#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkStringArray.h>
#include <vtkXMLImageDataReader.h>
#endif

namespace espgrid {
namespace {

/// The XML header is read up to this many bytes: espgrid's is about 2 KiB, VTK's a few.
constexpr std::size_t kMaxHeaderBytes = std::size_t{1} << 20;

/// One XML element of the header: its name, attributes, where it is, and which element holds it.
struct Element {
  std::string name;
  std::map<std::string, std::string, std::less<>> attributes;
  std::string parent;        ///< name of the enclosing element
  std::size_t line = 1;      ///< 1-based line of its '<'
  std::size_t begin = 0;     ///< byte offset of its '<'
  std::size_t end = 0;       ///< byte offset after its '>'
  bool has_content = false;  ///< text other than white space before its closing tag (inline data)

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
        const std::string_view name = trim(text_.substr(pos + 2, gt - pos - 2));
        if (open.empty() || elements[open.back()].name != name)
          fail(pos, "closing tag </" + std::string(name) + "> does not match " +
                        (open.empty() ? std::string("any open element") : "<" + elements[open.back()].name + ">"));
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
        const std::string key(trim(text_.substr(p, eq - p)));
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
  static std::string_view trim(std::string_view t) {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    return t;
  }
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
  std::uint64_t offset = 0;  ///< from the first byte after '_'
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
  std::string compressor;        ///< empty: uncompressed
  std::string encoding;          ///< AppendedData's encoding, "" when there is none
  std::uint64_t data_begin = 0;  ///< first byte after '_'
  std::uint64_t data_end = 0;    ///< the '<' of </AppendedData>
  std::array<std::int64_t, 6> extent{};
  GridSpec grid;
  ArrayInfo potential;
  std::vector<ArrayInfo> fields;        ///< FieldData arrays
  std::vector<ArrayInfo> all_appended;  ///< every appended array, for the size checks
  bool needs_vtk = false;               ///< compressed, base64 or inline data
  std::string needs_vtk_because;
};

std::vector<std::string_view> words(std::string_view text) { return split_whitespace(text); }

VtiLayout parse_layout(const ByteSource& bytes) {
  VtiLayout v;
  v.path = bytes.path();
  const std::string& path = v.path;
  const std::size_t head_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), kMaxHeaderBytes));
  std::string head(head_bytes, '\0');
  bytes.read(0, head.data(), head_bytes, "the XML header");
  if (head.find("<VTKFile") == std::string::npos)
    throw InputError(path, 1, "no <VTKFile> element at the start: this is not a VTK XML file");
  HeaderScanner scanner(path, head);
  const std::vector<Element> elements = scanner.scan();
  const auto fail = [&](const Element& e, const std::string& what) { throw InputError(path, e.line, what); };
  const auto find_one = [&](std::string_view name, bool required) -> const Element* {
    const Element* found = nullptr;
    for (const Element& e : elements) {
      if (e.name != name) continue;
      if (found) fail(e, "a second <" + std::string(name) + ">: espgrid reads one image of one piece");
      found = &e;
    }
    if (!found && required)
      throw InputError(path, scanner.line_at(head.size()), "no <" + std::string(name) + "> element in the header");
    return found;
  };

  const Element& file = *find_one("VTKFile", true);
  if (const auto* type = file.attribute("type"); !type || *type != "ImageData")
    fail(file, "the file holds VTK " + (type ? *type : std::string("(no type)")) + ", not ImageData (a .vti)");
  if (const auto* order = file.attribute("byte_order")) {
    if (*order == "LittleEndian")
      v.little = true;
    else if (*order == "BigEndian")
      v.little = false;
    else
      fail(file, "byte_order " + espgrid::quoted(*order) + " is neither LittleEndian nor BigEndian");
  }
  const auto* header_type = file.attribute("header_type");
  if (!header_type || *header_type == "UInt32")
    v.uint64_counts = false;
  else if (*header_type == "UInt64")
    v.uint64_counts = true;
  else
    fail(file, "header_type " + espgrid::quoted(*header_type) + " is neither UInt32 nor UInt64");
  if (const auto* compressor = file.attribute("compressor")) {
    if (*compressor != "vtkZLibDataCompressor" && *compressor != "vtkLZ4DataCompressor" &&
        *compressor != "vtkLZMADataCompressor")
      fail(file, "compressor " + espgrid::quoted(*compressor) + " is not one VTK 9 writes (zlib, LZ4, LZMA)");
    v.compressor = *compressor;
    v.needs_vtk = true;
    v.needs_vtk_because = "its data is compressed (" + *compressor + ")";
  }

  const Element& image = *find_one("ImageData", true);
  const auto numbers = [&](const Element& e, const char* key, std::size_t count, const char* fallback) {
    const auto* text = e.attribute(key);
    const auto tokens = words(text ? std::string_view(*text) : std::string_view(fallback));
    if (tokens.size() != count)
      fail(e, std::string(key) + " must hold " + std::to_string(count) + " numbers" +
                  (text ? ", got " + espgrid::quoted(*text) : std::string(": it is missing")));
    std::vector<double> out;
    for (const auto t : tokens) {
      const auto value = parse_number(t);
      if (!value || !std::isfinite(*value))
        fail(e, std::string(key) + " value " + espgrid::quoted(t) + " is not a finite number");
      out.push_back(*value);
    }
    return out;
  };
  const auto extent_of = [&](const Element& e, const char* key) {
    const auto* text = e.attribute(key);
    if (!text) fail(e, std::string("<") + e.name + "> has no " + key);
    const auto tokens = words(*text);
    if (tokens.size() != 6) fail(e, std::string(key) + " must hold six whole numbers, got " + espgrid::quoted(*text));
    std::array<std::int64_t, 6> out{};
    for (std::size_t i = 0; i < 6; ++i) {
      const auto value = parse_integer(tokens[i]);
      // kMaxOriginMagnitude bounds the start index too: far less than int64 can hold.
      if (!value || std::llabs(*value) > 1'000'000'000)
        fail(e,
             std::string(key) + " value " + espgrid::quoted(tokens[i]) + " is not a whole number of reasonable size");
      out[i] = *value;
    }
    return out;
  };
  v.extent = extent_of(image, "WholeExtent");
  const std::vector<double> origin = numbers(image, "Origin", 3, "0 0 0");
  const std::vector<double> spacing = numbers(image, "Spacing", 3, "1 1 1");
  if (image.attribute("Direction")) {
    const std::vector<double> direction = numbers(image, "Direction", 9, "");
    for (std::size_t i = 0; i < 9; ++i)
      if (direction[i] != (i % 4 == 0 ? 1.0 : 0.0))
        fail(image, "Direction is not the identity: espgrid reads axis-aligned grids only");
  }
  for (std::size_t a = 0; a < 3; ++a) {
    const std::int64_t first = v.extent[2 * a], last = v.extent[2 * a + 1];
    if (last < first) fail(image, "WholeExtent " + espgrid::quoted(*image.attribute("WholeExtent")) + " is empty");
    v.grid.dims[a] = last - first + 1;
    v.grid.spacing[a] = spacing[a];
    // VTK places point i (from the extent's start) at Origin + i * Spacing.
    v.grid.origin[a] = origin[a] + static_cast<double>(first) * spacing[a];
  }
  check_read_grid(v.grid, path, image.line);
  const Element& piece = *find_one("Piece", true);
  if (extent_of(piece, "Extent") != v.extent) fail(piece, "the Piece's Extent is not the WholeExtent");

  const Element* appended = find_one("AppendedData", false);
  if (appended) {
    const auto* encoding = appended->attribute("encoding");
    v.encoding = encoding ? *encoding : "";
    if (v.encoding != "raw" && v.encoding != "base64")
      fail(*appended, "AppendedData encoding " + espgrid::quoted(v.encoding) + " is neither raw nor base64");
    if (v.encoding == "base64") {
      v.needs_vtk = true;
      v.needs_vtk_because = "its appended data is base64-encoded";
    }
    std::size_t p = appended->end;
    while (p < head.size() && std::isspace(static_cast<unsigned char>(head[p]))) ++p;
    if (p >= head.size() || head[p] != '_') fail(*appended, "the appended data does not start with '_'");
    v.data_begin = p + 1;
    // The closing tags, searched for from the file's end: the data may hold any bytes.
    const std::uint64_t tail_bytes = std::min<std::uint64_t>(bytes.size() - v.data_begin, 4096);
    std::string tail(static_cast<std::size_t>(tail_bytes), '\0');
    bytes.read(bytes.size() - tail_bytes, tail.data(), tail.size(), "the closing tags");
    const std::size_t close = tail.rfind("</AppendedData>");
    const std::size_t file_close = tail.rfind("</VTKFile>");
    if (close == std::string::npos || file_close == std::string::npos || file_close < close ||
        tail.find_first_not_of(" \t\r\n", close + 15) != file_close ||
        tail.find_first_not_of(" \t\r\n", file_close + 10) != std::string::npos)
      throw InputError(path, 0,
                       "the file does not end with </AppendedData> and </VTKFile>: it is truncated or has bytes "
                       "after its end");
    v.data_end = bytes.size() - tail_bytes + close;
  }

  std::vector<ArrayInfo> point_arrays;
  for (const Element& e : elements) {
    // VTK takes every element inside FieldData, PointData and CellData for an array (and
    // crashed on one without a type: found by fuzz_map).
    const bool in_data = e.parent == "FieldData" || e.parent == "PointData" || e.parent == "CellData";
    if (in_data && e.name != "DataArray" && e.name != "Array")
      fail(e, "<" + e.name + "> inside <" + e.parent + ">, where only arrays belong");
    if (e.name != "DataArray" && e.name != "Array") continue;
    ArrayInfo a;
    a.line = e.line;
    a.index = static_cast<std::size_t>(&e - elements.data());
    a.name = e.attribute("Name") ? *e.attribute("Name") : "";
    a.type = e.attribute("type") ? *e.attribute("type") : "";
    a.format = e.attribute("format") ? *e.attribute("format") : "";
    // Every array as VTK needs it before it is handed to VTK: its reader dereferenced a null
    // array for an <Array> without a type (SIGSEGV, found by fuzz_map).
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
    if (e.parent == "PointData") a.tuples = static_cast<std::int64_t>(v.grid.point_count());
    if (e.parent == "CellData") {
      std::int64_t cells = 1;
      for (std::size_t d = 0; d < 3; ++d) cells *= std::max<std::int64_t>(v.grid.dims[d] - 1, 1);
      a.tuples = cells;
    }
    if (a.format == "appended") {
      if (!appended) fail(e, "array " + espgrid::quoted(a.name) + " is appended, but the file has no <AppendedData>");
      const auto* offset = e.attribute("offset");
      const auto n = offset ? parse_integer(*offset) : std::nullopt;
      if (!n || *n < 0) fail(e, "array " + espgrid::quoted(a.name) + " has no valid offset");
      a.offset = static_cast<std::uint64_t>(*n);
      v.all_appended.push_back(a);
    } else if (a.format == "ascii" || a.format == "binary") {
      v.needs_vtk = true;
      v.needs_vtk_because = "array " + espgrid::quoted(a.name) + " is stored inline (" + a.format + ")";
    } else {
      fail(e, "array " + espgrid::quoted(a.name) + " has format " + espgrid::quoted(a.format) +
                  " (expected appended, binary or ascii)");
    }
    if (e.parent == "FieldData") v.fields.push_back(a);
    if (e.parent == "PointData") point_arrays.push_back(a);
  }
  // The point array named "potential", else the one PointData names as its scalars.
  const Element* point_data = find_one("PointData", false);
  const std::string* scalars = point_data ? point_data->attribute("Scalars") : nullptr;
  for (const ArrayInfo& a : point_arrays)
    if (a.name == "potential") v.potential = a;
  if (!v.potential.line && scalars)
    for (const ArrayInfo& a : point_arrays)
      if (a.name == *scalars) v.potential = a;
  if (!v.potential.line) {
    std::string names;
    for (const Element& e : elements)
      if (e.parent == "PointData" && e.attribute("Name")) names += (names.empty() ? "" : ", ") + *e.attribute("Name");
    throw InputError(path, piece.line,
                     "no point array named 'potential' (point arrays: " + (names.empty() ? "none" : names) + ")");
  }
  const ArrayInfo& p = v.potential;
  if (p.type != "Float32" && p.type != "Float64")
    throw InputError(path, p.line,
                     "the potential is " + espgrid::quoted(p.type) + ": espgrid reads Float32 or Float64 maps");
  if (p.components != 1)
    throw InputError(
        path, p.line,
        "the potential has " + std::to_string(p.components) + " components: a map holds one value a point");
  return v;
}

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

/// Checks that an appended array lies inside the appended data and returns where its bytes
/// start and how many there are. Uncompressed: a byte count, then the bytes. Compressed: a
/// block table (blocks, block size, last block size, each block's compressed size), then the
/// blocks; `bytes_out` is then the uncompressed size.
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
  if (v.compressor.empty()) {
    const std::uint64_t n = count_word(bytes, v, at, what);
    if (n > room - a.offset - word) past_end(word + n);
    *end_out = a.offset + word + n;
    return {at + word, n};
  }
  if (room - a.offset < 3 * word) past_end(3 * word);
  const std::uint64_t blocks = count_word(bytes, v, at, what);
  const std::uint64_t block_size = count_word(bytes, v, at + word, what);
  const std::uint64_t last_size = count_word(bytes, v, at + 2 * word, what);
  if (blocks > (room - a.offset) / word) past_end(word * (3 + blocks));
  const std::uint64_t table = word * (3 + blocks);
  if (table > room - a.offset) past_end(table);
  std::uint64_t compressed = 0;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    compressed += count_word(bytes, v, at + word * (3 + b), what);
    if (compressed > room - a.offset - table) past_end(table + compressed);
  }
  // VTK allocates a block of `block_size` bytes even for an array of no blocks (an allocation of
  // 2^58 bytes, found by fuzz_map): VTK writes 32 KiB blocks; 64 MiB is far above any writer's.
  if ((blocks > 0 && block_size == 0) || block_size > (std::uint64_t{1} << 26) || last_size > block_size)
    throw InputError(v.path, a.line, what + " has a block table that does not add up");
  const std::uint64_t total = blocks == 0 ? 0 : (blocks - 1) * block_size + (last_size ? last_size : block_size);
  *end_out = a.offset + table + compressed;
  return {at + table, total};
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
      parsed.poisson_boltzmann = true;
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
  if (parsed.poisson_boltzmann) {  // what parse_model_header keeps of a PB map, for every format alike
    parsed.pb.solute_dielectric = parsed.dielectric;
    parsed.pb.temperature = parsed.temperature;
  }
  physics = parsed;
  return true;
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
  const bool known = physics_from_fields(v.path, appended_fields, field, map.physics, physics_line);
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

#if ESPGRID_HAVE_VTK

/// Collects VTK's error events, so that a failed read is an error, never a partial image.
void count_error(vtkObject*, unsigned long, void* client, void*) { ++*static_cast<int*>(client); }

PotentialMap read_with_vtk(const ByteSource& bytes, const VtiLayout& v, bool* unit_known) {
  // The checks VTK does not make before it reads: every appended array (and, compressed, its
  // block table) within the appended data.
  for (const ArrayInfo& a : v.all_appended) {
    if (v.encoding != "raw") break;  // base64: VTK decodes; sizes are checked after the read
    std::uint64_t end = 0;
    const auto [at, n] = locate(bytes, v, a, &end);
    (void)at;
    check_array_bytes(v, a, n);
  }
  if (v.potential.format == "appended" && v.encoding == "raw") {
    std::uint64_t end = 0;
    const std::uint64_t n = locate(bytes, v, v.potential, &end).second;
    const std::size_t size = v.potential.type == "Float32" ? 4 : 8;
    if (n != static_cast<std::uint64_t>(v.grid.point_count()) * size)
      throw InputError(v.path, v.potential.line,
                       "the potential holds " + std::to_string(n) + " bytes, not " +
                           std::to_string(v.grid.point_count() * size) + " for the grid's points");
  }
  int errors = 0;
  vtkNew<vtkCallbackCommand> on_error;
  on_error->SetCallback(count_error);
  on_error->SetClientData(&errors);
  vtkNew<vtkXMLImageDataReader> reader;
  reader->GlobalWarningDisplayOff();  // VTK's own messages name source files; we report
  reader->AddObserver(vtkCommand::ErrorEvent, on_error);
  reader->GetExecutive()->AddObserver(vtkCommand::ErrorEvent, on_error);
  if (bytes.in_memory()) {
    reader->ReadFromInputStringOn();
    reader->SetInputString(bytes.memory());
  } else {
    reader->SetFileName(bytes.path().c_str());
  }
  reader->Update();
  vtkImageData* image = reader->GetOutput();
  if (errors || image == nullptr)
    throw InputError(v.path, 0, "VTK could not read the image data (corrupt or truncated?)");
  int dims[3];
  image->GetDimensions(dims);
  for (std::size_t a = 0; a < 3; ++a)
    if (dims[a] != v.grid.dims[a]) throw InputError(v.path, 0, "VTK read a grid other than the header's WholeExtent");
  vtkDataArray* potential = image->GetPointData()->GetArray(v.potential.name.c_str());
  const std::size_t points = v.grid.point_count();
  if (potential == nullptr || potential->GetNumberOfComponents() != 1 ||
      static_cast<std::size_t>(potential->GetNumberOfTuples()) != points)
    throw InputError(v.path, v.potential.line, "VTK read no potential of one value per grid point");
  PotentialMap map;
  map.grid = v.grid;
  map.values.resize(points);
  for (std::size_t i = 0; i < points; ++i) {
    const double x = potential->GetComponent(static_cast<vtkIdType>(i), 0);
    if (std::isfinite(x) && std::fabs(x) > std::numeric_limits<float>::max())
      throw InputError(v.path, 0,
                       "the value " + number_text(x) + " at point " + std::to_string(i) +
                           " is beyond the range of a float32 map (±3.4e38)");
    map.values[i] = static_cast<float>(x);
  }
  vtkFieldData* field_data = image->GetFieldData();
  const auto field = [&](const ArrayInfo& f) -> std::string {
    vtkAbstractArray* array = field_data ? field_data->GetAbstractArray(f.name.c_str()) : nullptr;
    if (array == nullptr || array->GetNumberOfTuples() < 1) return {};
    if (auto* strings = vtkStringArray::SafeDownCast(array)) return strings->GetValue(0);
    if (auto* numbers = vtkDataArray::SafeDownCast(array); numbers && f.type == "Float64") {
      const double x = numbers->GetTuple1(0);
      std::string raw(sizeof x, '\0');
      std::memcpy(raw.data(), &x, sizeof x);
      return raw;
    }
    return {};
  };
  std::size_t physics_line = 0;
  const bool known = physics_from_fields(v.path, v.fields, field, map.physics, physics_line);
  if (known) check_read_physics(map.physics, v.path, physics_line);
  if (unit_known) *unit_known = known;
  check_read_values(map, v.path);
  return map;
}

#endif

}  // namespace

PotentialMap read_vti_bytes(const ByteSource& bytes, bool* unit_known) {
  const VtiLayout v = parse_layout(bytes);
  if (!v.needs_vtk) {
    if (v.encoding.empty()) throw InputError(v.path, 0, "the file has no <AppendedData> for its arrays");
    return read_uncompressed(bytes, v, unit_known);
  }
#if ESPGRID_HAVE_VTK
  return read_with_vtk(bytes, v, unit_known);
#else
  throw UsageError("cannot read " + v.path + ": " + v.needs_vtk_because +
                   ", which needs VTK, and this espgrid was built without it; espgrid reads uncompressed .vti with raw "
                   "appended data (what `espgrid map -o x.vti` writes) itself");
#endif
}

}  // namespace espgrid
