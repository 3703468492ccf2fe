#include "src/structure/atom_tables.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/structure/pdb_records.h"

namespace espgrid {
namespace {

/// The label an atom is written with: its own, or for a structure without labels its element
/// in residue UNL 1 (the PDB's name for an unknown ligand).
AtomLabel label_of(const Structure& s, std::size_t i) {
  if (s.has_labels()) return s.labels[i];
  return AtomLabel::make(s.atoms.element[i].text(), "UNL", "", 1);
}

/// A CSV field: quoted when it holds a comma or a quote.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string insertion_text(const AtomLabel& l) { return l.insertion ? std::string(1, l.insertion) : ""; }

}  // namespace

AtomTableFormat atom_table_format(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (extension == ".csv") return AtomTableFormat::Csv;
  if (extension == ".pdb" || extension == ".ent") return AtomTableFormat::Pdb;
  if (extension == ".pqr")
    throw UsageError("-o " + path +
                     ": a PQR has no B-factor column (its last fields are the charge and the radius); write the "
                     "potentials into a .pdb (B-factors) or a .csv");
  throw UsageError("-o " + path + ": the atoms' values go to a .csv (one row an atom) or a .pdb (as B-factors)");
}

std::vector<ResidueValues> residue_values(const Structure& s, const std::vector<double>& values) {
  if (!s.has_labels())
    throw UsageError(
        "the structure has no residues (XYZ input, or arrays without names): per-residue values need a "
        "PDB, mmCIF or PQR file");
  std::vector<ResidueValues> out;
  for (std::size_t i = 0; i < s.atoms.size(); ++i) {
    const AtomLabel& l = s.labels[i];
    if (out.empty() || !out.back().label.same_residue(l)) {
      ResidueValues r;
      r.label = l;
      r.first = i;
      r.min = r.max = values[i];
      r.min_atom = r.max_atom = l.atom_name();
      out.push_back(r);
    }
    ResidueValues& r = out.back();
    ++r.atoms;
    r.charge += s.atoms.charge[i];
    r.mean += values[i];
    if (values[i] < r.min) {
      r.min = values[i];
      r.min_atom = l.atom_name();
    }
    if (values[i] > r.max) {
      r.max = values[i];
      r.max_atom = l.atom_name();
    }
  }
  for (ResidueValues& r : out) r.mean /= static_cast<double>(r.atoms);
  return out;
}

std::string atom_values_csv(const Structure& s, const std::vector<double>& values, const std::string& column) {
  std::string out = "index,name,residue,chain,number,insertion,x,y,z,charge," + column + "\n";
  const Atoms& a = s.atoms;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const AtomLabel l = label_of(s, i);
    out += std::to_string(i + 1) + "," + csv_field(l.atom_name()) + "," + csv_field(l.residue_name()) + "," +
           csv_field(l.chain_id()) + "," + std::to_string(l.number) + "," + csv_field(insertion_text(l)) + "," +
           shortest_text(a.x[i]) + "," + shortest_text(a.y[i]) + "," + shortest_text(a.z[i]) + "," +
           shortest_text(a.charge[i]) + "," + shortest_text(values[i]) + "\n";
  }
  return out;
}

std::string residue_values_csv(const std::vector<ResidueValues>& residues) {
  std::string out = "residue,chain,number,insertion,atoms,charge,mean,min,min_atom,max,max_atom\n";
  for (const ResidueValues& r : residues)
    out += csv_field(r.label.residue_name()) + "," + csv_field(r.label.chain_id()) + "," +
           std::to_string(r.label.number) + "," + csv_field(insertion_text(r.label)) + "," + std::to_string(r.atoms) +
           "," + shortest_text(r.charge) + "," + shortest_text(r.mean) + "," + shortest_text(r.min) + "," +
           csv_field(r.min_atom) + "," + shortest_text(r.max) + "," + csv_field(r.max_atom) + "\n";
  return out;
}

std::string atom_values_pdb(const Structure& s, const std::vector<double>& values,
                            const std::vector<std::string>& remarks, std::size_t* clamped) {
  std::string out;
  for (const std::string& remark : remarks) {
    // REMARK 99 lines of at most 80 characters.
    for (std::size_t at = 0; at < remark.size(); at += 69) out += "REMARK  99 " + remark.substr(at, 69) + "\n";
  }
  std::size_t out_of_range = 0;
  const Atoms& a = s.atoms;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double b = std::clamp(values[i], -99999.0, 999999.0);
    if (b != values[i]) ++out_of_range;
    const AtomLabel l = label_of(s, i);
    out += pdb_atom_record(!pdb2pqr_knows_residue(l.residue_name()), i + 1, l, a.x[i], a.y[i], a.z[i], b, a.element[i]);
  }
  if (clamped) *clamped = out_of_range;
  return out + "END\n";
}

}  // namespace espgrid
