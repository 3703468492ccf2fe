#include "src/pb/pb_system.h"

#include <cmath>

#include "src/core/thread_count.h"
#include "src/pb/pb_multigrid.h"

namespace espgrid::pb {

void apply_operator(const PbSystem& system, const std::vector<double>& x, std::vector<double>& y, int threads) {
  threads = threads_to_use(threads);
  const MgOperator a = operator_of(system);
  y.assign(system.size(), 0.0);
  const long* n = a.n;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = 1; k < n[2] - 1; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1; i < n[0] - 1; ++i) y[row + i] = apply_row(a, x.data(), row + i);
    }
}

double relative_residual(const PbSystem& system, const std::vector<double>& x, int threads) {
  threads = threads_to_use(threads);
  const MgOperator a = operator_of(system);
  const long* n = a.n;
  double rr = 0.0, bb = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : rr, bb) num_threads(threads)
  for (long k = 1; k < n[2] - 1; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1; i < n[0] - 1; ++i) {
        const double b = system.rhs[row + i];
        const double r = b - apply_row(a, x.data(), row + i);
        rr += r * r;
        bb += b * b;
      }
    }
  if (bb == 0.0) return std::sqrt(rr);
  return std::sqrt(rr / bb);
}

}  // namespace espgrid::pb
