#include "src/pb/pb_system.h"

#include <algorithm>
#include <cmath>

#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
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
  if (!system.whole()) throw Error("internal error: the residual of a whole grid from a rank's share of its system");
  return relative_residual(residual_sums(system, x, system.planes, threads));
}

double relative_residual(const ResidualSums& sums) {
  if (sums.bb == 0.0) return std::sqrt(sums.rr);
  return std::sqrt(sums.rr / sums.bb);
}

ResidualSums residual_sums(const PbSystem& system, const std::vector<double>& x, PlaneRange planes, int threads) {
  threads = threads_to_use(threads);
  const MgOperator a = operator_of(system);
  const long* n = a.n;
  const long first = std::max(1L, planes.first), end = std::min(n[2] - 1, planes.end);
  if (first < end && (first < system.planes.first || end > system.planes.end))
    throw Error("internal error: the residual over planes the system was not assembled on");
  double rr = 0.0, bb = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : rr, bb) num_threads(threads)
  for (long k = first; k < end; ++k)
    for (long j = 1; j < n[1] - 1; ++j) {
      const long row = n[0] * (j + n[1] * k);
      for (long i = 1; i < n[0] - 1; ++i) {
        const double b = system.rhs[row + i];
        const double r = b - apply_row(a, x.data(), row + i);
        rr += r * r;
        bb += b * b;
      }
    }
  return {rr, bb};
}

AssemblyArgs assembly_args(const GridSpec& g, const PbOptions& o, bool split) {
  AssemblyArgs a;
  for (int d = 0; d < 3; ++d) a.n[d] = static_cast<long>(g.dims[d]);
  const double hx = g.spacing[0], hy = g.spacing[1], hz = g.spacing[2];
  a.geo[0] = hy * hz / hx;
  a.geo[1] = hx * hz / hy;
  a.geo[2] = hx * hy / hz;
  const double kappa = pb_kappa(o);
  a.mass = o.solvent_dielectric * kappa * kappa * (hx * hy * hz);  // APBS zkappa2 · volume
  a.zmagic = source_scale(o.temperature);
  a.eps_p = o.solute_dielectric;
  a.split = split;
  return a;
}

namespace {

/// The system's rows and right-hand side (not `fixed`): the two assemble_system's shared part.
PbSystem assemble_rows(const PbCoefficients& coef, const std::vector<double>& boundary, const PbOptions& o,
                       PbFormulation formulation, const std::vector<double>* coulomb, int threads) {
  threads = threads_to_use(threads);
  const GridSpec& g = coef.grid;
  const bool split = formulation == PbFormulation::Split;
  if (split && (!coulomb || coulomb->size() != g.point_count()))
    throw Error("internal error: the split formulation needs the Coulomb map");
  if (!split && coef.charge.size() != g.point_count())
    throw Error("internal error: the direct formulation needs the spread charges");
  PbSystem s;
  s.grid = g;
  const PlaneRange built{std::max(0L, coef.planes.first), std::min(static_cast<long>(g.dims[2]), coef.planes.end)};
  s.planes = {built.first == 0 ? 0 : std::min(built.first + 1, built.end), built.end};
  if (boundary.size() != g.point_count()) throw Error("internal error: the boundary values are not the grid's");
  const std::size_t size = g.point_count(), plane = g.dims[0] * g.dims[1];
  // A rank's share keeps its rows resident (bulk_memory.h).
  const auto rows = [&](PlaneRange planes) { return std::pair{plane * planes.first, plane * planes.end}; };
  for (std::vector<double>* w : {&s.wx, &s.wy, &s.wz, &s.c})
    assign_zeros_resident(*w, size, rows(built).first, rows(built).second);
  assign_zeros_resident(s.rhs, size, rows(s.planes).first, rows(s.planes).second);
  AssemblyArgs a = assembly_args(g, o, split);
  a.eps_x = coef.eps_x.data();
  a.eps_y = coef.eps_y.data();
  a.eps_z = coef.eps_z.data();
  a.accessibility = coef.accessibility.data();
  a.charge = split ? nullptr : coef.charge.data();
  a.coulomb = split ? coulomb->data() : nullptr;
  a.boundary = boundary.data();
  a.wx = s.wx.data();
  a.wy = s.wy.data();
  a.wz = s.wz.data();
  a.c = s.c.data();
  a.rhs = s.rhs.data();
  const long* n = a.n;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = built.first; k < built.end; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) assemble_coefficients(a, i, j, k);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = s.planes.first; k < s.planes.end; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) assemble_rhs(a, i, j, k);
  return s;
}

}  // namespace

PbSystem assemble_system(const PbCoefficients& coef, const std::vector<double>& boundary, const PbOptions& o,
                         PbFormulation formulation, const std::vector<double>* coulomb, int threads) {
  PbSystem s = assemble_rows(coef, boundary, o, formulation, coulomb, threads);
  const long n[3] = {static_cast<long>(s.grid.dims[0]), static_cast<long>(s.grid.dims[1]),
                     static_cast<long>(s.grid.dims[2])};
  s.fixed.assign(s.size(), 0.0);
#pragma omp parallel for schedule(static) num_threads(threads_to_use(threads))
  for (long k = 0; k < n[2]; ++k)  // the boundary values on all six faces, whatever the planes: combine() reads them
    for (long j = 0; j < n[1]; ++j) {
      const bool whole_row = k == 0 || k == n[2] - 1 || j == 0 || j == n[1] - 1;
      for (long i = 0; i < n[0]; i += whole_row ? 1 : n[0] - 1) {
        const std::size_t idx = static_cast<std::size_t>(i + n[0] * (j + n[1] * k));
        s.fixed[idx] = boundary[idx];
      }
    }
  return s;
}

PbSystem assemble_system(const PbCoefficients& coef, std::vector<double>&& boundary, const PbOptions& o,
                         PbFormulation formulation, const std::vector<double>* coulomb, int threads) {
  PbSystem s = assemble_rows(coef, boundary, o, formulation, coulomb, threads);
  s.fixed = std::move(boundary);  // its faces are the fixed values; nothing reads its interior
  return s;
}

std::vector<double> combine(const PbSystem& s, const std::vector<double>& u, const std::vector<double>* coulomb,
                            int threads) {
  threads = threads_to_use(threads);
  std::vector<double> phi(s.size());
  const long n[3] = {static_cast<long>(s.grid.dims[0]), static_cast<long>(s.grid.dims[1]),
                     static_cast<long>(s.grid.dims[2])};
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i)
        phi[static_cast<std::size_t>(i + n[0] * (j + n[1] * k))] =
            combined_value(n, s.fixed.data(), u.data(), coulomb ? coulomb->data() : nullptr, i, j, k);
  return phi;
}

}  // namespace espgrid::pb
