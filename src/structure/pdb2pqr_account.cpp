#include "src/structure/pdb2pqr_account.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <map>

namespace espgrid {
namespace {

using Milli = std::array<long long, 3>;

Milli milli(double x, double y, double z) {
  return {std::llround(x * 1000.0), std::llround(y * 1000.0), std::llround(z * 1000.0)};
}

bool hydrogen(ElementSymbol e) {
  const std::string t = e.text();
  return t == "H" || t == "D";
}

}  // namespace

std::string Pdb2pqrAccount::left_out_text(std::size_t most) const {
  std::string text;
  std::size_t named = 0, more = 0, waters = 0;
  for (const Residue& r : left_out) {
    if (is_water_residue(r.label.residue_name()) && r.whole()) {
      ++waters;
    } else if (named < most) {
      text += (named ? ", " : "") + r.name + " (" + std::to_string(r.left_out) + " of " + std::to_string(r.heavy) +
              (named == 0 ? " heavy atoms)" : ")");
      ++named;
    } else {
      ++more;
    }
  }
  if (more > 0) text += " and " + std::to_string(more) + " more residues";
  if (waters > 0) text += (text.empty() ? "" : " and ") + std::to_string(waters) + (waters == 1 ? " water" : " waters");
  return text;
}

Pdb2pqrAccount account_for_atoms(const std::vector<PdbAtom>& input, const Structure& pqr) {
  Pdb2pqrAccount account;
  const Atoms& out = pqr.atoms;
  account.output_atoms = out.size();
  // The PQR's heavy atoms by position (pdb2pqr writes %8.3f, the PDB's own precision).
  std::map<Milli, std::size_t> heavy_at;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (hydrogen(out.element[i]))
      ++account.output_hydrogens;
    else
      heavy_at.emplace(milli(out.x[i], out.y[i], out.z[i]), i);
  }
  std::vector<bool> used(out.size(), false);
  std::vector<std::size_t> unmatched;  // input heavy atoms at none of their positions in the PQR
  for (std::size_t a = 0; a < input.size(); ++a) {
    const PdbAtom& atom = input[a];
    ++account.input_atoms;
    if (atom.hydrogen()) {
      ++account.input_hydrogens;
      continue;
    }
    bool kept = false;
    std::vector<std::array<double, 3>> positions = {{atom.x, atom.y, atom.z}};
    positions.insert(positions.end(), atom.alternates.begin(), atom.alternates.end());
    for (const auto& p : positions) {
      const auto found = heavy_at.find(milli(p[0], p[1], p[2]));
      if (found == heavy_at.end()) continue;
      kept = true;
      used[found->second] = true;
    }
    if (!kept) unmatched.push_back(a);
  }
  // Flips: the PQR atom that took an unmatched atom's place, of the same residue number.
  std::map<std::string, std::string> flipped;                  // residue -> "OD1/ND2", the input's names that moved
  std::map<std::int32_t, std::vector<std::size_t>> by_number;  // unmatched PQR heavy atoms by residue number
  for (std::size_t i = 0; i < out.size() && pqr.has_labels(); ++i)
    if (!used[i] && !hydrogen(out.element[i])) by_number[pqr.labels[i].number].push_back(i);
  std::vector<std::size_t> left;
  for (const std::size_t a : unmatched) {
    const PdbAtom& atom = input[a];
    bool found = false;
    const auto candidates = by_number.find(atom.label.number);
    for (std::size_t c = 0; candidates != by_number.end() && c < candidates->second.size() && !found; ++c) {
      const std::size_t i = candidates->second[c];
      if (used[i]) continue;
      const double dx = out.x[i] - atom.x, dy = out.y[i] - atom.y, dz = out.z[i] - atom.z;
      if (dx * dx + dy * dy + dz * dz > kFlipTolerance * kFlipTolerance) continue;
      used[i] = found = true;
      std::string& names = flipped[atom.label.residue_text()];
      if (!names.empty()) names += '/';  // (not "/" + name: GCC 12's -Wrestrict false positive)
      names += atom.label.atom_name();
    }
    if (!found) left.push_back(a);
  }
  for (const PdbAtom& atom : input) {  // in input order
    const auto f = flipped.find(atom.label.residue_text());
    if (f == flipped.end()) continue;
    account.flipped.push_back(f->first + " (" + f->second + ")");
    flipped.erase(f);
  }
  // The residues that lost heavy atoms, in input order, with how many they have.
  std::map<std::string, std::size_t> residue_at;
  for (const PdbAtom& atom : input) {
    if (atom.hydrogen()) continue;
    const std::string residue = atom.label.residue_text();
    if (residue_at.count(residue) == 0) {
      residue_at[residue] = account.left_out.size();
      account.left_out.push_back({residue, atom.label, 0, 0});
    }
    ++account.left_out[residue_at[residue]].heavy;
  }
  for (const std::size_t a : left) ++account.left_out[residue_at[input[a].label.residue_text()]].left_out;
  account.left_out_atoms = left.size();
  std::erase_if(account.left_out, [](const Pdb2pqrAccount::Residue& r) { return r.left_out == 0; });
  return account;
}

}  // namespace espgrid
