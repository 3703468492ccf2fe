#include "src/view/display_structure.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "src/core/text_format.h"
#include "src/core/text_parsing.h"

namespace espgrid {
namespace {

/// "52", "-5", "52A" (insertion code): the residue number and insertion code.
bool residue_number(std::string_view t, std::int32_t& number, char& insertion) {
  insertion = ' ';
  if (!t.empty() && std::isalpha(static_cast<unsigned char>(t.back())) && t.size() > 1) {
    insertion = t.back();
    t.remove_suffix(1);
  }
  std::string_view digits = t;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  if (!whole_digits(digits) || digits.size() > 9) return false;
  number = static_cast<std::int32_t>(std::stol(std::string(t)));
  return true;
}

}  // namespace

std::optional<std::vector<DisplayLabel>> read_pqr_labels(const std::string& path, std::size_t expected_atoms) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<DisplayLabel> labels;
  labels.reserve(expected_atoms);
  std::string line;
  int models = 0;
  std::vector<std::string_view> tokens;
  while (std::getline(in, line)) {
    split_whitespace(line, tokens);
    if (tokens.empty()) continue;
    const std::string key = ascii_upper(tokens[0].substr(0, 6));
    if (key == "MODEL") {
      if (++models > 1) break;
      continue;
    }
    if (key == "ENDMDL") {
      if (models >= 1) break;
      continue;
    }
    const bool atom = key.rfind("ATOM", 0) == 0, het = key.rfind("HETATM", 0) == 0;
    if (!atom && !het) continue;
    const std::size_t record = atom ? 4 : 6;
    const bool merged = tokens[0].size() > record;  // "HETATM12345"
    const std::size_t at = merged ? 1 : 2;
    if (tokens.size() < at + 3) return std::nullopt;
    DisplayLabel label;
    label.hetero = het;
    label.name = std::string(tokens[at].substr(0, 4));
    label.residue = std::string(tokens[at + 1].substr(0, 4));
    const std::string_view third = tokens[at + 2];
    if (third.size() == 1 && std::isalpha(static_cast<unsigned char>(third[0])) && tokens.size() > at + 3 &&
        residue_number(tokens[at + 3], label.residue_number, label.insertion)) {
      label.chain = third[0];  // name resName chainID resSeq
    } else if (third.size() > 1 && std::isalpha(static_cast<unsigned char>(third[0])) &&
               residue_number(third.substr(1), label.residue_number, label.insertion)) {
      label.chain = third[0];  // chain run into the residue number: "A1000"
    } else if (!residue_number(third, label.residue_number, label.insertion)) {
      return std::nullopt;
    }
    labels.push_back(std::move(label));
    if (labels.size() > expected_atoms) return std::nullopt;
  }
  if (labels.size() != expected_atoms) return std::nullopt;
  return labels;
}

std::string display_pdb(const Atoms& atoms, const std::vector<DisplayLabel>* labels, std::size_t* skipped) {
  std::string out;
  out.reserve(atoms.size() * 81);
  std::size_t left_out = 0;
  char line[128];
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    if (!(std::fabs(atoms.x[i]) < 9999.9995 && std::fabs(atoms.y[i]) < 9999.9995 &&
          std::fabs(atoms.z[i]) < 9999.9995)) {
      ++left_out;
      continue;
    }
    const std::string element = atoms.element[i].text() == "X" ? std::string("C") : atoms.element[i].text();
    DisplayLabel fallback;
    if (!labels) {
      fallback.name = element;
      fallback.residue = "MOL";
      fallback.residue_number = 1;
      fallback.hetero = true;
    }
    const DisplayLabel& l = labels ? (*labels)[i] : fallback;
    // PDB's atom name column: a one-letter element's name starts in column 14 (" CA "), a
    // four-character or two-letter-element name in column 13.
    char name[5];
    if (l.name.size() >= 4 || element.size() == 2)
      std::snprintf(name, sizeof name, "%-4.4s", l.name.c_str());
    else
      std::snprintf(name, sizeof name, " %-3.3s", l.name.c_str());
    // "%8.3f" three times, in any locale (printf would write "1,234" after a Python session's
    // setlocale, and 3Dmol.js would misplace every atom).
    const auto coordinate = [](double v) {
      const std::string text = short_fixed(v, 3);
      return std::string(text.size() < 8 ? 8 - text.size() : 0, ' ') + text;
    };
    const std::string xyz = coordinate(atoms.x[i]) + coordinate(atoms.y[i]) + coordinate(atoms.z[i]);
    std::snprintf(line, sizeof line, "%-6s%5d %4s %3.3s %c%4d%c   %s  1.00  0.00          %2s\n",
                  l.hetero ? "HETATM" : "ATOM", static_cast<int>((i + 1) % 100000), name, l.residue.c_str(), l.chain,
                  static_cast<int>(l.residue_number >= -999 && l.residue_number <= 9999
                                       ? l.residue_number
                                       : ((l.residue_number % 10000) + 10000) % 10000),
                  l.insertion, xyz.c_str(), element.c_str());
    out += line;
  }
  out += "END\n";
  if (skipped) *skipped = left_out;
  return out;
}

}  // namespace espgrid
