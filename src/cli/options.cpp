#include "src/cli/options.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "src/core/errors.h"
#include "src/core/units.h"
#include "src/maps/map_formats.h"

namespace espgrid::cli {

/// A repeatable option's value taken whole: cxxopts splits vector values at commas, and an ion
/// species (--ion Z,C,R) is one value with commas in it.
struct WholeWord {
  std::string text;
};
/// Found by argument-dependent lookup from cxxopts' parser (the non-template overload wins).
inline void parse_value(const std::string& text, std::vector<WholeWord>& value) { value.push_back({text}); }
inline void parse_value(const std::string& text, WholeWord& value) { value.text = text; }

namespace {

/// Repeatable options whose every value is one word, commas included.
bool takes_whole_words(std::string_view name) { return name == "ion"; }

}  // namespace

cxxopts::ParseResult parse_args(cxxopts::Options& options, int argc, char** argv,
                                const std::vector<std::string>& repeatable) {
  const std::string help = " (see `" + options.program() + " --help`)";
  // "-o=x.dx" gives -o the value "=x.dx": a file named "=x.dx" is never what was meant.
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.size() > 2 && word[0] == '-' && word[1] != '-' && word[2] == '=')
      throw UsageError("write '-" + std::string(1, word[1]) + " " + std::string(word.substr(3)) + "', not '" +
                       std::string(word) + "': a short option takes what follows it, so its value would be '" +
                       std::string(word.substr(2)) + "'" + help);
  }
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    throw UsageError(std::string(e.what()) + help);
  }
  // Words cxxopts could not place (a second input file, a stray word) were silently ignored.
  if (!args.unmatched().empty()) throw UsageError("unexpected argument '" + args.unmatched().front() + "'" + help);
  // A repeated option silently took its last value.
  std::vector<std::string> seen;
  for (const cxxopts::KeyValue& kv : args.arguments()) {
    if (std::find(repeatable.begin(), repeatable.end(), kv.key()) != repeatable.end()) continue;
    if (std::find(seen.begin(), seen.end(), kv.key()) != seen.end())
      throw UsageError(
          (kv.key() == "input" ? std::string("more than one input file") : "--" + kv.key() + " given twice") +
          "; give it once" + help);
    seen.push_back(kv.key());
  }
  return args;
}

surface::ViewOptions view_options_from_args(const cxxopts::ParseResult& args) {
  surface::ViewOptions view;
  if (args.count("limit")) surface::set_colour_limit(view, args["limit"].as<std::string>());
  if (args.count("levels")) {
    std::vector<double> levels;
    for (const std::string& item : split_commas(args["levels"].as<std::string>()))
      levels.push_back(number_option("levels", item));
    view.levels = levels;
  }
  if (args.count("values")) view.values = surface::parse_vertex_values(args["values"].as<std::string>());
  if (args.count("view")) view.view = args["view"].as<std::string>();
  if (args.count("offset")) view.offset = number_option("offset", args["offset"].as<std::string>());
  if (args.count("surface-spacing"))
    view.surface.spacing = number_option("surface-spacing", args["surface-spacing"].as<std::string>());
  if (args.count("probe")) view.surface.probe = number_option("probe", args["probe"].as<std::string>());
  surface::check_view_options(view);
  return view;
}

double number_option(const std::string& option, const std::string& text) {
  return OptionValue::text(text).as_number(option);
}

long long whole_option(const std::string& option, const std::string& text) {
  return OptionValue::text(text).as_whole(option);
}

std::array<double, 3> triple_option(const std::string& option, const std::string& text, bool allow_single) {
  return OptionValue::text(text).as_triple(option, allow_single);
}

std::array<std::int64_t, 3> dims_option(const std::string& option, const std::string& text) {
  return OptionValue::text(text).as_dims(option);
}

bool JobOptionSet::takes(const JobOption& option) const {
  return std::find(groups.begin(), groups.end(), option.group) != groups.end() &&
         std::find(except.begin(), except.end(), option.name) == except.end();
}

void add_job_options(cxxopts::Options& options, const JobOptionSet& set, const std::string& input_help,
                     const std::string& kernel_help) {
  const bool input = std::find(set.groups.begin(), set.groups.end(), OptionGroup::Input) != set.groups.end();
  if (input) options.add_options("Input")("input", input_help, cxxopts::value<std::string>());
  for (const JobOption& o : job_options()) {
    if (!set.takes(o)) continue;
    const std::string names =
        o.short_name ? std::string(1, o.short_name) + "," + std::string(o.name) : std::string(o.name);
    const std::string help = o.name == "kernel" && !kernel_help.empty() ? kernel_help : o.help;
    auto adder = options.add_options(std::string(group_name(o.group)));
    if (o.is_switch) {
      adder(names, help);
    } else if (o.repeatable && takes_whole_words(o.name)) {
      adder(names, help, cxxopts::value<std::vector<WholeWord>>());
    } else if (o.repeatable) {
      adder(names, help, cxxopts::value<std::vector<std::string>>());
    } else if (!o.default_text.empty()) {
      adder(names, help, cxxopts::value<std::string>()->default_value(o.default_text));
    } else {
      adder(names, help, cxxopts::value<std::string>());
    }
  }
  if (input) options.parse_positional({"input"});
}

void apply_args(const cxxopts::ParseResult& args, const JobOptionSet& set, MapJob& job) {
  for (const JobOption& o : job_options()) {
    const std::string name(o.name);
    if (!set.takes(o) || !args.count(name)) continue;
    if (o.is_switch) {
      o.apply(job, OptionValue::on());
    } else if (o.repeatable && takes_whole_words(o.name)) {
      for (const WholeWord& word : args[name].as<std::vector<WholeWord>>()) o.apply(job, OptionValue::text(word.text));
    } else if (o.repeatable) {
      for (const std::string& word : args[name].as<std::vector<std::string>>()) o.apply(job, OptionValue::text(word));
    } else {
      o.apply(job, OptionValue::text(args[name].as<std::string>()));
    }
  }
}

MapJob job_from_args(const cxxopts::ParseResult& args, const JobOptionSet& set, JobUse use) {
  MapJob job;
  if (args.count("input"))
    job.input.path = args["input"].as<std::string>();
  else if (set.input_required &&
           std::find(set.groups.begin(), set.groups.end(), OptionGroup::Input) != set.groups.end())
    throw UsageError("no input file given");
  apply_args(args, set, job);
  finish_job(job, use);
  return job;
}

PotentialMap read_map_with_unit(const std::string& path, const cxxopts::ParseResult& args,
                                const std::string& unit_option, bool* unit_known) {
  bool known = false;
  PotentialMap map = read_map(path, &known);
  if (args.count(unit_option)) {
    const PotentialUnit unit = parse_unit(args[unit_option].as<std::string>());
    if (known && unit != map.physics.unit)
      throw UsageError(path + " says its unit is " + unit_name(map.physics.unit) + ", not " + unit_name(unit));
    map.physics.unit = unit;
    map.unit_known = true;
  } else if (!known) {
    throw UsageError(path + " does not say its unit; name it with --" + unit_option + " kT/e|kcal/mol/e|V");
  }
  if (unit_known) *unit_known = known;
  return map;
}

}  // namespace espgrid::cli
