// The nonlinear PB solver's place until it lands (src/pb/pb_nonlinear.cpp defines the same
// function; that file replaces this one: delete this file and its CMake line then).
#include "src/core/errors.h"
#include "src/pb/pb_solve.h"

namespace espgrid::pb {

SolveReport solve_nonlinear(PbSystem&, std::vector<double>&, const PbOptions&, const std::vector<double>*, PbSolver,
                            int, bool, int) {
  throw Error(
      "the nonlinear Poisson-Boltzmann equation (npbe, --pb-equation npbe) is not available in this espgrid "
      "yet; solve the linearized one (lpbe)");
}

}  // namespace espgrid::pb
