// Reliability tests: what an adversarial probe broke — silent misreads, unsafe or
// destructive output, checks that came after the expensive work, and the command line — each
// run end to end through the espgrid binary. docs/reliability.md lists every class with its
// test. The reader details are unit-tested in tests/test_readers.cpp.
//
// Each test here failed on the code before its fix: run them against another binary with
//   ESPGRID_TEST_BINARY=/path/to/old/espgrid build/tests/test_reliability
// (docs/reliability.md records that run).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/json.h"
#include "src/maps/map_formats.h"
#include "tests/child_process.h"
#include "tests/file_helpers.h"

#if ESPGRID_HAVE_CUDA
#include "kernels/cuda_runtime_support.h"
#endif

namespace espgrid {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::contains;
using testing::Outcome;
using testing::slurp;

constexpr const char* kSmall = "tests/data/pqr_whitespace.pqr";  // 38 atoms
constexpr double kOneGiB = 1024.0 * 1024.0 * 1024.0;

class Reliability : public testing::ScratchDirTest {
 protected:
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string copy_of_small(const std::string& name) const {
    const std::string p = path(name);
    fs::copy_file(fs::path(ESPGRID_SOURCE_DIR) / kSmall, p, fs::copy_options::overwrite_existing);
    return p;
  }
  /// A quick map of `input` to `output`: a 2 Å grid around 38 atoms.
  std::vector<std::string> quick_map(const std::string& input, const std::string& output) const {
    return {"map", input, "-o", output, "--spacing", "2", "--padding", "2"};
  }
  /// A PQR of `count` atoms in PDB2PQR's columns, random coordinates in ±100 Å.
  std::string big_pqr(const std::string& name, std::size_t count) const {
    const std::string p = path(name);
    std::FILE* f = std::fopen(p.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> coord(-100, 100), charge(-1, 1);
    for (std::size_t i = 0; i < count; ++i)
      std::fprintf(f, "ATOM  %5zu  CA  ALA A%4zu    %8.3f%8.3f%8.3f %7.4f %6.4f\n", i % 100000, i % 10000, coord(rng),
                   coord(rng), coord(rng), charge(rng), 1.5);
    EXPECT_EQ(std::fclose(f), 0);
    return p;
  }
  /// The environment that loads tests/fault/io_faults.cpp into the child.
  static Child::Options with_io_faults(std::map<std::string, std::optional<std::string>> env) {
    Child::Options options;
    options.env = std::move(env);
    options.env["LD_PRELOAD"] = ESPGRID_IO_FAULTS;
    // An ASan binary insists on its runtime coming first; the fault library only wraps libc calls.
    const char* asan = std::getenv("ASAN_OPTIONS");
    options.env["ASAN_OPTIONS"] = std::string(asan ? asan : "") + ":verify_asan_link_order=0";
    return options;
  }
  /// A map file that reads back with every value finite.
  static void expect_valid_map(const std::string& file, std::size_t points = 0) {
    const PotentialMap map = read_dx(file);
    if (points) EXPECT_EQ(map.values.size(), points);
    for (const float v : map.values) ASSERT_TRUE(std::isfinite(v)) << file;
  }
};

// ==== silent wrong maps ===========================================================================

// A read error part-way through the input (EIO from a failing disk) was taken as the end of the
// file: a map of the first atoms, exit 0. Injected with tests/fault/io_faults.cpp: every read
// of the file from byte N on fails. Two cases: records of 64 bytes with the fault after 8 KiB
// (the old reader stopped on a record boundary: a map of 256 of the 1,000 atoms, exit 0),
// and 2.8 MB with the fault after the first MiB (the streaming reader's first read).
TEST_F(Reliability, ReadErrorPartWayThroughTheInputStopsTheRun) {
  std::string records;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> coord(-9, 9), charge(-1, 1);
  for (int i = 0; i < 1000; ++i) {
    char line[80];
    std::snprintf(line, sizeof line, "ATOM %5d CA ALA %4d %8.3f %8.3f %8.3f %6.3f 1.500", i, i, coord(rng), coord(rng),
                  coord(rng), charge(rng));
    records += std::string(line) + std::string(63 - std::strlen(line), ' ') + "\n";  // 64 bytes a record
  }
  const struct {
    std::string input;
    const char* atoms;
    const char* fault;
  } cases[] = {{write("records.pqr", records), "1,000 atoms", "records.pqr:8192"},
               {big_pqr("disk.pqr", 40'000), "40,000 atoms", "disk.pqr:1048576"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fault);
    const std::vector<std::string> args = {"map",   c.input,  "-o",    path("x.dx"), "--origin",
                                           "0,0,0", "--dims", "3,3,3", "--spacing",  "1"};
    const Outcome healthy = run(args, with_io_faults({}));
    ASSERT_EQ(healthy.code, 0) << "the same run without the fault must work: " << healthy;
    EXPECT_TRUE(contains(healthy.out, c.atoms)) << healthy;
    fs::remove(path("x.dx"));

    const auto faulty = with_io_faults({{"ESPGRID_FAULT_READ_EIO", c.fault}});
    Outcome r = run(args, faulty);
    expect_clean_error(r, 1, "cannot read " + c.input + ": Input/output error");
    EXPECT_FALSE(fs::exists(path("x.dx")));
    r = run({"atoms", c.input}, faulty);
    expect_clean_error(r, 1, "Input/output error");
  }
}

struct Misread {
  const char* name;
  const char* text;
  const char* where;    // FILE:LINE of the defect (FILE is the name)
  const char* message;  // part of the error
};

// Inputs that were read into a wrong structure with exit 0; each must now be refused at its line.
TEST_F(Reliability, MisreadInputsAreRefusedAtTheirLine) {
  const std::string atom = "ATOM 1 N MET 1 1.000 2.000 3.000 0.5 1.5\n";
  std::string hundreds = "ATOM 1 N MET 1";
  for (int i = 0; i < 300; ++i) hundreds += " 7";
  hundreds += " 1.000 2.000 3.000 0.5 1.5\n";
  const std::string stray_endmdl = atom + "ENDMDL\n" + atom + atom;
  const std::string after_model = "MODEL 1\n" + atom + "ENDMDL\n" + atom;
  const std::string before_model = atom + "MODEL 1\n" + atom + "ENDMDL\n";
  const std::string extra_number = atom + "ATOM 2 N MET 1 1.000 2.000 3.000 0.5 1.8 0.00\n";
  const Misread cases[] = {
      {"endmdl.pqr", stray_endmdl.c_str(), "endmdl.pqr:2:", "ENDMDL without a MODEL"},
      {"after.pqr", after_model.c_str(), "after.pqr:4:", "outside any MODEL"},
      {"before.pqr", before_model.c_str(), "before.pqr:2:", "belong to no model"},
      {"extra.pqr", extra_number.c_str(), "extra.pqr:2:", "field too many"},
      {"hundreds.pqr", hundreds.c_str(), "hundreds.pqr:1:", "too many fields"},
      {"twopos.xyz", "1\nProperties=species:S:1:pos:R:3:pos:R:3:charge:R:1\nH 0 0 0 1 1 1 0.5\n",
       "twopos.xyz:2:", "'pos' twice"},
  };
  for (const Misread& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string input = write(c.name, c.text);
    Outcome r = run({"atoms", input});
    expect_clean_error(r, 1, c.where);
    EXPECT_TRUE(contains(r.err, c.message)) << r;
    r = run(quick_map(input, path("x.dx")));
    expect_clean_error(r, 1, c.where);
    EXPECT_FALSE(fs::exists(path("x.dx")));
  }
}

// Biopython's PQR writer puts the element symbol after the radius: that layout was refused.
// A UTF-8 byte-order mark made the first record "unknown" with an invisible character.
TEST_F(Reliability, RealWritersAndByteOrderMarksAreRead) {
  const Outcome source = run({"atoms", kSmall});
  ASSERT_EQ(source.code, 0) << source;
  const auto body = [](const std::string& out) { return out.substr(out.find("\n# x y z")); };
  Outcome r = run({"atoms", "tests/data/pqr_biopython.pqr"});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(body(r.out), body(source.out)) << "Biopython's file must read as its source";

  const std::string marked = write("bom.pqr", "\xEF\xBB\xBF" + slurp(fs::path(ESPGRID_SOURCE_DIR) / kSmall));
  r = run({"atoms", marked});
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(body(r.out), body(source.out)) << "a byte-order mark must change nothing";
}

// ==== unsafe or destructive output ==================================================================

// The temporary file had a predictable name (.NAME.partial.PID) and was opened without O_EXCL:
// a symlink planted there redirected the map into any file the user could write. The child is
// started stopped, so the link is in place, under the name it would have used, before it runs.
TEST_F(Reliability, SymlinkPlantedAtTheTemporaryNameIsNeverFollowed) {
  const std::string victim = write("victim.txt", "precious\n");
  Child::Options stopped;
  stopped.start_stopped = true;
  Child child(quick_map(kSmall, path("x.dx")), capture_, stopped);
  const std::string planted = path(".x.dx.partial." + std::to_string(child.pid()));
  ASSERT_EQ(::symlink(victim.c_str(), planted.c_str()), 0);
  child.resume();
  const Outcome r = child.wait(60);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(slurp(victim), "precious\n") << "the map was written through the planted link";
  EXPECT_FALSE(fs::is_symlink(path("x.dx")));
  expect_valid_map(path("x.dx"));
  EXPECT_TRUE(fs::is_symlink(planted)) << "a link of someone else's is not ours to remove";
}

// `-o` naming the input replaced the input with the map. Same device and inode is refused:
// the same name, a symbolic link to it, a hard link to it.
TEST_F(Reliability, TheInputIsNeverReplacedByTheMap) {
  const std::string input = copy_of_small("in.dx");  // a PQR with a map's extension
  const std::string before = slurp(input);
  ASSERT_EQ(::symlink("in.dx", path("soft.dx").c_str()), 0);
  ASSERT_EQ(::link(input.c_str(), path("hard.dx").c_str()), 0);
  for (const std::string output : {input, path("soft.dx"), path("hard.dx")}) {
    SCOPED_TRACE(output);
    const Outcome r = run({"map", input, "--format", "pqr", "-o", output, "--spacing", "2"});
    expect_clean_error(r, 2, "is the input file");
    EXPECT_EQ(slurp(input), before);
  }
  // convert: a map converted onto itself
  const Outcome made = run(quick_map(kSmall, path("m.dx")));
  ASSERT_EQ(made.code, 0) << made;
  const std::string map_before = slurp(path("m.dx"));
  const Outcome r = run({"convert", path("m.dx"), "-o", path("m.dx")});
  expect_clean_error(r, 2, "is the input file");
  EXPECT_EQ(slurp(path("m.dx")), map_before);
}

mode_t process_umask() {
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

mode_t mode_of(const std::string& file) {
  struct stat st {};
  EXPECT_EQ(::stat(file.c_str(), &st), 0) << file;
  return st.st_mode & 07777;
}

// Replacing by rename widened a 0600 map to 0644 (the temporary file's mode).
TEST_F(Reliability, ReplacingAMapKeepsItsPermissions) {
  for (const mode_t mode : {0600, 0640, 0664}) {
    SCOPED_TRACE(mode);
    const std::string out = write("kept.dx", "old\n");
    ASSERT_EQ(::chmod(out.c_str(), mode), 0);
    const Outcome r = run(quick_map(kSmall, out));
    ASSERT_EQ(r.code, 0) << r;
    EXPECT_EQ(mode_of(out), mode);
    expect_valid_map(out);
  }
  const Outcome r = run(quick_map(kSmall, path("fresh.dx")));
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_EQ(mode_of(path("fresh.dx")), 0666 & ~process_umask()) << "a new map is made like any new file";
}

// A read-only map was replaced silently; a FIFO or a device as destination would have been
// replaced by a file. Both are refused before the computation.
TEST_F(Reliability, ReadOnlyOrSpecialDestinationsAreRefusedBeforeComputing) {
  const std::string locked = write("locked.dx", "keep me\n");
  ASSERT_EQ(::chmod(locked.c_str(), 0444), 0);
  Outcome r = run(quick_map(kSmall, locked));
  expect_clean_error(r, 1, "it is read-only (mode 0444)");
  EXPECT_FALSE(contains(r.out, "kernel ")) << "refused only after computing\n" << r;
  EXPECT_EQ(slurp(locked), "keep me\n");
  ASSERT_EQ(::mkfifo(path("pipe.dx").c_str(), 0600), 0);
  r = run(quick_map(kSmall, path("pipe.dx")));
  expect_clean_error(r, 1, "not a regular file");
  EXPECT_TRUE(fs::is_fifo(path("pipe.dx")));
}

// A symlinked destination (out.dx -> elsewhere) was replaced by a plain file. The rule now: the
// map goes where the link points (atomically there), and the link stays; a dangling link's
// target is created.
TEST_F(Reliability, SymlinkedDestinationIsWrittenThrough) {
  fs::create_directory(path("maps"));
  const std::string target = write("maps/target.dx", "old\n");
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  ASSERT_EQ(::symlink("maps/target.dx", path("out.dx").c_str()), 0);
  ASSERT_EQ(::symlink("maps/new.dx", path("dangling.dx").c_str()), 0);
  for (const char* link : {"out.dx", "dangling.dx"}) {
    const Outcome r = run(quick_map(kSmall, path(link)));
    ASSERT_EQ(r.code, 0) << r;
    EXPECT_TRUE(fs::is_symlink(path(link))) << link << " was replaced by a plain file";
  }
  expect_valid_map(target);
  expect_valid_map(path("maps/new.dx"));
  EXPECT_EQ(mode_of(target), 0640u);
  std::vector<std::string> in_maps;
  for (const auto& e : fs::directory_iterator(path("maps"))) in_maps.push_back(e.path().filename().string());
  std::sort(in_maps.begin(), in_maps.end());
  EXPECT_EQ(in_maps, (std::vector<std::string>{"new.dx", "target.dx"})) << "a temporary file was left";
}

// The temporary name was 17 bytes longer than the destination's: a valid 255-byte name failed
// with "File name too long" after the computation.
TEST_F(Reliability, AnyNameTheFileSystemTakesIsWritten) {
  const std::string name = std::string(252, 'n') + ".dx";  // 255 bytes: NAME_MAX of ext4, tmpfs, xfs
  const Outcome r = run(quick_map(kSmall, path(name)));
  ASSERT_EQ(r.code, 0) << r;
  expect_valid_map(path(name));
  expect_only({name});
}

// A destination whose directory refuses new files although access() allows them (/proc, as
// root; read-only mounts, quotas) was found only after the computation (here: minutes of it).
TEST_F(Reliability, AnUnwritableDestinationIsFoundBeforeComputing) {
  const auto start = Clock::now();
  const Outcome r = run({"map", "data/achbp.pqr", "--spacing", "0.5", "-o", "/proc/espgrid-test.dx"});
  expect_clean_error(r, 1, "cannot write /proc/espgrid-test.dx");
  EXPECT_FALSE(contains(r.out, "kernel ")) << r;
  EXPECT_LT(seconds_since(start), 10.0) << "the refusal came after the computation";
}

// Temporary files of dead processes (SIGKILL, a crash, a power loss) were never cleaned up. Now
// a new run for the same destination removes those whose process is gone and whose lock is
// free; a live writer's file (its PID runs, or it holds the lock) and other maps' files stay.
TEST_F(Reliability, StaleTemporaryFilesOfDeadProcessesAreRemoved) {
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);  // reaped: no process has this PID now
  const std::string d = std::to_string(dead), alive = std::to_string(::getpid());
  for (const std::string stale :
       {".x.dx.partial." + d + ".Ab3xYz", ".x.dx.partial." + d, ".x.dx.probe." + d + ".q1w2e3"})
    write(stale, "half a map");
  const std::vector<std::string> kept = {".x.dx.partial." + alive + ".Zz9Zz9", ".y.dx.partial." + d + ".Ab3xYz",
                                         ".x.dx.partial." + d + ".locked"};
  for (const std::string& k : kept) write(k, "in use");
  const int lock = ::open(path(".x.dx.partial." + d + ".locked").c_str(), O_RDONLY);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);  // a writer on another host of a network file system
  const Outcome r = run(quick_map(kSmall, path("x.dx")));
  ::close(lock);
  ASSERT_EQ(r.code, 0) << r;
  std::vector<std::string> expected = kept;
  expected.push_back("x.dx");
  expect_only(expected);
}

// There was no fsync before the rename: after a power loss the new name could hold an empty or
// partial file. The log of tests/fault/io_faults.cpp shows the order of the calls.
TEST_F(Reliability, TheMapIsOnDiskBeforeItIsRenamedIntoPlace) {
  const std::string log = path("calls.log");
  const Outcome r = run(quick_map(kSmall, path("x.dx")), with_io_faults({{"ESPGRID_FAULT_LOG", log}}));
  ASSERT_EQ(r.code, 0) << r;
  const std::string calls = slurp(log);
  const std::string dir = fs::canonical(dir_).string();
  const std::size_t rename_at = calls.find("rename " + dir + "/.x.dx.partial.");
  ASSERT_NE(rename_at, std::string::npos) << calls;
  const std::string partial = calls.substr(rename_at + 7, calls.find(' ', rename_at + 7) - rename_at - 7);
  const std::size_t fsync_at = calls.find("fsync " + partial + "\n");
  EXPECT_LT(fsync_at, rename_at) << "no fsync of " << partial << " before its rename:\n" << calls;
  EXPECT_NE(calls.find("fsync " + dir + "\n", rename_at), std::string::npos)
      << "no fsync of the directory after the rename:\n"
      << calls;
  expect_valid_map(path("x.dx"));
}

// ---- signals ------------------------------------------------------------------------------------

struct SignalCase {
  int signal;
  int code;
};

// SIGUSR1/2, SIGALRM, SIGVTALRM and SIGXCPU killed the process mid-write and left the partial
// file. Each now removes it, like SIGINT (tests/test_hardening.cpp), and ends with 128 + signal.
TEST_F(Reliability, MoreSignalsDuringTheWriteRemoveThePartialFile) {
  const std::string input = write("one.pqr", "ATOM      1  N   ALA A   1       0.000   0.000   0.000  1.0000 1.5000\n");
  for (const SignalCase s : {SignalCase{SIGUSR1, 138}, SignalCase{SIGUSR2, 140}, SignalCase{SIGALRM, 142},
                             SignalCase{SIGVTALRM, 154}, SignalCase{SIGXCPU, 152}}) {
    SCOPED_TRACE(strsignal(s.signal));
    // 8 million points: a 128 MB .dx, written while the child is stopped and signalled.
    Child child({"map", input, "-o", path("big.dx"), "--origin", "-50,-50,-50", "--dims", "200,200,200", "--spacing",
                 "0.5", "--kernel", "cpu-parallel"},
                capture_, {});
    const fs::path partial = testing::wait_for_partial(child, dir_, "big.dx", 120);
    ASSERT_FALSE(partial.empty()) << child.wait();
    child.signal(SIGSTOP);
    const bool mid_write = fs::exists(partial);
    child.signal(s.signal);
    child.signal(SIGCONT);
    const Outcome r = child.wait(60);
    ASSERT_TRUE(mid_write) << "the write finished before the process was stopped: " << r;
    EXPECT_FALSE(r.signaled) << r;
    EXPECT_EQ(r.code, s.code) << r;
    EXPECT_TRUE(contains(r.err, "espgrid: interrupted; no output written")) << r;
    expect_only({"one.pqr"});
  }
}

// A signal ignored by whoever started espgrid stays ignored: `nohup espgrid map ...` must survive
// the terminal closing (SIGHUP), as nohup promises; SIGTERM still ends it cleanly.
TEST_F(Reliability, SignalsIgnoredAtStartStayIgnored) {
  Child::Options nohup;
  nohup.ignored_signals = {SIGHUP};
  Child child({"map", "data/achbp.pqr", "--spacing", "0.5", "--kernel", "cpu-parallel", "-o", path("achbp.dx")},
              capture_, nohup);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  child.signal(SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(child.running()) << "SIGHUP ended a run started with SIGHUP ignored: " << child.wait();
  child.signal(SIGTERM);
  const Outcome r = child.wait(30);
  EXPECT_EQ(r.code, 143) << r;
  expect_only({});
}

// A CPU-time limit (ulimit -t, a batch system's) sends SIGXCPU, whose default action killed the
// process with a core dump and no word.
TEST_F(Reliability, CpuTimeLimitEndsTheRunCleanly) {
  Child::Options limited;
  limited.cpu_seconds_limit = 1;
  const Outcome r =
      run({"map", "data/achbp.pqr", "--spacing", "0.5", "--kernel", "cpu-parallel", "-o", path("achbp.dx")}, limited);
  EXPECT_FALSE(r.signaled) << r;
  EXPECT_EQ(r.code, 128 + SIGXCPU) << r;
  EXPECT_TRUE(contains(r.err, "espgrid: interrupted; no output written")) << r;
  expect_only({});
}

// SIGPIPE killed a run (exit 141) whose stdout reader had gone (`espgrid map ... | head -1`), and
// mid-write it left the partial file. The maps are the product: the run completes.
TEST_F(Reliability, AClosedStdoutDoesNotCostTheMap) {
  Child::Options closed;
  closed.stdout_to_closed_pipe = true;
  Outcome r = run(quick_map(kSmall, path("x.dx")), closed);
  EXPECT_FALSE(r.signaled) << r;
  EXPECT_EQ(r.code, 0) << r;
  expect_valid_map(path("x.dx"));
  // `atoms` has stdout as its product: a reader that went away is an error, not a cut list.
  r = run({"atoms", kSmall}, closed);
  expect_clean_error(r, 1, "cannot write the atoms to standard output: Broken pipe");

  const std::string input = write("one.pqr", "ATOM      1  N   ALA A   1       0.000   0.000   0.000  1.0000 1.5000\n");
  Child child({"map", input, "-o", path("big.dx"), "--origin", "-50,-50,-50", "--dims", "200,200,200", "--spacing",
               "0.5", "--kernel", "cpu-parallel"},
              capture_, {});
  const fs::path partial = testing::wait_for_partial(child, dir_, "big.dx", 120);
  ASSERT_FALSE(partial.empty()) << child.wait();
  child.signal(SIGPIPE);
  r = child.wait(120);
  EXPECT_FALSE(r.signaled) << r;
  EXPECT_EQ(r.code, 0) << r;
  expect_valid_map(path("big.dx"), 200u * 200u * 200u);
}

// ==== checks that came after the expensive work =====================================================

// /dev/zero as input grew without bound (the whole input was read before any check).
TEST_F(Reliability, ADeviceAsInputIsRefusedAtOnce) {
  Child::Options capped;
  if (!ESPGRID_UNDER_SANITIZER) capped.address_space_limit = static_cast<rlim_t>(4 * kOneGiB);  // a safety net
  const auto start = Clock::now();
  Outcome r = run({"map", "/dev/zero", "--format", "pqr", "-o", path("x.dx")}, capped);
  expect_clean_error(r, 1, "/dev/zero is a device");
  r = run({"atoms", "/dev/zero", "--format", "xyz"}, capped);
  expect_clean_error(r, 1, "/dev/zero is a device");
  EXPECT_LT(seconds_since(start), 10.0);
  expect_only({});
}

// A 2 GB sparse file (zeros after one good line) was read whole before "binary data" was
// reported; reading now stops at the first bad byte.
TEST_F(Reliability, BinaryDataStopsTheReadingAtItsLine) {
  const std::string input = write("sparse.pqr", "ATOM 1 N MET 1 1.000 2.000 3.000 0.5 1.5\n");
  ASSERT_EQ(::truncate(input.c_str(), static_cast<off_t>(2 * kOneGiB)), 0);
  Child::Options capped;
  if (!ESPGRID_UNDER_SANITIZER) capped.address_space_limit = static_cast<rlim_t>(kOneGiB);
  const Outcome r = run({"map", input, "-o", path("x.dx")}, capped);
  expect_clean_error(r, 1, input + ":2: binary data (byte 0x00 at column 1)");
  // One read of 1 MiB finds the first bad byte; the whole file read (or half of it, where the
  // memory ran out) took hundreds of MiB. 100 MiB is far above the binary's own footprint
  // (about 30 MiB here) and far below what reading the file would take.
  if (!ESPGRID_UNDER_SANITIZER) EXPECT_LT(r.max_rss_kib, 100 * 1024) << "the file was read beyond its first bad byte";
}

// Everything that can be checked without the input is checked before it is opened: the input
// here is a FIFO nobody writes to, so a run that opened it would hang until the test's timeout.
TEST_F(Reliability, CheapChecksComeBeforeTheInputIsOpened) {
  ASSERT_EQ(::mkfifo(path("never.pqr").c_str(), 0600), 0);
  const std::string input = path("never.pqr");
  struct Case {
    std::vector<std::string> args;
    int code;
    const char* message;
  };
  const Case cases[] = {
      {{"map", input, "-o", path("x.dx"), "--threads", "2000"}, 2, "--threads takes 0"},
      {{"map", input, "-o", path("x.dx"), "--spacing", "0"}, 2, "spacing"},
      {{"map", input, "-o", path("x.mrc5")}, 2, "cannot tell the map format"},
      {{"map", input, "-o", path("missing/x.dx")}, 1, "does not exist"},
      {{"map", input, "-o", "/proc/x.dx"}, 1, "cannot write /proc/x.dx"},
      {{"map", input, "-o", path("x.dx"), "--origin", "0,0,0", "--dims", "0,1,1"}, 2, "grid dims"},
      {{"verify", input, "--threads", "2000"}, 2, "--threads takes 0"},
      {{"bench", input, "--threads", "2000"}, 2, "--threads takes 0"},
      {{"bench", input, "--out", kSmall}, 2, "is not a folder"},
      {{"bench", input, "--out", std::string(kSmall) + "/sub"}, 2, "is not a folder"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0] + " " + c.args.back());
    Child child(c.args, capture_, {});
    const Outcome r = child.wait(20);
    expect_clean_error(r, c.code, c.message);
  }
}

// `bench --out FILE` ran the whole benchmark, then failed to write.
TEST_F(Reliability, BenchOutThatCannotBeWrittenFailsBeforeMeasuring) {
  const std::string file = write("results", "not a folder\n");
  Outcome r = run({"bench", "--dims", "16,16,16", "--atoms", "100", "--kernel", "cpu-parallel", "--out", file});
  expect_clean_error(r, 2, "--out " + file + ": " + file + " is not a folder");
  EXPECT_FALSE(contains(r.out, "== variants")) << "measured before refusing\n" << r;
  r = run({"bench", "--dims", "16,16,16", "--atoms", "100", "--kernel", "cpu-parallel", "--out", "/proc/espgrid"});
  EXPECT_EQ(r.code, 1) << r;
  EXPECT_FALSE(contains(r.out, "== variants")) << r;
}

// ESPGRID_MAX_GRID_POINTS was ignored by bench's sweeps (their grids are their own).
TEST_F(Reliability, BenchSweepsObeyTheGridPointLimit) {
  Child::Options capped;
  capped.env["ESPGRID_MAX_GRID_POINTS"] = "100000";
  for (const char* sweep : {"grid", "speedup"}) {
    SCOPED_TRACE(sweep);
    Child child({"bench", "--sweep", sweep, "--sweep-only", "--kernel", "cpu-parallel", "--dims", "8,8,8"}, capture_,
                capped);
    const Outcome r = child.wait(60);
    expect_clean_error(r, 2, "--sweep " + std::string(sweep) + ": grid of ");
    EXPECT_TRUE(contains(r.err, "ESPGRID_MAX_GRID_POINTS")) << r;
    EXPECT_FALSE(contains(r.out, "== " + std::string(sweep))) << r;
  }
}

// `bench --atoms 100000000` allocated 6 GB without a memory check. Checked now against the memory
// the process may use (here an address-space limit of 2 GiB).
TEST_F(Reliability, AtomsBeyondMemoryAreRefusedBeforeAllocating) {
  EXPECT_THROW(check_atoms_fit(100'000'000, std::size_t{1} << 30), UsageError);
  EXPECT_NO_THROW(check_atoms_fit(1'000'000, std::size_t{1} << 30));
  if (ESPGRID_UNDER_SANITIZER) GTEST_SKIP() << "an address-space limit cannot be set under AddressSanitizer";
  Child::Options capped;
  capped.address_space_limit = static_cast<rlim_t>(2 * kOneGiB);
  const Outcome r = run({"bench", "--atoms", "100000000", "--dims", "4,4,4", "--kernel", "cpu-parallel"}, capped);
  expect_clean_error(r, 2, "100,000,000 atoms need");
  EXPECT_TRUE(contains(r.err, "of memory but only")) << r;
}

// ==== the command line ==============================================================================

// Extra positional arguments were ignored (`map a.pqr b.pqr -o x.dx` mapped only a.pqr), a
// repeated option took its last value, `-o=x.dx` wrote a file named "=x.dx", and
// `--threads 99999999999` failed without naming the option.
TEST_F(Reliability, TheCommandLineSaysWhatItCannotTakeLiterally) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"map", kSmall, kSmall, "-o", path("x.dx")}, "unexpected argument 'tests/data/pqr_whitespace.pqr'"},
      {{"verify", kSmall, "extra"}, "unexpected argument 'extra'"},
      {{"atoms", kSmall, "extra"}, "unexpected argument 'extra'"},
      {{"bench", kSmall, "extra"}, "unexpected argument 'extra'"},
      {{"kernels", "extra"}, "unexpected argument 'extra'"},
      {{"map", kSmall, "-o", path("x.dx"), "--spacing", "1", "--spacing", "2"}, "--spacing given twice"},
      {{"map", kSmall, "--input", kSmall, "-o", path("x.dx")}, "more than one input file"},
      {{"map", kSmall, "-o=" + path("x.dx")}, "a short option takes what follows it"},
      {{"map", kSmall, "-o", path("x.dx"), "--threads", "99999999999"}, "--threads takes 0 (all cores) to 1024"},
      {{"map", kSmall, "-o", path("x.dx"), "--device", "99999999999"}, "--device must be"},
      {{"map", kSmall, "-o", path("x.dx"), "-o", path("./x.dx")}, "are the same file"},
  };
  for (const Case& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    SCOPED_TRACE(shown);
    const Outcome r = run(c.args);
    expect_clean_error(r, 2, c.message);
  }
  expect_only({});
  // Repeating -o is how two maps are asked for: still accepted.
  const Outcome r = run({"map", kSmall, "-o", path("a.dx"), "-o", path("b.dx"), "--spacing", "2"});
  ASSERT_EQ(r.code, 0) << r;
  expect_only({"a.dx", "b.dx"});
}

// The JSON file `json` names the Latin-1 "caf\xE9.pqr" as "caf\ufffd.pqr" and is UTF-8 that
// independent judges accept: glibc's iconv refuses invalid UTF-8; Python's json module (where
// Debian's is installed) decodes strictly and parses.
void expect_utf8_json_naming_cafe(const std::string& json) {
  ASSERT_TRUE(contains(slurp(json), "caf\\ufffd.pqr")) << slurp(json);
  EXPECT_EQ(std::system(("iconv -f UTF-8 -t UTF-8 '" + json + "' > /dev/null").c_str()), 0) << slurp(json);
  if (::access("/usr/bin/python3", X_OK) == 0) {
    const std::string parse =
        "/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' '" + json + "'";
    EXPECT_EQ(std::system(parse.c_str()), 0) << slurp(json);
  }
}

// An input path that is not UTF-8 made `bench --out` write invalid JSON (JSON must be UTF-8).
// The bench's files and `map --json` are written by the one JSON writer (core/json.h).
TEST_F(Reliability, BenchJsonIsValidUtf8WhateverThePaths) {
  EXPECT_EQ(json_quoted("caf\xE9"), "\"caf\\ufffd\"");
  EXPECT_EQ(json_quoted("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  EXPECT_EQ(json_quoted("\xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80"),
            "\"\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\\ufffd\"");
  // Python's in-memory summaries keep the bytes: os.fsdecode turns them into the name os.listdir gives.
  EXPECT_EQ(json_quoted("caf\xE9 \xC3\xA9", Malformed::Keep), "\"caf\xE9 \xC3\xA9\"");
  EXPECT_EQ(Json::object().set("input", "caf\xE9.pqr").dump(0, Malformed::Keep), "{\"input\": \"caf\xE9.pqr\"}");
  const std::string input = copy_of_small("caf\xE9.pqr");  // Latin-1 "café"
  const Outcome r = run({"bench", input, "--kernel", "cpu-parallel", "--spacing", "2", "--padding", "2", "--repeats",
                         "1", "--warmup", "0", "--budget", "0.01", "--out", path("out")});
  ASSERT_EQ(r.code, 0) << r;
  const std::string json = path("out/bench-variants.json");
  expect_utf8_json_naming_cafe(json);
}

// `map --json` took a file name's bytes as they were: a Latin-1 name made a summary Python's
// json module refused.
TEST_F(Reliability, MapJsonSummaryIsValidUtf8WhateverThePaths) {
  const std::string input = copy_of_small("caf\xE9.pqr");  // Latin-1 "café"
  const Outcome r = run({"map", input, "-o", path("caf\xE9.dx"), "--spacing", "2", "--json", path("summary.json")});
  ASSERT_EQ(r.code, 0) << r;
  const std::string json = path("summary.json");
  expect_utf8_json_naming_cafe(json);
}

// ==== CUDA error messages ===========================================================================

// ==== the second probe ==================================================================

// `espgrid kernels > /dev/full` exited 0 with the listing lost (`atoms` already failed). Every
// run whose product is what it prints now fails when stdout does; `map` and `convert`, whose
// products are files, keep their maps (their report is not the product).
TEST_F(Reliability, OutputThatIsTheProductIsNeverLostSilently) {
  Child::Options full;
  full.stdout_to = "/dev/full";  // every write: ENOSPC
  const std::vector<std::vector<std::string>> products = {
      {"kernels"},
      {"kernels", "--help"},
      {"--version"},
      {"--help"},
      {"map", "--help"},
      {"atoms", kSmall},
      {"verify", kSmall, "--spacing", "3", "--padding", "1", "--kernel", "cpu-parallel"}};
  for (const auto& args : products) {
    SCOPED_TRACE(args[0] + (args.size() > 1 ? " " + args[1] : ""));
    const Outcome r = run(args, full);
    EXPECT_EQ(r.code, 1) << r;
    EXPECT_TRUE(contains(r.err, "espgrid: error: cannot write")) << r;
    EXPECT_TRUE(contains(r.err, "standard output")) << r;
  }
  Outcome r = run(quick_map(kSmall, path("x.dx")), full);
  EXPECT_EQ(r.code, 0) << r;
  expect_valid_map(path("x.dx"));
  r = run({"convert", path("x.dx"), "-o", path("y.mrc")}, full);
  EXPECT_EQ(r.code, 0) << r;
  EXPECT_TRUE(fs::exists(path("y.mrc")));
}

// An existing map on a read-only file system was reported as "read-only (mode 0644)", a mode
// problem the user cannot fix with chmod. (A real read-only mount: a tmpfs remounted read-only
// in a private mount namespace.)
TEST_F(Reliability, AReadOnlyFileSystemIsNamedNotTakenForAMode) {
  const std::string why = testing::small_fs_unavailable();
  if (!why.empty()) GTEST_SKIP() << "needs a read-only mount: " << why;
  fs::create_directories(path("ro"));
  const std::string input = (fs::path(ESPGRID_SOURCE_DIR) / kSmall).string();
  const int status =
      testing::run_with_small_fs(path("ro"), 256,
                                 "cd '" + dir_.string() +
                                     "' && echo old > ro/old.dx && chmod 0644 ro/old.dx && mount -o remount,ro ro && "
                                     "\"$ESPGRID\" map '" +
                                     input +
                                     "' -o ro/old.dx --spacing 3 > old.out 2> old.err; echo $? > old.rc; "
                                     "\"$ESPGRID\" map '" +
                                     input +
                                     "' -o ro/new.dx --spacing 3 > new.out 2> new.err; echo $? > new.rc; "
                                     "cat ro/old.dx > old.after; ls -A ro > ro.ls");
  ASSERT_EQ(status, 0);
  EXPECT_EQ(slurp(path("old.rc")), "1\n") << slurp(path("old.err"));
  EXPECT_TRUE(contains(slurp(path("old.err")), "cannot write ro/old.dx: it is on a read-only file system"))
      << slurp(path("old.err"));
  EXPECT_FALSE(contains(slurp(path("old.err")), "mode")) << slurp(path("old.err"));
  EXPECT_EQ(slurp(path("new.rc")), "1\n") << slurp(path("new.err"));
  EXPECT_TRUE(contains(slurp(path("new.err")), "directory ro is on a read-only file system")) << slurp(path("new.err"));
  EXPECT_EQ(slurp(path("old.after")), "old\n");
  EXPECT_EQ(slurp(path("ro.ls")), "old.dx\n");
}

// Structures as users have them: standard input ("-", with --format), a pipe, gzip (by name or
// by content). Each gives the plain file's map, bit for bit.
TEST_F(Reliability, StructuresFromStandardInputPipesAndGzipGiveTheFilesMap) {
  const std::string plain = copy_of_small("s.pqr");
  Outcome r = run(quick_map(plain, path("plain.dx")));
  ASSERT_EQ(r.code, 0) << r;
  const std::vector<float> expected = read_dx(path("plain.dx")).values;
  ASSERT_EQ(std::system(("gzip -c '" + plain + "' > '" + path("s.pqr.gz") + "' && cp '" + path("s.pqr.gz") + "' '" +
                         path("gzip-named-plain.pqr") + "'")
                            .c_str()),
            0);
  Child::Options from_file;
  from_file.stdin_from = plain;
  Child::Options from_gzip;
  from_gzip.stdin_from = path("s.pqr.gz");
  const struct {
    std::vector<std::string> args;
    std::string map;
    Child::Options options;
  } cases[] = {
      {{"map", "-", "--format", "pqr", "-o", path("stdin.dx"), "--spacing", "2", "--padding", "2"},
       "stdin.dx",
       from_file},
      {{"map", "-", "--format", "pqr", "-o", path("stdin-gz.dx"), "--spacing", "2", "--padding", "2"},
       "stdin-gz.dx",
       from_gzip},
      {quick_map(path("s.pqr.gz"), path("gz.dx")), "gz.dx", {}},
      {quick_map(path("gzip-named-plain.pqr"), path("magic.dx")), "magic.dx", {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.map);
    r = run(c.args, c.options);
    ASSERT_EQ(r.code, 0) << r;
    EXPECT_EQ(read_dx(path(c.map)).values, expected);
  }
  r = run({"map", "-", "-o", path("x.dx")}, from_file);
  expect_clean_error(r, 2, "standard input ('-') has no extension to tell its format: pass --format");
  r = run({"atoms", "-", "--format", "pqr"}, from_file);
  ASSERT_EQ(r.code, 0) << r;
  EXPECT_TRUE(contains(r.out, "38 atoms")) << r;
}

#if ESPGRID_HAVE_CUDA
// A CUDA error showed an internal source location to users ("... at kernels/device_driver.cu:90").
// Users get the call and the reason; the location is kept for developers (location(), and in
// the message with ESPGRID_DEBUG=1). Needs the CUDA runtime library, not a GPU.
TEST(CudaErrors, UsersGetTheCallAndTheReasonDevelopersTheLocation) {
  ::unsetenv("ESPGRID_DEBUG");
  try {
    cuda::throw_cuda_error(cudaErrorInvalidValue, "cudaMemcpyAsync(d_atoms, h_atoms, bytes, kind, stream)",
                           "/build/src/kernels/device_driver.cu", 90);
    FAIL() << "no throw";
  } catch (const cuda::CudaError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "CUDA call 'cudaMemcpyAsync(")) << what;
    EXPECT_TRUE(contains(what, "cudaErrorInvalidValue")) << what;
    EXPECT_FALSE(contains(what, ".cu")) << "a source location in a user's message: " << what;
    EXPECT_EQ(e.location(), "kernels/device_driver.cu:90");
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
  }
  ::setenv("ESPGRID_DEBUG", "1", 1);
  try {
    cuda::throw_cuda_error(cudaErrorInvalidValue, "cudaFree(p)", "/build/src/kernels/device_driver.cu", 91);
  } catch (const cuda::CudaError& e) {
    EXPECT_TRUE(contains(e.what(), "[at kernels/device_driver.cu:91]")) << e.what();
  }
  ::unsetenv("ESPGRID_DEBUG");
}
#endif

}  // namespace
}  // namespace espgrid
