// Charges from PDB2PQR (structure/pdb2pqr_source.h). Longer than 500 lines because it holds the
// whole exchange with pdb2pqr30 and gemmi (finding them, running them, reading their logs and
// output), so a change in how PDB2PQR behaves is made in one place.
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
#include "src/os/child_process.h"

namespace espgrid {
namespace {

namespace fs = std::filesystem;

/// PDB2PQR's warnings shown at most, the rest counted: a structure with many gaps repeats them.
constexpr std::size_t kMaxNotices = 10;
/// Lines of a failed program's output shown when none of them says what went wrong.
constexpr std::size_t kTailLines = 6;

/// `name` on the PATH (or `name` itself when it holds a '/'), if it is an executable file.
std::optional<std::string> find_program(const std::string& name) {
  const auto executable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? std::optional<std::string>(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (executable(candidate)) return candidate.string();
  }
  return std::nullopt;
}

/// The program named by environment variable `variable`, or `fallback` on the PATH; Error
/// saying what to install when there is none.
std::string resolve_program(const char* variable, const std::string& fallback, const std::string& needed_for,
                            const std::string& package) {
  const char* chosen = std::getenv(variable);
  if (chosen && *chosen) {
    if (auto found = find_program(chosen)) return *found;
    throw Error(std::string(variable) + "=" + chosen + " is not an executable program (" + needed_for + ")");
  }
  if (auto found = find_program(fallback)) return *found;
  throw Error(fallback + " was not found on the PATH: " + needed_for + " (Debian: apt-get install " + package +
              "; or set " + variable + "=PROGRAM)");
}

struct ProgramRun {
  int exit_code = -1;  ///< -1 when a signal ended it
  int signal = 0;
  std::string output;  ///< stdout and stderr together
};

/// Reads a whole file (a log in the temporary folder) as text; empty when it cannot.
std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The free space of the file system holding `folder`, for messages about a full TMPDIR: ""
/// when there is room, else " (... is full: N bytes free)".
std::string full_note(const fs::path& folder) {
  struct statvfs fs {};
  if (::statvfs(folder.c_str(), &fs) != 0) return "";
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (free_bytes >= 1024.0 * 1024.0 && fs.f_favail > 16) return "";
  const char* variable = std::getenv("TMPDIR");
  return "\n  (the temporary folder's file system is full: " + human_bytes(free_bytes) + " and " +
         std::to_string(fs.f_favail) + " files free in " + folder.parent_path().string() +
         (variable && *variable ? " (TMPDIR)" : "") + "; free space there or set TMPDIR to another directory)";
}

/// Runs argv (argv[0] a path) in `folder` (os/child_process.h: run_child, in a process
/// group the interrupt handler ends) with stdin from /dev/null and stdout and stderr into
/// folder/`log_name`; no shell is involved, so no name needs quoting.
ProgramRun run_program(const std::vector<std::string>& argv, const fs::path& folder, const std::string& log_name,
                       const std::function<void()>& waiting) {
  const fs::path log = folder / log_name;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    throw Error("cannot run " + fs::path(argv[0]).filename().string() + ": cannot create its log " + log.string() +
                ": " + std::strerror(error) + full_note(folder));
  }
  ChildExit exit;
  try {
    exit = run_child(argv, folder.string(), fd, waiting);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  ProgramRun run;
  run.exit_code = exit.exit_code;
  run.signal = exit.signal;
  run.output = file_text(log);
  return run;
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

/// The last `count` non-empty lines.
std::vector<std::string> tail(const std::string& text, std::size_t count) {
  std::vector<std::string> lines;
  for (const std::string& line : lines_of(text))
    if (!trimmed(line).empty()) lines.push_back(trimmed(line));
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(count));
  return lines;
}

std::string indented(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

/// `word` as a shell word: as it is when it needs no quoting, else in single quotes. For the
/// equivalent command lines people copy.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+,:=@%", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

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

/// Heavy atoms of a PDB text, for account_for_atoms: position (in 0.001 Å), residue, element.
struct PdbAtom {
  std::array<long long, 3> milli;
  std::string residue;   ///< "NAG B 501"
  std::string identity;  ///< residue + atom name: alternate locations share it
  bool hydrogen = false;
};

std::string field(const std::string& line, std::size_t from, std::size_t count) {
  if (line.size() <= from) return "";
  return trimmed(line.substr(from, count));
}

long long milli(double value) { return std::llround(value * 1000.0); }

}  // namespace

std::string Pdb2pqrAccount::left_out_text(std::size_t most) const {
  std::string text;
  for (std::size_t i = 0; i < left_out.size() && i < most; ++i) {
    const Residue& r = left_out[i];
    text += (i ? ", " : "") + r.name + " (" + std::to_string(r.left_out) + " of " + std::to_string(r.heavy) +
            (i == 0 ? " heavy atoms)" : ")");
  }
  if (left_out.size() > most) text += " and " + std::to_string(left_out.size() - most) + " more residues";
  return text;
}

Pdb2pqrAccount account_for_atoms(const std::string& pdb, const Atoms& pqr) {
  std::istringstream in(pdb);
  return account_for_atoms(in, pqr);
}

Pdb2pqrAccount account_for_atoms(std::istream& in, const Atoms& pqr) {
  Pdb2pqrAccount account;
  // The PQR's positions (pdb2pqr writes %8.3f, the PDB's own precision).
  std::set<std::array<long long, 3>> kept;
  for (std::size_t i = 0; i < pqr.size(); ++i) {
    const std::string element = pqr.element[i].text();
    if (element == "H" || element == "D") {
      ++account.output_hydrogens;
      continue;
    }
    kept.insert({milli(pqr.x[i]), milli(pqr.y[i]), milli(pqr.z[i])});
  }
  account.output_atoms = pqr.size();
  // The input's atoms of the first model, each once (its alternate locations: one atom).
  std::string line;
  std::map<std::string, bool> atom_kept;                                   // identity -> a position of it is in the PQR
  std::map<std::string, std::size_t> residue_at;                           // residue -> index in `residues`
  std::vector<std::pair<std::string, std::vector<std::string>>> residues;  // in input order
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("ENDMDL", 0) == 0) break;  // pdb2pqr reads the first model
    if (line.rfind("ATOM  ", 0) != 0 && line.rfind("HETATM", 0) != 0) continue;
    const std::string name = field(line, 12, 4);
    const std::string residue_name = field(line, 17, 3);
    const std::string chain = field(line, 21, 1);
    const std::string number = field(line, 22, 4) + field(line, 26, 1);
    std::string element = field(line, 76, 2);
    if (element.empty()) {  // from the atom name: its first letter after any digits ("1HB" -> H)
      const std::size_t letter = name.find_first_not_of("0123456789");
      element = letter == std::string::npos ? "" : name.substr(letter, 1);
    }
    for (char& c : element) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::string residue = residue_name + (chain.empty() ? "" : " " + chain) + " " + number;
    const std::string identity = residue + "/" + name;
    const bool hydrogen = element == "H" || element == "D";
    const auto coordinate = [&](std::size_t from) { return parse_number(field(line, from, 8)); };
    const auto x = coordinate(30), y = coordinate(38), z = coordinate(46);
    const bool present = x && y && z && kept.count({milli(*x), milli(*y), milli(*z)}) > 0;
    const auto [it, first] = atom_kept.emplace(identity, present);
    if (!first) {
      it->second = it->second || present;  // an alternate location of an atom already counted
      continue;
    }
    ++account.input_atoms;
    if (hydrogen) {
      ++account.input_hydrogens;
      continue;
    }
    auto [slot, new_residue] = residue_at.emplace(residue, residues.size());
    if (new_residue) residues.push_back({residue, {}});
    residues[slot->second].second.push_back(identity);
  }
  for (const auto& [residue, atoms] : residues) {
    Pdb2pqrAccount::Residue r{residue, 0, atoms.size()};
    for (const std::string& identity : atoms) r.left_out += atom_kept[identity] ? 0 : 1;
    if (r.left_out == 0) continue;
    account.left_out_atoms += r.left_out;
    account.left_out.push_back(std::move(r));
  }
  return account;
}

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
}

ChargeAssignment make_charge_assignment(std::string force_field, std::optional<double> ph) {
  for (char& c : force_field) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ChargeAssignment assignment{std::move(force_field), ph};
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
  return text;
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

namespace {

/// Writes `size` bytes to `fd`, retrying short writes; false with errno set on failure.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, std::min<std::size_t>(size, std::size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

/// Writes `text` to `destination` atomically; Error naming the destination and the reason.
void write_text_file(const std::string& destination, const std::string& text) {
  AtomicOutputFile out(destination);
  const std::string nothing = " (nothing written to " + destination + ")";
  const int fd = ::open(out.temporary_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw Error("cannot write " + destination + ": " + std::strerror(errno) + nothing);
  const bool written = write_all(fd, text.data(), text.size());
  const int error = errno;
  if (!written) {
    ::close(fd);
    throw Error("cannot write " + destination + ": " + std::strerror(error) + nothing);
  }
  if (::close(fd) != 0) throw Error("cannot write " + destination + ": " + std::strerror(errno) + nothing);
  out.commit();  // fsync first: a full disk that took the data lazily fails here, named
}

/// What the input is, for how it reaches pdb2pqr.
struct InputKind {
  bool standard_input = false;
  bool own_descriptor = false;  ///< /dev/... or /proc/...: a name only this process can read
  bool gzip = false;            ///< named .gz
  bool copied = false;          ///< copied into the folder rather than given by its name
};

/// What reaches pdb2pqr is a regular file: a plain file is given as it is, anything else
/// (standard input, a pipe such as <(zcat x.pdb.gz), gzip data) is copied into the folder
/// first. PDB2PQR takes a name it cannot open for a PDB ID and downloads that entry: never let
/// it see a name that is not a file. Throws Error for a directory or a missing file.
InputKind input_kind(const std::string& input) {
  std::error_code ec;
  InputKind kind;
  kind.standard_input = is_standard_input(input);
  if (!kind.standard_input && fs::is_directory(input, ec)) throw Error(input + " is a directory, not a structure file");
  // /dev/stdin and /proc/self/fd/N name this process's own descriptors: pdb2pqr, another
  // process with stdin from /dev/null, would read something else under the same name.
  kind.own_descriptor = input.rfind("/dev/", 0) == 0 || input.rfind("/proc/", 0) == 0;
  kind.gzip = !kind.standard_input && (input.size() > 3 && (input.compare(input.size() - 3, 3, ".gz") == 0 ||
                                                            input.compare(input.size() - 3, 3, ".GZ") == 0));
  kind.copied = kind.standard_input || kind.own_descriptor || read_through_gzip(input);
  if (!kind.copied && !fs::is_regular_file(input, ec)) throw Error("cannot open " + input + ": no such file");
  return kind;
}

/// Copies `input` (standard input, a pipe, gzip data, this process's own descriptor) to `copy`
/// for pdb2pqr, through the structure reader's line source: a read error, binary data or a gzip
/// stream cut short stops here with the file and line, never as a shorter structure. Streamed a
/// MiB at a time: a .pdb.gz may expand to more than memory holds. Returns the copy's path.
std::string copy_for_pdb2pqr(const std::string& input, const std::string& shown_input, const fs::path& copy) {
  const std::unique_ptr<LineSource> lines = open_structure_lines(input);
  const int fd = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const auto cannot_copy = [&](int error) {
    return Error("cannot copy " + shown_input + " for pdb2pqr into " + copy.string() + ": " + std::strerror(error) +
                 full_note(copy.parent_path()));
  };
  if (fd < 0) throw cannot_copy(errno);
  const std::unique_ptr<const int, void (*)(const int*)> closing(&fd, [](const int* f) { ::close(*f); });
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
  if (lines->empty()) throw Error(shown_input + " is empty: no structure to give pdb2pqr");
  return copy.string();
}

/// Converts the mmCIF file `cif` to PDB `converted` in `folder` with gemmi; returns gemmi's
/// version line. --shorten: PDB holds chain names of one or two characters; PDB2PQR drops them
/// anyway, but keeps chains apart by them (termini).
std::string convert_mmcif_to_pdb(const std::string& gemmi, const std::string& cif, const std::string& converted,
                                 const std::string& shown_input, const fs::path& folder,
                                 const std::function<void()>& waiting) {
  const ProgramRun run = run_program({gemmi, "convert", "--from=mmcif", "--to=pdb", "--shorten", cif, converted},
                                     folder, "gemmi.log", waiting);
  if (run.exit_code != 0)
    throw Error(
        "gemmi could not convert " + shown_input + " from mmCIF to PDB for pdb2pqr (" +
        (run.signal ? "killed by signal " + std::to_string(run.signal) : "exit code " + std::to_string(run.exit_code)) +
        "); its messages:" + indented(tail(run.output, kTailLines)) + full_note(folder));
  const ProgramRun version = run_program({gemmi, "--version"}, folder, "gemmi-version.log", waiting);
  return trimmed(version.output).empty() ? "gemmi" : trimmed(lines_of(version.output).front());
}

/// pdb2pqr's failure on `shown_input`, with what it said (its log's failure, or its last lines)
/// and what that means; `converted_with` names gemmi where the PDB it read came from mmCIF.
Error pdb2pqr_failure(const ProgramRun& run, const Pdb2pqrLog& log, const std::string& version,
                      const std::string& shown_input, const std::string& force_field, const std::string& converted_with,
                      const fs::path& folder) {
  std::vector<std::string> said = log.failure.empty() ? tail(run.output, kTailLines) : log.failure;
  if (said.empty()) said.push_back("(it printed nothing)");
  return Error(
      "pdb2pqr " + version + " failed on " + shown_input + " (" +
      (run.signal          ? "killed by signal " + std::to_string(run.signal)
       : run.exit_code < 0 ? std::string("it ended in a way the system did not report")
                           : "exit code " + std::to_string(run.exit_code)) +
      "); its messages:" + indented(said) + explain_failure(run.output, force_field) +
      (converted_with.empty() ? "" : "\n  (the PDB file it read was converted from mmCIF by " + converted_with + ")") +
      full_note(folder));
}

/// The notices a run of pdb2pqr leaves: the atoms it left out of its PQR, then its warnings
/// (at most kMaxNotices; all of them are in its log).
void add_pdb2pqr_notices(const Pdb2pqrAccount& account, const Pdb2pqrLog& log, const std::string& shown_input,
                         const std::string& force_field, std::vector<std::string>& notices) {
  if (account.left_out_atoms > 0)
    notices.push_back("pdb2pqr left " + std::to_string(account.left_out_atoms) + " of the " +
                      std::to_string(account.input_atoms - account.input_hydrogens) + " heavy atoms of " + shown_input +
                      " out of its PQR, so the map does not include them: " + account.left_out_text() + ". Its " +
                      force_field +
                      " templates have no place for them (a ligand, an ion, a modified residue, or atoms a terminal "
                      "residue lacks); to include them, give a PQR with their charges and radii");
  for (std::size_t i = 0; i < log.warnings.size() && i < kMaxNotices; ++i) {
    const std::string& w = log.warnings[i];  // "WARNING:text" -> "pdb2pqr warning: text"
    const std::size_t colon = w.find(':');
    std::string level = w.substr(0, colon);
    for (char& c : level) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    notices.push_back("pdb2pqr " + level + ": " + trimmed(w.substr(colon + 1)));
  }
  if (log.warnings.size() > kMaxNotices)
    notices.push_back("pdb2pqr: ... and " + std::to_string(log.warnings.size() - kMaxNotices) +
                      " more warnings, all in its log (kept beside its PQR)");
}

}  // namespace

void AssignedStructure::keep(const std::string& destination) const {
  if (pqr_.empty()) throw Error("internal error: no PQR to keep");
  // Read whole, written with explicit checks: fs::copy_file reported a full disk as
  // "Input/output error" (copy_file_range into /proc/self/fd/N).
  const std::string pqr = file_text(pqr_);
  if (pqr.empty()) throw Error("cannot keep pdb2pqr's PQR: " + pqr_ + " cannot be read");
  write_text_file(destination, pqr);
  write_text_file(log_path_for(destination), log);
}

AssignedStructure assign_charges(const std::string& input, StructureFormat format, const ChargeAssignment& assignment,
                                 const std::function<void()>& waiting) {
  check_charge_assignment(assignment);
  std::error_code ec;
  const InputKind kind = input_kind(input);
  const bool standard_input = kind.standard_input;
  const std::string pdb2pqr = pdb2pqr_program();
  const std::string gemmi = format == StructureFormat::Mmcif ? gemmi_program() : std::string();

  AssignedStructure result;
  result.folder_ = std::make_shared<TemporaryFolder>("espgrid-pdb2pqr", "pdb2pqr's work");
  const fs::path folder = result.folder_->path();
  std::string stem = structure_stem(input);
  if (stem.empty() || stem[0] == '.' || stem[0] == '-') stem = "structure" + stem;
  const std::string shown_input = standard_input ? std::string("standard input") : input;

  result.assignment = assignment;
  std::string given = input;  // the file the first program reads, as the command shows it
  std::string pdb_input;
  if (!kind.copied) {
    pdb_input = fs::absolute(input).string();
  } else {
    given = stem + (format == StructureFormat::Mmcif ? ".cif" : ".pdb");
    if (fs::path(input).filename() == given) given = stem + "-gunzipped" + fs::path(given).extension().string();
    pdb_input = copy_for_pdb2pqr(input, shown_input, folder / given);
    const bool compressed = kind.gzip || (!standard_input && !kind.own_descriptor && is_gzip_file(input));
    result.command_prefix_ = standard_input ? "cat > " + given + " && "
                             : compressed   ? "gunzip -c " + shell_word(input) + " > " + given + " && "
                                            : "cat " + shell_word(input) + " > " + given + " && ";
  }
  std::string pdb2pqr_reads = shell_word(given);
  if (format == StructureFormat::Mmcif) {
    const std::string converted = stem + ".pdb";
    result.converted_with = convert_mmcif_to_pdb(gemmi, pdb_input, converted, shown_input, folder, waiting);
    pdb_input = (folder / converted).string();
    result.command_prefix_ +=
        "gemmi convert --from=mmcif --to=pdb --shorten " + pdb2pqr_reads + " " + converted + " && ";
    pdb2pqr_reads = converted;
  }

  result.pqr_name_ = stem + ".pqr";
  std::vector<std::string> argv = {pdb2pqr, "--ff", assignment.force_field};
  if (assignment.ph) {
    argv.insert(argv.end(), {"--titration-state-method", "propka", "--with-ph", shortest_text(*assignment.ph)});
  }
  std::string options;
  for (std::size_t i = 1; i < argv.size(); ++i) options += " " + argv[i];
  argv.insert(argv.end(), {pdb_input, result.pqr_name_});
  result.command_options_ = fs::path(pdb2pqr).filename().string() + options + " " + pdb2pqr_reads + " ";
  result.command = result.command_for(result.pqr_name_);

  const ProgramRun run = run_program(argv, folder, "pdb2pqr-output.log", waiting);
  result.log = run.output;
  const Pdb2pqrLog log = parse_pdb2pqr_log(run.output);
  result.version = log.version.empty() ? "(version unknown)" : log.version;
  const fs::path pqr = folder / result.pqr_name_;
  if (run.exit_code != 0)
    throw pdb2pqr_failure(run, log, result.version, shown_input, assignment.force_field,
                          format == StructureFormat::Mmcif ? result.converted_with : "", folder);
  if (!fs::is_regular_file(pqr, ec) || fs::file_size(pqr, ec) == 0)
    throw Error("pdb2pqr " + result.version + " exited 0 on " + shown_input +
                " but wrote no PQR; its last messages:" + indented(tail(run.output, kTailLines)) + full_note(folder));
  try {
    result.structure = read_structure(pqr.string(), StructureFormat::Pqr);
  } catch (const InputError& e) {
    throw Error("the PQR that pdb2pqr " + result.version + " made from " + shown_input + " cannot be read: line " +
                std::to_string(e.line()) + ": " +
                std::string(e.what()).substr(e.file().size() + std::to_string(e.line()).size() + 3) +
                full_note(folder));
  }
  // What went in and what came out: pdb2pqr leaves out, with a warning at most, whatever it has
  // no parameters for (ligands, ions, modified residues). Said first, where nobody misses it.
  std::ifstream pdb_text(pdb_input);  // streamed: a structure may be larger than memory
  result.account = account_for_atoms(pdb_text, result.structure.atoms);
  add_pdb2pqr_notices(result.account, log, shown_input, assignment.force_field, result.structure.notices);
  result.pqr_ = pqr.string();
  return result;
}

}  // namespace espgrid
