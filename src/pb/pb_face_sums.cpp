#include "src/pb/pb_face_sums.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "src/core/errors.h"
#include "src/core/process_trace.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/core/thread_count.h"
#include "src/pb_numerics/pb_pipeline_math.h"

namespace espgrid::pb {
namespace {

/// A face of the grid: the plane normal to `normal` at its first (side 0) or last node.
struct Face {
  int normal = 0, side = 0, u = 0, v = 0;
  std::array<std::int64_t, 2> n{};
  std::array<double, 2> h{}, origin{};
  double level = 0;
};

std::array<Face, 6> faces_of(const GridSpec& grid) {
  std::array<Face, 6> faces;
  for (int normal = 0; normal < 3; ++normal)
    for (int side = 0; side < 2; ++side) {
      Face& f = faces[static_cast<std::size_t>(2 * normal + side)];
      f.normal = normal;
      f.side = side;
      f.u = normal == 0 ? 1 : 0;
      f.v = normal == 2 ? 1 : 2;
      f.n = {grid.dims[f.u], grid.dims[f.v]};
      f.h = {grid.spacing[f.u], grid.spacing[f.v]};
      f.origin = {grid.origin[f.u], grid.origin[f.v]};
      f.level = grid.position(normal, side ? grid.dims[normal] - 1 : 0);
    }
  return faces;
}

/// The atoms of one distance band of one face and how they are summed: exactly at every node
/// (stride 1) or on a lattice of every stride-th node, checked at the lattice cells' centres.
struct Band {
  std::vector<std::uint32_t> atoms;
  std::array<std::int64_t, 2> stride{1, 1};
  std::vector<double> exact;    ///< stride 1: every node of the face
  std::vector<double> lattice;  ///< the lattice's values, (K+1) along u × (K+1) along v
  double measured = 0;          ///< kT/e: the largest error at the centres
  bool pending = true;          ///< to be (re-)evaluated in the next round
  bool exact_sum() const { return stride[0] == 1; }
};

/// Lattice cells along an axis of n nodes at stride s: the last lattice node reaches node n − 1
/// or beyond (the sum is as good outside the box).
std::int64_t cells(std::int64_t n, std::int64_t s) { return (n - 1 + s - 1) / s; }

/// The stride for a band whose atoms are at least `inner` Å from the face: about
/// kLatticePerDistance·inner, with at least three cells (the cubic's four lattice nodes); 1 (the
/// exact sum) where that leaves under two nodes a cell.
std::array<std::int64_t, 2> first_stride(const Face& f, double inner) {
  std::array<std::int64_t, 2> s{};
  for (int d = 0; d < 2; ++d) {
    s[d] = std::min(static_cast<std::int64_t>(std::floor(kLatticePerDistance * inner / f.h[d])), (f.n[d] - 1) / 3);
    if (s[d] < 2) return {1, 1};
  }
  return s;
}

/// Lagrange weights of the cubic through lattice nodes k−1..k+2 at t (lattice units), k clamped
/// to the lattice (one-sided at its ends).
struct Stencil {
  std::int64_t first = 0;  ///< k − 1
  double w[4] = {0, 0, 0, 0};
};

Stencil stencil(double t, std::int64_t lattice_cells) {
  const std::int64_t k = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(t)), 1, lattice_cells - 2);
  const double x = t - static_cast<double>(k);
  Stencil s;
  s.first = k - 1;
  s.w[0] = -x * (x - 1) * (x - 2) / 6;
  s.w[1] = (x + 1) * (x - 1) * (x - 2) / 2;
  s.w[2] = -(x + 1) * x * (x - 2) / 2;
  s.w[3] = (x + 1) * x * (x - 1) / 6;
  return s;
}

FacePlaneSum plane(const Face& f, const Band& b, std::array<double, 2> offset, std::array<std::int64_t, 2> dims,
                   std::array<std::int64_t, 2> stride) {
  FacePlaneSum p;
  p.normal = f.normal;
  p.u = f.u;
  p.v = f.v;
  for (int d = 0; d < 2; ++d) {
    p.spacing[d] = f.h[d] * static_cast<double>(stride[d]);
    p.origin[d] = f.origin[d] + offset[d] * p.spacing[d];
    p.dims[d] = dims[d];
  }
  p.level = f.level;
  p.atoms = &b.atoms;
  return p;
}

/// A band's lattice interpolated separably: first along u at every node of each lattice row, into
/// (K+1) rows of the face's n[0] nodes (left unfilled by the allocation: each is written here, and
/// the thread that writes them faults in their pages), then (add_band_row) along v for one row of
/// the face.
std::unique_ptr<double[]> lattice_rows(const Face& f, const Band& b) {
  const std::int64_t ku = cells(f.n[0], b.stride[0]), kv = cells(f.n[1], b.stride[1]);
  auto rows = std::make_unique_for_overwrite<double[]>(static_cast<std::size_t>((kv + 1) * f.n[0]));
  for (std::int64_t a = 0; a < f.n[0]; ++a) {
    const Stencil s = stencil(static_cast<double>(a) / static_cast<double>(b.stride[0]), ku);
    for (std::int64_t r = 0; r <= kv; ++r) {
      const double* l = &b.lattice[static_cast<std::size_t>(r * (ku + 1) + s.first)];
      rows[static_cast<std::size_t>(r * f.n[0] + a)] = s.w[0] * l[0] + s.w[1] * l[1] + s.w[2] * l[2] + s.w[3] * l[3];
    }
  }
  return rows;
}

/// Row c of the face (its n[0] nodes, `out`) plus the band's values there: its exact sum, or its
/// lattice's rows (lattice_rows) interpolated along v, in one pass: each node adds its four terms
/// in the lattice rows' order.
void add_band_row(const Face& f, const Band& b, const double* rows, std::int64_t c, double* out) {
  if (b.exact_sum()) {
    const double* e = &b.exact[static_cast<std::size_t>(c * f.n[0])];
    for (std::int64_t a = 0; a < f.n[0]; ++a) out[a] += e[a];
    return;
  }
  const Stencil s = stencil(static_cast<double>(c) / static_cast<double>(b.stride[1]), cells(f.n[1], b.stride[1]));
  const double* r[4];
  for (int k = 0; k < 4; ++k) r[k] = rows + (s.first + k) * f.n[0];
  for (std::int64_t a = 0; a < f.n[0]; ++a) {
    double x = out[a];
    x += s.w[0] * r[0][a];
    x += s.w[1] * r[1][a];
    x += s.w[2] * r[2][a];
    x += s.w[3] * r[3][a];
    out[a] = x;
  }
}

/// Where row c of a face goes in boundary_nodes' order: the nodes [first, last) of the row that the
/// face owns (a node on an edge takes the value of the first face that holds it: z faces, then y,
/// then x), the first at `at` and each next one `step` further on.
struct RowPlace {
  std::int64_t first = 0, last = 0;
  long at = 0, step = 1;
};

RowPlace place(const Face& f, std::int64_t c, const long* n) {
  RowPlace p;
  if (f.normal != 2 && (c == 0 || c == n[2] - 1)) return p;  // an x or y face's row c is at z = c: a z face's
  p.first = f.normal == 0 ? 1 : 0;                           // an x face's ends are y faces'
  p.last = f.normal == 0 ? f.n[0] - 1 : f.n[0];
  long node[3];
  node[f.normal] = f.side ? n[f.normal] - 1 : 0;
  node[f.v] = static_cast<long>(c);
  node[f.u] = static_cast<long>(p.first);
  p.at = face_index(n, node[0], node[1], node[2]);
  if (p.last - p.first < 2) return p;
  ++node[f.u];
  p.step = face_index(n, node[0], node[1], node[2]) - p.at;
  return p;
}

/// The largest difference between the lattice's interpolation and the exact sums at the centres of
/// the cells of lattice row c (`centres`: K along u × K along v).
double centre_row_error(const Face& f, const Band& b, const std::vector<double>& centres, std::int64_t c) {
  const std::int64_t ku = cells(f.n[0], b.stride[0]), kv = cells(f.n[1], b.stride[1]);
  const Stencil sv = stencil(static_cast<double>(c) + 0.5, kv);
  double worst = 0;
  for (std::int64_t a = 0; a < ku; ++a) {
    const Stencil su = stencil(static_cast<double>(a) + 0.5, ku);
    double value = 0;
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i)
        value += sv.w[j] * su.w[i] * b.lattice[static_cast<std::size_t>((sv.first + j) * (ku + 1) + su.first + i)];
    worst = std::max(worst, std::abs(value - centres[static_cast<std::size_t>(c * ku + a)]));
  }
  return worst;
}

using FaceBands = std::array<std::vector<Band>, 6>;

/// `work(face)` for the six faces on threads of their own (1.9 M atoms: ~0.1 s a face).
template <class Work>
void for_each_face(Work&& work) {
  std::array<std::future<void>, 6> done;
  for (std::size_t fi = 0; fi < done.size(); ++fi) done[fi] = std::async(std::launch::async, [&work, fi] { work(fi); });
  for (std::future<void>& d : done) d.get();
}

/// Each face's atoms in bands by their distance from it: 0 below D₀, then [D₀·2^(k−1), D₀·2^k),
/// each far band with its first lattice.
FaceBands bands_of(const Atoms& atoms, const std::array<Face, 6>& faces) {
  const double* axis[3] = {atoms.x.data(), atoms.y.data(), atoms.z.data()};
  FaceBands bands;
  for_each_face([&](std::size_t fi) {
    const Face& f = faces[fi];
    const double near = kNearBandNodes * std::max(f.h[0], f.h[1]);
    std::vector<Band>& fb = bands[fi];
    for (std::size_t a = 0; a < atoms.size(); ++a) {
      const double rho = std::abs(axis[f.normal][a] - f.level);
      const std::size_t k = rho < near ? 0 : 1 + static_cast<std::size_t>(std::floor(std::log2(rho / near)));
      if (fb.size() <= k) fb.resize(k + 1);
      fb[k].atoms.push_back(static_cast<std::uint32_t>(a));
    }
    for (std::size_t k = 1; k < fb.size(); ++k)
      fb[k].stride = first_stride(f, near * std::ldexp(1.0, static_cast<int>(k) - 1));
  });
  return bands;
}

/// A lattice to check: its face, its band and the exact sums at its cells' centres.
struct Check {
  const Face* face = nullptr;
  Band* band = nullptr;
  const std::vector<double>* centres = nullptr;
};

/// Each lattice's largest error at its cells' centres, a lattice row at a time on `threads` (the
/// capsid's six first lattices hold most of the rows: a thread a lattice would leave the others
/// idle). The largest of the rows' errors does not depend on the rows' order.
void measure(const std::vector<Check>& checks, int threads) {
  std::vector<std::pair<std::size_t, std::int64_t>> rows;  // (check, lattice row)
  for (std::size_t k = 0; k < checks.size(); ++k)
    for (std::int64_t c = 0; c < cells(checks[k].face->n[1], checks[k].band->stride[1]); ++c) rows.emplace_back(k, c);
  std::vector<double> worst(rows.size());
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads_to_use(threads))
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Check& k = checks[rows[r].first];
    worst[r] = centre_row_error(*k.face, *k.band, *k.centres, rows[r].second);
  }
  for (const Check& k : checks) k.band->measured = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    Band& b = *checks[rows[r].first].band;
    b.measured = std::max(b.measured, worst[r]);
  }
}

/// One round: every pending band's sums in one call to `sum` (an exact band's face, a lattice and
/// its centres), the lattices' errors measured at the centres on `threads`.
void evaluate_round(const std::array<Face, 6>& faces, FaceBands& bands, const FaceSumEvaluator& sum, FaceSumReport& rep,
                    int threads) {
  std::vector<FacePlaneSum> sums;
  std::vector<Band*> owners;  // the band of each exact or lattice sum
  for (std::size_t fi = 0; fi < faces.size(); ++fi)
    for (Band& b : bands[fi]) {
      if (!b.pending || b.atoms.empty()) continue;
      const Face& f = faces[fi];
      owners.push_back(&b);
      if (b.exact_sum()) {
        sums.push_back(plane(f, b, {0, 0}, f.n, {1, 1}));
        continue;
      }
      const std::int64_t ku = cells(f.n[0], b.stride[0]), kv = cells(f.n[1], b.stride[1]);
      sums.push_back(plane(f, b, {0, 0}, {ku + 1, kv + 1}, b.stride));
      sums.push_back(plane(f, b, {0.5, 0.5}, {ku, kv}, b.stride));
    }
  Stopwatch clock;
  std::vector<std::vector<double>> values = sum(sums);
  rep.sum_seconds += clock.seconds();
  clock.restart();
  if (values.size() != sums.size()) throw Error("internal error: the boundary's face sums returned too few planes");
  for (std::size_t s = 0; s < sums.size(); ++s) {
    if (values[s].size() != sums[s].node_count())
      throw Error("internal error: a boundary face sum returned " + std::to_string(values[s].size()) + " values for " +
                  std::to_string(sums[s].node_count()) + " nodes");
    rep.pair_terms += static_cast<double>(sums[s].node_count()) * static_cast<double>(sums[s].atoms->size());
  }
  std::vector<Check> checks;
  std::size_t next = 0, owner = 0;
  for (std::size_t fi = 0; fi < faces.size(); ++fi)
    for (Band& b : bands[fi]) {
      if (owner == owners.size() || owners[owner] != &b) continue;
      ++owner;
      b.pending = false;
      if (b.exact_sum()) {
        b.exact = std::move(values[next++]);
        b.measured = 0;
        continue;
      }
      b.lattice = std::move(values[next++]);
      checks.push_back({&faces[fi], &b, &values[next++]});
    }
  measure(checks, threads);
  rep.check_seconds += clock.seconds();
}

/// Where a face's measured errors add up to more than the bound, halves its worst band's lattice
/// (below stride 2: the exact sum) for the next round. Whether anything is pending.
bool refine(FaceBands& bands, double bound) {
  bool pending = false;
  for (std::vector<Band>& fb : bands) {
    double total = 0;
    Band* worst = nullptr;
    for (Band& b : fb) {
      total += b.measured;
      if (!b.exact_sum() && (worst == nullptr || b.measured > worst->measured)) worst = &b;
    }
    if (total <= bound || worst == nullptr) continue;
    for (int d = 0; d < 2; ++d) worst->stride[d] /= 2;
    if (worst->stride[0] < 2 || worst->stride[1] < 2) worst->stride = {1, 1};
    worst->measured = 0;
    worst->pending = pending = true;
  }
  return pending;
}

/// The boundary nodes' values in boundary_nodes' order (pb::face_index), into `out` (sized): each
/// face's bands added, in order, a face's row at a time, on `threads` (0: all cores); each node has
/// one owner (RowPlace), so the rows go in any order. On the path the solve waits on: the capsid's
/// 2.4 M nodes took 37-48 ms on an H200 host with a thread a face and the ordering on one, 3-4 ms so.
void assemble(const std::array<Face, 6>& faces, const FaceBands& bands, const long* n, std::vector<double>& out,
              FaceSumReport& rep, int threads) {
  const int team = threads_to_use(threads);
  // Every lattice along u first (a band's rows: up to half a face).
  std::vector<std::pair<std::size_t, std::size_t>> lattices;  // (face, band)
  std::array<std::vector<std::unique_ptr<double[]>>, 6> rows;
  std::array<double, 6> measured{};
  for (std::size_t fi = 0; fi < faces.size(); ++fi) {
    rows[fi].resize(bands[fi].size());
    for (std::size_t bi = 0; bi < bands[fi].size(); ++bi) {
      const Band& b = bands[fi][bi];
      if (b.atoms.empty()) continue;
      measured[fi] += b.measured;
      if (!b.exact_sum()) lattices.emplace_back(fi, bi);
    }
  }
  rep.measured_error = *std::max_element(measured.begin(), measured.end());
#pragma omp parallel for schedule(dynamic) num_threads(team)
  for (std::size_t l = 0; l < lattices.size(); ++l) {
    const auto [fi, bi] = lattices[l];
    rows[fi][bi] = lattice_rows(faces[fi], bands[fi][bi]);
  }
  std::vector<std::pair<std::size_t, std::int64_t>> face_rows;  // (face, row v)
  std::int64_t widest = 0;
  for (std::size_t fi = 0; fi < faces.size(); ++fi) {
    for (std::int64_t c = 0; c < faces[fi].n[1]; ++c) face_rows.emplace_back(fi, c);
    widest = std::max(widest, faces[fi].n[0]);
  }
#pragma omp parallel num_threads(team)
  {
    std::vector<double> row(static_cast<std::size_t>(widest));
#pragma omp for schedule(static)
    for (std::size_t r = 0; r < face_rows.size(); ++r) {
      const auto [fi, c] = face_rows[r];
      const Face& f = faces[fi];
      const RowPlace p = place(f, c, n);
      if (p.first == p.last) continue;
      std::fill(row.begin(), row.begin() + f.n[0], 0.0);
      for (std::size_t bi = 0; bi < bands[fi].size(); ++bi)
        if (!bands[fi][bi].atoms.empty()) add_band_row(f, bands[fi][bi], rows[fi][bi].get(), c, row.data());
      double* to = out.data() + p.at;
      for (std::int64_t a = p.first; a < p.last; ++a, to += p.step) *to = row[static_cast<std::size_t>(a)];
    }
  }
}

}  // namespace

template <class T>
std::vector<std::vector<double>> split_sums(const std::vector<FacePlaneSum>& sums, const T* values, int threads) {
  std::vector<std::size_t> start(sums.size() + 1, 0), order(sums.size());
  for (std::size_t i = 0; i < sums.size(); ++i) start[i + 1] = start[i] + sums[i].node_count(), order[i] = i;
  // The largest first (the exact faces' sums hold most of the values), each on the next free thread.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sums[a].node_count() > sums[b].node_count(); });
  std::vector<std::vector<double>> out(sums.size());
#pragma omp parallel for schedule(dynamic) num_threads(threads_to_use(threads))
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    out[i].assign(values + start[i], values + start[i + 1]);
  }
  return out;
}
template std::vector<std::vector<double>> split_sums(const std::vector<FacePlaneSum>&, const float*, int);
template std::vector<std::vector<double>> split_sums(const std::vector<FacePlaneSum>&, const double*, int);

FaceSumEvaluator shared_among_ranks(FaceSumEvaluator sum, FaceSumShare share) {
  if (share.ranks <= 1) return sum;
  return [sum = std::move(sum), share = std::move(share)](const std::vector<FacePlaneSum>& sums) {
    // The costliest first, each to the rank with the least so far (ties: the lower rank).
    std::vector<std::size_t> order(sums.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto cost = [&](std::size_t i) {
      return static_cast<double>(sums[i].node_count()) * static_cast<double>(sums[i].atoms->size());
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost(a) > cost(b); });
    std::vector<double> load(static_cast<std::size_t>(share.ranks), 0.0);
    std::vector<FacePlaneSum> mine;
    std::vector<std::size_t> mine_at;
    for (const std::size_t i : order) {
      const auto least = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      load[static_cast<std::size_t>(least)] += cost(i);
      if (least == share.rank) mine.push_back(sums[i]), mine_at.push_back(i);
    }
    const std::vector<std::vector<double>> own = mine.empty() ? std::vector<std::vector<double>>{} : sum(mine);
    if (own.size() != mine.size()) throw Error("internal error: a face sum evaluator returned too few sums");
    std::vector<std::size_t> start(sums.size() + 1, 0);
    for (std::size_t i = 0; i < sums.size(); ++i) start[i + 1] = start[i] + sums[i].node_count();
    std::vector<double> all(start.back(), 0.0);
    for (std::size_t m = 0; m < mine.size(); ++m) {
      if (own[m].size() != mine[m].node_count())
        throw Error("internal error: a face sum evaluator returned the wrong number of values");
      std::copy(own[m].begin(), own[m].end(), all.begin() + static_cast<std::ptrdiff_t>(start[mine_at[m]]));
    }
    share.add_across_ranks(all);
    return split_sums(sums, all.data(), 1);  // one thread, as before: the ranks share the host's cores
  };
}

std::vector<double> banded_face_values(const Atoms& atoms, const GridSpec& grid, double bound,
                                       const FaceSumEvaluator& sum, FaceSumReport* report, int threads) {
  if (!(bound > 0)) throw Error("internal error: the banded boundary sum needs a bound > 0");
  Stopwatch clock;
  const std::array<Face, 6> faces = faces_of(grid);
  const long n[3] = {static_cast<long>(grid.dims[0]), static_cast<long>(grid.dims[1]), static_cast<long>(grid.dims[2])};
  // The values' array made (zeroed: a vector) beside the bands' planning: the capsid's 19 MB of new
  // pages cost ~13 ms on one thread, after the sums (on the path the solve waits on) otherwise.
  std::future<std::vector<double>> made = std::async(std::launch::async, [count = face_node_count(n)] {
    return std::vector<double>(static_cast<std::size_t>(count));
  });
  trace_process("boundary: planning the bands");
  FaceBands bands = bands_of(atoms, faces);
  std::vector<double> out = made.get();
  trace_process("boundary: bands planned");
  FaceSumReport rep;
  rep.bound = bound;
  rep.plan_seconds = clock.seconds();
  do {
    ++rep.rounds;
    evaluate_round(faces, bands, sum, rep, threads);
    clock.restart();
  } while (refine(bands, bound));
  rep.check_seconds += clock.seconds();
  clock.restart();
  assemble(faces, bands, n, out, rep, threads);
  rep.assemble_seconds = clock.seconds();
  trace_process("boundary: interpolated and ordered");
  rep.exact_pair_terms = static_cast<double>(out.size()) * static_cast<double>(atoms.size());
  if (report) *report = rep;
  return out;
}

std::string describe(const FaceSumReport& report) {
  if (report.rounds == 0) return {};
  return ", faces by distance bands: measured error " + short_scientific(report.measured_error) + " kT/e (bound " +
         short_scientific(report.bound) + "), " +
         short_fixed(100.0 * report.pair_terms / std::max(report.exact_pair_terms, 1.0), 1) +
         "% of the exact sum's terms";
}

void add_boundary_phases(std::vector<PhaseTiming>& phases, double seconds, const FaceSumReport& report) {
  // Assigned in place: GCC 12 warns (-Warray-bounds, a false positive) on a PhaseTiming temporary
  // built from a literal longer than std::string's inline buffer.
  const auto add = [&phases](std::string name, double s) {
    phases.emplace_back();
    phases.back().name = std::move(name);
    phases.back().seconds = s;
  };
  add("boundary", seconds);
  if (report.rounds == 0) return;
  add("boundary: bands planned (host)", report.plan_seconds);
  const std::string rounds = report.rounds == 1 ? "one round" : std::to_string(report.rounds) + " rounds";
  add("boundary: sums, " + rounds, report.sum_seconds);
  if (report.device_seconds > 0) add("boundary: of the sums, device kernels", report.device_seconds);
  add("boundary: lattices' errors checked", report.check_seconds);
  add("boundary: interpolated and ordered", report.assemble_seconds);
}

}  // namespace espgrid::pb
