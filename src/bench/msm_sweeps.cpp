// The multilevel summation's sweeps of `espgrid bench` (msm_sweeps.h). Longer than 500 lines
// because the two sweeps share their structures (lattices of a bundled molecule), their runs of
// the MSM and the exact kernel, and their result files' helpers.
#include "src/bench/msm_sweeps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>

#include "src/compute/approximation_error.h"
#include "src/compute/oracle.h"
#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/text_format.h"
#include "src/msm/msm_method.h"
#include "src/msm/msm_plan.h"
#include "src/structure/structure_reader.h"

namespace espgrid::bench {
namespace {

constexpr double kLatticeGap = 4.0;   // Å between neighbouring copies' bounding spheres
constexpr double kMapPadding = 10.0;  // Å around the structure, as `espgrid map` by default
constexpr int kMsmRepeats = 3;        // timed runs of one MSM measurement at most: maps up to 4 GB

const KernelVariant& msm_kernel(bool gpu, PairModel model) {
  return approximate_kernel(gpu ? Backend::Cuda : Backend::Cpu, model);
}
const KernelVariant& exact_kernel(bool gpu) { return default_kernel(gpu ? Backend::Cuda : Backend::Cpu); }

/// The accuracy presets a sweep measures: the one asked for, or 1e-3 and 1e-4.
std::vector<double> presets(const RunOptions& run) {
  if (!run.method.msm.empty()) return {0.0};  // explicit parameters: one setting
  if (run.method.accuracy > 0) return {run.method.accuracy};
  return {1e-3, 1e-4};
}

RunOptions with_accuracy(RunOptions run, double accuracy) {
  if (accuracy > 0) run.method.accuracy = accuracy;
  return run;
}

Atoms read_molecule(const std::string& path) {
  Structure s = read_structure(path, format_from_extension(path));
  return std::move(s.atoms);
}

/// The usual bench JSON document with `arrays` (name → JSON array text) added at the end.
std::string document(std::string_view kind, const Metadata& meta,
                     const std::vector<std::pair<std::string, std::string>>& arrays) {
  std::string json = json_document(kind, meta, {});
  const std::size_t end = json.rfind("\n}");
  json = json.substr(0, end);
  for (const auto& [name, array] : arrays) json += ",\n  " + json_quoted(name) + ": " + array;
  return json + "\n}\n";
}

std::string array_of(const std::vector<std::string>& objects) {
  std::string out = "[";
  for (std::size_t i = 0; i < objects.size(); ++i) out += std::string(i ? "," : "") + "\n    " + objects[i];
  return out + (objects.empty() ? "]" : "\n  ]");
}

std::string csv_num(double v) { return std::isfinite(v) ? number_text(v) : ""; }

/// Fields joined by commas, with the line's end.
std::string join(const std::vector<std::string>& fields) {
  std::string out;
  for (const std::string& f : fields) {
    if (!out.empty()) out.push_back(',');
    out.append(f);
  }
  out.push_back('\n');
  return out;
}

// ---- --sweep msm --------------------------------------------------------------------------------

const char* const kPhases[] = {"binning", "anterpolation", "restriction",   "cutoff",
                               "top",     "prolongation",  "interpolation", "short_range"};

struct MsmMeasurement {
  std::string part;       ///< "atoms" (the size sweep) or "map" (the map-size sweep)
  std::string structure;  ///< "actin_dimer.pqr x 27 (3x3x3)"
  std::size_t atoms = 0;
  double net_charge = 0;
  std::int64_t nx = 0, ny = 0, nz = 0;
  double spacing = 0;
  std::string kernel;
  double accuracy = 0;  ///< the preset (0: explicit parameters)
  MsmParameters params;
  int levels = 0;
  double bound = 0;
  Stats kernel_ms;
  double wall_ms = kNotAvailable;
  std::vector<PhaseTiming> phases;
  ApproximationError error;
  std::string exact;
  double exact_ms = kNotAvailable;  ///< the whole map's kernel time (scaled from the planes timed)
  bool exact_scaled = false;
  Status exact_status = Status::Skipped;
  double speedup = kNotAvailable;  ///< exact_ms / MSM kernel ms
  Status status = Status::Skipped;
  std::string note;
  std::string device;

  double points() const { return static_cast<double>(nx) * static_cast<double>(ny) * static_cast<double>(nz); }
  double phase_ms(std::string_view name) const {
    for (const PhaseTiming& p : phases)
      if (p.name == name) return 1e3 * p.seconds;
    return kNotAvailable;
  }
};

struct ExactTiming {
  Measurement row;
  double whole_ms = kNotAvailable;
  bool scaled = false;
};

ExactTiming time_exact(const MsmSweepContext& c, const PreparedProblem& problem) {
  ExactTiming t;
  RunOptions run = c.run;
  run.method = {};
  t.row = measure("msm", exact_kernel(c.use_gpu), problem, run, c.settings);
  const GridSumProblem p = problem.view(nullptr);
  if (t.row.status == Status::Ok && t.row.atom_evals_per_s > 0) {
    t.whole_ms =
        1e3 * static_cast<double>(p.point_count()) * static_cast<double>(p.atom_count) / t.row.atom_evals_per_s;
    t.scaled = t.row.ny_used < p.ny || t.row.nz_used < p.nz;
  }
  return t;
}

MsmMeasurement measure_msm(const MsmSweepContext& c, const std::string& part, const std::string& structure,
                           const PreparedProblem& problem, double accuracy, const ExactTiming& exact) {
  const KernelVariant& k = msm_kernel(c.use_gpu, c.physics.model);
  const GridSumProblem full = problem.view(nullptr);
  MsmMeasurement row;
  row.part = part;
  row.structure = structure;
  row.atoms = full.atom_count;
  row.nx = full.nx;
  row.ny = full.ny;
  row.nz = full.nz;
  row.spacing = problem.grid().spacing[0];
  row.kernel = std::string(k.name);
  row.accuracy = accuracy;
  row.exact = std::string(exact_kernel(c.use_gpu).name);
  row.exact_ms = exact.whole_ms;
  row.exact_scaled = exact.scaled;
  row.exact_status = exact.row.status;
  const RunOptions run = with_accuracy(c.run, accuracy);
  try {
    const ResolvedMsm resolved = resolve_msm(run.method, full.model);
    row.params = resolved.params;
    row.bound = resolved.error_bound;
    row.levels = msm::make_plan(full, resolved.params).level_count();
    std::vector<float> out;
    Settings s = c.settings;
    s.repeats = std::min(s.repeats, kMsmRepeats);
    const auto run_once = [&] {
      out.assign(full.point_count(), std::numeric_limits<float>::quiet_NaN());  // poison, outside the timing
      return k.run(problem.view(out.data()), run);
    };
    const TimedRuns timed = time_runs(
        run_once, [&] { return count_nonfinite(out.data(), out.size()); }, s);
    row.kernel_ms = {1e3 * timed.kernel_seconds.median, 1e3 * timed.kernel_seconds.min, 1e3 * timed.kernel_seconds.max};
    row.wall_ms = 1e3 * timed.wall_seconds_median;
    row.phases = timed.last.phases;
    row.device = timed.last.device;
    row.error = sampled_approximation_error(problem.view(out.data()), c.settings.check_points, c.settings.seed);
    row.status = row.error.within(row.bound) && timed.unwritten == 0 ? Status::Ok : Status::Fail;
    if (timed.unwritten) row.note = std::to_string(timed.unwritten) + " points not written; ";
    if (row.status == Status::Fail) row.note += "relative RMS over the declared bound; ";
    if (std::isfinite(row.exact_ms) && row.kernel_ms.median > 0) row.speedup = row.exact_ms / row.kernel_ms.median;
    if (exact.row.status != Status::Ok) row.note += "exact kernel: " + exact.row.note + "; ";
  } catch (const Error& e) {
    row.status = Status::Fail;
    row.note += e.what();
  }
  return row;
}

void print_msm_header() {
  std::printf("%-34s %9s %13s %5s %7s %-28s %9s %9s %10s %8s %10s %8s %s\n", "STRUCTURE", "ATOMS", "MAP", "H", "PRESET",
              "PARAMETERS", "MSM ms", "WALL ms", "REL RMS", "BOUND", "EXACT ms", "SPEEDUP", "CHECK");
  std::fflush(stdout);
}

void print_msm_line(const MsmMeasurement& r) {
  const std::string map = std::to_string(r.nx) + "x" + std::to_string(r.ny) + "x" + std::to_string(r.nz);
  const std::string params = r.params.order ? describe(r.params) + ", L" + std::to_string(r.levels) : "-";
  std::printf("%-34s %9zu %13s %5.2f %7s %-28s %9s %9s %10s %8s %10s %8s %s", r.structure.c_str(), r.atoms, map.c_str(),
              r.spacing, r.accuracy > 0 ? format_or_dash("%g", r.accuracy).c_str() : "params", params.c_str(),
              format_or_dash("%.1f", r.kernel_ms.median).c_str(), format_or_dash("%.1f", r.wall_ms).c_str(),
              format_or_dash("%.2e", r.error.relative_rms).c_str(), format_or_dash("%.0e", r.bound).c_str(),
              (format_or_dash("%.1f", r.exact_ms) + (r.exact_scaled ? "*" : "")).c_str(),
              (format_or_dash("%.1f", r.speedup) + (std::isfinite(r.speedup) ? "x" : "")).c_str(),
              std::string(status_name(r.status)).c_str());
  if (!r.note.empty()) std::printf("  (%s)", r.note.c_str());
  std::printf("\n");
  if (!r.phases.empty()) {
    std::printf("    phases ms:");
    for (const PhaseTiming& p : r.phases) std::printf(" %s %.2f", p.name.c_str(), 1e3 * p.seconds);
    std::printf("\n");
  }
  std::fflush(stdout);
}

std::string msm_measurement_json(const MsmMeasurement& r) {
  JsonLine o;
  o.str("part", r.part).str("structure", r.structure).integer("atoms", static_cast<long long>(r.atoms));
  o.num("net_charge", r.net_charge).integer("nx", r.nx).integer("ny", r.ny).integer("nz", r.nz);
  o.num("points", r.points()).num("spacing", r.spacing).str("kernel", r.kernel).num("accuracy", r.accuracy);
  o.num("cutoff", r.params.cutoff).num("msm_spacing", r.params.spacing).integer("order", r.params.order);
  o.integer("levels", r.levels).num("bound", r.bound);
  o.num("kernel_ms_median", r.kernel_ms.median).num("kernel_ms_min", r.kernel_ms.min);
  o.num("kernel_ms_max", r.kernel_ms.max).num("wall_ms_median", r.wall_ms);
  JsonLine phases;
  for (const char* name : kPhases) phases.num(name, r.phase_ms(name));
  o.object("phases_ms", phases);
  o.num("relative_rms", r.error.relative_rms).num("rms_abs", r.error.rms_abs).num("max_abs", r.error.max_abs);
  o.integer("points_checked", static_cast<long long>(r.error.points));
  o.str("exact_kernel", r.exact).num("exact_ms", r.exact_ms).flag("exact_scaled", r.exact_scaled);
  o.str("exact_verified", status_name(r.exact_status)).num("speedup", r.speedup);
  o.str("verified", status_name(r.status)).str("note", r.note).str("device", r.device);
  return o.text();
}

std::string msm_csv(const std::vector<MsmMeasurement>& rows) {
  std::string csv =
      "part,structure,atoms,net_charge,nx,ny,nz,points,spacing,kernel,accuracy,cutoff,msm_spacing,order,levels,bound,"
      "kernel_ms_median,kernel_ms_min,kernel_ms_max,wall_ms_median";
  for (const char* name : kPhases) {
    csv += ',';
    csv += name;
    csv += "_ms";
  }
  csv +=
      ",relative_rms,rms_abs,max_abs,points_checked,exact_kernel,exact_ms,exact_scaled,exact_verified,speedup,"
      "verified,note,device\n";
  for (const MsmMeasurement& r : rows) {
    std::vector<std::string> f = {csv_field(r.part),           csv_field(r.structure),
                                  std::to_string(r.atoms),     csv_num(r.net_charge),
                                  std::to_string(r.nx),        std::to_string(r.ny),
                                  std::to_string(r.nz),        csv_num(r.points()),
                                  csv_num(r.spacing),          csv_field(r.kernel),
                                  csv_num(r.accuracy),         csv_num(r.params.cutoff),
                                  csv_num(r.params.spacing),   std::to_string(r.params.order),
                                  std::to_string(r.levels),    csv_num(r.bound),
                                  csv_num(r.kernel_ms.median), csv_num(r.kernel_ms.min),
                                  csv_num(r.kernel_ms.max),    csv_num(r.wall_ms)};
    for (const char* name : kPhases) f.push_back(csv_num(r.phase_ms(name)));
    for (std::string field :
         {csv_num(r.error.relative_rms), csv_num(r.error.rms_abs), csv_num(r.error.max_abs),
          std::to_string(r.error.points), csv_field(r.exact), csv_num(r.exact_ms),
          std::string(r.exact_scaled ? "true" : "false"), std::string(status_name(r.exact_status)), csv_num(r.speedup),
          std::string(status_name(r.status)), csv_field(r.note), csv_field(r.device)})
      f.push_back(std::move(field));
    csv += join(f);
  }
  return csv;
}

/// Where MSM starts to beat the exact kernel, per preset, from the size sweep's rows: the atom
/// count at which the speedup crosses 1, interpolated in log-log between neighbouring sizes.
struct Crossover {
  double accuracy = 0;
  double atoms = kNotAvailable;
  std::string text;
};

std::vector<Crossover> crossovers(const std::vector<MsmMeasurement>& rows, const std::vector<double>& accuracies) {
  std::vector<Crossover> out;
  for (const double accuracy : accuracies) {
    std::vector<const MsmMeasurement*> series;
    for (const MsmMeasurement& r : rows)
      if (r.part == "atoms" && r.accuracy == accuracy && std::isfinite(r.speedup)) series.push_back(&r);
    std::sort(series.begin(), series.end(),
              [](const MsmMeasurement* a, const MsmMeasurement* b) { return a->atoms < b->atoms; });
    Crossover c;
    c.accuracy = accuracy;
    const std::string preset = accuracy > 0 ? "preset " + format_or_dash("%g", accuracy) : "the parameters given";
    if (series.empty()) {
      c.text = preset + ": nothing measured";
    } else if (series.front()->speedup >= 1) {
      c.text = preset + ": MSM faster than the exact kernel at every size measured, from " +
               with_commas(series.front()->atoms) + " atoms";
    } else if (series.back()->speedup < 1) {
      c.text = preset + ": MSM slower than the exact kernel at every size measured, up to " +
               with_commas(series.back()->atoms) + " atoms";
    } else {
      for (std::size_t i = 1; i < series.size(); ++i) {
        const MsmMeasurement* a = series[i - 1];
        const MsmMeasurement* b = series[i];
        if (a->speedup < 1 && b->speedup >= 1) {
          const double t = -std::log(a->speedup) / (std::log(b->speedup) - std::log(a->speedup));
          c.atoms = std::exp(std::log(static_cast<double>(a->atoms)) +
                             t * (std::log(static_cast<double>(b->atoms)) - std::log(static_cast<double>(a->atoms))));
          c.text = preset + ": MSM overtakes the exact kernel at about " +
                   with_commas(static_cast<std::uint64_t>(std::llround(c.atoms))) + " atoms (between " +
                   with_commas(a->atoms) + " and " + with_commas(b->atoms) + ")";
          break;
        }
      }
    }
    out.push_back(c);
  }
  return out;
}

PreparedProblem problem_for(const Atoms& atoms, const std::array<double, 3>& spacing, const PhysicsOptions& physics) {
  GridRequest request;
  request.spacing = spacing;
  request.padding = kMapPadding;
  const GridSpec grid = make_grid(request, atoms);
  check_grid_fits(grid);
  return PreparedProblem::for_physics(atoms, grid, physics);
}

// ---- --sweep msm-accuracy ----------------------------------------------------------------------

struct AccuracyMeasurement {
  std::string molecule;
  std::size_t atoms = 0;
  double net_charge = 0;
  std::int64_t nx = 0, ny = 0, nz = 0;
  double spacing = 0;
  std::string kernel;
  MsmParameters params;
  int levels = 0;
  ApproximationError error;
  double kernel_ms = kNotAvailable;
  Status status = Status::Skipped;
  std::string note;
};

/// The settings measured for the table: cubic and quintic over a/h = 4 to 10, and the same
/// a/h at several cutoffs (to show the error depends on a/h and the order alone).
std::vector<MsmParameters> accuracy_settings(const RunOptions& run) {
  if (!run.method.msm.empty()) return {run.method.msm};
  return {{12, 3, 3},   {12, 2, 3},    {12, 1.5, 3}, {8, 1, 3},   {12, 3, 5},  {8, 2, 5},
          {10, 2, 5},   {8, 1.6, 5},   {12, 2.4, 5}, {12, 2, 5},  {9, 1.5, 5}, {10, 1.25, 5},
          {12, 1.5, 5}, {14, 1.75, 5}, {12, 1.2, 5}, {14, 1.4, 5}};
}

}  // namespace

std::vector<LatticeSize> msm_sweep_sizes(bool gpu) {
  if (!gpu) return {{{1, 1, 1}}, {{2, 1, 1}}};
  return {{{1, 1, 1}}, {{2, 1, 1}}, {{3, 2, 1}}, {{3, 3, 2}}, {{4, 4, 3}}, {{5, 5, 4}}};
}

Atoms lattice_structure(const Atoms& base, std::array<int, 3> copies, double gap, std::uint64_t seed) {
  if (base.empty()) throw Error("lattice_structure: no atoms");
  double centre[3] = {0, 0, 0};
  for (std::size_t a = 0; a < base.size(); ++a) {
    centre[0] += base.x[a];
    centre[1] += base.y[a];
    centre[2] += base.z[a];
  }
  for (double& c : centre) c /= static_cast<double>(base.size());
  double radius = 0;
  for (std::size_t a = 0; a < base.size(); ++a)
    radius = std::max(radius, std::hypot(base.x[a] - centre[0], base.y[a] - centre[1], base.z[a] - centre[2]));
  const double pitch = 2 * radius + gap;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Atoms out;
  out.reserve(base.size() * static_cast<std::size_t>(copies[0] * copies[1] * copies[2]));
  for (int k = 0; k < copies[2]; ++k)
    for (int j = 0; j < copies[1]; ++j)
      for (int i = 0; i < copies[0]; ++i) {
        // A uniformly random rotation from a random unit quaternion (Shoemake).
        const double u1 = u(rng), u2 = u(rng), u3 = u(rng);
        const double a = std::sqrt(1 - u1), b = std::sqrt(u1);
        const double w = a * std::sin(2 * M_PI * u2), x = a * std::cos(2 * M_PI * u2);
        const double y = b * std::sin(2 * M_PI * u3), z = b * std::cos(2 * M_PI * u3);
        const double r[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)},
                                {2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)},
                                {2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)}};
        const double shift[3] = {i * pitch, j * pitch, k * pitch};
        for (std::size_t n = 0; n < base.size(); ++n) {
          const double p[3] = {base.x[n] - centre[0], base.y[n] - centre[1], base.z[n] - centre[2]};
          double q[3];
          for (int d = 0; d < 3; ++d) q[d] = r[d][0] * p[0] + r[d][1] * p[1] + r[d][2] * p[2] + centre[d] + shift[d];
          out.push_back(q[0], q[1], q[2], base.charge[n], base.radius[n]);
        }
      }
  return out;
}

bool sweep_msm(const MsmSweepContext& c) {
  const std::string base_path = c.base_structure.empty() ? "data/achbp.pqr" : c.base_structure;
  if (!std::filesystem::exists(base_path))
    throw UsageError("--sweep msm builds its structures from " + base_path +
                     ", which is not there: run from the repository root or give the molecule as the input file");
  const Atoms base = read_molecule(base_path);
  const std::string base_name = std::filesystem::path(base_path).filename().string();
  const std::vector<double> accuracies = presets(c.run);
  std::printf("\n== msm: %s vs %s; copies of %s (%s atoms) on a lattice, map spacing %g Å, padding %g Å ==\n",
              std::string(msm_kernel(c.use_gpu, c.physics.model).name).c_str(),
              std::string(exact_kernel(c.use_gpu).name).c_str(), base_name.c_str(), with_commas(base.size()).c_str(),
              c.spacing[0], kMapPadding);
  std::printf(
      "MSM ms: median kernel time (every phase) of %d runs; REL RMS: relative RMS error against the double\n"
      "oracle at %zu sampled points >= 1.4 Å from atoms; EXACT ms: the exact kernel's time for the whole map\n"
      "(* scaled from the planes that fit --budget); SPEEDUP = EXACT / MSM.\n",
      std::min(c.settings.repeats, kMsmRepeats), c.settings.check_points);
  print_msm_header();
  std::vector<MsmMeasurement> rows;
  bool ok = true;
  const auto add_structure = [&](const std::string& part, const std::string& name, const Atoms& atoms,
                                 const std::array<double, 3>& spacing) {
    const PreparedProblem problem = problem_for(atoms, spacing, c.physics);
    const ExactTiming exact = time_exact(c, problem);
    for (const double accuracy : accuracies) {
      MsmMeasurement row = measure_msm(c, part, name, problem, accuracy, exact);
      row.net_charge = atoms.total_charge();
      print_msm_line(row);
      ok = ok && row.status == Status::Ok;
      rows.push_back(std::move(row));
    }
  };
  // Small molecules first: where the exact kernel wins.
  for (const char* small : {"data/fasciculin2.pqr"})
    if (std::filesystem::exists(small) && base_path.find("fasciculin2") == std::string::npos)
      add_structure("atoms", std::filesystem::path(small).filename().string(), read_molecule(small), c.spacing);
  const std::vector<LatticeSize> sizes = msm_sweep_sizes(c.use_gpu);
  Atoms map_sweep_atoms;
  std::string map_sweep_name;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const std::array<int, 3> n = sizes[s].copies;
    const Atoms atoms = lattice_structure(base, n, kLatticeGap, c.settings.seed + s);
    const std::string name = base_name + " x " + std::to_string(n[0] * n[1] * n[2]) + " (" + std::to_string(n[0]) +
                             "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]) + ")";
    add_structure("atoms", name, atoms, c.spacing);
    if (s == (c.use_gpu ? 2u : 0u)) {
      map_sweep_atoms = atoms;
      map_sweep_name = name;
    }
  }
  // The map-size sweep: one structure at several spacings (points × 8 per halving).
  const std::vector<double> spacings =
      c.use_gpu ? std::vector<double>{1.0, 0.5, 0.35, 0.25} : std::vector<double>{2.0, 1.0};
  std::printf("-- map sizes: %s at several spacings --\n", map_sweep_name.c_str());
  for (const double h : spacings)
    if (h != c.spacing[0]) add_structure("map", map_sweep_name, map_sweep_atoms, {h, h, h});
  const std::vector<Crossover> cross = crossovers(rows, accuracies);
  for (const Crossover& x : cross) std::printf("crossover  %s\n", x.text.c_str());
  std::fflush(stdout);
  if (!c.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(c.out_dir, ec);
    if (ec) throw Error("cannot create " + c.out_dir + ": " + ec.message());
    const std::string stem = (std::filesystem::path(c.out_dir) / "bench-msm").string();
    write_text(stem + ".csv", msm_csv(rows));
    std::vector<std::string> objects, crossing;
    for (const MsmMeasurement& r : rows) objects.push_back(msm_measurement_json(r));
    for (const Crossover& x : cross) {
      JsonLine o;
      o.num("accuracy", x.accuracy).num("atoms", x.atoms).str("text", x.text);
      crossing.push_back(o.text());
    }
    write_text(stem + ".json",
               document("msm", c.meta, {{"msm_rows", array_of(objects)}, {"crossover", array_of(crossing)}}));
    std::printf("wrote %s.csv\nwrote %s.json\n", stem.c_str(), stem.c_str());
  }
  return ok;
}

namespace {

/// The molecules --sweep msm-accuracy measures: the input, or the bundled structures.
std::vector<std::string> accuracy_molecules(const MsmSweepContext& c) {
  std::vector<std::string> molecules;
  if (!c.base_structure.empty())
    molecules.push_back(c.base_structure);
  else
    for (const char* m : {"data/fasciculin2.pqr", "data/boxb_rna_pdb2pqr3.pqr", "data/npep_boxb_complex.pqr",
                          "data/actin_dimer.pqr", "data/achbp.pqr"})
      molecules.emplace_back(m);
  for (const std::string& m : molecules)
    if (!std::filesystem::exists(m))
      throw UsageError("--sweep msm-accuracy reads " + m + ", which is not there: run from the repository root");
  return molecules;
}

/// bench-msm-accuracy.csv and .json in c.out_dir: every measurement, and the worst error per setting.
void write_accuracy_files(const MsmSweepContext& c, const std::vector<AccuracyMeasurement>& rows,
                          const std::vector<std::string>& worst_objects) {
  std::error_code ec;
  std::filesystem::create_directories(c.out_dir, ec);
  if (ec) throw Error("cannot create " + c.out_dir + ": " + ec.message());
  const std::string stem = (std::filesystem::path(c.out_dir) / "bench-msm-accuracy").string();
  std::string csv =
      "molecule,atoms,net_charge,nx,ny,nz,spacing,kernel,cutoff,msm_spacing,order,ratio,levels,relative_rms,rms_abs,"
      "max_abs,max_abs_anywhere,points_checked,kernel_ms,verified,note\n";
  std::vector<std::string> objects;
  for (const AccuracyMeasurement& r : rows) {
    csv += join({csv_field(r.molecule),
                 std::to_string(r.atoms),
                 csv_num(r.net_charge),
                 std::to_string(r.nx),
                 std::to_string(r.ny),
                 std::to_string(r.nz),
                 csv_num(r.spacing),
                 csv_field(r.kernel),
                 csv_num(r.params.cutoff),
                 csv_num(r.params.spacing),
                 std::to_string(r.params.order),
                 csv_num(r.params.cutoff / r.params.spacing),
                 std::to_string(r.levels),
                 csv_num(r.error.relative_rms),
                 csv_num(r.error.rms_abs),
                 csv_num(r.error.max_abs),
                 csv_num(r.error.max_abs_anywhere),
                 std::to_string(r.error.points),
                 csv_num(r.kernel_ms),
                 std::string(status_name(r.status)),
                 csv_field(r.note)});
    JsonLine o;
    o.str("molecule", r.molecule).integer("atoms", static_cast<long long>(r.atoms)).num("net_charge", r.net_charge);
    o.integer("nx", r.nx).integer("ny", r.ny).integer("nz", r.nz).num("spacing", r.spacing).str("kernel", r.kernel);
    o.num("cutoff", r.params.cutoff).num("msm_spacing", r.params.spacing).integer("order", r.params.order);
    o.num("ratio", r.params.cutoff / r.params.spacing).integer("levels", r.levels);
    o.num("relative_rms", r.error.relative_rms).num("rms_abs", r.error.rms_abs).num("max_abs", r.error.max_abs);
    o.num("max_abs_anywhere", r.error.max_abs_anywhere)
        .integer("points_checked", static_cast<long long>(r.error.points));
    o.num("kernel_ms", r.kernel_ms).str("verified", status_name(r.status)).str("note", r.note);
    objects.push_back(o.text());
  }
  write_text(stem + ".csv", csv);
  write_text(stem + ".json", document("msm-accuracy", c.meta,
                                      {{"accuracy_rows", array_of(objects)}, {"worst", array_of(worst_objects)}}));
  std::printf("wrote %s.csv\nwrote %s.json\n", stem.c_str(), stem.c_str());
}

}  // namespace

bool sweep_msm_accuracy(const MsmSweepContext& c) {
  const std::vector<std::string> molecules = accuracy_molecules(c);
  const Backend backend = c.use_gpu ? Backend::Cuda : Backend::Cpu;
  const KernelVariant& k = msm_kernel(c.use_gpu, c.physics.model);
  const KernelVariant& exact = c.use_gpu ? exact_kernel(true) : fast_reference_kernel();
  std::printf(
      "\n== msm-accuracy: %s against %s (the exact map, every point), model %s, map spacing %g Å, padding %g Å ==\n",
      std::string(k.name).c_str(), std::string(exact.name).c_str(), model_name(c.physics.model).c_str(), c.spacing[0],
      kMapPadding);
  std::printf("%-24s %7s %8s %-26s %5s %3s %10s %10s %10s %10s\n", "MOLECULE", "ATOMS", "CHARGE", "PARAMETERS", "A/H",
              "L", "REL RMS", "RMS |ERR|", "MAX |ERR|", "MSM ms");
  std::fflush(stdout);
  std::vector<AccuracyMeasurement> rows;
  bool ok = true;
  for (const std::string& path : molecules) {
    const Atoms atoms = read_molecule(path);
    const PreparedProblem problem = problem_for(atoms, c.spacing, c.physics);
    const GridSumProblem view = problem.view(nullptr);
    RunOptions run = c.run;
    run.method = {};
    std::vector<float> reference(problem.point_count(), std::numeric_limits<float>::quiet_NaN());
    exact.run(problem.view(reference.data()), run);
    for (const MsmParameters& params : accuracy_settings(c.run)) {
      AccuracyMeasurement row;
      row.molecule = std::filesystem::path(path).filename().string();
      row.atoms = atoms.size();
      row.net_charge = atoms.total_charge();
      row.nx = view.nx;
      row.ny = view.ny;
      row.nz = view.nz;
      row.spacing = problem.grid().spacing[0];
      row.kernel = std::string(k.name);
      row.params = params;
      try {
        row.levels = msm::make_plan(view, params).level_count();
        std::vector<float> out(problem.point_count(), std::numeric_limits<float>::quiet_NaN());
        const RunTiming t = run_msm_with(backend, problem.view(out.data()), params, run);
        row.kernel_ms = 1e3 * t.kernel_seconds;
        row.error = approximation_error(view, out.data(), reference.data());
        row.status = row.error.points > 0 && row.error.nonfinite == 0 ? Status::Ok : Status::Fail;
      } catch (const Error& e) {
        row.status = Status::Fail;
        row.note = e.what();
      }
      ok = ok && row.status == Status::Ok;
      std::printf("%-24s %7zu %+8.2f %-26s %5.2f %3d %10s %10s %10s %10s%s\n", row.molecule.c_str(), row.atoms,
                  row.net_charge, describe(params).c_str(), params.cutoff / params.spacing, row.levels,
                  format_or_dash("%.3e", row.error.relative_rms).c_str(),
                  format_or_dash("%.3e", row.error.rms_abs).c_str(), format_or_dash("%.3e", row.error.max_abs).c_str(),
                  format_or_dash("%.1f", row.kernel_ms).c_str(),
                  row.status == Status::Fail ? ("  FAIL: " + row.note).c_str() : "");
      std::fflush(stdout);
      rows.push_back(row);
    }
  }
  // Per setting, the worst error over the molecules: the column the presets are chosen from.
  std::printf("-- worst relative RMS error per setting (over %zu molecules) --\n", molecules.size());
  std::vector<std::string> worst_objects;
  for (const MsmParameters& params : accuracy_settings(c.run)) {
    double worst = 0;
    for (const AccuracyMeasurement& r : rows)
      if (r.params.cutoff == params.cutoff && r.params.spacing == params.spacing && r.params.order == params.order)
        worst = std::max(worst, r.error.relative_rms);
    std::printf("%-26s a/h %5.2f: %.3e\n", describe(params).c_str(), params.cutoff / params.spacing, worst);
    JsonLine o;
    o.num("cutoff", params.cutoff).num("msm_spacing", params.spacing).integer("order", params.order);
    o.num("ratio", params.cutoff / params.spacing).num("worst_relative_rms", worst);
    worst_objects.push_back(o.text());
  }
  std::fflush(stdout);
  if (!c.out_dir.empty()) write_accuracy_files(c, rows, worst_objects);
  return ok;
}

}  // namespace espgrid::bench
