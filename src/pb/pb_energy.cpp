#include "src/pb/pb_energy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/core/thread_count.h"
#include "src/core/units.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/physics/apbs_constants.h"

namespace espgrid::pb {
namespace {

/// A node's weight in a sum over this level: 1 for its own energy; outside a child domain, APBS's
/// inverted partition (extEnergy).
using NodeWeights = std::vector<double>;

/// The nodes whose spread charge is not zero, in increasing order (blocks searched in parallel,
/// joined in order). A sum over them is the same bits as the sum over every node: the others'
/// terms are exact zeros (φ and the weights are finite). spl2 puts 27 nodes an atom: for 47,000
/// atoms on a 449×449×257 level that is 1.3 M of 51.8 M nodes, and the whole-grid loops took
/// 0.6 s of a focusing level (2 × H200 host, 2026-11-27).
std::vector<std::size_t> charged_nodes(const std::vector<double>& q, int threads) {
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  const auto blocks = static_cast<std::int64_t>((q.size() + kBlock - 1) / kBlock);
  std::vector<std::vector<std::size_t>> found(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(dynamic) num_threads(threads_to_use(threads))
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kBlock, end = std::min(q.size(), begin + kBlock);
    for (std::size_t i = begin; i < end; ++i)
      if (q[i] != 0.0) found[static_cast<std::size_t>(b)].push_back(i);
  }
  std::vector<std::size_t> out;
  for (const std::vector<std::size_t>& f : found) out.insert(out.end(), f.begin(), f.end());
  return out;
}

/// Σ weight(i)·φ·(spread charge) over the nodes (APBS Vpmg_qfEnergyVolume, `chgm spl2`).
template <class Weight>
double fixed_charge_volume(const EnergyInputs& in, Weight&& weight) {
  if (!in.charge || in.charge->size() != in.grid->point_count())
    throw Error("internal error: the spl2 energy needs the spread charges");
  const std::vector<double>& u = *in.potential;
  const std::vector<double>& q = *in.charge;
  double sum = 0;
  for (const std::size_t i : charged_nodes(q, in.threads)) sum += weight(i) * u[i] * q[i];
  return sum;
}

/// Σ qᵢ φ_trilinear(rᵢ) over the atoms on the grid whose `count(a)` is true (Vpmg_qfEnergyPoint).
template <class Count>
double fixed_charge_point(const EnergyInputs& in, Count&& count) {
  const Atoms& atoms = *in.atoms;
  double sum = 0;
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    if (!count(a)) continue;
    const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
    double value = 0;
    if (trilinear_at(*in.grid, *in.potential, p, value)) sum += value * atoms.charge[a];
  }
  return sum;
}

/// APBS Vpmg_qmEnergyNONLIN: the mobile ions' energy term, kT.
double mobile_charge(const EnergyInputs& in, const NodeWeights* w) {
  const PbOptions& o = *in.options;
  const double kappa = pb_kappa(o);
  const double zkappa2 = o.solvent_dielectric * kappa * kappa;
  if (zkappa2 < kApbsSmall) return 0.0;
  if (!in.coefficients || !in.coefficients->whole())
    throw Error("internal error: the mobile-charge energy needs the whole accessibility map");
  const std::vector<double>& lambda = in.coefficients->accessibility;
  const std::vector<double>& u = *in.potential;
  const GridSpec& g = *in.grid;
  const double volume = g.spacing[0] * g.spacing[1] * g.spacing[2];
  const double zmagic = source_scale(o.temperature);
  double energy = 0;
  if (o.equation == PbEquation::Nonlinear) {
    const std::vector<PbIon> species = ion_species(o);
    const double zks2 = 0.5 * zkappa2 / pb_ionic_strength(o);
    for (std::size_t i = 0; i < u.size(); ++i) {
      const double weight = (w ? (*w)[i] : 1.0) * lambda[i];
      if (!(weight > kApbsSmall)) continue;
      for (const PbIon& ion : species) {
        const double x = -ion.charge * u[i];
        if (std::fabs(x) > kApbsExpMax)
          throw Error("the nonlinear PB energy met a potential of " + std::to_string(u[i]) +
                      " kT/e where ions are: exp(" + std::to_string(x) +
                      ") overflows APBS's cap of 85, where APBS stops too (charges too large for this salt, "
                      "or a failed solve)");
        energy += weight * zks2 * ion.concentration * (std::exp(x) - 1.0);
      }
    }
  } else {
    for (std::size_t i = 0; i < u.size(); ++i) {
      const double weight = (w ? (*w)[i] : 1.0) * lambda[i];
      if (weight > kApbsSmall) energy += weight * zkappa2 * u[i] * u[i];
    }
    energy *= 0.5;
  }
  return energy * volume / zmagic;
}

/// APBS Vpmg_dielEnergy: ½ Σ ε (Δφ/h)² V / zmagic over the faces of the nodes below the last plane
/// of every axis, each face weighted by the mean of its two nodes' weights.
double dielectric(const EnergyInputs& in, const NodeWeights* w) {
  if (!in.coefficients || !in.coefficients->whole())
    throw Error("internal error: the dielectric energy needs the whole dielectric maps");
  const PbCoefficients& c = *in.coefficients;
  const std::vector<double>& u = *in.potential;
  const GridSpec& g = *in.grid;
  const long n0 = static_cast<long>(g.dims[0]), n1 = static_cast<long>(g.dims[1]), n2 = static_cast<long>(g.dims[2]);
  const double hx = g.spacing[0], hy = g.spacing[1], hz = g.spacing[2];
  const auto weight = [&](long idx) { return w ? (*w)[static_cast<std::size_t>(idx)] : 1.0; };
  double energy = 0;
  for (long k = 0; k < n2 - 1; ++k)
    for (long j = 0; j < n1 - 1; ++j)
      for (long i = 0; i < n0 - 1; ++i) {
        const long idx = i + n0 * (j + n1 * k), sx = 1, sy = n0, sz = n0 * n1;
        const auto face = [&](const std::vector<double>& eps, long step, double h) {
          const double gradient = (u[static_cast<std::size_t>(idx)] - u[static_cast<std::size_t>(idx + step)]) / h;
          return eps[static_cast<std::size_t>(idx)] * 0.5 * (weight(idx) + weight(idx + step)) * gradient * gradient;
        };
        energy += face(c.eps_x, sx, hx) + face(c.eps_y, sy, hy) + face(c.eps_z, sz, hz);
      }
  return 0.5 * energy * hx * hy * hz / source_scale(in.options->temperature);
}

void check(const EnergyInputs& in) {
  if (!in.atoms || !in.grid || !in.options || !in.potential || in.potential->size() != in.grid->point_count())
    throw Error("internal error: the PB energy needs the atoms, grid, options and potential");
}

/// APBS Vpmg_setPart's weight of one coordinate x (a node of spacing h, or an atom with h = 0)
/// for the box [lower, upper], no neighbouring processors.
double part_weight(double x, double lower, double upper, double h) {
  if (x < upper - h / 2 && x > lower + h / 2) return 1.0;
  if (std::fabs(x - lower) < kApbsPmgSmall || std::fabs(x - upper) < kApbsPmgSmall) return 1.0;
  if (x > upper + h / 2 || x < lower - h / 2) return 0.0;
  if (h == 0) return 0.0;
  const double f = std::fabs(std::fmin(x + h / 2, upper) - std::fmax(x - h / 2, lower)) / h;
  return f < 0 ? 0.0 : (f > 1 ? 1.0 : f);
}

/// Each node's share of a box (APBS Vpmg_setPart's pvec with no neighbouring processor): its
/// cell's overlap with the box along each axis, multiplied; below VPMGSMALL, zero.
class BoxShare {
 public:
  BoxShare(const GridSpec& g, const EnergyBox& box)
      : n0_(static_cast<std::size_t>(g.dims[0])), n1_(static_cast<std::size_t>(g.dims[1])) {
    for (int d = 0; d < 3; ++d) {
      axis_[d].resize(static_cast<std::size_t>(g.dims[d]));
      for (std::int64_t i = 0; i < g.dims[d]; ++i)
        axis_[d][static_cast<std::size_t>(i)] = part_weight(g.position(d, i), box.lower[d], box.upper[d], g.spacing[d]);
    }
  }
  double operator()(std::size_t node) const {
    const double part = axis_[0][node % n0_] * axis_[1][(node / n0_) % n1_] * axis_[2][node / (n0_ * n1_)];
    return std::fabs(part) < kApbsPmgSmall ? 0.0 : part;
  }

 private:
  std::size_t n0_, n1_;
  std::array<std::vector<double>, 3> axis_;
};

/// Whether atom `a` lies in `box` (APBS's partID with no neighbouring processor: 1 or 0).
bool atom_in_box(const Atoms& atoms, std::size_t a, const EnergyBox& box) {
  const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
  double inside = 1;
  for (int d = 0; d < 3; ++d) inside *= part_weight(p[d], box.lower[d], box.upper[d], 0.0);
  return inside > kApbsSmall;
}

/// weight(node) at every node of `g` (the mobile and dielectric sums cover them all).
template <class Weight>
NodeWeights every_node(const GridSpec& g, Weight&& weight) {
  NodeWeights w(g.point_count());
  for (std::size_t node = 0; node < w.size(); ++node) w[node] = weight(node);
  return w;
}

}  // namespace

EnergyBox box_of(const GridSpec& grid) {
  EnergyBox box;
  for (int d = 0; d < 3; ++d) {
    box.lower[d] = grid.origin[d];
    box.upper[d] = grid.position(d, grid.dims[d] - 1);
  }
  return box;
}

double PbEnergy::kj_per_mol(double kt) const { return kt * kBoltzmann * temperature * kAvogadro / 1000.0; }

bool trilinear_at(const GridSpec& g, const std::vector<double>& values, const double p[3], double& value) {
  long lo[3], hi[3];
  double d[3];
  for (int a = 0; a < 3; ++a) {
    const double f = (p[a] - g.origin[a]) / g.spacing[a];
    lo[a] = static_cast<long>(std::floor(f));
    hi[a] = static_cast<long>(std::ceil(f));
    if (lo[a] < 0 || hi[a] >= g.dims[a]) return false;
    d[a] = f - static_cast<double>(lo[a]);
  }
  const long n0 = static_cast<long>(g.dims[0]), n1 = static_cast<long>(g.dims[1]);
  const auto u = [&](long i, long j, long k) { return values[static_cast<std::size_t>(i + n0 * (j + n1 * k))]; };
  value = trilinear_blend(lo, hi, d, u);
  return true;
}

PbEnergy apbs_energy(const EnergyInputs& in, PbEnergyLevel level, const PbEnergyTerms& from_coarser) {
  check(in);
  const PbOptions& o = *in.options;
  PbEnergy e;
  e.level = level;
  e.temperature = o.temperature;
  if (level == PbEnergyLevel::None) return e;
  e.from_coarser = from_coarser;
  const std::optional<BoxShare> share =
      in.partition ? std::optional<BoxShare>(std::in_place, *in.grid, *in.partition) : std::nullopt;
  e.terms.fixed_charge = o.charges == PbChargeMethod::Spl2
                             ? fixed_charge_volume(in, [&](std::size_t i) { return share ? (*share)(i) : 1.0; })
                             : fixed_charge_point(in, [&](std::size_t a) {
                                 return !in.partition || atom_in_box(*in.atoms, a, *in.partition);
                               });
  const bool full = o.equation == PbEquation::Nonlinear && pb_has_ions(o);
  if (full || level == PbEnergyLevel::Components) {
    const NodeWeights w = share ? every_node(*in.grid, *share) : NodeWeights{};
    e.terms.mobile_charge = mobile_charge(in, share ? &w : nullptr);
    e.terms.dielectric = dielectric(in, share ? &w : nullptr);
  }
  e.terms += from_coarser;
  e.total = full ? e.terms.fixed_charge - e.terms.dielectric - e.terms.mobile_charge : 0.5 * e.terms.fixed_charge;
  if (level == PbEnergyLevel::Components) {
    const Atoms& atoms = *in.atoms;
    e.per_atom.assign(atoms.size(), 0.0);
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
      double value = 0;
      if (trilinear_at(*in.grid, *in.potential, p, value)) e.per_atom[a] = 0.5 * value * atoms.charge[a];
    }
  }
  return e;
}

PbEnergyTerms energy_outside(const EnergyInputs& in, const GridSpec& child, const PbEnergyTerms& from_coarser) {
  check(in);
  const GridSpec& g = *in.grid;
  const EnergyBox box = box_of(child);
  // The nodes whose cells do not reach into the child's box (APBS: 1 − partition, any overlap → 0).
  const BoxShare share(g, box);
  const auto outside = [&](std::size_t node) {
    const double part = share(node);
    return part > kApbsSmall ? 0.0 : 1.0 - part;
  };
  const PbOptions& o = *in.options;
  PbEnergyTerms t;
  if (o.charges == PbChargeMethod::Spl2) {
    t.fixed_charge = fixed_charge_volume(in, outside);
  } else {
    const Atoms& atoms = *in.atoms;
    // An atom inside the child's box is the child's.
    t.fixed_charge = fixed_charge_point(in, [&](std::size_t a) { return !atom_in_box(atoms, a, box); });
  }
  // The mobile and dielectric terms count only where they count for the child: its components, or
  // the nonlinear equation's total (both use this level's options, as APBS's levels share them).
  if (o.energy.level == PbEnergyLevel::Components || o.equation == PbEquation::Nonlinear) {
    const NodeWeights w = every_node(g, outside);
    t.mobile_charge = mobile_charge(in, &w);
    t.dielectric = dielectric(in, &w);
  }
  t += from_coarser;
  return t;
}

}  // namespace espgrid::pb
