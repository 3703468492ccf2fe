// The verbs of the espgrid command line. Each takes its own arguments (argv[0] is the verb)
// and returns the process exit code; errors are thrown as espgrid::Error.
#pragma once

namespace espgrid::cli {

int run_map(int argc, char** argv);      ///< src/cli/map_command.cpp
int run_verify(int argc, char** argv);   ///< src/cli/verify_command.cpp
int run_kernels(int argc, char** argv);  ///< src/cli/inspect_commands.cpp
int run_atoms(int argc, char** argv);    ///< src/cli/inspect_commands.cpp
int run_convert(int argc, char** argv);  ///< src/cli/inspect_commands.cpp
int run_bench(int argc, char** argv);    ///< src/cli/bench_command.cpp
int run_view(int argc, char** argv);     ///< src/cli/view_command.cpp
int run_surface(int argc, char** argv);  ///< src/cli/surface_command.cpp
int run_sample(int argc, char** argv);   ///< src/cli/sample_command.cpp
int run_apbs(int argc, char** argv);     ///< src/cli/apbs_command.cpp

}  // namespace espgrid::cli
