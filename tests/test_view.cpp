// `espgrid view` end to end (the binary, ESPGRID_BINARY) and its page's pieces: how the surface
// values are chosen, the summary, every refusal (exit code, message, no page left), and the
// page's structure (the library and data inlined, nothing that could end a <script> early).
// The page in a real browser: tests/browser/test_view_page.mjs (label browser).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <sys/wait.h>

#include "src/structure/structure_reader.h"
#include "src/view/display_structure.h"
#include "src/view/view_page.h"
#include "src/view/view_scene.h"
#include "tests/file_helpers.h"

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif

namespace {

namespace fs = std::filesystem;
using espgrid::testing::contains;
using espgrid::testing::slurp;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Result {
  int code = -1;
  std::string out, err;
};
std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.code << "\n--- stdout ---\n" << r.out << "--- stderr ---\n" << r.err;
}

/// Whether the build bundled the viewer library (npm at build time): without it every page
/// test would only see the clear "not installed" error, which one test checks instead.
bool have_web_assets() {
  try {
    espgrid::load_web_assets();
    return true;
  } catch (const espgrid::Error&) {
    return false;
  }
}

class View : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared_ = fs::temp_directory_path() / ("espgrid_view_maps_" + std::to_string(::getpid()));
    fs::remove_all(shared_);
    fs::create_directories(shared_);
    // One map of fasciculin-2 at 1 Å (quick), Debye-screened like the quickstart's.
    const Result r = run_in(shared_, "map " + quote(source("data/fasciculin2.pqr")) +
                                         " --model debye --dielectric 78.54 --ionic-strength 0.15 --spacing 1 "
                                         "--backend cpu -o " +
                                         quote((shared_ / "fas.dx").string()));
    ASSERT_EQ(r.code, 0) << r;
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(shared_, ignored);
  }
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::temp_directory_path() / ("espgrid_view_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  static std::string source(const std::string& relative) { return std::string(ESPGRID_SOURCE_DIR) + "/" + relative; }
  static Result run_in(const fs::path& dir, const std::string& args) {
    const std::string out = (dir / ".stdout").string(), err = (dir / ".stderr").string();
    const int status =
        std::system((quote(ESPGRID_BINARY) + " " + args + " </dev/null >" + quote(out) + " 2>" + quote(err)).c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    r.out = slurp(out);
    r.err = slurp(err);
    fs::remove(out);
    fs::remove(err);
    return r;
  }
  Result run(const std::string& args) const { return run_in(dir_, args); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string fas_map() { return (shared_ / "fas.dx").string(); }

  /// A usage or input error: exit `code`, one "espgrid: error:" naming `needle`, and nothing
  /// left in the directory (no page, no temporary file).
  void expect_refused(const Result& r, int code, const std::string& needle) const {
    EXPECT_EQ(r.code, code) << r;
    EXPECT_TRUE(contains(r.err, "espgrid: error: ")) << r;
    EXPECT_TRUE(contains(r.err, needle)) << "expected '" << needle << "' in\n" << r;
    for (const auto& e : fs::directory_iterator(dir_)) ADD_FAILURE() << "left behind: " << e.path().filename();
  }

  /// A copy of the fasciculin map with its header's physics line replaced by `line`.
  std::string map_with_header(const std::string& name, const std::string& line) const {
    std::ifstream in(fas_map());
    std::ofstream out(path(name));
    std::string text;
    while (std::getline(in, text)) out << (text.rfind("# Potential in ", 0) == 0 ? line : text) << "\n";
    return path(name);
  }

  static fs::path shared_;
  fs::path dir_;
};
fs::path View::shared_;

TEST_F(View, FasciculinPageWithExactSums) {
  if (!have_web_assets()) GTEST_SKIP() << "SKIPPED: this build has no viewer library (npm)";
  const Result r =
      run("view " + quote(source("data/fasciculin2.pqr")) + " " + quote(fas_map()) + " -o " + quote(path("fas.html")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("surface +[0-9,]+ vertices, [0-9,]+ triangles \\(grid 0.5 Å")));
  EXPECT_TRUE(contains(r.out, "values     1.4 Å outside: exact direct sum over 906 atoms")) << r;
  EXPECT_TRUE(contains(r.out, "agrees with the map")) << r;
  EXPECT_TRUE(contains(r.out, "colours ±5 (APBS's and PyMOL's customary ±5 kT/e)")) << r;
  EXPECT_TRUE(contains(r.out, "isosurface -1 kT/e")) << r;
  EXPECT_TRUE(contains(r.out, "wrote      " + path("fas.html"))) << r;
  const std::string page = slurp(path("fas.html"));
  ASSERT_FALSE(page.empty());
  // The page is whole and self-contained: the library, the data and the script inlined, no
  // <script src> or <link>, and exactly its own four <script> elements plus one per data block
  // (anything in the data that ended a <script> early would add or break one).
  EXPECT_TRUE(contains(page, "3dmol v2.5.5")) << "the bundled library";
  EXPECT_FALSE(contains(page, "<script src")) << "a script the page would fetch";
  EXPECT_FALSE(contains(page, "<link")) << "a stylesheet the page would fetch";
  std::size_t scripts = 0, closes = 0;
  for (std::size_t at = page.find("<script"); at != std::string::npos; at = page.find("<script", at + 1)) ++scripts;
  for (std::size_t at = page.find("</script"); at != std::string::npos; at = page.find("</script", at + 1)) ++closes;
  EXPECT_EQ(scripts, closes);
  EXPECT_EQ(scripts, 3u + 4u) << "library, data, viewer + surface, two isosurfaces, atoms";
  EXPECT_TRUE(contains(page, "\"units\":\"kT/e\""));
  EXPECT_TRUE(contains(page, "\"limit\":5"));
  EXPECT_TRUE(contains(page, "\"cartoon\":true")) << "fasciculin-2's residues were read for a cartoon";
  EXPECT_TRUE(contains(page, "Potential in kT/e (T = 298.15 K), dielectric 78.54, model debye")) << "provenance";
  // The issue's budget: the 0.5 Å page is at most 5 MB (checked in the browser test); this
  // 1 Å map's page is smaller still.
  EXPECT_LT(page.size(), 5u * 1024 * 1024);
}

// The map may be in any format espgrid writes (read_map): the same map as .mrc gives the same
// surface values, its physics and source read from the MRC labels.
TEST_F(View, ReadsEveryMapFormat) {
  if (!have_web_assets()) GTEST_SKIP() << "SKIPPED: this build has no viewer library (npm)";
  const std::string fas = quote(source("data/fasciculin2.pqr"));
  const Result converted = run("convert " + quote(fas_map()) + " -o " + quote(path("fas.mrc")));
  ASSERT_EQ(converted.code, 0) << converted;
  const Result r = run("view " + fas + " " + quote(path("fas.mrc")) + " --values map -o " + quote(path("m.html")));
  ASSERT_EQ(r.code, 0) << r;
  const Result d = run("view " + fas + " " + quote(fas_map()) + " --values map -o " + quote(path("d.html")));
  ASSERT_EQ(d.code, 0) << d;
  // The same values interpolated from the same float32 map: the same range, to the digit.
  const auto range_line = [](const std::string& out) {
    const std::size_t at = out.find("\nrange ");
    return at == std::string::npos ? std::string("(no range line)") : out.substr(at, out.find('\n', at + 1) - at);
  };
  EXPECT_EQ(range_line(r.out), range_line(d.out)) << r << d;
  EXPECT_TRUE(contains(slurp(path("m.html")), "Potential in kT/e (T = 298.15 K), dielectric 78.54, model debye"))
      << "provenance from the .mrc's labels";
}

TEST_F(View, ValuesFromTheMapWhenAskedOrWhenTheSumDisagrees) {
  if (!have_web_assets()) GTEST_SKIP() << "SKIPPED: this build has no viewer library (npm)";
  const std::string fas = quote(source("data/fasciculin2.pqr"));
  Result r = run("view " + fas + " " + quote(fas_map()) + " --values map -o " + quote(path("a.html")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "trilinear interpolation of the map (asked for)")) << r;
  // An APBS map: its header names no pair model, so the sum is not tried.
  const std::string apbs = map_with_header("apbs.dx", "# POTENTIAL (kT/e)");
  r = run("view " + fas + " " + quote(apbs) + " -o " + quote(path("b.html")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "names no espgrid pair model")) << r;
  // A header that claims another dielectric than the values were made with: the structure's sum
  // (twice the map) disagrees, so the page shows the map and says why.
  const std::string wrong = map_with_header(
      "wrong.dx", "# Potential in kT/e (T = 298.15 K), dielectric 39.27, model debye, ionic strength 0.15 M");
  r = run("view " + fas + " " + quote(wrong) + " -o " + quote(path("c.html")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "the structure's direct sum differs from the map")) << r;
  EXPECT_TRUE(contains(r.err, "note: the structure's direct sum differs from the map")) << r;
  // --values sum forces the sum, and options reach the scene.
  r = run("view " + fas + " " + quote(fas_map()) + " --values sum --limit auto --levels -2,2 --title Fas -o " +
          quote(path("d.html")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "exact direct sum over 906 atoms")) << r;
  // 95% of the surface lies within ±2 kT/e (values -2.2 to +2.7): 1, 2, 3 or 5 × 10ⁿ rounds up to 2.
  EXPECT_TRUE(contains(r.out, "colours ±2 (auto")) << r;
  EXPECT_TRUE(contains(r.out, "isosurface -2 kT/e")) << r;
  EXPECT_TRUE(contains(slurp(path("d.html")), "\"title\":\"Fas\""));
}

TEST_F(View, Refusals) {
  // Without the viewer library `view` stops at that first (ViewerAssets checks it), before these.
  if (!have_web_assets()) GTEST_SKIP() << "SKIPPED: this build has no viewer library (npm)";
  const std::string fas = quote(source("data/fasciculin2.pqr")), map = quote(fas_map());
  expect_refused(run("view " + fas + " " + map), 2, "no output given");
  expect_refused(run("view " + fas + " -o " + quote(path("x.html"))), 2, "needs the structure and the map");
  expect_refused(run("view " + fas + " " + map + " -o " + quote(path("x.png"))), 2, "name it NAME.html");
  expect_refused(run("view " + quote(source("data/boxb_rna.pdb")) + " " + map + " -o " + quote(path("x.html"))), 2,
                 "give the PQR the map was computed from");
  expect_refused(run("view " + fas + " " + quote(path("map.vti")) + " -o " + quote(path("x.html"))), 1, "map.vti");
  expect_refused(run("view " + fas + " " + map + " --limit -1 -o " + quote(path("x.html"))), 2, "--limit");
  expect_refused(run("view " + fas + " " + map + " --values guess -o " + quote(path("x.html"))), 2, "--values must be");
  expect_refused(run("view " + fas + " " + map + " --levels 0 -o " + quote(path("x.html"))), 2, "--levels");
  expect_refused(run("view " + fas + " " + map + " --view top -o " + quote(path("x.html"))), 2, "--view must be");
  expect_refused(run("view " + fas + " " + map + " --surface-spacing 0 -o " + quote(path("x.html"))), 2,
                 "--surface-spacing");
  expect_refused(run("view " + fas + " " + quote(path("missing.dx")) + " -o " + quote(path("x.html"))), 1,
                 "missing.dx");
  // A map without a unit in its header.
  { std::ofstream(path("plain.dx")) << slurp(fas_map()).substr(slurp(fas_map()).find("object 1")); }
  Result r = run("view " + fas + " " + quote(path("plain.dx")) + " -o " + quote(path("x.html")));
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "does not say its unit; name it with --units")) << r;
  EXPECT_FALSE(fs::exists(path("x.html")));
  fs::remove(path("plain.dx"));
  // A structure that is not the map's: no atom inside its box.
  { std::ofstream(path("far.pqr")) << "ATOM      1  C   MOL     1    1000.000 1000.000 1000.000  0.5000 1.7000\n"; }
  r = run("view " + quote(path("far.pqr")) + " " + map + " -o " + quote(path("x.html")));
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "no atom of the structure lies inside the map's box")) << r;
  EXPECT_FALSE(fs::exists(path("x.html")));
  fs::remove(path("far.pqr"));
  // The page may not replace an input (a structure named like a page).
  fs::copy_file(source("data/fasciculin2.pqr"), path("in.html"));
  r = run("view --format pqr " + quote(path("in.html")) + " " + map + " -o " + quote(path("in.html")));
  EXPECT_EQ(r.code, 2) << r;
  EXPECT_TRUE(contains(r.err, "is the input")) << r;
}

TEST_F(View, MissingLibraryIsAClearError) {
  fs::create_directories(path("empty"));
  const std::string command = "ESPGRID_WEB_DIR=" + quote(path("empty")) + " " + quote(ESPGRID_BINARY) + " view " +
                              quote(source("data/fasciculin2.pqr")) + " " + quote(fas_map()) + " -o " +
                              quote(path("y.html")) + " >/dev/null 2>" + quote(path("err.txt"));
  const int status = std::system(command.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const std::string err = slurp(path("err.txt"));
  EXPECT_TRUE(contains(err, "the viewer library (3Dmol.js) is not installed: looked in")) << err;
  EXPECT_TRUE(contains(err, path("empty"))) << err;
  EXPECT_FALSE(fs::exists(path("y.html")));
}

TEST_F(View, SurfaceMeshFilesAndRefusals) {
  // `espgrid surface`: the files themselves are read by VTK and Khronos' glTF
  // validator in tests/interop/test_surface_mesh.py; here the command's choices and refusals.
  const std::string fas = quote(source("data/fasciculin2.pqr"));
  Result r = run("surface " + fas + " --model debye --dielectric 78.54 --ionic-strength 0.15 -o " +
                 quote(path("s.glb")) + " -o " + quote(path("s.ply")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "exact direct sum over 906 atoms, debye")) << r;
  EXPECT_TRUE(contains(r.out, "range      -2.15755 to 2.70969 kT/e")) << r;  // as `espgrid view` (FasciculinPage...)
  EXPECT_TRUE(fs::file_size(path("s.glb")) > 100000 && fs::file_size(path("s.ply")) > 100000);
  fs::remove(path("s.glb"));
  fs::remove(path("s.ply"));
  // With a map: its values where the sum disagrees with them (a header claiming another
  // dielectric), and the map's physics (Physics options refused).
  const std::string wrong = map_with_header(
      "wrong.dx", "# Potential in kT/e (T = 298.15 K), dielectric 39.27, model debye, ionic strength 0.15 M");
  r = run("surface " + fas + " --map " + quote(wrong) + " -o " + quote(path("m.vtp")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "trilinear interpolation of the map (the structure's direct sum differs")) << r;
  fs::remove(path("m.vtp"));
  fs::remove(wrong);
  expect_refused(run("surface " + fas + " -o " + quote(path("s.obj"))), 2,
                 "name it .ply (PLY), .glb (glTF binary) or .vtp");
  expect_refused(run("surface " + fas), 2, "no output given");
  expect_refused(run("surface " + fas + " --map " + quote(fas_map()) + " --dielectric 4 -o " + quote(path("s.ply"))), 2,
                 "--dielectric does not apply with --map");
  expect_refused(run("surface " + fas + " --values sum -o " + quote(path("s.ply"))), 2,
                 "--values applies with --map only");
  expect_refused(run("surface " + fas + " -o " + quote(path("s.ply")) + " -o " + quote(path("s.ply"))), 2,
                 "given twice");
  expect_refused(run("surface " + quote(source("data/boxb_rna.pdb")) + " -o " + quote(path("s.ply"))), 2,
                 "give a structure with charges");
  expect_refused(run("surface " + fas + " --offset -1 -o " + quote(path("s.ply"))), 2, "--offset");
}

// ---- the pieces -------------------------------------------------------------------------------------

TEST(ViewScene, CameraAxesAsTheRenderer) {
  // Atoms spread 20 Å along x, 6 Å along y, 1 Å along z: look along the thin z axis (from +z,
  // the direction's largest component negative), with y, the middle extent, up.
  espgrid::Atoms atoms;
  for (int i = 0; i < 11; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 2; ++k) atoms.push_back(2.0 * i, 2.0 * j, 1.0 * k, 0, 1.5);
  const auto [d, up] = espgrid::surface::camera_axes(atoms, "auto");
  EXPECT_NEAR(d[2], -1.0, 1e-9);
  EXPECT_NEAR(up[1], 1.0, 1e-9);
  const auto [dx, upx] = espgrid::surface::camera_axes(atoms, "+x");
  EXPECT_EQ(dx, (std::array<double, 3>{1, 0, 0}));
  EXPECT_EQ(upx, (std::array<double, 3>{0, 0, 1}));
  const auto [dz, upz] = espgrid::surface::camera_axes(atoms, "-z");
  EXPECT_EQ(dz, (std::array<double, 3>{0, 0, -1}));
  EXPECT_EQ(upz, (std::array<double, 3>{0, 1, 0}));
  EXPECT_THROW(espgrid::surface::camera_axes(atoms, "z"), espgrid::UsageError);
}

TEST(ViewPage, Base64AndGzip) {
  // RFC 4648's test vectors.
  EXPECT_EQ(espgrid::base64(""), "");
  EXPECT_EQ(espgrid::base64("f"), "Zg==");
  EXPECT_EQ(espgrid::base64("fo"), "Zm8=");
  EXPECT_EQ(espgrid::base64("foo"), "Zm9v");
  EXPECT_EQ(espgrid::base64("foob"), "Zm9vYg==");
  EXPECT_EQ(espgrid::base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(espgrid::base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(espgrid::base64(std::string("\xff\x00\x80", 3)), "/wCA");
#if ESPGRID_HAVE_ZLIB
  std::string text;
  for (int i = 0; i < 10000; ++i) text += std::to_string(i * 7919 % 1000) + " ";
  std::string packed;
  ASSERT_TRUE(espgrid::gzip_bytes(text, packed));
  ASSERT_GE(packed.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x1f);  // gzip's magic number
  EXPECT_EQ(static_cast<unsigned char>(packed[1]), 0x8b);
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string back(text.size() + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(packed.data());
  z.avail_in = static_cast<uInt>(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(back.data());
  z.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  back.resize(back.size() - z.avail_out);
  inflateEnd(&z);
  EXPECT_EQ(back, text);
#endif
}

TEST(DisplayStructure, LabelsOfThePqrLayouts) {
  const std::string dir = std::string(ESPGRID_SOURCE_DIR);
  const espgrid::Structure fas = espgrid::read_structure(dir + "/data/fasciculin2.pqr", espgrid::StructureFormat::Pqr);
  const auto labels = espgrid::read_pqr_labels(dir + "/data/fasciculin2.pqr", fas.atoms.size());
  ASSERT_TRUE(labels.has_value());
  // "ATOM   8280  N   NTE   544 ..." and "ATOM   8284  CA  THR   544 ...".
  EXPECT_EQ((*labels)[0].residue, "NTE");
  EXPECT_EQ((*labels)[0].residue_number, 544);
  EXPECT_EQ((*labels)[4].name, "CA");
  EXPECT_EQ((*labels)[4].residue, "THR");
  // Every layout the PQR reader accepts gives one label per atom.
  for (const char* name :
       {"pqr_whitespace.pqr", "pqr_fixed_column.pqr", "pqr_biopython.pqr", "pqr_mdanalysis.pqr", "pqr_crlf_tabs.pqr"}) {
    const std::string path = dir + "/tests/data/" + name;
    const espgrid::Structure s = espgrid::read_structure(path, espgrid::StructureFormat::Pqr);
    const auto l = espgrid::read_pqr_labels(path, s.atoms.size());
    EXPECT_TRUE(l.has_value()) << name;
  }
  // A count that does not match (another structure): no labels rather than wrong ones.
  EXPECT_FALSE(espgrid::read_pqr_labels(dir + "/data/fasciculin2.pqr", fas.atoms.size() - 1).has_value());
  // The PDB text: one fixed-column record per atom, then END; atom names in PDB's columns.
  const std::string pdb = espgrid::display_pdb(fas.atoms, &*labels);
  EXPECT_EQ(std::count(pdb.begin(), pdb.end(), '\n'), static_cast<long>(fas.atoms.size()) + 1);
  const std::string first = pdb.substr(0, pdb.find('\n'));
  EXPECT_EQ(first.substr(0, 6), "ATOM  ");
  EXPECT_EQ(first.substr(12, 4), " N  ");
  EXPECT_EQ(first.substr(17, 3), "NTE");
  EXPECT_EQ(first.substr(22, 4), " 544");
  EXPECT_EQ(std::stod(first.substr(30, 8)), std::round(fas.atoms.x[0] * 1000) / 1000);
  EXPECT_EQ(first.substr(76, 2), " N");
  // Without labels: HETATM records named by element; atoms beyond PDB's columns are left out.
  espgrid::Atoms atoms = fas.atoms;
  atoms.x[3] = 12345.0;
  std::size_t skipped = 0;
  const std::string bare = espgrid::display_pdb(atoms, nullptr, &skipped);
  EXPECT_EQ(skipped, 1u);
  EXPECT_EQ(bare.substr(0, 6), "HETATM");
}

}  // namespace
