#include "src/cli/options.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"

namespace espgrid::cli {

cxxopts::ParseResult parse_args(cxxopts::Options& options, int argc, char** argv,
                                const std::vector<std::string>& repeatable) {
  const std::string help = " (see `" + options.program() + " --help`)";
  // "-o=x.dx" gives -o the value "=x.dx": a file named "=x.dx" is never what was meant.
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.size() > 2 && word[0] == '-' && word[1] != '-' && word[2] == '=')
      throw UsageError("write '-" + std::string(1, word[1]) + " " + std::string(word.substr(3)) + "', not '" +
                       std::string(word) + "': a short option takes what follows it, so its value would be '" +
                       std::string(word.substr(2)) + "'" + help);
  }
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw UsageError(std::string(e.what()) + help);
  }
  // Words cxxopts could not place (a second input file, a stray word) were silently ignored.
  if (!args.unmatched().empty()) throw UsageError("unexpected argument '" + args.unmatched().front() + "'" + help);
  // A repeated option silently took its last value.
  std::vector<std::string> seen;
  for (const cxxopts::KeyValue& kv : args.arguments()) {
    if (std::find(repeatable.begin(), repeatable.end(), kv.key()) != repeatable.end()) continue;
    if (std::find(seen.begin(), seen.end(), kv.key()) != seen.end())
      throw UsageError(
          (kv.key() == "input" ? std::string("more than one input file") : "--" + kv.key() + " given twice") +
          "; give it once" + help);
    seen.push_back(kv.key());
  }
  return args;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

double number_option(const std::string& option, const std::string& text) {
  const auto value = parse_number(text);
  if (!value || !std::isfinite(*value)) throw UsageError("--" + option + " expects a number, got '" + text + "'");
  return *value;
}

long long whole_option(const std::string& option, const std::string& text) {
  const auto value = parse_integer(text);
  if (!value) throw UsageError("--" + option + " expects a whole number, got '" + text + "'");
  return *value;
}

std::array<double, 3> triple_option(const std::string& option, const std::string& text, bool allow_single) {
  const auto parts = split_commas(text);
  if (parts.size() == 1 && allow_single) {
    const double v = number_option(option, parts[0]);
    return {v, v, v};
  }
  if (parts.size() != 3)
    throw UsageError("--" + option + " expects " + (allow_single ? "one value or " : "") + "X,Y,Z, got '" + text + "'");
  return {number_option(option, parts[0]), number_option(option, parts[1]), number_option(option, parts[2])};
}

std::array<std::int64_t, 3> dims_option(const std::string& option, const std::string& text) {
  const auto parts = split_commas(text);
  if (parts.size() != 3) throw UsageError("--" + option + " expects NX,NY,NZ, got '" + text + "'");
  std::array<std::int64_t, 3> out{};
  for (std::size_t a = 0; a < 3; ++a) {
    const auto v = parse_integer(parts[a]);
    if (!v) throw UsageError("--" + option + " expects whole numbers, got '" + parts[a] + "'");
    out[a] = *v;
  }
  return out;
}

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

void add_structure_options(cxxopts::Options& options, const std::string& input_help) {
  // clang-format off
  options.add_options("Input")
      ("input", input_help, cxxopts::value<std::string>())
      ("format", "input format when the extension does not say: pqr, xyz, pdb or cif", cxxopts::value<std::string>());
  // clang-format on
  options.parse_positional({"input"});
}

void add_grid_options(cxxopts::Options& options) {
  // clang-format off
  options.add_options("Grid")
      ("spacing", "grid spacing in Å: H or HX,HY,HZ", cxxopts::value<std::string>()->default_value("0.5"))
      ("padding", "space around the atoms' bounding box on each side, Å", cxxopts::value<std::string>()->default_value("10"))
      ("origin", "explicit grid origin X,Y,Z in Å (with --dims)", cxxopts::value<std::string>())
      ("dims", "explicit grid points NX,NY,NZ (with --origin)", cxxopts::value<std::string>());
  // clang-format on
}

void add_physics_options(cxxopts::Options& options) {
  // clang-format off
  options.add_options("Physics")
      ("units", "potential unit: kT/e, kcal/mol/e or V", cxxopts::value<std::string>()->default_value("kT/e"))
      ("dielectric", "relative permittivity of the uniform medium", cxxopts::value<std::string>()->default_value("1"))
      ("temperature", "temperature for kT/e, K", cxxopts::value<std::string>()->default_value("298.15"))
      ("model", "coulomb, distance, debye (pair models) or pb (Poisson-Boltzmann; see Models below)", cxxopts::value<std::string>()->default_value("coulomb"))
      ("ionic-strength", "debye and pb: ionic strength of the 1:1 electrolyte, mol/L (pb: default 0.15)", cxxopts::value<std::string>()->default_value("0"))
      // ---- --model pb (issue 23, src/pb/): APBS's keyword in brackets
      ("solvent-dielectric", "pb: the solvent's relative permittivity [sdie]", cxxopts::value<std::string>()->default_value("78.54"))
      ("ion-radius", "pb: radius of the ions, Å: no ions within it of an atom's surface [ion radius]", cxxopts::value<std::string>()->default_value("2"))
      ("probe-radius", "pb: solvent probe radius, Å, for mol and smol [srad]", cxxopts::value<std::string>()->default_value("1.4"))
      ("surface", "pb: dielectric boundary: smol (mol, then 9-point harmonic smoothing), mol (molecular surface) or "
                  "spl2 (per-atom cubic splines of width --surface-window) [srfm]", cxxopts::value<std::string>()->default_value("smol"))
      ("surface-window", "pb: spl2's spline window, Å [swin]", cxxopts::value<std::string>()->default_value("0.3"))
      ("surface-density", "pb: SAS points per Å² for mol and smol [sdens]", cxxopts::value<std::string>()->default_value("10"))
      ("surface-sampling", "pb, mol and smol: 0 = APBS's dielectric on the faces (the same map as APBS); N = 2..16: "
                           "the surface sampled N times finer per spacing and averaged over each face (espgrid's; "
                           "about 2x closer to the converged map at the same spacing, docs/pb.md)",
       cxxopts::value<std::string>()->default_value("0"))
      ("pb-formulation", "pb: direct (APBS's discretization: charges spread onto the grid by B-splines; the default) or "
                         "split (the Coulomb part summed exactly at every point, only the reaction field solved: exact "
                         "in a uniform medium; no better at the molecular surface, docs/pb.md)",
       cxxopts::value<std::string>()->default_value("direct"))
      ("pb-tolerance", "pb: relative residual at which the solver stops [etol]", cxxopts::value<std::string>()->default_value("1e-6"))
      ("pb-max-iterations", "pb: most solver iterations", cxxopts::value<std::string>()->default_value("200"));
  // clang-format on
}

void add_compute_options(cxxopts::Options& options, const std::string& kernel_help) {
  // clang-format off
  options.add_options("Compute")
      ("kernel", kernel_help, cxxopts::value<std::string>())
      ("backend", "auto, cpu or cuda (auto: CUDA when a usable GPU is present)", cxxopts::value<std::string>()->default_value("auto"))
      ("device", "CUDA device number", cxxopts::value<std::string>()->default_value("0"))
      ("devices", "several CUDA devices: all, or N,N,... (z-planes shared out through a work queue; a repeated "
                  "number runs two workers on one GPU)", cxxopts::value<std::string>())
      ("threads", "CPU threads (0 = all cores)", cxxopts::value<std::string>()->default_value("0"))
      ("accuracy", "approximate method (multilevel summation, cpu-msm or cuda-msm) with this relative RMS error at "
                   "points >= 1.4 Å from atoms, e.g. 1e-3 or 1e-4: parameters from measured tables (README, Large "
                   "structures)", cxxopts::value<std::string>())
      ("msm-cutoff", "experts: MSM short-range cutoff a, Å (with --msm-spacing and --msm-order)",
       cxxopts::value<std::string>())
      ("msm-spacing", "experts: MSM finest grid spacing h, Å", cxxopts::value<std::string>())
      ("msm-order", "experts: MSM interpolation order, 3 (cubic) or 5 (quintic)", cxxopts::value<std::string>());
  // clang-format on
}

void add_map_output_options(cxxopts::Options& options) {
  // clang-format off
  options.add_options("Output")
      ("compression", ".vti compressor: none (fastest to write and read; written while the map is computed), lz4 "
                      "(no smaller on potentials), zlib (~15% smaller, ~20x slower to write) or lzma (~33% smaller, "
                      "~200x slower)", cxxopts::value<std::string>()->default_value(
                          std::string(compression_name(MapWriteOptions{}.vti_compression))))
      ("no-stream", "write every file after the computation, none while it runs (for measuring)");
  // clang-format on
}

MapWriteOptions map_write_options(const cxxopts::ParseResult& args, int threads) {
  MapWriteOptions o;
  o.vti_compression = parse_compression(args["compression"].as<std::string>());
  o.threads = threads;
  o.stream = args.count("no-stream") == 0;
  return o;
}

std::optional<StructureFormat> format_option(const cxxopts::ParseResult& args) {
  if (!args.count("format")) return std::nullopt;
  return parse_format_name(args["format"].as<std::string>());
}

GridRequest grid_request(const cxxopts::ParseResult& args) {
  GridRequest request;
  request.spacing = triple_option("spacing", args["spacing"].as<std::string>(), true);
  request.padding = number_option("padding", args["padding"].as<std::string>());
  if (args.count("origin")) request.origin = triple_option("origin", args["origin"].as<std::string>(), false);
  if (args.count("dims")) request.dims = dims_option("dims", args["dims"].as<std::string>());
  if (request.dims.has_value() != request.origin.has_value())
    throw UsageError(request.dims ? "--dims needs --origin too" : "--origin needs --dims too");
  check_grid_request(request);
  return request;
}

PhysicsOptions physics_options(const cxxopts::ParseResult& args) {
  PhysicsOptions physics;
  physics.unit = parse_unit(args["units"].as<std::string>());
  physics.dielectric = number_option("dielectric", args["dielectric"].as<std::string>());
  physics.temperature = number_option("temperature", args["temperature"].as<std::string>());
  physics.ionic_strength = number_option("ionic-strength", args["ionic-strength"].as<std::string>());
  // ---- --model pb (issue 23): the Poisson-Boltzmann options, APBS's customary values as defaults.
  static const char* const kPbOnly[] = {"solvent-dielectric", "ion-radius",     "probe-radius",
                                        "surface",            "surface-window", "surface-density", "surface-sampling",
                                        "pb-formulation",     "pb-tolerance",   "pb-max-iterations"};
  if (args["model"].as<std::string>() == "pb") {
    physics.poisson_boltzmann = true;
    PbOptions& pb = physics.pb;
    if (args.count("dielectric")) pb.solute_dielectric = physics.dielectric;  // else APBS's pdie 2
    physics.dielectric = pb.solute_dielectric;
    if (args.count("ionic-strength")) pb.ionic_strength = physics.ionic_strength;  // else 0.15 M
    physics.ionic_strength = 0;
    pb.temperature = physics.temperature;
    pb.solvent_dielectric = number_option("solvent-dielectric", args["solvent-dielectric"].as<std::string>());
    pb.ion_radius = number_option("ion-radius", args["ion-radius"].as<std::string>());
    pb.probe_radius = number_option("probe-radius", args["probe-radius"].as<std::string>());
    pb.surface = parse_surface(args["surface"].as<std::string>());
    pb.spline_window = number_option("surface-window", args["surface-window"].as<std::string>());
    pb.surface_density = number_option("surface-density", args["surface-density"].as<std::string>());
    const long long sampling = whole_option("surface-sampling", args["surface-sampling"].as<std::string>());
    if (sampling < 0 || sampling > 16) throw UsageError("--surface-sampling must be 0 (APBS's rule) or 2 to 16");
    pb.sampling = static_cast<int>(sampling);
    pb.formulation = parse_formulation(args["pb-formulation"].as<std::string>());
    pb.tolerance = number_option("pb-tolerance", args["pb-tolerance"].as<std::string>());
    const long long iterations = whole_option("pb-max-iterations", args["pb-max-iterations"].as<std::string>());
    if (iterations < 1 || iterations > 100000) throw UsageError("--pb-max-iterations must be 1 to 100000");
    pb.max_iterations = static_cast<int>(iterations);
    if (args.count("surface-window") && pb.surface != PbSurface::Spline)
      throw UsageError("--surface-window applies to --surface spl2 (mol and smol have no window)");
  } else {
    physics.model = parse_model(args["model"].as<std::string>());
    for (const char* option : kPbOnly)
      if (args.count(option))
        throw UsageError(std::string("--") + option + " applies to --model pb, not --model " + model_name(physics.model));
  }
  validate(physics);
  return physics;
}

ComputeOptions compute_options(const cxxopts::ParseResult& args) {
  ComputeOptions o;
  o.backend = parse_backend(args["backend"].as<std::string>());
  if (args.count("kernel")) o.kernel = args["kernel"].as<std::string>();
  // Read as text: a number beyond int ("--threads 99999999999") must still name its option.
  const long long threads = whole_option("threads", args["threads"].as<std::string>());
  const long long device = whole_option("device", args["device"].as<std::string>());
  if (threads < 0 || threads > kMaxCpuThreads)
    throw UsageError("--threads takes 0 (all cores) to " + std::to_string(kMaxCpuThreads) + ", got " +
                     std::to_string(threads));
  if (device < 0 || device > 1'000'000) throw UsageError("--device must be a device number, 0 or more");
  o.run.threads = static_cast<int>(threads);
  o.run.device = static_cast<int>(device);
  if (args.count("devices")) {
    if (args.count("device")) throw UsageError("give --device N or --devices LIST, not both");
    o.run.devices = devices_option(args["devices"].as<std::string>());
    o.run.device = o.run.devices.front();
  }
  MethodParameters& method = o.run.method;
  if (args.count("accuracy")) {
    method.accuracy = number_option("accuracy", args["accuracy"].as<std::string>());
    if (!(method.accuracy > 0) || !(method.accuracy < 1))
      throw UsageError("--accuracy must be a relative error between 0 and 1 (e.g. 1e-3), got '" +
                       args["accuracy"].as<std::string>() + "'");
  }
  if (args.count("msm-cutoff")) method.msm.cutoff = number_option("msm-cutoff", args["msm-cutoff"].as<std::string>());
  if (args.count("msm-spacing"))
    method.msm.spacing = number_option("msm-spacing", args["msm-spacing"].as<std::string>());
  if (args.count("msm-order")) {
    const long long order = whole_option("msm-order", args["msm-order"].as<std::string>());
    if (order != 3 && order != 5) throw UsageError("--msm-order must be 3 (cubic) or 5 (quintic)");
    method.msm.order = static_cast<int>(order);
  }
  if (!method.msm.empty() || method.accuracy != 0) resolve_msm(method);  // every check before reading the input
  return o;
}

}  // namespace espgrid::cli
