#include "src/pb/pb_maps.h"

#include <algorithm>
#include <cmath>

#include "src/core/errors.h"
#include "src/core/thread_count.h"
#include "src/pb_numerics/pb_geometry.h"
#include "src/pb_surface/pb_coefficients.h"
#include "src/physics/apbs_constants.h"

namespace espgrid::pb {
namespace {

struct KindInfo {
  PbMapKind kind;
  const char* name;
  const char* unit;
  const char* title;  ///< APBS's, without the parameter some carry
};
constexpr KindInfo kKinds[] = {
    {PbMapKind::Potential, "pot", "kT/e", "POTENTIAL (kT/e)"},
    {PbMapKind::Charge, "charge", "e/A^3", "CHARGE DISTRIBUTION (e)"},
    {PbMapKind::Kappa, "kappa", "1", "KAPPA MAP"},
    {PbMapKind::DielX, "dielx", "1", "X-SHIFTED DIELECTRIC MAP"},
    {PbMapKind::DielY, "diely", "1", "Y-SHIFTED DIELECTRIC MAP"},
    {PbMapKind::DielZ, "dielz", "1", "Z-SHIFTED DIELECTRIC MAP"},
    {PbMapKind::Smol, "smol", "1", "SOLVENT ACCESSIBILITY -- MOLECULAR"},
    {PbMapKind::Sspl, "sspl", "1", "SOLVENT ACCESSIBILITY -- SPLINE"},
    {PbMapKind::Vdw, "vdw", "1", "SOLVENT ACCESSIBILITY -- VAN DER WAALS"},
    {PbMapKind::Ivdw, "ivdw", "1", "ION ACCESSIBILITY -- SPLINE"},
    {PbMapKind::Lap, "lap", "kT/e/A^2", "POTENTIAL LAPLACIAN (kT/e/A^2)"},
    {PbMapKind::Edens, "edens", "(kT/e/A)^2", "ENERGY DENSITY (kT/e/A)^2"},
    {PbMapKind::Ndens, "ndens", "mol/L", "ION NUMBER DENSITY (M)"},
    {PbMapKind::Qdens, "qdens", "e mol/L", "ION CHARGE DENSITY (e_c * M)"},
};

const KindInfo& info(PbMapKind kind) {
  for (const KindInfo& k : kKinds)
    if (k.kind == kind) return k;
  throw Error("internal error: unknown PB map kind");
}

/// APBS's accessibility cell list (vpbe.c Vpbe_ctor2, vclist.c): a hash grid over the atoms'
/// box widened by 1.42·(largest atom radius + reach), each cell listing (in atom order) the atoms
/// within radius + reach of it per axis, reach = max(largest ion radius, probe) + 0.5 Å. APBS's
/// write maps look atoms up through it, so a point sees only its cell's atoms: replicated, so
/// the maps equal APBS's also where that matters (smol's SAS points).
class ApbsCellList {
 public:
  ApbsCellList(const Atoms& atoms, const PbOptions& o) {
    reach_ = std::max(pb_ion_radius(o), o.probe_radius) + kCellListWindow;
    double lo[3] = {atoms.x[0], atoms.y[0], atoms.z[0]}, hi[3] = {lo[0], lo[1], lo[2]};
    double len_lo[3] = {lo[0], lo[1], lo[2]}, len_hi[3] = {lo[0], lo[1], lo[2]};
    double rmax = -1.0;
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
      const double r = atoms.radius[a];
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::min(lo[d], p[d]), hi[d] = std::max(hi[d], p[d]);
        len_lo[d] = std::min(len_lo[d], p[d] - r), len_hi[d] = std::max(len_hi[d], p[d] + r);
      }
      rmax = std::max(rmax, r);
    }
    for (int d = 0; d < 3; ++d) {
      n_[d] = std::clamp(static_cast<int>((len_hi[d] - len_lo[d]) / 0.5), 3, 75);  // APBS's MAX_HASH_DIM
      lower_[d] = lo[d] - 1.42 * (rmax + reach_);
      const double upper = hi[d] + 1.42 * (rmax + reach_);
      spacing_[d] = (upper - lower_[d]) / static_cast<double>(n_[d] - 1);
    }
    std::vector<std::vector<int>> cells(static_cast<std::size_t>(n_[0]) * n_[1] * n_[2]);
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      const double p[3] = {atoms.x[a], atoms.y[a], atoms.z[a]};
      const double rtot = atoms.radius[a] + reach_;
      int imin[3], imax[3];
      for (int d = 0; d < 3; ++d) {
        const double dc = p[d] - lower_[d];
        imax[d] = std::min(static_cast<int>(std::ceil((dc + rtot) / spacing_[d])), n_[d] - 1);
        imin[d] = std::max(static_cast<int>(std::floor((dc - rtot) / spacing_[d])), 0);
      }
      for (int i = imin[0]; i <= imax[0]; ++i)
        for (int j = imin[1]; j <= imax[1]; ++j)
          for (int k = imin[2]; k <= imax[2]; ++k) cells[index(i, j, k)].push_back(static_cast<int>(a));
    }
    start_.assign(cells.size() + 1, 0);
    for (std::size_t c = 0; c < cells.size(); ++c) start_[c + 1] = start_[c] + cells[c].size();
    atoms_.reserve(start_.back());
    for (const auto& c : cells) atoms_.insert(atoms_.end(), c.begin(), c.end());
  }
  double reach() const { return reach_; }
  /// The cell of `p` (APBS truncates toward zero), or false outside the table.
  bool cell(const double p[3], std::size_t& begin, std::size_t& end) const {
    int ic[3];
    for (int d = 0; d < 3; ++d) {
      ic[d] = static_cast<int>((p[d] - lower_[d]) / spacing_[d]);
      if (ic[d] < 0 || ic[d] >= n_[d]) return false;
    }
    const std::size_t c = index(ic[0], ic[1], ic[2]);
    begin = start_[c], end = start_[c + 1];
    return true;
  }
  int atom(std::size_t s) const { return atoms_[s]; }

 private:
  std::size_t index(int i, int j, int k) const {
    return static_cast<std::size_t>(n_[2]) * n_[1] * i + static_cast<std::size_t>(n_[2]) * j + k;
  }
  double reach_ = 0, lower_[3] = {0, 0, 0}, spacing_[3] = {1, 1, 1};
  int n_[3] = {3, 3, 3};
  std::vector<std::size_t> start_;
  std::vector<int> atoms_;
};

/// APBS's accessibility functions (vacc.c) through the cell list.
class Accessibility {
 public:
  Accessibility(const Atoms& atoms, const PbOptions& o, int threads) : atoms_(atoms), cells_(atoms, o) {
    if (o.probe_radius > kNoRadius) sas_ = accessible_sas_points(atoms, o, threads);
  }
  /// Vacc_ivdwAcc: 0 within radius + `probe` of a cell atom (strictly), else 1.
  double ivdw(const double p[3], double probe) const {
    std::size_t b, e;
    if (!cells_.cell(p, b, e)) return 1.0;
    for (std::size_t s = b; s < e; ++s) {
      const int a = cells_.atom(s);
      const double r = atoms_.radius[a] + probe;
      if (dist2(p, a) < r * r) return 0.0;
    }
    return 1.0;
  }
  double vdw(const double p[3]) const { return ivdw(p, 0.0); }
  /// Vacc_molAcc: outside atom + probe: 1; inside an atom: 0; else 1 within a probe radius of a
  /// SAS point of a cell atom.
  double mol(const double p[3], double probe) const {
    if (ivdw(p, probe) == 1.0) return 1.0;
    if (vdw(p) == 0.0) return 0.0;
    std::size_t b, e;
    if (!cells_.cell(p, b, e)) return 1.0;
    for (std::size_t s = b; s < e; ++s) {
      const int a = cells_.atom(s);
      for (std::size_t q = sas_.atom_start[a]; q < sas_.atom_start[a + 1]; ++q) {
        const double dx = p[0] - sas_.x[q], dy = p[1] - sas_.y[q], dz = p[2] - sas_.z[q];
        if (dx * dx + dy * dy + dz * dz < probe * probe) return 1.0;
      }
    }
    return 0.0;
  }
  /// Vacc_splineAcc with no inflation: the product of the cell atoms' switching values (atom
  /// order), stopping below 1e-9.
  double spline(const double p[3], double window) const {
    std::size_t b, e;
    if (!cells_.cell(p, b, e)) return 1.0;
    double value = 1.0;
    for (std::size_t s = b; s < e; ++s) {
      value *= spline_atom(p, cells_.atom(s), window);
      if (value < kApbsSmall) return value;
    }
    return value;
  }
  double reach() const { return cells_.reach(); }

 private:
  double dist2(const double p[3], int a) const {
    const double dx = p[0] - atoms_.x[a], dy = p[1] - atoms_.y[a], dz = p[2] - atoms_.z[a];
    return dx * dx + dy * dy + dz * dz;
  }
  double spline_atom(const double p[3], int a, double w) const {
    const double r = atoms_.radius[a];
    if (!(r > 0.0)) return 1.0;
    const double outer = r + w, inner = std::max(0.0, r - w);
    const double dist = std::sqrt(dist2(p, a));
    if (dist < inner || std::fabs(dist - inner) < kApbsSmall) return 0.0;
    if (dist > outer || std::fabs(dist - outer) < kApbsSmall) return 1.0;
    const double sm = dist - r + w, sm2 = sm * sm;
    return 0.75 * sm2 / (w * w) - 0.25 * sm * sm2 / (w * w * w);
  }
  const Atoms& atoms_;
  ApbsCellList cells_;
  SasPoints sas_;
};

/// `f(p)` at every node, planes in parallel.
template <class F>
std::vector<double> at_nodes(const GridSpec& g, int threads, F&& f) {
  std::vector<double> out(g.point_count());
  const long n0 = static_cast<long>(g.dims[0]), n1 = static_cast<long>(g.dims[1]), n2 = static_cast<long>(g.dims[2]);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (long k = 0; k < n2; ++k)
    for (long j = 0; j < n1; ++j)
      for (long i = 0; i < n0; ++i) {
        const double p[3] = {g.position(0, i), g.position(1, j), g.position(2, k)};
        out[static_cast<std::size_t>(i + n0 * (j + n1 * k))] = f(p, i, j, k);
      }
  return out;
}

/// The ions' number (charge_weighted: charge) density where the ions reach, mol/L (APBS VDT_NDENS/QDENS).
std::vector<double> ion_density(const PbMapInputs& in, const Accessibility& acc, bool charge_weighted, int threads) {
  const PbOptions& o = *in.options;
  const std::vector<PbIon> species = ion_species(o);
  const double ion_radius = pb_ion_radius(o);
  const std::vector<double>& u = *in.potential;
  const long n0 = static_cast<long>(in.grid->dims[0]), n1 = static_cast<long>(in.grid->dims[1]);
  std::vector<double> out = at_nodes(*in.grid, threads, [&](const double* p, long i, long j, long k) {
    if (std::fabs(acc.ivdw(p, ion_radius) - 1.0) >= kApbsSmall) return 0.0;
    const double phi = u[static_cast<std::size_t>(i + n0 * (j + n1 * k))];
    double sum = 0;
    for (const PbIon& ion : species) {
      const double q = ion.charge;
      double term;
      if (o.equation == PbEquation::Nonlinear) {
        double x = -q * phi;
        if (std::fabs(x) > kApbsExpMax) x = x > 0 ? kApbsExpMax : -kApbsExpMax;  // APBS's Vcap_exp (silently, here)
        term = ion.concentration * std::exp(x);
      } else {
        term = ion.concentration * (1 - q * phi + 0.5 * q * q * phi * phi);
      }
      sum += charge_weighted ? term * q : term;
    }
    return sum;
  });
  return out;
}

/// Central differences inside, one-sided on the faces (APBS Vgrid_gradient at the nodes).
double gradient(const std::vector<double>& u, const GridSpec& g, long i, long j, long k, int axis) {
  const long n[3] = {static_cast<long>(g.dims[0]), static_cast<long>(g.dims[1]), static_cast<long>(g.dims[2])};
  const long stride = axis == 0 ? 1 : (axis == 1 ? n[0] : n[0] * n[1]);
  const long node[3] = {i, j, k};
  const long idx = i + n[0] * (j + n[1] * k);
  const double h = g.spacing[axis];
  const bool left = node[axis] > 0, right = node[axis] < n[axis] - 1;
  const auto at = [&](long x) { return u[static_cast<std::size_t>(x)]; };
  if (left && right) return (at(idx + stride) - at(idx - stride)) / (2 * h);
  if (right) return (at(idx + stride) - at(idx)) / h;
  if (left) return (at(idx) - at(idx - stride)) / h;
  return 0.0;
}

}  // namespace

std::string pb_map_name(PbMapKind kind) { return info(kind).name; }

PbMapKind parse_pb_map_kind(const std::string& text) {
  std::string names;
  for (const KindInfo& k : kKinds) {
    if (text == k.name) return k.kind;
    names += (names.empty() ? "" : ", ") + std::string(k.name);
  }
  throw UsageError("unknown PB map '" + text + "' (APBS's write types: " + names + ")");
}

bool pb_map_needs_potential(PbMapKind kind) {
  return kind == PbMapKind::Potential || kind == PbMapKind::Lap || kind == PbMapKind::Edens ||
         kind == PbMapKind::Ndens || kind == PbMapKind::Qdens;
}

bool pb_map_needs_coefficients(PbMapKind kind) {
  return kind == PbMapKind::Charge || kind == PbMapKind::Kappa || kind == PbMapKind::DielX ||
         kind == PbMapKind::DielY || kind == PbMapKind::DielZ;
}

namespace {

/// The maps the solve already holds (the potential, the charges, the ion accessibility, the
/// dielectric faces) into `m`; false for the others.
bool map_from_the_solve(PbMapKind kind, const PbMapInputs& in, PbMapValues& m) {
  const GridSpec& g = *in.grid;
  const PbCoefficients* c = in.coefficients;
  switch (kind) {
    case PbMapKind::Potential:
      m.values = *in.potential;
      return true;
    case PbMapKind::Charge: {
      const double volume = g.spacing[0] * g.spacing[1] * g.spacing[2];
      m.values.resize(c->charge.size());
      for (std::size_t i = 0; i < m.values.size(); ++i) m.values[i] = c->charge[i] / volume;
      return true;
    }
    case PbMapKind::Kappa:
      m.values = c->accessibility;
      return true;
    case PbMapKind::DielX:
    case PbMapKind::DielY:
    case PbMapKind::DielZ: {
      const int axis = kind == PbMapKind::DielX ? 0 : (kind == PbMapKind::DielY ? 1 : 2);
      m.values = axis == 0 ? c->eps_x : (axis == 1 ? c->eps_y : c->eps_z);
      m.grid.origin[axis] += 0.5 * g.spacing[axis];
      return true;
    }
    default:
      return false;
  }
}

/// The maps computed here from the atoms (APBS's accessibility definitions) or from the potential.
void map_computed_here(PbMapKind kind, const PbMapInputs& in, int threads, PbMapValues& m) {
  const GridSpec& g = *in.grid;
  const PbOptions& o = *in.options;
  const Accessibility acc(*in.atoms, o, threads);
  const auto title_with = [](const char* base, const char* what, double value) {
    char text[96];
    std::snprintf(text, sizeof text, "%s (%4.3f %s)", base, value, what);
    return std::string(text);
  };
  switch (kind) {
    case PbMapKind::Smol:
      m.title = title_with(m.title.c_str(), "PROBE", o.probe_radius);
      m.values = at_nodes(g, threads, [&](const double* p, long, long, long) { return acc.mol(p, o.probe_radius); });
      break;
    case PbMapKind::Sspl:
      if (o.spline_window > acc.reach())
        throw UsageError("the sspl map's window (" + std::to_string(o.spline_window) +
                         " Å) exceeds APBS's accessibility reach (" + std::to_string(acc.reach()) + " Å)");
      m.title = title_with(m.title.c_str(), "WINDOW", o.spline_window);
      m.values =
          at_nodes(g, threads, [&](const double* p, long, long, long) { return acc.spline(p, o.spline_window); });
      break;
    case PbMapKind::Vdw:
      m.values = at_nodes(g, threads, [&](const double* p, long, long, long) { return acc.vdw(p); });
      break;
    case PbMapKind::Ivdw: {
      const double ion = pb_ion_radius(o);
      m.title = title_with(m.title.c_str(), "RADIUS", ion);
      m.values = at_nodes(g, threads, [&](const double* p, long, long, long) { return acc.ivdw(p, ion); });
      break;
    }
    case PbMapKind::Lap: {
      const std::vector<double>& u = *in.potential;
      const long n0 = static_cast<long>(g.dims[0]), n1 = static_cast<long>(g.dims[1]),
                 n2 = static_cast<long>(g.dims[2]);
      m.values = at_nodes(g, threads, [&](const double*, long i, long j, long k) {
        if (i == 0 || j == 0 || k == 0 || i == n0 - 1 || j == n1 - 1 || k == n2 - 1) return 0.0;
        const std::size_t idx = static_cast<std::size_t>(i + n0 * (j + n1 * k));
        const std::size_t sy = static_cast<std::size_t>(n0), sz = static_cast<std::size_t>(n0 * n1);
        const double h[3] = {g.spacing[0], g.spacing[1], g.spacing[2]};
        const double dxx = (u[idx + 1] - 2 * u[idx] + u[idx - 1]) / (h[0] * h[0]);
        const double dyy = (u[idx + sy] - 2 * u[idx] + u[idx - sy]) / (h[1] * h[1]);
        const double dzz = (u[idx + sz] - 2 * u[idx] + u[idx - sz]) / (h[2] * h[2]);
        return (dxx + dyy + dzz) / 3.0;
      });
      break;
    }
    case PbMapKind::Edens: {
      const std::vector<double>& u = *in.potential;
      m.values = at_nodes(g, threads, [&](const double* p, long i, long j, long k) {
        const double eps =
            o.solute_dielectric + (o.solvent_dielectric - o.solute_dielectric) * acc.mol(p, o.probe_radius);
        double sum = 0;
        for (int axis = 0; axis < 3; ++axis) {
          const double d = gradient(u, g, i, j, k, axis);
          sum += eps * d * d;
        }
        return sum;
      });
      break;
    }
    case PbMapKind::Ndens:
    case PbMapKind::Qdens:
      m.values = ion_density(in, acc, kind == PbMapKind::Qdens, threads);
      break;
    default:
      break;
  }
}

}  // namespace

PbMapValues pb_map(PbMapKind kind, const PbMapInputs& in) {
  if (!in.atoms || !in.grid || !in.options || in.atoms->empty())
    throw Error("internal error: a PB map needs the atoms, grid and options");
  const GridSpec& g = *in.grid;
  if (pb_map_needs_potential(kind) && (!in.potential || in.potential->size() != g.point_count()))
    throw Error("the PB map " + pb_map_name(kind) + " needs the solved potential");
  if (pb_map_needs_coefficients(kind) &&
      (!in.coefficients || !in.coefficients->whole() || in.coefficients->eps_x.size() != g.point_count() ||
       in.coefficients->charge.size() != g.point_count()))
    throw Error("the PB map " + pb_map_name(kind) + " needs the solve's coefficient maps and charges");
  const int threads = threads_to_use(in.threads);
  PbMapValues m;
  m.kind = kind;
  m.grid = g;
  m.unit = info(kind).unit;
  m.title = info(kind).title;
  if (!map_from_the_solve(kind, in, m)) map_computed_here(kind, in, threads, m);
  return m;
}

}  // namespace espgrid::pb
