// PQR reader. Accepts the whitespace form APBS reads and PDB2PQR's fixed-column output, in
// which %8.3f coordinates can run together ("-45.751-100.406"). Fields are taken from the
// right end of the record (x y z charge radius), so an optional chain ID or an insertion
// code does not shift them. A merged token is split only where the fixed-column layout
// makes the split unambiguous (every piece has exactly three decimals); anything else is
// reported, never guessed.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/errors.h"
#include "src/io/structure_reader.h"

namespace espgrid {
namespace {

// PDB record names that carry no atoms; a PQR may keep any of them from its PDB source.
constexpr std::array<std::string_view, 56> kIgnoredRecords = {
    "HEADER", "OBSLTE", "TITLE",  "SPLIT",  "CAVEAT", "COMPND", "SOURCE", "KEYWDS", "EXPDTA", "NUMMDL",
    "MDLTYP", "AUTHOR", "REVDAT", "SPRSDE", "JRNL",   "REMARK", "DBREF",  "DBREF1", "DBREF2", "SEQADV",
    "SEQRES", "MODRES", "HET",    "HETNAM", "HETSYN", "FORMUL", "HELIX",  "SHEET",  "SSBOND", "LINK",
    "CISPEP", "SITE",   "CRYST1", "ORIGX1", "ORIGX2", "ORIGX3", "SCALE1", "SCALE2", "SCALE3", "MTRIX1",
    "MTRIX2", "MTRIX3", "ANISOU", "TER",    "CONECT", "MASTER", "END",    "SIGATM", "SIGUIJ", "LINKR",
    "HYDBND", "SLTBRG", "TURN",   "FTNOTE", "USER",   "EXPDAT"};

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool all_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// "ATOM", "HETATM", or a serial number run into them ("HETATM12345"); "" otherwise.
std::string_view atom_record(std::string_view first_token) {
  const std::string up = upper(first_token.substr(0, std::min<std::size_t>(first_token.size(), 6)));
  if (up.rfind("HETATM", 0) == 0 && all_digits(first_token.substr(6))) return "HETATM";
  if (up.rfind("ATOM", 0) == 0 && all_digits(first_token.substr(4))) return "ATOM";
  return "";
}

bool is_ignored_record(std::string_view line, std::string_view first_token) {
  const std::string key = upper(first_token);
  if (std::find(kIgnoredRecords.begin(), kIgnoredRecords.end(), key) != kIgnoredRecords.end()) return true;
  // Column-based record names can run into their data (e.g. "REMARK350").
  std::string_view head = line.substr(0, std::min<std::size_t>(line.size(), 6));
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  const std::string head_up = upper(head);
  return std::find(kIgnoredRecords.begin(), kIgnoredRecords.end(), head_up) != kIgnoredRecords.end();
}

/// Splits a token of %8.3f numbers that ran together ("-45.751-100.406", "1.0001234.567").
/// Returns an empty vector when the token is not made of such pieces only.
std::vector<double> split_fixed_columns(std::string_view token) {
  std::vector<double> pieces;
  std::size_t pos = 0;
  while (pos < token.size()) {
    const std::size_t start = pos;
    if (token[pos] == '-') ++pos;
    const std::size_t int_start = pos;
    while (pos < token.size() && std::isdigit(static_cast<unsigned char>(token[pos]))) ++pos;
    if (pos == int_start || pos >= token.size() || token[pos] != '.') return {};
    ++pos;
    for (int d = 0; d < 3; ++d, ++pos)
      if (pos >= token.size() || !std::isdigit(static_cast<unsigned char>(token[pos]))) return {};
    auto value = parse_number(token.substr(start, pos - start));
    if (!value) return {};
    pieces.push_back(*value);
  }
  return pieces.size() >= 2 ? pieces : std::vector<double>{};
}

/// The element of a PDB atom name, for drawing: leading digits dropped ("1HB" is hydrogen);
/// two letters when the residue is named like the atom (ions: CA in CA is calcium, CL, MG, ZN,
/// NA), otherwise the first letter (CA in a protein residue is a carbon).
ElementSymbol element_of(std::string_view name, std::string_view residue) {
  std::size_t start = 0;
  while (start < name.size() && std::isdigit(static_cast<unsigned char>(name[start]))) ++start;
  const std::string_view letters = name.substr(start);
  if (letters.empty()) return {};
  if (letters.size() >= 2 && upper(name) == upper(residue)) return ElementSymbol::from(letters.substr(0, 2));
  return ElementSymbol::from(letters.substr(0, 1));
}

bool looks_like_coordinate(std::string_view token) {
  return token.find('.') != std::string_view::npos || token.find_first_of("eE") != std::string_view::npos;
}

class PqrLineParser {
 public:
  PqrLineParser(const TextLines& text, std::size_t line_number) : text_(text), line_number_(line_number) {}

  [[noreturn]] void fail(const std::string& what) const { throw InputError(text_.path(), line_number_, what); }

  double finite(std::string_view token, const char* what) const {
    auto value = parse_number(token);
    if (!value) fail(std::string(what) + " " + quoted(token) + " is not a number");
    if (!std::isfinite(*value)) fail(std::string(what) + " " + quoted(token) + " is not finite");
    return *value;
  }

  void parse(const std::vector<std::string_view>& tokens, std::string_view record, Atoms& atoms) {
    // Built only for a message: one string per atom was a measurable part of reading millions.
    const auto usage = [record] {
      return "; an " + std::string(record) + " record needs serial name resName [chain] resSeq x y z charge radius";
    };
    if (tokens.size() < 6) fail("too few fields (" + std::to_string(tokens.size()) + ")" + usage());
    const std::size_t n = tokens.size();
    const double radius = finite(tokens[n - 1], "radius");
    const double charge = finite(tokens[n - 2], "charge");
    if (radius < 0) fail("radius " + quoted(tokens[n - 1]) + " is negative");
    if (radius > kMaxRadius) fail("radius " + quoted(tokens[n - 1]) + " is implausible (over 100 Å)");
    if (std::fabs(charge) > kMaxCharge) fail("charge " + quoted(tokens[n - 2]) + " is implausible (beyond ±1000 e)");

    // Walk left collecting exactly three coordinates.
    std::array<double, 3> coords{};  // right to left
    std::size_t ncoords = 0;
    std::size_t next = n - 2;  // index one past the next token to take
    while (ncoords < 3) {
      if (next <= 1) fail("too few fields: fewer than three coordinates" + usage());
      std::string_view token = tokens[--next];
      if (auto value = parse_number(token)) {
        if (std::isfinite(*value) && !looks_like_coordinate(token))  // "inf" is reported below
          fail("expected a coordinate but found " + quoted(token) + " (no decimal point): is a field missing?" +
               usage());
        if (!std::isfinite(*value)) fail("coordinate " + quoted(token) + " is not finite");
        coords[ncoords++] = *value;
        continue;
      }
      std::vector<double> pieces = split_fixed_columns(token);
      if (pieces.empty()) fail("coordinate " + quoted(token) + " is not a number");
      if (ncoords + pieces.size() > 3)
        fail("cannot split " + quoted(token) + " into the remaining coordinates" + usage());
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) coords[ncoords++] = *it;
    }
    // serial, name, resName, resSeq before the coordinates (the serial may be run into the
    // record name, as PDB's columns allow for serials of 5 digits).
    const std::size_t before = next - 1;
    const bool serial_merged = tokens[0].size() > record.size();
    if (before + (serial_merged ? 1 : 0) < 4) fail("too few fields before the coordinates" + usage());
    for (double c : coords)
      if (std::fabs(c) > kMaxCoordinate)
        fail("coordinate " + std::to_string(c) + " is beyond ±1e6 Å; check the file's units");
    const std::size_t name_at = serial_merged ? 1 : 2;
    atoms.push_back(coords[2], coords[1], coords[0], charge, radius, element_of(tokens[name_at], tokens[name_at + 1]));
  }

 private:
  const TextLines& text_;
  std::size_t line_number_;
};

}  // namespace

Structure read_pqr(const TextLines& text) {
  Structure result;
  int models_seen = 0;
  bool first_model_closed = false;
  std::size_t skipped_atoms = 0;
  for (std::size_t number = 1; number <= text.count(); ++number) {
    const std::string_view line = text.line(number);
    const auto tokens = split_whitespace(line);
    if (tokens.empty() || tokens[0].front() == '#') continue;
    const std::string_view record = atom_record(tokens[0]);
    if (!record.empty()) {
      if (first_model_closed) {
        ++skipped_atoms;
        continue;
      }
      PqrLineParser(text, number).parse(tokens, record, result.atoms);
      continue;
    }
    const std::string key = upper(tokens[0]);
    if (key == "MODEL") {
      if (++models_seen > 1) first_model_closed = true;  // a MODEL without ENDMDL before it
      continue;
    }
    if (key == "ENDMDL") {
      first_model_closed = true;
      continue;
    }
    if (is_ignored_record(line, tokens[0])) continue;
    throw InputError(text.path(), number,
                     "unknown record " + quoted(tokens[0]) +
                         "; a PQR file holds ATOM/HETATM records (and PDB records such as "
                         "REMARK, TER, END)");
  }
  if (result.atoms.empty())
    throw InputError(text.path(), text.count() == 0 ? 1 : text.count(),
                     text.empty() ? "file is empty" : "no ATOM or HETATM records: no atoms to read");
  if (models_seen > 1)
    result.notices.push_back(text.path() + ": " + std::to_string(models_seen) + " MODELs; used the first (" +
                             std::to_string(skipped_atoms) + " atoms of later models ignored)");
  return result;
}

}  // namespace espgrid
