// Stand-in for cpu-simd in a build without Google Highway (ESPGRID_SIMD=OFF or libhwy-dev not
// found): the entry stays in the registry and says why it cannot run; cpu-parallel is the default.
#include "src/compute/simd_kernel.h"
#include "src/core/errors.h"

namespace espgrid::cpu {

namespace {
constexpr const char* kReason =
    "this espgrid was built without Google Highway (libhwy-dev not found, or ESPGRID_SIMD=OFF): cpu-simd is "
    "unavailable";
}

void simd(const GridSumProblem&, int, const ProgressFn&) { throw Error(kReason); }
std::string simd_target() { return "none"; }
SimdCeiling measure_simd_ceiling(int) { throw Error(kReason); }

}  // namespace espgrid::cpu
