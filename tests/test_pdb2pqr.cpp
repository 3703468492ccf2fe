// PDB and mmCIF input through PDB2PQR (src/io/pdb2pqr_source.h) and `espgrid map x.pdb`.
//
// The PDB files are made here from bundled data: data/boxb_rna_pdb2pqr3.pqr is PDB2PQR 3.5.2's
// own output (AMBER), so its first 54 columns are a PDB file; stripping the charges and radii
// and running `espgrid map` must give the map of running pdb2pqr30 directly and mapping its
// PQR. The end-to-end tests skip (saying why) where pdb2pqr30 or gemmi is not installed;
// scripts/install-deps.sh installs both. The log parser and the argument checks need neither.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "src/core/errors.h"
#include "src/io/map_formats.h"
#include "src/io/pdb2pqr_source.h"
#include "tests/file_helpers.h"

namespace {

namespace fs = std::filesystem;
using namespace espgrid;
using espgrid::testing::contains;
using espgrid::testing::slurp;

// ---- what PDB2PQR prints ----------------------------------------------------------------------

// Verbatim excerpts of pdb2pqr30 3.5.2's output (a success with repeated warnings, a failure
// ending in a chained traceback, and argparse refusing an option).
constexpr const char* kSuccessLog =
    "INFO:PDB2PQR v3.5.2: biomolecular structure conversion software.\n"
    "INFO:Loading molecule: boxb.pdb\n"
    "WARNING:Residue RG A 1 has non-integer charge: -0.3081 deviates by 0.3081 from integral, exceeding error "
    "tolerance 0.001. \n"
    "WARNING:Residue RG A 1 has non-integer charge:  -0.3081 deviates by 0.3081 from integral, exceeding error "
    "tolerance 0.001\n"
    "WARNING:Ignoring 392 header lines in output.\n";
constexpr const char* kFailureLog =
    "INFO:PDB2PQR v3.5.2: biomolecular structure conversion software.\n"
    "WARNING:Unable to find amino or nucleic acid definition for FOO.  Parsing as new residue.\n"
    "CRITICAL:No biomolecule heavy atoms found and no ligand present. Unable to proceed.\n"
    "CRITICAL:Giving up.\n"
    "Traceback (most recent call last):\n"
    "  File \"/usr/lib/python3/dist-packages/pdb2pqr/main.py\", line 795, in main_driver\n"
    "    raise RuntimeError from err\n"
    "ValueError: No biomolecule heavy atoms found and no ligand present. Unable to proceed.\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "RuntimeError\n";
constexpr const char* kUsageLog =
    "usage: pdb2pqr [-h] [--ff {AMBER,CHARMM,PARSE,TYL06,PEOEPB,SWANSON}]\n"
    "               input_path output_pqr\n"
    "pdb2pqr: error: argument --ff: invalid choice: 'NOPE' (choose from 'AMBER', 'CHARMM')\n";

TEST(Pdb2pqrLog, VersionAndDistinctWarnings) {
  const Pdb2pqrLog log = parse_pdb2pqr_log(kSuccessLog);
  EXPECT_EQ(log.version, "3.5.2");
  ASSERT_EQ(log.warnings.size(), 2u);  // the repeated warning once
  EXPECT_TRUE(contains(log.warnings[0], "Residue RG A 1 has non-integer charge")) << log.warnings[0];
  EXPECT_TRUE(contains(log.warnings[1], "Ignoring 392 header lines")) << log.warnings[1];
  EXPECT_TRUE(log.failure.empty());
}

TEST(Pdb2pqrLog, FailureKeepsCriticalLinesAndTheException) {
  const Pdb2pqrLog log = parse_pdb2pqr_log(kFailureLog);
  const std::vector<std::string> expected = {
      "CRITICAL:No biomolecule heavy atoms found and no ligand present. Unable to proceed.",
      "CRITICAL:Giving up.",
      "ValueError: No biomolecule heavy atoms found and no ligand present. Unable to proceed.",
      "RuntimeError",
  };
  EXPECT_EQ(log.failure, expected);
  const Pdb2pqrLog usage = parse_pdb2pqr_log(kUsageLog);
  ASSERT_EQ(usage.failure.size(), 1u);
  EXPECT_TRUE(contains(usage.failure[0], "invalid choice: 'NOPE'")) << usage.failure[0];
  EXPECT_EQ(usage.version, "");
}

TEST(ChargeAssignment, NamesAndPhAreChecked) {
  EXPECT_EQ(make_charge_assignment("charmm", std::nullopt).force_field, "CHARMM");
  EXPECT_EQ(*make_charge_assignment("AMBER", 7.4).ph, 7.4);
  for (const std::string bad : {"", "AMBER --clean", "../ff", "AM;BER"})
    EXPECT_THROW(make_charge_assignment(bad, std::nullopt), UsageError) << bad;
  for (const double bad : {-0.1, 14.5, std::nan("")}) EXPECT_THROW(make_charge_assignment("AMBER", bad), UsageError);
}

// ---- espgrid map x.pdb --------------------------------------------------------------------------

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.code << "\n--- stdout ---\n" << r.out << "--- stderr ---\n" << r.err;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// PDB ATOM records (columns 1-54 plus occupancy and B-factor) from a PDB2PQR fixed-column
/// PQR, optionally without hydrogens.
std::string pdb_from_pqr(const std::string& pqr_path, bool heavy_only) {
  std::ifstream in(pqr_path);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("ATOM", 0) != 0) continue;
    const std::string name = line.substr(12, 4);
    const char element = name.find_first_not_of(' ') == std::string::npos ? 'X' : name[name.find_first_not_of(' ')];
    if (heavy_only && element == 'H') continue;
    out += line.substr(0, 54) + "  1.00  0.00          " + std::string(" ") + element + "\n";
  }
  return out + "END\n";
}

/// A minimal mmCIF holding the same atoms as a PDB text: one atom_site loop with the columns
/// every wwPDB file has (gemmi needs label_alt_id or label_entity_id to find the atoms).
std::string mmcif_from_pdb(const std::string& pdb) {
  std::string out =
      "data_boxb\n_entry.id boxb\nloop_\n_atom_site.group_PDB\n_atom_site.id\n_atom_site.type_symbol\n"
      "_atom_site.label_atom_id\n_atom_site.label_alt_id\n_atom_site.label_comp_id\n_atom_site.label_asym_id\n"
      "_atom_site.label_entity_id\n_atom_site.label_seq_id\n"
      "_atom_site.Cartn_x\n_atom_site.Cartn_y\n_atom_site.Cartn_z\n_atom_site.occupancy\n_atom_site.B_iso_or_equiv\n"
      "_atom_site.auth_seq_id\n_atom_site.auth_asym_id\n_atom_site.pdbx_PDB_model_num\n";
  std::istringstream in(pdb);
  std::string line;
  int id = 0;
  const auto field = [&](std::size_t at, std::size_t n) {
    std::string f = line.substr(at, n);
    f.erase(0, f.find_first_not_of(' '));
    f.erase(f.find_last_not_of(' ') + 1);
    return f;
  };
  while (std::getline(in, line)) {
    if (line.rfind("ATOM", 0) != 0) continue;
    std::string name = field(12, 4);
    if (name.find('\'') != std::string::npos) name = "\"" + name + "\"";
    const std::string seq = field(22, 4);
    out += "ATOM " + std::to_string(++id) + " " + field(77, 1) + " " + name + " . " + field(17, 3) + " A 1 " + seq +
           " " + field(30, 8) + " " + field(38, 8) + " " + field(46, 8) + " 1.00 0.00 " + seq + " A 1\n";
  }
  return out;
}

/// The ATOM records of a PQR, in order.
std::vector<std::string> atom_records(const fs::path& pqr) {
  std::ifstream in(pqr);
  std::vector<std::string> atoms;
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("ATOM", 0) == 0 || line.rfind("HETATM", 0) == 0) atoms.push_back(line);
  return atoms;
}

bool on_path(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

class PdbInput : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::temp_directory_path() / ("espgrid_pdb_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    ASSERT_TRUE(fs::create_directories(dir_ / "out"));
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  /// `env` (assignments) then the espgrid binary with `args`, in the test's folder.
  Result run(const std::string& args, const std::string& env = "") const {
    const fs::path out = dir_ / ".stdout", err = dir_ / ".stderr";
    const std::string command = "cd " + quote(dir_.string()) + " && " + env + " " + quote(ESPGRID_BINARY) + " " + args +
                                " </dev/null >" + quote(out.string()) + " 2>" + quote(err.string());
    const int status = std::system(command.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    fs::remove(out);
    fs::remove(err);
    return r;
  }
  /// Runs a program directly (the reference), in the test's folder; true when it exits 0.
  bool shell(const std::string& command) const {
    return std::system(("cd " + quote(dir_.string()) + " && " + command + " >/dev/null 2>&1").c_str()) == 0;
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir_ / name) << text; }
  fs::path path(const std::string& name) const { return dir_ / name; }
  std::vector<std::string> entries(const std::string& sub = "") const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_ / sub))
      if (e.path().filename().string()[0] != '.') names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  void write_boxb_pdb(bool heavy_only, const std::string& name) const {
    write(name, pdb_from_pqr(std::string(ESPGRID_SOURCE_DIR) + "/data/boxb_rna_pdb2pqr3.pqr", heavy_only));
  }

  fs::path dir_;
};

#define REQUIRE_PROGRAM(name) \
  if (!on_path(name)) GTEST_SKIP() << name << " is not installed (Debian: scripts/install-deps.sh installs it)"

TEST_F(PdbInput, MapOfAPdbEqualsTheMapOfPdb2pqrsOwnPqr) {
  REQUIRE_PROGRAM("pdb2pqr30");
  write_boxb_pdb(false, "boxb.pdb");
  const Result r = run("map boxb.pdb -o out/boxb.dx --spacing 1.5");
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "charges    pdb2pqr 3.")) << r;
  EXPECT_TRUE(contains(r.out, "AMBER force field, standard protonation states")) << r;
  EXPECT_TRUE(contains(r.out, "pdb2pqr30 --ff AMBER boxb.pdb boxb.pqr")) << r;
  EXPECT_TRUE(contains(r.out, "619 atoms, total charge -18.0000 e")) << r;
  EXPECT_TRUE(contains(r.out, "wrote      out/boxb.pqr")) << r;
  EXPECT_EQ(entries("out"), (std::vector<std::string>{"boxb.dx", "boxb.pqr"}));
  EXPECT_EQ(entries(), (std::vector<std::string>{"boxb.pdb", "out"}));  // pdb2pqr's .log stayed in its temp folder

  // The reference: pdb2pqr30 run directly on the same file, and its PQR mapped as a PQR.
  ASSERT_TRUE(shell("pdb2pqr30 --ff AMBER boxb.pdb direct.pqr"));
  EXPECT_EQ(atom_records(path("out/boxb.pqr")), atom_records(path("direct.pqr")));
  const Result ref = run("map direct.pqr -o out/direct.dx --spacing 1.5");
  ASSERT_EQ(ref.code, 0) << ref;
  const PotentialMap from_pdb = read_dx(path("out/boxb.dx").string());
  const PotentialMap from_pqr = read_dx(path("out/direct.dx").string());
  EXPECT_EQ(from_pdb.grid.dims, from_pqr.grid.dims);
  EXPECT_EQ(from_pdb.grid.origin, from_pqr.grid.origin);
  EXPECT_EQ(from_pdb.values, from_pqr.values);  // bit for bit
  // The header says where the charges came from.
  EXPECT_TRUE(contains(slurp(path("out/boxb.dx")), "boxb.pdb (charges: pdb2pqr 3.")) << slurp(path("out/boxb.dx"));
}

TEST_F(PdbInput, MmcifGoesThroughGemmiAndGivesThePdbsMap) {
  REQUIRE_PROGRAM("pdb2pqr30");
  REQUIRE_PROGRAM("gemmi");
  write_boxb_pdb(true, "heavy.pdb");  // heavy atoms: pdb2pqr adds the hydrogens itself
  std::ifstream in(path("heavy.pdb"));
  std::stringstream text;
  text << in.rdbuf();
  write("heavy.cif", mmcif_from_pdb(text.str()));
  const Result cif = run("map heavy.cif -o out/cif.dx --spacing 1.5 --keep-pqr out/cif.pqr");
  ASSERT_EQ(cif.code, 0) << cif;
  EXPECT_TRUE(contains(cif.out, "mmCIF converted to PDB with gemmi")) << cif;
  const Result pdb = run("map heavy.pdb -o out/pdb.dx --spacing 1.5 --keep-pqr out/pdb.pqr");
  ASSERT_EQ(pdb.code, 0) << pdb;
  EXPECT_EQ(atom_records(path("out/cif.pqr")), atom_records(path("out/pdb.pqr")));
  EXPECT_EQ(atom_records(path("out/cif.pqr")).size(), 619u);  // the hydrogens were added back
  EXPECT_EQ(read_dx(path("out/cif.dx").string()).values, read_dx(path("out/pdb.dx").string()).values);
}

TEST_F(PdbInput, ForceFieldAndPhReachPdb2pqr) {
  REQUIRE_PROGRAM("pdb2pqr30");
  // A stand-in pdb2pqr30 records its arguments and writes a one-atom PQR.
  write("fake-pdb2pqr", "#!/bin/sh\nprintf '%s\\n' \"$@\" > args.txt\ncp args.txt \"" + path("args.txt").string() +
                            "\"\necho 'INFO:PDB2PQR v0.0-test: stand-in'\n"
                            "for last; do :; done\necho 'ATOM      1  N   ALA     1       0.000   0.000   0.000  "
                            "0.5000 1.5000' > \"$last\"\n");
  fs::permissions(path("fake-pdb2pqr"), fs::perms::owner_all);
  write_boxb_pdb(false, "boxb.pdb");
  const Result r = run("map boxb.pdb -o out/a.dx --spacing 2 --forcefield charmm --ph 4.5",
                       "ESPGRID_PDB2PQR=" + quote(path("fake-pdb2pqr").string()));
  ASSERT_EQ(r.code, 0) << r;
  const std::string args = slurp(path("args.txt"));
  EXPECT_TRUE(contains(args, "--ff\nCHARMM\n--titration-state-method\npropka\n--with-ph\n4.5\n")) << args;
  EXPECT_TRUE(contains(args, path("boxb.pdb").string() + "\nboxb.pqr\n"))
      << args;  // absolute input, output in its folder
  EXPECT_TRUE(contains(r.out, "pdb2pqr 0.0-test, CHARMM force field, pH 4.5 (PROPKA)")) << r;

  // The real thing: pdb2pqr30's CHARMM charges differ from its AMBER ones and equal a direct run's.
  const Result charmm = run("map boxb.pdb -o out/c.dx --spacing 2 --forcefield CHARMM");
  ASSERT_EQ(charmm.code, 0) << charmm;
  ASSERT_TRUE(shell("pdb2pqr30 --ff CHARMM boxb.pdb direct-charmm.pqr"));
  EXPECT_EQ(atom_records(path("out/boxb.pqr")), atom_records(path("direct-charmm.pqr")));
  EXPECT_NE(atom_records(path("out/boxb.pqr")),
            atom_records(std::string(ESPGRID_SOURCE_DIR) + "/data/boxb_rna_pdb2pqr3.pqr"));
}

TEST_F(PdbInput, FailuresShowPdb2pqrsMessageAndWriteNothing) {
  REQUIRE_PROGRAM("pdb2pqr30");
  write("foo.pdb", "ATOM      1  XX  FOO A   1       0.000   0.000   0.000  1.00  0.00           X\nEND\n");
  const Result r = run("map foo.pdb -o out/foo.dx");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "espgrid: error: pdb2pqr 3.")) << r;
  EXPECT_TRUE(contains(r.err, "failed on foo.pdb (exit code 1)")) << r;
  EXPECT_TRUE(contains(r.err, "No biomolecule heavy atoms found")) << r;
  EXPECT_TRUE(entries("out").empty());
  EXPECT_EQ(entries(), (std::vector<std::string>{"foo.pdb", "out"}));

  // A pdb2pqr that writes part of a PQR and then fails: still nothing kept.
  write("half-pdb2pqr",
        "#!/bin/sh\nfor last; do :; done\necho 'ATOM      1  N   ALA     1       0.000   0.000   0.000  0.5 1.5' > "
        "\"$last\"\necho 'CRITICAL:ran out of patience' >&2\nexit 3\n");
  fs::permissions(path("half-pdb2pqr"), fs::perms::owner_all);
  write_boxb_pdb(false, "boxb.pdb");
  const Result half = run("map boxb.pdb -o out/b.dx", "ESPGRID_PDB2PQR=" + quote(path("half-pdb2pqr").string()));
  EXPECT_EQ(half.code, 1) << half;
  EXPECT_TRUE(contains(half.err, "(exit code 3); its messages:\n  CRITICAL:ran out of patience")) << half;
  EXPECT_TRUE(entries("out").empty());

  // One that exits 0 without a PQR.
  write("lazy-pdb2pqr", "#!/bin/sh\nexit 0\n");
  fs::permissions(path("lazy-pdb2pqr"), fs::perms::owner_all);
  const Result lazy = run("map boxb.pdb -o out/b.dx", "ESPGRID_PDB2PQR=" + quote(path("lazy-pdb2pqr").string()));
  EXPECT_EQ(lazy.code, 1) << lazy;
  EXPECT_TRUE(contains(lazy.err, "wrote no PQR")) << lazy;
  EXPECT_TRUE(entries("out").empty());
}

TEST_F(PdbInput, MissingProgramOrInputIsAClearError) {
  write_boxb_pdb(false, "boxb.pdb");
  Result r = run("map boxb.pdb -o out/a.dx", "PATH=/nonexistent");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "pdb2pqr30 was not found on the PATH")) << r;
  EXPECT_TRUE(contains(r.err, "apt-get install pdb2pqr")) << r;
  r = run("map boxb.pdb -o out/a.dx", "ESPGRID_PDB2PQR=/nonexistent/pdb2pqr30");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "ESPGRID_PDB2PQR=/nonexistent/pdb2pqr30 is not an executable program")) << r;
  write("x.cif", "data_x\n");
  r = run("map x.cif -o out/a.dx", "ESPGRID_GEMMI=/nonexistent/gemmi ESPGRID_PDB2PQR=/bin/true");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "ESPGRID_GEMMI=/nonexistent/gemmi is not an executable program")) << r;
  // A missing file never reaches pdb2pqr, which would take its name for a PDB ID and download it.
  write("recorder", "#!/bin/sh\ntouch ran\n");
  fs::permissions(path("recorder"), fs::perms::owner_all);
  r = run("map 1fsc.pdb -o out/a.dx", "ESPGRID_PDB2PQR=" + quote(path("recorder").string()));
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "cannot open 1fsc.pdb")) << r;
  EXPECT_FALSE(fs::exists(path("ran")));
  EXPECT_TRUE(entries("out").empty());
}

TEST_F(PdbInput, OptionsAreCheckedBeforeAnythingRuns) {
  write_boxb_pdb(false, "boxb.pdb");
  const std::string pqr = std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pqr_whitespace.pqr";
  for (const std::string& args :
       {"map " + quote(pqr) + " -o out/a.dx --ph 7", "map " + quote(pqr) + " -o out/a.dx --forcefield CHARMM",
        "map " + quote(pqr) + " -o out/a.dx --keep-pqr out/a.pqr", std::string("map boxb.pdb -o out/a.dx --ph 15"),
        std::string("map boxb.pdb -o out/a.dx --forcefield 'AM BER'"),
        std::string("map boxb.pdb -o out/a.dx --keep-pqr out/a.dx"),
        std::string("map boxb.pdb -o out/a.dx --keep-pqr boxb.pdb")}) {
    const Result r = run(args, "ESPGRID_PDB2PQR=/nonexistent/never-run");
    EXPECT_EQ(r.code, 2) << args << "\n" << r;
    EXPECT_TRUE(contains(r.err, "espgrid: error: ")) << r;
    EXPECT_FALSE(contains(r.err, "never-run")) << "pdb2pqr was looked for before the options were checked\n" << r;
  }
  EXPECT_TRUE(entries("out").empty());
}

}  // namespace
