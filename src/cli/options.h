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

#include "src/core/text_parsing.h"
#include "src/job/job_options.h"
#include "src/physics/potential_map.h"
#include "src/view/view_scene.h"

namespace espgrid::cli {

/// Parses argv; cxxopts' own errors become UsageError with a pointer to the verb's --help. Also
/// refuses what cxxopts would accept silently: a word it cannot place (a second input file), an
/// option given twice unless it is `repeatable` (long names), and "-o=x.dx" (the value "=x.dx").
cxxopts::ParseResult parse_args(cxxopts::Options& options, int argc, char** argv,
                                const std::vector<std::string>& repeatable = {});

// ---- values (options a verb has of its own; the map job's options are in job/job_options.h) -----
/// A finite number for --OPTION; UsageError naming the option otherwise.
double number_option(const std::string& option, const std::string& text);
/// A whole number for --OPTION; UsageError naming the option otherwise.
long long whole_option(const std::string& option, const std::string& text);
/// X,Y,Z (or one value for all three when allow_single).
std::array<double, 3> triple_option(const std::string& option, const std::string& text, bool allow_single);
/// NX,NY,NZ.
std::array<std::int64_t, 3> dims_option(const std::string& option, const std::string& text);
/// The map at `path` (any format espgrid writes) with its unit: its header's, or the option
/// `unit_option` (e.g. "units", "map-units") where the header says none; UsageError where they
/// disagree or neither says. `unit_known` (if given): whether the header said it.
PotentialMap read_map_with_unit(const std::string& path, const cxxopts::ParseResult& args,
                                const std::string& unit_option, bool* unit_known = nullptr);
/// The view options the command line gave (--limit, --levels, --values, --view, --offset,
/// --surface-spacing, --probe; those not given, or that the verb does not take, keep
/// surface::ViewOptions' defaults), checked (surface::check_view_options): `espgrid view` and
/// `espgrid surface` read them here, Python's Map.view sets the same fields.
surface::ViewOptions view_options_from_args(const cxxopts::ParseResult& args);

// ---- the map job's options (job/job_options.h) on the command line ----------------------------------
/// Which of the table's options a verb takes: whole groups, less the names in `except`.
struct JobOptionSet {
  std::vector<OptionGroup> groups;
  std::vector<std::string_view> except = {};
  bool input_required = true;  ///< with the Input group: the structure file must be given
  bool takes(const JobOption& option) const;
};
/// Registers the set's options with cxxopts, in the table's words and defaults; with the Input
/// group, the structure file as the positional "input" (help `input_help`). `kernel_help`
/// replaces --kernel's help where the verb takes a list of kernels.
void add_job_options(cxxopts::Options& options, const JobOptionSet& set, const std::string& input_help = "",
                     const std::string& kernel_help = "");
/// Applies every option of the set the command line gave to `job` (no checks across options).
void apply_args(const cxxopts::ParseResult& args, const JobOptionSet& set, MapJob& job);
/// The job the command line describes: every option of the set it gave applied through the
/// table (the others keep their defaults), the positional input as the structure file, then
/// finish_job for `use`.
MapJob job_from_args(const cxxopts::ParseResult& args, const JobOptionSet& set, JobUse use);

}  // namespace espgrid::cli
