#include "src/structure/pdb_records.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>

#include "src/core/number_parsing.h"
#include "src/core/text_format.h"

namespace espgrid {
namespace {

std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

std::string_view columns(std::string_view line, std::size_t from, std::size_t count) {
  if (line.size() <= from) return {};
  return line.substr(from, count);
}

/// Element symbols of the periodic table, upper case.
constexpr std::array<std::string_view, 118> kSymbols = {
    "H",  "HE", "LI", "BE", "B",  "C",  "N",  "O",  "F",  "NE", "NA", "MG", "AL", "SI", "P",  "S",  "CL",
    "AR", "K",  "CA", "SC", "TI", "V",  "CR", "MN", "FE", "CO", "NI", "CU", "ZN", "GA", "GE", "AS", "SE",
    "BR", "KR", "RB", "SR", "Y",  "ZR", "NB", "MO", "TC", "RU", "RH", "PD", "AG", "CD", "IN", "SN", "SB",
    "TE", "I",  "XE", "CS", "BA", "LA", "CE", "PR", "ND", "PM", "SM", "EU", "GD", "TB", "DY", "HO", "ER",
    "TM", "YB", "LU", "HF", "TA", "W",  "RE", "OS", "IR", "PT", "AU", "HG", "TL", "PB", "BI", "PO", "AT",
    "RN", "FR", "RA", "AC", "TH", "PA", "U",  "NP", "PU", "AM", "CM", "BK", "CF", "ES", "FM", "MD", "NO",
    "LR", "RF", "DB", "SG", "BH", "HS", "MT", "DS", "RG", "CN", "NH", "FL", "MC", "LV", "TS", "OG"};

bool is_symbol(std::string_view s) {
  const std::string u = ascii_upper(s);
  return u == "D" || std::find(kSymbols.begin(), kSymbols.end(), u) != kSymbols.end();
}

}  // namespace

bool PdbAtom::hydrogen() const {
  const std::string e = element.text();
  return e == "H" || e == "D";
}

ElementSymbol pdb_element(std::string_view line) {
  const std::string element = trimmed(columns(line, 76, 2));
  if (!element.empty() && std::all_of(element.begin(), element.end(), [](char c) { return std::isalpha(c); }) &&
      is_symbol(element))
    return ElementSymbol::from(element);
  // Columns 13-14: the symbol right-justified (" C1 ", "ZN  ", "1HB "): a name that starts in
  // column 14 is a one-letter element; one that starts in column 13 a two-letter element, or a
  // hydrogen with a four-character name ("HG21" is hydrogen, "HG  " mercury).
  const std::string_view name = columns(line, 12, 4);
  if (name.size() < 2) return ElementSymbol::from(trimmed(name));
  const auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  const char first = name[0], second = name[1];
  if (letter(first)) {
    const bool hydrogen_name = first == 'H' && name.size() == 4 && name[3] != ' ';
    if (letter(second) && is_symbol(std::string{first, second}) && !hydrogen_name)
      return ElementSymbol::from(std::string{first, second});
    return ElementSymbol::from(std::string(1, first));
  }
  if (letter(second)) return ElementSymbol::from(std::string(1, second));
  return ElementSymbol::from(trimmed(name).substr(0, 1));
}

std::vector<PdbAtom> read_pdb_atoms(const std::string& text) {
  std::istringstream in(text);
  return read_pdb_atoms(in);
}

std::vector<PdbAtom> read_pdb_atoms(std::istream& in) {
  std::vector<PdbAtom> atoms;
  std::map<std::string, std::size_t> seen;  // residue/name -> index: later alternate locations join it
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("ENDMDL", 0) == 0) break;  // pdb2pqr reads the first model
    if (line.rfind("ATOM  ", 0) != 0 && line.rfind("HETATM", 0) != 0) continue;
    const auto x = parse_number(trimmed(columns(line, 30, 8)));
    const auto y = parse_number(trimmed(columns(line, 38, 8)));
    const auto z = parse_number(trimmed(columns(line, 46, 8)));
    if (!x || !y || !z) continue;
    const std::string residue_number = trimmed(columns(line, 22, 4));
    const auto sequence = parse_integer(residue_number);
    const std::string_view insertion = columns(line, 26, 1);
    PdbAtom atom;
    atom.label =
        AtomLabel::make(trimmed(columns(line, 12, 4)), trimmed(columns(line, 17, 4)), trimmed(columns(line, 21, 1)),
                        sequence ? static_cast<std::int32_t>(*sequence) : 0, insertion.empty() ? '\0' : insertion[0]);
    const auto [at, first] = seen.emplace(atom.label.residue_text() + "/" + atom.label.atom_name(), atoms.size());
    if (!first) {
      atoms[at->second].alternates.push_back({*x, *y, *z});
      continue;
    }
    atom.element = pdb_element(line);
    atom.x = *x;
    atom.y = *y;
    atom.z = *z;
    atom.line = number;
    atom.serial = static_cast<long>(parse_integer(trimmed(columns(line, 6, 5))).value_or(0));
    atoms.push_back(atom);
  }
  return atoms;
}

std::vector<std::pair<long, long>> read_pdb_bonds(const std::string& text) {
  std::istringstream in(text);
  return read_pdb_bonds(in);
}

std::vector<std::pair<long, long>> read_pdb_bonds(std::istream& in) {
  std::vector<std::pair<long, long>> bonds;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CONECT", 0) != 0) continue;
    const auto from = parse_integer(trimmed(columns(line, 6, 5)));
    if (!from) continue;
    for (const std::size_t at : {11, 16, 21, 26}) {  // columns 12-31: up to four bonded atoms
      const auto to = parse_integer(trimmed(columns(line, at, 5)));
      if (to && *from != *to) bonds.emplace_back(std::min(*from, *to), std::max(*from, *to));
    }
  }
  std::sort(bonds.begin(), bonds.end());
  bonds.erase(std::unique(bonds.begin(), bonds.end()), bonds.end());
  return bonds;
}

namespace {

/// The B-factor field, columns 61-66: two decimals where they fit (PDB's F6.2, −99.99…999.99),
/// else one, else none, so a value down to −99999 keeps its place and viewers read it.
std::string b_factor_field(double b) {
  char field[32];
  for (int decimals = 2; decimals >= 0; --decimals)
    if (std::snprintf(field, sizeof field, "%6.*f", decimals, b) == 6) return field;
  return field;  // beyond −99999…999999: callers clamp (atom_values_pdb)
}

}  // namespace

std::string pdb_atom_record(bool hetatm, std::size_t serial, const AtomLabel& label, double x, double y, double z,
                            double b_factor, ElementSymbol element) {
  // The name field: a one-letter element's name starts in column 14 (" CA "), a four-character
  // name or a two-letter element's in column 13 ("ZN  ", "HG21").
  std::string name = label.atom_name();
  const std::string symbol = element.text();
  if (name.size() < 4 && symbol.size() == 1) name = " " + name;
  char record[128];
  std::snprintf(record, sizeof record, "%-6s%5zu %-4.4s %3.3s %1.1s%4d%c   %8.3f%8.3f%8.3f%6.2f%s          %2s\n",
                hetatm ? "HETATM" : "ATOM", serial % 100000, name.c_str(), label.residue_name().c_str(),
                label.chain_id().c_str(), label.number, label.insertion ? label.insertion : ' ', x, y, z, 1.0,
                b_factor_field(b_factor).c_str(), symbol.c_str());
  return record;
}

bool pdb2pqr_knows_residue(std::string_view name) {
  static constexpr std::string_view kKnown[] = {
      // amino acids and the protonation variants pdb2pqr reads and writes
      "ALA", "ARG", "ASN", "ASP", "CYS", "GLN", "GLU", "GLY", "HIS", "ILE", "LEU", "LYS", "MET", "PHE", "PRO", "SER",
      "THR", "TRP", "TYR", "VAL", "ASH", "CYM", "CYX", "GLH", "HID", "HIE", "HIP", "HSD", "HSE", "HSP", "LYN", "ARN",
      "TYM",
      // nucleotides (pdb2pqr's RNA and DNA names and the PDB's)
      "A", "C", "G", "U", "T", "DA", "DC", "DG", "DT", "DU", "RA", "RC", "RG", "RU", "ADE", "CYT", "GUA", "THY", "URA",
      "RA3", "RA5", "RC3", "RC5", "RG3", "RG5", "RU3", "RU5", "DA3", "DA5", "DC3", "DC5", "DG3", "DG5", "DT3", "DT5",
      // water
      "HOH", "WAT"};
  const std::string u = ascii_upper(name);
  return std::find(std::begin(kKnown), std::end(kKnown), u) != std::end(kKnown);
}

bool is_water_residue(std::string_view name) {
  static constexpr std::string_view kWater[] = {"HOH",  "WAT", "DOD", "H2O", "D2O", "TIP", "TIP3",
                                                "TIP4", "TP3", "T3P", "T4P", "SOL", "SPC"};
  const std::string u = ascii_upper(name);
  return std::find(std::begin(kWater), std::end(kWater), u) != std::end(kWater);
}

std::optional<IonCharge> ion_by_residue(std::string_view residue_name, ElementSymbol element) {
  // Radii: CHARMM's Rmin/2 as pdb2pqr's own CHARMM.DAT lists them (SOD, POT, CES, MG, CAL, ZN2,
  // CLA); ions it has none for get their element's Bondi radius (the XYZ reader's table).
  constexpr std::string_view kCharmm = "CHARMM's, as in pdb2pqr's CHARMM.DAT";
  constexpr std::string_view kBondi = "the element's Bondi radius: pdb2pqr's tables have no ion of it";
  struct Entry {
    std::string_view residue, name, element;
    int charge;
    double charmm_radius;  // 0: none
  };
  static constexpr Entry kIons[] = {
      {"LI", "lithium", "Li", 1, 0},     {"NA", "sodium", "Na", 1, 1.36375},    {"K", "potassium", "K", 1, 1.76375},
      {"RB", "rubidium", "Rb", 1, 0},    {"CS", "caesium", "Cs", 1, 2.100},     {"AG", "silver(I)", "Ag", 1, 0},
      {"CU1", "copper(I)", "Cu", 1, 0},  {"TL", "thallium(I)", "Tl", 1, 0},     {"MG", "magnesium", "Mg", 2, 1.185},
      {"CA", "calcium", "Ca", 2, 1.367}, {"SR", "strontium", "Sr", 2, 0},       {"BA", "barium", "Ba", 2, 0},
      {"ZN", "zinc", "Zn", 2, 1.09},     {"MN", "manganese(II)", "Mn", 2, 0},   {"FE2", "iron(II)", "Fe", 2, 0},
      {"CO", "cobalt(II)", "Co", 2, 0},  {"NI", "nickel(II)", "Ni", 2, 0},      {"CU", "copper(II)", "Cu", 2, 0},
      {"CD", "cadmium", "Cd", 2, 0},     {"HG", "mercury(II)", "Hg", 2, 0},     {"PB", "lead(II)", "Pb", 2, 0},
      {"FE", "iron(III)", "Fe", 3, 0},   {"MN3", "manganese(III)", "Mn", 3, 0}, {"3CO", "cobalt(III)", "Co", 3, 0},
      {"AL", "aluminium", "Al", 3, 0},   {"GA", "gallium", "Ga", 3, 0},         {"CR", "chromium(III)", "Cr", 3, 0},
      {"LA", "lanthanum", "La", 3, 0},   {"F", "fluoride", "F", -1, 0},         {"CL", "chloride", "Cl", -1, 2.27},
      {"BR", "bromide", "Br", -1, 0},    {"IOD", "iodide", "I", -1, 0}};
  const std::string u = ascii_upper(residue_name);
  for (const Entry& e : kIons) {
    if (u != e.residue) continue;
    // A residue named like an ion whose atom is another element is not that ion.
    if (!(element == ElementSymbol::from(e.element))) return std::nullopt;
    IonCharge ion{e.residue, e.name, e.charge, e.charmm_radius, kCharmm};
    if (e.charmm_radius == 0) {
      ion.radius = bondi_radius(element);
      ion.radius_source = kBondi;
    }
    return ion;
  }
  return std::nullopt;
}

}  // namespace espgrid
