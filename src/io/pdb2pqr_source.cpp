#include "src/io/pdb2pqr_source.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>

#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/io/atomic_output_file.h"

extern char** environ;

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

/// Runs argv (argv[0] a path) in `folder` with stdin from /dev/null and stdout and stderr
/// into folder/`log_name`; no shell is involved, so no name needs quoting.
ProgramRun run_program(const std::vector<std::string>& argv, const fs::path& folder, const std::string& log_name) {
  const fs::path log = folder / log_name;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, folder.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error("cannot run " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error("waiting for " + argv[0] + ": " + std::strerror(errno));
  }
  ProgramRun run;
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  std::ifstream in(log, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  run.output = text.str();
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

std::string ended_how(const ProgramRun& run) {
  return run.signal ? "killed by signal " + std::to_string(run.signal) : "exit code " + std::to_string(run.exit_code);
}

/// A private folder under the system's temporary directory.
fs::path make_temporary_folder() {
  std::string pattern = (fs::temp_directory_path() / "espgrid-pdb2pqr-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error("cannot create a temporary folder for pdb2pqr: " + std::string(std::strerror(errno)));
  return pattern;
}

/// Removes a temporary folder on every path out of assign_charges until it is handed over.
struct FolderGuard {
  fs::path folder;
  ~FolderGuard() {
    std::error_code ignored;
    if (!folder.empty()) fs::remove_all(folder, ignored);
  }
};

}  // namespace

void check_charge_assignment(const ChargeAssignment& assignment) {
  const std::string& ff = assignment.force_field;
  const bool plain = !ff.empty() && ff.size() <= 32 && std::all_of(ff.begin(), ff.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c));
  });
  if (!plain)
    throw UsageError(
        "--forcefield takes a PDB2PQR force field name (AMBER, CHARMM, PARSE, TYL06, PEOEPB or SWANSON), got '" + ff +
        "'");
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

AssignedStructure::~AssignedStructure() {
  std::error_code ignored;
  if (!folder_.empty()) fs::remove_all(folder_, ignored);
}

AssignedStructure::AssignedStructure(AssignedStructure&& other) noexcept { *this = std::move(other); }

AssignedStructure& AssignedStructure::operator=(AssignedStructure&& other) noexcept {
  if (this != &other) {
    std::error_code ignored;
    if (!folder_.empty()) fs::remove_all(folder_, ignored);
    structure = std::move(other.structure);
    version = std::move(other.version);
    command = std::move(other.command);
    converted_with = std::move(other.converted_with);
    assignment = std::move(other.assignment);
    folder_ = std::move(other.folder_);
    pqr_ = std::move(other.pqr_);
    other.folder_.clear();
    other.pqr_.clear();
  }
  return *this;
}

std::string AssignedStructure::describe() const {
  std::string text =
      "pdb2pqr " + version + ", " + assignment.force_field + " force field, " +
      (assignment.ph ? "pH " + shortest_text(*assignment.ph) + " (PROPKA)" : "standard protonation states");
  if (!converted_with.empty()) text += ", mmCIF converted to PDB with " + converted_with;
  return text;
}

void AssignedStructure::keep(const std::string& destination) const {
  if (pqr_.empty()) throw Error("internal error: no PQR to keep");
  AtomicOutputFile out(destination);
  std::error_code ec;
  fs::copy_file(pqr_, out.temporary_path(), fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error("cannot write " + destination + ": " + ec.message());
  out.commit();
}

AssignedStructure assign_charges(const std::string& input, StructureFormat format, const ChargeAssignment& assignment) {
  check_charge_assignment(assignment);
  std::error_code ec;
  // PDB2PQR takes a name it cannot open for a PDB ID and downloads that entry: never let it.
  if (fs::is_directory(input, ec)) throw Error(input + " is a directory, not a structure file");
  if (!fs::is_regular_file(input, ec)) throw Error("cannot open " + input + ": no such file");
  const std::string pdb2pqr = pdb2pqr_program();
  const std::string gemmi = format == StructureFormat::Mmcif ? gemmi_program() : std::string();

  FolderGuard guard{make_temporary_folder()};
  const fs::path folder = guard.folder;
  const fs::path absolute_input = fs::absolute(input);
  std::string stem = fs::path(input).stem().string();
  if (stem.empty() || stem[0] == '.' || stem[0] == '-') stem = "structure" + stem;

  AssignedStructure result;
  result.assignment = assignment;
  std::string pdb_input = absolute_input.string();
  std::string command_prefix;
  if (format == StructureFormat::Mmcif) {
    // --shorten: PDB holds chain names of one or two characters; PDB2PQR drops them anyway,
    // but keeps chains apart by them (termini).
    const std::string converted = stem + ".pdb";
    const ProgramRun run = run_program(
        {gemmi, "convert", "--from=mmcif", "--to=pdb", "--shorten", pdb_input, converted}, folder, "gemmi.log");
    if (run.exit_code != 0)
      throw Error("gemmi could not convert " + input + " from mmCIF to PDB for pdb2pqr (" + ended_how(run) +
                  "); its messages:" + indented(tail(run.output, kTailLines)));
    const ProgramRun version = run_program({gemmi, "--version"}, folder, "gemmi-version.log");
    result.converted_with = trimmed(version.output).empty() ? "gemmi" : trimmed(lines_of(version.output).front());
    pdb_input = (folder / converted).string();
    command_prefix = "gemmi convert --from=mmcif --to=pdb --shorten " + input + " " + converted + " && ";
  }

  const std::string pqr_name = stem + ".pqr";
  std::vector<std::string> argv = {pdb2pqr, "--ff", assignment.force_field};
  if (assignment.ph) {
    argv.insert(argv.end(), {"--titration-state-method", "propka", "--with-ph", shortest_text(*assignment.ph)});
  }
  std::string options;
  for (std::size_t i = 1; i < argv.size(); ++i) options += " " + argv[i];
  argv.insert(argv.end(), {pdb_input, pqr_name});
  result.command = command_prefix + fs::path(pdb2pqr).filename().string() + options + " " +
                   (format == StructureFormat::Mmcif ? stem + ".pdb" : input) + " " + pqr_name;

  const ProgramRun run = run_program(argv, folder, "pdb2pqr-output.log");
  const Pdb2pqrLog log = parse_pdb2pqr_log(run.output);
  result.version = log.version.empty() ? "(version unknown)" : log.version;
  const fs::path pqr = folder / pqr_name;
  if (run.exit_code != 0) {
    const std::vector<std::string> said = log.failure.empty() ? tail(run.output, kTailLines) : log.failure;
    throw Error("pdb2pqr " + result.version + " failed on " + input + " (" + ended_how(run) +
                "); its messages:" + indented(said) +
                (format == StructureFormat::Mmcif
                     ? "\n  (the PDB file it read was converted from mmCIF by " + result.converted_with + ")"
                     : ""));
  }
  if (!fs::is_regular_file(pqr, ec) || fs::file_size(pqr, ec) == 0)
    throw Error("pdb2pqr " + result.version + " exited 0 on " + input +
                " but wrote no PQR; its last messages:" + indented(tail(run.output, kTailLines)));
  try {
    result.structure = read_structure(pqr.string(), StructureFormat::Pqr);
  } catch (const InputError& e) {
    throw Error("the PQR that pdb2pqr " + result.version + " made from " + input + " cannot be read: line " +
                std::to_string(e.line()) + ": " +
                std::string(e.what()).substr(e.file().size() + std::to_string(e.line()).size() + 3));
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
                                       " more warnings (run `" + result.command + "` to see them all)");
  result.folder_ = guard.folder.string();
  result.pqr_ = pqr.string();
  guard.folder.clear();  // the result owns it now
  return result;
}

}  // namespace espgrid
