#include "src/pb/pb_multigrid.h"

#include <algorithm>
#include <cmath>

#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"

namespace espgrid::pb {
namespace {

bool parallel(const long* n) { return n[0] * n[1] * n[2] >= kParallelNodes; }

/// Calls f(i, j, k, idx) for every interior node of n, planes over threads.
template <class F>
void for_interior(const long* n, int threads, F&& f) {
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel(n))
  for (long k = 1; k < n[2] - 1; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1; i < n[0] - 1; ++i) f(i, j, k, row + i);
    }
}

double dot(const long* n, const std::vector<double>& a, const std::vector<double>& b, int threads) {
  double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum) num_threads(threads) if (parallel(n))
  for (long k = 1; k < n[2] - 1; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1; i < n[0] - 1; ++i) sum += a[row + i] * b[row + i];
    }
  return sum;
}

/// A value of the V-cycle as it is stored: rounded to float in the emulation of the device's float cycle.
double stored(double v, bool single) { return single ? static_cast<double>(static_cast<float>(v)) : v; }

/// One red-black half sweep: the nodes with (i + j + k) % 2 == color.
void half_sweep(const MgLevel& level, std::vector<double>& x, const std::vector<double>& b, int color, int threads,
                bool single) {
  const MgOperator a = level.op();
  const long* n = a.n;
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel(n))
  for (long k = 1; k < n[2] - 1; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1 + ((1 + j + k + color) & 1); i < n[0] - 1; i += 2)
        x[row + i] = stored(gauss_seidel_value(a, x.data(), b.data(), row + i), single);
    }
}

/// The work vectors of one level of the V-cycle.
struct LevelWork {
  std::vector<double> x, b, r;
};

/// x = M⁻¹ b on `level` and below (x starts at 0).
void v_cycle(const std::vector<MgLevel>& levels, std::vector<LevelWork>& work, std::size_t l, const MgSettings& s,
             int threads) {
  const MgLevel& level = levels[l];
  LevelWork& w = work[l];
  const bool single = s.float_cycle;
  std::fill(w.x.begin(), w.x.end(), 0.0);
  if (l + 1 == levels.size()) {
    for (int sweep = 0; sweep < s.coarsest_sweeps; ++sweep) {
      half_sweep(level, w.x, w.b, 0, threads, single);
      half_sweep(level, w.x, w.b, 1, threads, single);
      half_sweep(level, w.x, w.b, 1, threads, single);
      half_sweep(level, w.x, w.b, 0, threads, single);
    }
    return;
  }
  for (int sweep = 0; sweep < s.smoothing; ++sweep) {
    half_sweep(level, w.x, w.b, 0, threads, single);
    half_sweep(level, w.x, w.b, 1, threads, single);
  }
  const MgOperator a = level.op();
  std::fill(w.r.begin(), w.r.end(), 0.0);
  for_interior(a.n, threads, [&](long, long, long, long idx) {
    w.r[idx] = stored(w.b[idx] - apply_row(a, w.x.data(), idx), single);
  });
  const MgLevel& coarse = levels[l + 1];
  LevelWork& cw = work[l + 1];
  const MgAxisMap maps[3] = {coarse.axes[0].view(), coarse.axes[1].view(), coarse.axes[2].view()};
  const bool coarsened[3] = {coarse.axes[0].coarsened, coarse.axes[1].coarsened, coarse.axes[2].coarsened};
  const long* nf = a.n;
  const long nc[3] = {coarse.n[0], coarse.n[1], coarse.n[2]};
  std::fill(cw.b.begin(), cw.b.end(), 0.0);
  for_interior(nc, threads, [&](long I, long J, long K, long idx) {
    cw.b[idx] = stored(restrict_value(w.r.data(), nf, maps, coarsened, I, J, K), single);
  });
  v_cycle(levels, work, l + 1, s, threads);
  for_interior(nf, threads, [&](long i, long j, long k, long idx) {
    w.x[idx] = stored(w.x[idx] + prolong_value(cw.x.data(), nc, maps, coarsened, i, j, k), single);
  });
  for (int sweep = 0; sweep < s.smoothing; ++sweep) {
    half_sweep(level, w.x, w.b, 1, threads, single);
    half_sweep(level, w.x, w.b, 0, threads, single);
  }
}

}  // namespace

MgAxis coarsen_axis(long n) {
  MgAxis axis;
  axis.coarsened = true;
  const long nc = (n - 1 + 1) / 2 + 1;  // ceil((n − 1)/2) + 1 coarse nodes
  axis.fine_of.resize(static_cast<std::size_t>(nc));
  for (long I = 0; I < nc; ++I) axis.fine_of[static_cast<std::size_t>(I)] = static_cast<int>(std::min(2 * I, n - 1));
  axis.coarse_lo.resize(static_cast<std::size_t>(n));
  axis.mid.resize(static_cast<std::size_t>(n));
  long I = 0;
  for (long f = 0; f < n; ++f) {
    while (I + 1 < nc && axis.fine_of[static_cast<std::size_t>(I + 1)] <= f) ++I;
    axis.coarse_lo[static_cast<std::size_t>(f)] = static_cast<int>(I);
    axis.mid[static_cast<std::size_t>(f)] = axis.fine_of[static_cast<std::size_t>(I)] == f ? 0 : 1;
  }
  return axis;
}

std::vector<MgLevel> hierarchy_shape(const std::array<long, 3>& dims, const MgSettings& settings) {
  std::vector<MgLevel> levels(1);
  levels[0].n = dims;
  for (;;) {
    const MgLevel& fine = levels.back();
    bool any = false;
    MgLevel coarse;
    for (int d = 0; d < 3; ++d) {
      if (fine.n[d] > settings.coarsest_nodes) {
        coarse.axes[d] = coarsen_axis(fine.n[d]);
        coarse.n[d] = static_cast<long>(coarse.axes[d].fine_of.size());
        any = true;
      } else {
        coarse.axes[d].coarsened = false;
        coarse.n[d] = fine.n[d];
      }
    }
    if (!any) break;
    levels.push_back(std::move(coarse));
  }
  return levels;
}

std::vector<MgLevel> build_hierarchy(const PbSystem& system, const MgSettings& settings, int threads) {
  threads = threads_to_use(threads);
  std::vector<MgLevel> levels =
      hierarchy_shape({static_cast<long>(system.grid.dims[0]), static_cast<long>(system.grid.dims[1]),
                       static_cast<long>(system.grid.dims[2])},
                      settings);
  levels[0].wx = system.wx;
  levels[0].wy = system.wy;
  levels[0].wz = system.wz;
  levels[0].c = system.c;
  for (std::size_t l = 1; l < levels.size(); ++l) {
    const MgLevel& fine = levels[l - 1];
    MgLevel& coarse = levels[l];
    const std::size_t size = coarse.size();
    coarse.wx.assign(size, 0.0);
    coarse.wy.assign(size, 0.0);
    coarse.wz.assign(size, 0.0);
    coarse.c.assign(size, 0.0);
    const MgAxisMap maps[3] = {coarse.axes[0].view(), coarse.axes[1].view(), coarse.axes[2].view()};
    const bool coarsened[3] = {coarse.axes[0].coarsened, coarse.axes[1].coarsened, coarse.axes[2].coarsened};
    const long nf[3] = {fine.n[0], fine.n[1], fine.n[2]};
    const long nc[3] = {coarse.n[0], coarse.n[1], coarse.n[2]};
    const MgOperator f = fine.op();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long K = 0; K < nc[2]; ++K)
      for (long J = 0; J < nc[1]; ++J)
        for (long I = 0; I < nc[0]; ++I) {
          const std::size_t idx = static_cast<std::size_t>(I + nc[0] * (J + nc[1] * K));
          coarse_node(f, nf, nc, maps, coarsened, I, J, K, coarse.wx[idx], coarse.wy[idx], coarse.wz[idx],
                      coarse.c[idx]);
          if (settings.float_cycle)  // the device pipeline's float storage, for the emulation alone
            for (std::vector<double>* v : {&coarse.wx, &coarse.wy, &coarse.wz, &coarse.c})
              (*v)[idx] = stored((*v)[idx], true);
        }
  }
  return levels;
}

std::size_t hierarchy_doubles(const std::vector<MgLevel>& levels) {
  std::size_t total = 0;
  for (const MgLevel& l : levels) total += 4 * l.size();
  return total;
}

SolveReport solve_multigrid_cpu(const PbSystem& system, std::vector<double>& u, double tolerance, int max_iterations,
                                const MgSettings& settings, int threads) {
  threads = threads_to_use(threads);
  SolveReport report;
  report.method = "espgrid multigrid-preconditioned CG (on the CPU: the GPU solver's arithmetic)";
  report.device = "CPU, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  const Stopwatch setup;
  const std::vector<MgLevel> levels = build_hierarchy(system, settings, threads);
  std::vector<LevelWork> work(levels.size());
  for (std::size_t l = 0; l < levels.size(); ++l) {
    work[l].x.assign(levels[l].size(), 0.0);
    work[l].b.assign(levels[l].size(), 0.0);
    work[l].r.assign(levels[l].size(), 0.0);
  }
  report.setup_seconds = setup.seconds();
  const Stopwatch solve;
  const std::size_t size = system.size();
  const MgOperator a = levels[0].op();
  const long* n = a.n;
  u.assign(size, 0.0);
  std::vector<double> r = system.rhs, z(size, 0.0), p(size, 0.0), q(size, 0.0);
  const double bnorm = std::sqrt(dot(n, r, r, threads));
  if (bnorm == 0.0) {
    report.converged = true;
    report.solve_seconds = solve.seconds();
    return report;
  }
  auto precondition = [&]() {
    work[0].b = r;
    if (settings.float_cycle)
      for (double& v : work[0].b) v = stored(v, true);
    v_cycle(levels, work, 0, settings, threads);
    z = work[0].x;
  };
  precondition();
  p = z;
  double rz = dot(n, r, z, threads);
  double rnorm = bnorm;
  int it = 0;
  while (it < max_iterations && rnorm > tolerance * bnorm) {
    for_interior(n, threads, [&](long, long, long, long idx) { q[idx] = apply_row(a, p.data(), idx); });
    const double pq = dot(n, p, q, threads);
    if (!(pq > 0.0))
      throw Error("PB multigrid: the operator is not positive definite (p·Ap = " + number_text(pq) + ")");
    const double alpha = rz / pq;
    for_interior(n, threads, [&](long, long, long, long idx) {
      u[idx] += alpha * p[idx];
      r[idx] -= alpha * q[idx];
    });
    ++it;
    rnorm = std::sqrt(dot(n, r, r, threads));
    if (rnorm <= tolerance * bnorm) break;
    precondition();
    const double rz_new = dot(n, r, z, threads);
    const double beta = rz_new / rz;
    rz = rz_new;
    for_interior(n, threads, [&](long, long, long, long idx) { p[idx] = z[idx] + beta * p[idx]; });
  }
  report.iterations = it;
  report.solve_seconds = solve.seconds();
  report.relative_residual = relative_residual(system, u, threads);
  report.converged = rnorm <= tolerance * bnorm;  // the recursion's residual decided; the reported one is recomputed
  return report;
}

MgOperator operator_of(const PbSystem& s) {
  MgOperator a;
  for (int d = 0; d < 3; ++d) a.n[d] = static_cast<long>(s.grid.dims[d]);
  a.wx = s.wx.data();
  a.wy = s.wy.data();
  a.wz = s.wz.data();
  a.c = s.c.data();
  return a;
}

std::vector<cuda::PbMgLevel> device_levels(const std::vector<MgLevel>& shape) {
  std::vector<cuda::PbMgLevel> levels(shape.size());
  for (std::size_t l = 0; l < shape.size(); ++l)
    for (int d = 0; d < 3; ++d) {
      const MgAxis& axis = shape[l].axes[static_cast<std::size_t>(d)];
      levels[l].n[d] = shape[l].n[static_cast<std::size_t>(d)];
      levels[l].coarsened[d] = l > 0 && axis.coarsened;
      levels[l].fine_of[d] = axis.fine_of.data();
      levels[l].coarse_lo[d] = axis.coarse_lo.data();
      levels[l].mid[d] = axis.mid.data();
    }
  return levels;
}

}  // namespace espgrid::pb
