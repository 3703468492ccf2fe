// libFuzzer target for the command line: the input is split into words (on spaces, tabs,
// line ends and NUL); the first word picks the verb (map, kernels, verify, bench, atoms,
// convert) and the words become its argv, as main() passes them (argv[0] is the verb). The
// verbs run in-process: the command-line library (src/cli/, src/bench/bench_command.cpp) is
// linked into this executable (fuzz/CMakeLists.txt).
//
// Accepted outcomes: a return code of 0 or 1, or espgrid::Error (UsageError included: cxxopts
// errors surface as UsageError) unless its message says "internal error". Anything else —
// another exception, a crash, a sanitizer report, a hang (libFuzzer's -timeout) — is a
// finding, as are, after the verb returned or threw:
//   * a temporary file (".NAME.partial.PID[.XXXXXX]" or ".NAME.probe.PID.XXXXXX", PID this
//     process's) left behind;
//   * a fixture whose bytes changed: an input is never replaced or written through (issue
//     #16: "-o p.dx" with the input p.dx once replaced the input with the map).
//
// Confinement, so that fuzzing can neither do huge work nor touch files outside a temp dir:
//   * the process works in a fresh temporary directory holding copies of a few small
//     fixtures (a.pqr, b.xyz, c.extxyz, d.pqr, bad.pqr, m.pdb, p.dx: a PQR named like a map,
//     e.dx, e.mrc, e.vti: a 2 x 2 x 3 map for convert); inputs with a word that could reach outside it
//     (absolute paths, "..", see stays_inside) are skipped, so every path the verbs see is
//     inside that directory; everything else there is removed after each input;
//   * ESPGRID_MAX_GRID_POINTS=100000 caps every grid (check_grid_fits refuses larger ones);
//   * ESPGRID_PDB2PQR and ESPGRID_GEMMI name no program, so PDB/mmCIF input runs nothing;
//   * inputs whose work options exceed small bounds are skipped: --threads 5 to 1024 (above,
//     it is refused before any thread starts), and for bench --atoms over 2000, --repeats
//     over 2, --warmup over 1, --budget over 0.01 s, --check-points over 100, any --sweep but
//     none; bench also gets "--repeats 1 --warmup 0 --budget 0.002 --check-points 20" in front
//     of the fuzzed words, each unless the words give that option (a repeated option is refused),
//     and "--atoms 2000" unless given or a word names a file (bench's default is 100,000 atoms:
//     0.5 s in a release build, over the 20 s limit under ASan and coverage, found by fuzzing),
//     and "--kernel cpu-reference,cpu-simd" unless given (every kernel includes cpu-msm, whose
//     set-up on a 38-atom grid is 44 ms in release and 4-15 s under ASan and coverage: reported
//     as a slow unit in CI, found by fuzzing; cpu-msm stays reachable through an explicit --kernel);
//   * inputs that give MSM heavy cutoff stencils are skipped: --accuracy finer than 1e-3,
//     --msm-spacing under 2 Å, --msm-cutoff over 12 Å (valid values only; invalid ones are
//     still fuzzed). The stencil work grows as (a/h)³: a = 12 Å, h = 1 Å (the 1e-4 preset of
//     Debye and distance, or explicit --msm-* for any model) on a 38-atom, 22,500-point map
//     is 0.1 s in release and 36-48 s under ASan and coverage, past the 20 s limit (CI's
//     timeout of 2026-11-26, once Debye had MSM); with the ignore list below still 12 s for
//     bench's 2,000 atoms on 46³ points. Those settings are exercised by the unit tests
//     (test_msm, under ASan in `ctest -L cpu`); every coarser one is fuzzed here;
//   * MSM's lattices count against ESPGRID_MAX_GRID_POINTS too (msm_plan.cpp): a lattice covers
//     the map's box at h whatever the map's spacing, so 83 map points 55 Å apart made a
//     2,263 x 15 x 19 lattice and a top-level sum of 25 s here (0.4 s in release; found by
//     fuzzing, 2026-11-26: `verify b.xyz --spacing 55,0.5,1 --dims 83,10,20 --kernel all`);
//   * the numerical loops are built without coverage feedback (fuzz/coverage-ignorelist.txt):
//     libFuzzer's comparison hooks made them 40-270x slower than ASan alone;
//   * at most 48 words of at most 300 bytes (names over NAME_MAX are reachable).
// Set ESPGRID_FUZZ_VERBOSE=1 to see the verbs' standard output (normally sent to /dev/null).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/cli/commands.h"
#include "src/core/errors.h"
#include "src/core/text_parsing.h"

namespace {

namespace fs = std::filesystem;

fs::path g_dir;
const std::vector<std::pair<std::string, std::string>> kFixtures = {
    {"tests/data/pqr_whitespace.pqr", "a.pqr"},
    {"tests/data/xyz_plain.xyz", "b.xyz"},
    {"tests/data/xyz_extended_reordered.xyz", "c.extxyz"},
    {"tests/data/pqr_fixed_column.pqr", "d.pqr"},
    {"tests/data/bad_nan_charge.pqr", "bad.pqr"},
    {"tests/data/pqr_whitespace.pqr", "m.pdb"},
    {"tests/data/pqr_whitespace.pqr", "p.dx"},
    {"fuzz/fixtures/tiny.dx", "e.dx"},
    {"fuzz/fixtures/tiny.mrc", "e.mrc"},
    {"fuzz/fixtures/tiny.vti", "e.vti"},
};
std::vector<std::string> g_fixture_bytes;  // each fixture's bytes as copied, in kFixtures' order

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nespgrid fuzz finding: %s\n", what.c_str());
  std::abort();
}

void remove_dir() {
  std::error_code ignored;
  if (!g_dir.empty()) fs::remove_all(g_dir, ignored);
}

/// False for a word that could name a file outside the working directory: one with "..",
/// one starting with '/', "=/" (--output=/x), or a '/' in an option word other than
/// --units=... ("-o/x" gives -o the value "/x"). Relative names with '/' ("kT/e", "dir/x.dx")
/// stay inside.
bool stays_inside(const std::string& w) {
  if (w.find('/') == std::string::npos) return true;
  if (w.find("..") != std::string::npos || w.front() == '/' || w.find("=/") != std::string::npos) return false;
  return w.front() != '-' || w.rfind("--units=", 0) == 0;
}

/// The value given to option `name` by words[i] ("--name=v" or "--name v"), or nullopt when
/// words[i] is not that option; `missing` is set when the option has no value word.
std::optional<std::string> option_value(const std::vector<std::string>& words, std::size_t i, std::string_view name,
                                        bool& missing) {
  const std::string& w = words[i];
  const std::string flag = "--" + std::string(name);
  if (w == flag) {
    if (i + 1 < words.size()) return words[i + 1];
    missing = true;
    return std::string();
  }
  if (w.rfind(flag + "=", 0) == 0) return w.substr(flag.size() + 1);
  return std::nullopt;
}

bool within(const std::string& text, double lo, double hi) {
  const auto v = espgrid::parse_number(text);
  return v && std::isfinite(*v) && *v >= lo && *v <= hi;
}

/// False when the words could ask for more work than the bounds above allow.
bool work_is_bounded(const std::string& verb, const std::vector<std::string>& words) {
  // An option's value outside [lo, hi] skips the input; with `skip_inside`, a value inside it
  // does (MSM settings whose cutoff stencils are heavy: valid values in those ranges only, so
  // the refusals of invalid ones are still fuzzed).
  struct Bound {
    const char* option;
    double lo, hi;
    bool bench_only;
    bool skip_inside = false;
  };
  static const Bound kBounds[] = {{"atoms", 1, 2000, true},
                                  {"repeats", 1, 2, true},
                                  {"warmup", 0, 1, true},
                                  {"budget", 1e-6, 0.01, true},
                                  {"check-points", 1, 100, true},
                                  {"accuracy", 1e-300, 0.99e-3, false, true},
                                  {"msm-spacing", 1e-300, 1.99, false, true},
                                  {"msm-cutoff", 12.01, 1e300, false, true}};
  for (std::size_t i = 0; i < words.size(); ++i) {
    bool no_value = false;
    if (const auto threads = option_value(words, i, "threads", no_value); threads && !no_value) {
      const auto n = espgrid::parse_number(*threads);
      if (n && *n > 4 && *n <= 1024) return false;  // beyond 1024 (or not a number) is refused at once
    }
    for (const Bound& b : kBounds) {
      if (b.bench_only && verb != "bench") continue;
      bool missing = false;
      const auto value = option_value(words, i, b.option, missing);
      if (value && !missing && within(*value, b.lo, b.hi) == b.skip_inside) return false;
    }
    if (verb == "bench" && words[i].rfind("--sweep", 0) == 0 && words[i] != "--sweep-only") {
      bool missing = false;
      const auto value = option_value(words, i, "sweep", missing);
      if (!value || (!missing && *value != "none")) return false;
    }
  }
  return true;
}

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Whether `name` has the shape of a temporary file of this process: "....partial.PID" with
/// an optional ".XXXXXX", or "....probe.PID.XXXXXX" (src/os/atomic_output_file.cpp), PID being
/// ours (the verbs run in-process). A fuzzed output name may itself contain ".probe." (CI found
/// "-o .probe.\x01x.dx" written as asked and flagged); only the exact shape with our PID is ours.
bool is_our_temporary(const std::string& name) {
  const std::string pid = std::to_string(::getpid());
  for (const std::string kind : {".partial.", ".probe."}) {
    for (std::size_t at = name.find(kind + pid); at != std::string::npos; at = name.find(kind + pid, at + 1)) {
      const std::string rest = name.substr(at + kind.size() + pid.size());
      const bool suffix = rest.size() == 7 && rest[0] == '.' &&
                          rest.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 1) ==
                              std::string::npos;
      if (suffix || (kind == ".partial." && rest.empty())) return true;
    }
  }
  return false;
}

/// The names the words give as outputs only: the value of -o, --output, --keep-pqr or --json
/// (also "-oNAME" and "--output=NAME"), and never as any other word. Writing such a file is what
/// the user asked for, even where it is one of the fixtures (`convert e.mrc -o e.dx`, found by
/// fuzzing once convert read .mrc); a fixture named anywhere else (the input) must not change.
std::vector<std::string> output_only_names(const std::vector<std::string>& words) {
  static const char* const kOutputs[] = {"-o", "--output", "--keep-pqr", "--json"};
  std::vector<std::string> outputs, others;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    bool taken = false;
    for (const char* flag : kOutputs) {
      const std::string f = flag;
      if (w == f && i + 1 < words.size()) {
        outputs.push_back(words[++i]);
        taken = true;
      } else if (w.size() > f.size() && w.compare(0, f.size(), f) == 0) {
        const std::string rest = w.substr(f.size());
        if (f == "-o" && rest[0] != '-') outputs.push_back(rest), taken = true;
        if (f != "-o" && rest[0] == '=') outputs.push_back(rest.substr(1)), taken = true;
      }
      if (taken) break;
    }
    if (!taken) {
      others.push_back(w);
      const auto eq = w.find('=');
      if (eq != std::string::npos) others.push_back(w.substr(eq + 1));
    }
  }
  // Compared as the paths they name: `-o ./p.dx` asks for p.dx (a false finding, 2026-11-26),
  // and `map ./p.dx -o p.dx` names the input.
  const auto normal = [](const std::string& name) { return fs::path(name).lexically_normal().string(); };
  for (std::string& name : others) name = normal(name);
  std::vector<std::string> out;
  for (const std::string& name : outputs)
    if (std::find(others.begin(), others.end(), normal(name)) == others.end()) out.push_back(normal(name));
  return out;
}

void clean_dir(const std::vector<std::string>& may_change = {}) {
  for (const auto& entry : fs::directory_iterator(g_dir)) {
    const std::string name = entry.path().filename().string();
    if (is_our_temporary(name)) finding("temporary file left behind: " + name);
    bool fixture = false;
    for (const auto& f : kFixtures) fixture = fixture || f.second == name;
    if (!fixture) fs::remove_all(entry.path());
  }
  for (std::size_t i = 0; i < kFixtures.size(); ++i) {
    const fs::path file = g_dir / kFixtures[i].second;
    if (fs::is_symlink(file) || !fs::is_regular_file(file) || file_bytes(file) != g_fixture_bytes[i]) {
      if (std::find(may_change.begin(), may_change.end(), kFixtures[i].second) == may_change.end())
        finding("the input " + kFixtures[i].second + " was changed");
      fs::remove_all(file);  // an output the words asked for: put the fixture back
      fs::copy_file(fs::path(ESPGRID_SOURCE_DIR) / kFixtures[i].first, file);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Under $TMPDIR (scripts/hardening.sh points it into the build folder and empties it: when
  // libFuzzer stops on a finding or a time limit, atexit handlers may not run).
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/espgrid-fuzz-cli-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) finding("mkdtemp failed in " + templ);
  g_dir = templ;
  std::atexit(remove_dir);
  for (const auto& [from, to] : kFixtures) {
    fs::copy_file(fs::path(ESPGRID_SOURCE_DIR) / from, g_dir / to, fs::copy_options::overwrite_existing);
    g_fixture_bytes.push_back(file_bytes(g_dir / to));
  }
  if (::chdir(g_dir.c_str()) != 0) finding("chdir failed");
  // The leftover check must still see the writer's real names (and not a user's look-alike).
  const std::string pid = std::to_string(::getpid());
  if (!is_our_temporary(".m.dx.partial." + pid + ".aZ09xY") || !is_our_temporary(".m.dx.probe." + pid + ".aZ09xY") ||
      is_our_temporary(".probe.x.dx") || is_our_temporary(".m.dx.probe." + pid + ".dx"))
    finding("is_our_temporary no longer matches the temporary names of src/os/atomic_output_file.cpp");
  ::setenv("ESPGRID_MAX_GRID_POINTS", "100000", 1);
  // PDB/mmCIF input would start pdb2pqr30 and gemmi (seconds each): point them at a program
  // that does not exist, so m.pdb ends in espgrid's "not an executable program" error.
  ::setenv("ESPGRID_PDB2PQR", "/nonexistent/pdb2pqr-disabled-while-fuzzing", 1);
  ::setenv("ESPGRID_GEMMI", "/nonexistent/gemmi-disabled-while-fuzzing", 1);
  const char* verbose = std::getenv("ESPGRID_FUZZ_VERBOSE");
  if (!(verbose && std::strcmp(verbose, "1") == 0)) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);  // libFuzzer reports on stderr
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words;
  std::string current;
  for (std::size_t i = 0; i <= size; ++i) {
    const char c = i < size ? static_cast<char>(data[i]) : ' ';
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0') {
      if (!current.empty()) words.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (words.empty() || words.size() > 48) return 0;
  for (const std::string& w : words)
    if (w.size() > 300 || !stays_inside(w)) return 0;
  const std::string verb = words[0];
  using Verb = int (*)(int, char**);
  Verb run = nullptr;
  if (verb == "map") run = espgrid::cli::run_map;
  if (verb == "kernels") run = espgrid::cli::run_kernels;
  if (verb == "verify") run = espgrid::cli::run_verify;
  if (verb == "bench") run = espgrid::cli::run_bench;
  if (verb == "atoms") run = espgrid::cli::run_atoms;
  if (verb == "convert") run = espgrid::cli::run_convert;
  if (run == nullptr) return 0;
  if (!work_is_bounded(verb, words)) return 0;

  std::vector<std::string> args = {verb};
  if (verb == "bench") {
    const std::pair<const char*, const char*> kQuick[] = {{"repeats", "1"},    {"warmup", "0"},
                                                          {"budget", "0.002"}, {"check-points", "20"},
                                                          {"atoms", "2000"},   {"kernel", "cpu-reference,cpu-simd"}};
    // A structure file and --atoms are refused together: no --atoms when a word names a file.
    bool names_a_file = false;
    std::error_code unreadable;  // an over-long or odd name is simply not a file here
    for (std::size_t i = 1; i < words.size(); ++i)
      names_a_file = names_a_file || fs::exists(g_dir / words[i], unreadable);
    for (const auto& [option, value] : kQuick) {
      bool given = false, missing = false;
      for (std::size_t i = 1; i < words.size(); ++i) given = given || option_value(words, i, option, missing);
      if (std::strcmp(option, "atoms") == 0 && names_a_file) continue;
      if (!given) args.insert(args.end(), {std::string("--") + option, value});
    }
  }
  args.insert(args.end(), words.begin() + 1, words.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  try {
    const int code = run(static_cast<int>(args.size()), argv.data());
    if (code != 0 && code != 1) finding("verb returned " + std::to_string(code));
  } catch (const espgrid::Error& e) {
    if (std::strlen(e.what()) == 0) finding("espgrid::Error with an empty message");
    // "internal error" marks a state espgrid believes impossible (a non-finite potential, a
    // map of the wrong size): reaching it from the command line is a bug.
    if (std::strstr(e.what(), "internal error") != nullptr) finding(std::string("reached: ") + e.what());
  }
  // Any other exception escapes to libFuzzer, which reports it as a crash.
  std::fflush(stdout);
  clean_dir(output_only_names(words));
  return 0;
}
