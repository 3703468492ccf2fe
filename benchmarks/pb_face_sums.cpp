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
    std::printf(
        "bound %.0e kT/e: median %.2f ms, max |banded - exact| %.3g kT/e, measured %.3g, %.2f%% of the terms, %d "
        "round(s)\n",
        bound, 1e3 * median(seconds), worst, report.measured_error, 100.0 * report.pair_terms / report.exact_pair_terms,
        report.rounds);
  }
  return 0;
}
