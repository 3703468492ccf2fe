// The boundary's multiple Debye–Hückel values (bcfl mdh, 0.15 M, APBS's defaults) by distance
// bands (`--boundary-accuracy`, src/pb/pb_face_sums.h) against the exact sum over every face node:
// times (medians, the first call apart: it carries CUDA's start), the largest difference from
// the exact values beside the error the bands measured, and the share of the exact sum's terms.
// Built on request only (`cmake --build BUILD --target pb_face_sums`), never by CI.
//
//   pb_face_sums STRUCTURE.pqr SPACING PADDING cpu|cuda [BOUNDS (comma-separated kT/e, default 1e-5)] [REPEATS]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "src/pb/pb_boundary.h"
#include "src/pb/pb_pipeline.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/structure_reader.h"

namespace {

using namespace espgrid;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The face values and the seconds of each of `repeats` calls.
std::vector<double> faces(const Atoms& atoms, const GridSpec& grid, const PbOptions& o, bool cuda, int repeats,
                          std::vector<double>& seconds, pb::FaceSumReport& report) {
  std::vector<double> values;
  RunOptions run;
  const KernelVariant& kernel = default_kernel(cuda ? Backend::Cuda : Backend::Cpu);
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    values = cuda ? pb::mdh_face_values(atoms, grid, o, 0, &report)
                  : pb::face_values(pb::mdh_boundary(atoms, grid, o, kernel, run, &report), grid);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: pb_face_sums STRUCTURE.pqr SPACING PADDING cpu|cuda [BOUNDS] [REPEATS]\n");
    return 2;
  }
  const Atoms atoms = read_structure(argv[1], StructureFormat::Pqr).atoms;
  GridRequest request;
  request.spacing.fill(std::atof(argv[2]));
  request.padding = std::atof(argv[3]);
  const GridSpec grid = make_grid(request, atoms);
  const bool cuda = std::string(argv[4]) == "cuda";
  std::vector<double> bounds;
  std::stringstream list(argc > 5 ? argv[5] : "1e-5");
  for (std::string item; std::getline(list, item, ',');) bounds.push_back(std::atof(item.c_str()));
  const int repeats = argc > 6 ? std::atoi(argv[6]) : 3;
  std::printf("%zu atoms, grid %lld x %lld x %lld at %g A, %s\n", atoms.size(), static_cast<long long>(grid.dims[0]),
              static_cast<long long>(grid.dims[1]), static_cast<long long>(grid.dims[2]), grid.spacing[0], argv[4]);
  PbOptions o;
  o.boundary_accuracy = 0;
  const PbOptions grid_options = o;
  const std::vector<std::size_t> nodes = pb::boundary_nodes(grid);
  const auto n0 = static_cast<std::size_t>(grid.dims[0]), n1 = static_cast<std::size_t>(grid.dims[1]);
  std::vector<double> exact_seconds;
  pb::FaceSumReport none;
  const std::vector<double> exact = faces(atoms, grid, o, cuda, repeats + 1, exact_seconds, none);
  exact_seconds.erase(exact_seconds.begin());
  double largest = 0;
  for (const double v : exact) largest = std::max(largest, std::abs(v));
  std::printf("exact: %zu face nodes, median %.2f ms (first call %.2f ms), max |value| %.4g kT/e\n", exact.size(),
              1e3 * median(exact_seconds), 1e3 * exact_seconds.front(), largest);
  for (const double bound : bounds) {
    o.boundary_accuracy = bound;
    std::vector<double> seconds;
    pb::FaceSumReport report;
    const std::vector<double> banded = faces(atoms, grid, o, cuda, repeats, seconds, report);
    double worst = 0;
    for (std::size_t i = 0; i < exact.size(); ++i) worst = std::max(worst, std::abs(banded[i] - exact[i]));
    // The 20 nodes where the two differ most, against the double-precision sum (the float32 exact
    // sum over millions of atoms carries rounding of its own).
    std::vector<std::size_t> order(exact.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const std::size_t top = std::min<std::size_t>(20, order.size());
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
        [&](std::size_t a, std::size_t b) { return std::abs(banded[a] - exact[a]) > std::abs(banded[b] - exact[b]); });
    double banded_vs_double = 0, exact_vs_double = 0;
    for (std::size_t t = 0; t < top; ++t) {
      const std::size_t idx = nodes[order[t]];
      const std::array<double, 3> p = {grid.position(0, static_cast<std::int64_t>(idx % n0)),
                                       grid.position(1, static_cast<std::int64_t>((idx / n0) % n1)),
                                       grid.position(2, static_cast<std::int64_t>(idx / (n0 * n1)))};
      const double reference = pb::mdh_reference(atoms, grid_options, p);
      banded_vs_double = std::max(banded_vs_double, std::abs(banded[order[t]] - reference));
      exact_vs_double = std::max(exact_vs_double, std::abs(exact[order[t]] - reference));
    }
    std::printf("  at the %zu nodes where they differ most, against the double sum: banded %.3g, exact %.3g kT/e\n",
                top, banded_vs_double, exact_vs_double);
    std::printf(
        "bound %.0e kT/e: median %.2f ms, max |banded - exact| %.3g kT/e, measured %.3g, %.2f%% of the terms, %d "
        "round(s)\n",
        bound, 1e3 * median(seconds), worst, report.measured_error, 100.0 * report.pair_terms / report.exact_pair_terms,
        report.rounds);
    std::printf(
        "  the last call: plan %.1f ms, sums %.1f ms (device kernels %.1f ms), checks %.1f ms, assembly %.1f ms\n",
        1e3 * report.plan_seconds, 1e3 * report.sum_seconds, 1e3 * report.device_seconds, 1e3 * report.check_seconds,
        1e3 * report.assemble_seconds);
  }
  return 0;
}
