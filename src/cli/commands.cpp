#include "src/cli/commands.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cxxopts.hpp>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "kernels/dcs_cuda.h"
#include "src/cli/progress.h"
#include "src/errors.h"
#include "src/grid.h"
#include "src/kernel_registry.h"
#include "src/output_file.h"
#include "src/potential_map.h"
#include "src/prepared_problem.h"
#include "src/scaleout/cluster.h"
#include "src/scaleout/distributed_map.h"
#include "src/structure_reader.h"
#include "src/units.h"

namespace espgrid::cli {
namespace {

// ---- option parsing helpers ------------------------------------------------------------

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

double number_option(const std::string& option, const std::string& text) {
  auto value = parse_number(text);
  if (!value || !std::isfinite(*value))
    throw UsageError("--" + option + " expects a number, got '" + text + "'");
  return *value;
}

std::array<double, 3> triple(const std::string& option, const std::string& text, bool allow_single) {
  const auto parts = split_commas(text);
  if (parts.size() == 1 && allow_single) {
    const double v = number_option(option, parts[0]);
    return {v, v, v};
  }
  if (parts.size() != 3)
    throw UsageError("--" + option + " expects " + (allow_single ? "one value or " : "") + "X,Y,Z, got '" + text + "'");
  return {number_option(option, parts[0]), number_option(option, parts[1]), number_option(option, parts[2])};
}

std::array<std::int64_t, 3> int_triple(const std::string& option, const std::string& text) {
  const auto parts = split_commas(text);
  if (parts.size() != 3) throw UsageError("--" + option + " expects NX,NY,NZ, got '" + text + "'");
  std::array<std::int64_t, 3> out{};
  for (std::size_t a = 0; a < 3; ++a) {
    auto v = parse_integer(parts[a]);
    if (!v) throw UsageError("--" + option + " expects whole numbers, got '" + parts[a] + "'");
    out[a] = *v;
  }
  return out;
}

std::string signed_charge(double q) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.4f", std::fabs(q) < 5e-5 ? 0.0 : q);
  return buffer;
}

std::string seconds_text(double s) {
  char buffer[32];
  if (s < 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.1f µs", s * 1e6);
  else if (s < 1)
    std::snprintf(buffer, sizeof buffer, "%.2f ms", s * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.3f s", s);
  return buffer;
}

std::string sci(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", v);
  return buffer;
}

// ---- the options map and verify share ----------------------------------------------------

void add_input_options(cxxopts::Options& options) {
  options.add_options("Input")
      ("input", "structure file (.pqr or .xyz)", cxxopts::value<std::string>())
      ("format", "input format when the extension does not say: pqr or xyz", cxxopts::value<std::string>());
  options.add_options("Grid")
      ("spacing", "grid spacing in Å: H or HX,HY,HZ", cxxopts::value<std::string>()->default_value("0.5"))
      ("padding", "space around the atoms' bounding box on each side, Å", cxxopts::value<std::string>()->default_value("10"))
      ("origin", "explicit grid origin X,Y,Z in Å (with --dims)", cxxopts::value<std::string>())
      ("dims", "explicit grid points NX,NY,NZ (with --origin)", cxxopts::value<std::string>());
  options.add_options("Physics")
      ("units", "potential unit: kT/e, kcal/mol/e or V", cxxopts::value<std::string>()->default_value("kT/e"))
      ("dielectric", "relative permittivity of the uniform medium", cxxopts::value<std::string>()->default_value("1"))
      ("temperature", "temperature for kT/e, K", cxxopts::value<std::string>()->default_value("298.15"));
  options.add_options("Compute")
      ("kernel", "kernel variant (see `espgrid kernels`)", cxxopts::value<std::string>())
      ("backend", "auto, cpu or cuda (auto: CUDA when a usable GPU is present)", cxxopts::value<std::string>()->default_value("auto"))
      ("device", "CUDA device number", cxxopts::value<int>()->default_value("0"))
      ("devices", "several CUDA devices: all, or N,N,... (z-planes shared out through a work queue; a repeated "
                  "number runs two workers on one GPU)", cxxopts::value<std::string>())
      ("threads", "CPU threads (0 = all cores)", cxxopts::value<int>()->default_value("0"));
  options.add_options()("h,help", "show this help");
  options.parse_positional({"input"});
}

struct LoadedInput {
  std::string path;
  Structure structure;
  GridSpec grid;
  PhysicsOptions physics;
};

LoadedInput load_input(const cxxopts::ParseResult& args) {
  if (!args.count("input")) throw UsageError("no input file given");
  LoadedInput in;
  in.path = args["input"].as<std::string>();
  const StructureFormat format = args.count("format") ? parse_format_name(args["format"].as<std::string>())
                                                      : format_from_extension(in.path);
  in.physics.unit = parse_unit(args["units"].as<std::string>());
  in.physics.dielectric = number_option("dielectric", args["dielectric"].as<std::string>());
  in.physics.temperature = number_option("temperature", args["temperature"].as<std::string>());
  validate(in.physics);

  GridRequest request;
  request.spacing = triple("spacing", args["spacing"].as<std::string>(), true);
  request.padding = number_option("padding", args["padding"].as<std::string>());
  if (args.count("origin")) request.origin = triple("origin", args["origin"].as<std::string>(), false);
  if (args.count("dims")) request.dims = int_triple("dims", args["dims"].as<std::string>());
  // Validate the grid options before reading a possibly large file.
  if (request.dims.has_value() != request.origin.has_value())
    throw UsageError(request.dims ? "--dims needs --origin too" : "--origin needs --dims too");

  in.structure = read_structure(in.path, format);
  for (const auto& notice : in.structure.notices) std::fprintf(stderr, "espgrid: note: %s\n", notice.c_str());
  in.grid = make_grid(request, in.structure.atoms);
  check_grid_fits(in.grid);
  return in;
}

struct KernelChoice {
  const KernelVariant* kernel;
  std::string why;  ///< how it was chosen, for the summary
};

KernelChoice choose_kernel(const cxxopts::ParseResult& args) {
  const std::string backend = args["backend"].as<std::string>();
  if (backend != "auto" && backend != "cpu" && backend != "cuda")
    throw UsageError("--backend must be auto, cpu or cuda, got '" + backend + "'");
  std::string reason;
  const bool have_cuda = cuda_available(&reason);
  if (args.count("kernel")) {
    const KernelVariant& k = find_kernel(args["kernel"].as<std::string>());
    if (backend != "auto" && backend != backend_name(k.backend))
      throw UsageError("kernel " + std::string(k.name) + " runs on " + std::string(backend_name(k.backend)) +
                       ", not on --backend " + backend);
    if (k.backend == Backend::Cuda && !have_cuda)
      throw Error("kernel " + std::string(k.name) + " needs a CUDA device: " + reason);
    return {&k, "chosen with --kernel"};
  }
  if (backend == "cuda") {
    if (!have_cuda) throw Error("--backend cuda: " + reason);
    return {&default_kernel(Backend::Cuda), "backend cuda"};
  }
  if (backend == "cpu") return {&default_kernel(Backend::Cpu), "backend cpu"};
  if (have_cuda) return {&default_kernel(Backend::Cuda), "backend auto: CUDA device found"};
  return {&default_kernel(Backend::Cpu), "backend auto: no GPU (" + reason + ")"};
}

/// --devices: "all" (every usable GPU) or a comma list of ordinals, repeats allowed.
std::vector<int> devices_option(const std::string& text) {
  if (text == "all") {
    std::string reason;
    std::vector<int> all = cuda::usable_devices(&reason);
    if (all.empty()) throw Error("--devices all: " + reason);
    return all;
  }
  std::vector<int> devices;
  for (const auto& part : split_commas(text)) {
    const auto v = parse_integer(part);
    if (!v || *v < 0 || *v > 1'000'000)
      throw UsageError("--devices expects all or device numbers N,N,..., got '" + text + "'");
    devices.push_back(static_cast<int>(*v));
  }
  return devices;
}

RunOptions run_options(const cxxopts::ParseResult& args) {
  RunOptions o;
  o.threads = args["threads"].as<int>();
  o.device = args["device"].as<int>();
  if (o.threads < 0) throw UsageError("--threads must be 0 (all cores) or more");
  if (o.device < 0) throw UsageError("--device must be 0 or more");
  if (args.count("devices")) {
    if (args.count("device")) throw UsageError("give --device N or --devices LIST, not both");
    o.devices = devices_option(args["devices"].as<std::string>());
    o.device = o.devices.front();
  }
  return o;
}

/// --devices only means something to the CUDA kernels.
void check_devices_apply(const cxxopts::ParseResult& args, const KernelVariant& kernel) {
  if (args.count("devices") && kernel.backend != Backend::Cuda)
    throw UsageError("--devices applies to the CUDA kernels; " + std::string(kernel.name) + " runs on the CPU");
}

std::string part_line(const DevicePart& part) {
  return std::to_string(part.planes) + " planes in " + std::to_string(part.chunks) +
         (part.chunks == 1 ? " chunk" : " chunks") + ", kernel " + seconds_text(part.kernel_seconds) + ", wall " +
         seconds_text(part.wall_seconds);
}

/// Runs one kernel on the whole grid with a progress bar; returns its timing.
RunTiming run_kernel(const KernelVariant& kernel, const PreparedProblem& problem, std::vector<float>& out,
                     RunOptions options) {
  ProgressBar bar(std::string(kernel.name));
  options.progress = [&bar](std::size_t done, std::size_t total) { bar.update(done, total); };
  return kernel.run(problem.view(out.data()), options);
}

cxxopts::ParseResult parse(cxxopts::Options& options, int argc, char** argv) {
  try {
    return options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw UsageError(std::string(e.what()) + " (see `espgrid " + options.program().substr(8) + " --help`)");
  }
}

}  // namespace

// ---- espgrid map ---------------------------------------------------------------------

namespace {

/// The -o paths, each checked before anything is computed (`check_paths`: by the process
/// that writes them).
std::vector<std::string> checked_outputs(const cxxopts::ParseResult& args, bool check_paths) {
  if (!args.count("output")) throw UsageError("no output given: add -o map.vti and/or -o map.dx");
  const auto outputs = args["output"].as<std::vector<std::string>>();
  for (const auto& path : outputs) {  // fail on a bad output before computing anything
    if (map_format_from_extension(path) == MapFormat::Vti && !vti_supported())
      throw UsageError("cannot write " + path + ": this espgrid was built without VTK; write .dx instead");
    if (check_paths) check_output_path(path);
  }
  return outputs;
}

void print_input(const LoadedInput& in) {
  const Atoms& atoms = in.structure.atoms;
  const GridSpec& grid = in.grid;
  std::printf("input      %s: %s atoms, total charge %s e\n", in.path.c_str(),
              with_commas(atoms.size()).c_str(), signed_charge(atoms.total_charge()).c_str());
  std::printf("grid       %s, spacing %g,%g,%g Å, origin (%.3f, %.3f, %.3f) Å, map %s\n", describe(grid).c_str(),
              grid.spacing[0], grid.spacing[1], grid.spacing[2], grid.origin[0], grid.origin[1], grid.origin[2],
              human_bytes(static_cast<double>(map_bytes(grid))).c_str());
  std::fflush(stdout);
}

/// The map's metadata; values not allocated.
PotentialMap map_for(const LoadedInput& in) {
  const Atoms& atoms = in.structure.atoms;
  PotentialMap map;
  map.grid = in.grid;
  map.unit = unit_name(in.physics.unit);
  map.dielectric = in.physics.dielectric;
  map.temperature = in.physics.temperature;
  map.source = in.path + ", " + std::to_string(atoms.size()) + " atoms, total charge " +
               signed_charge(atoms.total_charge()) + " e";
  return map;
}

/// The summary after the computation (kernel line first), then the outputs written.
void finish_map(const PotentialMap& map, const LoadedInput& in, const std::string& kernel_line,
                const RunTiming& timing, const std::string& time_note, const std::vector<std::string>& outputs) {
  const double evaluations = static_cast<double>(in.grid.point_count()) * static_cast<double>(in.structure.atoms.size());
  const auto [lo, hi] = std::minmax_element(map.values.begin(), map.values.end());
  std::printf("kernel     %s\n", kernel_line.c_str());
  if (timing.parts.size() > 1)
    for (const DevicePart& part : timing.parts)
      std::printf("  device %d %s: %s\n", part.device, part.name.c_str(), part_line(part).c_str());
  std::printf("work       %s atom-evaluations\n", sci(evaluations).c_str());
  std::printf("time       %s kernel, %s with transfers%s\n", seconds_text(timing.kernel_seconds).c_str(),
              seconds_text(timing.wall_seconds).c_str(), time_note.c_str());
  std::printf("throughput %s atom-evaluations/s\n",
              sci(timing.kernel_seconds > 0 ? evaluations / timing.kernel_seconds : 0).c_str());
  std::printf("potential  %.4g to %.4g %s (dielectric %g%s)\n", *lo, *hi, map.unit.c_str(), map.dielectric,
              in.physics.unit == PotentialUnit::KTPerE ? (", T " + std::to_string(map.temperature).substr(0, 6) + " K").c_str() : "");
  for (const auto& path : outputs) {
    write_map(map, path);
    std::printf("wrote      %s\n", path.c_str());
  }
}

/// `espgrid map` under mpirun with more than one rank: every rank reads the input and computes
/// a contiguous block of z-planes (its rank-local GPU, or the CPU); rank 0 gathers the map,
/// prints the summary with every rank's timing, and writes the outputs. Any rank's failure
/// stops every rank before anything is written (rank 0 reports it; see Cluster::agree).
int run_map_distributed(const cxxopts::ParseResult& args, scaleout::Cluster& cluster) {
  const bool root = cluster.is_root();
  std::vector<std::string> outputs;
  std::optional<KernelChoice> choice;
  RunOptions run;
  std::optional<LoadedInput> in;
  std::optional<PreparedProblem> problem;
  PotentialMap map;
  scaleout::DistributedRun result;
  // Every rank passes the same agreement points, so a failure anywhere reaches all of them:
  // rank 0 prints it, everyone waits for that, then rank 0 exits non-zero and the rest 0.
  int status = 0;
  std::string error;
  try {
    cluster.agree("checking the command line and reading the input", [&] {
      outputs = checked_outputs(args, root);  // only rank 0 writes
      run = run_options(args);
      choice = choose_kernel(args);
      check_devices_apply(args, *choice->kernel);
      if (choice->kernel->backend == Backend::Cuda && !args.count("device") && !args.count("devices")) {
        run.device = scaleout::rank_local_device(cluster, cuda::usable_devices());
        choice->why += "; rank-local GPU: local rank mod GPUs";
      }
      // CPU threads: a rank not pinned to a part of the machine shares it with the other
      // ranks on its node instead of each taking every core.
      if (choice->kernel->backend == Backend::Cpu && run.threads == 0 && cluster.local_size() > 1 &&
          omp_get_num_procs() >= static_cast<int>(std::thread::hardware_concurrency()))
        run.threads = std::max(1, omp_get_num_procs() / cluster.local_size());
      in.emplace(load_input(args));
      problem.emplace(in->structure.atoms, in->grid, coulomb_factor(in->physics));
      if (root) {
        map = map_for(*in);
        map.values.assign(in->grid.point_count(), std::numeric_limits<float>::quiet_NaN());
      }
    });
    if (root) {
      print_input(*in);
      std::printf("ranks      %d MPI ranks: z-planes in contiguous blocks, one per rank; the map is gathered to "
                  "rank 0\n", cluster.size());
      std::fflush(stdout);
    }
    ProgressBar bar(std::string(choice->kernel->name));
    RunOptions options = run;
    if (root) options.progress = [&bar](std::size_t done, std::size_t total) { bar.update(done, total); };
    try {
      result = scaleout::compute_distributed(cluster, *choice->kernel, *problem, root ? map.values.data() : nullptr,
                                             options);
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
  finish_map(map, *in, kernel_names + " on " + result.timing.device + " (" + choice->why + ")", result.timing,
             " (slowest rank; all ranks and the gather, " + seconds_text(result.gather_seconds) + ")", outputs);
  return 0;
}

}  // namespace

int run_map(int argc, char** argv) {
  cxxopts::Options options("espgrid map", "Compute the electrostatic potential of a charged structure on a grid.\n");
  options.custom_help("INPUT -o OUTPUT.vti|OUTPUT.dx [-o ...] [options]");
  options.positional_help("");
  add_input_options(options);
  options.add_options("Output")
      ("o,output", "map to write: .vti (ParaView) or .dx (VMD, PyMOL, ChimeraX, APBS); repeat for both",
       cxxopts::value<std::vector<std::string>>());
  const auto args = parse(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help({"Input", "Output", "Grid", "Physics", "Compute", ""})
              << "\nExample:\n  espgrid map data/fasciculin2.pqr -o fas2.vti -o fas2.dx --spacing 0.5\n"
              << "\nSeveral GPUs: --devices all (or 0,1,...). Under mpirun the z-planes are split over the ranks\n"
                 "(each on its rank-local GPU, or the CPU) and rank 0 writes the map; see README, Scale-out.\n";
    return 0;
  }
  scaleout::Cluster& cluster = scaleout::Cluster::world();  // MPI starts here when launched by mpirun
  if (cluster.distributed()) return run_map_distributed(args, cluster);

  const auto outputs = checked_outputs(args, true);
  const RunOptions run = run_options(args);
  const KernelChoice choice = choose_kernel(args);
  check_devices_apply(args, *choice.kernel);
  LoadedInput in = load_input(args);
  print_input(in);

  PotentialMap map = map_for(in);
  map.values.assign(in.grid.point_count(), std::numeric_limits<float>::quiet_NaN());
  const PreparedProblem problem(in.structure.atoms, in.grid, coulomb_factor(in.physics));
  const RunTiming timing = run_kernel(*choice.kernel, problem, map.values, run);
  finish_map(map, in, std::string(choice.kernel->name) + " on " + timing.device + " (" + choice.why + ")", timing, "",
             outputs);
  return 0;
}

// ---- espgrid kernels -------------------------------------------------------------------

int run_kernels(int argc, char** argv) {
  cxxopts::Options options("espgrid kernels", "List the kernel variants this espgrid can run.\n");
  options.add_options()("h,help", "show this help");
  const auto args = parse(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help();
    return 0;
  }
  std::string reason;
  const bool have_cuda = cuda_available(&reason);
  std::printf("%-16s %-8s %-6s %s\n", "NAME", "BACKEND", "FLOPS", "WHAT IT DOES");
  for (const auto& k : kernel_variants())
    std::printf("%-16s %-8s %-6d %s\n", std::string(k.name).c_str(), std::string(backend_name(k.backend)).c_str(),
                k.flops_per_evaluation, std::string(k.summary).c_str());
  std::printf("\nFLOPS: floating-point operations per atom evaluation (FMA = 2).\n");
  std::printf("CUDA: %s\n", have_cuda ? "available" : ("unavailable: " + reason).c_str());
  std::printf("Default: %s\n", std::string(default_kernel(have_cuda ? Backend::Cuda : Backend::Cpu).name).c_str());
  return 0;
}

// ---- espgrid verify --------------------------------------------------------------------

int run_verify(int argc, char** argv) {
  cxxopts::Options options("espgrid verify",
                           "Run kernels on a structure and compare every grid point with cpu-reference.\n");
  options.custom_help("INPUT [--kernel NAME|all] [options]");
  options.positional_help("");
  add_input_options(options);
  const auto args = parse(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help({"Input", "Grid", "Physics", "Compute", ""})
              << "\nA kernel passes when |kernel - reference| <= 2 (4 sqrt(N) + 8) ulp x sum_i |q_i|/r_i at every\n"
                 "point: the float32 rounding both sums may carry for N atoms. Exit code 1 if any fails.\n";
    return 0;
  }
  const RunOptions run = run_options(args);
  std::vector<const KernelVariant*> kernels;
  std::string reason;
  const bool have_cuda = cuda_available(&reason);
  const std::string which = args.count("kernel") ? args["kernel"].as<std::string>() : "all";
  if (which == "all") {
    for (const auto& k : kernel_variants())
      if (k.name != "cpu-reference" && k.name != "cpu-naive" && (k.backend == Backend::Cpu || have_cuda))
        kernels.push_back(&k);
    if (!have_cuda) std::printf("note: skipping the CUDA kernels: %s\n", reason.c_str());
  } else {
    for (const auto& name : split_commas(which)) kernels.push_back(&find_kernel(name));
  }
  LoadedInput in = load_input(args);
  const Atoms& atoms = in.structure.atoms;
  std::printf("input      %s: %s atoms; grid %s\n", in.path.c_str(), with_commas(atoms.size()).c_str(),
              describe(in.grid).c_str());
  const double factor = coulomb_factor(in.physics);
  const PreparedProblem problem(atoms, in.grid, factor);
  const std::size_t n = in.grid.point_count();

  std::vector<float> reference(n, std::numeric_limits<float>::quiet_NaN());
  run_kernel(find_kernel("cpu-reference"), problem, reference, run);
  // Σ|q|/r per point: the same sum with |q|, which sets the float rounding scale.
  Atoms magnitude_atoms = atoms;
  for (double& q : magnitude_atoms.charge) q = std::fabs(q);
  const PreparedProblem magnitude_problem(magnitude_atoms, in.grid, factor);
  std::vector<float> magnitude(n, std::numeric_limits<float>::quiet_NaN());
  run_kernel(find_kernel("cpu-parallel"), magnitude_problem, magnitude, run);
  const double ulp = 1.0 / (1 << 23);
  const double bound_factor = 2.0 * (4.0 * std::sqrt(static_cast<double>(atoms.size())) + 8.0) * ulp;

  std::printf("%-16s %12s %12s %14s %10s  %s\n", "KERNEL", "MAX |ERR|", "MAX ERR/MAG", "MAX REL (>1%)", "TIME", "RESULT");
  bool all_pass = true;
  for (const KernelVariant* k : kernels) {
    std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());  // unwritten points stay NaN
    RunTiming t;
    try {
      t = run_kernel(*k, problem, out, run);
    } catch (const Error& e) {
      std::printf("%-16s %s\n", std::string(k->name).c_str(), e.what());
      all_pass = false;
      continue;
    }
    double max_abs = 0, max_scaled = 0, max_rel = 0;
    bool pass = true;
    std::size_t unwritten = 0;
    const double big = 0.01 * std::max(std::fabs(*std::max_element(reference.begin(), reference.end())),
                                       std::fabs(*std::min_element(reference.begin(), reference.end())));
    for (std::size_t p = 0; p < n; ++p) {
      if (!std::isfinite(out[p])) {
        ++unwritten;
        pass = false;
        continue;
      }
      const double err = std::fabs(static_cast<double>(out[p]) - reference[p]);
      max_abs = std::max(max_abs, err);
      max_scaled = std::max(max_scaled, err / magnitude[p]);
      if (std::fabs(reference[p]) > big) max_rel = std::max(max_rel, err / std::fabs(reference[p]));
      if (err > bound_factor * magnitude[p]) pass = false;
    }
    all_pass = all_pass && pass;
    std::printf("%-16s %12.3e %12.3e %14.3e %10s  %s", std::string(k->name).c_str(), max_abs, max_scaled, max_rel,
                seconds_text(t.kernel_seconds).c_str(), pass ? "pass" : "FAIL");
    if (unwritten) std::printf(" (%zu points not written or not finite)", unwritten);
    std::printf("\n");
  }
  std::printf("bound: |err| <= %.3e x sum|q|/r (%s %s)\n", bound_factor, unit_name(in.physics.unit).c_str(),
              "at every point");
  return all_pass ? 0 : 1;
}

}  // namespace espgrid::cli
