// The per-point arithmetic of the Poisson–Boltzmann coefficient maps, written once for the host
// builder (src/pb_surface/pb_coefficients.cpp) and the CUDA kernels (kernels/pb/pb_surface.cu). Each function
// states the APBS 3.4.1 definition it reproduces (src/mg/vpmg.c, src/generic/vacc.c); the facts
// are APBS's, the code is ours.
//
// Grids: node (i, j, k) lies at origin + (i·hx, j·hy, k·hz). The dielectric lives on the faces
// between nodes: eps_x[i, j, k] at (i + ½, j, k), eps_y at (i, j + ½, k), eps_z at (i, j, k + ½)
// (APBS's staggered "epsx/epsy/epsz" arrays, same index). Ion accessibility and charges live on
// the nodes.
//
// C++17 and header-only: nvcc compiles it into the device code.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define ESPGRID_PB_HD __host__ __device__ __forceinline__
#else
#define ESPGRID_PB_HD inline
#endif
// A short fixed loop whose arrays should stay in registers: unrolled by nvcc's device pass and by a
// host compiler of its own; nvcc's host pass takes neither spelling without a warning, and its host
// copy of these functions is not what runs on the host (the emulation is compiled without nvcc).
#if defined(__CUDA_ARCH__)
#define ESPGRID_PB_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define ESPGRID_PB_UNROLL
#else
#define ESPGRID_PB_UNROLL _Pragma("GCC unroll 8")
#endif

namespace espgrid::pb {

/// Radii at or below this (Å) are "no radius": APBS skips such atoms when marking spheres and
/// building the solvent-accessible surface (its VSMALL, 1e-9).
constexpr double kNoRadius = 1e-9;
/// APBS's VPMGSMALL: the spline surface skips atoms of smaller radius and points already at 0.
constexpr double kSplineSmall = 1e-12;
/// APBS widens its surface cell list by this window beyond the largest probe or ion radius; the
/// reference sphere's point count depends on it (vpbe.c: MAX_SPLINE_WINDOW).
constexpr double kCellListWindow = 0.5;

/// APBS's `bspline2` (the `chgm spl2` charge weights): the quadratic B-spline on [0, 3] (its
/// "cubic B-spline" in the documentation is this piecewise-quadratic function).
ESPGRID_PB_HD double bspline2(double x) {
  const double m2m = (x >= 0.0 && x <= 2.0) ? 1.0 - std::fabs(x - 1.0) : 0.0;
  const double m2 = (x >= 1.0 && x <= 3.0) ? 1.0 - std::fabs(x - 2.0) : 0.0;
  return (x >= 0.0 && x <= 3.0) ? 0.5 * x * m2m + 0.5 * (3.0 - x) * m2 : 0.0;
}

/// The `spl2` surface's switching value of one atom at distance² `dist2` from its centre:
/// 0 within radius − window, 1 from radius + window on, and 3s²/(4w²) − s³/(4w³) between
/// (s = dist − radius + window). `radius` is the atom's (dielectric) or atom + ion (accessibility).
ESPGRID_PB_HD double spline_switch(double dist2, double radius, double window) {
  const double outer = radius + window;
  const double inner = radius - window > 0.0 ? radius - window : 0.0;
  if (dist2 >= outer * outer) return 1.0;
  if (dist2 <= inner * inner) return 0.0;
  const double s = std::sqrt(dist2) - radius + window;
  const double s2 = s * s;
  return 0.75 * s2 / (window * window) - 0.25 * s * s2 / (window * window * window);
}

/// First and last index along one axis of the points a sphere marking may touch: APBS's
/// markSphere range, ceil((p − (R + h/2))/h) to floor((p + R + h/2)/h), clamped to [0, n − 1].
/// `p` is the centre relative to the (possibly shifted) grid origin.
ESPGRID_PB_HD void sphere_index_range(double p, double radius, double h, long n, long& lo, long& hi) {
  const double reach = radius + 0.5 * h;
  const double a = std::ceil((p - reach) / h), b = std::floor((p + reach) / h);
  lo = a < 0.0 ? 0 : static_cast<long>(a);
  hi = b > static_cast<double>(n - 1) ? n - 1 : static_cast<long>(b);
}

/// APBS markSphere's test: whether node (i, j, k) of an array lies within √r2 of a centre `p`
/// given relative to the array's own origin (the nodes' origin, shifted by h/2 for a face array).
/// The sum's order is the host's and the device's alike (built without FMA contraction).
ESPGRID_PB_HD bool in_sphere(const double* p, const double* h, long i, long j, long k, double r2) {
  const double dx = p[0] - h[0] * static_cast<double>(i);
  const double dy = p[1] - h[1] * static_cast<double>(j);
  const double dz = p[2] - h[2] * static_cast<double>(k);
  return dz * dz + dy * dy + dx * dx <= r2;
}

/// Whether a point of atom a's SAS sphere is accessible (APBS ivdwAccExclus): strictly outside
/// r_b + probe of every other atom b; `neighbours[begin, end)` lists the atoms that can reach it.
ESPGRID_PB_HD bool sas_point_open(double px, double py, double pz, const double* x, const double* y, const double* z,
                                  const double* radius, const int* neighbours, long begin, long end, double probe) {
  for (long s = begin; s < end; ++s) {
    const int b = neighbours[s];
    const double dx = px - x[b], dy = py - y[b], dz = pz - z[b];
    const double reach = radius[b] + probe;
    if (dx * dx + dy * dy + dz * dz < reach * reach) return false;
  }
  return true;
}

/// One atom's `spl2` factors at node (i, j, k), multiplied into acc (ion accessibility, node) and
/// ex, ey, ez (the faces (i+½, j, k), ...): APBS fillcoCoefSpline's inner loop. `p` is the atom's
/// centre relative to the grid origin; values already at 0 (≤ 1e-12) stay.
ESPGRID_PB_HD void spline_factors(const double* p, const double* h, long i, long j, long k, double r, double ion,
                                  double w, double& acc, double& ex, double& ey, double& ez) {
  const double dz = p[2] - static_cast<double>(k) * h[2];
  const double dzf = p[2] - (static_cast<double>(k) + 0.5) * h[2];
  const double dy = p[1] - static_cast<double>(j) * h[1];
  const double dyf = p[1] - (static_cast<double>(j) + 0.5) * h[1];
  const double dx = p[0] - static_cast<double>(i) * h[0];
  const double dxf = p[0] - (static_cast<double>(i) + 0.5) * h[0];
  if (acc > kSplineSmall) acc *= spline_switch(dz * dz + dy * dy + dx * dx, ion + r, w);
  if (ex > kSplineSmall) ex *= spline_switch(dz * dz + dy * dy + dxf * dxf, r, w);
  if (ey > kSplineSmall) ey *= spline_switch(dz * dz + dyf * dyf + dx * dx, r, w);
  if (ez > kSplineSmall) ez *= spline_switch(dzf * dzf + dy * dy + dx * dx, r, w);
}

/// The `spl4` switching polynomial of one radius R (APBS fillcoCoefSpline4): the 7th-order
/// polynomial in the distance that rises from 0 at b = R − w to 1 at e = R + w with three
/// vanishing derivatives at both ends; c[0..7] its coefficients.
ESPGRID_PB_HD void spline4_coefficients(double radius, double window, double* c) {
  const double b = radius - window, e = radius + window;
  const double e2 = e * e, e3 = e2 * e, e4 = e3 * e, e5 = e4 * e, e6 = e5 * e, e7 = e6 * e;
  const double b2 = b * b, b3 = b2 * b, b4 = b3 * b, b5 = b4 * b, b6 = b5 * b, b7 = b6 * b;
  const double denom =
      e7 - 7.0 * b * e6 + 21.0 * b2 * e5 - 35.0 * e4 * b3 + 35.0 * e3 * b4 - 21.0 * b5 * e2 + 7.0 * e * b6 - b7;
  c[0] = b4 * (35.0 * e3 - 21.0 * b * e2 + 7 * e * b2 - b3) / denom;
  c[1] = -140.0 * b3 * e3 / denom;
  c[2] = 210.0 * e2 * b2 * (e + b) / denom;
  c[3] = -140.0 * e * b * (e2 + 3.0 * b * e + b2) / denom;
  c[4] = 35.0 * (e3 + 9.0 * b * e2 + +9.0 * e * b2 + b3) / denom;
  c[5] = -84.0 * (e2 + 3.0 * b * e + b2) / denom;
  c[6] = 70.0 * (e + b) / denom;
  c[7] = -20.0 / denom;
}

/// One `spl4` factor: `value` (a node's or face's running product, skipped at ≤ 1e-12) times the
/// polynomial at distance² `dist2`: 0 within `inner` = max(0, R − w), unchanged from `outer` = R + w
/// on, the polynomial clamped to [0, 1] between. APBS squares the root for x and y faces
/// (`square_root`) and reuses dist² for nodes and z faces; the two round differently.
ESPGRID_PB_HD void spline4_factor(double& value, double dist2, const double* c, double inner2, double outer2,
                                  bool square_root) {
  if (!(value > kSplineSmall)) return;
  if (dist2 <= inner2) {
    value = 0.0;
    return;
  }
  if (!(dist2 < outer2)) return;
  const double sm = std::sqrt(dist2);
  const double sm2 = square_root ? sm * sm : dist2;
  const double sm3 = sm2 * sm, sm4 = sm3 * sm, sm5 = sm4 * sm, sm6 = sm5 * sm, sm7 = sm6 * sm;
  double v = c[0] + c[1] * sm + c[2] * sm2 + c[3] * sm3 + c[4] * sm4 + c[5] * sm5 + c[6] * sm6 + c[7] * sm7;
  v = v > 1.0 ? 1.0 : (v < 0.0 ? 0.0 : v);
  value *= v;
}

/// One atom's `spl4` factors at node (i, j, k) (APBS fillcoCoefSpline4's inner loop), as
/// spline_factors does for spl2: `c` for the atom's radius r, `ic` for r + the ion radius.
ESPGRID_PB_HD void spline4_factors(const double* p, const double* h, long i, long j, long k, double r, double ion,
                                   double w, const double* c, const double* ic, double& acc, double& ex, double& ey,
                                   double& ez) {
  const double dx2 = (p[0] - h[0] * static_cast<double>(i)) * (p[0] - h[0] * static_cast<double>(i));
  const double dy2 = (p[1] - h[1] * static_cast<double>(j)) * (p[1] - h[1] * static_cast<double>(j));
  const double dz2 = (p[2] - static_cast<double>(k) * h[2]) * (p[2] - static_cast<double>(k) * h[2]);
  const double itot = ion + r + w, ictot = ion + r - w > 0.0 ? ion + r - w : 0.0;
  const double stot = r + w, sctot = r - w > 0.0 ? r - w : 0.0;
  const double fx = p[0] - (static_cast<double>(i) + 0.5) * h[0];
  const double fy = p[1] - (static_cast<double>(j) + 0.5) * h[1];
  const double fz = p[2] - (static_cast<double>(k) + 0.5) * h[2];
  spline4_factor(acc, dz2 + dy2 + dx2, ic, ictot * ictot, itot * itot, false);
  spline4_factor(ex, dz2 + dy2 + fx * fx, c, sctot * sctot, stot * stot, true);
  spline4_factor(ey, dz2 + dx2 + fy * fy, c, sctot * sctot, stot * stot, true);
  spline4_factor(ez, dy2 + dx2 + fz * fz, c, sctot * sctot, stot * stot, false);
}

/// The 9-point harmonic mean `smol` applies to one face value (APBS fillcoCoefMolDielSmooth,
/// after Bruccoleri et al., J Comput Chem 18, 268 (1997)): the face itself and the other two
/// orientations' faces within h/√2 of its midpoint, those outside the grid left out.
/// `own`, `a`, `b` are the unsmoothed arrays of the face's own orientation and of the other two
/// (in the order x, y, z with own removed), `d` the face's axis (0, 1, 2), `idx` its node index.
/// Strides sx, sy, sz; n[3] the grid's points.
ESPGRID_PB_HD double smooth_face(const double* own, const double* a, const double* b, int d, long i, long j, long k,
                                 const long* n, long sx, long sy, long sz) {
  const long idx = i * sx + j * sy + k * sz;
  // Coordinates along the face's own axis (u) and the two others (v: the array `a`, w: `b`).
  const long u = d == 0 ? i : (d == 1 ? j : k);
  const long v = d == 0 ? j : i;  // a is y for x faces, x for y and z faces
  const long w = d == 2 ? j : k;  // b is z for x and y faces, y for z faces
  const long su = d == 0 ? sx : (d == 1 ? sy : sz);
  const long sv = d == 0 ? sy : sx;
  const long sw = d == 2 ? sy : sz;
  const long nu = n[d];
  double frac = 1.0 / own[idx] + 1.0 / a[idx] + 1.0 / b[idx];
  int count = 3;
  if (v > 0) {
    frac += 1.0 / a[idx - sv];
    ++count;
  }
  if (w > 0) {
    frac += 1.0 / b[idx - sw];
    ++count;
  }
  if (u < nu - 1) {
    frac += 1.0 / a[idx + su] + 1.0 / b[idx + su];
    count += 2;
    if (v > 0) {
      frac += 1.0 / a[idx + su - sv];
      ++count;
    }
    if (w > 0) {
      frac += 1.0 / b[idx + su - sw];
      ++count;
    }
  }
  return static_cast<double>(count) / frac;
}

/// Trilinear interpolation of node values u(i, j, k) between the nodes lo and hi of each axis, at
/// the fractions d from lo (the focusing boundary and the point energies: one sum, one order).
template <class NodeValue>
ESPGRID_PB_HD double trilinear_blend(const long lo[3], const long hi[3], const double d[3], NodeValue&& u) {
  return d[0] * d[1] * d[2] * u(hi[0], hi[1], hi[2]) + d[0] * (1.0 - d[1]) * d[2] * u(hi[0], lo[1], hi[2]) +
         d[0] * d[1] * (1.0 - d[2]) * u(hi[0], hi[1], lo[2]) +
         d[0] * (1.0 - d[1]) * (1.0 - d[2]) * u(hi[0], lo[1], lo[2]) +
         (1.0 - d[0]) * d[1] * d[2] * u(lo[0], hi[1], hi[2]) +
         (1.0 - d[0]) * (1.0 - d[1]) * d[2] * u(lo[0], lo[1], hi[2]) +
         (1.0 - d[0]) * d[1] * (1.0 - d[2]) * u(lo[0], hi[1], lo[2]) +
         (1.0 - d[0]) * (1.0 - d[1]) * (1.0 - d[2]) * u(lo[0], lo[1], lo[2]);
}

}  // namespace espgrid::pb
