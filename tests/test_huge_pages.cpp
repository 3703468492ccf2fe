// The restart with transparent huge pages (src/os/huge_pages.h): which runs restart, and that a
// restarted PB run gives the map of a run with 4 KiB pages and leaves the user's choice alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/maps/map_formats.h"
#include "src/os/huge_pages.h"
#include "tests/child_process.h"

namespace espgrid {
namespace {

using testing::contains;
using testing::Outcome;

bool restarts(const HugePageHost& host, std::vector<const char*> args) {
  args.insert(args.begin(), "espgrid");
  return restart_for_huge_pages(host, static_cast<int>(args.size()), args.data());
}

HugePageHost madvise_host() {
  HugePageHost host;
  host.glibc_has_tunable = true;
  host.thp_mode = "madvise";
  return host;
}

TEST(HugePages, OnlyRunsThatSolvePbRestart) {
  const HugePageHost host = madvise_host();
  EXPECT_TRUE(restarts(host, {"apbs", "x.in"}));
  EXPECT_TRUE(restarts(host, {"map", "x.pqr", "--model", "pb", "-o", "x.dx"}));
  EXPECT_TRUE(restarts(host, {"map", "x.pqr", "--model=pb"}));
  EXPECT_FALSE(restarts(host, {"map", "x.pqr", "--model", "coulomb"}));
  EXPECT_FALSE(restarts(host, {"map", "x.pqr", "--model"}));  // cxxopts names the missing value
  EXPECT_FALSE(restarts(host, {"map", "pb.pqr"}));
  EXPECT_FALSE(restarts(host, {"kernels"}));
  EXPECT_FALSE(restarts(host, {}));
}

TEST(HugePages, TheHostAndTheUserDecideToo) {
  HugePageHost host = madvise_host();
  const std::vector<const char*> pb = {"apbs", "x.in"};
  host.thp_mode = "always";  // every large block has them already
  EXPECT_FALSE(restarts(host, pb));
  host.thp_mode = "never";
  EXPECT_FALSE(restarts(host, pb));
  host = madvise_host();
  host.tunables_set = true;  // the user's GLIBC_TUNABLES stays as given
  EXPECT_FALSE(restarts(host, pb));
  host = madvise_host();
  host.switched_off = true;  // ESPGRID_HUGE_PAGES=0
  EXPECT_FALSE(restarts(host, pb));
  host = madvise_host();
  host.glibc_has_tunable = false;  // glibc < 2.35
  EXPECT_FALSE(restarts(host, pb));
}

class HugePagesRun : public testing::ScratchDirTest {
 protected:
  Outcome pb_map(const std::string& out, const std::map<std::string, std::optional<std::string>>& env) {
    testing::Child::Options options;
    options.env = env;
    options.env["ESPGRID_TRACE_PROCESS"] = "1";
    return run({"map", "tests/data/pqr_whitespace.pqr", "--model", "pb", "--backend", "cpu", "--spacing", "1",
                "--padding", "6", "-o", path(out)},
               options);
  }
};

// A restarted run says so in its trace and writes the map of a run that did not restart; the
// user's own GLIBC_TUNABLES and ESPGRID_HUGE_PAGES=0 keep it from restarting.
TEST_F(HugePagesRun, ARestartedPbMapIsTheSameMap) {
  const Outcome restarted = pb_map("huge.dx", {{"GLIBC_TUNABLES", std::nullopt}, {"ESPGRID_HUGE_PAGES", std::nullopt}});
  ASSERT_EQ(restarted.code, 0) << restarted;
  HugePageHost host = this_host_for_huge_pages();
  host.tunables_set = false;  // as the child sees it: both variables unset for it
  host.switched_off = false;
#if defined(__SANITIZE_ADDRESS__)
  const bool expected = false;  // the sanitizer's allocator ignores glibc's tunables: no restart
#else
  const bool expected = restart_for_huge_pages(host, 3, std::vector<const char*>{"espgrid", "apbs", "x"}.data());
#endif
  EXPECT_EQ(contains(restarted.err, "restarted with glibc.malloc.hugetlb=1"), expected)
      << "THP mode '" << host.thp_mode << "'\n"
      << restarted;
  const Outcome off = pb_map("small.dx", {{"ESPGRID_HUGE_PAGES", "0"}, {"GLIBC_TUNABLES", std::nullopt}});
  ASSERT_EQ(off.code, 0) << off;
  EXPECT_FALSE(contains(off.err, "restarted with")) << off;
  const Outcome user = pb_map("user.dx", {{"GLIBC_TUNABLES", "glibc.malloc.arena_max=2"}});
  ASSERT_EQ(user.code, 0) << user;
  EXPECT_FALSE(contains(user.err, "restarted with")) << user;
  // The same solve with other pages: the same bits (the multigrid is deterministic).
  EXPECT_EQ(read_dx(path("huge.dx")).values, read_dx(path("small.dx")).values);
  EXPECT_EQ(read_dx(path("user.dx")).values, read_dx(path("small.dx")).values);
}

}  // namespace
}  // namespace espgrid
