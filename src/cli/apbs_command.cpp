// `espgrid apbs FILE.in`: an APBS 3.4.1 input file run as APBS runs it (src/apbs/apbs_run.h;
// docs/apbs.md): the same files under the same names, the same energy lines on standard output.
// A defect of the input, an unsupported keyword or a bad molecule file stops the run before
// anything is solved or written, with FILE:LINE, exit 2; a failure while solving or writing
// exits 1, also with nothing written.
#include <unistd.h>

#include <cstdio>
#include <future>
#include <iostream>
#include <string>

#include "src/apbs/apbs_report.h"
#include "src/apbs/apbs_run.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/core/errors.h"
#include "src/os/atomic_output_file.h"
#include "src/os/file_output.h"

namespace espgrid::cli {
namespace {

/// Prints what APBS prints as the run goes, to `out` (stdout, or stderr under --json -).
class ApbsPrinter : public apbs::ApbsObserver {
 public:
  ApbsPrinter(std::FILE* out, bool quiet) : out_(out), quiet_(quiet) {}
  bool started() const noexcept { return started_; }

  void notice(const std::string& text) override { std::fprintf(stderr, "espgrid apbs: note: %s\n", text.c_str()); }
  void molecules_loaded(const apbs::ApbsInput& input, const std::vector<apbs::Molecule>& molecules) override {
    if (quiet_) return;
    std::fprintf(out_, "Parsed input file %s.\nGot paths for %zu molecules\n", input.file.c_str(), molecules.size());
    for (std::size_t i = 0; i < molecules.size(); ++i) {
      const apbs::Molecule& m = molecules[i];
      std::fprintf(out_, "Reading %s-format atom data from %s.\n",
                   input.molecules[i].format == apbs::MoleculeFormat::Pqr ? "PQR" : "PDB", m.path.c_str());
      std::fprintf(out_, "  %zu atoms\n  Centered at (%4.3e, %4.3e, %4.3e)\n  Net charge %3.2e e\n", m.atoms.size(),
                   m.center[0], m.center[1], m.center[2], m.atoms.total_charge());
    }
  }
  void starting(const apbs::ApbsInput&, const apbs::CalculationPlan& plan) override {
    started_ = true;
    if (!quiet_) std::fprintf(out_, "Preparing to run %zu PBE calculations.\n", plan.calculations.size());
    std::fflush(out_);
  }
  void calculation_done(const apbs::ApbsInput& input, const apbs::CalculationResult& result) override {
    const std::string text = apbs::calculation_text(input, result);
    if (quiet_) {  // only the energy lines scripts read
      if (result.energy) std::fprintf(out_, "  Total electrostatic energy = %1.12E kJ/mol\n", *result.energy);
    } else {
      std::fputs(text.c_str(), out_);
    }
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
  bool quiet_;
  bool started_ = false;
};

void write_json(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return;
  }
  AtomicOutputFile file(path);
  {
    OutputFile out(file.temporary_path());
    out.append(text.data(), text.size());
    out.append("\n", 1);
    out.close();
  }
  file.commit();
}

}  // namespace

int run_apbs(int argc, char** argv) {
  cxxopts::Options options(
      "espgrid apbs",
      "Run an APBS 3.4.1 input file (FILE.in) as APBS runs it: the same calculations (mg-manual, mg-auto focusing,\n"
      "mg-para), the same output files (STEM-PE0.dx, .dx.gz) and the same energy lines on standard output.\n"
      "Paths in the file are read from the working directory, as APBS reads them. See docs/apbs.md.\n");
  options.custom_help("FILE.in [--json FILE] [options]");
  options.positional_help("");
  // clang-format off
  options.add_options()
      ("input", "the APBS input file", cxxopts::value<std::string>())
      ("json", "also write the run (energies, grids, files) as JSON to FILE, or - for standard output (the "
               "APBS-style text then goes to standard error)", cxxopts::value<std::string>())
      ("backend", "auto, cpu, cuda or hypre (auto: the GPU when there is one; cpu: espgrid's multigrid on the CPU; hypre: hypre's PCG + PFMG on the CPU)", cxxopts::value<std::string>()->default_value("auto"))
      ("threads", "CPU threads (0: all cores)", cxxopts::value<std::string>()->default_value("0"))
      ("device", "CUDA device", cxxopts::value<std::string>()->default_value("0"))
      ("quiet", "print only the energy lines (Total electrostatic energy, PRINT results)")
      ("dry-run", "check the input, its molecules, grids and outputs and print the calculations' grids; solve and "
                  "write nothing")
      ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"input"});
  const auto args = parse_args(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help();
    return 0;
  }
  if (!args.count("input")) throw UsageError("no input file given: espgrid apbs FILE.in");
  apbs::ApbsRunOptions run;
  run.solver.backend = apbs::parse_solver_backend(args["backend"].as<std::string>(), "--backend");
  run.solver.threads = static_cast<int>(whole_option("threads", args["threads"].as<std::string>()));
  run.solver.device = static_cast<int>(whole_option("device", args["device"].as<std::string>()));
  if (run.solver.threads < 0) throw UsageError("--threads must be 0 or more");
  const std::string json = args.count("json") ? args["json"].as<std::string>() : "";
  if (args.count("json") && json.empty()) throw UsageError("--json needs a file name, or - for standard output");
  if (!json.empty() && json != "-") check_output_path(json);
  run.dry_run = args.count("dry-run") > 0;
  // The GPU is used no more once the last level is solved: let it go while the files are written.
  // Joined when this function returns.
  std::future<void> device_released;
  run.after_last_solve = [&device_released, device = run.solver.device] {
    device_released = release_devices_beside({device});
  };

  ApbsPrinter printer(json == "-" ? stderr : stdout, args.count("quiet") > 0);
  apbs::ApbsResult result;
  try {
    result = apbs::run_apbs(args["input"].as<std::string>(), run, &printer);
  } catch (const Error& e) {
    if (printer.started()) throw;
    // Found before anything was solved: the input, its molecules, the grids, the outputs.
    std::fflush(stdout);
    std::fprintf(stderr, "espgrid: error: %s\n", e.what());
    return 2;
  }
  if (!run.dry_run) std::fputs(apbs::print_text(result).c_str(), json == "-" ? stderr : stdout);
  if (!json.empty()) write_json(json, apbs::result_json(result).dump());
  return 0;
}

}  // namespace espgrid::cli
