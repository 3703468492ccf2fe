#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
#include "src/core/grid.h"
#include "tests/resident_pages.h"

namespace espgrid {
namespace {

Atoms two_atoms() {
  Atoms atoms;
  atoms.push_back(-3.0, 2.0, 10.0, 1.0, 1.5);
  atoms.push_back(4.3, 7.1, 12.0, -1.0, 1.5);
  return atoms;
}

TEST(Grid, PaddingCoversTheBoxOnEverySide) {
  const Atoms atoms = two_atoms();
  GridRequest request;
  request.spacing = {0.5, 0.4, 0.3};
  request.padding = 5.0;
  const GridSpec g = make_grid(request, atoms);
  const double lo[3] = {-3.0, 2.0, 10.0}, hi[3] = {4.3, 7.1, 12.0};
  for (int a = 0; a < 3; ++a) {
    const double first = g.origin[a], last = g.position(a, g.dims[a] - 1);
    EXPECT_LE(first, lo[a] - 5.0 + 1e-6) << "axis " << a;
    EXPECT_GE(last, hi[a] + 5.0 - 1e-6) << "axis " << a;
    // On the lattice of the spacing (to the 1e-6 Å the origin is rounded to; an .mrc's NXSTART
    // carries it), with less than one spacing of slack on either side.
    const double voxels = first / request.spacing[a];
    EXPECT_NEAR(first, std::round(voxels) * request.spacing[a], 1e-6) << "axis " << a;
    EXPECT_LT(lo[a] - 5.0 - first, request.spacing[a]) << "axis " << a;
    EXPECT_LT(last - (hi[a] + 5.0), request.spacing[a]) << "axis " << a;
  }
  // x: -8 to 9.3 Å → lattice points -8 (-16 × 0.5) to 9.5 (19 × 0.5) → 36 points
  EXPECT_EQ(g.dims[0], 36);
  EXPECT_EQ(g.origin[0], -8.0);
  // z: 5 to 17 Å at 0.3 → 5.1 (17 × 0.3) would miss 5: 4.8 (16 × 0.3) to 17.1 (57 × 0.3) → 42 points
  EXPECT_EQ(g.origin[2], 4.8);
  EXPECT_EQ(g.dims[2], 42);
  EXPECT_EQ(g.point_count(), static_cast<std::size_t>(g.dims[0] * g.dims[1] * g.dims[2]));
}

TEST(Grid, ExplicitOriginAndDimsAreUsedAsGiven) {
  GridRequest request;
  request.origin = std::array<double, 3>{-1.5, 2.25, 3.0};
  request.dims = std::array<std::int64_t, 3>{7, 1, 300};
  request.spacing = {0.25, 0.25, 0.25};
  const GridSpec g = make_grid(request, two_atoms());
  EXPECT_EQ(g.dims, (std::array<std::int64_t, 3>{7, 1, 300}));
  EXPECT_EQ(g.origin, (std::array<double, 3>{-1.5, 2.25, 3.0}));
  EXPECT_DOUBLE_EQ(g.position(2, 4), 4.0);
}

TEST(Grid, RejectsImpossibleRequests) {
  const Atoms atoms = two_atoms();
  for (double spacing : {0.0, -0.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    GridRequest r;
    r.spacing = {0.5, spacing, 0.5};
    EXPECT_THROW(make_grid(r, atoms), UsageError) << spacing;
  }
  for (double padding : {-1.0, std::nan("")}) {
    GridRequest r;
    r.padding = padding;
    EXPECT_THROW(make_grid(r, atoms), UsageError) << padding;
  }
  GridRequest only_dims;
  only_dims.dims = std::array<std::int64_t, 3>{2, 2, 2};
  EXPECT_THROW(make_grid(only_dims, atoms), UsageError);
  GridRequest zero_dims;
  zero_dims.dims = std::array<std::int64_t, 3>{0, 2, 2};
  zero_dims.origin = std::array<double, 3>{0, 0, 0};
  EXPECT_THROW(make_grid(zero_dims, atoms), UsageError);
  GridRequest huge;
  huge.spacing = {1e-6, 1e-6, 1e-6};
  try {
    make_grid(huge, atoms);
    FAIL() << "a grid of 2e7 points per axis was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--spacing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_grid(GridRequest{}, Atoms{}), UsageError);
}

TEST(Grid, RefusesAMapThatDoesNotFitBeforeAllocating) {
  GridSpec g;
  g.dims = {1000, 1000, 1000};  // 4 GB of floats
  g.spacing = {0.5, 0.5, 0.5};
  try {
    check_grid_fits(g, std::size_t{1} << 30);  // pretend 1 GiB is available
    FAIL() << "accepted a 3.7 GiB map with 1 GiB available";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3.7 GiB"), std::string::npos) << what;
    EXPECT_NE(what.find("1000 x 1000 x 1000"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(check_grid_fits(g, std::size_t{64} << 30));
}

TEST(Grid, DescribesItself) {
  GridSpec g;
  g.dims = {97, 97, 97};
  EXPECT_EQ(describe(g), "97 x 97 x 97 = 912,673 points");
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(1000), "1,000");
  EXPECT_EQ(human_bytes(3.5 * 1024 * 1024), "3.5 MiB");
}

/// Every value of `values` is NaN.
template <class T>
bool all_nan(const std::vector<T>& values) {
  for (const T v : values)
    if (!std::isnan(v)) return false;
  return true;
}

// The poisoned buffers a solve or kernel must overwrite: sized, every value NaN, whether the
// pages were faulted in by several threads (from 64 MiB) or assigned by one, fresh or reused.
TEST(BulkMemory, PoisonedBuffersAreNanAndZeroedOnesZeroEverywhere) {
  for (const std::size_t count : {std::size_t{0}, std::size_t{1000}, std::size_t{(80u << 20) / 8 + 7}}) {
    std::vector<double> d = {1.0, 2.0};
    assign_poisoned(d, count);
    EXPECT_EQ(d.size(), count);
    EXPECT_TRUE(all_nan(d)) << count;
    std::vector<float> f(count + 5, 3.0f);  // enough capacity: reused
    assign_poisoned(f, count);
    EXPECT_EQ(f.size(), count);
    EXPECT_TRUE(all_nan(f)) << count;
    std::vector<float> fresh;
    assign_poisoned(fresh, 2 * count);
    EXPECT_EQ(fresh.size(), 2 * count);
    EXPECT_TRUE(all_nan(fresh)) << count;
    std::vector<double> zeros = {std::nan("")};
    assign_zeros(zeros, count);
    EXPECT_EQ(zeros.size(), count);
    EXPECT_TRUE(std::all_of(zeros.begin(), zeros.end(), [](double v) { return v == 0.0 && !std::signbit(v); }));
  }
}

/// assign_zeros_resident: every value 0 and writable, the pages wholly outside the kept range not
/// resident (mincore, before anything reads them: a read maps the kernel's zero page), the kept ones
/// resident. Huge pages off (testing::NoHugePages); a page is left out at each end of the kept range.
TEST(BulkMemory, AZeroedShareKeepsOnlyItsPagesResident) {
#if defined(__linux__)
  const testing::NoHugePages small_pages;
  const std::size_t count = (std::size_t{48} << 20) / sizeof(double), first = count / 3 + 5, end = count / 2 + 3;
  std::vector<double> values = {1.0, 2.0};
  assign_zeros_resident(values, count, first, end);
  ASSERT_EQ(values.size(), count);
  const double* v = values.data();
  const std::size_t margin = static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / sizeof(double);
  EXPECT_EQ(testing::resident_pages(v, v + first - margin).resident, 0u);
  EXPECT_EQ(testing::resident_pages(v + end + margin, v + count).resident, 0u);
  const testing::PageCount kept = testing::resident_pages(v + first + margin, v + end - margin);
  EXPECT_GT(kept.total, 0u);
  EXPECT_EQ(kept.resident, kept.total) << "the kept values must stay resident (and mincore must see them)";
  EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](double x) { return x == 0.0 && !std::signbit(x); }));
  values[0] = 3.0;  // a released page takes memory again once written
  values[count - 1] = 4.0;
  EXPECT_EQ(values[0] + values[count - 1], 7.0);
  std::vector<double> whole;
  assign_zeros_resident(whole, 1000, 0, 1000);  // nothing to release
  EXPECT_EQ(whole, std::vector<double>(1000, 0.0));
#else
  GTEST_SKIP() << "the pages are released on Linux only";
#endif
}

/// release_outside: an array of values (not zeros) keeps its share resident, its values intact, and
/// hands every whole page outside back (what a rank does with the system's fixed values once assembled).
TEST(BulkMemory, ReleasingOutsideAShareKeepsItsValuesAndDropsTheRest) {
#if defined(__linux__)
  const testing::NoHugePages small_pages;
  const std::size_t count = (std::size_t{24} << 20) / sizeof(double), first = count / 4 + 7, end = count / 2 + 1;
  std::vector<double> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = 1.0 + static_cast<double>(i % 1000);
  release_outside(values, first, end);
  const double* v = values.data();
  const std::size_t margin = static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / sizeof(double);
  EXPECT_EQ(testing::resident_pages(v, v + first - margin).resident, 0u);
  EXPECT_EQ(testing::resident_pages(v + end + margin, v + count).resident, 0u);
  std::size_t wrong = 0;
  for (std::size_t i = first; i < end; ++i) wrong += values[i] != 1.0 + static_cast<double>(i % 1000);
  EXPECT_EQ(wrong, 0u) << "the share's values must stay";
  release_outside(values, 0, count);  // nothing outside: nothing changes
  EXPECT_EQ(values[first], 1.0 + static_cast<double>(first % 1000));
#else
  GTEST_SKIP() << "the pages are released on Linux only";
#endif
}

}  // namespace
}  // namespace espgrid
