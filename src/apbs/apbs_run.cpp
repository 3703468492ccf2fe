#include "src/apbs/apbs_run.h"

#include <cmath>
#include <future>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "src/compute/cuda_driver.h"
#include "src/core/grid.h"
#include "src/core/stopwatch.h"
#include "src/core/switches.h"
#include "src/core/units.h"
#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"

namespace espgrid::apbs {
namespace {

/// One file a `write` asks for: the finest calculation of its block writes it.
struct PlannedFile {
  const WriteRequest* request = nullptr;
  std::size_t elec = 0;
  std::string name;  ///< as APBS names it (the stem from the input)
  std::string path;  ///< resolved
  NodeBlock block;
  std::unique_ptr<AtomicOutputFile> output;
};

std::vector<PlannedFile> plan_files(const ApbsInput& input, const CalculationPlan& plan, const std::string& base) {
  std::vector<PlannedFile> files;
  std::map<std::string, std::size_t> line_of;  // a path already planned → the write line asking for it
  for (std::size_t e = 0; e < input.elecs.size(); ++e) {
    const ElecBlock& elec = input.elecs[e];
    const GridSpec grid = plan.calculations[plan.result_of_elec[e]].grid.grid();
    std::vector<std::pair<int, NodeBlock>> parts;
    if (elec.method == ElecMethod::Parallel) {
      for (const Partition& p : plan.partitions[e]) parts.push_back({p.rank, NodeBlock{p.first, p.count}});
    } else {
      parts.push_back({0, whole_grid(grid)});
    }
    for (const WriteRequest& w : elec.writes)
      for (const auto& [rank, block] : parts) {
        PlannedFile f;
        f.request = &w;
        f.elec = e;
        f.name = output_file_name(w, rank);
        f.path = resolve_path(f.name, base);
        f.block = block;
        const auto [it, inserted] = line_of.emplace(f.path, w.line);
        if (!inserted)
          throw ApbsInputError(input.file, w.line,
                               "this write names the file " + f.name + " that line " + std::to_string(it->second) +
                                   " writes too (give it another stem)");
        if (w.format == WriteFormat::Gz && !gzip_supported())
          throw ApbsInputError(input.file, w.line, "this espgrid was built without zlib: write ... dx instead of gz");
        files.push_back(std::move(f));
      }
  }
  return files;
}

/// The grid a map of `type` lies on: APBS puts dielx/y/z on the faces, half a spacing along
/// their axis from the nodes.
GridSpec map_grid(GridSpec grid, WriteType type) {
  const int axis = type == WriteType::DielX ? 0 : type == WriteType::DielY ? 1 : type == WriteType::DielZ ? 2 : -1;
  if (axis >= 0) grid.origin[axis] += 0.5 * grid.spacing[axis];
  return grid;
}

const std::vector<float>& map_values(const SolveOutcome& outcome, WriteType type, std::vector<float>& potential) {
  if (type == WriteType::Pot) {
    if (outcome.potential.empty()) return outcome.values;
    potential.assign(outcome.potential.begin(), outcome.potential.end());
    return potential;
  }
  for (const auto& [t, values] : outcome.maps)
    if (t == type) return values;
  throw Error("internal: the solve returned no " + std::string(write_type_name(type)) + " map");
}

void check_finite(const std::vector<float>& values, const GridSpec& grid, const std::string& what) {
  for (std::size_t n = 0; n < values.size(); ++n)
    if (!std::isfinite(values[n])) {
      const auto nx = static_cast<std::size_t>(grid.dims[0]), ny = static_cast<std::size_t>(grid.dims[1]);
      throw Error(what + " is not finite at grid point (" + std::to_string(n % nx) + ", " +
                  std::to_string((n / nx) % ny) + ", " + std::to_string(n / (nx * ny)) + "); nothing written");
    }
}

std::vector<float> block_values(const std::vector<float>& values, const GridSpec& grid, const NodeBlock& b) {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(b.count[0] * b.count[1] * b.count[2]));
  for (std::int64_t k = 0; k < b.count[2]; ++k)
    for (std::int64_t j = 0; j < b.count[1]; ++j)
      for (std::int64_t i = 0; i < b.count[0]; ++i)
        out.push_back(values[static_cast<std::size_t>(
            (b.first[0] + i) + grid.dims[0] * ((b.first[1] + j) + grid.dims[1] * (b.first[2] + k)))]);
  return out;
}

GridSpec block_grid(const GridSpec& grid, const NodeBlock& b) {
  GridSpec g = grid;
  for (int j = 0; j < 3; ++j) {
    g.dims[j] = b.count[j];
    g.origin[j] = grid.position(j, b.first[j]);
  }
  return g;
}

std::string print_expression(const ApbsInput& input, const PrintStatement& print) {
  std::string text;
  for (std::size_t i = 0; i < print.elecs.size(); ++i) {
    if (i > 0) text += print.signs[i] > 0 ? "+ " : "- ";
    const auto e = static_cast<std::size_t>(print.elecs[i]);
    text += std::to_string(e + 1) + " ";
    if (!input.elecs[e].name.empty()) text += "(" + input.elecs[e].name + ") ";
  }
  if (!text.empty()) text.pop_back();
  return text;
}

/// Writes `outcome`'s maps of the files of block `elec` to their temporary files.
void write_block_files(std::vector<PlannedFile>& files, std::size_t elec, const ElecBlock& block,
                       const SolveOutcome& outcome, const CalculationResult& calc, const ApbsRunOptions& options,
                       ApbsResult& result) {
  std::vector<float> potential;
  for (PlannedFile& f : files) {
    if (f.elec != elec) continue;
    const WriteType type = f.request->type;
    const std::vector<float>& values = map_values(outcome, type, potential);
    const std::string what =
        "the " + std::string(write_type_name(type)) + " map of CALCULATION #" + std::to_string(calc.number);
    check_finite(values, outcome.grid, what);
    const GridSpec grid = map_grid(outcome.grid, type);
    const double ion_radius = [&] {
      double r = 0;
      for (const IonSpecies& ion : block.ions) r = std::max(r, ion.radius);
      return r;
    }();
    const std::string title =
        write_title(type, block.srad.set ? block.srad.value : 1.4, block.swin.set ? block.swin.value : 0.3, ion_radius);
    if (options.write_files) {
      f.output = std::make_unique<AtomicOutputFile>(f.path);
      write_apbs_dx(f.output->temporary_path(), grid, values, f.block, title,
                    result.input.file + ", " + elec_label(result.input, elec), f.request->format == WriteFormat::Gz,
                    options.solver.threads);
    }
    ApbsMap map;
    map.path = f.path;
    map.type = type;
    map.elec = elec;
    map.grid = block_grid(grid, f.block);
    if (options.keep_maps) map.values = block_values(values, grid, f.block);
    result.maps.push_back(std::move(map));
  }
}

}  // namespace

double kilojoules_per_kt(double temperature) { return kBoltzmann * temperature * kAvogadro * 1e-3; }

namespace {

/// Every grid fits in memory (and under ESPGRID_MAX_GRID_POINTS), before anything is solved.
void check_grids_fit(const ApbsInput& input, const CalculationPlan& plan) {
  for (std::size_t i = 0; i < plan.calculations.size(); ++i) {
    const Calculation& c = plan.calculations[i];
    try {
      check_grid_fits(c.grid.grid());
    } catch (const UsageError& e) {
      throw ApbsInputError(input.file, input.elecs[c.elec].line,
                           "CALCULATION #" + std::to_string(i + 1) + " of this block: " + e.what());
    }
  }
}

/// The request for calculation `i` of the plan; `next_grid` holds the next level's grid when it
/// focuses from this one.
SolveRequest request_for(const CalculationPlan& plan, std::size_t i, const ApbsInput& input,
                         const std::vector<Molecule>& molecules, const SolveOutcome* previous,
                         const ApbsRunOptions& options, GridSpec& next_grid) {
  const Calculation& calc = plan.calculations[i];
  const ElecBlock& elec = input.elecs[calc.elec];
  SolveRequest request;
  request.elec = &elec;
  request.calculation = &calc;
  request.atoms = &molecules[static_cast<std::size_t>(elec.molecule - 1)].atoms;
  request.parent = calc.boundary == Boundary::Focus ? previous : nullptr;
  if (i + 1 < plan.calculations.size() && plan.calculations[i + 1].boundary == Boundary::Focus) {
    next_grid = plan.calculations[i + 1].grid.grid();
    request.next_level = &next_grid;
  }
  if (calc.finest())
    for (const WriteRequest& w : elec.writes) request.maps.push_back(w.type);
  // mg-para: APBS weights each level's energy by the rank's partition (Vpmg_setPart); their sum
  // over the ranks is the global fine box. The finest level is that box: every weight there is 1.
  if (elec.method == ElecMethod::Parallel && !calc.finest())
    request.energy_partition = pb::box_of(plan.calculations[plan.result_of_elec[calc.elec]].grid.grid());
  request.solver = options.solver;
  return request;
}

void add_prints(ApbsResult& result) {
  for (const PrintStatement& print : result.input.prints) {
    PrintResult p;
    p.expression = print_expression(result.input, print);
    p.deprecated_energy = print.deprecated_energy;
    for (std::size_t i = 0; i < print.elecs.size(); ++i)
      p.energy += print.signs[i] * result.elecs[static_cast<std::size_t>(print.elecs[i])].energy.value_or(0.0);
    result.prints.push_back(std::move(p));
  }
}

/// Solves every calculation in order, each focusing level from the one before; the finest level
/// of each block writes its files (to temporary files) and gives the block's result.
void solve_plan(const CalculationPlan& plan, const std::vector<Molecule>& molecules, std::vector<PlannedFile>& files,
                const ApbsRunOptions& options, ApbsObserver* observer, ApbsResult& result) {
  const ApbsInput& input = result.input;
  std::shared_ptr<SolveOutcome> previous;
  for (std::size_t i = 0; i < plan.calculations.size(); ++i) {
    const Calculation& calc = plan.calculations[i];
    const ElecBlock& elec = input.elecs[calc.elec];
    GridSpec next_grid;
    const SolveRequest request = request_for(plan, i, input, molecules, previous.get(), options, next_grid);
    auto outcome = std::make_shared<SolveOutcome>(solve_calculation(request));
    if (i + 1 == plan.calculations.size() && options.after_last_solve) options.after_last_solve();
    CalculationResult done;
    done.number = static_cast<int>(i + 1);
    done.calculation = calc;
    const double kj = kilojoules_per_kt(elec.temp.value);
    if (outcome->energy) done.energy = *outcome->energy * kj;
    if (outcome->components)
      done.components = EnergyComponents{outcome->components->fixed_charge * kj,
                                         outcome->components->mobile_charge * kj, outcome->components->dielectric * kj};
    for (double a : outcome->atom_energies) done.atom_energies.push_back(a * kj);
    done.solver = outcome->summary;
    done.seconds = outcome->seconds;
    done.phases = outcome->phases;
    if (calc.finest()) {
      const std::size_t first_map = result.maps.size();
      write_block_files(files, calc.elec, elec, *outcome, done, options, result);
      for (std::size_t m = first_map; m < result.maps.size(); ++m)
        if (options.write_files) done.files.emplace_back(result.maps[m].type, result.maps[m].path);
      ElecResult e;
      e.name = elec.name;
      e.energy = done.energy;
      e.atom_energies = done.atom_energies;
      e.calculation = done.number;
      result.elecs.push_back(std::move(e));
    }
    result.calculations.push_back(done);
    if (observer) observer->calculation_done(input, done);
    previous = std::move(outcome);  // the next level focuses from it; the one before is freed
  }
}

}  // namespace

ApbsResult run_apbs(const std::string& path, const ApbsRunOptions& options, ApbsObserver* observer) {
  const Stopwatch clock;
  // CUDA's start and the device's context (a process's first ~0.25 s on a GPU host) beside the
  // input's reading and the first level's host preparation: the solve waits for them where it first
  // needs them. Only where the solver may be CUDA's (may_use_cuda). ESPGRID_EARLY_CONTEXT=0: not
  // beside (for measuring what it saves).
  std::future<void> device_ready;
  if (may_use_cuda(options.solver) && !options.dry_run && !switched_off("ESPGRID_EARLY_CONTEXT"))
    device_ready = std::async(std::launch::async, [device = options.solver.device] { cuda::warm_up_device(device); });
  ApbsResult result;
  result.input = read_apbs_input(resolve_path(path, options.directory));
  result.input.file = path;
  const ApbsInput& input = result.input;
  result.notices = input.notices;
  const std::vector<Molecule> molecules = load_molecules(input, options.directory, result.notices);
  std::vector<std::array<double, 3>> centers;
  for (const Molecule& m : molecules) centers.push_back(m.center);
  const CalculationPlan plan = plan_calculations(input, centers);
  if (observer) {
    for (const std::string& n : result.notices) observer->notice(n);
    observer->molecules_loaded(input, molecules);
  }
  if (options.dry_run) {  // the grids first, then whether the solver takes them
    for (std::size_t i = 0; i < plan.calculations.size(); ++i) {
      CalculationResult planned;
      planned.number = static_cast<int>(i + 1);
      planned.calculation = plan.calculations[i];
      result.calculations.push_back(planned);
      if (observer) observer->calculation_done(input, planned);
    }
  }
  check_solver_ranges(input);
  check_grids_fit(input, plan);
  for (std::size_t i = 0; i < plan.calculations.size(); ++i) {
    const Calculation& c = plan.calculations[i];
    check_atoms_on_grid(input, c, static_cast<int>(i + 1),
                        molecules[static_cast<std::size_t>(input.elecs[c.elec].molecule - 1)].atoms);
  }
  std::vector<PlannedFile> files = plan_files(input, plan, options.directory);
  std::future<void> replaced_files_released;  // done before this function returns
  if (options.write_files) {
    std::vector<std::string> paths;
    for (const PlannedFile& f : files) {
      check_output_path(f.path);
      paths.push_back(f.path);
    }
    // The files these replace: their cached pages dropped beside the solves, not in the renames.
    if (!options.dry_run) replaced_files_released = release_replaced_file_caches_beside(std::move(paths));
  }
  if (!options.dry_run) {
    if (observer) observer->starting(input, plan);
    solve_plan(plan, molecules, files, options, observer, result);
    add_prints(result);
    for (PlannedFile& f : files)
      if (f.output) f.output->commit();
  }
  result.seconds = clock.seconds();
  return result;
}

}  // namespace espgrid::apbs
