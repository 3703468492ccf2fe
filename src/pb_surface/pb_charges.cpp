#include "src/pb_surface/pb_charges.h"

#include <algorithm>
#include <cmath>

#include "src/core/bulk_memory.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_numerics/pb_pipeline_math.h"

namespace espgrid::pb {
namespace {

/// How far outside the grid's box (in spacings) an atom may lie and still spread charge: APBS's
/// "on the mesh" test of each method (strictly inside the widened box).
double margin(PbChargeMethod method) {
  switch (method) {
    case PbChargeMethod::Spl0:
      return 0.0;
    case PbChargeMethod::Spl2:
      return 1.0;
    case PbChargeMethod::Spl4:
      return 2.0;
  }
  return 0.0;
}

/// The fractional index of the atom along each axis.
void fractional(const GridSpec& g, double x, double y, double z, double f[3]) {
  f[0] = (x - g.origin[0]) / g.spacing[0];
  f[1] = (y - g.origin[1]) / g.spacing[1];
  f[2] = (z - g.origin[2]) / g.spacing[2];
}

/// The z-planes a spread writes: [first, end).
struct Planes {
  long first = 0, end = 0;
};

/// fillcoChargeSpline1: the 8 nodes around the charge, trilinear weights.
void spread_spl0(const GridSpec& g, const double f[3], double q, Planes planes, std::vector<double>& out) {
  const long n0 = static_cast<long>(g.dims[0]), n1 = static_cast<long>(g.dims[1]);
  long lo[3], hi[3];
  double d[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = static_cast<long>(std::floor(f[a]));
    hi[a] = static_cast<long>(std::ceil(f[a]));
    d[a] = f[a] - static_cast<double>(lo[a]);
  }
  double outside = 0;  // an update off the planes lands here
  const auto at = [&](long i, long j, long k) -> double& {
    return k >= planes.first && k < planes.end ? out[static_cast<std::size_t>(i + n0 * (j + n1 * k))] : outside;
  };
  // APBS's order of the eight updates (the sums round alike).
  at(hi[0], hi[1], hi[2]) += d[0] * d[1] * d[2] * q;
  at(hi[0], lo[1], hi[2]) += d[0] * (1.0 - d[1]) * d[2] * q;
  at(hi[0], hi[1], lo[2]) += d[0] * d[1] * (1.0 - d[2]) * q;
  at(hi[0], lo[1], lo[2]) += d[0] * (1.0 - d[1]) * (1.0 - d[2]) * q;
  at(lo[0], hi[1], hi[2]) += (1.0 - d[0]) * d[1] * d[2] * q;
  at(lo[0], lo[1], hi[2]) += (1.0 - d[0]) * (1.0 - d[1]) * d[2] * q;
  at(lo[0], hi[1], lo[2]) += (1.0 - d[0]) * d[1] * (1.0 - d[2]) * q;
  at(lo[0], lo[1], lo[2]) += (1.0 - d[0]) * (1.0 - d[1]) * (1.0 - d[2]) * q;
}

/// fillcoChargeSpline2 (reach 1) and fillcoPermanentMultipole's charge part (reach 2): the nodes
/// floor(f) − reach .. ceil(f) + reach that exist, B-spline weights.
template <int Reach>
void spread_bspline(const GridSpec& g, const double f[3], double q, Planes planes, std::vector<double>& out) {
  const long n[3] = {static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])};
  long lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::max(0L, static_cast<long>(std::floor(f[a])) - Reach);
    hi[a] = std::min(n[a] - 1, static_cast<long>(std::ceil(f[a])) + Reach);
  }
  lo[2] = std::max(lo[2], planes.first);
  hi[2] = std::min(hi[2], planes.end - 1);
  const auto weight = [&](long node, int a) {
    return Reach == 1 ? bspline2(1.5 + static_cast<double>(node) - f[a])
                      : bspline4(2.5 + static_cast<double>(node) - f[a]);
  };
  for (long i = lo[0]; i <= hi[0]; ++i) {
    const double mx = weight(i, 0);
    for (long j = lo[1]; j <= hi[1]; ++j) {
      const double my = weight(j, 1);
      for (long k = lo[2]; k <= hi[2]; ++k) {
        const double mz = weight(k, 2);
        // spl2 multiplies q·mx·my·mz, spl4 mx·my·mz·q (APBS's orders).
        out[static_cast<std::size_t>(i + n[0] * (j + n[1] * k))] += Reach == 1 ? q * mx * my * mz : mx * my * mz * q;
      }
    }
  }
}

}  // namespace

double bspline4(double x) { return bspline4_weight(x); }  // shared with the device (pb_pipeline_math.h)

bool charge_on_grid(double x, double y, double z, const GridSpec& g, PbChargeMethod method) {
  const double p[3] = {x, y, z};
  const double reach = margin(method);
  for (int a = 0; a < 3; ++a) {
    const double lo = g.origin[a] - reach * g.spacing[a];
    const double hi = g.origin[a] + static_cast<double>(g.dims[a] - 1) * g.spacing[a] + reach * g.spacing[a];
    if (!(p[a] > lo && p[a] < hi)) return false;
  }
  return true;
}

std::vector<double> spread_charges(const Atoms& atoms, const GridSpec& grid, PbChargeMethod method) {
  return spread_charges_on_planes(atoms, grid, method, 0, static_cast<long>(grid.dims[2]));
}

std::vector<double> spread_charges_on_planes(const Atoms& atoms, const GridSpec& grid, PbChargeMethod method,
                                             long first_plane, long end_plane) {
  const Planes planes{std::max(0L, first_plane), std::min(static_cast<long>(grid.dims[2]), end_plane)};
  const std::size_t plane = grid.dims[0] * grid.dims[1];
  std::vector<double> out;
  // 414 MB for 51.8 M nodes: its pages faulted in by several cores, the planes' alone
  assign_zeros_resident(out, grid.point_count(), plane * static_cast<std::size_t>(std::max(0L, planes.first)),
                        plane * static_cast<std::size_t>(std::max(planes.first, planes.end)));
  if (planes.end <= planes.first) return out;
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    if (!charge_on_grid(atoms.x[a], atoms.y[a], atoms.z[a], grid, method)) continue;
    double f[3];
    fractional(grid, atoms.x[a], atoms.y[a], atoms.z[a], f);
    switch (method) {
      case PbChargeMethod::Spl0:
        spread_spl0(grid, f, atoms.charge[a], planes, out);
        break;
      case PbChargeMethod::Spl2:
        spread_bspline<1>(grid, f, atoms.charge[a], planes, out);
        break;
      case PbChargeMethod::Spl4:
        spread_bspline<2>(grid, f, atoms.charge[a], planes, out);
        break;
    }
  }
  return out;
}

}  // namespace espgrid::pb
