// The APBS input language (src/apbs/apbs_input.h): every keyword as APBS 3.4.1 reads it, the
// layouts APBS accepts (comments, case, '=' ',' ';' as spaces, any line breaks, quoted paths), and
// every defect refused with FILE:LINE naming the line at fault.
#include <gtest/gtest.h>

#include <string>

#include "src/apbs/apbs_input.h"

namespace espgrid::apbs {
namespace {

/// A complete mg-manual block around `extra` keywords (which may replace the defaults below them:
/// APBS keeps the last value of a keyword).
std::string manual_block(const std::string& extra = "") {
  return "elec name one\n"
         "  mg-manual\n"
         "  dime 33 33 33\n"
         "  glen 40 40 40\n"
         "  gcent mol 1\n"
         "  mol 1\n"
         "  lpbe\n"
         "  bcfl mdh\n"
         "  pdie 2.0\n"
         "  sdie 78.54\n"
         "  chgm spl2\n"
         "  srfm smol\n"
         "  srad 1.4\n"
         "  swin 0.3\n"
         "  sdens 10.0\n"
         "  temp 298.15\n" +
         extra + "end\n";
}

std::string with_molecule(const std::string& body) { return "read\n  mol pqr a.pqr\nend\n" + body; }

ApbsInput parse(const std::string& text) { return parse_apbs_input(text, "in.in"); }

/// The parse fails with "in.in:LINE: ..." containing `what`.
void expect_error(const std::string& text, std::size_t line, const std::string& what) {
  try {
    parse(text);
    FAIL() << "parsed without error; expected line " << line << ": " << what << "\n" << text;
  } catch (const ApbsInputError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.file(), "in.in");
    EXPECT_NE(std::string(e.what()).find("in.in:" + std::to_string(line) + ": "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(ApbsParser, ReadsAManualBlock) {
  const ApbsInput in = parse(with_molecule(manual_block("  write pot dx pot\n")) + "quit\n");
  ASSERT_EQ(in.molecules.size(), 1u);
  EXPECT_EQ(in.molecules[0].path, "a.pqr");
  EXPECT_EQ(in.molecules[0].format, MoleculeFormat::Pqr);
  EXPECT_EQ(in.molecules[0].line, 2u);
  ASSERT_EQ(in.elecs.size(), 1u);
  const ElecBlock& e = in.elecs[0];
  EXPECT_EQ(e.name, "one");
  EXPECT_EQ(e.line, 4u);
  EXPECT_EQ(e.method, ElecMethod::Manual);
  EXPECT_EQ(e.dime.value, (std::array<int, 3>{33, 33, 33}));
  EXPECT_TRUE(e.glen.set);
  EXPECT_FALSE(e.grid.set);
  EXPECT_EQ(e.gcent.molecule, 1);
  EXPECT_EQ(e.molecule, 1);
  EXPECT_EQ(*e.equation, Equation::Linearized);
  EXPECT_EQ(*e.boundary, Boundary::MultipleDebyeHuckel);
  EXPECT_EQ(*e.charges, ChargeMethod::Spline2);
  EXPECT_EQ(*e.surface, SurfaceMethod::Smol);
  EXPECT_DOUBLE_EQ(e.pdie.value, 2.0);
  EXPECT_DOUBLE_EQ(e.sdie.value, 78.54);
  EXPECT_DOUBLE_EQ(e.srad.value, 1.4);
  EXPECT_DOUBLE_EQ(e.swin.value, 0.3);
  EXPECT_DOUBLE_EQ(e.sdens.value, 10.0);
  EXPECT_DOUBLE_EQ(e.temp.value, 298.15);
  EXPECT_EQ(e.energy, EnergyRequest::None);  // APBS's default
  ASSERT_EQ(e.writes.size(), 1u);
  EXPECT_EQ(e.writes[0].stem, "pot");
  EXPECT_TRUE(in.notices.empty());
}

TEST(ApbsParser, AcceptsApbsLayouts) {
  // One line, upper case, '=' ',' ';' as spaces, comments by '#' and '%' (also inside a word),
  // tabs and CR LF: what maloc's tokenizer makes of it is what APBS reads.
  const std::string text =
      "READ MOL PQR a.pqr END # the molecule\r\n"
      "ELEC NAME One MG-MANUAL DIME=33,33,33 GLEN 40;40;40 GCENT MOL 1 MOL 1 LPBE BCFL MDH PDIE 2.0%two\r\n"
      "\tSDIE=78.54 CHGM SPL2 SRFM MOL SRAD 1.4 SDENS 10 TEMP 298.15 CALCENERGY TOTAL END\r\n"
      "PRINT ELECENERGY one END QUIT this is never read\n";
  const ApbsInput in = parse(text);
  ASSERT_EQ(in.elecs.size(), 1u);
  EXPECT_EQ(in.elecs[0].name, "One");
  EXPECT_DOUBLE_EQ(in.elecs[0].pdie.value, 2.0);
  EXPECT_DOUBLE_EQ(in.elecs[0].sdie.value, 78.54);
  EXPECT_EQ(in.elecs[0].glen.value, (std::array<double, 3>{40, 40, 40}));
  EXPECT_EQ(in.elecs[0].sdie.line, 3u);
  ASSERT_EQ(in.prints.size(), 1u);
  EXPECT_EQ(in.prints[0].elecs, std::vector<int>{0});
}

TEST(ApbsParser, QuotedPathsJoinTheirWordsWithOneSpace) {
  const ApbsInput in = parse("read mol pqr \"my  protein.pqr\" mol pdb \"b.pdb\" parm flat \"p a r m.dat\" end\n" +
                             manual_block("  write pot gz \"out put\"\n"));
  EXPECT_EQ(in.molecules[0].path, "my protein.pqr");  // APBS collapses the two spaces too
  EXPECT_EQ(in.molecules[1].path, "b.pdb");
  EXPECT_EQ(in.molecules[1].format, MoleculeFormat::Pdb);
  EXPECT_EQ(in.parameters->path, "p a r m.dat");
  EXPECT_EQ(in.elecs[0].writes[0].stem, "out put");
  EXPECT_EQ(in.elecs[0].writes[0].format, WriteFormat::Gz);
  expect_error("read mol pqr \"open ended\n", 1, "no closing");
  expect_error("read mol pqr \"\" end\n", 1, "an empty molecule path");
}

TEST(ApbsParser, ReadsEveryGridKeyword) {
  const std::string block =
      "elec mg-auto dime 65 97 33 cglen 100 90 80 fglen 30 31 32 cgcent 1.5 -2 3e1 fgcent mol 1 etol 1e-8\n"
      "  mol 1 npbe bcfl sdh pdie 4 sdie 80 chgm spl4 srfm spl4 swin 0.25 temp 300 calcenergy comps end\n"
      "elec mg-para pdime 2 3 1 ofrac 0.2 async 5 dime 33 33 33 cglen 80 80 80 fglen 40 40 40 cgcent mol 1\n"
      "  fgcent mol 1 mol 1 lpbe bcfl zero pdie 2 sdie 78 chgm spl0 srfm spl2 swin 0.3 temp 298 end\n"
      "elec mg-manual dime 33 33 33 grid 0.5 0.6 0.7 gcent 1 2 3 mol 1 lpbe bcfl focus pdie 2 sdie 78\n"
      "  chgm spl2 srfm mol srad 0 temp 298 end\n";
  const ApbsInput in = parse(with_molecule(block));
  ASSERT_EQ(in.elecs.size(), 3u);
  const ElecBlock& a = in.elecs[0];
  EXPECT_EQ(a.method, ElecMethod::Auto);
  EXPECT_EQ(a.dime.value, (std::array<int, 3>{65, 97, 33}));
  EXPECT_EQ(a.cglen.value, (std::array<double, 3>{100, 90, 80}));
  EXPECT_EQ(a.fglen.value, (std::array<double, 3>{30, 31, 32}));
  EXPECT_EQ(a.cgcent.molecule, 0);
  EXPECT_EQ(a.cgcent.xyz, (std::array<double, 3>{1.5, -2, 30}));
  EXPECT_EQ(a.fgcent.molecule, 1);
  EXPECT_DOUBLE_EQ(*a.etol, 1e-8);
  EXPECT_EQ(*a.equation, Equation::Nonlinear);
  EXPECT_EQ(*a.boundary, Boundary::SingleDebyeHuckel);
  EXPECT_EQ(*a.charges, ChargeMethod::Spline4);
  EXPECT_EQ(*a.surface, SurfaceMethod::Spline4);
  EXPECT_EQ(a.energy, EnergyRequest::Components);
  const ElecBlock& p = in.elecs[1];
  EXPECT_EQ(p.method, ElecMethod::Parallel);
  EXPECT_EQ(p.pdime.value, (std::array<int, 3>{2, 3, 1}));
  EXPECT_DOUBLE_EQ(p.ofrac.value, 0.2);
  EXPECT_EQ(*p.async, 5);
  EXPECT_EQ(*p.boundary, Boundary::Zero);
  EXPECT_EQ(*p.charges, ChargeMethod::Spline0);
  EXPECT_EQ(*p.surface, SurfaceMethod::Spline2);
  const ElecBlock& m = in.elecs[2];
  EXPECT_EQ(m.grid.value, (std::array<double, 3>{0.5, 0.6, 0.7}));
  EXPECT_EQ(m.gcent.xyz, (std::array<double, 3>{1, 2, 3}));
  EXPECT_EQ(*m.boundary, Boundary::Focus);
  EXPECT_EQ(*m.surface, SurfaceMethod::Mol);
  EXPECT_FALSE(m.sdens.set);  // mol with srad 0 needs no sdens (APBS's PBEparm_check)
}

TEST(ApbsParser, ReadsIonsInBothForms) {
  const ApbsInput in =
      parse(with_molecule(manual_block("  ion charge 2 conc 0.05 radius 2.5\n"
                                       "  ion radius 1.5 charge -1 conc 0.1\n"
                                       "  ion 1 0.3 2.0\n"
                                       "  ion conc 0.3 radius 1.8 charge -1\n")));
  const auto& ions = in.elecs[0].ions;
  ASSERT_EQ(ions.size(), 4u);
  EXPECT_EQ(ions[0].charge, 2);
  EXPECT_EQ(ions[0].concentration, 0.05);
  EXPECT_EQ(ions[0].radius, 2.5);
  EXPECT_EQ(ions[1].charge, -1);
  EXPECT_EQ(ions[1].radius, 1.5);
  EXPECT_EQ(ions[2].charge, 1);  // the deprecated `ion Z C R`, with a notice
  EXPECT_EQ(ions[2].concentration, 0.3);
  EXPECT_EQ(ions[3].line, 23u);
  ASSERT_EQ(in.notices.size(), 1u);
  EXPECT_NE(in.notices[0].find("in.in:22:"), std::string::npos) << in.notices[0];
  // APBS compares the ion's keys case-sensitively, and refuses an unbalanced electrolyte.
  expect_error(with_molecule(manual_block("  ion CHARGE 1 conc 0.1 radius 2\n")), 20, "lower case");
  expect_error(with_molecule(manual_block("  ion charge 1 charge 1 radius 2\n")), 20, "charge twice");
  expect_error(with_molecule(manual_block("  ion charge 1 conc 0.1 radius 2\n")), 20, "do not balance");
  expect_error(with_molecule(manual_block("  ion charge 1 conc -0.1 radius 2\n  ion charge -1 conc -0.1 radius 2\n")),
               20, "negative");
}

TEST(ApbsParser, ReadsEveryWriteType) {
  std::string writes;
  for (const char* type : {"pot", "charge", "kappa", "dielx", "diely", "dielz", "smol", "sspl", "vdw", "ivdw", "lap",
                           "edens", "ndens", "qdens"})
    writes += std::string("  write ") + type + " dx " + type + "\n";
  const ApbsInput in = parse(with_molecule(manual_block(writes)));
  ASSERT_EQ(in.elecs[0].writes.size(), 14u);
  for (std::size_t i = 0; i < 14; ++i) {
    EXPECT_EQ(static_cast<std::size_t>(in.elecs[0].writes[i].type), i);
    EXPECT_EQ(write_type_name(in.elecs[0].writes[i].type), in.elecs[0].writes[i].stem);
  }
}

TEST(ApbsParser, DeprecatedNumericFormsAsApbsReadsThem) {
  const ApbsInput in = parse(with_molecule(
      manual_block("  bcfl 1\n  srfm 2\n  chgm 0\n  calcenergy 1\n  calcforce 0\n  nlev 4\n  gamma 0.1\n  useaqua\n")));
  const ElecBlock& e = in.elecs[0];
  EXPECT_EQ(*e.boundary, Boundary::SingleDebyeHuckel);
  EXPECT_EQ(*e.surface, SurfaceMethod::Spline2);
  EXPECT_EQ(*e.charges, ChargeMethod::Spline0);
  EXPECT_EQ(e.energy, EnergyRequest::Total);
  EXPECT_EQ(in.notices.size(), 7u);  // four numeric forms, nlev, gamma, useaqua
  EXPECT_EQ(*parse(with_molecule(manual_block("  bcfl 4\n"))).elecs[0].boundary, Boundary::Focus);
  EXPECT_EQ(*parse(with_molecule(manual_block("  srfm 4\n"))).elecs[0].surface, SurfaceMethod::Spline4);
}

TEST(ApbsParser, ChangesDimeAsApbsDoes) {
  // MGparm_check: over 65 points with fewer than 4 multigrid levels → 32·⌊n/32⌋ + 1.
  const ApbsInput in = parse(with_molecule(manual_block("  dime 100 70 129\n")));
  EXPECT_EQ(in.elecs[0].dime.value, (std::array<int, 3>{97, 65, 129}));
  EXPECT_EQ(in.notices.size(), 2u);
  EXPECT_EQ(multigrid_axis(33).levels, 4);
  EXPECT_EQ(multigrid_axis(65).levels, 5);
  EXPECT_EQ(multigrid_axis(97).levels, 4);
  EXPECT_EQ(multigrid_axis(161).levels, 4);
  EXPECT_EQ(multigrid_axis(41).levels, 2);
  EXPECT_EQ(multigrid_axis(200).dime, 193);
  // 50 and 51 leave APBS's multigrid no level; APBS stops ("illegal nlev").
  expect_error(with_molecule(manual_block("  dime 50 33 33\n")), 20, "no level");
  expect_error(with_molecule(manual_block("  dime 33 51 33\n")), 20, "no level");
}

TEST(ApbsParser, ReadsPrintStatements) {
  const std::string blocks = manual_block("  calcenergy total\n") +
                             "elec name Two mg-manual dime 33 33 33 glen 40 40 40 gcent mol 1 mol 1 lpbe bcfl mdh\n"
                             "  pdie 2 sdie 2 chgm spl2 srfm smol srad 1.4 sdens 10 temp 298.15 calcenergy total end\n";
  const ApbsInput in =
      parse(with_molecule(blocks) + "print elecEnergy two - ONE + 2 end\nprint energy 1 end\nprint elecenergy 2 end\n");
  ASSERT_EQ(in.prints.size(), 3u);
  EXPECT_EQ(in.prints[0].elecs, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(in.prints[0].signs, (std::vector<int>{1, -1, 1}));
  EXPECT_TRUE(in.prints[1].deprecated_energy);
  EXPECT_EQ(elec_label(in, 1), "ELEC block 2 (Two)");
  const std::string head = with_molecule(blocks);  // 23 lines
  expect_error(head + "print elecEnergy one - end\n", 24, "ends where a calculation was expected");
  expect_error(head + "print elecEnergy one two end\n", 24, "where '+', '-' or 'end' was expected");
  expect_error(head + "print elecEnergy - one end\n", 24, "where a calculation was expected");
  expect_error(head + "print elecEnergy three end\n", 24, "named three");
  expect_error(head + "print elecEnergy 3 end\n", 24, "has 2 ELEC blocks");
  expect_error(head + "print force 1 end\n", 24, "keyword force is not supported");
  expect_error(head + "print apolEnergy 1 end\n", 24, "not supported");
  expect_error(head + "print elecEnergy 1\n", 24, "the file ends");
  // A name is looked up among the blocks before the print, as APBS does.
  expect_error("read mol pqr a.pqr end\nprint elecEnergy one end\n" + manual_block(), 2, "named one");
  // A block that computes no energy cannot be printed (APBS would print nothing, or add 0).
  expect_error(with_molecule(manual_block()) + "print elecEnergy one end\n", 21, "computes no energy");
}

TEST(ApbsParser, RefusesMissingKeywordsAtTheBlockLine) {
  const std::string line_keywords[] = {"dime", "chgm", "gcent", "mol",  "lpbe",  "bcfl",
                                       "pdie", "sdie", "srfm",  "srad", "sdens", "temp"};
  for (const std::string& keyword : line_keywords) {
    std::string block = manual_block();
    std::size_t at = block.find("  " + keyword + " ");
    if (at == std::string::npos) at = block.find("  " + keyword + "\n");
    ASSERT_NE(at, std::string::npos) << keyword;
    block.erase(at, block.find('\n', at) + 1 - at);
    const std::string what = keyword == "lpbe" ? "neither lpbe nor npbe" : "does not set " + keyword;
    expect_error(with_molecule(block), 4, what);
  }
  std::string no_length = manual_block();
  no_length.erase(no_length.find("  glen"), 17);
  expect_error(with_molecule(no_length), 4, "neither grid nor glen");
  expect_error(with_molecule(manual_block("  grid 1 1 1\n")), 4, "both grid and glen");
  std::string no_window = manual_block("  srfm spl2\n");
  no_window.erase(no_window.find("  swin"), 12);
  expect_error(with_molecule(no_window), 4, "does not set swin");
  const std::pair<std::string, std::string> focusing_keywords[] = {
      {"cglen", "cglen 80 80 80"}, {"fglen", "fglen 40 40 40"}, {"cgcent", "cgcent mol 1"}, {"fgcent", "fgcent mol 1"}};
  const auto focusing_without = [&](const std::string& left_out) {
    std::string text = "elec mg-auto dime 33 33 33";
    for (const auto& [keyword, words] : focusing_keywords)
      if (keyword != left_out) text += " " + words;
    return text + " mol 1 lpbe bcfl sdh\n  pdie 2 sdie 78 chgm spl2 srfm smol srad 1.4 sdens 10 temp 298.15 end\n";
  };
  for (const auto& [keyword, words] : focusing_keywords)
    expect_error(with_molecule(focusing_without(keyword)), 4, "does not set " + keyword);
  const std::string focusing = focusing_without("");
  std::string para = focusing;
  para.replace(para.find("mg-auto"), 7, "mg-para ofrac 0.1");
  expect_error(with_molecule(para), 4, "does not set pdime");
  para.replace(para.find("ofrac 0.1"), 9, "pdime 2 2 1");
  expect_error(with_molecule(para), 4, "does not set ofrac");
  para.replace(para.find("pdime 2 2 1"), 11, "pdime 2 2 1 ofrac 0.1 async 4");
  expect_error(with_molecule(para), 4, "async 4 names no partition");
}

TEST(ApbsParser, RefusesBadValuesAtTheirLine) {
  expect_error(with_molecule(manual_block("  pdie 2.0x\n")), 20, "'2.0x' is not a number");
  expect_error(with_molecule(manual_block("  pdie nan\n")), 20, "is not a number");
  expect_error(with_molecule(manual_block("  dime 33 33.5 33\n")), 20, "not a whole number");
  expect_error(with_molecule(manual_block("  dime 33 0 33\n")), 20, "out of range");
  expect_error(with_molecule(manual_block("  glen 40 -1 40\n")), 20, "must be positive");
  expect_error(with_molecule(manual_block("  pdie 0\n")), 20, "pdie must be positive");
  expect_error(with_molecule(manual_block("  temp -5\n")), 20, "temp must be positive");
  expect_error(with_molecule(manual_block("  sdens 0\n")), 20, "sdens must be positive");
  expect_error(with_molecule(manual_block("  srad -1\n")), 20, "cannot be negative");
  expect_error(with_molecule(manual_block("  etol 0\n")), 20, "etol must be greater than 0");
  expect_error(with_molecule(manual_block("  ofrac 0.5\n")), 20, "[0, 0.5)");
  expect_error(with_molecule(manual_block("  gcent mol x\n")), 20, "not a whole number");
  expect_error(with_molecule(manual_block("  gcent left 1 2\n")), 20, "'left' is not a number");
  expect_error(with_molecule(manual_block("  bcfl far\n")), 20, "bcfl takes zero, sdh, mdh or focus");
  expect_error(with_molecule(manual_block("  bcfl 3\n")), 20, "not a boundary condition");
  expect_error(with_molecule(manual_block("  srfm cube\n")), 20, "srfm takes");
  expect_error(with_molecule(manual_block("  chgm spl3\n")), 20, "chgm takes");
  expect_error(with_molecule(manual_block("  calcenergy all\n")), 20, "calcenergy takes");
  expect_error(with_molecule(manual_block("  write pot png out\n")), 20, "format dx or gz");
  expect_error(with_molecule(manual_block("  write potential dx out\n")), 20, "cannot write 'potential'");
}

TEST(ApbsParser, RefusesUnsupportedKeywordsByName) {
  const std::pair<std::string, std::string> cases[] = {
      {"  calcforce total\n", "keyword calcforce is not supported (calcforce total"},
      {"  calcforce comps\n", "espgrid computes no forces"},
      {"  write atompot flat out\n", "keyword atompot is not supported"},
      {"  write pot uhbd out\n", "keyword uhbd is not supported"},
      {"  write pot dxbin out\n", "keyword dxbin is not supported"},
      {"  usemap diel 1\n", "keyword usemap is not supported"},
      {"  bcfl mem\n", "keyword mem is not supported"},
      {"  bcfl map\n", "keyword map is not supported"},
      {"  srfm spl3\n", "keyword spl3 is not supported"},
      {"  lrpbe\n", "keyword lrpbe is not supported"},
      {"  nrpbe\n", "keyword nrpbe is not supported"},
      {"  smpbe vol 1 size 1\n", "keyword smpbe is not supported"},
      {"  writemat poisson mat\n", "keyword writemat is not supported"},
      {"  zmem 1\n", "keyword zmem is not supported"},
      {"  Lmem 1\n", "keyword Lmem is not supported"},
      {"  sideways 1\n", "keyword sideways is not supported in an ELEC block"},
  };
  for (const auto& [keyword, what] : cases) expect_error(with_molecule(manual_block(keyword)), 20, what);
  expect_error(with_molecule("elec name x fe-manual end\n"), 4, "keyword fe-manual is not supported");
  expect_error(with_molecule("elec mg-dummy end\n"), 4, "keyword mg-dummy is not supported");
  expect_error(with_molecule("elec name x tabi end\n"), 4, "keyword tabi is not supported");
  expect_error(with_molecule("elec geoflow-auto end\n"), 4, "optionally after 'name NAME', not 'geoflow-auto'");
  expect_error(with_molecule("elec pbam-auto end\n"), 4, "not 'pbam-auto'");
  expect_error(with_molecule("apolar name x sacc end\n"), 4, "keyword apolar is not supported");
  expect_error("read mol xml a.xml end\n", 1, "keyword xml is not supported");
  expect_error("read mol mol2 a.mol2 end\n", 1, "unknown molecule format 'mol2'");
  expect_error("read parm xml a.xml end\n", 1, "keyword xml is not supported");
  expect_error("read diel dx x.dx y.dx z.dx end\n", 1, "keyword diel is not supported");
  expect_error("read mesh mcsf m.m end\n", 1, "keyword mesh is not supported");
  expect_error("read\n  molecule pqr a.pqr end\n", 2, "not supported in READ");
  // APBS skips a stray word between sections with a warning; espgrid stops at it.
  expect_error(with_molecule(manual_block()) + "\nsolve\n", 22, "keyword solve is not supported here");
}

TEST(ApbsParser, RefusesBrokenFilesAtTheirLine) {
  expect_error("read mol pqr a.pqr\n", 1, "the file ends while reading the READ section");
  expect_error(with_molecule("elec name x mg-manual dime 33 33 33\n"), 4, "the file ends while reading the ELEC");
  expect_error(with_molecule("elec\n"), 4, "the file ends");
  expect_error(with_molecule("elec name\n"), 4, "the file ends");
  expect_error(with_molecule(manual_block("  dime 33 33\n")), 21, "'end' is not a whole number");
  expect_error(std::string("read mol pqr a.pqr\0 end\n", 23), 1, "NUL byte");
  expect_error("read mol pqr " + std::string(5000, 'a') + " end\n", 1, "a word of 5000 characters");
  // Molecule numbers are checked once every READ is known.
  expect_error(with_molecule(manual_block("  mol 2\n")), 20, "names molecule 2, but READ reads 1 molecule");
  expect_error(manual_block(), 6, "but READ reads no molecules");
  expect_error(with_molecule(manual_block("  gcent mol 3\n")), 20, "the grid centre names molecule 3");
}

TEST(ApbsParser, NotesKeywordsTheMethodIgnores) {
  const ApbsInput in = parse(with_molecule(manual_block("  cglen 1 1 1\n  async 2\n")));
  ASSERT_EQ(in.notices.size(), 2u);
  EXPECT_NE(in.notices[0].find("in.in:20: cglen has no effect in an mg-manual block"), std::string::npos)
      << in.notices[0];
  const ApbsInput twice = parse("read parm flat a.dat parm flat b.dat mol pdb x.pdb end\n" + manual_block());
  EXPECT_EQ(twice.parameters->path, "a.dat");  // the second is ignored, as APBS ignores it
  ASSERT_EQ(twice.notices.size(), 1u);
}

}  // namespace
}  // namespace espgrid::apbs
