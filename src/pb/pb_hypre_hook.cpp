// The hypre solver's slot in espgrid_core: pb_hypre.cpp (target espgrid_hypre, linked whole into
// the programs that solve PB on the CPU) fills it at load time; everything else sees "unavailable".
#include <algorithm>

#include "src/core/errors.h"
#include "src/pb/pb_hypre.h"

namespace espgrid::pb {
namespace {

HypreSolveFn& slot() {
  static HypreSolveFn solve = nullptr;  // a function-local static: safe whatever the load order
  return solve;
}
HyprePlanesFn& planes_slot() {
  static HyprePlanesFn planes = nullptr;
  return planes;
}
HypreShareFn& share_slot() {
  static HypreShareFn share = nullptr;
  return share;
}

}  // namespace

void register_hypre_solver(HypreSolveFn solve, HyprePlanesFn planes_read, HypreShareFn face_sums) {
  slot() = solve;
  planes_slot() = planes_read;
  share_slot() = face_sums;
}

FaceSumShare hypre_face_sum_share(bool across_ranks) {
  if (!across_ranks || !share_slot()) return {};
  return share_slot()();
}

int hypre_rank(bool across_ranks) { return hypre_face_sum_share(across_ranks).rank; }

bool hypre_ranks_build_their_planes(const PbOptions& options, bool maps_need_coefficients) {
  return options.equation != PbEquation::Nonlinear && options.energy.level != PbEnergyLevel::Components &&
         !maps_need_coefficients;
}

PlaneRange hypre_coefficient_planes(const GridSpec& grid, bool across_ranks) {
  if (!across_ranks || !planes_slot()) return all_planes(grid);
  const PlaneRange read = planes_slot()(grid);
  return read.first < read.end ? PlaneRange{std::max(0L, read.first - 1), read.end} : read;
}

bool hypre_available(std::string* reason) {
  if (slot()) return true;
  if (reason)
    *reason = ESPGRID_HAVE_HYPRE
                  ? "this program was linked without espgrid's hypre solver (CMake target espgrid_hypre); "
                    "the espgrid program and the Python module have it"
                  : "this espgrid was built without hypre, the CPU Poisson-Boltzmann solver (Debian: apt-get "
                    "install libhypre-dev, then rebuild); --model pb runs on a CUDA GPU (--backend cuda) instead";
  return false;
}

SolveReport solve_hypre(const PbSystem& system, std::vector<double>& u, double tolerance, int max_iterations,
                        int threads, bool across_ranks, HypreSolution where) {
  std::string reason;
  if (!hypre_available(&reason)) throw Error(reason);
  return slot()(system, u, tolerance, max_iterations, threads, across_ranks, where);
}

}  // namespace espgrid::pb
