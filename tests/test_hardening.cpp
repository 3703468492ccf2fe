// Hardening tests: regressions for the defects fuzzing and fault probing found,
// limits (millions of atoms, absurd grids, extreme physics values), unwritable outputs and
// file-size limits, interrupted runs (SIGINT/SIGTERM/SIGHUP, during the computation and
// during the write of a large map), and GPU faults (skipped without a usable GPU, like
// tests/test_gpu_kernels.cpp). docs/reliability.md summarizes what each test shows.
//
// The end-to-end tests start the real binary (ESPGRID_BINARY) with fork/exec, so that they
// can send it signals, set resource limits and change its environment.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <linux/magic.h>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "src/compute/cuda_driver.h"
#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/stopwatch.h"
#include "src/core/text_parsing.h"
#include "src/core/units.h"
#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"
#include "src/os/file_output.h"
#include "src/pb/pb_solve.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/structure_reader.h"
#include "tests/child_process.h"
#include "tests/file_helpers.h"
#include "tests/pb_test_support.h"
#include "tests/test_support.h"

#if ESPGRID_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace espgrid {
namespace {

namespace fs = std::filesystem;
// ---- helpers ----------------------------------------------------------------------------------

using espgrid::testing::Child;
using espgrid::testing::contains;
using espgrid::testing::Outcome;
using espgrid::testing::slurp;
using espgrid::testing::wait_for_partial;

class Hardening : public testing::ScratchDirTest {
 protected:
  /// A PQR of one atom at the origin: computing is instant, so a large grid's time goes into
  /// writing the map.
  std::string one_atom() const {
    const std::string p = path("one.pqr");
    std::ofstream(p) << "ATOM      1  N   ALA A   1       0.000   0.000   0.000  1.0000 1.5000\n";
    return p;
  }
};

constexpr const char* kSmall = "tests/data/pqr_whitespace.pqr";  // 38 atoms

// ---- regressions: defects found by fuzzing and fault probing (docs/reliability.md) -------------

// --temperature / --dielectric 1e-300 made k/ε ~1e301: charges overflowed float32 (UB, an
// inf), the map became NaN and the run ended in "internal error: ... not finite".
TEST_F(Hardening, RegressionTinyTemperatureOrDielectricIsAUsageError) {
  for (const char* option : {"--temperature", "--dielectric"}) {
    for (const char* value : {"1e-300", "1e-4", "0", "-2"}) {
      SCOPED_TRACE(std::string(option) + " " + value);
      const Outcome r = run({"map", kSmall, "-o", path("x.dx"), "--spacing", "1", "--padding", "3", option, value});
      expect_clean_error(r, 2, std::string(option).substr(2) + " must be a positive number");
      EXPECT_TRUE(contains(r.err, "at least 0.001")) << r;
      expect_only({});
    }
  }
  PhysicsOptions physics;
  physics.temperature = 1e-300;
  EXPECT_THROW(validate(physics), UsageError);
  physics.temperature = kMinTemperature;
  physics.dielectric = kMinDielectric;
  EXPECT_NO_THROW(validate(physics));
  // At the limits, the largest charge's q·k/ε and a sum of a million of them at the softening
  // length stay finite in float32.
  EXPECT_LT(kMaxCharge * coulomb_factor(physics) / kSofteningLength * 1e6,
            static_cast<double>(std::numeric_limits<float>::max()));
}

// --spacing 1e300 became an infinite float spacing: 0 × inf = NaN at every point, and the run
// ended in "internal error: ... not finite".
TEST_F(Hardening, RegressionHugeSpacingIsAUsageError) {
  for (const char* value : {"1e300", "1e39", "10001", "1,1,1e5"}) {
    SCOPED_TRACE(value);
    const Outcome r = run({"map", kSmall, "-o", path("x.dx"), "--spacing", value, "--padding", "3"});
    expect_clean_error(r, 2, "must be a positive number of Å (at most 10000)");
    expect_only({});
  }
  const Outcome r =
      run({"map", kSmall, "-o", path("x.dx"), "--spacing", "1e300", "--origin", "0,0,0", "--dims", "2,2,2"});
  expect_clean_error(r, 2, "at most 10000");
  GridRequest request;
  request.spacing = {kMaxSpacing, kMaxSpacing, kMaxSpacing};
  Atoms atoms;
  atoms.push_back(0, 0, 0, 1, 1);
  EXPECT_NO_THROW(make_grid(request, atoms));
}

// --threads 65536 crashed inside libgomp (SIGSEGV) before any message.
TEST_F(Hardening, RegressionHugeThreadCountIsAUsageErrorNotACrash) {
  for (const char* kernel : {"cpu-parallel", "cpu-reference"}) {
    SCOPED_TRACE(kernel);
    const Outcome r = run({"map", kSmall, "-o", path("x.dx"), "--spacing", "1", "--padding", "3", "--kernel", kernel,
                           "--threads", "65536"});
    expect_clean_error(r, 2, "--threads takes 0 (all cores) to 1024");
    expect_only({});
  }
  const Outcome v = run({"verify", kSmall, "--spacing", "2", "--threads", "2000000"});
  expect_clean_error(v, 2, "--threads takes 0");
  const Outcome b = run({"bench", "--dims", "4,4,4", "--atoms", "10", "--threads", "65536"});
  expect_clean_error(b, 2, "--threads takes 0 (all cores) to 1024");
  // The registry refuses it too, for any caller.
  const GridSpec grid = testing::make_test_grid(3, 3, 3);
  std::mt19937 rng(1);
  const PreparedProblem problem(testing::random_atoms(rng, 4, grid), grid, 1.0);
  RunOptions options;
  options.threads = kMaxCpuThreads + 1;
  EXPECT_THROW(testing::run_poisoned(fast_reference_kernel(), problem, options), UsageError);
  options.threads = kMaxCpuThreads;  // the limit itself runs
  const auto out = testing::run_poisoned(fast_reference_kernel(), problem, options);
  testing::expect_matches_oracle(problem, out);
}

// A name over NAME_MAX (255 bytes) made std::filesystem throw its own filesystem_error, which
// surfaced as "espgrid: error: filesystem error: status: File name too long [...]".
TEST_F(Hardening, RegressionOverlongNamesAreEspgridErrors) {
  const std::string long_name(300, 'x');
  Outcome r = run({"map", kSmall, "-o", path(long_name + ".dx"), "--spacing", "1", "--padding", "3"});
  expect_clean_error(r, 1, "File name too long");
  EXPECT_TRUE(contains(r.err, "cannot write ")) << r;
  r = run({"map", path(long_name + ".pqr"), "-o", path("x.dx"), "--spacing", "1", "--padding", "3"});
  expect_clean_error(r, 1, "File name too long");
  EXPECT_TRUE(contains(r.err, "cannot open ")) << r;
  expect_only({});
  EXPECT_THROW(check_output_path(path(long_name + ".dx")), Error);
  EXPECT_THROW(read_structure(path(long_name + ".pqr"), StructureFormat::Pqr), Error);
}

// Over the file-size limit (ulimit -f), SIGXFSZ killed espgrid mid-write (exit 153) and left
// ".NAME.partial.PID" behind. Now the write fails with EFBIG, reported, and nothing is left.
TEST_F(Hardening, RegressionFileSizeLimitIsAnErrorAndLeavesNoPartialFile) {
  Child::Options limited;
  limited.file_size_limit = 64 * 1024;
  // .dx, .mrc and uncompressed .vti are espgrid's own writers (the last two streamed while the
  // map is computed); compressed .vti is VTK's.
  for (const std::string name : {"x.dx", "x.mrc", "x.vti", "z.vti"}) {
    SCOPED_TRACE(name);
    const bool vtk_writer = name == "z.vti";
    if (vtk_writer && !vti_supported()) continue;
    std::vector<std::string> args = {"map", kSmall, "-o", path(name), "--spacing", "0.1", "--padding", "3"};
    if (vtk_writer) args.insert(args.end(), {"--compression", "zlib"});
    const Outcome r = run(args, limited);
    expect_clean_error(r, 1, "cannot write " + path(name));
    EXPECT_TRUE(contains(r.err, vtk_writer ? "VTK's XML writer failed" : "File too large")) << r;
    EXPECT_TRUE(contains(r.err, "nothing written to " + path(name))) << r;
    expect_only({});
  }
}

/// Pages of `path` in the page cache, and the file's page count (mincore over a mapping that is
/// never touched, so no page is mapped into this process).
std::pair<std::size_t, std::size_t> cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {0, 0};
  struct stat st {};
  ::fstat(fd, &st);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t pages = (static_cast<std::size_t>(st.st_size) + page - 1) / page;
  void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return {0, pages};
  std::vector<unsigned char> resident(pages);
  std::size_t count = 0;
  if (::mincore(map, static_cast<std::size_t>(st.st_size), resident.data()) == 0)
    for (const unsigned char r : resident) count += r & 1;
  ::munmap(map, static_cast<std::size_t>(st.st_size));
  return {count, pages};
}

// Replacing an 828 MB .dx freed its cached pages inside the rename, on the run's critical path
// (PDB2PQR's template on an H200 host, run again in the same folder). The run now drops them
// beforehand on a thread of its own (release_replaced_file_cache): the file's contents stay, a
// small file and a missing one are left alone.
TEST_F(Hardening, TheFileAnOutputWillReplaceLeavesThePageCacheAndKeepsItsContents) {
  struct statfs fs {};
  ASSERT_EQ(::statfs(path(".").c_str(), &fs), 0);
  if (fs.f_type == TMPFS_MAGIC) GTEST_SKIP() << "the scratch folder is on tmpfs, whose pages are the file itself";
  const auto write_file = [&](const std::string& name, std::size_t bytes) {
    std::string text(bytes, '\0');
    for (std::size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>('a' + i % 23);
    const int fd = ::open(path(name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_EQ(::write(fd, text.data(), bytes), static_cast<ssize_t>(bytes));
    ::fsync(fd);  // clean pages: the ones that can be dropped
    ::close(fd);
    return text;
  };
  const std::string big = write_file("old.dx", std::size_t{32} << 20), small = write_file("small.dx", 1 << 20);
  const auto [big_before, big_pages] = cached_pages(path("old.dx"));
  const auto [small_before, small_pages] = cached_pages(path("small.dx"));
  if (big_before < big_pages / 2 || small_before < small_pages / 2)
    GTEST_SKIP() << "the files just written are not in the page cache (" << big_before << " of " << big_pages
                 << " pages): this host's memory is under pressure, nothing to measure";
  release_replaced_file_cache(path("old.dx"));
  release_replaced_file_cache(path("small.dx"));
  release_replaced_file_cache(path("missing.dx"));
  EXPECT_LE(cached_pages(path("old.dx")).first, big_pages / 20) << "of " << big_pages << " pages";
  EXPECT_GE(cached_pages(path("small.dx")).first, small_before * 9 / 10) << "a file under 16 MiB was dropped too";
  EXPECT_EQ(slurp(path("old.dx")), big);
  EXPECT_EQ(slurp(path("small.dx")), small);
  expect_only({"old.dx", "small.dx"});
}

// OutputFile::write_at, directly to the disk (a write of 64 MiB or more, O_DIRECT) and through the
// page cache (ESPGRID_DIRECT_WRITE=0): the data at an offset that is not a block's (an MRC's data
// follow its 1 KiB header) and the header after them make the same file both ways; a file-size
// limit met on the way is close()'s error ("File too large"), not a short file with exit 0.
TEST_F(Hardening, AWriteAtAnOffsetHoldsItsBytesAndAFileSizeLimitIsAnError) {
  std::mt19937_64 rng(espgrid::testing::test_seed());
  std::string data((std::size_t{80} << 20) + 123, '\0');
  for (std::size_t i = 0; i + 8 <= data.size(); i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(data.data() + i, &word, 8);
  }
  const std::string header(1024, 'h');
  const auto write = [&](const std::string& name, bool direct) {
    ::setenv("ESPGRID_DIRECT_WRITE", direct ? "1" : "0", 1);
    espgrid::OutputFile file(path(name));
    file.write_at(header.size(), data.data(), data.size());
    file.write_at(0, header.data(), header.size());
    ::unsetenv("ESPGRID_DIRECT_WRITE");
    file.close();
  };
  write("direct.mrc", true);
  write("cached.mrc", false);
  EXPECT_TRUE(slurp(path("direct.mrc")) == header + data) << "seed " << espgrid::testing::test_seed();
  EXPECT_TRUE(slurp(path("cached.mrc")) == header + data) << "seed " << espgrid::testing::test_seed();
  // A limit on the file's size (RLIMIT_FSIZE; its signal ignored so that the call fails instead).
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit limit = before;
  limit.rlim_cur = std::size_t{32} << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  for (const bool direct : {true, false}) {
    try {
      write(direct ? "limited-direct.mrc" : "limited-cached.mrc", direct);
      ADD_FAILURE() << "a write beyond the file-size limit was not an error (direct: " << direct << ")";
    } catch (const espgrid::Error& e) {
      EXPECT_NE(std::string(e.what()).find("File too large"), std::string::npos) << e.what();
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &before);
  ::signal(SIGXFSZ, old_handler);
}

// An output whose parent is a file was reported as a missing directory.
TEST_F(Hardening, RegressionOutputUnderAFileSaysNotADirectory) {
  std::ofstream(path("plain")) << "x";
  const Outcome r = run({"map", kSmall, "-o", path("plain/x.dx"), "--spacing", "1", "--padding", "3"});
  expect_clean_error(r, 1, path("plain") + " is not a directory");
  expect_only({"plain"});
}

// A directory given as the input is named as such (exit 1), not read.
TEST_F(Hardening, InputThatIsADirectoryIsRefused) {
  fs::create_directory(path("folder.pqr"));
  const Outcome r = run({"map", path("folder.pqr"), "-o", path("x.dx"), "--spacing", "1", "--padding", "3"});
  expect_clean_error(r, 1, path("folder.pqr") + " is a directory, not a structure file");
  expect_only({"folder.pqr"});
}

// ---- limits -------------------------------------------------------------------------------------

/// Writes a PQR of `count` atoms in PDB2PQR's column layout, random coordinates in ±100 Å.
void write_big_pqr(const std::string& file, std::size_t count) {
  std::FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> coord(-100, 100), charge(-1, 1);
  for (std::size_t i = 0; i < count; ++i)
    std::fprintf(f, "ATOM  %5zu  CA  ALA A%4zu    %8.3f%8.3f%8.3f %7.4f %6.4f\n", i % 100000, i % 10000, coord(rng),
                 coord(rng), coord(rng), charge(rng), 1.5);
  ASSERT_EQ(std::fclose(f), 0);
}

long max_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Two million atoms (140 MB of PQR) read in-process in under 10 s, with a peak resident size
// under 1 GiB; then mapped end to end by the binary. Under the sanitizers (7x slower reading)
// the same checks run on 500,000 atoms with looser time limits and no memory limit.
TEST_F(Hardening, TwoMillionAtomPqrReadsFastWithSaneMemory) {
  const std::size_t count = ESPGRID_UNDER_SANITIZER ? 500'000 : 2'000'000;
  const std::string file = path("big.pqr");
  write_big_pqr(file, count);
  const auto start = Clock::now();
  const Structure s = read_structure(file, StructureFormat::Pqr);
  const double read_s = seconds_since(start);
  ASSERT_EQ(s.atoms.size(), count);
  const long rss_mib = max_rss_kib() / 1024;
  std::printf("[ info     ] read %s atoms in %.2f s; peak RSS of the test process %ld MiB\n",
              with_commas(count).c_str(), read_s, rss_mib);
  EXPECT_LT(read_s, ESPGRID_UNDER_SANITIZER ? 60.0 : 10.0);
  if (!ESPGRID_UNDER_SANITIZER) EXPECT_LT(rss_mib, 1024);
  for (std::size_t i = 0; i < s.atoms.size(); i += 99'991) {
    EXPECT_LE(std::fabs(s.atoms.x[i]), 100.0);
    EXPECT_LE(std::fabs(s.atoms.charge[i]), 1.0);
  }

  const auto map_start = Clock::now();
  const Outcome r = run({"map", file, "-o", path("big.dx"), "--origin", "-10,-10,-10", "--dims", "3,3,3", "--spacing",
                         "10", "--kernel", "cpu-parallel"});
  const double map_s = seconds_since(map_start);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, with_commas(count) + " atoms")) << r;
  std::printf("[ info     ] espgrid map of the %s-atom file: %.2f s\n", with_commas(count).c_str(), map_s);
  EXPECT_LT(map_s, ESPGRID_UNDER_SANITIZER ? 120.0 : 20.0);
  const PotentialMap map = read_dx(path("big.dx"));
  for (float v : map.values) EXPECT_TRUE(std::isfinite(v));
}

// An XYZ whose count line claims 10^18 atoms fails at once (no allocation of the claim).
TEST_F(Hardening, AbsurdXyzCountFailsFast) {
  const auto start = Clock::now();
  try {
    LineSource lines("claim.xyz", "1000000000000000000\ncomment\nH 0 0 0 0.1\n");
    read_xyz(lines);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 1u);
    EXPECT_TRUE(contains(e.what(), "file ends after 1 atoms")) << e.what();
  }
  EXPECT_LT(seconds_since(start), 1.0);
}

struct BadGrid {
  std::vector<std::string> args;  // after "map INPUT -o OUT"
  const char* message;
};

// Grid options the existing CLI tests do not cover: absurd dims, memory, non-finite values.
TEST_F(Hardening, AbsurdGridsAreClearErrors) {
  const std::vector<BadGrid> cases = {
      {{"--origin", "0,0,0", "--dims", "1048577,1,1"}, "grid dims along x must be 1..1048576"},
      {{"--origin", "0,0,0", "--dims", "1,-5,1"}, "grid dims along y must be 1..1048576"},
      {{"--origin", "0,0,0", "--dims", "99999999999999999999,1,1"}, "--dims expects whole numbers"},
      {{"--origin", "0,0,0", "--dims", "1048576,1048576,1048576"}, "absurdly large"},
      // 9e11 points, 3.3 TiB: no machine this runs on has that much memory available
      {{"--origin", "0,0,0", "--dims", "10000,10000,9000"}, "of memory is available"},
      {{"--origin", "0,0,1e7", "--dims", "2,2,2"}, "grid origin along z must be a finite number"},
      {{"--origin", "0,nan,0", "--dims", "2,2,2"}, "--origin expects a number, got 'nan'"},
      {{"--spacing", "inf"}, "--spacing expects a number, got 'inf'"},
      {{"--spacing", "1e-300"}, "points (limit 1048576); use a larger --spacing"},
      {{"--padding", "nan"}, "--padding expects a number, got 'nan'"},
      {{"--padding", "inf"}, "--padding expects a number, got 'inf'"},
      {{"--padding", "1e300"}, "use a larger --spacing or smaller --padding"},
      {{"--dims", "2,2"}, "--dims expects NX,NY,NZ"},
  };
  for (const BadGrid& c : cases) {
    std::vector<std::string> args = {"map", kSmall, "-o", path("x.dx")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    SCOPED_TRACE(shown);
    const auto start = Clock::now();
    const Outcome r = run(args);
    expect_clean_error(r, 2, c.message);
    EXPECT_LT(seconds_since(start), 10.0) << "an impossible grid should fail before any work";
    expect_only({});
  }
}

// ESPGRID_MAX_GRID_POINTS caps the grid for the whole run (map, verify, bench).
TEST_F(Hardening, MaxGridPointsEnvironmentVariable) {
  Child::Options capped;
  capped.env["ESPGRID_MAX_GRID_POINTS"] = "1000";
  Outcome r = run({"map", kSmall, "-o", path("x.dx"), "--spacing", "1", "--padding", "3"}, capped);
  // 16 x 16 x 21 on the lattice of the 1 Å spacing (15 x 15 x 21 = 4,725 when grids were centred).
  expect_clean_error(r, 2, "5,376 points is over the limit of 1,000 points set by ESPGRID_MAX_GRID_POINTS");
  r = run({"verify", kSmall, "--spacing", "1", "--padding", "3"}, capped);
  expect_clean_error(r, 2, "ESPGRID_MAX_GRID_POINTS");
  r = run({"bench", "--dims", "11,10,10", "--atoms", "5"}, capped);
  expect_clean_error(r, 2, "ESPGRID_MAX_GRID_POINTS");
  capped.env["ESPGRID_MAX_GRID_POINTS"] = "5376";
  r = run({"map", kSmall, "-o", path("x.dx"), "--spacing", "1", "--padding", "3"}, capped);
  EXPECT_EQ(r.code, 0) << r;
  capped.env["ESPGRID_MAX_GRID_POINTS"] = "lots";
  r = run({"map", kSmall, "-o", path("y.dx"), "--spacing", "1", "--padding", "3"}, capped);
  expect_clean_error(r, 2, "ESPGRID_MAX_GRID_POINTS must be a positive whole number, got 'lots'");
  expect_only({"x.dx"});

  GridSpec g;
  g.dims = {10, 10, 10};
  ::setenv("ESPGRID_MAX_GRID_POINTS", "999", 1);
  EXPECT_THROW(check_grid_fits(g, std::size_t{1} << 30), UsageError);
  ::setenv("ESPGRID_MAX_GRID_POINTS", "1000", 1);
  EXPECT_NO_THROW(check_grid_fits(g, std::size_t{1} << 30));
  ::unsetenv("ESPGRID_MAX_GRID_POINTS");
  EXPECT_EQ(max_grid_points_from_environment(), 0u);
}

// ---- outputs that cannot be written -------------------------------------------------------------

TEST_F(Hardening, UnwritableOutputsAreClearErrors) {
  if (::geteuid() != 0) {
    fs::create_directory(path("ro"));
    fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    const Outcome r = run({"map", kSmall, "-o", path("ro/x.dx"), "--spacing", "1", "--padding", "3"});
    expect_clean_error(r, 1, "is not writable");
    EXPECT_FALSE(contains(r.out, "kernel ")) << "computed before refusing\n" << r;
    fs::permissions(path("ro"), fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(path("ro")));
  }
  // As root every directory passes access(W_OK); /proc still refuses new files, so this path
  // is refused when the temporary file is created, after computing (the map is small).
  const Outcome r = run({"map", kSmall, "-o", "/proc/espgrid-test.dx", "--spacing", "1", "--padding", "3"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "espgrid: error: cannot write /proc/espgrid-test.dx")) << r;
  EXPECT_FALSE(fs::exists("/proc/espgrid-test.dx"));
}

// No usable device (CUDA_VISIBLE_DEVICES empty hides every GPU): auto falls back to the CPU and
// says why; --backend cuda, a CUDA kernel and bench --require-cuda fail with the reason.
TEST_F(Hardening, NoVisibleDeviceFallsBackOrFailsClearly) {
  Child::Options hidden;
  hidden.env["CUDA_VISIBLE_DEVICES"] = "";
  Outcome r = run({"map", kSmall, "-o", path("x.dx"), "--spacing", "1", "--padding", "3"}, hidden);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, std::string(default_kernel(Backend::Cpu).name) + " on CPU")) << r;
  EXPECT_TRUE(contains(r.out, "backend auto: no GPU (")) << r;
  r = run({"map", kSmall, "-o", path("y.dx"), "--spacing", "1", "--padding", "3", "--backend", "cuda"}, hidden);
  expect_clean_error(r, 1, "--backend cuda: ");
  r = run({"map", kSmall, "-o", path("y.dx"), "--spacing", "1", "--padding", "3", "--kernel", "cuda-gather"}, hidden);
  expect_clean_error(r, 1, "kernel cuda-gather needs a CUDA device: ");
  r = run({"bench", "--dims", "4,4,4", "--atoms", "10", "--require-cuda"}, hidden);
  expect_clean_error(r, 1, "--require-cuda: ");
  expect_only({"x.dx"});
}

// ---- interrupted runs ---------------------------------------------------------------------------

struct SignalCase {
  int signal;
  int code;
};
const SignalCase kSignals[] = {{SIGINT, 130}, {SIGTERM, 143}, {SIGHUP, 129}};

// A signal during the computation (before any output file exists): exit 128 + signal, the
// message, and no file at all in the output directory.
TEST_F(Hardening, SignalDuringComputationLeavesNoOutput) {
  for (const SignalCase& s : kSignals) {
    SCOPED_TRACE(strsignal(s.signal));
    for (const char* kernel : {"cpu-naive", "cpu-parallel"}) {
      SCOPED_TRACE(kernel);
      // achbp: 16,090 atoms on a 0.5 Å grid, 10^11 atom-evaluations: minutes of work.
      std::vector<std::string> args = {"map", "data/achbp.pqr", "--kernel", kernel, "--spacing", "0.5",
                                       "-o",  path("achbp.dx")};
      if (vti_supported()) args.insert(args.end(), {"-o", path("achbp.vti")});
      Child child(args, capture_, {});
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ASSERT_TRUE(child.running()) << "finished before the signal: " << child.wait();
      child.signal(s.signal);
      const Outcome r = child.wait(30);
      EXPECT_FALSE(r.signaled) << r;
      EXPECT_EQ(r.code, s.code) << r;
      EXPECT_TRUE(contains(r.err, "espgrid: interrupted; no output written")) << r;
      expect_only({});
    }
  }
}

// A signal while a large map is being written: the process is stopped (SIGSTOP) as soon as
// its ".NAME.partial.PID.XXXXXX" file appears, signalled, then continued, so the signal lands
// during the write however fast the machine is. The partial file must be gone afterwards.
TEST_F(Hardening, SignalDuringTheWriteOfALargeMapRemovesThePartialFile) {
  const std::string input = one_atom();
  // .mrc and .vti are written while the map is computed: the partial file exists from the start.
  for (const std::string name : {"big.dx", "big.vti", "big.mrc"}) {
    for (const SignalCase& s : kSignals) {
      SCOPED_TRACE(name + ", " + strsignal(s.signal));
      // 8 million points: a 128 MB .dx (the computation of one atom takes milliseconds).
      Child child({"map", input, "-o", path(name), "--origin", "-50,-50,-50", "--dims", "200,200,200", "--spacing",
                   "0.5", "--kernel", "cpu-parallel"},
                  capture_, {});
      const fs::path partial = wait_for_partial(child, dir_, name, 120);
      ASSERT_FALSE(partial.empty()) << "no temporary file for " << name << " appeared: " << child.wait();
      child.signal(SIGSTOP);
      const bool mid_write = fs::exists(partial);
      child.signal(s.signal);
      child.signal(SIGCONT);
      const Outcome r = child.wait(60);
      ASSERT_TRUE(mid_write) << "the write finished before the process was stopped: " << r;
      EXPECT_FALSE(r.signaled) << r;
      EXPECT_EQ(r.code, s.code) << r;
      EXPECT_TRUE(contains(r.err, "espgrid: interrupted; no output written")) << r;
      EXPECT_FALSE(contains(r.out, "wrote")) << r;
      expect_only({"one.pqr"});
    }
  }
}

// Two outputs, signal while the second is written: the first is complete and kept, the second
// leaves nothing, and the message says so.
TEST_F(Hardening, SignalDuringTheSecondMapKeepsTheFirstComplete) {
  const std::string input = one_atom();
  Child child({"map", input, "-o", path("first.dx"), "-o", path("second.dx"), "--origin", "-30,-30,-30", "--dims",
               "120,120,120", "--spacing", "0.5", "--kernel", "cpu-parallel"},
              capture_, {});
  const fs::path partial = wait_for_partial(child, dir_, "second.dx", 120);
  ASSERT_FALSE(partial.empty()) << child.wait();
  child.signal(SIGSTOP);
  const bool mid_write = fs::exists(partial);
  child.signal(SIGINT);
  child.signal(SIGCONT);
  const Outcome r = child.wait(60);
  ASSERT_TRUE(mid_write) << r;
  EXPECT_EQ(r.code, 130) << r;
  EXPECT_TRUE(
      contains(r.err, "espgrid: interrupted; the unfinished map was removed (maps already completed were kept)"))
      << r;
  // (stdout's "wrote first.dx" may still sit in stdio's buffer when the handler calls _exit,
  // so it is not checked: the file itself is.)
  expect_only({"first.dx", "one.pqr"});
  const PotentialMap first = read_dx(path("first.dx"));
  EXPECT_EQ(first.values.size(), 120u * 120u * 120u);
  for (float v : first.values) ASSERT_TRUE(std::isfinite(v));
}

// ---- GPU faults (skipped without a usable GPU) ---------------------------------------------------

class GpuFaults : public ::testing::Test {
 protected:
  void SetUp() override { ESPGRID_REQUIRE_CUDA_OR_SKIP(); }
};

PreparedProblem gpu_problem(const GridSpec& grid, std::size_t atoms, unsigned seed) {
  std::mt19937 rng(seed);
  return PreparedProblem(testing::random_atoms(rng, atoms, grid), grid, 1.0);
}

/// Every CUDA variant's name.
std::vector<std::string> cuda_kernels() { return testing::variant_names(Backend::Cuda); }

// A slab cap far above the map (SIZE_MAX) means one slab; a cap below one plane (1 byte) means
// one plane per slab. Both give a correct map.
TEST_F(GpuFaults, AbsurdSlabCapsStillGiveTheRightMap) {
  const GridSpec grid = testing::make_test_grid(37, 29, 23);
  const PreparedProblem problem = gpu_problem(grid, 300, testing::test_seed());
  for (const std::string& name : cuda_kernels()) {
    for (const std::size_t cap : {std::numeric_limits<std::size_t>::max(), std::size_t{1}}) {
      SCOPED_TRACE(name + ", max_slab_bytes " + std::to_string(cap));
      RunOptions options;
      options.max_slab_bytes = cap;
      std::size_t progress_calls = 0;
      options.progress = [&](std::size_t, std::size_t) { ++progress_calls; };
      const auto out = testing::run_poisoned(find_kernel(name), problem, options);
      testing::expect_matches_exact_sum(find_kernel(name), problem, out);
      if (cap == 1) EXPECT_EQ(progress_calls, 23u) << "one plane per slab";
    }
  }
}

TEST_F(GpuFaults, InvalidDeviceNumbersNameTheDevice) {
  const GridSpec grid = testing::make_test_grid(4, 4, 4);
  const PreparedProblem problem = gpu_problem(grid, 3, 1);
  for (const int device : {-1, 64, INT_MAX}) {
    RunOptions options;
    options.device = device;
    try {
      testing::run_poisoned(default_kernel(Backend::Cuda), problem, options);
      FAIL() << "device " << device << " accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "CUDA device " + std::to_string(device) + " does not exist")) << e.what();
    }
  }
}

TEST_F(GpuFaults, CliOnAMissingDeviceFailsClearly) {
  const fs::path capture = fs::temp_directory_path() / ("espgrid_gpu_cli_" + std::to_string(::getpid()));
  fs::create_directories(capture);
  Child child({"map", kSmall, "-o", (capture / "x.dx").string(), "--backend", "cuda", "--device", "999"}, capture, {});
  const Outcome r = child.wait();
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_TRUE(contains(r.err, "CUDA device 999 does not exist")) << r;
  EXPECT_FALSE(fs::exists(capture / "x.dx"));
  fs::remove_all(capture);
}

// A failure in the middle of a run (injected through DeviceRunOptions::chunk_hook before the
// third slab is queued, while earlier slabs are in flight) ends the call with that error; the
// streams drain, the buffers are freed, and the next run on the device is right.
TEST_F(GpuFaults, AnErrorMidRunStopsTheRunAndTheDeviceStaysUsable) {
  const GridSpec grid = testing::make_test_grid(64, 48, 40);
  const PreparedProblem problem = gpu_problem(grid, 200, testing::test_seed() + 7);
  for (const auto& v : kernel_variants()) {
    if (!v.uses_plane_driver()) continue;  // the chunk hook is the per-plane driver's
    SCOPED_TRACE(v.name);
    std::vector<float> out = testing::poisoned(grid.point_count());
    cuda::DeviceRunOptions options;
    options.max_slab_bytes = 4 * 128 * 64 * sizeof(float);  // two planes of the padded grid per slab
    int chunks = 0;
    options.chunk_hook = [&](int, int, std::int64_t k0) {
      if (++chunks == 3) throw Error("injected device fault before the slab at plane " + std::to_string(k0));
    };
    try {
      cuda::compute_potential(v.name, v.device, problem.view(out.data()), options);
      FAIL() << "the injected fault did not end the run";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "injected device fault before the slab at plane")) << e.what();
    }
    EXPECT_EQ(chunks, 3);
    cuda::DeviceRunOptions plain;
    std::vector<float> again = testing::poisoned(grid.point_count());
    cuda::compute_potential(v.name, v.device, problem.view(again.data()), plain);
    testing::expect_matches_oracle(problem, again, 7);
  }
}

#if ESPGRID_HAVE_CUDA
/// Takes device memory with plain cudaMalloc until about `leave` bytes stay free (never below
/// what the driver refuses); frees it all on destruction.
class DeviceMemoryHog {
 public:
  explicit DeviceMemoryHog(std::size_t leave) {
    cudaSetDevice(0);
    for (std::size_t chunk = std::size_t{1} << 30; chunk >= (std::size_t{1} << 20);) {
      std::size_t free_bytes = 0, total = 0;
      if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) break;
      if (free_bytes <= leave + chunk) {
        chunk /= 2;
        continue;
      }
      void* p = nullptr;
      if (cudaMalloc(&p, chunk) != cudaSuccess) {
        cudaGetLastError();
        chunk /= 2;
        continue;
      }
      blocks_.push_back(p);
    }
  }
  ~DeviceMemoryHog() {
    for (void* p : blocks_) cudaFree(p);
  }
  static std::size_t free_now() {
    std::size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    return free_bytes;
  }

 private:
  std::vector<void*> blocks_;
};

// A map four times larger than the free device memory is computed through slabs (automatic
// sizing) and is right; this is how a map larger than the whole device is handled.
TEST_F(GpuFaults, MapLargerThanFreeDeviceMemoryStreamsThroughSlabs) {
  const GridSpec grid = testing::make_test_grid(512, 512, 512, 0.25);  // 512 MiB of floats
  const PreparedProblem problem = gpu_problem(grid, 64, testing::test_seed() + 3);
  DeviceMemoryHog hog(std::size_t{128} << 20);  // ~128 MiB left: a quarter of the map
  std::printf("[ info     ] free device memory while the map runs: %.0f MiB\n",
              static_cast<double>(DeviceMemoryHog::free_now()) / (1 << 20));
  for (const char* name : {"cuda-unrolled", "cuda-gather"}) {
    SCOPED_TRACE(name);
    std::size_t slabs = 0;
    RunOptions options;
    options.progress = [&](std::size_t, std::size_t) { ++slabs; };
    std::vector<float> out;
    try {
      out = testing::run_poisoned(find_kernel(name), problem, options);
    } catch (const Error& e) {
      FAIL() << "a map larger than free device memory failed instead of streaming: " << e.what();
    }
    EXPECT_GT(slabs, 1u) << "the map was not split";
    testing::expect_matches_oracle(problem, out, 100'003);
  }
}

// With (almost) no device memory left, a run fails with a message that names the failing
// allocation or CUDA call, or succeeds with the right map; never a wrong one. Afterwards
// (memory freed) the same run works: no sticky error is left behind.
TEST_F(GpuFaults, OutOfDeviceMemoryIsAClearErrorAndLeavesTheDeviceUsable) {
  const GridSpec grid = testing::make_test_grid(256, 256, 64);
  const PreparedProblem problem = gpu_problem(grid, 100, testing::test_seed() + 5);
  {
    DeviceMemoryHog hog(0);
    std::printf("[ info     ] free device memory left by the hog: %.1f MiB\n",
                static_cast<double>(DeviceMemoryHog::free_now()) / (1 << 20));
    for (const std::size_t cap : {std::size_t{0}, std::size_t{64} << 20}) {
      for (const std::string& name : cuda_kernels()) {
        SCOPED_TRACE(name + ", max_slab_bytes " + std::to_string(cap));
        RunOptions options;
        options.max_slab_bytes = cap;
        try {
          const auto out = testing::run_poisoned(find_kernel(name), problem, options);
          testing::expect_matches_exact_sum(find_kernel(name), problem, out, 1009);
        } catch (const Error& e) {
          const std::string what = e.what();
          std::printf("[ info     ] %s: %s\n", name.c_str(), what.c_str());
          // Names what failed: an allocation (and its buffer), a runtime call, or a launch.
          EXPECT_TRUE(contains(what, "cannot allocate") || contains(what, "CUDA call '") ||
                      contains(what, "CUDA kernel launch failed") || contains(what, "CUDA kernel failed"))
              << what;
          if (contains(what, "cannot allocate")) EXPECT_TRUE(contains(what, "for '")) << "names the buffer: " << what;
          if (contains(what, "cannot allocate") && contains(what, " on device "))
            EXPECT_TRUE(contains(what, "free of")) << "says what was free: " << what;
          EXPECT_FALSE(contains(what, ".cu:")) << "a source location in a user's message: " << what;
        }
      }
    }
  }
  for (const std::string& name : cuda_kernels()) {
    SCOPED_TRACE(name + " after the memory was freed");
    const auto out = testing::run_poisoned(find_kernel(name), problem);
    testing::expect_matches_exact_sum(find_kernel(name), problem, out, 1009);
  }
}

// An explicit slab cap that cannot be allocated is not shrunk: the error names the slab.
// --model pb on the device pipeline checks the GPU's free memory after the host's preparation (the
// context is made beside it: pb_solve.cpp, device_check_deferred). With the device's memory taken,
// a grid that fits the whole device is refused there, naming the free memory; with it given back,
// the same grid solves (so the refusal came from the free memory, not the grid). Here, in this
// serial binary: the hog would make a concurrent GPU test's solve fail.
TEST_F(GpuFaults, APbGridBeyondTheFreeMemoryIsRefusedNamingIt) {
  const Atoms fas = testing::load_molecule("fasciculin2.pqr");
  const GridSpec g = testing::grid_around(fas, 0.6, 9);
  PbRun run;
  run.solver = PbSolver::CudaMultigrid;
  {
    DeviceMemoryHog hog(std::size_t{64} << 20);  // what is left is under the check's reserve (256 MiB)
    try {
      solve_pb(fas, g, PbOptions{}, run);
      ADD_FAILURE() << "solved with " << DeviceMemoryHog::free_now() << " bytes free";
    } catch (const UsageError& e) {
      EXPECT_TRUE(contains(e.what(), " free of ")) << e.what();
      EXPECT_TRUE(contains(e.what(), "needs about")) << e.what();
    }
  }
  EXPECT_TRUE(solve_pb(fas, g, PbOptions{}, run).solve.converged);
}

TEST_F(GpuFaults, ExplicitSlabCapThatCannotBeAllocatedNamesTheSlab) {
  const GridSpec grid = testing::make_test_grid(256, 256, 256);  // 64 MiB
  const PreparedProblem problem = gpu_problem(grid, 10, 9);
  DeviceMemoryHog hog(std::size_t{16} << 20);  // ~16 MiB free
  RunOptions options;
  options.max_slab_bytes = std::size_t{64} << 20;  // one 64 MiB slab: does not fit
  try {
    const auto out = testing::run_poisoned(find_kernel("cuda-gather"), problem, options);
    testing::expect_matches_oracle(problem, out, 10007);  // the driver found room after all
    std::printf("[ info     ] the 64 MiB slab was allocated with %.1f MiB reported free\n",
                static_cast<double>(DeviceMemoryHog::free_now()) / (1 << 20));
  } catch (const Error& e) {
    const std::string what = e.what();
    // Usually the slab allocation fails and names itself; with so little memory left the
    // allocation can also succeed and the kernel launch fail (seen on an H200, 2026-11-21):
    // either way the message must name what failed and say it was out of memory.
    if (contains(what, "cannot allocate")) {
      EXPECT_TRUE(contains(what, "cannot allocate 64.0 MiB for 'potential slab' on device 0")) << what;
      EXPECT_TRUE(contains(what, "free of")) << what;
    } else {
      EXPECT_TRUE(contains(what, "CUDA kernel launch failed") || contains(what, "CUDA call '")) << what;
      EXPECT_TRUE(contains(what, "out of memory")) << what;
    }
  }
}
#endif  // ESPGRID_HAVE_CUDA

}  // namespace
}  // namespace espgrid
