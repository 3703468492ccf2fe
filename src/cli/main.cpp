// espgrid: electrostatic potential maps by direct Coulomb summation.
// The first argument is the verb; each verb parses its own options.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "src/cli/commands.h"
#include "src/core/errors.h"
#include "src/core/process_exit.h"
#include "src/core/process_trace.h"
#include "src/maps/map_format_table.h"
#include "src/os/huge_pages.h"
#include "src/os/interrupt_cleanup.h"

namespace {

/// ESPGRID_TRACE_PROCESS's first stamp: the libraries are loaded and relocated, static
/// initialisers are running (src/core/process_trace.h).
[[maybe_unused]] const bool kLoadedStamp = (espgrid::trace_process("libraries loaded, static initialisation"), true);

void print_usage() {
  std::printf(
      "espgrid %s: electrostatic potential maps by direct Coulomb summation\n\n"
      "usage: espgrid VERB [options]\n\n"
      "verbs:\n"
      "  map      compute a map from a .pqr/.xyz file (.pdb/.cif: charges from pdb2pqr); write %s\n"
      "  kernels  list the kernel variants (CPU and CUDA) and which can run here\n"
      "  verify   run kernels on a structure and compare them with the reference kernel\n"
      "  bench    measure every kernel variant (and sweeps); see benchmarks/README.md\n"
      "  atoms    print a structure's atoms as espgrid reads them\n"
      "  convert  write a map in another format (%s)\n"
      "  view     write an HTML page showing the surface coloured by a map, for any browser\n"
      "  surface  write the surface coloured by the potential as a mesh (.glb, .ply, .vtp)\n"
      "  sample   the potential at a list of points (exact sum, or a map interpolated), as a text/CSV table\n"
      "  apbs     run an APBS input file (FILE.in): the same calculations, files and energy lines as APBS 3.4.1\n\n"
      "  espgrid VERB --help   shows a verb's options\n\n"
      "example:\n"
      "  espgrid map data/fasciculin2.pqr -o fas2.dx -o fas2.mrc -o fas2.vti\n",
      ESPGRID_VERSION, espgrid::map_extensions_text("and/or").c_str(), espgrid::map_extensions_text().c_str());
}

/// Whether what this run prints is its product: the listing of `kernels`, the reports of
/// `verify` and `bench`, the atoms of `atoms`, any help, the version. `map`, `convert`, `view`
/// and `surface` make files; their report on stdout may be lost (`espgrid map ... | head -1`)
/// without costing the files.
bool prints_its_product(int argc, char** argv) {
  if (argc < 2) return true;
  const std::string verb = argv[1];
  if (verb != "map" && verb != "convert" && verb != "view" && verb != "surface") return true;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) return true;
  return false;
}

/// Exit status `status` once stdout is flushed: a run whose product is its output fails (1) when
/// any of it could not be written (a full disk, /dev/full, a closed pipe), never exits 0 with
/// the output lost.
int with_output_checked(int status, int argc, char** argv) {
  errno = 0;
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  // A verb that failed has said why already (`espgrid atoms x | head`: the closed pipe, once).
  if (!failed || !prints_its_product(argc, argv) || status != 0) return status;
  const int error = errno;
  std::fprintf(stderr, "espgrid: error: cannot write to standard output: %s (the output of this run is lost)\n",
               error ? std::strerror(error) : "an earlier write to it failed (a full disk? a closed pipe?)");
  return status == 0 ? 1 : status;
}

int run_verb(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("espgrid %s\n", ESPGRID_VERSION);
    return 0;
  }
  const std::string verb = argv[1];
  try {
    if (verb == "map") return espgrid::cli::run_map(argc - 1, argv + 1);
    if (verb == "kernels") return espgrid::cli::run_kernels(argc - 1, argv + 1);
    if (verb == "verify") return espgrid::cli::run_verify(argc - 1, argv + 1);
    if (verb == "bench") return espgrid::cli::run_bench(argc - 1, argv + 1);
    if (verb == "atoms") return espgrid::cli::run_atoms(argc - 1, argv + 1);
    if (verb == "convert") return espgrid::cli::run_convert(argc - 1, argv + 1);
    if (verb == "view") return espgrid::cli::run_view(argc - 1, argv + 1);
    if (verb == "surface") return espgrid::cli::run_surface(argc - 1, argv + 1);
    if (verb == "sample") return espgrid::cli::run_sample(argc - 1, argv + 1);
    if (verb == "apbs") return espgrid::cli::run_apbs(argc - 1, argv + 1);
    std::fprintf(stderr,
                 "espgrid: error: unknown verb '%s' (use map, kernels, verify, bench, atoms, convert, view, surface, "
                 "sample or apbs; see espgrid "
                 "--help)\n",
                 verb.c_str());
    return 2;
  } catch (const espgrid::UsageError& e) {
    std::fprintf(stderr, "espgrid: error: %s\n", e.what());
    return 2;
  } catch (const espgrid::Error& e) {
    std::fprintf(stderr, "espgrid: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "espgrid: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "espgrid: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  espgrid::trace_process("main entered");
  espgrid::restart_with_huge_pages_if_useful(argc, argv);  // PB's grids: src/os/huge_pages.h
  // Registered first, so run last of the handlers registered from here on (the CUDA runtime's
  // teardown registers its own at its first call, and runs before this one).
  std::atexit([] { espgrid::trace_process("exit handlers done (then the kernel's teardown)"); });
  espgrid::install_interrupt_cleanup();
  const int status = with_output_checked(run_verb(argc, argv), argc, argv);
  espgrid::trace_process("verb done, outputs written");
  if (espgrid::may_skip_exit_handlers()) {  // src/core/process_exit.h: the CUDA runtime's teardown
    std::fflush(nullptr);                   // stdout's fate was checked above; stderr is unbuffered
    espgrid::trace_process("ending without the exit handlers (the kernel releases the GPU)");
    std::_Exit(status);
  }
  return status;
}
