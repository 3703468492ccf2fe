// The one parser of a map job: a table of options, each with its name, group, help, default and
// the function that puts its value into a MapJob. The command line registers the table's
// options with cxxopts and hands over the words it was given (OptionValue::text); the Python
// module hands over typed values (numbers, sequences, text) under the same names with '-'
// written '_'. Either way the same function checks the value and sets the field, with the same
// message, and finish_job makes the checks that need several options. Messages name options as
// the program spells them (--spacing), in both front ends.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/job/map_job.h"

namespace espgrid {

/// An option's value as a front end has it: the text of a command-line word, or a typed value.
class OptionValue {
 public:
  static OptionValue text(std::string words);
  static OptionValue number(double value);
  static OptionValue whole(long long value);
  /// A sequence of numbers; `all_whole` when every element is an integer type.
  static OptionValue numbers(std::vector<double> values, bool all_whole);
  /// A switch that is on (--no-stream; Python: True).
  static OptionValue on();

  // Each accessor checks the value for the option `name` and throws UsageError naming
  // "--name" when it is not what the option takes.
  double as_number(std::string_view name) const;  ///< a finite number
  long long as_whole(std::string_view name) const;
  std::string as_text(std::string_view name) const;
  /// X,Y,Z, or one value for all three when allow_single.
  std::array<double, 3> as_triple(std::string_view name, bool allow_single) const;
  std::array<std::int64_t, 3> as_dims(std::string_view name) const;  ///< NX,NY,NZ
  bool is_on(std::string_view name) const;                           ///< a switch

 private:
  enum class Kind { Text, Number, Whole, Numbers, On };
  Kind kind_ = Kind::Text;
  std::string text_;
  double number_ = 0;
  long long whole_ = 0;
  std::vector<double> numbers_;
  bool all_whole_ = false;
};

enum class OptionGroup { Input, Output, Grid, Physics, Compute };
/// "Input", "Output", "Grid", "Physics", "Compute": the help's group headings.
std::string_view group_name(OptionGroup group);

struct JobOption {
  std::string_view name;  ///< --name; Python: the same with '-' written '_'
  char short_name;        ///< one-letter form (-o), or 0
  OptionGroup group;
  std::string help;
  std::string default_text;  ///< the default as help shows it; empty when there is none
  bool repeatable;           ///< may be given several times (-o): each adds a value
  bool is_switch;            ///< takes no value on the command line
  /// Checks the value and sets the job's field(s).
  std::function<void(MapJob& job, const OptionValue& value)> apply;
};

/// The Input options for PDB/mmCIF input only (pdb2pqr and the ligands), plus `others`: what a
/// verb that reads no PDB file leaves out of its options.
std::vector<std::string_view> without_pdb_input_options(std::vector<std::string_view> others = {});

/// Every option, in the order help lists them.
const std::vector<JobOption>& job_options();
/// The option of that name (either spelling), or null.
const JobOption* find_job_option(std::string_view name);

/// What a job is for, which decides the checks that involve several options.
enum class JobUse {
  Map,     ///< `espgrid map`: outputs are needed; pdb2pqr's PQR is kept beside the first by default
  Values,  ///< the map is returned (Python, verify, bench): outputs optional, the PQR kept only if asked
};
/// The checks that need several options, after every option is applied: origin with dims,
/// --device or --devices, the approximate method's parameters, the physics, the PDB-only options
/// and where pdb2pqr's PQR goes (never onto an output or the input). UsageError on failure.
void finish_job(MapJob& job, JobUse use);

}  // namespace espgrid
