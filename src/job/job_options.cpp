// The option table (job/job_options.h): every option's name, group, help, default and apply.
// Longer than 500 lines because the table is one list in help's order: split across files,
// its order and its cross-option checks (finish_job) would no longer read as one.
#include "src/job/job_options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <sys/stat.h>

#include "src/core/errors.h"
#include "src/core/number_parsing.h"
#include "src/core/text_format.h"
#include "src/core/text_parsing.h"
#include "src/maps/map_format_table.h"
#include "src/msm/msm_parameters.h"

namespace espgrid {
namespace {

std::string flag(std::string_view name) { return "--" + std::string(name); }

double parse_number_word(std::string_view name, const std::string& word) {
  const auto value = parse_number(word);
  if (!value || !std::isfinite(*value)) throw UsageError(flag(name) + " expects a number, got '" + word + "'");
  return *value;
}

}  // namespace

BackendChoice parse_backend(const std::string& text) {
  if (text == "auto") return BackendChoice::Auto;
  if (text == "cpu") return BackendChoice::Cpu;
  if (text == "cuda") return BackendChoice::Cuda;
  throw UsageError("--backend must be auto, cpu or cuda, got '" + text + "'");
}

PbSolverChoice parse_pb_solver_choice(const std::string& text) {
  if (text == "auto") return PbSolverChoice::Auto;
  if (text == "multigrid") return PbSolverChoice::Multigrid;
  if (text == "hypre") return PbSolverChoice::Hypre;
  throw UsageError("--pb-solver must be auto, multigrid or hypre, got '" + text + "'");
}

// ---- OptionValue ----------------------------------------------------------------------------------

OptionValue OptionValue::text(std::string words) {
  OptionValue v;
  v.kind_ = Kind::Text;
  v.text_ = std::move(words);
  return v;
}

OptionValue OptionValue::number(double value) {
  OptionValue v;
  v.kind_ = Kind::Number;
  v.number_ = value;
  return v;
}

OptionValue OptionValue::whole(long long value) {
  OptionValue v;
  v.kind_ = Kind::Whole;
  v.whole_ = value;
  return v;
}

OptionValue OptionValue::numbers(std::vector<double> values, bool all_whole) {
  OptionValue v;
  v.kind_ = Kind::Numbers;
  v.numbers_ = std::move(values);
  v.all_whole_ = all_whole;
  return v;
}

OptionValue OptionValue::on() {
  OptionValue v;
  v.kind_ = Kind::On;
  return v;
}

double OptionValue::as_number(std::string_view name) const {
  switch (kind_) {
    case Kind::Text:
      return parse_number_word(name, text_);
    case Kind::Number:
      if (!std::isfinite(number_)) throw UsageError(flag(name) + " expects a number, got " + number_text(number_));
      return number_;
    case Kind::Whole:
      return static_cast<double>(whole_);
    default:
      throw UsageError(flag(name) + " expects one number");
  }
}

long long OptionValue::as_whole(std::string_view name) const {
  if (kind_ == Kind::Whole) return whole_;
  if (kind_ == Kind::Text) {
    const auto value = parse_integer(text_);
    if (!value) throw UsageError(flag(name) + " expects a whole number, got '" + text_ + "'");
    return *value;
  }
  throw UsageError(flag(name) + " expects a whole number" +
                   (kind_ == Kind::Number ? ", got " + number_text(number_) : std::string()));
}

std::string OptionValue::as_text(std::string_view name) const {
  if (kind_ != Kind::Text) throw UsageError(flag(name) + " expects text");
  return text_;
}

std::array<double, 3> OptionValue::as_triple(std::string_view name, bool allow_single) const {
  const std::string expected = std::string(allow_single ? "one value or " : "") + "X,Y,Z";
  std::vector<double> values;
  if (kind_ == Kind::Text) {
    const auto parts = split_commas(text_);
    if (!(parts.size() == 3 || (parts.size() == 1 && allow_single)))
      throw UsageError(flag(name) + " expects " + expected + ", got '" + text_ + "'");
    for (const auto& part : parts) values.push_back(parse_number_word(name, part));
  } else if (kind_ == Kind::Numbers) {
    if (!(numbers_.size() == 3 || (numbers_.size() == 1 && allow_single)))
      throw UsageError(flag(name) + " expects " + expected + ", got " + std::to_string(numbers_.size()) + " values");
    for (const double v : numbers_) values.push_back(OptionValue::number(v).as_number(name));
  } else if (allow_single && (kind_ == Kind::Number || kind_ == Kind::Whole)) {
    values.push_back(as_number(name));
  } else {
    throw UsageError(flag(name) + " expects " + expected);
  }
  if (values.size() == 1) return {values[0], values[0], values[0]};
  return {values[0], values[1], values[2]};
}

std::array<std::int64_t, 3> OptionValue::as_dims(std::string_view name) const {
  std::array<std::int64_t, 3> out{};
  if (kind_ == Kind::Text) {
    const auto parts = split_commas(text_);
    if (parts.size() != 3) throw UsageError(flag(name) + " expects NX,NY,NZ, got '" + text_ + "'");
    for (std::size_t a = 0; a < 3; ++a) {
      const auto v = parse_integer(parts[a]);
      if (!v) throw UsageError(flag(name) + " expects whole numbers, got '" + parts[a] + "'");
      out[a] = *v;
    }
    return out;
  }
  if (kind_ != Kind::Numbers || numbers_.size() != 3) throw UsageError(flag(name) + " expects NX,NY,NZ");
  if (!all_whole_) throw UsageError(flag(name) + " expects whole numbers");
  for (std::size_t a = 0; a < 3; ++a) out[a] = static_cast<std::int64_t>(numbers_[a]);
  return out;
}

bool OptionValue::is_on(std::string_view name) const {
  if (kind_ == Kind::On) return true;
  throw UsageError(flag(name) + " is a switch: it takes no value");
}

std::string_view group_name(OptionGroup group) {
  switch (group) {
    case OptionGroup::Input:
      return "Input";
    case OptionGroup::Output:
      return "Output";
    case OptionGroup::Grid:
      return "Grid";
    case OptionGroup::Physics:
      return "Physics";
    case OptionGroup::Compute:
      return "Compute";
  }
  return "?";
}

// ---- the table ------------------------------------------------------------------------------------

namespace {

std::vector<int> devices_value(const OptionValue& value) {
  std::string text;
  try {
    text = value.as_text("devices");
  } catch (const UsageError&) {
    // Python: a sequence of device numbers, or one.
    std::vector<int> devices;
    const auto one = [&](long long v) {
      if (v < 0 || v > 1'000'000) throw UsageError("--devices expects all or device numbers N,N,...");
      devices.push_back(static_cast<int>(v));
    };
    try {
      one(value.as_whole("devices"));
      return devices;
    } catch (const UsageError&) {
    }
    throw UsageError("--devices expects all or device numbers N,N,...");
  }
  if (text == "all") {
    std::string reason;
    std::vector<int> all = cuda::usable_devices(&reason);
    if (all.empty()) throw Error("--devices all: " + reason);
    return all;
  }
  std::vector<int> devices;
  for (const auto& part : split_commas(text)) {
    const auto v = parse_integer(part);
    if (!v || *v < 0 || *v > 1'000'000)
      throw UsageError("--devices expects all or device numbers N,N,..., got '" + text + "'");
    devices.push_back(static_cast<int>(*v));
  }
  return devices;
}

using G = OptionGroup;

/// An option that takes a value (the common case). The job records that it was given, for the
/// checks that depend on it (finish_job: --model pb's own defaults, options of another model).
JobOption value(std::string_view name, G group, std::string help, std::string default_text,
                std::function<void(MapJob&, const OptionValue&)> apply) {
  auto record = [name, apply = std::move(apply)](MapJob& job, const OptionValue& v) {
    apply(job, v);
    job.given.emplace_back(name);
  };
  return JobOption{name, 0, group, std::move(help), std::move(default_text), false, false, std::move(record)};
}

/// The structure file's format and, for PDB/mmCIF, how pdb2pqr assigns charges.
void add_input_options(std::vector<JobOption>& t) {
  t.push_back(value("format", G::Input, "input format when the extension does not say: pqr, xyz, pdb or cif", "",
                    [](MapJob& j, const OptionValue& v) { j.input.format = parse_format_name(v.as_text("format")); }));
  // PDB/mmCIF only: each records that it was given (finish_job refuses them for a PQR or XYZ).
  const auto pdb_only = [&t](std::string_view name, std::string help, std::string fallback, bool is_switch,
                             std::function<void(ChargeAssignment&, const OptionValue&)> set) {
    JobOption o = value(name, G::Input, "PDB/mmCIF input: " + std::move(help), std::move(fallback),
                        [name, set = std::move(set)](MapJob& j, const OptionValue& v) {
                          set(j.input.charges, v);
                          if (j.input.charge_option.empty()) j.input.charge_option = "--" + std::string(name);
                        });
    o.is_switch = is_switch;
    t.push_back(std::move(o));
  };
  pdb_only("forcefield", "pdb2pqr's force field (AMBER, CHARMM, PARSE, TYL06, PEOEPB, SWANSON)", "AMBER", false,
           [](ChargeAssignment& c, const OptionValue& v) {
             c.force_field = make_charge_assignment(v.as_text("forcefield"), std::nullopt).force_field;
           });
  pdb_only("ph",
           "pH for the titratable residues, through PROPKA, and for the ligands' hydrogens (default: pdb2pqr's "
           "standard protonation states; ligands pH 7)",
           "", false, [](ChargeAssignment& c, const OptionValue& v) {
             c.ph = v.as_number("ph");
             check_charge_assignment(c);
           });
  t.push_back(value("keep-pqr", G::Input,
                    "PDB/mmCIF input: where to keep the PQR of the map's atoms (pdb2pqr's, then the ligands and ions "
                    "charged here; default: beside the first map, named after the input)",
                    "", [](MapJob& j, const OptionValue& v) {
                      j.input.keep_pqr = v.as_text("keep-pqr");
                      if (j.input.keep_pqr.empty()) throw UsageError("--keep-pqr needs a file name");
                      if (j.input.charge_option.empty()) j.input.charge_option = "--keep-pqr";
                    }));
  pdb_only("keep-water", "keep the waters (default: dropped, as pdb2pqr --drop-water)", "", true,
           [](ChargeAssignment& c, const OptionValue& v) { c.keep_water = v.is_on("keep-water"); });
  pdb_only("keep-chain", "pdb2pqr --keep-chain: chain IDs in the PQR", "", true,
           [](ChargeAssignment& c, const OptionValue& v) { c.keep_chain = v.is_on("keep-chain"); });
  pdb_only("ligand",
           "pdb2pqr --ligand: a MOL2 file of one ligand (with hydrogens) that pdb2pqr charges itself, instead of "
           "Open Babel",
           "", false, [](ChargeAssignment& c, const OptionValue& v) {
             c.ligand_mol2 = v.as_text("ligand");
             if (c.ligand_mol2.empty()) throw UsageError("--ligand needs a MOL2 file name");
           });
  pdb_only("ligand-charges",
           "how the ligands pdb2pqr has no template for are charged: mmff94 (Open Babel's MMFF94; Gasteiger where "
           "MMFF94 has no types), gasteiger, or none (left out of the map)",
           "mmff94", false, [](ChargeAssignment& c, const OptionValue& v) {
             c.ligand_charges = parse_ligand_charge_model(v.as_text("ligand-charges"));
           });
  pdb_only("pdb2pqr-options",
           "more of pdb2pqr's own options, as one word list: --nodebump, --noopt, --neutraln, --neutralc, "
           "--assign-only, --ffout FF, --userff FILE, --usernames FILE",
           "", false, [](ChargeAssignment& c, const OptionValue& v) {
             c.pdb2pqr_options = parse_pdb2pqr_options(v.as_text("pdb2pqr-options"));
           });
}

/// The map files and how they are written.
void add_output_options(std::vector<JobOption>& t) {
  JobOption output = value("output", G::Output, "map to write: " + map_formats_help() + "; repeat for several", "",
                           [](MapJob& j, const OptionValue& v) {
                             std::string path = v.as_text("output");
                             if (path.empty()) throw UsageError("-o needs a file name");
                             j.outputs.push_back(std::move(path));
                           });
  output.short_name = 'o';
  output.repeatable = true;
  t.push_back(output);
  t.push_back(value(
      "compression", G::Output,
      ".vti compressor: none (fastest to write and read; written while the map is computed), lz4 (no "
      "smaller on potentials), zlib (~15% smaller, ~20x slower to write) or lzma (~33% smaller, ~200x "
      "slower)",
      std::string(compression_name(MapWriteOptions{}.vti_compression)),
      [](MapJob& j, const OptionValue& v) { j.write.vti_compression = parse_compression(v.as_text("compression")); }));
  JobOption no_stream =
      value("no-stream", G::Output, "write every file after the computation, none while it runs (for measuring)", "",
            [](MapJob& j, const OptionValue& v) { j.write.stream = !v.is_on("no-stream"); });
  no_stream.is_switch = true;
  t.push_back(no_stream);
}

/// Where the grid lies: padding around the atoms, or an exact origin and dims.
void add_grid_options(std::vector<JobOption>& t) {
  t.push_back(value("spacing", G::Grid, "grid spacing in Å: H or HX,HY,HZ", "0.5",
                    [](MapJob& j, const OptionValue& v) { j.grid.spacing = v.as_triple("spacing", true); }));
  t.push_back(value("padding", G::Grid, "space around the atoms' bounding box on each side, Å", "10",
                    [](MapJob& j, const OptionValue& v) { j.grid.padding = v.as_number("padding"); }));
  t.push_back(value("origin", G::Grid, "explicit grid origin X,Y,Z in Å (with --dims)", "",
                    [](MapJob& j, const OptionValue& v) { j.grid.origin = v.as_triple("origin", false); }));
  t.push_back(value("dims", G::Grid, "explicit grid points NX,NY,NZ (with --origin)", "",
                    [](MapJob& j, const OptionValue& v) { j.grid.dims = v.as_dims("dims"); }));
  t.push_back(value("center", G::Grid,
                    "the grid's centre X,Y,Z in Å, exactly (APBS's gcent; default: the centre of the atoms' box)", "",
                    [](MapJob& j, const OptionValue& v) { j.grid.center = v.as_triple("center", false); }));
  t.push_back(value("length", G::Grid,
                    "the grid's least extent in Å, L or LX,LY,LZ (APBS's glen): the fewest points at --spacing that "
                    "reach it, centred on --center (default: the atoms' box plus --padding)",
                    "", [](MapJob& j, const OptionValue& v) { j.grid.length = v.as_triple("length", true); }));
}

/// One of --model pb's own options: its help marked "pb: ", `set` applied to the job's PbOptions.
void add_pb_option(std::vector<JobOption>& t, std::string_view name, std::string help, std::string fallback,
                   std::function<void(PbOptions&, const OptionValue&)> set) {
  t.push_back(value(name, G::Physics, "pb: " + std::move(help), std::move(fallback),
                    [set = std::move(set)](MapJob& j, const OptionValue& v) { set(j.physics.pb, v); }));
}

/// --model pb's medium, surface, equation, boundary and charges (APBS's keyword in brackets).
void add_pb_medium_options(std::vector<JobOption>& t) {
  const auto pb = [&t](std::string_view name, std::string help, std::string fallback,
                       std::function<void(PbOptions&, const OptionValue&)> set) {
    add_pb_option(t, name, std::move(help), std::move(fallback), std::move(set));
  };
  pb("solvent-dielectric", "the solvent's relative permittivity [sdie]", "78.54",
     [](PbOptions& o, const OptionValue& v) { o.solvent_dielectric = v.as_number("solvent-dielectric"); });
  pb("ion-radius", "radius of the ions, Å: no ions within it of an atom's surface [ion radius]", "2",
     [](PbOptions& o, const OptionValue& v) { o.ion_radius = v.as_number("ion-radius"); });
  pb("probe-radius", "solvent probe radius, Å, for mol and smol [srad]", "1.4",
     [](PbOptions& o, const OptionValue& v) { o.probe_radius = v.as_number("probe-radius"); });
  pb("surface",
     "dielectric boundary: smol (mol, then 9-point harmonic smoothing), mol (molecular surface) or spl2 (per-atom "
     "cubic splines of width --surface-window) [srfm]",
     "smol", [](PbOptions& o, const OptionValue& v) { o.surface = parse_surface(v.as_text("surface")); });
  pb("surface-window",
     "spl2's and spl4's spline window, Å; taken with mol and smol too, as APBS takes it, and not used [swin]", "0.3",
     [](PbOptions& o, const OptionValue& v) { o.spline_window = v.as_number("surface-window"); });
  pb("surface-density", "SAS points per Å² for mol and smol [sdens]", "10",
     [](PbOptions& o, const OptionValue& v) { o.surface_density = v.as_number("surface-density"); });
  pb("boundary-accuracy",
     "bcfl mdh: kT/e each face value may differ from the exact sum (faces summed by distance bands, each "
     "band's lattice checked against exact sums; the map's error from it is at most this); 0 = the exact sum over "
     "every face node",
     "1e-5", [](PbOptions& o, const OptionValue& v) { o.boundary_accuracy = v.as_number("boundary-accuracy"); });
  pb("surface-sampling",
     "mol and smol: 0 = APBS's dielectric on the faces (the same map as APBS); N = 2..16: the surface sampled N "
     "times finer per spacing and averaged over each face (espgrid's; about 2x closer to the converged map at the "
     "same spacing, docs/pb.md)",
     "0", [](PbOptions& o, const OptionValue& v) {
       const long long sampling = v.as_whole("surface-sampling");
       if (sampling < 0 || sampling > 16) throw UsageError("--surface-sampling must be 0 (APBS's rule) or 2 to 16");
       o.sampling = static_cast<int>(sampling);
     });
  pb("pb-formulation",
     "direct (APBS's discretization: charges spread onto the grid by B-splines; the default) or split (the Coulomb "
     "part summed at every point (exactly; by MSM under --accuracy), only the reaction field solved: exact in a "
     "uniform medium; no better at "
     "the molecular surface, docs/pb.md)",
     "direct",
     [](PbOptions& o, const OptionValue& v) { o.formulation = parse_formulation(v.as_text("pb-formulation")); });
  pb("pb-equation", "lpbe (the linearized PB equation) or npbe (the nonlinear one) [lpbe|npbe]", "lpbe",
     [](PbOptions& o, const OptionValue& v) { o.equation = parse_equation(v.as_text("pb-equation")); });
  pb("boundary",
     "the potential on the grid's faces: mdh (a Debye-Hueckel sphere per atom), sdh (one sphere holding the "
     "molecule's charge, dipole and quadrupole) or zero [bcfl]; focus is the APBS front end's (espgrid apbs)",
     "mdh", [](PbOptions& o, const OptionValue& v) { o.boundary = parse_boundary(v.as_text("boundary")); });
  pb("charge-method",
     "how charges go onto the grid (--pb-formulation direct): spl2 (quadratic B-splines, 27 nodes), spl0 "
     "(trilinear, 8 nodes) or spl4 (quartic B-splines, 125 nodes) [chgm]",
     "spl2", [](PbOptions& o, const OptionValue& v) { o.charges = parse_charge_method(v.as_text("charge-method")); });
}

/// --model pb's ion species, energies and solver (APBS's keyword in brackets).
void add_pb_solve_options(std::vector<JobOption>& t) {
  const auto pb = [&t](std::string_view name, std::string help, std::string fallback,
                       std::function<void(PbOptions&, const OptionValue&)> set) {
    add_pb_option(t, name, std::move(help), std::move(fallback), std::move(set));
  };
  {
    JobOption ion = value(
        "ion", G::Physics,
        "pb: an ion species Z,C,R (valence e, concentration mol/L, radius A); repeat for each species (together "
        "electroneutral, e.g. --ion 2,0.05,2 --ion -1,0.1,1.8); replaces --ionic-strength/--ion-radius's 1:1 salt; "
        "ions are kept out to the largest radius, kappa^2 from the ionic strength 1/2 sum c z^2 "
        "[ion charge Z conc C radius R]",
        "", [](MapJob& j, const OptionValue& v) {
          std::string text;
          try {
            text = v.as_text("ion");
          } catch (const UsageError&) {  // Python: one species as a sequence of three numbers
            const std::array<double, 3> zcr = v.as_triple("ion", false);
            j.physics.pb.ions.push_back(PbIon{zcr[0], zcr[1], zcr[2]});
            return;
          }
          // Several species in one value (Python): "Z,C,R;Z,C,R"
          std::size_t start = 0;
          for (;;) {
            const std::size_t end = text.find(';', start);
            j.physics.pb.ions.push_back(parse_ion(text.substr(start, end == std::string::npos ? end : end - start)));
            if (end == std::string::npos) break;
            start = end + 1;
          }
        });
    ion.repeatable = true;
    t.push_back(ion);
  }
  pb("pb-energy",
     "energies to report: total (APBS's total electrostatic energy, kT and kJ/mol), comps (also its terms and "
     "per-atom energies, in --json) or no [calcenergy]",
     "total", [](PbOptions& o, const OptionValue& v) { o.energy.level = parse_energy_level(v.as_text("pb-energy")); });
  {
    JobOption solvation =
        value("solvation-energy", G::Physics,
              "pb: also solve the reference (solvent dielectric = the solute's, no ions) on the "
              "same grid and report the solvation energy, solvated - reference",
              "", [](MapJob& j, const OptionValue& v) { j.physics.pb.energy.solvation = v.is_on("solvation-energy"); });
    solvation.is_switch = true;
    t.push_back(solvation);
  }
  pb("binding-parts",
     "PART,PART,...: PQR/XYZ files of the input complex's parts, each solved on the complex's grid with the same "
     "options; reports the binding energy, E(complex) - sum E(part)",
     "", [](PbOptions& o, const OptionValue& v) {
       const std::string text = v.as_text("binding-parts");
       for (std::string& part : split_commas(text)) {
         if (part.empty())
           throw UsageError("--binding-parts expects file names separated by commas, got '" + text + "'");
         o.energy.binding_parts.push_back(std::move(part));
       }
     });
  pb("pb-tolerance", "relative residual at which the solver stops [etol]", "1e-6",
     [](PbOptions& o, const OptionValue& v) { o.tolerance = v.as_number("pb-tolerance"); });
  pb("pb-max-iterations", "most solver iterations", "200", [](PbOptions& o, const OptionValue& v) {
    const long long iterations = v.as_whole("pb-max-iterations");
    if (iterations < 1 || iterations > 100000) throw UsageError("--pb-max-iterations must be 1 to 100000");
    o.max_iterations = static_cast<int>(iterations);
  });
}

/// Unit, medium and model, and every model's own parameters (from its evaluator).
void add_physics_options(std::vector<JobOption>& t) {
  t.push_back(value("units", G::Physics, "potential unit: kT/e, kcal/mol/e or V", "kT/e",
                    [](MapJob& j, const OptionValue& v) { j.physics.unit = parse_unit(v.as_text("units")); }));
  t.push_back(value("dielectric", G::Physics, "relative permittivity of the uniform medium", "1",
                    [](MapJob& j, const OptionValue& v) { j.physics.dielectric = v.as_number("dielectric"); }));
  t.push_back(value("temperature", G::Physics, "temperature for kT/e, K", "298.15",
                    [](MapJob& j, const OptionValue& v) { j.physics.temperature = v.as_number("temperature"); }));
  std::string models, screened;
  for_each_pair_model([&](auto potential) {
    models += (models.empty() ? "" : ", ") + std::string(potential.name);
    if (potential.screened) screened += (screened.empty() ? "" : "/") + std::string(potential.name);
  });
  t.push_back(value("model", G::Physics,
                    models + " (pair models) or pb (Poisson-Boltzmann); each described under Models in `espgrid map "
                             "--help`",
                    "coulomb", [models](MapJob& j, const OptionValue& v) {
                      std::string name = v.as_text("model");
                      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                      // pb is a map method of its own (a field solve, src/pb/), not a pair model
                      j.physics.method = name == "pb" ? MapMethod::PoissonBoltzmann : MapMethod::PairSum;
                      if (j.physics.is_pb()) {
                        j.physics.model = PairModel::Coulomb;
                        return;
                      }
                      try {
                        j.physics.model = parse_model(name);  // names in any case: PB, Debye
                      } catch (const UsageError&) {
                        throw UsageError("--model takes " + models + " or pb, got " +
                                         espgrid::quoted(v.as_text("model")));
                      }
                    }));
  t.push_back(value("ionic-strength", G::Physics,
                    screened + " and pb: ionic strength of the 1:1 electrolyte, mol/L (pb: default 0.15)", "0",
                    [](MapJob& j, const OptionValue& v) { j.physics.ionic_strength = v.as_number("ionic-strength"); }));
  add_pb_medium_options(t);
  add_pb_solve_options(t);
  // Each model's own parameters, as its evaluator declares them (pair_potentials.h).
  for_each_pair_model([&](auto potential) {
    for (const ModelParameter& p : potential.parameters) {
      const bool listed = std::any_of(t.begin(), t.end(), [&](const JobOption& o) { return o.name == p.name; });
      if (listed) continue;  // two models may share a parameter's name: one option sets it for either
      t.push_back(JobOption{p.name, 0, G::Physics, std::string(potential.name) + " model: " + p.help + ", " + p.unit,
                            "", false, false, [name = std::string(p.name)](MapJob& j, const OptionValue& v) {
                              j.physics.set_parameter(name, v.as_number(name));
                            }});
    }
  });
}

/// Which kernel runs where, and the approximate method's parameters.
void add_compute_options(std::vector<JobOption>& t) {
  t.push_back(value("kernel", G::Compute, "kernel variant (see `espgrid kernels`)", "",
                    [](MapJob& j, const OptionValue& v) { j.compute.kernel = v.as_text("kernel"); }));
  t.push_back(value("backend", G::Compute, "auto, cpu or cuda (auto: CUDA when a usable GPU is present)", "auto",
                    [](MapJob& j, const OptionValue& v) { j.compute.backend = parse_backend(v.as_text("backend")); }));
  t.push_back(value("pb-solver", G::Compute,
                    "pb: auto (the GPU's multigrid on a GPU; on the CPU espgrid's multigrid in one process, "
                    "hypre across MPI ranks), multigrid, or hypre (CPU: hypre's PCG + PFMG)",
                    "auto", [](MapJob& j, const OptionValue& v) {
                      j.compute.pb_solver = parse_pb_solver_choice(v.as_text("pb-solver"));
                    }));
  t.push_back(value("device", G::Compute, "CUDA device number", "0", [](MapJob& j, const OptionValue& v) {
    // Read as a whole number of any size: "--device 99999999999" must still name its option.
    const long long device = v.as_whole("device");
    if (device < 0 || device > 1'000'000) throw UsageError("--device must be a device number, 0 or more");
    j.compute.run.device = static_cast<int>(device);
    j.compute.device_given = true;
  }));
  t.push_back(value("devices", G::Compute,
                    "several CUDA devices: all, or N,N,... (z-planes shared out through a work queue; a repeated "
                    "number runs two workers on one GPU; --model pb: the grid split in z-slabs, one an entry)",
                    "", [](MapJob& j, const OptionValue& v) {
                      j.compute.run.devices = devices_value(v);
                      if (j.compute.run.devices.empty())
                        throw UsageError("--devices expects all or device numbers N,N,...");
                    }));
  t.push_back(value("threads", G::Compute, "CPU threads (0 = all cores)", "0", [](MapJob& j, const OptionValue& v) {
    const long long threads = v.as_whole("threads");
    if (threads < 0 || threads > kMaxCpuThreads)
      throw UsageError("--threads takes 0 (all cores) to " + std::to_string(kMaxCpuThreads) + ", got " +
                       std::to_string(threads));
    j.compute.run.threads = static_cast<int>(threads);
  }));
  t.push_back(value("accuracy", G::Compute,
                    "approximate method (multilevel summation, cpu-msm or cuda-msm) with this relative RMS error at "
                    "points >= 1.4 Å from atoms, e.g. 1e-3 or 1e-4: parameters from measured tables (README, Large "
                    "structures)",
                    "", [](MapJob& j, const OptionValue& v) {
                      const double accuracy = v.as_number("accuracy");
                      if (!(accuracy > 0) || !(accuracy < 1))
                        throw UsageError("--accuracy must be a relative error between 0 and 1 (e.g. 1e-3), got " +
                                         number_text(accuracy));
                      j.compute.run.method.accuracy = accuracy;
                    }));
  t.push_back(
      value("msm-cutoff", G::Compute, "experts: MSM short-range cutoff a, Å (with --msm-spacing and --msm-order)", "",
            [](MapJob& j, const OptionValue& v) { j.compute.run.method.msm.cutoff = v.as_number("msm-cutoff"); }));
  t.push_back(
      value("msm-spacing", G::Compute, "experts: MSM finest grid spacing h, Å", "",
            [](MapJob& j, const OptionValue& v) { j.compute.run.method.msm.spacing = v.as_number("msm-spacing"); }));
  t.push_back(value("msm-order", G::Compute, "experts: MSM interpolation order, 3 (cubic) or 5 (quintic)", "",
                    [](MapJob& j, const OptionValue& v) {
                      const long long order = v.as_whole("msm-order");
                      if (order != 3 && order != 5) throw UsageError("--msm-order must be 3 (cubic) or 5 (quintic)");
                      j.compute.run.method.msm.order = static_cast<int>(order);
                    }));
}

std::vector<JobOption> make_table() {
  std::vector<JobOption> t;
  add_input_options(t);
  add_output_options(t);
  add_grid_options(t);
  add_physics_options(t);
  add_compute_options(t);
  return t;
}

/// Where a path lands, for comparing names of files that may not exist yet.
std::filesystem::path landing(const std::string& path) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
}

/// Whether two paths name the same file: the same place once links are followed, or (both
/// existing) the same device and inode, as hard links are.
bool same_place(const std::string& a, const std::string& b) {
  if (landing(a) == landing(b)) return true;
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::vector<std::string_view> without_pdb_input_options(std::vector<std::string_view> others) {
  for (const std::string_view name :
       {"forcefield", "ph", "keep-pqr", "keep-water", "keep-chain", "ligand", "ligand-charges", "pdb2pqr-options"})
    others.push_back(name);
  return others;
}

const std::vector<JobOption>& job_options() {
  static const std::vector<JobOption> table = make_table();
  return table;
}

const JobOption* find_job_option(std::string_view name) {
  std::string dashed(name);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const JobOption& o : job_options())
    if (o.name == dashed) return &o;
  return nullptr;
}

namespace {

bool given(const MapJob& job, std::string_view name) {
  return std::find(job.given.begin(), job.given.end(), name) != job.given.end();
}

/// --model pb takes APBS's defaults where the pair models have theirs (solute dielectric 2,
/// 0.15 M) and its own options; the pair models refuse those.
void finish_pb(MapJob& job) {
  static constexpr std::string_view kPbOnly[] = {
      "solvent-dielectric", "ion-radius",       "probe-radius",      "surface",        "surface-window",
      "surface-density",    "surface-sampling", "boundary-accuracy", "pb-formulation", "pb-tolerance",
      "pb-max-iterations",  "pb-equation",      "boundary",          "charge-method",  "ion",
      "pb-energy",          "solvation-energy", "binding-parts",     "pb-solver"};
  PhysicsOptions& physics = job.physics;
  if (!physics.is_pb()) {
    for (const std::string_view option : kPbOnly)
      if (given(job, option))
        throw UsageError("--" + std::string(option) + " applies to --model pb, not --model " +
                         model_name(physics.model));
    return;
  }
  if (job.compute.pb_solver == PbSolverChoice::Hypre && job.compute.backend == BackendChoice::Cuda)
    throw UsageError("--pb-solver hypre runs on the CPU: drop --backend cuda");
  PbOptions& pb = physics.pb;
  if (given(job, "dielectric")) pb.solute_dielectric = physics.dielectric;  // else APBS's pdie 2
  physics.dielectric = pb.solute_dielectric;
  if (given(job, "ionic-strength")) pb.ionic_strength = physics.ionic_strength;  // else 0.15 M
  physics.ionic_strength = 0;
  pb.temperature = physics.temperature;
  // --surface-window with mol or smol is taken and not used, as APBS takes `swin` (PDB2PQR's
  // template writes it whatever the surface): an APBS input's settings all carry over.
  // The map reports APBS's total energy unless told not to (cheap); the split formulation has no
  // spread charges, so no APBS energy: asked for explicitly, validate() refuses it.
  if (!given(job, "pb-energy") && pb.formulation == PbFormulation::Direct) pb.energy.level = PbEnergyLevel::Total;
  if (!pb.ions.empty() && (given(job, "ionic-strength") || given(job, "ion-radius")))
    throw UsageError("give the ions as --ion species or as --ionic-strength/--ion-radius (a 1:1 salt), not both");
  if (pb.boundary == PbBoundary::Focus)
    throw UsageError(
        "--boundary focus interpolates a coarser level's potential: that is APBS's mg-auto "
        "focusing (espgrid apbs FILE.in); use zero, sdh or mdh for one map");
  if (given(job, "charge-method") && pb.formulation == PbFormulation::Split)
    throw UsageError("--charge-method applies to --pb-formulation direct (split spreads no charges)");
  // The kernel options choose the kernel of the one direct sum they can serve: the Coulomb part of
  // the split formulation (the boundary faces always take the backend's exact kernel).
  if (pb.formulation != PbFormulation::Split)
    for (const std::string_view option : {"kernel", "accuracy", "msm-cutoff", "msm-spacing", "msm-order"})
      if (given(job, option))
        throw UsageError("--" + std::string(option) +
                         " with --model pb chooses the kernel of the Coulomb part that --pb-formulation split sums; "
                         "the direct formulation has no such sum (the boundary faces always take the backend's "
                         "exact kernel): leave it out, or add --pb-formulation split");
}

}  // namespace

void finish_job(MapJob& job, JobUse use) {
  finish_pb(job);
  // Grid: origin and dims together, every value checked (needs no atoms).
  if (job.grid.dims.has_value() != job.grid.origin.has_value())
    throw UsageError(job.grid.dims ? "--dims needs --origin too" : "--origin needs --dims too");
  if (job.grid.length && given(job, "padding"))
    throw UsageError("--length gives the grid's extent, and --padding would too: give one of them");
  check_grid_request(job.grid);
  validate(job.physics);
  // Compute: one device or several, and the approximate method's parameters checked now.
  RunOptions& run = job.compute.run;
  if (!run.devices.empty()) {
    if (job.compute.device_given) throw UsageError("give --device N or --devices LIST, not both");
    run.device = run.devices.front();
  }
  if (!run.method.msm.empty() || run.method.accuracy != 0)
    resolve_msm(run.method, job.physics.model);  // the bounds are per model
  job.write.threads = run.threads;
  if (use == JobUse::Map && job.outputs.empty())
    throw UsageError("no output given: add -o map.vti, -o map.dx and/or -o map.mrc");
  // Input: the PDB-only options, and where pdb2pqr's PQR is kept.
  StructureSource& input = job.input;
  if (!input.from_file()) return;
  if (input.path.empty()) {
    if (use == JobUse::Map) throw UsageError("no input file given");
    return;  // the caller has its own input (bench's random atoms) or asks for it itself
  }
  if (!needs_charge_assignment(input.file_format())) {
    if (!input.charge_option.empty())
      throw UsageError(input.charge_option + " applies to PDB and mmCIF input (charges from pdb2pqr); " + input.path +
                       " has its charges already");
    return;
  }
  if (input.keep_pqr.empty() && use == JobUse::Map) {
    // Beside the (first) map, named after the structure: out/protein.dx -> out/protein.pqr
    // (protein.pdb.gz too); standard input and pipes have no useful name: out/map.dx -> out/map.pqr.
    namespace fs = std::filesystem;
    const fs::path map(job.outputs.front());
    std::string stem = structure_stem(input.path);
    if (stem.empty()) stem = map.stem().string();
    input.keep_pqr = (map.parent_path() / (stem + ".pqr")).string();
  }
  if (input.keep_pqr.empty()) return;
  // The PQR and pdb2pqr's log beside it (AssignedStructure::keep) may replace neither a map
  // nor the input: by name, through links, or as the same file (a hard link).
  const std::string log = AssignedStructure::log_path_for(input.keep_pqr);
  const std::pair<std::string, std::string> kept[] = {
      {input.keep_pqr, "--keep-pqr " + input.keep_pqr},
      {log, "pdb2pqr's log " + log + " (kept beside --keep-pqr " + input.keep_pqr + ")"}};
  for (const auto& [path, named] : kept) {
    for (const std::string& other : job.outputs)
      if (same_place(path, other)) throw UsageError(named + " is also a map output; name another file");
    if (!is_standard_input(input.path) && same_place(path, input.path))
      throw UsageError(named + " would replace the input " + input.path + "; name another file");
  }
}

}  // namespace espgrid
