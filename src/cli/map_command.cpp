// espgrid map: a structure file in, map files out, through the library facade
// (src/pipeline/map_pipeline.h); under mpirun with several ranks, the planes are split over
// the ranks (src/scaleout/) and rank 0 writes.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/io/atomic_output_file.h"
#include "src/io/pdb2pqr_source.h"
#include "src/scaleout/cluster.h"
#include "src/scaleout/distributed_map.h"

namespace espgrid::cli {
namespace {

/// Everything `map` was asked for, checked as far as possible before reading the input.
struct MapCommand {
  std::string input;
  std::optional<StructureFormat> format;
  StructureFormat input_format = StructureFormat::Pqr;  ///< format, or the extension's
  std::vector<std::string> outputs;
  ChargeAssignment charges;  ///< PDB and mmCIF input: how pdb2pqr assigns charges and radii
  std::string keep_pqr;      ///< PDB and mmCIF input: where pdb2pqr's PQR is kept
  GridRequest grid;
  PhysicsOptions physics;
  ComputeOptions compute;
  MapWriteOptions write;
};

MapCommand map_command(const cxxopts::ParseResult& args) {
  MapCommand c;
  if (!args.count("output")) throw UsageError("no output given: add -o map.vti, -o map.dx and/or -o map.mrc");
  c.outputs = args["output"].as<std::vector<std::string>>();
  if (!args.count("input")) throw UsageError("no input file given");
  c.input = args["input"].as<std::string>();
  c.format = format_option(args);
  c.input_format = c.format ? *c.format : format_from_extension(c.input);
  if (!needs_charge_assignment(c.input_format)) {
    for (const char* option : {"forcefield", "ph", "keep-pqr"})
      if (args.count(option))
        throw UsageError(std::string("--") + option + " applies to PDB and mmCIF input (charges from pdb2pqr); " +
                         c.input + " has its charges already");
  } else {
    c.charges = make_charge_assignment(
        args["forcefield"].as<std::string>(),
        args.count("ph") ? std::optional<double>(number_option("ph", args["ph"].as<std::string>())) : std::nullopt);
    namespace fs = std::filesystem;
    // Beside the (first) map, named after the structure: out/protein.dx -> out/protein.pqr.
    c.keep_pqr =
        args.count("keep-pqr")
            ? args["keep-pqr"].as<std::string>()
            : (fs::path(c.outputs.front()).parent_path() / (fs::path(c.input).stem().string() + ".pqr")).string();
    std::error_code ec;
    const fs::path keep = fs::weakly_canonical(fs::absolute(c.keep_pqr), ec);
    for (const std::string& other : c.outputs)
      if (keep == fs::weakly_canonical(fs::absolute(other), ec))
        throw UsageError("--keep-pqr " + c.keep_pqr + " is also a map output; name another file");
    if (keep == fs::weakly_canonical(fs::absolute(c.input), ec))
      throw UsageError("--keep-pqr " + c.keep_pqr + " would replace the input; name another file");
  }
  c.physics = physics_options(args);
  c.grid = grid_request(args);
  c.compute = compute_options(args);
  c.write = map_write_options(args, c.compute.run.threads);
  return c;
}

/// The input's atoms: read (PQR, XYZ), or from pdb2pqr (PDB, mmCIF; printed with its version
/// and its warnings). `assigned` keeps pdb2pqr's PQR until the maps are written.
Structure read_input(const MapCommand& command, TimingReport& timing, std::optional<AssignedStructure>& assigned) {
  if (!needs_charge_assignment(command.input_format)) return load_structure(command.input, command.format, &timing);
  const Stopwatch clock;
  assigned.emplace(assign_charges(command.input, command.input_format, command.charges));
  timing.read_seconds += clock.seconds();
  std::printf("charges    %s (%s): %s\n", assigned->describe().c_str(), seconds_text(clock.seconds()).c_str(),
              assigned->command.c_str());
  std::fflush(stdout);
  return assigned->structure;
}

void print_input(const std::string& path, const Atoms& atoms, const GridSpec& grid) {
  std::printf("input      %s: %s atoms, total charge %s e\n", path.c_str(), with_commas(atoms.size()).c_str(),
              signed_charge_text(atoms.total_charge()).c_str());
  std::printf("grid       %s, spacing %g,%g,%g Å, origin (%.3f, %.3f, %.3f) Å, map %s\n", describe(grid).c_str(),
              grid.spacing[0], grid.spacing[1], grid.spacing[2], grid.origin[0], grid.origin[1], grid.origin[2],
              human_bytes(static_cast<double>(map_bytes(grid))).c_str());
  std::fflush(stdout);
}

std::string part_line(const WorkerTiming& part) {
  return std::to_string(part.planes) + " planes in " + std::to_string(part.chunks) +
         (part.chunks == 1 ? " chunk" : " chunks") + ", kernel " + seconds_text(part.kernel_seconds) + ", wall " +
         seconds_text(part.wall_seconds);
}

/// The summary after the computation (kernel line first), then the outputs (the streamed ones
/// completed, the others written), then the times.
void finish_map(const PotentialMap& map, std::size_t atoms, const std::string& kernel_line, TimingReport& timing,
                const std::string& compute_note, MapFiles& files, const std::function<void()>& after_maps = nullptr) {
  const double evaluations = static_cast<double>(map.grid.point_count()) * static_cast<double>(atoms);
  const auto [lo, hi] = std::minmax_element(map.values.begin(), map.values.end());
  std::printf("kernel     %s\n", kernel_line.c_str());
  if (timing.parts.size() > 1)
    for (const WorkerTiming& part : timing.parts)
      std::printf("  device %d %s: %s\n", part.device, part.device_name.c_str(), part_line(part).c_str());
  // An approximate method does not evaluate every pair: its rate is the exact sum's work over its time.
  const bool pb = map.physics.poisson_boltzmann;  // issue 23: a field solve, not a sum over pairs
  const bool approximate = !timing.method.empty() && !pb;
  if (!timing.method.empty()) std::printf("method     %s\n", timing.method.c_str());
  if (!timing.phases.empty()) {
    std::string phases;
    for (const PhaseTiming& phase : timing.phases)
      phases += (phases.empty() ? "" : ", ") + phase.name + " " + seconds_text(phase.seconds);
    std::printf("phases     %s\n", phases.c_str());
  }
  if (!pb) {
    std::printf("work       %s atom-evaluations%s\n", short_scientific(evaluations).c_str(),
                approximate ? " in the exact sum (the method evaluates far fewer)" : "");
    std::printf("throughput %s atom-evaluations/s%s\n",
                short_scientific(timing.kernel_seconds > 0 ? evaluations / timing.kernel_seconds : 0).c_str(),
                approximate ? " (exact-sum equivalent)" : "");
  }
  std::printf("model      %s%s\n", describe_model(map.physics).c_str(),
              pb ? "" : (", dielectric " + shortest_text(map.physics.dielectric)).c_str());
  std::printf("potential  %.4g to %.4g %s (dielectric %g%s)\n", *lo, *hi, unit_name(map.physics.unit).c_str(),
              map.physics.dielectric,
              map.physics.unit == PotentialUnit::KTPerE
                  ? (", T " + std::to_string(map.physics.temperature).substr(0, 6) + " K").c_str()
                  : "");
  std::fflush(stdout);
  const bool any_streamed = files.streaming();
  files.finish(map, &timing, [](const std::string& path) {
    std::printf("wrote      %s\n", path.c_str());
    std::fflush(stdout);
  });
  if (after_maps) after_maps();
  const std::string streamed =
      any_streamed ? " (+ " + seconds_text(timing.streamed_write_seconds) + " streamed during compute)" : "";
  std::printf("time       read %s, prepare %s, kernel %s, transfers %s, write %s%s; total %s%s\n",
              seconds_text(timing.read_seconds).c_str(), seconds_text(timing.prepare_seconds).c_str(),
              seconds_text(timing.kernel_seconds).c_str(), seconds_text(timing.transfer_seconds).c_str(),
              seconds_text(timing.write_seconds).c_str(), streamed.c_str(),
              seconds_text(timing.total_seconds()).c_str(), compute_note.c_str());
}

/// `espgrid map` under mpirun with more than one rank: every rank reads the input and computes
/// a contiguous block of z-planes (its rank-local GPU, or the CPU); rank 0 gathers the map,
/// prints the summary with every rank's timing, and writes the outputs. Any rank's failure
/// stops every rank before anything is written (rank 0 reports it; see Cluster::agree).
int run_map_distributed(const cxxopts::ParseResult& args, scaleout::Cluster& cluster) {
  const bool root = cluster.is_root();
  MapCommand command;
  KernelSelection choice;
  std::optional<Structure> structure;
  std::optional<PreparedProblem> problem;
  PotentialMap map;
  TimingReport timing;
  scaleout::DistributedRun result;
  // Every rank passes the same agreement points, so a failure anywhere reaches all of them:
  // rank 0 prints it, everyone waits for that, then rank 0 exits non-zero and the rest 0.
  int status = 0;
  std::string error;
  try {
    cluster.agree("checking the command line and reading the input", [&] {
      command = map_command(args);
      if (command.physics.poisson_boltzmann)  // issue 23: one process solves the whole grid
        throw UsageError("--model pb runs in one process; run it without mpirun (on a GPU it takes seconds)");
      if (needs_charge_assignment(command.input_format))
        throw UsageError("under mpirun, give a PQR file: run `espgrid map " + command.input +
                         " --keep-pqr FILE.pqr ...` once without mpirun (or pdb2pqr30 yourself)");
      if (root) check_output_paths(command.outputs, {command.input}, command.write);  // only rank 0 writes
      choice = select_kernel(command.compute, command.physics.model);
      RunOptions& run = command.compute.run;
      if (choice.kernel->backend == Backend::Cuda && !args.count("device") && !args.count("devices")) {
        run.device = scaleout::rank_local_device(cluster, cuda::usable_devices());
        choice.why += "; rank-local GPU: local rank mod GPUs";
      }
      // CPU threads: a rank not pinned to a part of the machine shares it with the other
      // ranks on its node instead of each taking every core.
      if (choice.kernel->backend == Backend::Cpu && run.threads == 0 && cluster.local_size() > 1 &&
          omp_get_num_procs() >= static_cast<int>(std::thread::hardware_concurrency()))
        run.threads = std::max(1, omp_get_num_procs() / cluster.local_size());
      structure.emplace(load_structure(command.input, command.format, &timing));
      const GridSpec grid = make_grid(command.grid, structure->atoms);
      check_grid_fits(grid);
      problem.emplace(PreparedProblem::for_physics(structure->atoms, grid, command.physics));
      if (root) {
        map.grid = grid;
        map.physics = command.physics;
        map.source = describe_source(command.input, structure->atoms);
        map.values.assign(grid.point_count(), std::numeric_limits<float>::quiet_NaN());
      }
    });
    if (root) {
      for (const auto& notice : structure->notices) std::fprintf(stderr, "espgrid: note: %s\n", notice.c_str());
      print_input(command.input, structure->atoms, problem->grid());
      std::printf(
          "ranks      %d MPI ranks: z-planes in contiguous blocks, one per rank; the map is gathered to "
          "rank 0\n",
          cluster.size());
      std::fflush(stdout);
    }
    ProgressBar bar(std::string(choice.kernel->name));
    RunOptions options = command.compute.run;
    if (root) options.progress = [&bar](std::size_t done, std::size_t total) { bar.update(done, total); };
    try {
      result =
          scaleout::compute_distributed(cluster, *choice.kernel, *problem, root ? map.values.data() : nullptr, options);
    } catch (const scaleout::PeerFailure&) {
      throw;
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + "; no map written");
    }
  } catch (const scaleout::PeerFailure&) {
    status = 1;
  } catch (const UsageError& e) {
    status = 2;
    error = e.what();
  } catch (const std::exception& e) {
    status = 1;
    error = e.what();
  }
  if (status != 0) {
    if (root) {
      std::fprintf(stderr, "espgrid: error: %s\n", error.c_str());
      std::fflush(stderr);
    }
    cluster.barrier();
    return root ? status : 0;
  }
  if (!root) return 0;

  for (const scaleout::RankReport& r : result.ranks) {
    const std::string planes = r.planes.count() == 0 ? std::string("no planes")
                                                     : "planes " + std::to_string(r.planes.begin) + "-" +
                                                           std::to_string(r.planes.end - 1) + " (" +
                                                           std::to_string(r.planes.count()) + ")";
    std::printf("rank %-5d %s: %s, %s on %s: kernel %s, wall %s\n", r.rank, r.host.c_str(), planes.c_str(),
                r.kernel.c_str(), r.device.c_str(), seconds_text(r.kernel_seconds).c_str(),
                seconds_text(r.wall_seconds).c_str());
  }
  std::set<std::string> kernels;
  for (const scaleout::RankReport& r : result.ranks) kernels.insert(r.kernel);
  std::string kernel_names;
  for (const std::string& k : kernels) kernel_names += (kernel_names.empty() ? "" : ", ") + k;
  timing.kernel_seconds = result.timing.kernel_seconds;
  timing.transfer_seconds = std::max(0.0, result.timing.wall_seconds - result.timing.kernel_seconds);
  timing.parts = result.timing.parts;
  if (choice.error_bound > 0)
    timing.method = "approximate, expected relative RMS error <= " + short_scientific(choice.error_bound) +
                    " at points >= 1.4 Å from atoms";
  MapFiles files(command.outputs, command.write);  // rank 0 has the whole map only now: nothing streams
  finish_map(map, problem->atom_count(), kernel_names + " on " + result.timing.device + " (" + choice.why + ")", timing,
             " (kernel: the slowest rank; transfers: all ranks and the gather, " + seconds_text(result.gather_seconds) +
                 " gathering)",
             files);
  return 0;
}

}  // namespace

int run_map(int argc, char** argv) {
  cxxopts::Options options("espgrid map", "Compute the electrostatic potential of a charged structure on a grid.\n");
  options.custom_help("INPUT -o OUTPUT.vti|OUTPUT.dx|OUTPUT.mrc [-o ...] [options]");
  options.positional_help("");
  add_structure_options(options, "structure file (.pqr, .xyz; .pdb or .cif: charges from pdb2pqr)");
  // clang-format off
  options.add_options("Input")
      ("forcefield", "PDB/mmCIF input: pdb2pqr's force field (AMBER, CHARMM, PARSE, TYL06, PEOEPB, SWANSON)",
       cxxopts::value<std::string>()->default_value("AMBER"))
      ("ph", "PDB/mmCIF input: pH for the titratable residues, through PROPKA (default: pdb2pqr's standard "
             "protonation states)", cxxopts::value<std::string>())
      ("keep-pqr", "PDB/mmCIF input: where to keep the PQR pdb2pqr made (default: beside the first map, named "
                   "after the input)", cxxopts::value<std::string>());
  options.add_options("Output")
      ("o,output", "map to write: .vti (ParaView), .dx or .dx.gz (VMD, PyMOL, ChimeraX, APBS) or "
                   ".mrc/.map/.ccp4 (MRC2014: ChimeraX, PyMOL, VMD, Coot, Mol*); .mrc and .vti are written while the "
                   "map is computed; repeat for several",
       cxxopts::value<std::vector<std::string>>());
  // clang-format on
  add_map_output_options(options);
  add_grid_options(options);
  add_physics_options(options);
  add_compute_options(options, "kernel variant (see `espgrid kernels`)");
  options.add_options()("h,help", "show this help");
  const auto args = parse_args(options, argc, argv, {"output"});
  if (args.count("help")) {
    std::cout << options.help({"Input", "Output", "Grid", "Physics", "Compute", ""})
              << "\n" << model_help()
              << "\nExamples:\n  espgrid map data/fasciculin2.pqr -o fas2.vti -o fas2.dx --spacing 0.5\n"
                 "  espgrid map data/fasciculin2.pqr -o fas2.dx --model distance --dielectric 4 --units kcal/mol/e\n"
                 "  espgrid map data/fasciculin2.pqr -o fas2.dx --model debye --dielectric 78.54 --ionic-strength 0.15\n"
              << "\nPDB or mmCIF input (.pdb, .ent, .cif): pdb2pqr30 assigns charges and radii (AMBER unless\n"
                 "--forcefield says otherwise); the PQR it made is kept beside the map (or at --keep-pqr).\n"
              << "\nSeveral GPUs: --devices all (or 0,1,...). Under mpirun the z-planes are split over the ranks\n"
                 "(each on its rank-local GPU, or the CPU) and rank 0 writes the map; see README, Scale-out.\n";
    return 0;
  }
  scaleout::Cluster& cluster = scaleout::Cluster::world();  // MPI starts here when launched by mpirun
  if (cluster.distributed()) return run_map_distributed(args, cluster);

  MapCommand command = map_command(args);
  check_output_paths(command.outputs, {command.input}, command.write);
  if (!command.keep_pqr.empty()) check_output_path(command.keep_pqr);
  const KernelSelection choice = select_kernel(command.compute, command.physics.model);
  if (const std::optional<GridSpec> grid = explicit_grid(command.grid)) check_grid_fits(*grid);  // before reading
  TimingReport read;
  std::optional<AssignedStructure> assigned;
  const Structure structure = read_input(command, read, assigned);
  for (const auto& notice : structure.notices) std::fprintf(stderr, "espgrid: note: %s\n", notice.c_str());
  MapRequest request;
  request.grid = make_grid(command.grid, structure.atoms);
  check_grid_fits(request.grid);
  print_input(command.input, structure.atoms, request.grid);
  request.physics = command.physics;
  request.compute = command.compute;
  request.source = describe_source(
      assigned ? command.input + " (charges: " + assigned->describe() + ")" : command.input, structure.atoms);
  ProgressBar bar(std::string(choice.kernel->name));
  request.progress = [&bar](std::size_t done, std::size_t total) { bar.update(done, total); };
  MapFiles files(command.outputs, command.write);
  MapResult result = compute_map(structure.atoms, request, choice, &files);
  bar.finish();
  result.timing.read_seconds = read.read_seconds;
  const std::string kernel_line =
      command.physics.poisson_boltzmann  // issue 23: the solver ran; the kernel did its direct sums
          ? "Poisson-Boltzmann solve on " + result.timing.device + " (direct sums: " + std::string(choice.kernel->name) +
                ", " + choice.why + ")"
          : std::string(choice.kernel->name) + " on " + result.timing.device + " (" + choice.why + ")";
  finish_map(result.map, structure.atoms.size(), kernel_line, result.timing,
             "", files, [&] {
               if (!assigned) return;
               assigned->keep(command.keep_pqr);  // only after every map is written: a failure leaves nothing
               std::printf("wrote      %s (the PQR pdb2pqr made)\n", command.keep_pqr.c_str());
               std::fflush(stdout);
             });
  return 0;
}

}  // namespace espgrid::cli
