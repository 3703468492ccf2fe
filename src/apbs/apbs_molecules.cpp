#include "src/apbs/apbs_molecules.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/apbs/apbs_tokens.h"
#include "src/core/number_parsing.h"
#include "src/structure/structure_reader.h"

namespace espgrid::apbs {
namespace {

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

/// The file's text; a missing file is an error at the READ line that named it. `base` as for
/// resolve_path: empty when relative paths are the working directory's (said in the message).
std::string read_text(const std::string& path, const std::string& base, const std::string& input_file, std::size_t line,
                      const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ApbsInputError(input_file, line,
                         std::string("cannot open the ") + what + " " + path +
                             (base.empty() && path.front() != '/'
                                  ? " (no such file in the working directory, where APBS reads relative paths)"
                                  : " (no such file)"));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || in.bad()) throw ApbsInputError(input_file, line, std::string("cannot read the ") + what + " " + path);
  return text.str();
}

double finite(TokenStream& tokens, const Token& token, const char* what) {
  const std::optional<double> value = parse_number(token.text);
  if (!value || !std::isfinite(*value))
    throw InputError(tokens.file(), token.line, "'" + token.text + "' is not a number (" + what + ")");
  return *value;
}

/// Whether `text` starts as a whole number does ("12", "-3", "12A"): what APBS's sscanf("%d")
/// accepts.
bool leads_with_integer(std::string_view text) {
  const std::size_t i = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
}

/// APBS's resSeq field: a number (an insertion code may follow it), or a one-letter chain ID
/// then the number, or the two merged ("A1001"); consumes the chain's token when it stands alone.
void skip_residue_number(TokenStream& tokens, std::size_t line) {
  const Token field = tokens.expect("the residue number", line);
  if (leads_with_integer(field.text)) return;
  if (field.text.size() == 1) {
    const Token number = tokens.expect("the residue number", line);
    if (!leads_with_integer(number.text))
      throw InputError(tokens.file(), number.line, "'" + number.text + "' is not a residue number");
    return;
  }
  if (!leads_with_integer(std::string_view(field.text).substr(1)))
    throw InputError(tokens.file(), field.line, "'" + field.text + "' is not a residue number");
}

}  // namespace

std::string resolve_path(const std::string& path, const std::string& base) {
  if (base.empty() || path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(base) / path).string();
}

const AtomParameters::Entry* AtomParameters::find(const std::string& residue, const std::string& atom) const {
  const std::string r = upper(residue), a = upper(atom);
  // APBS takes the first block of entries of the residue, then the atom within it.
  for (const Entry& e : entries)
    if (e.residue == r) {
      for (const Entry& f : entries)
        if (f.residue == r && f.atom == a) return &f;
      return nullptr;
    }
  return nullptr;
}

AtomParameters read_flat_parameters(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "cannot open the parameter file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_flat_parameters(text.str(), path);
}

AtomParameters parse_flat_parameters(const std::string& content, const std::string& path) {
  AtomParameters parameters;
  parameters.path = path;
  TokenStream tokens(content, path);
  while (std::optional<Token> residue = tokens.next()) {
    AtomParameters::Entry e;
    e.residue = upper(residue->text);
    e.atom = upper(tokens.expect("a parameter entry (RESIDUE ATOM CHARGE RADIUS EPSILON)", residue->line).text);
    e.charge = finite(tokens, tokens.expect("the charge", residue->line), "an atom's charge");
    e.radius = finite(tokens, tokens.expect("the radius", residue->line), "an atom's radius");
    finite(tokens, tokens.expect("the well depth", residue->line), "an atom's well depth");
    if (e.radius < 0) throw InputError(path, residue->line, "a negative radius");
    parameters.entries.push_back(std::move(e));
  }
  if (parameters.entries.empty()) throw InputError(path, 1, "the parameter file has no entries");
  return parameters;
}

Atoms read_apbs_atoms(const std::string& text, const std::string& file, bool pqr, const AtomParameters* parameters) {
  Atoms atoms;
  TokenStream tokens(text, file, kMoleculeWhitespace);
  while (std::optional<Token> record = tokens.next()) {
    const std::string kind = upper(record->text);
    if (kind != "ATOM" && kind != "HETATM") continue;  // APBS skips every other word
    const std::size_t line = record->line;
    tokens.expect("the atom's serial number", line);
    const Token name = tokens.expect("the atom name", line);
    const Token residue = tokens.expect("the residue name", line);
    skip_residue_number(tokens, line);
    // One field that is no number may stand before x (an insertion code), as APBS allows.
    Token x = tokens.expect("x", line);
    if (!parse_number(x.text)) x = tokens.expect("x", line);
    const double px = finite(tokens, x, "x");
    const double py = finite(tokens, tokens.expect("y", line), "y");
    const double pz = finite(tokens, tokens.expect("z", line), "z");
    double charge = 0, radius = 0;
    if (pqr) {
      charge = finite(tokens, tokens.expect("the charge", line), "the charge");
      radius = finite(tokens, tokens.expect("the radius", line), "the radius");
    }
    if (parameters) {
      const AtomParameters::Entry* entry = parameters->find(residue.text, name.text);
      if (!entry)
        throw InputError(
            file, line,
            "no parameters for atom " + name.text + " of residue " + residue.text + " in " + parameters->path);
      charge = entry->charge;
      radius = entry->radius;
    }
    for (auto [field, value] : {std::pair{AtomField::Coordinate, px},
                                {AtomField::Coordinate, py},
                                {AtomField::Coordinate, pz},
                                {AtomField::Charge, charge},
                                {AtomField::Radius, radius}})
      if (const std::string_view problem = atom_value_problem(field, value); !problem.empty())
        throw InputError(file, line, "the atom's value " + std::to_string(value) + " " + std::string(problem));
    atoms.push_back(px, py, pz, charge, radius);
  }
  if (atoms.empty()) throw InputError(file, tokens.line(), "no ATOM or HETATM records");
  return atoms;
}

std::vector<Molecule> load_molecules(const ApbsInput& input, const std::string& base,
                                     std::vector<std::string>& notices) {
  std::optional<AtomParameters> parameters;
  if (input.parameters) {
    const std::string path = resolve_path(input.parameters->path, base);
    parameters =
        parse_flat_parameters(read_text(path, base, input.file, input.parameters->line, "parameter file"), path);
  }
  std::vector<Molecule> molecules;
  for (const MoleculeInput& mol : input.molecules) {
    Molecule m;
    m.path = resolve_path(mol.path, base);
    if (mol.format == MoleculeFormat::Pdb && !parameters)
      throw ApbsInputError(input.file, mol.line,
                           "mol pdb needs a parameter file for its charges and radii (parm flat FILE in READ)");
    if (mol.format == MoleculeFormat::Pqr && !parameters) {
      read_text(m.path, base, input.file, mol.line, "molecule");  // names the READ line when missing
      Structure s = read_structure(m.path, StructureFormat::Pqr);
      for (std::string& n : s.notices) notices.push_back(m.path + ": " + n);
      m.atoms = std::move(s.atoms);
    } else {
      const std::string text = read_text(m.path, base, input.file, mol.line, "molecule");
      m.atoms = read_apbs_atoms(text, m.path, mol.format == MoleculeFormat::Pqr, parameters ? &*parameters : nullptr);
    }
    const BoundingBox box = bounding_box(m.atoms);
    for (int j = 0; j < 3; ++j) m.center[j] = 0.5 * (box.lo[j] + box.hi[j]);
    molecules.push_back(std::move(m));
  }
  return molecules;
}

}  // namespace espgrid::apbs
