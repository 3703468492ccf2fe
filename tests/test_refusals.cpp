// End to end through the espgrid binary: results espgrid refuses rather than mislabel, resources
// it checks before it uses them, and what a signal leaves (docs/reliability.md, "Issue #35").
// Each case failed on the code before its fix: ESPGRID_TEST_BINARY=/path/to/old/espgrid runs
// them against another binary (tests/child_process.h).
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "src/core/errors.h"
#include "src/maps/map_formats.h"
#include "src/view/view_page.h"
#include "tests/child_process.h"

namespace espgrid {
namespace {

/// Whether the build bundled the viewer library (npm at build time).
bool have_viewer_library() {
  try {
    espgrid::load_web_assets();
    return true;
  } catch (const espgrid::Error&) {
    return false;
  }
}

namespace fs = std::filesystem;
using testing::Child;
using testing::contains;
using testing::Outcome;

constexpr const char* kThreeAtoms =
    "ATOM      1  N   ALA A   1       0.000   0.000   0.000  0.5000 1.8000\n"
    "ATOM      2  C   ALA A   1       1.500   0.000   0.000 -0.2000 1.7000\n"
    "ATOM      3  O   ALA A   1       3.000   1.000   0.000 -0.3000 1.5000\n";

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

class Refusals : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    std::ofstream(path("s.pqr")) << kThreeAtoms;
  }
  /// A run under an address-space limit: the map, or a clean refusal naming the memory.
  static void check_memory_outcome(const Outcome& r, bool& solved, bool& refused);
  /// A PB map of s.pqr at 1 Å (the CPU's multigrid where there is no GPU).
  void make_pb_map(const std::string& name) {
    const Outcome r = run({"map", path("s.pqr"), "--model", "pb", "--spacing", "1", "-o", path(name)});
    if (r.code != 0 && contains(r.err, "has no solver here")) GTEST_SKIP() << "no PB solver in this build";
    ASSERT_EQ(r.code, 0) << r;
  }
};

// `surface --model pb` wrote the vacuum Coulomb sum at ε = 2 labelled "model pb: linearized PB";
// `--values sum` with a PB map did the same; `view` and `surface` of a PB map with its own
// structure warned "is the structure the map's?" (the vacuum sum differs from PB, of course).
TEST_F(Refusals, NoVacuumSumIsLabelledPoissonBoltzmann) {
  make_pb_map("pb.dx");
  if (HasFatalFailure() || IsSkipped()) return;
  Outcome r = run({"surface", path("s.pqr"), "--model", "pb", "-o", path("x.ply")});
  expect_clean_error(r, 2, "--model pb: a Poisson-Boltzmann potential is a field solve, not a sum over the atoms");
  EXPECT_TRUE(contains(r.err, "--model pb -o pb.dx, then espgrid surface")) << r;  // what to do instead
  const std::vector<std::vector<std::string>> sums = {
      {"surface", path("s.pqr"), "--map", path("pb.dx"), "--values", "sum", "-o", path("sum.ply")},
      {"view", path("s.pqr"), path("pb.dx"), "--values", "sum", "-o", path("sum.html")}};
  for (const std::vector<std::string>& args : sums) {
    SCOPED_TRACE(args.front());
    if (args.front() == "view" && !have_viewer_library()) continue;  // `view` stops at the missing library first
    r = run(args);
    expect_clean_error(r, 2,
                       "--values sum: the map is a Poisson-Boltzmann solution, which no sum over the atoms gives");
    EXPECT_FALSE(fs::exists(args.back()));
  }
  // Auto interpolates a PB map, says why, and raises no doubt about the structure.
  r = run({"surface", path("s.pqr"), "--map", path("pb.dx"), "-o", path("auto.ply")});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "trilinear interpolation of the map (a Poisson-Boltzmann map")) << r;
  EXPECT_FALSE(contains(r.err, "is the structure the map's")) << r;
  if (!have_viewer_library()) return;
  r = run({"view", path("s.pqr"), path("pb.dx"), "-o", path("auto.html")});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_FALSE(contains(r.err, "is the structure the map's")) << r;
  EXPECT_FALSE(contains(r.out, "is the structure the map's")) << r;
}

// `espgrid surface --map far.dx` with no atom in the map's box coloured the surface with a sum
// (exit 0, no note) where `espgrid view` refused the same pair.
TEST_F(Refusals, SurfaceRefusesAMapThatHoldsNoAtomOfTheStructure) {
  ASSERT_EQ(
      run({"map", path("s.pqr"), "--origin", "500,500,500", "--dims", "6,6,6", "--spacing", "1", "-o", path("far.dx")})
          .code,
      0);
  const Outcome r = run({"surface", path("s.pqr"), "--map", path("far.dx"), "-o", path("far.ply")});
  expect_clean_error(r, 2, "no atom of the structure lies inside the map's box");
  EXPECT_FALSE(fs::exists(path("far.ply")));
}

// `espgrid verify --model pb` checked the Coulomb kernels and said "pass".
TEST_F(Refusals, VerifyRefusesPoissonBoltzmann) {
  const Outcome r = run({"verify", path("s.pqr"), "--model", "pb", "--spacing", "2"});
  expect_clean_error(r, 2, "--model pb is a field solve that no kernel computes");
  EXPECT_FALSE(contains(r.out, "pass")) << r;
}

// An atom of radius 50 Å with the default padding: the Debye-Hückel boundary values were taken
// inside the atom (φ 4,742 kT/e 2 Å from it against ~67 analytically), exit 0.
TEST_F(Refusals, PbWithAnAtomReachingTheGridFacesIsRefused) {
  std::ofstream(path("big.pqr")) << "ATOM      1  X   ION A   1       0.000   0.000   0.000  1.0000 50.0000\n";
  const Outcome r = run({"map", path("big.pqr"), "--model", "pb", "-o", path("big.dx")});
  if (contains(r.err, "has no solver here")) GTEST_SKIP() << "no PB solver in this build";
  expect_clean_error(r, 2, "atom 1 (radius 50 Å) at (0.000, 0.000, 0.000) reaches the grid's x face");
  EXPECT_TRUE(contains(r.err, "use a --padding of at least 50.0 Å")) << r;
  EXPECT_FALSE(fs::exists(path("big.dx")));
}

// `--temperature 0.001` failed inside hypre: "[Generic error]", "User probably placed
// non-numerics"; the message now names the temperature. --kernel and --accuracy were ignored
// silently with the direct formulation although the summary said they chose a kernel.
TEST_F(Refusals, PbOptionsThatCannotApplyAreNamed) {
  Outcome r = run({"map", path("s.pqr"), "--model", "pb", "--temperature", "0.001", "-o", path("t.dx")});
  if (contains(r.err, "has no solver here")) GTEST_SKIP() << "no PB solver in this build";
  expect_clean_error(r, 2, "--model pb at --temperature 0.001 K");
  EXPECT_FALSE(contains(r.err, "hypre")) << r;
  for (const char* option : {"--kernel=cpu-reference", "--accuracy=1e-3"}) {
    r = run({"map", path("s.pqr"), "--model", "pb", option, "-o", path("k.dx")});
    expect_clean_error(r, 2, "with --model pb chooses the kernel of the Coulomb part that --pb-formulation split sums");
  }
}

// --surface-sampling 16 on a PB grid built a fine grid of grid × 16³ points (~5e9 for a
// 1.28 M-point map) checked against neither ESPGRID_MAX_GRID_POINTS nor memory.
TEST_F(Refusals, TheSampledSurfacesFineGridHonoursTheGridLimit) {
  Child::Options limited;
  limited.env["ESPGRID_MAX_GRID_POINTS"] = "1000000";
  const Outcome r =
      run({"map", path("s.pqr"), "--model", "pb", "--spacing", "1", "--surface-sampling", "16", "-o", path("fine.dx")},
          limited);
  if (contains(r.err, "has no solver here")) GTEST_SKIP() << "no PB solver in this build";
  expect_clean_error(r, 2, "the sampled surface's fine grid (--surface-sampling 16 on 24 x 22 x 21 = 11,088 points)");
  EXPECT_TRUE(contains(r.err, "is over the limit of 1,000,000 points set by ESPGRID_MAX_GRID_POINTS")) << r;
}

// A PB grid too big for the memory left: hypre's allocation failed and it called MPI_Abort
// (exit 255, no espgrid message). Under address-space limits from far too small to ample, every
// run ends with the map or a clean espgrid error, never MPI_Abort, a signal or a library's abort.
// Both CPU solvers: espgrid's multigrid (the default, ~210 B a point and no MPI) and hypre, on
// 2 threads whatever the host (each thread's stack and malloc arena take address space). On a GPU
// host a CPU run once started CUDA's driver anyway (select_kernel asked it), whose ~13 GB of
// address space made libgomp's thread start abort the run under these limits.
TEST_F(Refusals, PbShortOfMemoryIsAnErrorNeverAnAbort) {
  if (kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer's shadow memory needs more address space than any limit";
  struct Sweep {
    const char* solver;
    std::vector<rlim_t> mib;
  };
  for (const Sweep& sweep : {Sweep{"multigrid", {100, 200, 300, 800}}, Sweep{"hypre", {200, 400, 1200}}}) {
    bool solved = false, refused = false, no_hypre = false;
    for (const rlim_t mib : sweep.mib) {
      SCOPED_TRACE(std::string(sweep.solver) + ", " + std::to_string(mib) + " MiB of address space");
      Child::Options options;
      options.address_space_limit = mib * 1024 * 1024;
      // Some of the solve's parallel regions (the buffers' first touches) take OpenMP's team, not
      // --threads: on a 16-core host 16 threads, each with its stack and malloc arena.
      options.env["OMP_NUM_THREADS"] = "2";
      const Outcome r = run({"map", "data/fasciculin2.pqr", "--model", "pb", "--spacing", "0.6", "--backend", "cpu",
                             "--pb-solver", sweep.solver, "--threads", "2", "-o", path("m.dx")},
                            options);
      // A build without hypre (the GPU host's): the smaller limits are refused by the memory check
      // before the solver is looked for, the larger ones name the missing hypre; the multigrid ran.
      no_hypre = no_hypre || contains(r.err, "without hypre");
      if (no_hypre) break;
      check_memory_outcome(r, solved, refused);
    }
    if (no_hypre) continue;
    EXPECT_TRUE(solved) << sweep.solver << ": no limit was ample: the sweep checks nothing of the solve";
    EXPECT_TRUE(refused) << sweep.solver << ": no limit was too small: the sweep checks nothing of the refusal";
  }
}

void Refusals::check_memory_outcome(const Outcome& r, bool& solved, bool& refused) {
  EXPECT_FALSE(r.signaled) << r;
  EXPECT_FALSE(contains(r.err, "MPI_ABORT") || contains(r.err, "MPI_Init") || contains(r.err, "libgomp")) << r;
  if (r.code == 0) {
    solved = true;
    return;
  }
  refused = true;
  EXPECT_TRUE(r.code == 1 || r.code == 2) << r;
  EXPECT_TRUE(contains(r.err, "espgrid: error: --model pb")) << r;
  EXPECT_TRUE(contains(r.err, "of memory") || contains(r.err, "of host memory") || contains(r.err, "does not give it"))
      << r;
}

// SIGTERM, SIGINT or SIGHUP during a PB solve left Open MPI's session folder
// ($TMPDIR/ompi.HOST.UID/...) behind; now its files live in a private folder the handler removes.
TEST_F(Refusals, ASignalDuringAPbSolveLeavesNothingInTmpdir) {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    const fs::path tmp = dir_ / ("tmp" + std::to_string(sig));
    fs::create_directories(tmp);
    Child::Options options;
    options.env["TMPDIR"] = tmp.string();
    // hypre's solve: Open MPI's folder is what the handler must remove.
    Child child({"map", "data/fasciculin2.pqr", "--model", "pb", "--pb-solver", "hypre", "--spacing", "0.6", "-o",
                 path("sig.mrc")},
                capture_, options);
    // Signalled once Open MPI has made its session folder (hypre has started).
    const auto start = std::chrono::steady_clock::now();
    bool started = false;
    while (!started && child.running() && std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
      std::error_code ec;
      for (fs::recursive_directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec))
        started = started || it->path().filename().string().rfind("ompi.", 0) == 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!started) {
      const Outcome r = child.wait();
      if (contains(r.err, "has no solver here") || contains(r.err, "without hypre"))
        GTEST_SKIP() << "no CPU PB solver (hypre) in this build";
      FAIL() << "Open MPI never made its folder under TMPDIR\n" << r;
    }
    child.signal(sig);
    const Outcome r = child.wait();
    EXPECT_EQ(r.code, 128 + sig) << r;
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(tmp)) left.push_back(e.path().string());
    EXPECT_TRUE(left.empty()) << left.size() << " left, the first " << left.front();
    for (const std::string& name : entries()) EXPECT_EQ(name.find("sig.mrc"), std::string::npos) << name;
  }
}

// `sample` refused "0 0 10  # site A" although its help says '#' starts a comment, and
// `--points /tmp` said "is a directory, not a structure file".
TEST_F(Refusals, PointsTakeCommentsAfterAPointAndADirectoryIsNamed) {
  std::ofstream(path("p.txt")) << "# two sites\n0 0 10  # site A\n1,1,1 # site B\n";
  Outcome r = run({"sample", path("s.pqr"), "--points", path("p.txt"), "-o", path("v.csv")});
  ASSERT_EQ(r.code, 0) << r;
  std::ifstream table(path("v.csv"));
  std::string header, a, b, extra;
  std::getline(table, header);
  std::getline(table, a);
  std::getline(table, b);
  EXPECT_EQ(a.rfind("0,0,10,", 0), 0u) << a;
  EXPECT_EQ(b.rfind("1,1,1,", 0), 0u) << b;
  EXPECT_FALSE(std::getline(table, extra)) << extra;
  r = run({"sample", path("s.pqr"), "--points", dir_.string(), "-o", path("w.csv")});
  expect_clean_error(r, 1, dir_.string() + " is a directory, not a points file");
}

// `sample --points -` held all of standard input in memory (547 MiB RSS for 150 MB); a file
// was streamed. 40 MB of comments with three points: standard input now costs what a file does.
TEST_F(Refusals, PointsFromStandardInputAreStreamed) {
  {
    std::ofstream big(path("big.txt"));
    const std::string comment = "# " + std::string(198, 'c') + "\n";
    for (int i = 0; i < 200000; ++i) big << comment;
    big << "0 0 10\n1 1 1\n2 2 2\n";
  }
  const Outcome file = run({"sample", path("s.pqr"), "--points", path("big.txt"), "-o", path("f.txt")});
  ASSERT_EQ(file.code, 0) << file;
  Child::Options piped;
  piped.stdin_from = path("big.txt");
  const Outcome standard_input = run({"sample", path("s.pqr"), "--points", "-", "-o", path("s.txt")}, piped);
  ASSERT_EQ(standard_input.code, 0) << standard_input;
  // 16 MiB: the two runs differ by the line source's buffers at most; the 40 MB text held whole
  // (its string grew to 64 MiB) is far beyond it.
  EXPECT_LT(standard_input.max_rss_kib, file.max_rss_kib + 16 * 1024)
      << "standard input " << standard_input.max_rss_kib << " KiB, the file " << file.max_rss_kib << " KiB";
}

// A .pdb.gz that expands to 1 GiB was copied for pdb2pqr whole in memory (2.4 GB RSS). 200 MB
// of REMARK lines around one atom, with a stand-in pdb2pqr: the copy is streamed.
TEST_F(Refusals, ACompressedPdbIsStreamedToPdb2pqr) {
  {
    gzFile gz = gzopen(path("big.pdb.gz").c_str(), "wb1");
    ASSERT_NE(gz, nullptr);
    const std::string remark = "REMARK  99 " + std::string(68, 'r') + "\n";
    std::string block;
    for (int i = 0; i < 12500; ++i) block += remark;  // 1 MB
    for (int i = 0; i < 200; ++i) ASSERT_EQ(gzwrite(gz, block.data(), unsigned(block.size())), int(block.size()));
    const std::string atom = "ATOM      1  N   ALA A   1       0.000   0.000   0.000  1.00  0.00           N\nEND\n";
    gzwrite(gz, atom.data(), unsigned(atom.size()));
    gzclose(gz);
  }
  std::ofstream(path("fake-pdb2pqr")) << "#!/bin/sh\necho 'INFO:PDB2PQR v0.0-test: stand-in'\n"
                                         "for last; do :; done\necho 'ATOM      1  N   ALA     1       0.000   0.000   "
                                         "0.000  0.5000 1.5000' > \"$last\"\n";
  fs::permissions(path("fake-pdb2pqr"), fs::perms::owner_all);
  Child::Options options;
  options.env["ESPGRID_PDB2PQR"] = path("fake-pdb2pqr");
  options.env["TMPDIR"] = dir_.string();
  const Outcome r = run({"map", path("big.pdb.gz"), "--spacing", "2", "-o", path("out.dx")}, options);
  ASSERT_EQ(r.code, 0) << r;
  // 120 MiB: the run's own needs are a few tens of MiB; the 200 MB text held whole is far above.
  EXPECT_LT(r.max_rss_kib, 120 * 1024) << r;
}

}  // namespace
}  // namespace espgrid
