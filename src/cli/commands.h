// The verbs of the espgrid command line. Each takes its own arguments (argv[0] is the verb)
// and returns the process exit code; errors are thrown as espgrid::Error.
#pragma once

#include <future>
#include <vector>

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

/// For a verb that uses the GPU no more (its files still to write): lets `devices` go on a thread
/// of its own (cuda::release_device), so their contexts' teardown (~0.05-0.1 s at exit on an H200
/// host) runs beside the writing; wait for the future before the process ends. An invalid future
/// with ESPGRID_EARLY_RELEASE=0 (the teardown at exit, for measuring what this saves).
/// src/cli/device_release.cpp.
std::future<void> release_devices_beside(std::vector<int> devices);

}  // namespace espgrid::cli
