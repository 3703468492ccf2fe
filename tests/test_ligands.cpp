// What pdb2pqr leaves out of a PDB file, charged or accounted for (src/structure/ligand_charges.h,
// pdb2pqr_account.h, pdb_records.h), and the potential at every atom (src/pipeline/atom_potentials.h,
// src/structure/atom_tables.h; `espgrid sample --at-atoms`).
//
// Fixtures (tests/data/README.md): flipped_amides.pdb, nine residues of PDB entry 1HPV around
// ASN B 98, whose amides (and GLN A 2's) pdb2pqr 3.5.2 flips; ligand_complex.pdb, the same with
// amprenavir, three waters, a sulfate, a zinc ion and a samarium atom. The end-to-end tests skip,
// saying why, where pdb2pqr30 or Open Babel's Python module is not installed
// (scripts/install-deps.sh installs both); PyMOL's own 1hpv.pdb is used where pymol-data is.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/job/job_options.h"
#include "src/pipeline/atom_potentials.h"
#include "src/structure/atom_tables.h"
#include "src/structure/ligand_charges.h"
#include "src/structure/pdb2pqr_account.h"
#include "src/structure/pdb_records.h"
#include "tests/child_process.h"
#include "tests/file_helpers.h"

namespace {

namespace fs = std::filesystem;
using namespace espgrid;
using espgrid::testing::Child;
using espgrid::testing::contains;
using espgrid::testing::Outcome;
using espgrid::testing::slurp;

std::string data(const std::string& name) { return std::string(ESPGRID_SOURCE_DIR) + "/tests/data/" + name; }

bool on_path(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

bool have_openbabel() {
  return std::system("/usr/bin/python3 -c 'from openbabel import openbabel' >/dev/null 2>&1") == 0;
}

#define REQUIRE_PDB2PQR_AND_OPENBABEL()                                                              \
  if (!on_path("pdb2pqr30")) GTEST_SKIP() << "pdb2pqr30 is not installed (scripts/install-deps.sh)"; \
  if (!have_openbabel()) GTEST_SKIP() << "python3-openbabel is not installed (scripts/install-deps.sh)"

// ---- PDB records ---------------------------------------------------------------------------------

TEST(PdbRecords, ElementsFollowPdbsColumnsAndOldFilesData) {
  // Columns 77-78 when they hold a symbol; 1HPV has "17" there (old-style serials in 73-80).
  EXPECT_EQ(pdb_element("HETATM 1519  C1  478   200      11.169  14.977   2.445  1.00 29.50   1  1HPV1704").text(),
            "C");
  EXPECT_EQ(pdb_element("HETATM 2006 ZN    ZN C 601      40.000  20.000  10.000  1.00  0.00          ZN").text(), "Zn");
  EXPECT_EQ(pdb_element("HETATM 2006 ZN    ZN C 601      40.000  20.000  10.000").text(), "Zn");  // name field
  EXPECT_EQ(pdb_element("ATOM      2  CA  GLY A   1      10.000  20.000  10.000").text(), "C");   // " CA " carbon
  EXPECT_EQ(pdb_element("HETATM    2 CA    CA A   1      10.000  20.000  10.000").text(), "Ca");  // "CA  " calcium
  EXPECT_EQ(pdb_element("ATOM      2 HG21 THR A   1      10.000  20.000  10.000").text(), "H");   // not mercury
  EXPECT_EQ(pdb_element("HETATM    2 HG    HG A   1      10.000  20.000  10.000").text(), "Hg");
  EXPECT_EQ(pdb_element("ATOM      2 1HB  ALA A   1      10.000  20.000  10.000").text(), "H");
}

TEST(PdbRecords, AtomsOnceWithTheirAlternateLocationsAndBonds) {
  const std::string pdb =
      "ATOM      1  N   SER A  12      10.000  10.000  10.000  0.50  0.00           N\n"
      "ATOM      2  OG ASER A  12      11.000  10.000  10.000  0.50  0.00           O\n"
      "ATOM      3  OG BSER A  12      11.500  10.500  10.000  0.50  0.00           O\n"
      "HETATM    4  C1  LIG B 300A     20.000  10.000  10.000  1.00  0.00           C\n"
      "CONECT    4    1\n"
      "ENDMDL\n"
      "ATOM      5  N   SER A  13      10.000  10.000  10.000  1.00  0.00           N\n";
  const std::vector<PdbAtom> atoms = read_pdb_atoms(pdb);
  ASSERT_EQ(atoms.size(), 3u);  // OG once; nothing after ENDMDL
  EXPECT_EQ(atoms[1].alternates.size(), 1u);
  EXPECT_EQ(atoms[1].alternates[0][0], 11.5);
  EXPECT_EQ(atoms[2].label.residue_text(), "LIG B 300A");
  EXPECT_EQ(atoms[2].serial, 4);
  EXPECT_EQ(read_pdb_bonds(pdb), (std::vector<std::pair<long, long>>{{1, 4}}));
}

TEST(PdbRecords, IonsByThePdbsComponentNames) {
  const auto zn = ion_by_residue("ZN", ElementSymbol::from("Zn"));
  ASSERT_TRUE(zn);
  EXPECT_EQ(zn->charge, 2);
  EXPECT_EQ(zn->radius, 1.09);                                            // pdb2pqr's CHARMM.DAT: ZN2 1.090000
  EXPECT_EQ(ion_by_residue("FE", ElementSymbol::from("Fe"))->charge, 3);  // FE is iron(III), FE2 iron(II)
  EXPECT_EQ(ion_by_residue("FE2", ElementSymbol::from("Fe"))->charge, 2);
  EXPECT_EQ(ion_by_residue("IOD", ElementSymbol::from("I"))->charge, -1);
  EXPECT_EQ(ion_by_residue("CL", ElementSymbol::from("Cl"))->radius, 2.27);
  EXPECT_FALSE(ion_by_residue("CA", ElementSymbol::from("C")));   // a residue named CA whose atom is carbon
  EXPECT_FALSE(ion_by_residue("SM", ElementSymbol::from("Sm")));  // no charge known: never guessed
  EXPECT_TRUE(is_water_residue("HOH") && is_water_residue("tip3") && !is_water_residue("SO4"));
  EXPECT_TRUE(pdb2pqr_knows_residue("HIE") && !pdb2pqr_knows_residue("478"));
}

// ---- what pdb2pqr kept, flips included -----------------------------------------------------------

/// A one-residue PQR structure with labels, atoms at the given positions.
Structure pqr_of(const std::vector<std::tuple<std::string, double, double, double>>& atoms, std::int32_t number) {
  Structure s;
  for (const auto& [name, x, y, z] : atoms) {
    s.atoms.push_back(x, y, z, 0, 1.5, ElementSymbol::from(name.substr(0, 1)));
    s.labels.push_back(AtomLabel::make(name, "ASN", "", number));
  }
  return s;
}

TEST(Pdb2pqrAccount, AFlippedAmideIsKeptAndNamedNotLeftOut) {
  const std::string pdb =
      "ATOM      1  CG  ASN B  98      17.949  36.978   8.924  1.00  0.00           C\n"
      "ATOM      2  OD1 ASN B  98      18.581  36.262   9.293  1.00  0.00           O\n"
      "ATOM      3  ND2 ASN B  98      17.823  37.993   8.051  1.00  0.00           N\n"
      "HETATM    4  C1  LIG B 300      30.000  30.000  30.000  1.00  0.00           C\n";
  // pdb2pqr's output of 1HPV: the amide turned by 180°, each atom 0.15 Å from the other's place.
  const Structure pqr =
      pqr_of({{"CG", 17.949, 36.978, 8.924}, {"OD1", 17.845, 37.905, 8.163}, {"ND2", 18.599, 36.126, 9.338}}, 98);
  const Pdb2pqrAccount a = account_for_atoms(read_pdb_atoms(pdb), pqr);
  EXPECT_EQ(a.left_out_atoms, 1u);
  ASSERT_EQ(a.left_out.size(), 1u);
  EXPECT_EQ(a.left_out[0].name, "LIG B 300");
  EXPECT_EQ(a.flipped, (std::vector<std::string>{"ASN B 98 (OD1/ND2)"}));
  // An atom 0.6 Å away is no flip: it is left out (kFlipTolerance, 0.5 Å).
  const Structure moved =
      pqr_of({{"CG", 17.949, 36.978, 8.924}, {"OD1", 18.581, 36.862, 9.293}, {"ND2", 17.823, 37.993, 8.051}}, 98);
  const Pdb2pqrAccount b = account_for_atoms(read_pdb_atoms(pdb), moved);
  EXPECT_EQ(b.left_out_atoms, 2u);
  EXPECT_TRUE(b.flipped.empty());
}

TEST(Pdb2pqrEndToEnd, FlippedAmidesOfTheFixtureAreNotLeftOut) {
  if (!on_path("pdb2pqr30")) GTEST_SKIP() << "pdb2pqr30 is not installed (scripts/install-deps.sh)";
  const fs::path dir = fs::path(::testing::TempDir()) / "espgrid_flips";
  fs::create_directories(dir);
  const Outcome r =
      Child({"map", "tests/data/flipped_amides.pdb", "-o", (dir / "f.dx").string(), "--spacing", "2"}, dir, {})
          .wait(600);
  ASSERT_EQ(r.code, 0) << r;
  // Before: "2 heavy atoms left out: GLN A 2 (2 of 9 heavy atoms), ASN B 98 (2 of 8)".
  EXPECT_TRUE(contains(r.out, "every heavy atom kept")) << r;
  EXPECT_TRUE(contains(r.out, "flipped    GLN A 2 (OE1/NE2), ASN B 98 (OD1/ND2)")) << r;
  EXPECT_FALSE(contains(r.err, "left out")) << r;
}

// ---- ligands, ions, waters ------------------------------------------------------------------------

/// The HETATM/ATOM records of a PQR by residue name: (atoms, sum of charges).
std::map<std::string, std::pair<int, double>> residues_of_pqr(const fs::path& pqr) {
  std::map<std::string, std::pair<int, double>> out;
  std::ifstream in(pqr);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ATOM", 0) != 0 && line.rfind("HETATM", 0) != 0) continue;
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    const bool element_last = std::isalpha(static_cast<unsigned char>(w.back()[0]));
    const double q = std::stod(w[w.size() - (element_last ? 3 : 2)]);
    auto& [atoms, charge] = out[w[3]];
    ++atoms;
    charge += q;
  }
  return out;
}

TEST(Ligands, ChargedByOpenBabelIonsByFormalChargeWatersDroppedEveryResidueSaid) {
  REQUIRE_PDB2PQR_AND_OPENBABEL();
  const fs::path dir = fs::path(::testing::TempDir()) / "espgrid_ligands";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Outcome r = Child({"map", "tests/data/ligand_complex.pdb", "-o", (dir / "lc.dx").string(), "--spacing", "2",
                           "--keep-pqr", (dir / "lc.pqr").string()},
                          dir, {})
                        .wait(600);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "pdb2pqr30 --ff AMBER --drop-water")) << r;
  EXPECT_TRUE(contains(r.out, "ligand     478 200: Open Babel 3.1")) << r;
  EXPECT_TRUE(contains(r.out, "MMFF94 charges, hydrogens for pH 7")) << r;
  EXPECT_TRUE(contains(r.out, "70 atoms (35 hydrogens added), formal charge 0, charges sum to +0.0000 e")) << r;
  EXPECT_TRUE(contains(r.out, "ligand     SO4 A 301:")) << r;
  EXPECT_TRUE(contains(r.out, "formal charge -2, charges sum to -2.0000 e")) << r;
  EXPECT_TRUE(contains(r.out, "ion        ZN C 601: zinc ion, formal charge +2")) << r;
  EXPECT_TRUE(contains(r.out, "left out   SM C 602: a lone Sm")) << r;
  EXPECT_TRUE(contains(r.out, "waters     3 waters (HOH): dropped")) << r;
  EXPECT_TRUE(contains(r.err, "1 residue of tests/data/ligand_complex.pdb is not in the map: SM C 602")) << r;
  // The kept PQR holds every atom of the map: amprenavir's 35 heavy atoms and 35 hydrogens
  // (C25H35N3O6S, its FORMUL record), charges summing to its formal charge 0 to the 1e-6 e the
  // PQR's six decimals carry (70 roundings of at most 5e-7 e).
  const auto residues = residues_of_pqr(dir / "lc.pqr");
  ASSERT_TRUE(residues.count("478")) << slurp(dir / "lc.pqr");
  EXPECT_EQ(residues.at("478").first, 70);
  EXPECT_NEAR(residues.at("478").second, 0.0, 70 * 5e-7);
  EXPECT_NEAR(residues.at("SO4").second, -2.0, 5 * 5e-7);
  EXPECT_EQ(residues.at("ZN").second, 2.0);
  EXPECT_EQ(residues.count("HOH"), 0u);
  EXPECT_EQ(residues.count("SM"), 0u);
}

TEST(Ligands, KeepWaterKeepsThemAndNoneLeavesLigandsOut) {
  REQUIRE_PDB2PQR_AND_OPENBABEL();
  const fs::path dir = fs::path(::testing::TempDir()) / "espgrid_ligands_options";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Outcome r = Child({"map", "tests/data/ligand_complex.pdb", "-o", (dir / "w.dx").string(), "--spacing", "2",
                           "--keep-water", "--ligand-charges", "none", "--keep-pqr", (dir / "w.pqr").string()},
                          dir, {})
                        .wait(600);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_FALSE(contains(r.out, "--drop-water")) << r;
  EXPECT_TRUE(contains(r.out, "left out   478 200: not charged (--ligand-charges none)")) << r;
  const auto residues = residues_of_pqr(dir / "w.pqr");
  EXPECT_EQ(residues.at("HOH").first, 9);  // pdb2pqr's TIP3P waters: 3 × (O + 2 H)
  EXPECT_EQ(residues.count("478"), 0u);
  EXPECT_EQ(residues.at("ZN").second, 2.0);  // ions are charged whatever --ligand-charges says
}

TEST(Ligands, Pdb2pqrsOwnOptionsAreCheckedBeforeItRuns) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--pdb2pqr-options", "--apbs-input x.in"}, "is not one of the pdb2pqr options espgrid passes on"},
      {{"--pdb2pqr-options", "--drop-water"}, "waters are dropped unless --keep-water"},
      {{"--pdb2pqr-options", "--ffout"}, "--ffout needs a value"},
      {{"--pdb2pqr-options", "--ffout NOPE"}, "--forcefield takes one of pdb2pqr's force fields"},
      {{"--ligand", "data/fasciculin2.pqr"}, "is not a .mol2 file"},
      {{"--ligand", "nowhere.mol2"}, "no such readable file"},
      {{"--ligand-charges", "am1bcc"}, "--ligand-charges takes mmff94, gasteiger or none"},
  };
  const fs::path dir = fs::path(::testing::TempDir()) / "espgrid_pdb2pqr_options";
  fs::create_directories(dir);
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"map", "tests/data/flipped_amides.pdb", "-o", (dir / "x.dx").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome r = Child(args, dir, {{{"ESPGRID_PDB2PQR", "/nonexistent-never-run"}}}).wait(60);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_TRUE(contains(r.err, message)) << message << "\n" << r;
  }
  // For a PQR they are refused as the other PDB-only options are.
  const Outcome r =
      Child({"map", "data/fasciculin2.pqr", "-o", (dir / "x.dx").string(), "--keep-water"}, dir, {}).wait(60);
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "--keep-water applies to PDB and mmCIF input")) << r;
  // Passed on: the equivalent command shows them.
  EXPECT_EQ(parse_pdb2pqr_options("--noopt --ffout=charmm --nodebump"),
            (std::vector<std::string>{"--noopt", "--ffout", "CHARMM", "--nodebump"}));
}

TEST(Ligands, PymolsTutorialFileGetsAmprenavirChargedAndNoWaters) {
  REQUIRE_PDB2PQR_AND_OPENBABEL();
  const std::string tutorial = "/usr/share/pymol/data/tut/1hpv.pdb";
  if (!fs::exists(tutorial))
    GTEST_SKIP() << tutorial << " is not installed (Debian pymol-data; install-deps --interop)";
  const fs::path dir = fs::path(::testing::TempDir()) / "espgrid_1hpv";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Outcome r = Child({"map", tutorial, "-o", (dir / "1hpv.dx").string(), "--spacing", "2", "--keep-pqr",
                           (dir / "1hpv.pqr").string()},
                          dir, {})
                        .wait(600);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "ligand     478 200: Open Babel")) << r;
  EXPECT_TRUE(contains(r.out, "waters     80 waters (HOH): dropped")) << r;
  EXPECT_TRUE(contains(r.out, "flipped    GLN A 2 (OE1/NE2), ASN B 98 (OD1/ND2)")) << r;
  const auto residues = residues_of_pqr(dir / "1hpv.pqr");
  EXPECT_EQ(residues.at("478").first, 70);  // C25H35N3O6S
  EXPECT_NEAR(residues.at("478").second, 0.0, 70 * 5e-7);
  EXPECT_EQ(residues.count("HOH"), 0u);
}

// ---- the potential at every atom ------------------------------------------------------------------

TEST(AtomPotentials, EqualAnIndependentDoubleSumWithoutTheSelfTerm) {
  const Structure s = read_structure(std::string(ESPGRID_SOURCE_DIR) + "/data/fasciculin2.pqr", StructureFormat::Pqr);
  const Atoms& a = s.atoms;
  for (const std::string model : {"coulomb", "distance", "debye"}) {
    SCOPED_TRACE(model);
    MapJob job;
    find_job_option("model")->apply(job, OptionValue::text(model));
    if (model == "debye") {
      find_job_option("dielectric")->apply(job, OptionValue::number(78.54));
      find_job_option("ionic-strength")->apply(job, OptionValue::number(0.15));
    }
    finish_job(job, JobUse::Values);
    MapObserver quiet;
    const AtomPotentials got = potential_at_atoms(job, a, quiet);
    ASSERT_EQ(got.values.size(), a.size());
    // The oracle, written out here: k/ε Σ_{j≠i} q_j f(r) with no softening, in double.
    const double k = coulomb_factor(job.physics);
    const double kappa = model == "debye" ? debye_kappa(0.15, 78.54, job.physics.temperature) : 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      double sum = 0, scale = 0;
      for (std::size_t j = 0; j < a.size(); ++j) {
        if (j == i) continue;
        const double r = std::sqrt((a.x[i] - a.x[j]) * (a.x[i] - a.x[j]) + (a.y[i] - a.y[j]) * (a.y[i] - a.y[j]) +
                                   (a.z[i] - a.z[j]) * (a.z[i] - a.z[j]));
        const double term = k * a.charge[j] * (model == "distance" ? 1 / (r * r) : std::exp(-kappa * r) / r);
        sum += term;
        scale += std::fabs(term);
      }
      // 1e-6 of the terms' magnitudes: the target; the softening (1e-4 Å) changes a term at r
      // ≥ 0.9 Å by a²/(2r²) ≤ 7e-9 of it, and both sums round far below that in double.
      ASSERT_NEAR(got.values[i], sum, 1e-6 * scale) << "atom " << i + 1;
    }
  }
}

TEST(AtomPotentials, PairModelsRefuseTheMapOptionsAndTheGpu) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--kernel", "cpu-simd"}, "kernel’ does not exist"},  // not an option of sample (cxxopts)
      {{"--backend", "cuda"}, "summed in double precision on the CPU"},
      {{"--spacing", "1"}, "--spacing places a map's grid"},
      {{"--points", "data/fasciculin2-points.csv"}, "give it without --points and --map"},
      {{"-o", "atoms.pqr"}, "a PQR has no B-factor column"},
      {{"--residues", "r.pdb"}, "the per-residue table is a .csv"},
  };
  const fs::path dir = fs::path(::testing::TempDir()) / "espgrid_atoms_usage";
  fs::create_directories(dir);
  for (const auto& [extra, message] : cases) {
    std::vector<std::string> args = {"sample", "data/fasciculin2.pqr", "--at-atoms"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome r = Child(args, dir, {}).wait(60);
    EXPECT_EQ(r.code, 2) << r;
    EXPECT_TRUE(contains(r.err, message)) << message << "\n" << r;
  }
  const Outcome r =
      Child({"sample", "data/acetazolamide.xyz", "--at-atoms", "--residues", (dir / "r.csv").string()}, dir, {})
          .wait(60);
  EXPECT_EQ(r.code, 2) << r;  // XYZ has no residues
  EXPECT_TRUE(contains(r.err, "has no residues")) << r;
  EXPECT_FALSE(fs::exists(dir / "r.csv"));
}

TEST(AtomPotentials, TablesAndBFactorsHoldTheValues) {
  const fs::path dir = fs::path(::testing::TempDir()) / "espgrid_atoms_files";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Outcome r = Child({"sample", "data/fasciculin2.pqr", "--at-atoms", "--model", "debye", "--dielectric", "78.54",
                           "--ionic-strength", "0.15", "-o", (dir / "a.csv").string(), "-o", (dir / "a.pdb").string(),
                           "--residues", (dir / "r.csv").string()},
                          dir, {})
                        .wait(600);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "values     exact sum over the 905 other atoms, double precision")) << r;
  // The CSV: a row an atom, the values as doubles written exactly.
  std::ifstream csv(dir / "a.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "index,name,residue,chain,number,insertion,x,y,z,charge,potential_kT/e");
  std::vector<double> values;
  std::vector<std::string> residue_of;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    values.push_back(std::stod(f[10]));
    residue_of.push_back(f[2] + f[4]);
  }
  ASSERT_EQ(values.size(), 906u);
  // The PDB: each atom's B-factor is its value to PDB's two decimals.
  std::ifstream pdb(dir / "a.pdb");
  std::size_t atom = 0;
  while (std::getline(pdb, line)) {
    if (line.rfind("ATOM", 0) != 0 && line.rfind("HETATM", 0) != 0) continue;
    ASSERT_LT(atom, values.size());
    EXPECT_NEAR(std::stod(line.substr(60, 6)), values[atom], 0.005 + 1e-9) << line;
    ++atom;
  }
  EXPECT_EQ(atom, 906u);
  // The residues: each one's mean of its atoms' values (THR 544, the second residue).
  std::ifstream residues(dir / "r.csv");
  std::getline(residues, line);
  EXPECT_EQ(line, "residue,chain,number,insertion,atoms,charge,mean,min,min_atom,max,max_atom");
  std::getline(residues, line);
  std::getline(residues, line);
  EXPECT_EQ(line.substr(0, 12), "THR,,544,,12");
  double sum = 0;
  int n = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (residue_of[i] == "THR544") {
      sum += values[i];
      ++n;
    }
  std::vector<std::string> f;
  std::stringstream fields(line);
  for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
  EXPECT_EQ(n, 12);
  EXPECT_NEAR(std::stod(f[6]), sum / n, 1e-12 * std::fabs(sum));
}

}  // namespace
