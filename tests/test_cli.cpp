// End-to-end tests of the espgrid executable (ESPGRID_BINARY), run from the source tree so
// that input paths print as "tests/data/...". Every test writes into its own fresh
// temporary directory and checks what is (and is not) left there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "src/core/units.h"
#include "src/maps/map_formats.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/structure_reader.h"
#include "tests/file_helpers.h"

namespace {

namespace fs = std::filesystem;
using namespace espgrid;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

using espgrid::testing::contains;
using espgrid::testing::slurp;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.code << "\n--- stdout ---\n" << r.out << "--- stderr ---\n" << r.err;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("espgrid_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + info->name());
    fs::remove_all(dir_);
    ASSERT_TRUE(fs::create_directories(dir_));
    capture_ = fs::temp_directory_path() /
               ("espgrid_cli_capture_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(capture_);
    ASSERT_TRUE(fs::create_directories(capture_));
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
    fs::remove_all(capture_, ignored);
  }

  /// Runs `espgrid ARGS` (ARGS already shell-quoted where needed) in the source directory.
  Result run(const std::string& args) const {
    const fs::path out = capture_ / "stdout", err = capture_ / "stderr";
    const std::string command = "cd " + shell_quote(ESPGRID_SOURCE_DIR) + " && " + shell_quote(ESPGRID_BINARY) + " " +
                                args + " </dev/null >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
    const int status = std::system(command.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string qpath(const std::string& name) const { return shell_quote(path(name)); }

  std::vector<std::string> dir_entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    return names;
  }

  /// Nothing but `allowed` in the output directory: no map, no ".NAME.partial.PID".
  void expect_dir_holds_only(const std::vector<std::string>& allowed) const {
    for (const std::string& name : dir_entries()) {
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), name), allowed.end()) << "left behind: " << name;
      EXPECT_FALSE(contains(name, ".partial.")) << "temporary file left behind: " << name;
    }
  }

  /// An error the user sees: one "espgrid: error:" line, no C++ runtime noise.
  static void expect_clean_error(const Result& r) {
    EXPECT_TRUE(contains(r.err, "espgrid: error: ")) << r;
    for (const char* noise : {"terminate called", "std::", "what()", "Aborted", "core dumped", "Segmentation"})
      EXPECT_FALSE(contains(r.err, noise)) << "'" << noise << "' in stderr:\n" << r;
  }

  fs::path dir_;
  fs::path capture_;
};

constexpr const char* kSmall = "tests/data/pqr_whitespace.pqr";  // 38 atoms, +2 e
constexpr const char* kCoarse = " --spacing 1 --padding 3";

// ---- usage and help -------------------------------------------------------------------------

TEST_F(Cli, NoArgumentsPrintsUsageAndFails) {
  const Result r = run("");
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.out + r.err, "usage: espgrid VERB [options]")) << r;
  for (const char* verb : {"map", "kernels", "verify"}) EXPECT_TRUE(contains(r.out + r.err, verb)) << r;
}

TEST_F(Cli, HelpExitsZeroAndListsVerbs) {
  for (const char* flag : {"--help", "-h", "help"}) {
    const Result r = run(flag);
    EXPECT_EQ(r.code, 0) << r;
    EXPECT_TRUE(contains(r.out, "usage: espgrid VERB [options]")) << r;
    EXPECT_TRUE(contains(r.out, "map ")) << r;
    EXPECT_TRUE(contains(r.out, "kernels ")) << r;
    EXPECT_TRUE(contains(r.out, "verify ")) << r;
    EXPECT_TRUE(r.err.empty()) << r;
  }
  const Result v = run("--version");
  EXPECT_EQ(v.code, 0) << v;
  EXPECT_TRUE(contains(v.out, std::string("espgrid ") + ESPGRID_VERSION)) << v;
}

TEST_F(Cli, MapHelpMentionsItsOptions) {
  const Result r = run("map --help");
  EXPECT_EQ(r.code, 0) << r;
  for (const char* option : {"--output", "--spacing", "--padding", "--origin", "--dims", "--units", "--dielectric",
                             "--temperature", "--kernel", "--backend", "--threads", "--format", ".vti", ".dx"})
    EXPECT_TRUE(contains(r.out, option)) << "map --help lacks " << option << "\n" << r;
  expect_dir_holds_only({});
}

TEST_F(Cli, VerifyHelpMentionsItsOptions) {
  const Result r = run("verify --help");
  EXPECT_EQ(r.code, 0) << r;
  for (const char* option : {"--kernel", "--spacing", "--padding", "--units", "--threads", "--model", "reference"})
    EXPECT_TRUE(contains(r.out, option)) << "verify --help lacks " << option << "\n" << r;
  EXPECT_FALSE(contains(r.out, "--output")) << r;
}

// ---- map ---------------------------------------------------------------------------------------

TEST_F(Cli, MapWritesDxAndReportsTheRun) {
  const Result r = run(std::string("map ") + kSmall + " -o " + qpath("X.dx") + kCoarse);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "input      tests/data/pqr_whitespace.pqr: 38 atoms, total charge +2.0000 e")) << r;
  EXPECT_TRUE(contains(r.out, "throughput ")) << r;
  EXPECT_TRUE(contains(r.out, "atom-evaluations/s")) << r;
  EXPECT_TRUE(contains(r.out, "wrote      " + path("X.dx"))) << r;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex(R"(grid +(\d+) x (\d+) x (\d+) = ([\d,]+) points, spacing 1,1,1)")))
      << r;
  const long nx = std::stol(m[1]), ny = std::stol(m[2]), nz = std::stol(m[3]);
  ASSERT_TRUE(fs::is_regular_file(path("X.dx")));
  expect_dir_holds_only({"X.dx"});

  // The file holds the grid the summary describes, covering every atom with >= 3 Å padding.
  const espgrid::PotentialMap map = espgrid::read_dx(path("X.dx"));
  EXPECT_EQ(map.grid.dims[0], nx);
  EXPECT_EQ(map.grid.dims[1], ny);
  EXPECT_EQ(map.grid.dims[2], nz);
  const espgrid::Structure s =
      espgrid::read_structure(std::string(ESPGRID_SOURCE_DIR) + "/" + kSmall, espgrid::StructureFormat::Pqr);
  for (int a = 0; a < 3; ++a) {
    EXPECT_EQ(map.grid.spacing[static_cast<std::size_t>(a)], 1.0);
    const auto& coord = a == 0 ? s.atoms.x : a == 1 ? s.atoms.y : s.atoms.z;
    const double lo = *std::min_element(coord.begin(), coord.end());
    const double hi = *std::max_element(coord.begin(), coord.end());
    const double first = map.grid.origin[static_cast<std::size_t>(a)];
    const double last = first + static_cast<double>(map.grid.dims[static_cast<std::size_t>(a)] - 1);
    EXPECT_LE(first, lo - 3 + 1e-6) << "axis " << a;
    EXPECT_GE(last, hi + 3 - 1e-6) << "axis " << a;
    // On the lattice of the 1 Å spacing, less than one spacing of slack on each side.
    EXPECT_EQ(first, std::round(first)) << "axis " << a;
    EXPECT_LT(lo - 3 - first, 1.0) << "axis " << a << ": a whole extra cell";
    EXPECT_LT(last - (hi + 3), 1.0) << "axis " << a << ": a whole extra cell";
  }
  // Spot values against a direct Coulomb sum in kT/e at 298.15 K, ε = 1 (the defaults), at
  // the corners and the centre: checks the values and where the file puts them.
  for (float v : map.values) ASSERT_TRUE(std::isfinite(v));
  const double factor = espgrid::coulomb_factor(espgrid::PhysicsOptions{});
  const std::array<std::array<long, 3>, 6> points = {
      {{0, 0, 0}, {nx - 1, 0, 0}, {0, ny - 1, 0}, {0, 0, nz - 1}, {nx - 1, ny - 1, nz - 1}, {nx / 2, ny / 2, nz / 2}}};
  for (const auto& p : points) {
    const double px = map.grid.position(0, p[0]), py = map.grid.position(1, p[1]), pz = map.grid.position(2, p[2]);
    double sum = 0, magnitude = 0;
    for (std::size_t i = 0; i < s.atoms.size(); ++i) {
      const double r = std::hypot(px - s.atoms.x[i], py - s.atoms.y[i], pz - s.atoms.z[i]);
      sum += s.atoms.charge[i] / r;
      magnitude += std::fabs(s.atoms.charge[i]) / r;
    }
    const float value = map.values[static_cast<std::size_t>(p[0] + nx * (p[1] + ny * p[2]))];
    EXPECT_NEAR(value, factor * sum, 1e-5 * factor * magnitude) << "point " << p[0] << "," << p[1] << "," << p[2];
  }
}

// MRC is written while the map is computed; the time line says how much writing was streamed.
TEST_F(Cli, MapWritesMrcWhileComputing) {
  const Result r = run(std::string("map ") + kSmall + " -o " + qpath("X.mrc") + " -o " + qpath("X.ccp4") + kCoarse);
  ASSERT_EQ(r.code, 0) << r;
  const std::string mrc = slurp(path("X.mrc"));
  ASSERT_GT(mrc.size(), 1024u);
  EXPECT_EQ(mrc.substr(208, 4), "MAP ");
  EXPECT_EQ(mrc, slurp(path("X.ccp4")));
  EXPECT_TRUE(contains(r.out, "wrote      " + path("X.mrc"))) << r;
  EXPECT_TRUE(contains(r.out, "streamed during compute")) << r;
  expect_dir_holds_only({"X.mrc", "X.ccp4"});
}

TEST_F(Cli, MapWritesVtiWhenBuiltWithVtk) {
  // Uncompressed (the default) espgrid writes itself, with or without VTK.
  const Result r = run(std::string("map ") + kSmall + " -o " + qpath("X.vti") + " -o " + qpath("X.dx") + kCoarse);
  ASSERT_EQ(r.code, 0) << r;
  ASSERT_TRUE(fs::is_regular_file(path("X.vti")));
  const std::string vti = slurp(path("X.vti"));
  EXPECT_TRUE(contains(vti, "<VTKFile")) << vti.substr(0, 200);
  EXPECT_TRUE(contains(vti, "ImageData")) << vti.substr(0, 200);
  EXPECT_TRUE(contains(vti, "potential")) << vti.substr(0, 400);
  EXPECT_TRUE(contains(r.out, "wrote      " + path("X.vti"))) << r;
  EXPECT_TRUE(fs::is_regular_file(path("X.dx")));
  expect_dir_holds_only({"X.vti", "X.dx"});
  // Compressed needs VTK's writer.
  const Result z = run(std::string("map ") + kSmall + " -o " + qpath("Z.vti") + " --compression zlib" + kCoarse);
#if ESPGRID_HAVE_VTK
  ASSERT_EQ(z.code, 0) << z;
  EXPECT_TRUE(contains(slurp(path("Z.vti")), "vtkZLibDataCompressor"));
  expect_dir_holds_only({"X.vti", "X.dx", "Z.vti"});
#else
  EXPECT_EQ(z.code, 2) << z;
  EXPECT_TRUE(contains(z.err, "without VTK")) << z;
  expect_clean_error(z);
  expect_dir_holds_only({"X.vti", "X.dx"});  // refused before anything was computed
#endif
}

TEST_F(Cli, MapReadsXyzAndExplicitGrid) {
  const Result r = run("map tests/data/xyz_extended_reordered.xyz -o " + qpath("a.dx") +
                       " --origin -1,-2,-1 --dims 4,5,6 --spacing 1 --units V");
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "8 atoms, total charge -1.0000 e")) << r;
  EXPECT_TRUE(contains(r.out, "4 x 5 x 6 = 120 points")) << r;
  const espgrid::PotentialMap map = espgrid::read_dx(path("a.dx"));
  EXPECT_EQ(map.grid.dims, (std::array<std::int64_t, 3>{4, 5, 6}));
  EXPECT_EQ(map.grid.origin, (std::array<double, 3>{-1, -2, -1}));
  expect_dir_holds_only({"a.dx"});
}

// ---- bad inputs -----------------------------------------------------------------------------------

struct BadInput {
  const char* file;
  int line;
  const char* word;
};

TEST_F(Cli, BadInputsFailWithFileLineAndLeaveNothing) {
  const BadInput cases[] = {
      {"tests/data/bad_coord_nonnumber.pqr", 2, "not a number"},
      {"tests/data/bad_missing_field.pqr", 3, "missing"},
      {"tests/data/bad_inf_coord.pqr", 3, "not finite"},
      {"tests/data/bad_nan_charge.pqr", 4, "not finite"},
      {"tests/data/bad_count_too_large.xyz", 1, "line 1 says 12"},
      {"tests/data/bad_count_not_number.xyz", 1, "not a whole number"},
      {"tests/data/bad_binary.pqr", 1, "binary"},
      {"tests/data/xyz_nocharge.xyz", 3, "charges"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.file);
    const Result r = run(std::string("map ") + c.file + " -o " + qpath("out.dx") + kCoarse);
    EXPECT_EQ(r.code, 1) << r;
    EXPECT_TRUE(contains(r.err, std::string("espgrid: error: ") + c.file + ":" + std::to_string(c.line) + ": ")) << r;
    EXPECT_TRUE(contains(r.err, c.word)) << r;
    expect_clean_error(r);
    EXPECT_FALSE(fs::exists(path("out.dx")));
    expect_dir_holds_only({});
    EXPECT_FALSE(contains(r.out, "wrote")) << r;
  }
}

TEST_F(Cli, EmptyAndAtomlessInputsFail) {
  for (const char* file : {"tests/data/bad_empty.pqr", "tests/data/bad_empty.xyz", "tests/data/bad_remark_only.pqr"}) {
    SCOPED_TRACE(file);
    const Result r = run(std::string("map ") + file + " -o " + qpath("out.dx") + kCoarse);
    EXPECT_EQ(r.code, 1) << r;
    EXPECT_TRUE(contains(r.err, std::string("espgrid: error: ") + file + ":")) << r;
    EXPECT_TRUE(contains(r.err, "empty") || contains(r.err, "no ATOM")) << r;
    expect_clean_error(r);
    expect_dir_holds_only({});
  }
}

TEST_F(Cli, MissingInputFileFails) {
  const Result r = run("map " + qpath("nothere.pqr") + " -o " + qpath("out.dx") + kCoarse);
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "cannot open " + path("nothere.pqr"))) << r;
  expect_clean_error(r);
  expect_dir_holds_only({});
}

TEST_F(Cli, VerifyOnBadInputFails) {
  const Result r = run("verify tests/data/bad_nan_charge.pqr" + std::string(kCoarse));
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "tests/data/bad_nan_charge.pqr:4: ")) << r;
  expect_clean_error(r);
}

// ---- bad options ----------------------------------------------------------------------------------

struct BadOption {
  const char* name;
  std::string args;  // after "map INPUT", with the output path given as {OUT}
  int code;
  const char* message;
};

TEST_F(Cli, BadOptionsFailClearlyAndWriteNothing) {
  const std::string out = qpath("out.dx");
  const std::vector<BadOption> cases = {
      {"unknown kernel", "-o {OUT} --kernel warp-drive", 2, "unknown kernel 'warp-drive'"},
      {"spacing 0", "-o {OUT} --spacing 0 --padding 3", 2, "spacing along x must be a positive number"},
      {"spacing -1", "-o {OUT} --spacing -1 --padding 3", 2, "spacing along x must be a positive number"},
      {"spacing=-1", "-o {OUT} --spacing=-1 --padding 3", 2, "spacing along x must be a positive number"},
      {"spacing nan", "-o {OUT} --spacing nan --padding 3", 2, "--spacing expects a number, got 'nan'"},
      {"spacing on z", "-o {OUT} --spacing 1,1,0 --padding 3", 2, "spacing along z must be a positive number"},
      {"padding -2", "-o {OUT} --spacing 1 --padding -2", 2, "padding must be a non-negative number"},
      {"dims without origin", "-o {OUT} --spacing 1 --dims 5,5,5", 2, "--dims needs --origin"},
      {"origin without dims", "-o {OUT} --spacing 1 --origin 0,0,0", 2, "--origin needs --dims"},
      {"dims 0", "-o {OUT} --spacing 1 --dims 0,5,5 --origin 0,0,0", 2, "grid dims along x must be 1.."},
      {"dims not integers", "-o {OUT} --spacing 1 --dims 5,5.5,5 --origin 0,0,0", 2, "--dims expects whole numbers"},
      {"output .txt", "-o " + qpath("out.txt") + " --spacing 1 --padding 3", 2, "cannot tell the map format"},
      {"output dir missing", "-o " + qpath("no/such/dir/out.dx") + " --spacing 1 --padding 3", 1, "does not exist"},
      {"units furlongs", "-o {OUT} --spacing 1 --padding 3 --units furlongs", 2, "unknown unit 'furlongs'"},
      {"dielectric 0", "-o {OUT} --spacing 1 --padding 3 --dielectric 0", 2, "dielectric must be a positive number"},
      {"unknown option", "-o {OUT} --spacing 1 --padding 3 --frobnicate", 2, "frobnicate"},
      {"no output", "--spacing 1 --padding 3", 2, "no output given"},
      {"unknown format", "-o {OUT} --spacing 1 --padding 3 --format gro", 2, "unknown input format 'gro'"},
      {"backend", "-o {OUT} --spacing 1 --padding 3 --backend gpu", 2, "--backend must be auto, cpu or cuda"},
      {"threads", "-o {OUT} --spacing 1 --padding 3 --threads -1", 2, "--threads takes 0 (all cores) to 1024"},
  };
  for (const BadOption& c : cases) {
    SCOPED_TRACE(c.name);
    std::string args = c.args;
    if (auto at = args.find("{OUT}"); at != std::string::npos) args.replace(at, 5, out);
    const Result r = run(std::string("map ") + kSmall + " " + args);
    EXPECT_EQ(r.code, c.code) << r;
    EXPECT_TRUE(contains(r.err, c.message)) << "expected '" << c.message << "'\n" << r;
    expect_clean_error(r);
    EXPECT_FALSE(contains(r.out, "wrote")) << r;
    expect_dir_holds_only({});
  }
}

TEST_F(Cli, InputWithoutKnownExtensionAsksForFormat) {
  fs::copy_file(std::string(ESPGRID_SOURCE_DIR) + "/" + kSmall, path("molecule.txt"));
  Result r = run("map " + qpath("molecule.txt") + " -o " + qpath("out.dx") + kCoarse);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--format")) << r;
  expect_clean_error(r);
  expect_dir_holds_only({"molecule.txt"});
  r = run("map " + qpath("molecule.txt") + " --format pqr -o " + qpath("out.dx") + kCoarse);
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "38 atoms")) << r;
  expect_dir_holds_only({"molecule.txt", "out.dx"});
}

TEST_F(Cli, UnknownVerbAndUnknownTopLevelOption) {
  Result r = run("frobnicate");
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown verb 'frobnicate'")) << r;
  expect_clean_error(r);
  r = run("kernels --frobnicate");
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "frobnicate")) << r;
  expect_clean_error(r);
  r = run("verify tests/data/pqr_whitespace.pqr --kernel warp-drive --spacing 1 --padding 3");
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "unknown kernel 'warp-drive'")) << r;
  expect_clean_error(r);
}

// ---- kernels and verify ---------------------------------------------------------------------------

TEST_F(Cli, KernelsListsEveryVariant) {
  const Result r = run("kernels");
  ASSERT_EQ(r.code, 0) << r;
  // One row per registry entry: name, backend, role, accuracy, models, flops, summary.
  for (const auto& k : kernel_variants()) {
    const std::string role = k.role == KernelRole::Reference ? "reference"
                             : k.role == KernelRole::Default ? "default"
                                                             : "-";
    const std::regex row(std::string("(^|\n)") + std::string(k.name) + " +" + std::string(backend_name(k.backend)) +
                         " +" + (role == "-" ? std::string("-") : role) + " +\\S+ +\\S*coulomb\\S* +" +
                         std::to_string(k.flops_per_evaluation) + " +\\S");
    EXPECT_TRUE(std::regex_search(r.out, row)) << "no row for " << k.name << "\n" << r;
  }
  EXPECT_TRUE(contains(r.out, "CUDA: ")) << r;
  const std::string cpu_default(default_kernel(Backend::Cpu).name), cuda_default(default_kernel(Backend::Cuda).name);
  EXPECT_TRUE(contains(r.out, "Default: " + cpu_default) || contains(r.out, "Default: " + cuda_default)) << r;
#if !ESPGRID_HAVE_CUDA
  EXPECT_TRUE(contains(r.out, "CUDA: unavailable")) << r;
  EXPECT_TRUE(contains(r.out, "Default: " + cpu_default)) << r;
#endif
}

TEST_F(Cli, VerifyPassesForCpuParallel) {
  const Result r = run(std::string("verify ") + kSmall + kCoarse);
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "38 atoms")) << r;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)cpu-parallel +[^\n]* pass\n"))) << r;
  EXPECT_FALSE(contains(r.out, "FAIL")) << r;
  // Before the reference is computed: how long it will take, from a timed probe.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)estimate +[^\n]*atom-evaluations twice[^\n]*: about "))) << r;
  expect_dir_holds_only({});
}

TEST_F(Cli, VerifySampledChecksAgainstTheOracle) {
  const Result r = run(std::string("verify ") + kSmall + " --sample 500 --seed 3" + kCoarse);
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "double oracle at 500 sampled points")) << r;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)cpu-parallel +502 +[^\n]* pass\n"))) << r;
  EXPECT_FALSE(contains(r.out, "estimate")) << "no reference map is computed: " << r;
  EXPECT_EQ(run(std::string("verify ") + kSmall + " --sample 0" + kCoarse).code, 2);
}

TEST_F(Cli, VerifyNamedKernels) {
  const Result r = run(std::string("verify ") + kSmall + " --kernel cpu-naive,cpu-parallel" + kCoarse);
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)cpu-naive +[^\n]* pass\n"))) << r;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)cpu-parallel +[^\n]* pass\n"))) << r;
}

// ---- atomic replacement of an existing output ---------------------------------------------------

TEST_F(Cli, ExistingOutputIsReplacedOnlyOnSuccess) {
  const std::string old_content = "old map, must survive a failed run\n";
  { std::ofstream(path("OUT.dx"), std::ios::binary) << old_content; }
  // A failing run (bad input) aimed at OUT.dx leaves it untouched.
  Result r = run("map tests/data/bad_nan_charge.pqr -o " + qpath("OUT.dx") + kCoarse);
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_EQ(slurp(path("OUT.dx")), old_content);
  expect_dir_holds_only({"OUT.dx"});
  // So does a failing run with a bad option.
  r = run(std::string("map ") + kSmall + " -o " + qpath("OUT.dx") + " --spacing 0");
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_EQ(slurp(path("OUT.dx")), old_content);
  // A second output that cannot be written fails the run; the first may be written but no
  // partial file of either is left.
  r = run(std::string("map ") + kSmall + " -o " + qpath("OUT.dx") + " -o " + qpath("missing/dir.dx") + kCoarse);
  EXPECT_EQ(r.code, 1) << r;
  expect_clean_error(r);
  expect_dir_holds_only({"OUT.dx"});
  // A successful run replaces it.
  { std::ofstream(path("OUT.dx"), std::ios::binary) << old_content; }
  r = run(std::string("map ") + kSmall + " -o " + qpath("OUT.dx") + kCoarse);
  ASSERT_EQ(r.code, 0) << r;
  const std::string written = slurp(path("OUT.dx"));
  EXPECT_NE(written, old_content);
  EXPECT_EQ(written.rfind("# Electrostatic potential by espgrid", 0), 0u) << written.substr(0, 200);
  EXPECT_TRUE(contains(written, "object 3 class array type double")) << written.substr(0, 600);
  expect_dir_holds_only({"OUT.dx"});
}

TEST_F(Cli, OutputThatIsADirectoryIsRefused) {
  fs::create_directory(path("taken.dx"));
  const Result r = run(std::string("map ") + kSmall + " -o " + qpath("taken.dx") + kCoarse);
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "is a directory")) << r;
  expect_clean_error(r);
  EXPECT_TRUE(fs::is_directory(path("taken.dx")));
  expect_dir_holds_only({"taken.dx"});
}

}  // namespace
