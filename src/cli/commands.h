// The verbs of the espgrid command line. Each takes its own arguments (argv[0] is the verb)
// and returns the process exit code; errors are thrown as espgrid::Error.
#pragma once

namespace espgrid::cli {

int run_map(int argc, char** argv);
int run_kernels(int argc, char** argv);
int run_verify(int argc, char** argv);
/// Defined in src/bench/bench_command.cpp.
int run_bench(int argc, char** argv);

}  // namespace espgrid::cli
