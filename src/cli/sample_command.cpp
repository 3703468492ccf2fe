// `espgrid sample STRUCTURE --points FILE`: the potential at a list of points, the
// exact direct sum over the atoms with the Physics options (on the CPU in double precision, or
// on a GPU: src/pipeline/point_sampling.h), or `--map MAP --points FILE`: a map's values there,
// interpolated trilinearly as `espgrid view` does. Points: "x y z" a line, or APBS multivalue's
// CSV "x,y,z" (src/structure/point_file.h), from a file or standard input ("-"). Out: a table with the
// potential as its last column, to a file (-o; .csv: CSV) or standard output.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/progress.h"
#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/maps/map_format_table.h"
#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/atom_potentials.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/point_sampling.h"
#include "src/structure/atom_tables.h"
#include "src/structure/point_file.h"
#include "src/view/view.h"
#include "src/view/view_page.h"

namespace espgrid::cli {
namespace {

/// The options of `espgrid sample` from the job's table: the structure and its charges, the
/// pair models' physics, and where the sum runs (the map kernels', the approximate method's and
/// the Poisson-Boltzmann solver's options do not apply to points; --model pb says why).
const JobOptionSet kSampleOptions{{OptionGroup::Input, OptionGroup::Physics, OptionGroup::Compute},
                                  {"kernel",           "devices",          "accuracy",           "msm-cutoff",
                                   "msm-spacing",      "msm-order",        "solvent-dielectric", "ion-radius",
                                   "probe-radius",     "surface",          "surface-window",     "surface-density",
                                   "surface-sampling", "pb-formulation",   "pb-tolerance",       "pb-max-iterations",
                                   "pb-equation",      "boundary",         "charge-method",      "ion",
                                   "pb-energy",        "solvation-energy", "binding-parts",      "boundary-accuracy"},
                                  /*input_required=*/false};

/// --at-atoms takes the grid and Poisson-Boltzmann options too (--model pb interpolates its map).
const JobOptionSet kAtomOptions{{OptionGroup::Input, OptionGroup::Grid, OptionGroup::Physics, OptionGroup::Compute},
                                {"kernel", "devices", "accuracy", "msm-cutoff", "msm-spacing", "msm-order"},
                                /*input_required=*/false};

/// Notes and pdb2pqr's report go to stderr, with the summary; the progress of --at-atoms.
class SampleObserver : public MapObserver {
 public:
  explicit SampleObserver(std::FILE* info, const char* what = "points") : info_(info), bar_(what) {}
  void progress(std::size_t done, std::size_t total) override { bar_.update(done, total); }
  void computed(const MapResult&) override { bar_.finish(); }
  void charges_assigned(const AssignedStructure& assigned, double seconds) override {
    std::fprintf(info_, "charges    %s (%s): %s\n", assigned.describe().c_str(), seconds_text(seconds).c_str(),
                 assigned.command.c_str());
    for (const auto& [tag, text] : assigned.report()) std::fprintf(info_, "%-10s %s\n", tag.c_str(), text.c_str());
  }
  void notice(const std::string& text) override { std::fprintf(stderr, "espgrid: note: %s\n", text.c_str()); }

 private:
  std::FILE* info_;
  ProgressBar bar_;
};

/// The atom with the lowest and the highest value, for the summary: "-12.3 kT/e at OD1 ASP A 25".
std::string extreme_text(const Structure& s, const std::vector<double>& values, bool highest) {
  const auto at =
      highest ? std::max_element(values.begin(), values.end()) : std::min_element(values.begin(), values.end());
  const auto i = static_cast<std::size_t>(at - values.begin());
  const std::string who = s.has_labels() ? s.labels[i].atom_name() + " " + s.labels[i].residue_text()
                                         : "atom " + std::to_string(i + 1) + " (" + s.atoms.element[i].text() + ")";
  return number_text(*at) + " at " + who;
}

/// `espgrid sample STRUCTURE --at-atoms`: each atom's potential from every other charge, as a
/// CSV (one row an atom; standard output without -o), a PDB with it as B-factor, and per residue.
int run_at_atoms(const cxxopts::ParseResult& args, const std::vector<std::string>& outputs) {
  if (args.count("points") || args.count("map"))
    throw UsageError("--at-atoms samples the structure's own atoms: give it without --points and --map");
  if (!args.count("input")) throw UsageError("no structure given: espgrid sample STRUCTURE --at-atoms");
  const MapJob job = job_from_args(args, kAtomOptions, JobUse::Values);
  check_atom_potential_job(job);
  const std::string residues = args.count("residues") ? args["residues"].as<std::string>() : "";
  std::vector<std::string> files = outputs;
  if (!residues.empty()) files.push_back(residues);
  for (const std::string& out : outputs) (void)atom_table_format(out);
  if (!residues.empty() && atom_table_format(residues) != AtomTableFormat::Csv)
    throw UsageError("--residues " + residues + ": the per-residue table is a .csv");
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    if (std::filesystem::equivalent(files[i], job.input.path, ec) && !ec)
      throw UsageError(files[i] + " is the input " + job.input.path + "; name another file");
    for (std::size_t k = 0; k < i; ++k)
      if (files[k] == files[i]) throw UsageError(files[i] + " is named twice");
    check_output_path(files[i]);
  }
  if (!job.input.keep_pqr.empty()) check_output_path(job.input.keep_pqr);
  std::FILE* info = outputs.empty() ? stderr : stdout;  // the CSV on standard output: the summary out of its way
  SampleObserver observer(info, "atoms");
  const JobInput input = read_job_input(job, observer);
  if (input.assigned && !job.input.keep_pqr.empty()) input.assigned->keep(job.input.keep_pqr);
  const Structure& s = input.structure;
  std::fprintf(info, "structure  %s\n", input.source.c_str());
  const AtomPotentials result = potential_at_atoms(job, s.atoms, observer);
  const std::string units = unit_name(job.physics.unit);
  std::fprintf(info, "values     %s\n", result.method.c_str());
  std::fprintf(info, "device     %s; %s\n", result.device.c_str(), seconds_text(result.seconds).c_str());
  std::fprintf(info, "range      %s to %s %s\n", extreme_text(s, result.values, false).c_str(),
               extreme_text(s, result.values, true).c_str(), units.c_str());
  const std::string column = "potential_" + units;
  if (outputs.empty()) {
    const std::string table = atom_values_csv(s, result.values, column);
    std::fflush(info);
    if (std::fwrite(table.data(), 1, table.size(), stdout) != table.size() || std::fflush(stdout) != 0)
      throw Error("cannot write the table to standard output");
  }
  for (const std::string& out : outputs) {
    if (atom_table_format(out) == AtomTableFormat::Csv) {
      write_text_file_atomically(out, atom_values_csv(s, result.values, column));
      std::fprintf(info, "wrote      %s (one row an atom)\n", out.c_str());
      continue;
    }
    std::size_t clamped = 0;
    const std::vector<std::string> remarks = {
        "espgrid " ESPGRID_VERSION " sample --at-atoms: B-factor = the potential in " + units + " at the atom",
        "structure: " + input.source, "values: " + result.method};
    write_text_file_atomically(out, atom_values_pdb(s, result.values, remarks, &clamped));
    std::fprintf(
        info, "wrote      %s (the potential as B-factor%s)\n", out.c_str(),
        clamped ? (", " + with_commas(clamped) + " values beyond -99999..999999 clamped to them").c_str() : "");
  }
  if (!residues.empty()) {
    const std::vector<ResidueValues> table = residue_values(s, result.values);
    write_text_file_atomically(residues, residue_values_csv(table));
    std::fprintf(info, "wrote      %s (%s residues: mean, min and max)\n", residues.c_str(),
                 with_commas(table.size()).c_str());
  }
  return 0;
}

std::string point_text(const PointList& points, std::size_t i) {
  return "(" + number_text(points.xyz[3 * i]) + ", " + number_text(points.xyz[3 * i + 1]) + ", " +
         number_text(points.xyz[3 * i + 2]) + ")";
}

/// `espgrid sample`'s options: the map job's of kSampleOptions and its own.
cxxopts::Options sample_options() {
  cxxopts::Options options(
      "espgrid sample",
      "The potential at a list of points: the exact direct sum over the structure's atoms (CPU: double precision;\n"
      "GPU: float32), or a map's values interpolated trilinearly (--map). Points are x y z in Å, one a line,\n"
      "separated by spaces or commas (APBS multivalue's CSV); '#' starts a comment.\n");
  options.custom_help(
      "STRUCTURE.pqr --points POINTS.txt [-o VALUES.csv] [options]  |  --map MAP.dx --points POINTS.csv");
  options.positional_help("");
  add_job_options(options, kAtomOptions, "structure file (.pqr, .xyz; .pdb or .cif: charges from pdb2pqr)");
  // clang-format off
  options.add_options("Points")
      ("points", "the points: a file of x y z lines (or x,y,z), or - for standard input", cxxopts::value<std::string>())
      ("map", "interpolate this map (" + map_extensions_text() + ") instead of summing over a structure's atoms",
       cxxopts::value<std::string>())
      ("map-units", "with --map: the map's unit when its header does not say (kT/e, kcal/mol/e or V)",
       cxxopts::value<std::string>())
      ("at-atoms", "instead of points: the potential at every atom from every other charge (pair models: the exact "
                   "sum without the atom's own term; pb: APBS's atompot, the map interpolated at the atom)")
      ("residues", "with --at-atoms: write each residue's mean, lowest and highest atom potential to this .csv",
       cxxopts::value<std::string>());
  options.add_options("Output")
      ("o,output", "the table to write (.csv: CSV with a header line x,y,z,potential; any other name: text with "
                   "'#' comments); default: standard output. With --at-atoms: .csv (one row an atom) and/or .pdb "
                   "(the potential as B-factor), repeatable", cxxopts::value<std::vector<std::string>>())
      ("table", "the table's format, text or csv (default: from -o's extension; text on standard output)",
       cxxopts::value<std::string>());
  // clang-format on
  options.add_options()("h,help", "show this help");
  return options;
}

/// Points: a structure or --map, not both; --map takes no Physics or Compute option and the
/// structure no --map-units; one table; no option that only --at-atoms takes.
void check_sample_inputs(const cxxopts::ParseResult& args, const std::vector<std::string>& outputs) {
  if (args.count("residues")) throw UsageError("--residues applies with --at-atoms");
  if (outputs.size() > 1) throw UsageError("-o is given once for the table of points (several with --at-atoms)");
  for (const JobOption& option : job_options())
    if (kAtomOptions.takes(option) && !kSampleOptions.takes(option) && args.count(std::string(option.name)))
      throw UsageError("--" + std::string(option.name) +
                       " applies to --at-atoms (a map's grid and the Poisson-Boltzmann solver); points are summed "
                       "exactly over the atoms");
  if (!args.count("points"))
    throw UsageError(
        "no points given: add --points FILE (x y z a line), or --points - to read them from standard input");
  const bool with_map = args.count("map") > 0;
  if (with_map && args.count("input"))
    throw UsageError("give a structure (the exact sum over its atoms) or --map (the map interpolated), not both");
  if (!with_map && !args.count("input"))
    throw UsageError("no structure given: espgrid sample STRUCTURE.pqr --points FILE, or --map MAP --points FILE");
  for (const JobOption& option : job_options())
    if (with_map && kSampleOptions.takes(option) && args.count(std::string(option.name)))
      throw UsageError("--" + std::string(option.name) +
                       " does not apply with --map: the map's values are "
                       "interpolated, and its header gives their physics");
  if (!with_map && args.count("map-units")) throw UsageError("--map-units applies with --map only");
}

/// The values at the points and what the table and the summary say of them.
struct Sampled {
  PointValues values;
  std::vector<std::string> comments;
  std::string units;
  std::string physics_line;  ///< what the values are, for the summary
};

/// The map of --map interpolated at `points`: InputError at the first point outside it or where
/// it is not finite.
Sampled sample_map(const cxxopts::ParseResult& args, const PointList& points, std::FILE* info) {
  Sampled out;
  const std::string map_path = args["map"].as<std::string>();
  bool unit_known = false;
  PotentialMap map = read_map_with_unit(map_path, args, "map-units", &unit_known);  // any format espgrid writes
  std::vector<std::size_t> outside, not_finite;
  out.values = interpolate_points(map, points.xyz, outside, not_finite);
  if (!outside.empty()) {
    const std::size_t i = outside.front();
    throw InputError(
        points.path, points.lines[i],
        "the point " + point_text(points, i) + " lies outside the map " + map_path + " " + box_text(map.grid) +
            (outside.size() > 1
                 ? " (" + with_commas(outside.size()) + " of the " + with_commas(points.size()) + " points do)"
                 : std::string()));
  }
  if (!not_finite.empty())
    throw InputError(
        points.path, points.lines[not_finite.front()],
        "the map " + map_path + " is not finite around the point " + point_text(points, not_finite.front()));
  out.units = unit_name(map.physics.unit);
  std::fprintf(info, "map        %s: %s\n", map_path.c_str(), describe(map.grid).c_str());
  out.comments = {"map: " + map_path, map_physics_text(map)};
  out.physics_line = "the map's: " + map_physics_text(map);
  for (const std::string& line : map_header_lines(map_path, map, unit_known))
    out.comments.push_back("map header: " + line);
  return out;
}

/// The job's structure summed at `points` with its physics (sample_points: CPU or GPU).
Sampled sample_structure(const MapJob& job, const PointList& points, std::FILE* info) {
  Sampled out;
  SampleObserver observer(info);
  const JobInput input = read_job_input(job, observer);
  if (input.assigned && !job.input.keep_pqr.empty()) input.assigned->keep(job.input.keep_pqr);
  const Atoms& atoms = input.structure.atoms;
  std::fprintf(info, "structure  %s\n", input.source.c_str());
  ProgressBar bar("points");
  out.values =
      sample_points(job, atoms, points.xyz, [&bar](std::size_t done, std::size_t total) { bar.update(done, total); });
  bar.finish();
  out.units = unit_name(job.physics.unit);
  out.comments = {"structure: " + input.source, physics_comment(job.physics)};
  out.physics_line = describe_model(job.physics) + ", dielectric " + shortest_text(job.physics.dielectric);
  return out;
}

}  // namespace

int run_sample(int argc, char** argv) {
  cxxopts::Options options = sample_options();
  const auto args = parse_args(options, argc, argv, {"output"});
  if (args.count("help")) {
    std::cout << options.help({"Input", "Points", "Output", "Physics", "Compute", ""})
              << "\nExamples:\n"
                 "  espgrid sample data/fasciculin2.pqr --points points.txt -o values.csv\n"
                 "  espgrid sample data/fasciculin2.pqr --points - --model debye --dielectric 78.54 --ionic-strength "
                 "0.15 < points.txt\n"
                 "  espgrid sample --map fas2-pb.dx --points points.csv -o pb-values.csv\n"
                 "  espgrid sample protein.pdb --at-atoms -o atoms.csv -o atoms.pdb --residues residues.csv\n";
    return 0;
  }
  const std::vector<std::string> outputs =
      args.count("output") ? args["output"].as<std::vector<std::string>>() : std::vector<std::string>{};
  for (const std::string& out : outputs)
    if (out.empty()) throw UsageError("-o needs a file name");
  if (args.count("at-atoms")) return run_at_atoms(args, outputs);
  check_sample_inputs(args, outputs);
  const bool with_map = args.count("map") > 0;
  const std::string points_path = args["points"].as<std::string>();
  const std::string output = outputs.empty() ? "" : outputs.front();
  const PointTableFormat format = args.count("table") ? parse_point_table_format(args["table"].as<std::string>())
                                  : output.empty()    ? PointTableFormat::Text
                                                      : point_table_format_from_extension(output);
  const MapJob job = job_from_args(args, kSampleOptions, JobUse::Values);  // checks the options
  if (!with_map) check_point_job(job);
  // Refused before anything is read: the output naming an input, an unwritable output.
  std::vector<std::string> inputs = {with_map ? args["map"].as<std::string>() : job.input.path};
  if (points_path != "-") inputs.push_back(points_path);
  if (!output.empty()) {
    for (const std::string& in : inputs) {
      std::error_code ec;
      if (std::filesystem::equivalent(output, in, ec) && !ec)
        throw UsageError("-o " + output + " is the input " + in + "; name another file");
    }
    check_output_path(output);
  }
  if (!job.input.keep_pqr.empty()) check_output_path(job.input.keep_pqr);
  // The table on standard output: the summary goes to standard error, out of its way.
  std::FILE* info = output.empty() ? stderr : stdout;

  const PointList points = read_points(points_path);
  Sampled result = with_map ? sample_map(args, points, info) : sample_structure(job, points, info);
  const PointValues& sampled = result.values;
  std::vector<std::string>& comments = result.comments;
  const std::string& units = result.units;
  const std::string& physics_line = result.physics_line;
  comments.insert(comments.begin(), "espgrid " ESPGRID_VERSION " sample: the potential in " + units + " at " +
                                        with_commas(points.size()) + " points from " + points.path);
  comments.push_back("values: " + sampled.method + " (" + sampled.device + ")");
  float lo = sampled.values.front(), hi = lo;
  for (const float v : sampled.values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  std::fprintf(info, "points     %s from %s\n", with_commas(points.size()).c_str(), points.path.c_str());
  std::fprintf(info, "values     %s; %s\n", sampled.method.c_str(), physics_line.c_str());
  std::fprintf(info, "device     %s%s; %s\n", sampled.device.c_str(),
               sampled.why.empty() ? "" : (" (" + sampled.why + ")").c_str(), seconds_text(sampled.seconds).c_str());
  std::fprintf(info, "range      %s to %s %s\n", number_text(lo).c_str(), number_text(hi).c_str(), units.c_str());
  const std::string table = point_table(points, sampled.values, format, comments);
  if (output.empty()) {
    std::fflush(info);
    if (std::fwrite(table.data(), 1, table.size(), stdout) != table.size() || std::fflush(stdout) != 0)
      throw Error("cannot write the table to standard output");
  } else {
    write_text_file_atomically(output, table);
    std::fprintf(info, "wrote      %s (%s)\n", output.c_str(), format == PointTableFormat::Csv ? "CSV" : "text");
  }
  return 0;
}

}  // namespace espgrid::cli
