#include "src/msm/msm_cpu_vectors.h"

#include <algorithm>

#include "src/msm/msm_math.h"

#if ESPGRID_HAVE_HWY

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/msm/msm_cpu_vectors.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace espgrid::msm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// msm_math.h's exp_nonpositive in lanes: the same steps, so each lane has its bits (2^k built
/// from its exponent bits: the same exact product as std::ldexp).
template <class D>
HWY_INLINE hn::Vec<D> exp_nonpositive(D d, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  x = hn::Max(x, hn::Set(d, ExpSteps::kLowest));
  const auto k = hn::Round(hn::Mul(x, hn::Set(d, ExpSteps::kLog2e)));
  const auto f =
      hn::Sub(hn::Sub(x, hn::Mul(k, hn::Set(d, ExpSteps::kLn2Hi))), hn::Mul(k, hn::Set(d, ExpSteps::kLn2Lo)));
  auto p = hn::Set(d, ExpSteps::kTaylor[ExpSteps::kDegree]);
  for (int n = ExpSteps::kDegree - 1; n >= 0; --n) p = hn::Add(hn::Mul(p, f), hn::Set(d, ExpSteps::kTaylor[n]));
  const auto bits = hn::ShiftLeft<52>(hn::Add(hn::ConvertTo(di, k), hn::Set(di, 1023)));
  return hn::Mul(p, hn::BitCast(d, bits));
}

void AddRun(const ShortRangeKernel& k, double x_atom, double dy2, double dz2, double q, std::int64_t i0,
            std::int64_t i1, double* row) {
  const hn::ScalableTag<double> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  static_assert(HWY_MAX_BYTES / sizeof(double) <= kShortRangePadding, "a run's last vector stays in the padding");
  const auto lane = hn::Iota(d, 0.0);
  const auto hx = hn::Set(d, k.hx), xa = hn::Set(d, x_atom), vdy2 = hn::Set(d, dy2), vdz2 = hn::Set(d, dz2);
  const auto a2 = hn::Set(d, k.a2), soft2 = hn::Set(d, k.softening2), vq = hn::Set(d, q), one = hn::Set(d, 1.0);
  const auto last = hn::Set(d, static_cast<double>(i1));
  for (std::int64_t i = i0; i <= i1; i += lanes) {
    const auto index = hn::Add(hn::Set(d, static_cast<double>(i)), lane);  // exact: |i| < 2^53
    const auto dx = hn::Sub(hn::Mul(index, hx), xa);
    const auto r2 = hn::Add(hn::Add(hn::Mul(dx, dx), vdy2), vdz2);  // (dx·dx + dy·dy) + dz·dz, as the scalar loop
    hn::Vec<decltype(d)> split;                                     // f(r) − g_a(r)
    if (k.power == 1 && k.kappa == 0) {
      // γ(ρ) by Horner in s = ρ² − 1, the terms of msm_math.h's gamma_inside
      const auto s = hn::Sub(hn::Mul(r2, hn::Set(d, k.inv_a2)), one);
      auto inner = k.order >= 5 ? hn::Add(hn::Set(d, 0.375), hn::Mul(s, hn::Set(d, -0.3125))) : hn::Set(d, 0.375);
      const auto gamma = hn::Add(one, hn::Mul(s, hn::Add(hn::Set(d, -0.5), hn::Mul(s, inner))));
      split = hn::Sub(hn::Div(one, hn::Sqrt(hn::Add(r2, soft2))), hn::Mul(gamma, hn::Set(d, k.inv_a)));
    } else {
      // kernel_value(r² + softening², {power, κ}) minus softened_inside(r² − a², c)
      const double* c = k.softened;
      const auto t = hn::Sub(r2, a2);
      const auto poly = hn::Add(
          hn::Set(d, c[0]),
          hn::Mul(t, hn::Add(hn::Set(d, c[1]), hn::Mul(t, hn::Add(hn::Set(d, c[2]), hn::Mul(t, hn::Set(d, c[3])))))));
      const auto r2s = hn::Add(r2, soft2);
      hn::Vec<decltype(d)> f;
      if (k.kappa > 0) {
        const auto r = hn::Sqrt(r2s);
        f = hn::Div(exp_nonpositive(d, hn::Mul(hn::Set(d, -k.kappa), r)), k.power == 2 ? r2s : r);
      } else {
        f = hn::Div(one, r2s);  // 1/r²: kernel_value's screen is 1.0
      }
      split = hn::Sub(f, poly);
    }
    // The last vector's lanes past i1 (in the caller's padding) add +0.0: their values keep their bits.
    const auto term = hn::IfThenElseZero(hn::And(hn::Lt(r2, a2), hn::Le(index, last)), hn::Mul(vq, split));
    hn::StoreU(hn::Add(hn::LoadU(d, row + i), term), d, row + i);
  }
}

void CutoffRowSums(const CutoffRow& a, double* out) {
  const hn::ScalableTag<double> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  static_assert(HWY_MAX_BYTES / sizeof(double) <= kLatticePadding, "the padding covers a vector's lanes");
  const int r = a.radius, w = 2 * r + 1;
  const double* row = a.padded + kLatticePadding;  // x = the lattice's lo
  double lanes_out[HWY_MAX_BYTES / sizeof(double)];
  for (std::int64_t x0 = 0; x0 < a.nx; x0 += lanes) {
    auto sum = hn::Zero(d);
    for (std::int64_t jz = a.jz0; jz <= a.jz1; ++jz)
      for (std::int64_t jy = a.jy0; jy <= a.jy1; ++jy) {
        const int extent = a.row_extent[static_cast<std::size_t>((jy + r) + w * (jz + r))];
        // The union of the lanes' clipped ranges; outside its own a lane reads zeros.
        const std::int64_t lo = std::max<std::int64_t>(-extent, a.charged_lo - (x0 + lanes - 1));
        const std::int64_t hi = std::min<std::int64_t>(extent, a.charged_hi - x0);
        if (lo > hi) continue;
        const double* k = a.stencil + static_cast<std::size_t>(r + w * ((jy + r) + w * (jz + r)));
        const double* qs = row + x0 + a.width * ((a.y + jy) + a.ny * (a.z + jz));
        for (std::int64_t jx = lo; jx <= hi; ++jx)
          sum = hn::Add(sum, hn::Mul(hn::Set(d, k[jx]), hn::LoadU(d, qs + jx)));
      }
    hn::StoreU(hn::Mul(sum, hn::Set(d, a.scale)), d, lanes_out);
    for (std::int64_t i = 0; i < std::min(lanes, a.nx - x0); ++i) out[x0 + i] = lanes_out[i];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace espgrid::msm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace espgrid::msm {
HWY_EXPORT(AddRun);
HWY_EXPORT(CutoffRowSums);

bool cutoff_row(const CutoffRow& row, double* out) {
  HWY_DYNAMIC_DISPATCH(CutoffRowSums)(row, out);
  return true;
}

bool add_short_range_run(const ShortRangeKernel& k, double x_atom, double dy2, double dz2, double q, std::int64_t i0,
                         std::int64_t i1, double* row) {
  if (k.power != 1 && k.power != 2) return false;
  HWY_DYNAMIC_DISPATCH(AddRun)(k, x_atom, dy2, dz2, q, i0, i1, row);
  return true;
}
}  // namespace espgrid::msm
#endif

#else  // no Highway: the scalar loop in msm_cpu.cpp

namespace espgrid::msm {
bool add_short_range_run(const ShortRangeKernel&, double, double, double, double, std::int64_t, std::int64_t, double*) {
  return false;
}
bool cutoff_row(const CutoffRow&, double*) { return false; }
}  // namespace espgrid::msm

#endif
