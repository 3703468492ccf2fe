// The small verbs: `kernels` (the registry and its capabilities), `atoms` (a structure as the
// readers read it, for the renderer and for people) and `convert` (a map into another format).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "src/pipeline/map_pipeline.h"

namespace espgrid::cli {
namespace {

std::string role_text(const KernelVariant& k) {
  switch (k.role) {
    case KernelRole::Reference:
      return "reference";
    case KernelRole::Default:
      return "default";
    case KernelRole::Alternative:
      return "-";
  }
  return "?";
}

std::string models_text(const KernelVariant& k) {
  std::string out;
  for (int m = 0; m < kPairModelCount; ++m)
    if (k.supports(static_cast<PairModel>(m))) out += (out.empty() ? "" : ",") + model_name(static_cast<PairModel>(m));
  return out;
}

std::string accuracy_text(const KernelVariant& k) {
  if (k.accuracy == Accuracy::Approximate) return "~" + short_scientific(k.error_bound);
  return k.reproducibility == Reproducibility::Varies ? "exact*" : "exact";
}

}  // namespace

int run_kernels(int argc, char** argv) {
  cxxopts::Options options("espgrid kernels", "List the kernel variants this espgrid can run.\n");
  options.add_options()("h,help", "show this help");
  const auto args = parse_args(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help();
    return 0;
  }
  std::string reason;
  const bool have_cuda = cuda_available(&reason);
  std::printf("%-16s %-7s %-9s %-8s %-23s %-5s %-4s %s\n", "NAME", "BACKEND", "ROLE", "ACCURACY", "MODELS", "FLOPS",
              "RUNS", "WHAT IT DOES");
  std::vector<std::string> not_here;  // why an entry cannot run here, once per reason
  for (const auto& k : kernel_variants()) {
    std::string why;
    const bool runs = k.available(&why);
    if (!runs && std::find(not_here.begin(), not_here.end(), why) == not_here.end()) not_here.push_back(why);
    std::printf("%-16s %-7s %-9s %-8s %-23s %-5d %-4s %s\n", std::string(k.name).c_str(),
                std::string(backend_name(k.backend)).c_str(), role_text(k).c_str(), accuracy_text(k).c_str(),
                models_text(k).c_str(), k.flops_per_evaluation, runs ? "yes" : "no", std::string(k.summary).c_str());
  }
  std::printf(
      "\nFLOPS: floating-point operations per atom evaluation (FMA = 2). ACCURACY: exact = float32\n"
      "rounding of the exact sum (exact*: atomics, the last bits vary between runs); ~E = an approximate\n"
      "method with relative RMS error bound E. RUNS: whether the entry can run here.\n");
  for (const std::string& why : not_here)
    if (why != reason) std::printf("Cannot run here: %s\n", why.c_str());  // the CUDA reason follows
  std::printf("CUDA: %s\n", have_cuda ? "available" : ("unavailable: " + reason).c_str());
  std::printf("Default: %s\n", std::string(default_kernel(have_cuda ? Backend::Cuda : Backend::Cpu).name).c_str());
  return 0;
}

int run_atoms(int argc, char** argv) {
  cxxopts::Options options("espgrid atoms",
                           "Print a structure's atoms as espgrid reads them: x y z (Å), charge (e), radius (Å), "
                           "element.\n");
  options.custom_help("INPUT [--format pqr|xyz]");
  options.positional_help("");
  const JobOptionSet input_options{{OptionGroup::Input}, without_pdb_input_options()};
  add_job_options(options, input_options, "structure file (.pqr or .xyz)");
  options.add_options()("h,help", "show this help");
  const auto args = parse_args(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help({"Input", ""})
              << "\nOne line per atom, numbers written so that they read back exactly. The renderer\n"
                 "(viz/render_potential.py) reads structures through this verb, so it sees what the map saw.\n";
    return 0;
  }
  const MapJob job = job_from_args(args, input_options, JobUse::Values);
  const std::string& path = job.input.path;
  const Structure s = load_structure(path, job.input.format);
  for (const auto& notice : s.notices) std::fprintf(stderr, "espgrid: note: %s\n", notice.c_str());
  const Atoms& a = s.atoms;
  std::printf("# espgrid atoms: %s, %zu atoms, total charge %s e\n# x y z charge radius element\n", path.c_str(),
              a.size(), signed_charge_text(a.total_charge()).c_str());
  std::string line;
  // stdout is this verb's product: a reader that went away (SIGPIPE is ignored, see
  // os/atomic_output_file.h) or a full disk ends the run with an error, not a silent cut.
  const auto check_stdout = [] {
    if (std::ferror(stdout) || std::fflush(stdout) != 0)
      throw Error(std::string("cannot write the atoms to standard output: ") + std::strerror(errno));
  };
  for (std::size_t i = 0; i < a.size(); ++i) {
    line = shortest_text(a.x[i]) + ' ' + shortest_text(a.y[i]) + ' ' + shortest_text(a.z[i]) + ' ' +
           shortest_text(a.charge[i]) + ' ' + shortest_text(a.radius[i]) + ' ' + a.element[i].text() + '\n';
    if (std::fputs(line.c_str(), stdout) == EOF) check_stdout();
  }
  check_stdout();
  return 0;
}

int run_convert(int argc, char** argv) {
  cxxopts::Options options("espgrid convert", "Write a map file in another format (the grid and values unchanged).\n");
  options.custom_help("INPUT -o OUTPUT." + map_format_words(false, "|OUTPUT.") + " [--units U]");
  options.positional_help("");
  // clang-format off
  options.add_options("Input")
      ("input", "map to read: " + map_extensions_text() + " (any map espgrid writes; APBS's .dx)", cxxopts::value<std::string>());
  options.add_options("Output")
      ("o,output", "map to write (" + map_extensions_text() + "); repeat for several", cxxopts::value<std::vector<std::string>>())
      ("units", "the input's unit when its header does not say (kT/e, kcal/mol/e or V); without it such a map is "
                "converted with its unit left unsaid", cxxopts::value<std::string>());
  // clang-format on
  const JobOptionSet write_options{{OptionGroup::Output}, {"output"}};  // --compression, --no-stream
  add_job_options(options, write_options);
  options.add_options()("h,help", "show this help");
  options.parse_positional({"input"});
  const auto args = parse_args(options, argc, argv, {"output"});
  if (args.count("help")) {
    std::cout << options.help({"Output", ""});  // INPUT is positional: the usage line names it
    return 0;
  }
  if (!args.count("input")) throw UsageError("no input map given");
  if (!args.count("output")) throw UsageError("no output given: add -o map.vti, -o map.dx and/or -o map.mrc");
  const auto outputs = args["output"].as<std::vector<std::string>>();
  MapJob job;
  apply_args(args, write_options, job);
  const MapWriteOptions write = job.write;
  const std::string input = args["input"].as<std::string>();
  check_output_paths(outputs, {input}, write);
  // Any map is converted: one that does not say its unit (APBS's are kT/e; a density, a
  // dielectric map) keeps it unsaid unless --units names it, and a map espgrid did not compute
  // is written without espgrid's physics (no model, dielectric or temperature claimed).
  bool unit_known = false;
  PotentialMap map = read_map(input, &unit_known);
  if (args.count("units")) {
    const PotentialUnit unit = parse_unit(args["units"].as<std::string>());
    if (unit_known && unit != map.physics.unit)
      throw UsageError(input + " says its unit is " + unit_name(map.physics.unit) + ", not " + unit_name(unit));
    map.physics.unit = unit;
    map.unit_known = true;
  }
  map.source = "converted from " + input;
  if (!map.foreign.empty())
    std::printf("map        %s: not computed by espgrid (%s); %s, model and medium unknown\n", input.c_str(),
                map.foreign.c_str(), foreign_map_unit(map).c_str());
  write_map_files(
      map, outputs, nullptr, [](const std::string& path) { std::printf("wrote      %s\n", path.c_str()); }, write);
  return 0;
}

}  // namespace espgrid::cli
