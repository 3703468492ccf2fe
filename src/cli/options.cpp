#include "src/cli/options.h"

#include <cmath>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"

namespace espgrid::cli {

cxxopts::ParseResult parse_args(cxxopts::Options& options, int argc, char** argv) {
  try {
    return options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw UsageError(std::string(e.what()) + " (see `" + options.program() + " --help`)");
  }
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
      ("format", "input format when the extension does not say: pqr or xyz", cxxopts::value<std::string>());
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
      ("model", "pair model: coulomb", cxxopts::value<std::string>()->default_value("coulomb"));
  // clang-format on
}

void add_compute_options(cxxopts::Options& options, const std::string& kernel_help) {
  // clang-format off
  options.add_options("Compute")
      ("kernel", kernel_help, cxxopts::value<std::string>())
      ("backend", "auto, cpu or cuda (auto: CUDA when a usable GPU is present)", cxxopts::value<std::string>()->default_value("auto"))
      ("device", "CUDA device number", cxxopts::value<int>()->default_value("0"))
      ("devices", "several CUDA devices: all, or N,N,... (z-planes shared out through a work queue; a repeated "
                  "number runs two workers on one GPU)", cxxopts::value<std::string>())
      ("threads", "CPU threads (0 = all cores)", cxxopts::value<int>()->default_value("0"));
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
  physics.model = parse_model(args["model"].as<std::string>());
  validate(physics);
  return physics;
}

ComputeOptions compute_options(const cxxopts::ParseResult& args) {
  ComputeOptions o;
  o.backend = parse_backend(args["backend"].as<std::string>());
  if (args.count("kernel")) o.kernel = args["kernel"].as<std::string>();
  o.run.threads = args["threads"].as<int>();
  o.run.device = args["device"].as<int>();
  if (o.run.threads < 0 || o.run.threads > kMaxCpuThreads)
    throw UsageError("--threads takes 0 (all cores) to " + std::to_string(kMaxCpuThreads) + ", got " +
                     std::to_string(o.run.threads));
  if (o.run.device < 0) throw UsageError("--device must be 0 or more");
  if (args.count("devices")) {
    if (args.count("device")) throw UsageError("give --device N or --devices LIST, not both");
    o.run.devices = devices_option(args["devices"].as<std::string>());
    o.run.device = o.run.devices.front();
  }
  return o;
}

}  // namespace espgrid::cli
