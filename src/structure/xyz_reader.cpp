// XYZ reader: count line, comment line, then one atom a line. Plain XYZ must have exactly
// "Element x y z charge"; extended XYZ names its columns in the comment line's Properties
// key, and the charge column may be called charge, charges or initial_charges.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/errors.h"
#include "src/structure/structure_reader.h"

namespace espgrid {
namespace {

struct Column {
  std::string name;
  char type;          // S, R, I or L
  std::size_t first;  // index of its first whitespace field
  std::size_t width;  // number of fields
};

/// Column layout of an atom line: where species, position and charge sit.
struct XyzLayout {
  std::size_t fields = 5;
  std::size_t species = 0;
  bool has_species = true;
  std::size_t pos = 1;
  std::size_t charge = 4;
};

/// Value of `key=` in an extended-XYZ comment line (quotes removed), or "" when absent.
std::string find_key(std::string_view comment, std::string_view key) {
  std::size_t pos = 0;
  while (pos < comment.size()) {
    while (pos < comment.size() && std::isspace(static_cast<unsigned char>(comment[pos]))) ++pos;
    const std::size_t key_start = pos;
    while (pos < comment.size() && comment[pos] != '=' && !std::isspace(static_cast<unsigned char>(comment[pos])))
      ++pos;
    std::string name(comment.substr(key_start, pos - key_start));
    std::string value;
    const bool has_value = pos < comment.size() && comment[pos] == '=';
    if (has_value) {
      ++pos;
      if (pos < comment.size() && (comment[pos] == '"' || comment[pos] == '\'')) {
        const char quote = comment[pos++];
        const std::size_t end = comment.find(quote, pos);
        value = std::string(comment.substr(pos, end == std::string_view::npos ? end : end - pos));
        pos = end == std::string_view::npos ? comment.size() : end + 1;
      } else {
        const std::size_t start = pos;
        while (pos < comment.size() && !std::isspace(static_cast<unsigned char>(comment[pos]))) ++pos;
        value = std::string(comment.substr(start, pos - start));
      }
    }
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // only key=value pairs count: free text may mention the word "properties"
    if (has_value && lower == key) return value.empty() ? std::string(" ") : value;
  }
  return "";
}

XyzLayout parse_properties(const LineSource& lines, const std::string& spec) {
  auto fail = [&](const std::string& what) -> void { lines.fail(what); };
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon == std::string::npos ? colon : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() % 3 != 0) fail("Properties=" + spec + " is not a list of name:type:columns triples");
  std::vector<Column> columns;
  std::size_t field = 0;
  for (std::size_t i = 0; i < parts.size(); i += 3) {
    const std::string& type = parts[i + 1];
    auto width = parse_integer(parts[i + 2]);
    if (type.size() != 1 || std::string_view("SRIL").find(type[0]) == std::string_view::npos)
      fail("Properties column " + espgrid::quoted(parts[i]) + " has unknown type " + espgrid::quoted(type));
    if (!width || *width < 1 || *width > 64)
      fail("Properties column " + espgrid::quoted(parts[i]) + " has a bad column count " +
           espgrid::quoted(parts[i + 2]));
    columns.push_back({parts[i], type[0], field, static_cast<std::size_t>(*width)});
    field += static_cast<std::size_t>(*width);
  }
  XyzLayout layout;
  layout.fields = field;
  layout.has_species = false;
  bool has_pos = false, has_charge = false;
  for (std::size_t i = 0; i < columns.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (columns[i].name == columns[j].name)  // two 'pos' columns were once read as the last one
        fail("Properties names the column " + espgrid::quoted(columns[i].name) + " twice: which one is meant?");
  for (const Column& c : columns) {
    if (c.name == "species" && c.width == 1) {
      layout.species = c.first;
      layout.has_species = true;
    } else if (c.name == "pos") {
      if (c.type != 'R' || c.width != 3) fail("Properties column 'pos' must be R:3");
      layout.pos = c.first;
      has_pos = true;
    } else if (c.name == "charge" || c.name == "charges" || c.name == "initial_charges") {
      if (c.type != 'R' || c.width != 1) fail("Properties column " + espgrid::quoted(c.name) + " must be R:1");
      if (has_charge) fail("Properties names more than one charge column");
      layout.charge = c.first;
      has_charge = true;
    }
  }
  if (!has_pos) fail("Properties=" + spec + " has no 'pos' column");
  if (!has_charge)
    fail("extended XYZ without charges: Properties=" + spec +
         " has no charge, charges or initial_charges column; espgrid needs partial charges");
  return layout;
}

}  // namespace

Structure read_xyz(LineSource& lines) {
  std::optional<std::string_view> line = lines.next();
  if (!line) lines.fail("file is empty");
  std::vector<std::string_view> tokens;
  split_whitespace(*line, tokens);
  if (tokens.size() != 1) lines.fail("the first line of an XYZ file must hold only the atom count");
  const auto count = parse_integer(tokens[0]);
  if (!count) lines.fail("atom count " + espgrid::quoted(tokens[0]) + " is not a whole number");
  if (*count <= 0) lines.fail("atom count is " + std::to_string(*count) + ": no atoms to read");
  const auto n = static_cast<std::size_t>(*count);
  line = lines.next();
  if (!line) throw InputError(lines.path(), 1, "the comment line (line 2) is missing");

  XyzLayout layout;
  const std::string properties = find_key(*line, "properties");
  const bool extended = !properties.empty();
  if (extended) layout = parse_properties(lines, properties);

  Structure result;
  // Never reserve what the count line claims beyond what the file can hold ("H 0 0 0 0" is
  // the shortest atom line): a claim of 10^18 atoms is an error, not an allocation.
  result.atoms.reserve(affordable_atoms(std::min<std::size_t>(n, lines.size_hint() / 10 + 1)));
  for (std::size_t i = 0; i < n; ++i) {
    line = lines.next();
    if (!line)
      throw InputError(lines.path(), 1,
                       "file ends after " + std::to_string(i) + " atoms, but line 1 says " + std::to_string(n));
    split_whitespace(*line, tokens);
    auto fail = [&](const std::string& what) { lines.fail(what); };
    if (tokens.empty())
      fail("blank line where atom " + std::to_string(i + 1) + " of " + std::to_string(n) + " was expected");
    if (!extended && tokens.size() == 4)
      fail(
          "XYZ without charges: 4 fields; espgrid needs 'Element x y z charge' (or an "
          "extended-XYZ Properties key naming a charge column)");
    if (tokens.size() != layout.fields)
      fail("expected " + std::to_string(layout.fields) + " fields" +
           (extended ? std::string(" (from Properties)") : std::string(" (Element x y z charge)")) + ", found " +
           std::to_string(tokens.size()));
    auto number_at = [&](std::size_t field, const char* what) {
      auto value = parse_number(tokens[field]);
      if (!value) fail(std::string(what) + " " + espgrid::quoted(tokens[field]) + " is not a number");
      if (!std::isfinite(*value)) fail(std::string(what) + " " + espgrid::quoted(tokens[field]) + " is not finite");
      return *value;
    };
    const double x = number_at(layout.pos, "x");
    const double y = number_at(layout.pos + 1, "y");
    const double z = number_at(layout.pos + 2, "z");
    const double q = number_at(layout.charge, "charge");
    // The same checks as the PQR reader's and the Python module's (atom_value_problem).
    if (const std::string_view problem = atom_value_problem(AtomField::Charge, q); !problem.empty())
      fail("charge " + espgrid::quoted(tokens[layout.charge]) + " " + std::string(problem));
    const char* const axis[] = {"x", "y", "z"};
    for (std::size_t a = 0; a < 3; ++a)
      if (const std::string_view problem = atom_value_problem(AtomField::Coordinate, a == 0   ? x
                                                                                     : a == 1 ? y
                                                                                              : z);
          !problem.empty())
        fail(std::string(axis[a]) + " " + espgrid::quoted(tokens[layout.pos + a]) + " " + std::string(problem));
    const ElementSymbol element = layout.has_species ? ElementSymbol::from(tokens[layout.species]) : ElementSymbol{};
    result.atoms.push_back(x, y, z, q, bondi_radius(element), element);
  }
  while ((line = lines.next()))
    if (!split_whitespace(*line).empty())
      lines.fail("more lines than the " + std::to_string(n) +
                 " atoms line 1 announces (multi-frame XYZ is not supported)");
  return result;
}

}  // namespace espgrid
