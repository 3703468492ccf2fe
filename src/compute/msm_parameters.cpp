#include "src/compute/msm_parameters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "src/core/errors.h"
#include "src/core/text_format.h"

namespace espgrid {
namespace {

std::string number(double v) { return number_text(v); }  // "%g" in any locale

}  // namespace

const std::vector<MsmTableRow>& msm_accuracy_table() {
  // Measured with `espgrid bench --sweep msm-accuracy --sweep-only --spacing 1.0 --seed 1` (cpu-msm,
  // double, against the exact map at every point >= 1.4 Å from atoms; 2026-11-22; results in
  // benchmarks/results/msm-cpu-2026-11-22/): fasciculin-2 (+4 e), box B RNA (-18 e), the N-peptide
  // / box B complex (-14 e), the actin dimer (-24 e) and acetylcholine-binding protein (-49.67 e).
  // The error depends on a/h and the order alone (three cutoffs at a/h = 5 and 8 agree within
  // 10%), so `measured_error` is the worst over the molecules and the cutoffs at that a/h; the
  // bound is at least 2.5 times it (fasciculin-2, the least charged for its size, is the worst
  // everywhere; a neutral structure has a larger relative error than a charged one). Rows are
  // in the order presets are tried: quintic first, cheapest first (at equal cost the quintic is
  // 3 to 9 times more accurate than the cubic), then the cubic rows, which only explicit
  // --msm-order 3 parameters use.
  static const std::vector<MsmTableRow> table = {
      {5, 12.0, 3.0, 5.68e-4, 2e-3},   // a/h = 4
      {5, 10.0, 2.0, 2.42e-4, 1e-3},   // a/h = 5: the default (--accuracy 1e-3)
      {5, 12.0, 2.0, 1.13e-4, 3e-4},   // a/h = 6
      {5, 14.0, 1.75, 3.69e-5, 1e-4},  // a/h = 8: --accuracy 1e-4
      {5, 14.0, 1.4, 1.49e-5, 4e-5},   // a/h = 10
      {3, 12.0, 3.0, 1.37e-3, 4e-3},   // a/h = 4
      {3, 12.0, 2.0, 5.86e-4, 2e-3},   // a/h = 6
      {3, 12.0, 1.5, 2.98e-4, 1e-3},   // a/h = 8
  };
  return table;
}

void validate(const MsmParameters& p) {
  if (p.order != 3 && p.order != 5)
    throw UsageError("--msm-order must be 3 (cubic) or 5 (quintic), got " + std::to_string(p.order));
  if (!(p.spacing > 0) || !std::isfinite(p.spacing) || p.spacing > kMsmMaxSpacing)
    throw UsageError("--msm-spacing must be a positive number of Å (at most " + number(kMsmMaxSpacing) + "), got " +
                     number(p.spacing));
  if (!(p.cutoff > 0) || !std::isfinite(p.cutoff))
    throw UsageError("--msm-cutoff must be a positive number of Å, got " + number(p.cutoff));
  const double ratio = p.cutoff / p.spacing;
  if (ratio < kMsmMinRatio || ratio > kMsmMaxRatio)
    throw UsageError("--msm-cutoff / --msm-spacing must be from " + number(kMsmMinRatio) + " to " +
                     number(kMsmMaxRatio) + ", got " + number(p.cutoff) + " / " + number(p.spacing) + " = " +
                     number(ratio));
}

ResolvedMsm resolve_msm(const MethodParameters& method) {
  const std::vector<MsmTableRow>& table = msm_accuracy_table();
  ResolvedMsm out;
  if (!method.msm.empty()) {
    if (method.accuracy != 0)
      throw UsageError("give --accuracy or the --msm-* parameters, not both (--accuracy chooses them)");
    if (method.msm.cutoff == 0 || method.msm.spacing == 0 || method.msm.order == 0)
      throw UsageError("the --msm-* parameters go together: give --msm-cutoff, --msm-spacing and --msm-order");
    validate(method.msm);
    // The error depends on a/h and the order alone (design note, confirmed by the measurements in
    // docs/msm.md): the bound of the same order's setting with the next smaller or equal
    // a/h holds for this one.
    const double ratio = method.msm.cutoff / method.msm.spacing;
    const MsmTableRow* best = nullptr;
    for (const MsmTableRow& row : table)
      if (row.order == method.msm.order && row.cutoff / row.spacing <= ratio * (1 + 1e-12) &&
          (!best || row.cutoff / row.spacing > best->cutoff / best->spacing))
        best = &row;
    if (!best)
      throw UsageError("no measured MSM setting of order " + std::to_string(method.msm.order) +
                       " has a/h <= " + number(ratio) + ", so no error bound can be declared; see docs/msm.md");
    out.params = method.msm;
    out.error_bound = best->bound;
    out.origin = "--msm-* parameters (bound of the measured setting " +
                 describe({best->cutoff, best->spacing, best->order}) + ")";
    return out;
  }
  const double target = method.accuracy == 0 ? kMsmDefaultAccuracy : method.accuracy;
  if (!(target > 0) || !(target < 1) || !std::isfinite(target))
    throw UsageError("--accuracy must be a relative error between 0 and 1 (e.g. 1e-3), got " + number(target));
  for (const MsmTableRow& row : table) {
    if (row.bound <= target * (1 + 1e-12)) {
      out.params = {row.cutoff, row.spacing, row.order};
      out.error_bound = row.bound;
      out.origin = "--accuracy " + number(target) + " preset";
      return out;
    }
  }
  double finest = table.front().bound;
  for (const MsmTableRow& row : table) finest = std::min(finest, row.bound);
  throw UsageError("--accuracy " + number(target) + " is finer than any measured MSM setting (best " + number(finest) +
                   "); use an exact kernel (leave out --accuracy)");
}

std::string describe(const MsmParameters& p) {
  return "a = " + number(p.cutoff) + " Å, h = " + number(p.spacing) + " Å, " +
         (p.order == 5   ? "quintic"
          : p.order == 3 ? "cubic"
                         : "order " + std::to_string(p.order));
}

}  // namespace espgrid
