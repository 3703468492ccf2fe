// One run of PDB2PQR on a structure: the input staged for it, its log read, every atom accounted
// for, what it left out charged. Longer than 500 lines because those steps share AssignedStructure's
// private state (the folder, the kept PQR), which only assign_charges may set.
#include "src/structure/pdb2pqr_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/os/atomic_output_file.h"
#include "src/structure/child_programs.h"

namespace espgrid {
namespace {

namespace fs = std::filesystem;

/// PDB2PQR's warnings shown at most, the rest counted: a structure with many gaps repeats them.
constexpr std::size_t kMaxNotices = 10;
/// Lines of a failed program's output shown when none of them says what went wrong.
constexpr std::size_t kTailLines = 6;

/// Whether a program's output holds any of `needles`.
bool log_says(const std::string& output, std::initializer_list<const char*> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](const char* needle) { return output.find(needle) != std::string::npos; });
}

/// What a failure of PDB2PQR means where its own words mislead or say nothing, or "".
std::string explain_failure(const std::string& output, const std::string& force_field) {
  // pdb2pqr 3.5 formats this error with "{:i}" and dies of a ValueError instead of saying it.
  if (log_says(output, {"Unknown format code 'i'", "missing too many"}))
    return "\n  What it means: more than 10 % of the heavy atoms pdb2pqr's " + force_field +
           " templates expect are missing from the structure, too many for it to rebuild (pdb2pqr 3.5 then fails "
           "with \"Unknown format code 'i'\", a bug in its own error message). Typical causes: a model with only "
           "C-alpha or backbone atoms, residues cut short, or many residues it has no parameters for. Complete the "
           "structure first (e.g. PDBFixer, MODELLER), or give a PQR file with charges and radii.";
  if (log_says(output, {"No biomolecule heavy atoms found"}))
    return "\n  What it means: pdb2pqr found no residue it has " + force_field +
           " parameters for (it knows amino acids, nucleic acids and water; ligands and ions need charges from "
           "another tool): give a PQR file with charges and radii.";
  return "";
}

}  // namespace

void check_charge_assignment(const ChargeAssignment& assignment) {
  const std::string& ff = assignment.force_field;
  // Known before pdb2pqr runs: its --ff takes these names only (it would fail late, and only
  // after the PROPKA run, with an argparse message).
  if (std::find(kPdb2pqrForceFields.begin(), kPdb2pqrForceFields.end(), ff) == kPdb2pqrForceFields.end())
    throw UsageError(
        "--forcefield takes one of pdb2pqr's force fields (AMBER, CHARMM, PARSE, TYL06, PEOEPB or "
        "SWANSON; any case), got " +
        espgrid::quoted(ff));
  if (assignment.ph && !(std::isfinite(*assignment.ph) && *assignment.ph >= 0 && *assignment.ph <= 14))
    throw UsageError("--ph must be a number from 0 to 14, got " + number_text(*assignment.ph));
  if (const std::string& mol2 = assignment.ligand_mol2; !mol2.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(mol2, ec) || ::access(mol2.c_str(), R_OK) != 0)
      throw UsageError("--ligand " + mol2 + ": no such readable file (pdb2pqr's --ligand takes a MOL2 file)");
    std::string extension = fs::path(mol2).extension().string();
    for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (extension != ".mol2")
      throw UsageError("--ligand " + mol2 + " is not a .mol2 file: pdb2pqr's --ligand reads MOL2 (Tripos) files");
  }
}

std::vector<std::string> parse_pdb2pqr_options(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  std::string allowed;
  for (const auto& [name, takes_value] : kPdb2pqrPassThrough)
    allowed += (allowed.empty() ? "" : ", ") + std::string(name) + (takes_value ? " VALUE" : "");
  // pdb2pqr's options that are espgrid's own, or that change what espgrid reads or keeps.
  static constexpr std::pair<std::string_view, std::string_view> kInstead[] = {
      {"--ff", "--forcefield"},
      {"--with-ph", "--ph"},
      {"--titration-state-method", "--ph"},
      {"--drop-water", "nothing (waters are dropped unless --keep-water)"},
      {"--keep-chain", "--keep-chain"},
      {"--ligand", "--ligand"}};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const std::string name = w.substr(0, w.find('='));
    for (const auto& [theirs, ours] : kInstead)
      if (name == theirs) throw UsageError("--pdb2pqr-options: give " + w + " as espgrid's " + std::string(ours));
    const auto* pass = std::find_if(kPdb2pqrPassThrough.begin(), kPdb2pqrPassThrough.end(),
                                    [&](const auto& p) { return p.first == name; });
    if (pass == kPdb2pqrPassThrough.end())
      throw UsageError("--pdb2pqr-options: " + espgrid::quoted(w) +
                       " is not one of the pdb2pqr options espgrid passes on (" + allowed +
                       "); the others write files espgrid does not keep or change the PQR it reads");
    out.push_back(name);
    if (!pass->second) {
      if (name != w) throw UsageError("--pdb2pqr-options: " + name + " takes no value");
      continue;
    }
    if (name != w) {
      out.push_back(w.substr(w.find('=') + 1));
    } else {
      if (i + 1 >= words.size()) throw UsageError("--pdb2pqr-options: " + name + " needs a value");
      out.push_back(words[++i]);
    }
    if (name == "--ffout")
      out.back() = make_charge_assignment(out.back(), std::nullopt).force_field;  // checked, upper-cased
  }
  return out;
}

ChargeAssignment make_charge_assignment(std::string force_field, std::optional<double> ph) {
  for (char& c : force_field) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ChargeAssignment assignment;
  assignment.force_field = std::move(force_field);
  assignment.ph = ph;
  check_charge_assignment(assignment);
  return assignment;
}

std::string pdb2pqr_program() {
  return resolve_program("ESPGRID_PDB2PQR", "pdb2pqr30",
                         "PDB and mmCIF input needs PDB2PQR to assign charges and radii; or give a PQR file",
                         "pdb2pqr");
}

std::string gemmi_program() {
  return resolve_program("ESPGRID_GEMMI", "gemmi",
                         "mmCIF input is converted to PDB with gemmi before PDB2PQR; or give a PDB or PQR file",
                         "gemmi");
}

Pdb2pqrLog parse_pdb2pqr_log(const std::string& output) {
  Pdb2pqrLog log;
  const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  // The banner: "INFO:PDB2PQR v3.5.2: biomolecular structure conversion software."
  if (const std::size_t at = output.find("PDB2PQR v"); at != std::string::npos) {
    std::size_t end = at + 9;
    while (end < output.size() && (word_char(output[end]) || output[end] == '+' || output[end] == '-')) ++end;
    log.version = output.substr(at + 9, end - at - 9);
    while (!log.version.empty() && log.version.back() == '.') log.version.pop_back();
  }
  // "ValueError: ...", "RuntimeError": the exception that ended a Python traceback.
  const auto exception_line = [&](const std::string& line) {
    const std::string name = line.substr(0, line.find(':'));
    if (name.empty() || !std::all_of(name.begin(), name.end(), word_char)) return false;
    const auto ends = [&](const std::string& tail) {
      return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    return ends("Error") || ends("Exception");
  };
  // argparse: "pdb2pqr: error: argument --ff: invalid choice ..."
  const auto usage_error = [](const std::string& line) {
    const std::size_t at = line.find(": error: ");
    return at != std::string::npos && at > 0 && line.find(' ') > at;
  };
  std::set<std::string> seen_warnings, seen_failures;
  for (const std::string& raw : lines_of(output)) {
    if (raw.empty() || std::isspace(static_cast<unsigned char>(raw[0]))) continue;  // traceback bodies
    std::string line = trimmed(raw);
    // PDB2PQR logs some warnings twice, once with a trailing ". " and doubled spaces.
    std::string key;
    for (char c : line)
      if (!(c == ' ' && !key.empty() && key.back() == ' ')) key += c;
    while (!key.empty() && (key.back() == '.' || key.back() == ' ')) key.pop_back();
    const auto starts = [&](const char* prefix) { return line.rfind(prefix, 0) == 0; };
    if (starts("WARNING:") || starts("ERROR:")) {
      if (seen_warnings.insert(key).second) log.warnings.push_back(line);
    }
    if (starts("CRITICAL:") || starts("ERROR:") || exception_line(line) || usage_error(line)) {
      if (seen_failures.insert(key).second) log.failure.push_back(line);
    }
  }
  return log;
}

std::string AssignedStructure::describe() const {
  std::string text =
      "pdb2pqr " + version + ", " + assignment.force_field + " force field, " +
      (assignment.ph ? "pH " + shortest_text(*assignment.ph) + " (PROPKA)" : "standard protonation states");
  if (!converted_with.empty()) text += ", mmCIF converted to PDB with " + converted_with;
  std::size_t ligands = 0, ions = 0;
  for (const ResidueCharging& c : charging) {
    ligands += c.way == ResidueCharging::Way::OpenBabel ? 1 : 0;
    ions += c.way == ResidueCharging::Way::Ion ? 1 : 0;
  }
  if (ligands > 0)
    text += "; " + std::to_string(ligands) + (ligands == 1 ? " ligand" : " ligands") + " by Open Babel (" +
            (assignment.ligand_charges == LigandChargeModel::Gasteiger ? "Gasteiger" : "MMFF94") + ")";
  if (ions > 0) text += "; " + std::to_string(ions) + (ions == 1 ? " ion" : " ions") + " by formal charge";
  return text;
}

std::vector<std::pair<std::string, std::string>> AssignedStructure::report() const {
  std::vector<std::pair<std::string, std::string>> lines;
  const Pdb2pqrAccount& a = account;
  lines.emplace_back("atoms", with_commas(a.input_atoms) + " in the input (" + with_commas(a.input_hydrogens) +
                                  " hydrogens), " + with_commas(a.output_atoms) + " in pdb2pqr's PQR (" +
                                  with_commas(a.output_hydrogens) + " hydrogens); " +
                                  (a.left_out_atoms == 0 ? std::string("every heavy atom kept")
                                                         : with_commas(a.left_out_atoms) +
                                                               " heavy atoms not in its PQR: " + a.left_out_text()));
  lines.emplace_back("residues", template_residues + " by pdb2pqr's " + assignment.force_field + " templates, " +
                                     signed_charge_text(template_charge) + " e");
  for (const ResidueCharging& c : charging) {
    const char* tag = c.way == ResidueCharging::Way::OpenBabel ? "ligand"
                      : c.way == ResidueCharging::Way::Ion     ? "ion"
                      : c.way == ResidueCharging::Way::Dropped ? "waters"
                                                               : "left out";
    lines.emplace_back(tag, c.text());
  }
  if (!a.flipped.empty()) {
    std::string names;
    for (const std::string& f : a.flipped) names += (names.empty() ? "" : ", ") + f;
    lines.emplace_back("flipped", names + ": side chains pdb2pqr flipped to make hydrogen bonds (kept, not left out)");
  }
  return lines;
}

std::string AssignedStructure::command_for(const std::string& pqr_path) const {
  return command_prefix_ + command_options_ + shell_word(pqr_path);
}

std::string AssignedStructure::log_path_for(const std::string& pqr_path) {
  fs::path p(pqr_path);
  std::string extension = p.extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (extension == ".pqr") return p.replace_extension(".log").string();
  return pqr_path + ".log";
}

void AssignedStructure::keep(const std::string& destination) const {
  if (pqr_text_.empty()) throw Error("internal error: no PQR to keep");
  // Written with explicit checks: fs::copy_file reported a full disk as "Input/output error"
  // (copy_file_range into /proc/self/fd/N).
  write_text_file(destination, pqr_text_);
  write_text_file(log_path_for(destination), log);
}

namespace {

/// The PDB file pdb2pqr reads, staged in the temporary folder where it must be, and what the
/// equivalent command shows for it.
struct StagedInput {
  std::string pdb;            ///< its path (absolute)
  std::string shown;          ///< the input as messages name it ("standard input")
  std::string command_reads;  ///< the name the command gives pdb2pqr
  std::string stem;           ///< what the PQR is named after
};

/// What reaches pdb2pqr is a regular file: a plain file is given as it is, anything else
/// (standard input, a pipe such as <(zcat x.pdb.gz), gzip data) is copied into the folder first;
/// mmCIF goes through gemmi. PDB2PQR takes a name it cannot open for a PDB ID and downloads that
/// entry: it never sees a name that is not a file.
StagedInput stage_input(const std::string& input, StructureFormat format, AssignedStructure& result,
                        const fs::path& folder, std::string& command_prefix, const std::string& gemmi,
                        const std::function<void()>& waiting) {
  StagedInput staged;
  const bool standard_input = is_standard_input(input);
  // /dev/stdin and /proc/self/fd/N name this process's own descriptors: pdb2pqr, another
  // process with stdin from /dev/null, would read something else under the same name.
  const bool own_descriptor = input.rfind("/dev/", 0) == 0 || input.rfind("/proc/", 0) == 0;
  const bool gzip = !standard_input && (input.size() > 3 && (input.compare(input.size() - 3, 3, ".gz") == 0 ||
                                                             input.compare(input.size() - 3, 3, ".GZ") == 0));
  const bool copied = standard_input || own_descriptor || read_through_gzip(input);
  staged.stem = structure_stem(input);
  if (staged.stem.empty() || staged.stem[0] == '.' || staged.stem[0] == '-') staged.stem = "structure" + staged.stem;
  staged.shown = standard_input ? std::string("standard input") : input;
  std::string given;  // the file the first program reads, as the command shows it
  if (copied) {
    // Through the structure reader's line source: a read error, binary data or a gzip stream
    // cut short stops here with the file and line, never as a shorter structure.
    given = staged.stem + (format == StructureFormat::Mmcif ? ".cif" : ".pdb");
    if (fs::path(input).filename() == given) given = staged.stem + "-gunzipped" + fs::path(given).extension().string();
    const std::unique_ptr<LineSource> lines = open_structure_lines(input);
    const fs::path copy = folder / given;
    const int fd = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const auto cannot_copy = [&](int error) {
      return Error("cannot copy " + staged.shown + " for pdb2pqr into " + copy.string() + ": " + std::strerror(error) +
                   full_note(folder));
    };
    if (fd < 0) throw cannot_copy(errno);
    const std::unique_ptr<const int, void (*)(const int*)> closing(&fd, [](const int* f) { ::close(*f); });
    // Streamed a MiB at a time: a .pdb.gz may expand to more than memory holds.
    std::string text;
    for (bool more = true; more;) {
      const auto line = lines->next();
      more = line.has_value();
      if (more) {
        text.append(*line);
        text += '\n';
        if (text.size() < (std::size_t{1} << 20)) continue;
      }
      if (!write_all(fd, text.data(), text.size())) throw cannot_copy(errno);
      text.clear();
    }
    if (lines->empty()) throw Error(staged.shown + " is empty: no structure to give pdb2pqr");
    staged.pdb = copy.string();
    const bool compressed = gzip || (!standard_input && !own_descriptor && is_gzip_file(input));
    command_prefix = standard_input ? "cat > " + given + " && "
                     : compressed   ? "gunzip -c " + shell_word(input) + " > " + given + " && "
                                    : "cat " + shell_word(input) + " > " + given + " && ";
  } else {
    given = input;
    staged.pdb = fs::absolute(input).string();
  }
  staged.command_reads = shell_word(given);
  if (format != StructureFormat::Mmcif) return staged;
  // --shorten: PDB holds chain names of one or two characters; PDB2PQR drops them anyway,
  // but keeps chains apart by them (termini).
  const std::string converted = staged.stem + ".pdb";
  const ProgramRun run = run_program({gemmi, "convert", "--from=mmcif", "--to=pdb", "--shorten", staged.pdb, converted},
                                     folder, "gemmi.log", waiting);
  if (run.exit_code != 0)
    throw Error("gemmi could not convert " + staged.shown + " from mmCIF to PDB for pdb2pqr (" + ending_text(run) +
                "); its messages:" + indented(tail(run.output, kTailLines)) + full_note(folder));
  const ProgramRun version = run_program({gemmi, "--version"}, folder, "gemmi-version.log", waiting);
  result.converted_with = trimmed(version.output).empty() ? "gemmi" : trimmed(lines_of(version.output).front());
  staged.pdb = (folder / converted).string();
  command_prefix += "gemmi convert --from=mmcif --to=pdb --shorten " + staged.command_reads + " " + converted + " && ";
  staged.command_reads = converted;
  return staged;
}

/// pdb2pqr's options for an assignment, as the command line shows them (the --ligand file as given).
std::vector<std::string> pdb2pqr_options(const ChargeAssignment& a) {
  std::vector<std::string> options = {"--ff", a.force_field};
  if (!a.keep_water) options.push_back("--drop-water");
  if (a.keep_chain) options.push_back("--keep-chain");
  if (!a.ligand_mol2.empty()) options.insert(options.end(), {"--ligand", a.ligand_mol2});
  options.insert(options.end(), a.pdb2pqr_options.begin(), a.pdb2pqr_options.end());
  if (a.ph) options.insert(options.end(), {"--titration-state-method", "propka", "--with-ph", shortest_text(*a.ph)});
  return options;
}

/// Runs pdb2pqr and reads its PQR; Error with its messages when it fails.
void run_pdb2pqr(AssignedStructure& result, const std::string& pdb2pqr, const StagedInput& staged,
                 const fs::path& folder, const std::string& pqr_name, const std::function<void()>& waiting) {
  const ChargeAssignment& a = result.assignment;
  std::vector<std::string> argv = {pdb2pqr};
  for (std::string option : pdb2pqr_options(a)) {
    // The --ligand file as pdb2pqr, which runs in the temporary folder, finds it.
    if (!argv.empty() && argv.back() == "--ligand") option = fs::absolute(option).string();
    argv.push_back(option);
  }
  argv.insert(argv.end(), {staged.pdb, pqr_name});
  const ProgramRun run = run_program(argv, folder, "pdb2pqr-output.log", waiting);
  result.log = run.output;
  const Pdb2pqrLog log = parse_pdb2pqr_log(run.output);
  result.version = log.version.empty() ? "(version unknown)" : log.version;
  const fs::path pqr = folder / pqr_name;
  std::error_code ec;
  if (run.exit_code != 0) {
    std::vector<std::string> said = log.failure.empty() ? tail(run.output, kTailLines) : log.failure;
    if (said.empty()) said.push_back("(it printed nothing)");
    throw Error("pdb2pqr " + result.version + " failed on " + staged.shown + " (" + ending_text(run) +
                "); its messages:" + indented(said) + explain_failure(run.output, a.force_field) +
                (result.converted_with.empty()
                     ? ""
                     : "\n  (the PDB file it read was converted from mmCIF by " + result.converted_with + ")") +
                full_note(folder));
  }
  if (!fs::is_regular_file(pqr, ec) || fs::file_size(pqr, ec) == 0)
    throw Error("pdb2pqr " + result.version + " exited 0 on " + staged.shown +
                " but wrote no PQR; its last messages:" + indented(tail(run.output, kTailLines)) + full_note(folder));
  try {
    result.structure = read_structure(pqr.string(), StructureFormat::Pqr);
  } catch (const InputError& e) {
    throw Error("the PQR that pdb2pqr " + result.version + " made from " + staged.shown + " cannot be read: line " +
                std::to_string(e.line()) + ": " +
                std::string(e.what()).substr(e.file().size() + std::to_string(e.line()).size() + 3) +
                full_note(folder));
  }
  for (std::size_t i = 0; i < log.warnings.size() && i < kMaxNotices; ++i) {
    const std::string& w = log.warnings[i];  // "WARNING:text" -> "pdb2pqr warning: text"
    const std::size_t colon = w.find(':');
    std::string level = w.substr(0, colon);
    for (char& c : level) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    result.structure.notices.push_back("pdb2pqr " + level + ": " + trimmed(w.substr(colon + 1)));
  }
  if (log.warnings.size() > kMaxNotices)
    result.structure.notices.push_back("pdb2pqr: ... and " + std::to_string(log.warnings.size() - kMaxNotices) +
                                       " more warnings, all in its log (kept beside its PQR)");
}

/// "ALA 12, ARG 8, ...": pdb2pqr's residues by name, counted (what its templates charged).
std::string template_residues_text(const Structure& pqr) {
  std::map<std::string, std::size_t> counts;
  const AtomLabel* previous = nullptr;
  std::size_t residues = 0;
  for (const AtomLabel& l : pqr.labels) {
    if (previous && previous->same_residue(l)) continue;
    previous = &l;
    ++counts[l.residue_name()];
    ++residues;
  }
  std::string text = std::to_string(residues) + " residues (";
  bool first = true;
  for (const auto& [name, count] : counts) {
    text += (first ? "" : ", ") + name + " " + std::to_string(count);
    first = false;
  }
  return text + ")";
}

/// Appends what was charged here (Open Babel's ligands, ions) to pdb2pqr's structure and to the
/// PQR text kept (pdb2pqr's records, then these), and says first what stays out of the map.
void add_charged_here(const Completion& completion, const std::string& shown_input, Structure& structure,
                      std::string& pqr_text) {
  if (!completion.added.atoms.empty()) {
    const std::size_t end = pqr_text.rfind("\nEND");
    if (end != std::string::npos) pqr_text.resize(end + 1);
    pqr_text += "REMARK   6 espgrid " ESPGRID_VERSION ": the records below charged by espgrid (Open Babel, ions)\n" +
                pqr_records(completion.added, structure.atoms.size() + 1) + "END\n";
    const Atoms& add = completion.added.atoms;
    for (std::size_t i = 0; i < add.size(); ++i) {
      structure.atoms.push_back(add.x[i], add.y[i], add.z[i], add.charge[i], add.radius[i], add.element[i]);
      structure.labels.push_back(completion.added.labels[i]);
    }
  }
  std::size_t left_out = 0;
  std::string named;
  for (const ResidueCharging& c : completion.residues)
    if (c.way == ResidueCharging::Way::LeftOut) {
      ++left_out;
      named += (named.empty() ? "" : "; ") + c.residues + " (" + c.how + ")";
    }
  if (left_out > 0)
    structure.notices.insert(structure.notices.begin(),
                             std::to_string(left_out) + (left_out == 1 ? " residue of " : " residues of ") +
                                 shown_input + (left_out == 1 ? " is" : " are") + " not in the map: " + named +
                                 "; to include it, give a PQR with the charges and radii of every atom");
}

}  // namespace

AssignedStructure assign_charges(const std::string& input, StructureFormat format, const ChargeAssignment& assignment,
                                 const std::function<void()>& waiting) {
  check_charge_assignment(assignment);
  std::error_code ec;
  const bool standard_input = is_standard_input(input);
  if (!standard_input && fs::is_directory(input, ec)) throw Error(input + " is a directory, not a structure file");
  const bool named_file = !standard_input && input.rfind("/dev/", 0) != 0 && input.rfind("/proc/", 0) != 0;
  if (named_file && !read_through_gzip(input) && !fs::is_regular_file(input, ec))
    throw Error("cannot open " + input + ": no such file");
  const std::string pdb2pqr = pdb2pqr_program();
  const std::string gemmi = format == StructureFormat::Mmcif ? gemmi_program() : std::string();

  AssignedStructure result;
  result.folder_ = std::make_shared<TemporaryFolder>("espgrid-pdb2pqr", "pdb2pqr's work");
  const fs::path folder = result.folder_->path();
  result.assignment = assignment;
  const StagedInput staged = stage_input(input, format, result, folder, result.command_prefix_, gemmi, waiting);
  // The ligands pdb2pqr has no template for are charged by Open Babel meanwhile (its own core).
  // Streamed, not held: a structure may be larger than memory (its atoms are what is kept).
  const auto open_pdb = [&staged] {
    std::ifstream in(staged.pdb);
    if (!in) throw Error("cannot read " + staged.pdb + " (" + staged.shown + " for pdb2pqr): " + std::strerror(errno));
    return in;
  };
  const std::vector<PdbAtom> atoms = [&] {
    std::ifstream in = open_pdb();
    return read_pdb_atoms(in);
  }();
  const std::vector<std::pair<long, long>> bonds = [&] {
    std::ifstream in = open_pdb();
    return read_pdb_bonds(in);
  }();
  const double ph = assignment.ph.value_or(kDefaultLigandPh);
  LigandCharging ligands(ligand_candidates(atoms), bonds, folder, "ligands", ph, assignment.ligand_charges);

  result.pqr_name_ = staged.stem + ".pqr";
  std::string options;
  for (const std::string& option : pdb2pqr_options(assignment)) {
    options += ' ';  // (" " + word trips GCC 12's -Wrestrict false positive)
    options += shell_word(option);
  }
  result.command_options_ = fs::path(pdb2pqr).filename().string() + options + " " + staged.command_reads + " ";
  result.command = result.command_for(result.pqr_name_);
  run_pdb2pqr(result, pdb2pqr, staged, folder, result.pqr_name_, waiting);
  result.template_residues = template_residues_text(result.structure);
  result.template_charge = result.structure.atoms.total_charge();

  // What went in and what came out: pdb2pqr leaves out, with a warning at most, whatever it has
  // no parameters for. Ligands and ions are charged here; the rest is said first, where nobody misses it.
  result.account = account_for_atoms(atoms, result.structure);
  std::vector<const LigandCharging::Result*> charged;
  if (ligands.started()) charged.push_back(&ligands.result(waiting));
  std::optional<LigandCharging> later;
  const Completion completion =
      complete_structure(atoms, result.account, assignment.keep_water, assignment.ligand_charges, ph, charged,
                         [&](const std::vector<PdbAtom>& more) {
                           later.emplace(more, bonds, folder, "more-ligands", ph, assignment.ligand_charges);
                           return &later->result(waiting);
                         });
  result.charging = completion.residues;
  result.pqr_text_ = file_text(folder / result.pqr_name_);
  add_charged_here(completion, staged.shown, result.structure, result.pqr_text_);
  return result;
}

}  // namespace espgrid
