#include "src/structure/ligand_charges.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/structure/child_programs.h"

#ifndef ESPGRID_OPENBABEL_SCRIPT_SOURCE
#define ESPGRID_OPENBABEL_SCRIPT_SOURCE ""
#endif
#ifndef ESPGRID_OPENBABEL_SCRIPT_INSTALLED
#define ESPGRID_OPENBABEL_SCRIPT_INSTALLED ""
#endif

namespace espgrid {
namespace fs = std::filesystem;
namespace {

constexpr const char* kScript = "openbabel_charges.py";

/// Thrown into the background program's wait when its owner gives up on it.
struct Stopped {};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Elements that are no metal: a lone atom of any other element is a metal ion.
bool is_nonmetal(ElementSymbol e) {
  static constexpr const char* kNonmetals[] = {"H",  "D",  "He", "B",  "C",  "N",  "O",  "F", "Ne", "Si", "P", "S",
                                               "Cl", "Ar", "As", "Se", "Br", "Kr", "Te", "I", "Xe", "At", "Rn"};
  const std::string t = e.text();
  return t == "X" || std::any_of(std::begin(kNonmetals), std::end(kNonmetals), [&](const char* s) { return t == s; });
}

std::string signed_integer(int value) { return value > 0 ? "+" + std::to_string(value) : std::to_string(value); }

/// The residues of `atoms`, in order of first appearance, each with its atoms.
std::vector<std::pair<std::string, std::vector<const PdbAtom*>>> residues_of(const std::vector<PdbAtom>& atoms) {
  std::vector<std::pair<std::string, std::vector<const PdbAtom*>>> out;
  std::map<std::string, std::size_t> at;
  for (const PdbAtom& atom : atoms) {
    const std::string key = atom.label.residue_text();
    const auto [slot, fresh] = at.emplace(key, out.size());
    if (fresh) out.push_back({key, {}});
    out[slot->second].second.push_back(&atom);
  }
  return out;
}

}  // namespace

LigandChargeModel parse_ligand_charge_model(const std::string& text) {
  const std::string l = lower(text);
  if (l == "mmff94") return LigandChargeModel::Mmff94;
  if (l == "gasteiger") return LigandChargeModel::Gasteiger;
  if (l == "none") return LigandChargeModel::None;
  throw UsageError("--ligand-charges takes mmff94, gasteiger or none, got " + espgrid::quoted(text));
}

std::string ligand_charge_model_name(LigandChargeModel model) {
  switch (model) {
    case LigandChargeModel::Mmff94:
      return "mmff94";
    case LigandChargeModel::Gasteiger:
      return "gasteiger";
    case LigandChargeModel::None:
      return "none";
  }
  return "?";
}

std::vector<std::string> openbabel_charges_command() {
  if (const char* chosen = std::getenv("ESPGRID_OPENBABEL_CHARGES"); chosen && *chosen) {
    if (auto found = find_program(chosen)) return {*found};
    throw Error(std::string("ESPGRID_OPENBABEL_CHARGES=") + chosen + " is not an executable program");
  }
  std::vector<fs::path> places;
  if (std::strlen(ESPGRID_OPENBABEL_SCRIPT_SOURCE) > 0) places.emplace_back(ESPGRID_OPENBABEL_SCRIPT_SOURCE);
  char exe[4096];
  if (const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1); n > 0) {
    exe[n] = '\0';
    places.push_back(fs::path(exe).parent_path().parent_path() / "share" / "espgrid" / kScript);
  }
  if (std::strlen(ESPGRID_OPENBABEL_SCRIPT_INSTALLED) > 0) places.emplace_back(ESPGRID_OPENBABEL_SCRIPT_INSTALLED);
  std::string tried;
  for (const fs::path& place : places) {
    std::error_code ec;
    if (!fs::is_regular_file(place, ec)) {
      tried += "\n  " + place.string();
      continue;
    }
    auto python = find_program("/usr/bin/python3");  // Debian's, which python3-openbabel serves
    if (!python) python = find_program("python3");
    if (!python)
      throw Error("charging ligands needs python3 with Open Babel (Debian: apt-get install python3-openbabel)");
    return {*python, place.string()};
  }
  throw Error("charging ligands needs espgrid's " + std::string(kScript) + ", which is not installed: looked in" +
              tried + "\n  (`cmake --install build` installs it; or set ESPGRID_OPENBABEL_CHARGES)");
}

std::string ResidueCharging::text() const {
  switch (way) {
    case Way::OpenBabel:
      return residues + ": " + how + "; " + std::to_string(atoms) + " atoms (" + std::to_string(hydrogens_added) +
             " hydrogens added), formal charge " + signed_integer(formal_charge) + ", charges sum to " +
             signed_charge_text(charge) + " e";
    case Way::Ion:
      return residues + ": " + how;
    case Way::Dropped:
    case Way::LeftOut:
      return residues + ": " + how;
  }
  return residues;
}

LigandCharging::LigandCharging(const std::vector<PdbAtom>& atoms, const std::vector<std::pair<long, long>>& bonds,
                               const fs::path& folder, const std::string& name, double ph, LigandChargeModel model)
    : folder_(folder), name_(name) {
  if (atoms.empty() || model == LigandChargeModel::None) return;
  const std::vector<std::string> command = openbabel_charges_command();
  // The atoms with clean element columns (old files hold other data there), under their own
  // serial numbers when those are unique, so that the file's CONECT bonds among them apply.
  std::set<long> serials;
  for (const PdbAtom& a : atoms) serials.insert(a.serial);
  const bool own_serials = serials.size() == atoms.size() && *serials.begin() > 0 && *serials.rbegin() < 100000;
  std::string pdb;
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    const PdbAtom& a = atoms[i];
    pdb += pdb_atom_record(true, own_serials ? static_cast<std::size_t>(a.serial) : i + 1, a.label, a.x, a.y, a.z, 0,
                           a.element);
  }
  if (own_serials)
    for (const auto& [from, to] : bonds)
      if (serials.count(from) && serials.count(to)) {
        char line[32];
        std::snprintf(line, sizeof line, "CONECT%5ld%5ld\n", from, to);
        pdb += line;
      }
  pdb += "END\n";
  write_text_file((folder / (name + ".pdb")).string(), pdb);
  std::vector<std::string> argv = command;
  argv.insert(argv.end(),
              {"--ph", shortest_text(ph), "--charges", ligand_charge_model_name(model), name + ".pdb", name + ".pqr"});
  future_ = std::async(std::launch::async, [argv, folder, name, stop = stop_]() {
    const ProgramRun run = run_program(argv, folder, name + "-openbabel.log", [stop] {
      if (stop->load()) throw Stopped{};
    });
    return std::make_pair(run.exit_code == 0 && run.signal == 0 ? 0 : (run.signal ? -1 : run.exit_code), run.output);
  });
}

LigandCharging::~LigandCharging() {
  if (!future_.valid()) return;
  stop_->store(true);
  try {
    future_.get();
  } catch (...) {  // stopped, or failed: nobody wants its result now
  }
}

const LigandCharging::Result& LigandCharging::result(const std::function<void()>& waiting) {
  if (result_) return *result_;
  if (!future_.valid()) throw Error("internal error: Open Babel was not started");
  while (future_.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
    if (waiting) waiting();  // may throw (Ctrl-C): the destructor stops the program
  const auto [exit, output] = future_.get();
  Result r;
  std::vector<std::string> messages;
  for (const std::string& line : lines_of(output)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string part; std::getline(fields, part, '\t');) f.push_back(part);
    if (f.size() >= 2 && f[0] == "VERSION") {
      r.version = f[1];
    } else if (f.size() >= 7 && f[0] == "MOLECULE") {
      Molecule m;
      const std::size_t first = std::stoul(f[1]) - 1, count = std::stoul(f[2]);
      for (std::size_t i = 0; i < count; ++i) m.atoms.push_back(first + i);
      m.hydrogens_added = std::stoul(f[3]);
      m.formal_charge = std::stoi(f[4]);
      m.model = f[5];
      m.note = f.size() > 7 ? f[7] : "";
      r.molecules.push_back(std::move(m));
    } else if (!trimmed(line).empty()) {
      messages.push_back(trimmed(line));
    }
  }
  if (exit != 0)
    throw Error("Open Babel could not charge the ligands (" +
                std::string(exit < 0 ? "killed by a signal" : "exit code " + std::to_string(exit)) +
                "); its messages:" + indented(messages.empty() ? std::vector<std::string>{"(none)"} : messages) +
                "\n  (--ligand-charges gasteiger, or none to leave them out; or give a PQR with their charges)");
  r.structure = read_structure((folder_ / (name_ + ".pqr")).string(), StructureFormat::Pqr);
  for (std::size_t i = 0; i < r.structure.atoms.size(); ++i)
    r.structure.atoms.radius[i] = bondi_radius(r.structure.atoms.element[i]);
  for (const Molecule& m : r.molecules)
    if (m.atoms.empty() || m.atoms.back() >= r.structure.atoms.size())
      throw Error("internal error: Open Babel's report does not match its PQR");
  result_ = std::move(r);
  return *result_;
}

std::vector<PdbAtom> ligand_candidates(const std::vector<PdbAtom>& input) {
  std::vector<PdbAtom> out;
  for (const auto& [residue, atoms] : residues_of(input)) {
    const AtomLabel& label = atoms.front()->label;
    if (pdb2pqr_knows_residue(label.residue_name()) || is_water_residue(label.residue_name())) continue;
    std::size_t heavy = 0;
    const PdbAtom* lone = nullptr;
    for (const PdbAtom* a : atoms)
      if (!a->hydrogen()) {
        ++heavy;
        lone = a;
      }
    if (heavy == 1 && !is_nonmetal(lone->element)) continue;  // an ion: by formal charge
    for (const PdbAtom* a : atoms) out.push_back(*a);
  }
  return out;
}

namespace {

void append_atom(Structure& s, const Atoms& from, const std::vector<AtomLabel>& labels, std::size_t i) {
  s.atoms.push_back(from.x[i], from.y[i], from.z[i], from.charge[i], from.radius[i], from.element[i]);
  s.labels.push_back(labels[i]);
}

std::string model_text(const std::string& model) { return model == "mmff94" ? "MMFF94" : "Gasteiger"; }

/// The report of one molecule Open Babel charged, and its atoms added to `added`.
ResidueCharging add_molecule(const LigandCharging::Result& r, const LigandCharging::Molecule& m,
                             const std::string& residues, double ph, Structure& added) {
  ResidueCharging c;
  c.way = ResidueCharging::Way::OpenBabel;
  c.residues = residues;
  c.atoms = m.atoms.size();
  c.hydrogens_added = m.hydrogens_added;
  c.formal_charge = m.formal_charge;
  for (const std::size_t i : m.atoms) {
    append_atom(added, r.structure.atoms, r.structure.labels, i);
    c.charge += r.structure.atoms.charge[i];
  }
  c.how = "Open Babel " + (r.version.empty() ? std::string("(version unknown)") : r.version) + ", " +
          model_text(m.model) + " charges, hydrogens for pH " + shortest_text(ph) + ", Bondi radii" +
          (m.note.empty() ? "" : " (" + m.note + ")");
  return c;
}

/// The residues pdb2pqr left out, sorted: ions charged here (into `added`), waters counted,
/// ligands listed for Open Babel, the rest with the reason they stay out.
struct LeftOut {
  std::map<std::string, std::vector<const PdbAtom*>> atoms_of;  // the left-out residues' input atoms
  std::map<std::string, std::size_t> waters;                    // residue name -> waters dropped
  std::vector<std::string> ligands;                             // residues for Open Babel, in input order
  std::map<std::string, ResidueCharging> report;                // residue -> its line (ligands' come later)
};

LeftOut sort_left_out(const std::vector<PdbAtom>& input, const Pdb2pqrAccount& account, bool keep_water,
                      LigandChargeModel model, Structure& added) {
  LeftOut s;
  std::set<std::string> whole;
  for (const auto& r : account.left_out)
    if (r.whole()) whole.insert(r.name);
  for (const PdbAtom& a : input)
    if (whole.count(a.label.residue_text())) s.atoms_of[a.label.residue_text()].push_back(&a);
  const auto lone_heavy_atom = [&](const Pdb2pqrAccount::Residue& r) -> const PdbAtom* {
    if (r.heavy != 1) return nullptr;
    for (const PdbAtom* a : s.atoms_of[r.name])
      if (!a->hydrogen()) return a;
    return nullptr;
  };
  for (const auto& r : account.left_out) {
    ResidueCharging c;
    c.residues = r.name;
    const std::string name = r.label.residue_name();
    if (!r.whole()) {
      c.how = "pdb2pqr's template has no place for " + std::to_string(r.left_out) + " of its " +
              std::to_string(r.heavy) + " heavy atoms";
    } else if (is_water_residue(name) && !keep_water) {
      ++s.waters[name];
      continue;
    } else if (const PdbAtom* atom = lone_heavy_atom(r); atom && !is_nonmetal(atom->element)) {
      if (const auto ion = ion_by_residue(name, atom->element)) {
        c.way = ResidueCharging::Way::Ion;
        c.atoms = 1;
        c.formal_charge = ion->charge;
        c.charge = ion->charge;
        c.how = std::string(ion->name) + " ion, formal charge " + signed_integer(ion->charge) + " (the PDB's " +
                std::string(ion->residue) + "), radius " + shortest_text(ion->radius) + " Å (" +
                std::string(ion->radius_source) + ")";
        added.atoms.push_back(atom->x, atom->y, atom->z, ion->charge, ion->radius, atom->element);
        added.labels.push_back(atom->label);
      } else {
        c.how = "a lone " + atom->element.text() + " whose residue name " + espgrid::quoted(name) +
                " is not one of the PDB's ion names espgrid knows the charge of";
      }
    } else if (model == LigandChargeModel::None) {
      c.how = "not charged (--ligand-charges none)";
    } else {
      s.ligands.push_back(r.name);
      continue;
    }
    s.report[r.name] = c;
  }
  return s;
}

std::vector<std::string> residues_of_molecule(const LigandCharging::Result& r, const LigandCharging::Molecule& m) {
  std::vector<std::string> names;
  for (const std::size_t i : m.atoms) {
    const std::string n = r.structure.labels[i].residue_text();
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  return names;
}

/// The ligands' lines: the molecules Open Babel charged whose every residue pdb2pqr left out
/// whole, added to `added`; the ligands no run covered are charged by `charge_more` first.
void charge_ligands(LeftOut& s, std::vector<const LigandCharging::Result*> charged,
                    const std::function<const LigandCharging::Result*(const std::vector<PdbAtom>&)>& charge_more,
                    double ph, Structure& added) {
  const std::set<std::string> pending(s.ligands.begin(), s.ligands.end());
  const auto covered = [&](const std::string& residue) {
    for (const LigandCharging::Result* r : charged)
      for (const auto& m : r->molecules) {
        const auto names = residues_of_molecule(*r, m);
        if (std::find(names.begin(), names.end(), residue) != names.end()) return true;
      }
    return false;
  };
  std::vector<PdbAtom> more;
  for (const std::string& residue : s.ligands)
    if (!covered(residue))
      for (const PdbAtom* a : s.atoms_of[residue]) more.push_back(*a);
  if (!more.empty() && charge_more) charged.push_back(charge_more(more));
  std::set<std::string> done;
  for (const LigandCharging::Result* r : charged)
    for (const auto& m : r->molecules) {
      const auto names = residues_of_molecule(*r, m);
      const bool all_pending = std::all_of(names.begin(), names.end(),
                                           [&](const std::string& n) { return pending.count(n) && !done.count(n); });
      if (!all_pending) continue;
      std::string joined;
      for (const std::string& n : names) joined += (joined.empty() ? "" : " + ") + n;
      s.report[names.front()] = add_molecule(*r, m, joined, ph, added);
      for (const std::string& n : names) done.insert(n);
    }
  for (const std::string& residue : s.ligands)
    if (!done.count(residue)) {
      ResidueCharging c;
      c.residues = residue;
      c.how = "Open Babel's molecule for it also holds atoms pdb2pqr kept (a bond to the polymer?)";
      s.report[residue] = c;
    }
}

}  // namespace

Completion complete_structure(
    const std::vector<PdbAtom>& input, const Pdb2pqrAccount& account, bool keep_water, LigandChargeModel model,
    double ph, std::vector<const LigandCharging::Result*> charged,
    const std::function<const LigandCharging::Result*(const std::vector<PdbAtom>&)>& charge_more) {
  Completion out;
  LeftOut s = sort_left_out(input, account, keep_water, model, out.added);
  charge_ligands(s, std::move(charged), charge_more, ph, out.added);
  for (const auto& r : account.left_out)
    if (auto at = s.report.find(r.name); at != s.report.end()) out.residues.push_back(at->second);
  for (const auto& [name, count] : s.waters) {
    ResidueCharging c;
    c.way = ResidueCharging::Way::Dropped;
    c.residues = std::to_string(count) + (count == 1 ? " water (" : " waters (") + name + ")";
    c.how = "dropped (--keep-water keeps them)";
    out.residues.push_back(c);
  }
  return out;
}

std::string pqr_records(const Structure& added, std::size_t first_serial) {
  std::string out;
  const Atoms& a = added.atoms;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const AtomLabel& l = added.labels[i];
    const std::string chain = l.chain_id();
    char line[160];
    std::snprintf(line, sizeof line, "HETATM%6zu %-4s %-4s %s%d%s %10.4f %10.4f %10.4f %10.6f %7.4f %s\n",
                  first_serial + i, l.atom_name().c_str(), l.residue_name().c_str(),
                  chain.empty() ? "" : (chain + " ").c_str(), l.number,
                  l.insertion ? std::string(1, l.insertion).c_str() : "", a.x[i], a.y[i], a.z[i], a.charge[i],
                  a.radius[i], a.element[i].text().c_str());
    out += line;
  }
  return out;
}

}  // namespace espgrid
