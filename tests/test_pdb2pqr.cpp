// PDB and mmCIF input through PDB2PQR (src/structure/pdb2pqr_source.h) and `espgrid map x.pdb`.
//
// The PDB files are made here from bundled data: data/boxb_rna_pdb2pqr3.pqr is PDB2PQR 3.5.2's
// own output (AMBER), so its first 54 columns are a PDB file; stripping the charges and radii
// and running `espgrid map` must give the map of running pdb2pqr30 directly and mapping its
// PQR. The end-to-end tests skip (saying why) where pdb2pqr30 or gemmi is not installed;
// scripts/install-deps.sh installs both. The log parser and the argument checks need neither.
// ESPGRID_TEST_BINARY=PATH runs another binary (tests/child_process.h): docs/reliability.md
// records what these tests found in older builds.
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
#include <thread>
#include <vector>

#include "src/core/errors.h"
#include "src/maps/map_formats.h"
#include "src/structure/pdb2pqr_source.h"
#include "tests/child_process.h"
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

  /// `env` (assignments) then the espgrid binary with `args`, in the test's folder, its standard
  /// input from `input` (a file in the folder).
  Result run(const std::string& args, const std::string& env = "", const std::string& input = "/dev/null") const {
    const fs::path out = dir_ / ".stdout", err = dir_ / ".stderr";
    const std::string command = "cd " + quote(dir_.string()) + " && " + env + " " +
                                quote(espgrid::testing::espgrid_binary()) + " " + args + " <" + quote(input) + " >" +
                                quote(out.string()) + " 2>" + quote(err.string());
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
  // The command that makes the PQR espgrid keeps (the path it was kept at: out/boxb.pqr, not boxb.pqr).
  EXPECT_TRUE(contains(r.out, "pdb2pqr30 --ff AMBER --drop-water boxb.pdb out/boxb.pqr")) << r;
  EXPECT_TRUE(contains(r.out, "619 atoms, total charge -18.0000 e")) << r;
  EXPECT_TRUE(contains(r.out, "wrote      out/boxb.pqr")) << r;
  EXPECT_TRUE(contains(r.out, "wrote      out/boxb.log (pdb2pqr's whole log)")) << r;
  EXPECT_EQ(entries("out"), (std::vector<std::string>{"boxb.dx", "boxb.log", "boxb.pqr"}));
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
  EXPECT_TRUE(contains(args, "--ff\nCHARMM\n--drop-water\n--titration-state-method\npropka\n--with-ph\n4.5\n")) << args;
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
  const std::string boxb = slurp(path("boxb.pdb"));
  write("boxb.log", boxb);  // a PDB named .log: the log kept beside --keep-pqr boxb.pqr would replace it
  fs::create_symlink("boxb.pdb", path("link-to-input.pqr"));
  fs::create_hard_link(path("boxb.pdb"), path("hard-link-to-input.pqr"));
  const std::string pqr = std::string(ESPGRID_SOURCE_DIR) + "/tests/data/pqr_whitespace.pqr";
  const struct {
    std::string args, message;
  } cases[] = {
      {"map " + quote(pqr) + " -o out/a.dx --ph 7", "--ph applies to PDB and mmCIF input"},
      {"map " + quote(pqr) + " -o out/a.dx --forcefield CHARMM", "--forcefield applies"},
      {"map " + quote(pqr) + " -o out/a.dx --keep-pqr out/a.pqr", "--keep-pqr applies"},
      {"map boxb.pdb -o out/a.dx --ph 15", "--ph must be a number from 0 to 14"},
      {"map boxb.pdb -o out/a.dx --forcefield 'AM BER'", "got 'AM BER'"},
      // pdb2pqr refused it only after running (and after PROPKA), as "pdb2pqr failed"
      {"map boxb.pdb -o out/a.dx --forcefield FOO",
       "--forcefield takes one of pdb2pqr's force fields (AMBER, CHARMM, PARSE, TYL06, PEOEPB or SWANSON; any "
       "case), got 'FOO'"},
      {"map boxb.pdb -o out/a.dx --keep-pqr out/a.dx", "is also a map output"},
      {"map boxb.pdb -o out/a.dx --keep-pqr boxb.pdb", "would replace the input"},
      {"map boxb.pdb -o out/a.dx --keep-pqr link-to-input.pqr", "would replace the input"},
      {"map boxb.pdb -o out/a.dx --keep-pqr hard-link-to-input.pqr", "would replace the input"},
      {"map boxb.log --format pdb -o out/a.dx --keep-pqr boxb.pqr",
       "pdb2pqr's log boxb.log (kept beside --keep-pqr boxb.pqr) would replace the input"},
      // empty names (exit 2, not a raw filesystem error with exit 1)
      {"map boxb.pdb -o out/a.dx --keep-pqr ''", "--keep-pqr needs a file name"},
      {"map boxb.pdb -o ''", "-o needs a file name"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args, "ESPGRID_PDB2PQR=/nonexistent/never-run");
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r;
    EXPECT_TRUE(contains(r.err, "espgrid: error: ")) << r;
    EXPECT_TRUE(contains(r.err, c.message)) << c.args << "\n" << r;
    EXPECT_FALSE(contains(r.err, "never-run")) << "pdb2pqr was looked for before the options were checked\n" << r;
    EXPECT_FALSE(contains(r.err, "filesystem error")) << r;
  }
  EXPECT_TRUE(entries("out").empty());
  EXPECT_EQ(slurp(path("boxb.pdb")), boxb);
  EXPECT_EQ(slurp(path("boxb.log")), boxb);
}

}  // namespace

// ---- what pdb2pqr leaves out, its log, the command, force fields ----------------------

namespace more {

/// boxb's heavy atoms plus what pdb2pqr has no AMBER parameters for (a sugar of three atoms, a
/// zinc ion) and two waters it keeps: 409 + 3 + 1 + 2 atoms.
std::string pdb_with_ligands(const std::string& heavy_pdb) {
  std::string text = heavy_pdb.substr(0, heavy_pdb.rfind("END"));
  text +=
      "HETATM 9001  C1  NAG B 501      10.000  10.000  10.000  1.00  0.00           C\n"
      "HETATM 9002  C2  NAG B 501      11.400  10.000  10.000  1.00  0.00           C\n"
      "HETATM 9003  O5  NAG B 501      10.000  11.400  10.000  1.00  0.00           O\n"
      "HETATM 9004  O   HOH W   1      20.000  20.000  20.000  1.00  0.00           O\n"
      "HETATM 9005  O   HOH W   2      22.000  20.000  20.000  1.00  0.00           O\n"
      "HETATM 9006 ZN    ZN C 601      -5.000  -5.000  -5.000  1.00  0.00          ZN\n"
      "END\n";
  return text;
}

}  // namespace more

// pdb2pqr leaves out, with at most a warning among many ("Ignoring 4 missing lines"), whatever
// it has no parameters for; only ten of its warnings were shown and its log went with its folder.
// The summary now says atoms in and out and which residues lost heavy atoms; the whole log is
// kept beside the PQR.
TEST_F(PdbInput, WhatPdb2pqrLeftOutIsSaidAndItsWholeLogKept) {
  REQUIRE_PROGRAM("pdb2pqr30");
  write_boxb_pdb(true, "heavy.pdb");
  write("lig.pdb", more::pdb_with_ligands(slurp(path("heavy.pdb"))));
  const Result r = run("map lig.pdb -o out/lig.dx --spacing 3");
  ASSERT_EQ(r.code, 0) << r;
  // 415 atoms in, none hydrogen; the two waters come back with their hydrogens.
  EXPECT_TRUE(contains(r.out, "atoms      415 in the input (0 hydrogens)")) << r;
  EXPECT_TRUE(
      contains(r.out, "6 heavy atoms not in its PQR: NAG B 501 (3 of 3 heavy atoms), ZN C 601 (1 of 1) and 2 waters"))
      << r;
  // What pdb2pqr left out is completed (tests/test_ligands.cpp has the details): the ion by its
  // formal charge, the sugar by Open Babel where it is installed; the waters dropped.
  EXPECT_TRUE(contains(r.out, "ion        ZN C 601: zinc ion, formal charge +2")) << r;
  EXPECT_TRUE(contains(r.out, "waters     2 waters (HOH): dropped")) << r;
  if (std::system("/usr/bin/python3 -c 'from openbabel import openbabel' >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(contains(r.out, "ligand     NAG B 501: Open Babel")) << r;
    EXPECT_FALSE(contains(r.err, "not in the map")) << r;
  }
  EXPECT_TRUE(contains(r.out, "wrote      out/lig.log (pdb2pqr's whole log)")) << r;
  const std::string log = slurp(path("out/lig.log"));
  EXPECT_TRUE(contains(log, "PDB2PQR v3.")) << log;
  EXPECT_TRUE(contains(log, "Ignoring 4 missing lines in output")) << log;  // past the ten warnings shown
  EXPECT_EQ(entries("out"), (std::vector<std::string>{"lig.dx", "lig.log", "lig.pqr"}));
  // Independently: no atom of the kept PQR sits where the waters were; the zinc is there.
  bool zinc = false;
  for (const std::string& record : atom_records(path("out/lig.pqr"))) {
    for (const char* where : {"  20.000  20.000  20.000", "  22.000  20.000  20.000"})
      EXPECT_FALSE(contains(record, where)) << record;
    zinc = zinc || (contains(record, " ZN ") && contains(record, "-5.0000    -5.0000    -5.0000"));
  }
  EXPECT_TRUE(zinc);

  // Every heavy atom kept: said too.
  const Result clean = run("map heavy.pdb -o out/heavy.dx --spacing 3");
  ASSERT_EQ(clean.code, 0) << clean;
  EXPECT_TRUE(contains(clean.out,
                       "409 in the input (0 hydrogens), 619 in pdb2pqr's PQR (210 hydrogens); every heavy "
                       "atom kept"))
      << clean;
  EXPECT_FALSE(contains(clean.err, "left")) << clean;
}

// The bundled PDB itself loses its 5' phosphate (AMBER's 5'-terminal G has none): 620 atoms in,
// 619 out, which the summary must say.
TEST_F(PdbInput, TheBundledPdbsTerminalPhosphateIsReported) {
  REQUIRE_PROGRAM("pdb2pqr30");
  fs::copy_file(std::string(ESPGRID_SOURCE_DIR) + "/data/boxb_rna.pdb", path("boxb_rna.pdb"));
  const Result r = run("map boxb_rna.pdb -o out/b.dx --spacing 3");
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out,
                       "620 in the input (208 hydrogens), 619 in pdb2pqr's PQR (210 hydrogens); 3 heavy atoms "
                       "not in its PQR: G 1 (3 of 23 heavy atoms)"))
      << r;
  // The three are the phosphate's P, O1P and O2P, at their input coordinates.
  for (const std::string& record : atom_records(path("out/boxb_rna.pqr")))
    EXPECT_FALSE(contains(record, "   2.583   8.624  -1.515")) << record;
}

// The equivalent command named the PQR after the input ("boxb.pqr") whatever --keep-pqr said.
// Run as printed, it must make the PQR espgrid kept.
TEST_F(PdbInput, TheEquivalentCommandMakesTheKeptPqr) {
  REQUIRE_PROGRAM("pdb2pqr30");
  write_boxb_pdb(false, "boxb.pdb");
  fs::create_directories(path("kept"));
  const Result r = run("map boxb.pdb -o out/b.dx --spacing 3 --keep-pqr kept/mine.pqr --forcefield parse");
  ASSERT_EQ(r.code, 0) << r;
  const std::string line =
      r.out.substr(r.out.find("charges    "), r.out.find('\n', r.out.find("charges ")) - r.out.find("charges    "));
  const std::string command = line.substr(line.find("): ") + 3);
  EXPECT_EQ(command, "pdb2pqr30 --ff PARSE --drop-water boxb.pdb kept/mine.pqr") << r;
  EXPECT_TRUE(contains(slurp(path("kept/mine.log")), "PDB2PQR v3"));  // where pdb2pqr puts its own log
  fs::rename(path("kept/mine.pqr"), path("espgrid.pqr"));
  ASSERT_TRUE(shell(command));
  EXPECT_EQ(atom_records(path("kept/mine.pqr")), atom_records(path("espgrid.pqr")));
}

// pdb2pqr 3.5 dies with "ValueError: Unknown format code 'i' for object of type 'int'" when more
// than 10 % of the heavy atoms are missing (its message for that case is broken): said in words.
TEST_F(PdbInput, Pdb2pqrsBrokenMessageForMissingAtomsIsExplained) {
  REQUIRE_PROGRAM("pdb2pqr30");
  std::string ca_only;
  const char* residues[] = {"ALA", "GLY", "LYS", "GLU", "SER", "LEU", "VAL", "ASP"};
  for (int i = 0; i < 30; ++i) {
    char line[96];
    std::snprintf(line, sizeof line, "ATOM  %5d  CA  %s A%4d    %8.3f%8.3f%8.3f  1.00  0.00           C\n", i + 1,
                  residues[i % 8], i + 1, 3.8 * i, 0.0, 0.0);
    ca_only += line;
  }
  write("ca.pdb", ca_only + "END\n");
  const Result r = run("map ca.pdb -o out/ca.dx");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "Unknown format code 'i'")) << r;  // its own words stay
  EXPECT_TRUE(contains(r.err, "What it means: more than 10 % of the heavy atoms")) << r;
  EXPECT_TRUE(contains(r.err, "only C-alpha")) << r;
  EXPECT_TRUE(entries("out").empty());
  if (!on_path("gemmi")) return;
  write("ca.cif", mmcif_from_pdb(ca_only));
  const Result cif = run("map ca.cif -o out/ca.dx");
  EXPECT_EQ(cif.code, 1) << cif;
  EXPECT_TRUE(contains(cif.err, "What it means: more than 10 %")) << cif;
  EXPECT_TRUE(contains(cif.err, "converted from mmCIF by gemmi")) << cif;
}

// ---- inputs as users have them --------------------------------------------------------------------

// `espgrid map <(cat t.pdb) --format pdb` said "no such file" (a pipe is not a regular file), and
// .gz, .pdbx and "-" were refused; each is the plain PDB's map, bit for bit.
TEST_F(PdbInput, CompressedPipedAndStandardInputStructuresGiveThePlainFilesMap) {
  REQUIRE_PROGRAM("pdb2pqr30");
  write_boxb_pdb(false, "boxb.pdb");
  const Result plain = run("map boxb.pdb -o out/plain.dx --spacing 2 --keep-pqr plain.pqr");
  ASSERT_EQ(plain.code, 0) << plain;
  const std::vector<float> expected = read_dx(path("out/plain.dx").string()).values;
  ASSERT_TRUE(
      shell("gzip -c boxb.pdb > boxb.pdb.gz && gzip -c boxb.pdb > boxb-gzip-named-plain.pdb && mkfifo fifo.pdb"));
  const struct {
    std::string input, options, map, kept, command, stdin_from;
  } cases[] = {
      {"boxb.pdb.gz", "", "gz", "boxb", "gunzip -c boxb.pdb.gz > boxb.pdb && pdb2pqr30", ""},
      {"boxb-gzip-named-plain.pdb", "", "magic", "boxb-gzip-named-plain",
       "gunzip -c boxb-gzip-named-plain.pdb > boxb-gzip-named-plain-gunzipped.pdb && pdb2pqr30", ""},
      {"-", "--format pdb", "stdin", "stdin", "cat > structure.pdb && pdb2pqr30", "boxb.pdb"},
      {"/dev/stdin", "--format pdb", "devstdin", "devstdin", "cat /dev/stdin > structure.pdb && ", "boxb.pdb"},
      {"fifo.pdb", "", "fifo", "fifo", "cat fifo.pdb > structure.pdb && pdb2pqr30", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.input);
    // The FIFO's writer: opens it once espgrid has opened it for reading (or gives up after 60 s).
    std::thread writer;
    if (c.input == "fifo.pdb")
      writer = std::thread([this] {
        for (int i = 0; i < 6000; ++i) {
          const int fd = ::open(path("fifo.pdb").c_str(), O_WRONLY | O_NONBLOCK);
          if (fd >= 0) {
            const std::string text = slurp(path("boxb.pdb"));
            ::fcntl(fd, F_SETFL, 0);  // blocking writes from here on
            EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
            ::close(fd);
            return;
          }
          ::usleep(10000);
        }
      });
    const Result r = run("map " + c.input + " " + c.options + " -o out/" + c.map + ".dx --spacing 2", "",
                         c.stdin_from.empty() ? "/dev/null" : c.stdin_from);
    if (writer.joinable()) writer.join();
    ASSERT_EQ(r.code, 0) << r;
    EXPECT_TRUE(contains(r.out, c.command)) << r;
    EXPECT_TRUE(contains(r.out, "wrote      out/" + c.kept + ".pqr (the PQR pdb2pqr made)")) << r;
    EXPECT_EQ(read_dx(path("out/" + c.map + ".dx").string()).values, expected);
    EXPECT_EQ(atom_records(path("out/" + c.kept + ".pqr")), atom_records(path("plain.pqr")));
  }
  // A stream cut short is an error at its line, never a shorter structure.
  ASSERT_TRUE(shell("(head -c 3000 boxb.pdb.gz > cut.pdb.gz)"));  // shell() sends stdout to /dev/null
  const Result cut = run("map cut.pdb.gz -o out/cut.dx");
  EXPECT_EQ(cut.code, 1) << cut;
  EXPECT_TRUE(contains(cut.err, "espgrid: error: cut.pdb.gz:")) << cut;
  EXPECT_TRUE(contains(cut.err, "truncated")) << cut;
  EXPECT_FALSE(fs::exists(path("out/cut.dx")));
}

TEST_F(PdbInput, MmcifUnderEveryNameUsersHaveIt) {
  REQUIRE_PROGRAM("pdb2pqr30");
  REQUIRE_PROGRAM("gemmi");
  write_boxb_pdb(true, "heavy.pdb");
  write("heavy.cif", mmcif_from_pdb(slurp(path("heavy.pdb"))));
  const Result plain = run("map heavy.cif -o out/plain.dx --spacing 3");
  ASSERT_EQ(plain.code, 0) << plain;
  const std::vector<float> expected = read_dx(path("out/plain.dx").string()).values;
  ASSERT_TRUE(shell("gzip -c heavy.cif > heavy.cif.gz && cp heavy.cif heavy.pdbx"));
  for (const std::string& args : {std::string("map heavy.cif.gz -o out/gz.dx --spacing 3"),
                                  std::string("map heavy.pdbx -o out/pdbx.dx --spacing 3"),
                                  std::string("map - --format cif -o out/stdin.dx --spacing 3")}) {
    const Result r = run(args, "", "heavy.cif");
    ASSERT_EQ(r.code, 0) << args << "\n" << r;
    EXPECT_TRUE(contains(r.out, "mmCIF converted to PDB with gemmi")) << r;
    const std::string map = args.substr(args.find("-o ") + 3, args.find(".dx") + 3 - args.find("-o ") - 3);
    EXPECT_EQ(read_dx(path(map).string()).values, expected) << args;
  }
}

// ---- every way out ends pdb2pqr and removes its folder ---------------------------------------------

/// A stand-in pdb2pqr30 that records its PID and its own child's in `dir`, then waits (for
/// ever): the signal tests' program that is still running. With `ignore_term`, it and its child
/// ignore SIGTERM, so only the SIGKILL after the grace period ends them.
void write_slow_pdb2pqr(const fs::path& script, const fs::path& dir, bool ignore_term) {
  std::ofstream(script) << "#!/bin/sh\n"
                        << (ignore_term ? "trap '' TERM\n" : "") << "sleep 1000 &\necho $! > '"
                        << (dir / "grandchild.pid").string() << "'\necho $$ > '" << (dir / "child.pid").string()
                        << ".tmp' && mv '" << (dir / "child.pid").string() << ".tmp' '" << (dir / "child.pid").string()
                        << "'\nwait\n";
  fs::permissions(script, fs::perms::owner_all);
}

/// Whether process `pid` is gone (a zombie awaiting its reaper counts as gone: it runs no more).
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const std::size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

/// Waits up to `seconds` for `what` to hold.
template <class Predicate>
bool eventually(double seconds, Predicate what) {
  for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
    if (what()) return true;
    ::usleep(10000);
  }
  return what();
}

class Pdb2pqrSignals : public espgrid::testing::ScratchDirTest {};

// SIGTERM during `espgrid map x.pdb` left pdb2pqr30 running and its folder in $TMPDIR. Now the
// interrupt handler ends the program's process group (SIGTERM, then SIGKILL after 2 s: the
// second case ignores SIGTERM) and removes the folder before the process ends.
TEST_F(Pdb2pqrSignals, ASignalEndsPdb2pqrAndRemovesItsFolder) {
  using espgrid::testing::Child;
  const struct {
    int signal;
    bool ignore_term;
  } cases[] = {{SIGTERM, false}, {SIGINT, false}, {SIGHUP, false}, {SIGTERM, true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(strsignal(c.signal)) + (c.ignore_term ? ", program ignores SIGTERM" : ""));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
    fs::create_directories(dir_ / "out");
    write_slow_pdb2pqr(dir_ / "slow", dir_, c.ignore_term);
    std::ofstream(dir_ / "x.pdb") << pdb_from_pqr(std::string(ESPGRID_SOURCE_DIR) + "/data/boxb_rna_pdb2pqr3.pqr",
                                                  true);
    Child::Options options;
    options.env = {{"ESPGRID_PDB2PQR", (dir_ / "slow").string()}, {"TMPDIR", (dir_ / "tmp").string()}};
    Child child({"map", (dir_ / "x.pdb").string(), "-o", (dir_ / "out/x.dx").string()}, capture_, options);
    ASSERT_TRUE(eventually(60, [&] { return fs::exists(dir_ / "child.pid"); })) << "the stand-in never started";
    const pid_t program = std::stoi(slurp(dir_ / "child.pid"));
    ASSERT_TRUE(eventually(10, [&] { return !slurp(dir_ / "grandchild.pid").empty(); }));
    const pid_t grandchild = std::stoi(slurp(dir_ / "grandchild.pid"));
    EXPECT_FALSE(fs::is_empty(dir_ / "tmp"));  // the folder, while it runs
    child.signal(c.signal);
    const espgrid::testing::Outcome r = child.wait(60);
    EXPECT_EQ(r.code, 128 + c.signal) << r;
    EXPECT_TRUE(contains(r.err, "interrupted; no output written")) << r;
    // Gone at once (nothing waited for them after espgrid ended: they ended before it did).
    EXPECT_TRUE(process_gone(program)) << "pdb2pqr's stand-in still runs";
    EXPECT_TRUE(process_gone(grandchild)) << "its child still runs";
    EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "the temporary folder was left";
    EXPECT_TRUE(fs::is_empty(dir_ / "out"));
    ::kill(program, SIGKILL);  // never left running by a failed case
    ::kill(grandchild, SIGKILL);
  }
}

// A run killed outright (SIGKILL: no handler runs) takes pdb2pqr with it (PR_SET_PDEATHSIG); its
// folder, which nothing could remove, is removed by the next run once nobody holds it.
TEST_F(Pdb2pqrSignals, AKilledRunTakesPdb2pqrAlongAndTheNextRunRemovesItsFolder) {
  using espgrid::testing::Child;
  fs::create_directories(dir_ / "tmp");
  write_slow_pdb2pqr(dir_ / "slow", dir_, false);
  std::ofstream(dir_ / "x.pdb") << pdb_from_pqr(std::string(ESPGRID_SOURCE_DIR) + "/data/boxb_rna_pdb2pqr3.pqr", true);
  Child::Options options;
  options.env = {{"ESPGRID_PDB2PQR", (dir_ / "slow").string()}, {"TMPDIR", (dir_ / "tmp").string()}};
  Child child({"map", (dir_ / "x.pdb").string(), "-o", (dir_ / "x.dx").string()}, capture_, options);
  ASSERT_TRUE(eventually(60, [&] { return fs::exists(dir_ / "child.pid"); }));
  const pid_t program = std::stoi(slurp(dir_ / "child.pid"));
  child.signal(SIGKILL);
  child.wait(60);
  EXPECT_TRUE(eventually(10, [&] { return process_gone(program); })) << "pdb2pqr outlived a killed espgrid";
  ::kill(program, SIGKILL);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir_ / "tmp")) left.push_back(e.path().filename().string());
  ASSERT_EQ(left.size(), 1u);  // SIGKILL leaves the folder: nothing runs to remove it
  EXPECT_EQ(left[0].rfind("espgrid-pdb2pqr-" + std::to_string(child.pid()) + "-", 0), 0u) << left[0];
  // Another run's folder, still in use (its PID alive: ours), is never touched.
  ::kill(std::stoi(slurp(dir_ / "grandchild.pid")), SIGKILL);  // PR_SET_PDEATHSIG reaches the child only
  const fs::path live = dir_ / "tmp" / ("espgrid-pdb2pqr-" + std::to_string(::getpid()) + "-abcdef");
  fs::create_directories(live);
  std::ofstream(dir_ / "fake-pdb2pqr") << "#!/bin/sh\nexit 3\n";
  fs::permissions(dir_ / "fake-pdb2pqr", fs::perms::owner_all);
  options.env["ESPGRID_PDB2PQR"] = (dir_ / "fake-pdb2pqr").string();
  Child next({"map", (dir_ / "x.pdb").string(), "-o", (dir_ / "x.dx").string()}, capture_, options);
  const espgrid::testing::Outcome r = next.wait(60);
  EXPECT_EQ(r.code, 1) << r;
  left.clear();
  for (const auto& e : fs::directory_iterator(dir_ / "tmp")) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{live.filename().string()});
}

// ---- TMPDIR -----------------------------------------------------------------------------------------

// A missing TMPDIR gave a raw "filesystem error: temp_directory_path"; an empty one (POSIX: /tmp)
// the same. A full one gave pdb2pqr's empty message. (--ligand-charges none: the folder is the
// point here, not Open Babel, which a machine may lack.)
TEST_F(PdbInput, TmpdirMissingEmptyOrFullIsExplained) {
  write_boxb_pdb(true, "x.pdb");
  write("where", "#!/bin/sh\npwd > \"" + path("cwd.txt").string() +
                     "\"\nfor last; do :; done\necho 'ATOM      1  N   ALA     1       0.000   0.000   0.000  0.5000 "
                     "1.5000' > \"$last\"\n");
  fs::permissions(path("where"), fs::perms::owner_all);
  const std::string fake = "ESPGRID_PDB2PQR=" + quote(path("where").string());
  Result r = run("map x.pdb -o out/x.dx --spacing 3 --ligand-charges none", fake + " TMPDIR=/nonexistent/tmp");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err,
                       "espgrid: error: TMPDIR=/nonexistent/tmp does not exist: pdb2pqr's work needs a "
                       "temporary folder there; set TMPDIR to a writable directory, or unset it to use /tmp"))
      << r;
  EXPECT_FALSE(contains(r.err, "filesystem error")) << r;
  r = run("map x.pdb -o out/x.dx --spacing 3 --ligand-charges none", fake + " TMPDIR=x.pdb");
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "TMPDIR=x.pdb is not a directory")) << r;
  r = run("map x.pdb -o out/x.dx --spacing 3 --ligand-charges none", fake + " TMPDIR=");
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(slurp(path("cwd.txt")).rfind("/tmp/espgrid-pdb2pqr-", 0), 0u) << slurp(path("cwd.txt"));
  EXPECT_FALSE(fs::exists(fs::path(slurp(path("cwd.txt")).substr(0, slurp(path("cwd.txt")).size() - 1))));

  const std::string why = espgrid::testing::small_fs_unavailable();
  if (!why.empty()) GTEST_SKIP() << "the full-TMPDIR case needs a small file system: " << why;
  REQUIRE_PROGRAM("pdb2pqr30");
  fs::create_directories(path("full"));
  const int status = espgrid::testing::run_with_small_fs(
      path("full"), 64,
      "cd " + quote(dir_.string()) +
          " && dd if=/dev/zero of=full/fill bs=4k count=100 2>/dev/null; TMPDIR=$PWD/full \"$ESPGRID\" map x.pdb -o "
          "out/x.dx > full.out 2> full.err; echo $? > full.rc; ls -A full > full.ls");
  ASSERT_EQ(status, 0);
  EXPECT_EQ(slurp(path("full.rc")), "1\n") << slurp(path("full.err"));
  EXPECT_TRUE(contains(slurp(path("full.err")), "the temporary folder's file system is full"))
      << slurp(path("full.err"));
  EXPECT_TRUE(contains(slurp(path("full.err")), "set TMPDIR to another directory")) << slurp(path("full.err"));
  EXPECT_EQ(slurp(path("full.ls")), "fill\n");  // its folder removed
}

// Writing --keep-pqr on a full disk said "Input/output error" (fs::copy_file through the
// temporary file's /proc/self/fd path).
TEST_F(PdbInput, AFullDiskForTheKeptPqrSaysSo) {
  REQUIRE_PROGRAM("pdb2pqr30");
  const std::string why = espgrid::testing::small_fs_unavailable();
  if (!why.empty()) GTEST_SKIP() << "needs a small file system: " << why;
  write_boxb_pdb(false, "x.pdb");
  fs::create_directories(path("small"));
  // 48 KiB: the 23 KiB .mrc fits, the 50 KB PQR does not.
  const int status = espgrid::testing::run_with_small_fs(
      path("small"), 48,
      "cd " + quote(dir_.string()) +
          " && \"$ESPGRID\" map x.pdb -o small/x.mrc --spacing 3 --keep-pqr small/x.pqr > run.out 2> run.err; echo $? "
          "> run.rc; ls -A small > run.ls");
  ASSERT_EQ(status, 0);
  EXPECT_EQ(slurp(path("run.rc")), "1\n") << slurp(path("run.err"));
  EXPECT_TRUE(contains(slurp(path("run.err")),
                       "espgrid: error: cannot write small/x.pqr: No space left on device (nothing written to "
                       "small/x.pqr)"))
      << slurp(path("run.err"));
  EXPECT_EQ(slurp(path("run.ls")), "x.mrc\n");  // the map, and no partial PQR or log
}
