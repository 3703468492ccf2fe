// PQR reader. The accepted record layouts, fields separated by whitespace (PDB2PQR's fixed
// columns, APBS's free form, and the PQR writers of Biopython and MDAnalysis all fit):
//
//   ATOM|HETATM serial name resName [chainID] resSeq[iCode] [iCode] x y z charge radius [element]
//
// serial may be run into the record name ("HETATM12345") and chainID into resSeq ("A1000"), as
// PDB's columns allow; element is a symbol of the periodic table (Biopython writes one after the
// radius). Anything else is refused at its line: a field too many or too few shifts every
// number, and a radius read as a charge gives a wrong map with no other sign. In PDB2PQR's
// columns %8.3f coordinates can run together ("-45.751-100.406"); a merged token is split only
// where every piece has exactly three decimals, never guessed.
//
// Models: without MODEL records every atom is read. With them, the first model is read and
// later ones are skipped with a notice; atoms outside MODEL/ENDMDL, an ENDMDL without its MODEL
// and a MODEL after atoms that belong to no model are refused (each once dropped or merged atoms
// silently).
#include <omp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/structure/pqr_ranges.h"
#include "src/structure/structure_reader.h"

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

/// ASCII case-insensitive comparison, without building upper-case copies (once per record of
/// a file of millions).
bool same_letters(std::string_view a, std::string_view b) {
  const auto up = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (up(a[i]) != up(b[i])) return false;
  return true;
}

/// Whether `name` is one of `names`, in any case.
template <std::size_t N>
bool one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return same_letters(name, n); });
}

/// "ATOM", "HETATM", or a serial number run into them ("HETATM12345"); "" otherwise.
std::string_view atom_record(std::string_view first_token) {
  if (first_token.size() >= 6 && same_letters(first_token.substr(0, 6), "HETATM") &&
      (first_token.size() == 6 || whole_digits(first_token.substr(6))))
    return "HETATM";
  if (first_token.size() >= 4 && same_letters(first_token.substr(0, 4), "ATOM") &&
      (first_token.size() == 4 || whole_digits(first_token.substr(4))))
    return "ATOM";
  return "";
}

bool is_ignored_record(std::string_view line, std::string_view first_token) {
  if (one_of(first_token, kIgnoredRecords)) return true;
  // Column-based record names can run into their data (e.g. "REMARK350").
  std::string_view head = line.substr(0, std::min<std::size_t>(line.size(), 6));
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  return one_of(head, kIgnoredRecords);
}

/// What a line of a PQR file is, by its first token: the one rule of read_pqr and of
/// read_plain_pqr_atoms (which must take the same lines for atoms).
enum class PqrLine {
  Skipped,   ///< blank, a comment ('#'), or a record that carries no atoms (REMARK, TER, ...)
  Atom,      ///< ATOM or HETATM (`record` says which)
  Model,     ///< MODEL
  EndModel,  ///< ENDMDL
  Unknown,   ///< anything else: refused
};
PqrLine pqr_line(std::string_view line, std::string_view first, std::string_view& record) {
  if (first.empty() || first.front() == '#') return PqrLine::Skipped;
  record = atom_record(first);
  if (!record.empty()) return PqrLine::Atom;
  if (same_letters(first, "MODEL")) return PqrLine::Model;
  if (same_letters(first, "ENDMDL")) return PqrLine::EndModel;
  return is_ignored_record(line, first) ? PqrLine::Skipped : PqrLine::Unknown;
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
  if (letters.size() >= 2 && same_letters(name, residue)) return ElementSymbol::from(letters.substr(0, 2));
  return ElementSymbol::from(letters.substr(0, 1));
}

bool looks_like_coordinate(std::string_view token) {
  return token.find('.') != std::string_view::npos || token.find_first_of("eE") != std::string_view::npos;
}

bool is_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/// A residue number as PDB writes it: optional chain letter run into it ("A1000"), optional
/// minus, digits, optional insertion code ("52A").
bool is_residue_number(std::string_view token) {
  if (!token.empty() && is_letter(token.front()) && token.size() > 1 && !is_letter(token[1])) token.remove_prefix(1);
  if (!token.empty() && is_letter(token.back())) token.remove_suffix(1);
  if (!token.empty() && token.front() == '-') token.remove_prefix(1);
  return whole_digits(token);
}

/// Symbols of the periodic table (upper case), plus D (deuterium) and X (unknown), as written
/// in PDB's element column.
constexpr std::array<std::string_view, 120> kElements = {
    "H",  "HE", "LI", "BE", "B",  "C",  "N",  "O",  "F",  "NE", "NA", "MG", "AL", "SI", "P",  "S",  "CL", "AR",
    "K",  "CA", "SC", "TI", "V",  "CR", "MN", "FE", "CO", "NI", "CU", "ZN", "GA", "GE", "AS", "SE", "BR", "KR",
    "RB", "SR", "Y",  "ZR", "NB", "MO", "TC", "RU", "RH", "PD", "AG", "CD", "IN", "SN", "SB", "TE", "I",  "XE",
    "CS", "BA", "LA", "CE", "PR", "ND", "PM", "SM", "EU", "GD", "TB", "DY", "HO", "ER", "TM", "YB", "LU", "HF",
    "TA", "W",  "RE", "OS", "IR", "PT", "AU", "HG", "TL", "PB", "BI", "PO", "AT", "RN", "FR", "RA", "AC", "TH",
    "PA", "U",  "NP", "PU", "AM", "CM", "BK", "CF", "ES", "FM", "MD", "NO", "LR", "RF", "DB", "SG", "BH", "HS",
    "MT", "DS", "RG", "CN", "NH", "FL", "MC", "LV", "TS", "OG", "D",  "X"};

/// An element symbol in the field after the radius (Biopython's PQR writer puts one there).
bool is_element_field(std::string_view token) {
  if (token.empty() || token.size() > 2 || !std::all_of(token.begin(), token.end(), is_letter)) return false;
  return one_of(token, kElements);
}

/// The label of a record: `number` is the residue number token as is_residue_number accepts it
/// (a chain letter run into it, an insertion code after it).
AtomLabel label_of(std::string_view name, std::string_view residue, std::string_view chain, std::string_view number,
                   char insertion) {
  if (number.size() > 1 && is_letter(number.front()) && !is_letter(number[1])) {
    if (chain.empty()) chain = number.substr(0, 1);
    number.remove_prefix(1);
  }
  if (!number.empty() && is_letter(number.back())) {
    if (insertion == '\0') insertion = number.back();
    number.remove_suffix(1);
  }
  const auto value = parse_integer(number);
  const auto clamped = value ? std::clamp<long long>(*value, std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max())
                             : 0;
  return AtomLabel::make(name, residue, chain, static_cast<std::int32_t>(clamped), insertion);
}

/// Reads the fields of one ATOM/HETATM record.
class PqrLineParser {
 public:
  PqrLineParser(const std::string& path, std::size_t line, std::string_view record)
      : path_(path), line_(line), record_(record) {}

  [[noreturn]] void fail(const std::string& what) const { throw InputError(path_, line_, what); }

  /// The accepted layouts, for messages (built only then: a string per atom was a measurable
  /// part of reading millions).
  std::string usage() const {
    return "; an " + std::string(record_) +
           " record is: serial name resName [chainID] resSeq[iCode] x y z charge radius [element]";
  }

  double finite(std::string_view token, const char* what) const {
    auto value = parse_number(token);
    if (!value) fail(std::string(what) + " " + espgrid::quoted(token) + " is not a number");
    if (!std::isfinite(*value)) fail(std::string(what) + " " + espgrid::quoted(token) + " is not finite");
    return *value;
  }

  /// A number checked as an atom's `field` (atom_value_problem: the Python module's checks too).
  double checked(std::string_view token, const char* what, AtomField field) const {
    const double value = finite(token, what);
    if (const std::string_view problem = atom_value_problem(field, value); !problem.empty())
      fail(std::string(what) + " " + espgrid::quoted(token) + " " + std::string(problem));
    return value;
  }

  void parse(const std::vector<std::string_view>& tokens, Atoms& atoms, std::vector<AtomLabel>& labels) const {
    std::size_t n = tokens.size();
    std::optional<ElementSymbol> element;
    if (n > 1 && is_element_field(tokens[n - 1])) element = ElementSymbol::from(tokens[--n]);
    if (n < 6) fail("too few fields (" + std::to_string(tokens.size()) + ")" + usage());
    const double radius = checked(tokens[n - 1], "radius", AtomField::Radius);
    const double charge = checked(tokens[n - 2], "charge", AtomField::Charge);

    // Walk left collecting exactly three coordinates.
    std::array<double, 3> coords{};  // right to left
    std::size_t ncoords = 0;
    std::size_t next = n - 2;  // index one past the next token to take
    while (ncoords < 3) {
      if (next <= 1) fail("too few fields: fewer than three coordinates" + usage());
      std::string_view token = tokens[--next];
      if (auto value = parse_number(token)) {
        if (std::isfinite(*value) && !looks_like_coordinate(token))  // "inf" is reported below
          fail("expected a coordinate but found " + espgrid::quoted(token) +
               " (no decimal point): is a field missing?" + usage());
        if (!std::isfinite(*value)) fail("coordinate " + espgrid::quoted(token) + " is not finite");
        coords[ncoords++] = *value;
        continue;
      }
      std::vector<double> pieces = split_fixed_columns(token);
      if (pieces.empty()) fail("coordinate " + espgrid::quoted(token) + " is not a number");
      if (ncoords + pieces.size() > 3)
        fail("cannot split " + espgrid::quoted(token) + " into the remaining coordinates" + usage());
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) coords[ncoords++] = *it;
    }
    for (double c : coords)
      if (const std::string_view problem = atom_value_problem(AtomField::Coordinate, c); !problem.empty())
        fail("coordinate " + number_text(c) + " " + std::string(problem));

    // Before the coordinates: [serial] name resName [chainID] resSeq[iCode] [iCode]. The serial
    // may be run into the record name, as PDB's columns allow for serials of 5 digits.
    const bool serial_merged = tokens[0].size() > record_.size();
    const std::size_t name_at = serial_merged ? 1 : 2;
    if (!serial_merged && !whole_digits(tokens[1]))
      fail("serial number " + espgrid::quoted(tokens[1]) + " is not a whole number" + usage());
    if (next < name_at + 3) fail("too few fields before the coordinates" + usage());
    const std::size_t residue_fields = next - name_at;  // name resName [chainID] resSeq [iCode]
    if (residue_fields > 5)
      fail("too many fields (" + std::to_string(tokens.size()) + "): " + std::to_string(residue_fields) +
           " between the serial number and the coordinates, at most 5" + usage());
    // The residue number sits right before the coordinates, or before a one-letter insertion code.
    std::string_view residue_number = tokens[next - 1];
    const bool insertion_code = residue_fields > 3 && residue_number.size() == 1 && is_letter(residue_number[0]);
    if (insertion_code) residue_number = tokens[next - 2];
    if (residue_fields == 5 && !insertion_code)
      fail("too many fields (" + std::to_string(tokens.size()) + ") between the serial number and the coordinates" +
           usage());
    if (!is_residue_number(residue_number))
      fail("expected the residue number before the coordinates but found " + espgrid::quoted(residue_number) +
           (looks_like_coordinate(residue_number) ? ": is there a field too many after the radius?" : "") + usage());
    atoms.push_back(coords[2], coords[1], coords[0], charge, radius,
                    element ? *element : element_of(tokens[name_at], tokens[name_at + 1]));
    const std::string_view chain =
        residue_fields == 5 || (residue_fields == 4 && !insertion_code) ? tokens[name_at + 2] : std::string_view();
    labels.push_back(label_of(tokens[name_at], tokens[name_at + 1], chain, residue_number,
                              insertion_code ? tokens[next - 1][0] : '\0'));
  }

 private:
  const std::string& path_;
  std::size_t line_;
  std::string_view record_;
};

/// A run of ATOM/HETATM lines copied out of the file, parsed on a worker thread: the split
/// into fields and the numbers are most of a PQR's reading time (0.4 of 0.56 s for 1.6 M atoms
/// on one core), the line splitting and the records' order are not and stay serial.
struct AtomBatch {
  static constexpr std::size_t kLines = 8192;
  std::string text;                       ///< the lines, back to back
  std::vector<std::size_t> ends;          ///< end of each line in `text`
  std::vector<std::size_t> line_numbers;  ///< each line's number in the file
  std::vector<std::string_view> records;  ///< each line's record name ("ATOM", "HETATM")
  Atoms atoms;
  std::vector<AtomLabel> labels;
  std::exception_ptr error;  ///< the first line that failed (parsing stops there)

  void add(std::string_view line, std::size_t number, std::string_view record) {
    text.append(line);
    ends.push_back(text.size());
    line_numbers.push_back(number);
    records.push_back(record);
  }
  std::size_t size() const noexcept { return ends.size(); }

  void parse(const std::string& path) {
    atoms.reserve(size());
    labels.reserve(size());
    std::vector<std::string_view> tokens;
    std::size_t begin = 0;
    try {
      for (std::size_t i = 0; i < size(); begin = ends[i++]) {
        split_whitespace(std::string_view(text).substr(begin, ends[i] - begin), tokens);
        PqrLineParser(path, line_numbers[i], records[i]).parse(tokens, atoms, labels);
      }
    } catch (...) {
      error = std::current_exception();
    }
  }
};

/// Throws the first batch's error in file order, or appends every batch's atoms in file order.
void join_batches(std::deque<AtomBatch>& batches, Atoms& out, std::vector<AtomLabel>& labels) {
  for (const AtomBatch& batch : batches)
    if (batch.error) std::rethrow_exception(batch.error);
  for (AtomBatch& batch : batches) {
    const Atoms& a = batch.atoms;
    out.x.insert(out.x.end(), a.x.begin(), a.x.end());
    out.y.insert(out.y.end(), a.y.begin(), a.y.end());
    out.z.insert(out.z.end(), a.z.begin(), a.z.end());
    out.charge.insert(out.charge.end(), a.charge.begin(), a.charge.end());
    out.radius.insert(out.radius.end(), a.radius.begin(), a.radius.end());
    out.element.insert(out.element.end(), a.element.begin(), a.element.end());
    labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
    batch = AtomBatch{};  // free as we go
  }
}

/// Threads for a file of `size_hint` bytes (0: unknown, a pipe or gzip): one below 4 MiB (about
/// 50,000 atoms: a team would cost more than it saves), else up to 8.
int reading_threads(std::size_t size_hint) {
  if (size_hint > 0 && size_hint < (std::size_t{4} << 20)) return 1;
  return std::max(1, std::min(8, omp_get_max_threads()));
}

}  // namespace

bool read_plain_pqr_atoms(LineSource& lines, Atoms& atoms, std::vector<AtomLabel>& labels) {
  std::vector<std::string_view> tokens;
  try {
    while (const std::optional<std::string_view> line = lines.next()) {
      std::string_view record;
      const PqrLine kind = pqr_line(*line, first_token(*line), record);
      if (kind == PqrLine::Skipped) continue;
      if (kind != PqrLine::Atom) return false;  // MODEL, ENDMDL, an unknown record: read_pqr's rules decide
      split_whitespace(*line, tokens);
      PqrLineParser(lines.path(), lines.line_number(), record).parse(tokens, atoms, labels);
    }
  } catch (const InputError&) {
    return false;  // read_pqr names it, at its line in the whole file
  }
  return true;
}

Structure read_pqr(LineSource& lines) {
  Structure result;
  // Most PQR records are 60 to 80 bytes: reserving for the file's size spares the copies of
  // growing five arrays (a quarter of the time of reading millions of atoms).
  result.atoms.reserve(affordable_atoms(lines.size_hint() / 64));
  result.labels.reserve(result.atoms.x.capacity());
  int models_seen = 0;
  bool in_model = false;
  std::size_t skipped_atoms = 0;
  std::size_t atom_lines = 0;     // ATOM/HETATM lines kept so far (parsed later, in batches)
  std::deque<AtomBatch> batches;  // a deque: a batch being parsed never moves
  const std::string& path = lines.path();
  // This thread reads the lines and checks the records' order; full batches of atom lines are
  // parsed by the team's other threads meanwhile (OpenMP tasks). A defect found here is thrown
  // only after the atom lines before it were parsed, so the first defect of the file is the one
  // reported, as a line-by-line reader would.
  std::exception_ptr order_error;
#pragma omp parallel num_threads(reading_threads(lines.size_hint()))
#pragma omp single
  {
    try {
      while (const std::optional<std::string_view> line = lines.next()) {
        const std::string_view first = first_token(*line);
        std::string_view record;
        const PqrLine kind = pqr_line(*line, first, record);
        if (kind == PqrLine::Skipped) continue;
        if (kind == PqrLine::Atom) {
          if (models_seen > 0 && !in_model)
            lines.fail(std::string(record) + " record after ENDMDL, outside any MODEL: which model does it belong to?");
          if (models_seen > 1) {
            ++skipped_atoms;
            continue;
          }
          if (batches.empty()) batches.emplace_back();
          batches.back().add(*line, lines.line_number(), record);
          if (batches.back().size() == AtomBatch::kLines) {
            AtomBatch* full = &batches.back();
#pragma omp task firstprivate(full) shared(path)
            full->parse(path);
            batches.emplace_back();
          }
          ++atom_lines;
          continue;
        }
        if (kind == PqrLine::Model) {
          if (models_seen == 0 && atom_lines > 0)
            lines.fail("MODEL after " + std::to_string(atom_lines) +
                       " atoms that belong to no model: put every atom inside MODEL/ENDMDL, or remove MODEL");
          ++models_seen;  // a MODEL without ENDMDL before it closes the one before
          in_model = true;
          continue;
        }
        if (kind == PqrLine::EndModel) {
          if (!in_model)
            lines.fail(
                "ENDMDL without a MODEL before it: the atoms after it would belong to no model; remove it or "
                "add the MODEL record");
          in_model = false;
          continue;
        }
        std::string what = "unknown record " + espgrid::quoted(first);
        if (first.substr(0, 3) == "\xEF\xBB\xBF")
          what +=
              " (it starts with a UTF-8 byte-order mark, EF BB BF, in the middle of the file: were two files joined?)";
        lines.fail(what + "; a PQR file holds ATOM/HETATM records (and PDB records such as REMARK, TER, END)");
      }
    } catch (...) {                            // a record out of order, binary data, an overlong line, a read error
      order_error = std::current_exception();  // thrown once the atom lines before it are checked
    }
    if (!batches.empty() && batches.back().size() < AtomBatch::kLines) batches.back().parse(path);  // the last
  }  // the team's barrier: every task has finished
  join_batches(batches, result.atoms, result.labels);
  if (order_error) std::rethrow_exception(order_error);
  if (result.atoms.empty()) lines.fail(lines.empty() ? "file is empty" : "no ATOM or HETATM records: no atoms to read");
  if (models_seen > 1)
    result.notices.push_back(lines.path() + ": " + std::to_string(models_seen) + " MODELs; used the first (" +
                             std::to_string(skipped_atoms) + " atoms of later models ignored)");
  return result;
}

}  // namespace espgrid
