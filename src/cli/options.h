// The command-line options the verbs share, parsed in one place so that `map`, `verify`,
// `bench` and `convert` spell, check and explain them the same way. Each verb builds its own
// cxxopts::Options from these groups (cxxopts has no subcommands: argv[1] is the verb).
#pragma once

#include <array>
#include <cstdint>
#include <cxxopts.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/core/grid.h"
#include "src/io/structure_reader.h"
#include "src/physics/physics_options.h"
#include "src/pipeline/map_pipeline.h"

namespace espgrid::cli {

/// Parses argv; cxxopts' own errors become UsageError with a pointer to the verb's --help. Also
/// refuses what cxxopts would accept silently: a word it cannot place (a second input file), an
/// option given twice unless it is `repeatable` (long names), and "-o=x.dx" (the value "=x.dx").
cxxopts::ParseResult parse_args(cxxopts::Options& options, int argc, char** argv,
                                const std::vector<std::string>& repeatable = {});

// ---- values ---------------------------------------------------------------------------------
std::vector<std::string> split_commas(const std::string& text);
/// A finite number for --OPTION; UsageError naming the option otherwise.
double number_option(const std::string& option, const std::string& text);
/// A whole number for --OPTION; UsageError naming the option otherwise.
long long whole_option(const std::string& option, const std::string& text);
/// X,Y,Z (or one value for all three when allow_single).
std::array<double, 3> triple_option(const std::string& option, const std::string& text, bool allow_single);
/// NX,NY,NZ.
std::array<std::int64_t, 3> dims_option(const std::string& option, const std::string& text);
/// --devices: "all" (every usable GPU; Error naming why when there is none) or N,N,... (repeats allowed).
std::vector<int> devices_option(const std::string& text);

// ---- groups ---------------------------------------------------------------------------------
/// input (positional) and --format.
void add_structure_options(cxxopts::Options& options, const std::string& input_help);
/// --spacing, --padding, --origin, --dims.
void add_grid_options(cxxopts::Options& options);
/// --units, --dielectric, --temperature, --model.
void add_physics_options(cxxopts::Options& options);
/// --kernel, --backend, --device, --devices, --threads, and the approximate method's
/// --accuracy and --msm-cutoff/--msm-spacing/--msm-order.
void add_compute_options(cxxopts::Options& options, const std::string& kernel_help);
/// --compression and --no-stream (into the "Output" group).
void add_map_output_options(cxxopts::Options& options);

/// The input's format: --format, or nothing (the extension decides).
std::optional<StructureFormat> format_option(const cxxopts::ParseResult& args);
/// The grid request, checked as far as it can be without the atoms.
GridRequest grid_request(const cxxopts::ParseResult& args);
PhysicsOptions physics_options(const cxxopts::ParseResult& args);
/// Threads (0..kMaxCpuThreads), --device N or --devices LIST (not both), backend and kernel,
/// and run.method from --accuracy or --msm-* (checked).
ComputeOptions compute_options(const cxxopts::ParseResult& args);
/// --compression, --no-stream; `threads` (the verb's --threads, checked; 0 = all cores) format .dx text.
MapWriteOptions map_write_options(const cxxopts::ParseResult& args, int threads = 0);

}  // namespace espgrid::cli
