// espgrid.Map: values on a grid with its physics, made from values or read from a file, written, viewed and summarised.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "src/core/text_format.h"
#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"
#include "src/view/view.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

/// The map's values as a read-only (nx, ny, nz) view in Fortran order over the x-fastest
/// buffer: values[i, j, k] is the potential at origin + (i·hx, j·hy, k·hz). No copy; the
/// array keeps the map alive.
py::array values_view(const py::object& self) {
  PyMap& m = self.cast<PyMap&>();
  const auto& d = m.map.grid.dims;
  const auto item = static_cast<py::ssize_t>(sizeof(float));
  py::array_t<float> view(
      {static_cast<py::ssize_t>(d[0]), static_cast<py::ssize_t>(d[1]), static_cast<py::ssize_t>(d[2])},
      {item, item * d[0], item * d[0] * d[1]}, m.map.values.data(), self);
  view.attr("setflags")("write"_a = false);  // numpy's public call: no pybind11 internals
  return view;
}

PyMap map_from_values(const py::handle& values, const GridSpec& grid, const PhysicsOptions& physics,
                      const std::string& source) {
  refuse_complex(values, "values");
  // Checked as float64, before float32 could overflow: a map holds finite potentials, and a NaN,
  // an infinity or a number beyond float32 is the caller's, named at its index (the writers would
  // only find "the potential at grid point ... is not finite").
  auto array = py::array_t<double, py::array::f_style | py::array::forcecast>::ensure(values);
  if (!array) throw UsageError("values must be an array of numbers");
  const auto& d = grid.dims;
  if (array.ndim() != 3 || array.shape(0) != d[0] || array.shape(1) != d[1] || array.shape(2) != d[2])
    throw UsageError("values must have the grid's shape (" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
                     std::to_string(d[2]) + "), got " + shape_text(array));
  const double* data = array.data();
  const double* end = data + grid.point_count();
  const double* bad = std::find_if(data, end, [](double v) { return !(std::fabs(v) <= double(FLT_MAX)); });
  if (bad != end) {
    const auto at = static_cast<std::int64_t>(bad - data);
    const std::int64_t i = at % d[0], j = (at / d[0]) % d[1], k = at / (d[0] * d[1]);
    const py::object given = py::reinterpret_borrow<py::object>(values)[py::make_tuple(i, j, k)];
    throw UsageError("values[" + std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) + "] is " +
                     py::repr(given).cast<std::string>() +
                     (std::isfinite(*bad) ? " (beyond float32's ±3.4e38, in which maps are stored)" : "") +
                     ": a map holds finite potentials");
  }
  PyMap m;
  m.map.grid = grid;
  m.map.physics = physics;
  m.map.source = source;
  m.map.values.assign(data, end);  // Fortran order = x fastest
  return m;
}

PyMap read_map_file(const py::handle& path_argument, const std::optional<std::string>& units) {
  const std::string path = os_string(path_argument);
  PyMap m;
  bool unit_known = false;
  {
    py::gil_scoped_release release;
    m.map = read_map(path, &unit_known);
  }
  if (units) {
    const PotentialUnit unit = parse_unit(*units);
    if (unit_known && unit != m.map.physics.unit)
      throw UsageError(path + " says its unit is " + unit_name(m.map.physics.unit) + ", not " + unit_name(unit));
    m.map.physics.unit = unit;
    m.map.unit_known = true;
  } else if (!unit_known) {
    throw UsageError(path + " does not say its unit; name it with units='kT/e', 'kcal/mol/e' or 'V'");
  }
  return m;
}

/// "Map(shape=(41, 33, 47), spacing=..., origin=..., units='kT/e', model='coulomb',
/// dielectric=1.0, range=(-3.1, 4.2), kernel='cpu-simd', source='...')": what a notebook shows.
/// Numbers go through Python's repr, so they read the same in any locale.
std::string map_repr(const PyMap& p) {
  const PotentialMap& m = p.map;
  float lo = 0, hi = 0;
  std::size_t finite = 0;
  for (const float v : m.values) {
    if (!std::isfinite(v)) continue;
    lo = finite ? std::min(lo, v) : v;
    hi = finite ? std::max(hi, v) : v;
    ++finite;
  }
  const auto r = [](const py::object& o) { return py::repr(o).cast<std::string>(); };
  std::string text = "Map(shape=" + r(triple(m.grid.dims)) + ", spacing=" + r(triple(m.grid.spacing)) +
                     ", origin=" + r(triple(m.grid.origin)) + ", units=" + r(py::str(unit_name(m.physics.unit))) +
                     ", model=" + (m.foreign.empty() ? r(py::str(model_label(m.physics))) : std::string("None")) +
                     (m.foreign.empty() ? ", dielectric=" + r(py::float_(m.physics.dielectric)) : std::string());
  if (m.physics.unit == PotentialUnit::KTPerE && m.foreign.empty())
    text += ", temperature=" + r(py::float_(m.physics.temperature));
  if (!m.foreign.empty()) text += ", foreign=" + r(py::str(m.foreign));
  if (finite) text += ", range=" + r(py::make_tuple(static_cast<double>(lo), static_cast<double>(hi)));
  if (finite != m.values.size()) text += ", not_finite=" + std::to_string(m.values.size() - finite);
  if (!p.kernel.empty()) text += ", kernel=" + r(py::str(p.kernel));
  if (!m.source.empty()) text += ", source=" + r(os_text(m.source));
  return text + ")";
}

/// A PB map's energies (PyMap::energy) for pickle: every field pb_energy_json and the summary
/// read, as plain tuples; None without.
py::object energy_state(const std::optional<PbEnergyReport>& report) {
  if (!report) return py::none();
  const pb::PbEnergy& e = report->energy;
  const auto terms = [](const pb::PbEnergyTerms& t) {
    return py::make_tuple(t.fixed_charge, t.mobile_charge, t.dielectric);
  };
  py::list parts;
  for (const PbEnergyReport::Part& part : report->parts) parts.append(py::make_tuple(part.name, part.total));
  return py::make_tuple(static_cast<int>(e.level), e.temperature, e.total, terms(e.terms), terms(e.from_coarser),
                        e.per_atom, terms(e.outside_child), report->charge_method, report->nonlinear, report->reference,
                        report->solvation, parts, report->binding);
}

std::optional<PbEnergyReport> energy_from_state(const py::handle& state) {
  if (state.is_none()) return std::nullopt;
  const auto t = state.cast<py::tuple>();
  const auto terms = [](const py::handle& h) {
    const auto v = h.cast<std::array<double, 3>>();
    return pb::PbEnergyTerms{v[0], v[1], v[2]};
  };
  PbEnergyReport r;
  r.energy.level = static_cast<PbEnergyLevel>(t[0].cast<int>());
  r.energy.temperature = t[1].cast<double>();
  r.energy.total = t[2].cast<double>();
  r.energy.terms = terms(t[3]);
  r.energy.from_coarser = terms(t[4]);
  r.energy.per_atom = t[5].cast<std::vector<double>>();
  r.energy.outside_child = terms(t[6]);
  r.charge_method = t[7].cast<std::string>();
  r.nonlinear = t[8].cast<bool>();
  r.reference = t[9].cast<std::optional<double>>();
  r.solvation = t[10].cast<std::optional<double>>();
  for (const py::handle h : t[11]) {
    const auto part = h.cast<py::tuple>();
    r.parts.push_back({part[0].cast<std::string>(), part[1].cast<double>()});
  }
  r.binding = t[12].cast<std::optional<double>>();
  return r;
}

/// PB: the ion species given one by one, as the ion= text "z,c,r;z,c,r" (Python's repr of each
/// number: exact); empty for a 1:1 salt from ionic_strength (and for pair models).
std::string pb_ions_state(const PhysicsOptions& physics) {
  std::string out;
  if (!physics.is_pb()) return out;
  const auto r = [](double v) { return py::repr(py::float_(v)).cast<std::string>(); };
  for (const PbIon& ion : physics.pb.ions)
    out += (out.empty() ? "" : ";") + r(ion.charge) + "," + r(ion.concentration) + "," + r(ion.radius);
  return out;
}

/// Everything a Map holds, for pickle (and copies): the values, the grid, the physics as the
/// option keywords that make it again (model_parameters_json's keys are Python keywords), and
/// the record of how it was made.
py::dict map_state(const PyMap& p) {
  const PotentialMap& m = p.map;
  const py::object loads = py::module_::import("json").attr("loads");
  py::array_t<float, py::array::f_style> values({static_cast<py::ssize_t>(m.grid.dims[0]),
                                                 static_cast<py::ssize_t>(m.grid.dims[1]),
                                                 static_cast<py::ssize_t>(m.grid.dims[2])});
  std::copy(m.values.begin(), m.values.end(), values.mutable_data());
  const TimingReport& t = p.timing;
  py::list phases;
  for (const PhaseTiming& phase : t.phases) phases.append(py::make_tuple(phase.name, phase.seconds));
  const MapProvenance& v = p.provenance;
  return py::dict(
      "version"_a = ESPGRID_VERSION, "values"_a = values, "origin"_a = triple(m.grid.origin),
      "spacing"_a = triple(m.grid.spacing), "units"_a = unit_name(m.physics.unit),
      "dielectric"_a = m.physics.dielectric, "temperature"_a = m.physics.temperature,
      "parameters"_a = loads(model_parameters_json(m.physics).dump(0)), "physics"_a = physics_comment(m.physics),
      "source"_a = m.source, "kernel"_a = p.kernel, "kernel_why"_a = p.kernel_why,
      "timing"_a = py::make_tuple(t.read_seconds, t.prepare_seconds, t.kernel_seconds, t.transfer_seconds,
                                  t.write_seconds, t.streamed_write_seconds, t.device, t.method, t.direct_sums, phases),
      "provenance"_a = py::make_tuple(v.command, v.input, v.atoms, v.total_charge, v.charges_from, v.pdb2pqr_command,
                                      v.pqr_kept, v.created),
      "outputs"_a = p.outputs, "foreign"_a = m.foreign, "unit_known"_a = m.unit_known,
      "energy"_a = energy_state(p.energy), "ions"_a = pb_ions_state(m.physics));
}

/// The physics of a pickled map, through the option table (the keywords compute_map takes),
/// checked against the physics line it had: a parameter the table cannot take back fails loudly.
PhysicsOptions physics_from_state(const py::dict& state) {
  const py::dict parameters = state["parameters"].cast<py::dict>();
  const bool pb = parameters["name"].cast<std::string>() == "pb";
  py::dict keywords("units"_a = state["units"], "temperature"_a = state["temperature"], "model"_a = parameters["name"],
                    "dielectric"_a = pb ? parameters["solute_dielectric"] : state["dielectric"]);
  // PB: the species given as ion= (state "ions") replace the 1:1 salt's keywords; "ions" in the
  // parameters lists the species either way. The split formulation takes no charge_method.
  const std::string ions = state["ions"].cast<std::string>();
  const bool split = pb && parameters["pb_formulation"].cast<std::string>() == "split";
  for (const auto& [key, value] : parameters) {
    const std::string name = key.cast<std::string>();
    if (name == "name" || name == "description" || name == "kappa_per_angstrom" || name == "solute_dielectric" ||
        name == "ions" || (split && name == "charge_method") ||
        (!ions.empty() && (name == "ionic_strength" || name == "ion_radius")))
      continue;
    keywords[key] = value;
  }
  if (!ions.empty()) keywords["ion"] = ions;
  const PhysicsOptions physics = job_from_keywords(keywords).physics;
  if (physics_comment(physics) != state["physics"].cast<std::string>())
    throw Error("internal error: a pickled map's physics did not come back: " + physics_comment(physics) +
                " instead of " + state["physics"].cast<std::string>());
  return physics;
}

PyMap map_from_state(const py::dict& state) {
  if (state["version"].cast<std::string>() != ESPGRID_VERSION)
    throw UsageError("this Map was pickled by espgrid " + state["version"].cast<std::string>() + ", not " +
                     ESPGRID_VERSION);
  PyMap p;
  const auto values = state["values"].cast<py::array_t<float, py::array::f_style | py::array::forcecast>>();
  GridRequest request;
  request.origin = state["origin"].cast<std::array<double, 3>>();
  request.spacing = state["spacing"].cast<std::array<double, 3>>();
  request.dims = {values.shape(0), values.shape(1), values.shape(2)};
  p.map.grid = *explicit_grid(request);
  p.map.physics = physics_from_state(state);
  p.map.values.assign(values.data(), values.data() + p.map.grid.point_count());
  p.map.source = state["source"].cast<std::string>();
  p.kernel = state["kernel"].cast<std::string>();
  p.kernel_why = state["kernel_why"].cast<std::string>();
  const auto t = state["timing"].cast<py::tuple>();
  TimingReport& timing = p.timing;
  timing.read_seconds = t[0].cast<double>();
  timing.prepare_seconds = t[1].cast<double>();
  timing.kernel_seconds = t[2].cast<double>();
  timing.transfer_seconds = t[3].cast<double>();
  timing.write_seconds = t[4].cast<double>();
  timing.streamed_write_seconds = t[5].cast<double>();
  timing.device = t[6].cast<std::string>();
  timing.method = t[7].cast<std::string>();
  timing.direct_sums = t[8].cast<std::string>();
  for (const py::handle h : t[9]) {
    const auto phase = h.cast<py::tuple>();
    timing.phases.push_back({phase[0].cast<std::string>(), phase[1].cast<double>()});
  }
  const auto v = state["provenance"].cast<py::tuple>();
  MapProvenance& pv = p.provenance;
  pv.command = v[0].cast<std::vector<std::string>>();
  pv.input = v[1].cast<std::string>();
  pv.atoms = v[2].cast<std::size_t>();
  pv.total_charge = v[3].cast<double>();
  pv.charges_from = v[4].cast<std::string>();
  pv.pdb2pqr_command = v[5].cast<std::string>();
  pv.pqr_kept = v[6].cast<std::string>();
  pv.created = v[7].cast<std::string>();
  p.outputs = state["outputs"].cast<std::vector<std::string>>();
  p.map.foreign = state["foreign"].cast<std::string>();
  p.map.unit_known = state["unit_known"].cast<bool>();
  p.energy = energy_from_state(state["energy"]);
  return p;
}

}  // namespace

namespace {

/// The Map class: its values (a view, no copy), grid, physics, provenance and summary.
void bind_map_class(py::module_& m) {
  py::class_<PyMap>(m, "Map", "A potential map: values on a grid, with its unit, medium and model.")
      .def_property_readonly("values", &values_view,
                             "Read-only (nx, ny, nz) view, no copy: values[i, j, k] is the potential at "
                             "origin + (i*hx, j*hy, k*hz), in the map's units. Memory is x fastest (Fortran order).")
      .def_property_readonly("grid", [](const PyMap& p) { return p.map.grid; })
      .def_property_readonly("origin", [](const PyMap& p) { return triple(p.map.grid.origin); })
      .def_property_readonly("spacing", [](const PyMap& p) { return triple(p.map.grid.spacing); })
      .def_property_readonly("shape", [](const PyMap& p) { return triple(p.map.grid.dims); })
      .def_property_readonly("units", [](const PyMap& p) { return unit_name(p.map.physics.unit); })
      .def_property_readonly("model",
                             [](const PyMap& p) -> py::object {
                               if (!p.map.foreign.empty()) return py::none();  // APBS's map: not known
                               return py::str(model_label(p.map.physics));
                             })
      .def_property_readonly("dielectric", [](const PyMap& p) { return p.map.physics.dielectric; })
      .def_property_readonly("temperature", [](const PyMap& p) { return p.map.physics.temperature; })
      .def_property_readonly(
          "physics",
          [](const PyMap& p) {
            return p.map.foreign.empty() ? physics_comment(p.map.physics)
                                         : foreign_map_title(p.map) + "; " + foreign_map_unit(p.map);
          },
          "The physics line every output file records, e.g. 'Potential in kT/e (T = 298.15 K), "
          "dielectric 1'.")
      .def_property_readonly("source", [](const PyMap& p) { return os_text(p.map.source); })
      .def_property_readonly("kernel",
                             [](const PyMap& p) -> py::object {
                               if (p.kernel.empty()) return py::none();
                               return py::str(p.kernel);
                             })
      .def_property_readonly("kernel_choice", [](const PyMap& p) { return p.kernel_why; })
      .def_property_readonly("device", [](const PyMap& p) { return p.timing.device; })
      .def_property_readonly("timing",
                             [](const PyMap& p) {
                               return py::dict("read_seconds"_a = p.timing.read_seconds,
                                               "prepare_seconds"_a = p.timing.prepare_seconds,
                                               "kernel_seconds"_a = p.timing.kernel_seconds,
                                               "transfer_seconds"_a = p.timing.transfer_seconds,
                                               "write_seconds"_a = p.timing.write_seconds);
                             })
      .def("__repr__", [](const PyMap& p) { return os_text(map_repr(p)); })
      .def("__copy__", [](const PyMap& p) { return PyMap(p); })
      .def(
          "__deepcopy__", [](const PyMap& p, const py::dict&) { return PyMap(p); }, "memo"_a)
      .def(py::pickle(&map_state, &map_from_state))
      .def(
          "write",
          [](PyMap& p, const py::args& args) {
            // write("a.dx", "b.vti") or write(["a.dx", "b.vti"]); paths may be os.PathLike.
            py::list items =
                args.size() == 1 && (py::isinstance<py::list>(args[0]) || py::isinstance<py::tuple>(args[0]))
                    ? py::list(args[0])
                    : py::list(args);
            std::vector<std::string> paths;
            for (const py::handle& item : items) paths.push_back(os_string(item));
            if (paths.empty()) throw UsageError("no output given: write('map.dx') and/or write('map.vti')");
            check_output_paths(paths);
            py::gil_scoped_release release;
            write_map_files(p.map, paths, &p.timing, [&p](const std::string& path) { p.outputs.push_back(path); });
          },
          "Writes the map to every path (format from the extension, as `espgrid map -o`), each atomically.");
}

/// Making maps from values and reading map files.
void bind_map_making(py::module_& m) {
  m.def(
      "map_from_values",
      [](const py::handle& values, const GridSpec& grid, const py::object& like, const MapJob* options,
         const py::object& source) {
        PhysicsOptions physics = options ? options->physics : PhysicsOptions{};
        if (!like.is_none()) {
          // A wrong type is a TypeError, as Python's own calls raise, not pybind11's cast error.
          if (!py::isinstance<PyMap>(like))
            throw py::type_error("like= takes an espgrid.Map (whose physics the new map gets), got " +
                                 py::repr(py::type::of(like)).cast<std::string>());
          physics = like.cast<const PyMap&>().map.physics;
        }
        return map_from_values(values, grid, physics, os_string(source));
      },
      "values"_a, "grid"_a, "like"_a = py::none(), "options"_a = nullptr, "source"_a = "");
  m.def("read_map", &read_map_file, "path"_a, "units"_a = py::none());
}

/// The `espgrid view` page of a map in memory, writing it, and the map's summary as JSON.
void bind_map_pages(py::module_& m) {
  // Map.view (python/espgrid/view.py): the `espgrid view` page of a map in memory.
  m.def(
      "view_page",
      [](const PyMap& p, const PyStructure& s, const py::object& limit, const py::object& levels,
         const std::string& values, double offset, double surface_spacing, double probe, const std::string& title,
         const std::string& view) {
        surface::ViewOptions options;  // the fields `espgrid view` sets (cli::view_options_from_args)
        options.view = view;
        if (py::isinstance<py::str>(limit))
          surface::set_colour_limit(options, limit.cast<std::string>());
        else if (!limit.is_none())
          options.limit = limit.cast<double>();
        if (!levels.is_none()) options.levels = levels.cast<std::vector<double>>();
        options.values = surface::parse_vertex_values(values);
        options.offset = offset;
        options.surface.spacing = surface_spacing;
        options.surface.probe = probe;
        surface::check_view_options(options);
        surface::MapOrigin origin;
        if (!p.map.source.empty()) origin.header.push_back(p.map.source);
        origin.header.push_back(physics_comment(p.map.physics));
        origin.kernel = p.kernel;
        // A map in memory carries espgrid's physics record, whoever made the values (read from
        // an APBS file it says Coulomb in vacuum): the sum is tried, and the agreement check
        // (view_scene.cpp) falls back to the map's values where they are not that sum.
        origin.espgrid_physics = true;
        ViewResult result;
        {
          py::gil_scoped_release release;
          result = make_view(s.structure.atoms, s.path, s.source, p.map, origin, options, title);
        }
        const surface::ViewScene& scene = result.scene;
        py::dict info("vertices"_a = scene.surface.vertex_count(), "triangles"_a = scene.surface.triangle_count(),
                      "values"_a = scene.method_text, "limit"_a = scene.limit, "units"_a = scene.units,
                      "min"_a = scene.value_min, "max"_a = scene.value_max, "notes"_a = scene.notes,
                      "bytes"_a = result.sizes.total, "seconds"_a = result.seconds);
        return py::make_tuple(py::bytes(result.html), info);
      },
      "map"_a, "structure"_a, "limit"_a = py::none(), "levels"_a = py::none(), "values"_a = "auto", "offset"_a = 1.4,
      "surface_spacing"_a = 0.5, "probe"_a = 0.0, "title"_a = "", "view"_a = "auto");
  m.def(
      "write_page",
      [](const py::object& path_argument, const py::bytes& html) {
        const std::string path = os_string(path_argument);
        const std::string text = html;
        check_output_path(path);
        py::gil_scoped_release release;
        write_text_file_atomically(path, text);
      },
      "path"_a, "html"_a);
  m.def(
      "map_summary_json",
      [](const PyMap& p, const std::string& part) {
        // One part alone where an attribute asks for it: the whole summary scans every value (range).
        const double evaluations = p.map.physics.is_pb() ? 0.0
                                                         : static_cast<double>(p.map.grid.point_count()) *
                                                               static_cast<double>(p.provenance.atoms);
        if (part == "timing") return os_text(timing_json(p.timing, evaluations).dump(0, Malformed::Keep));
        if (part == "model_parameters") return os_text(model_parameters_json(p.map.physics).dump(0, Malformed::Keep));
        if (part == "energy") return os_text((p.energy ? pb_energy_json(*p.energy) : Json()).dump(0, Malformed::Keep));
        const Json whole = map_summary(p.map, p.kernel, p.kernel_why, p.timing, p.provenance, p.outputs, std::nullopt,
                                       p.energy ? &*p.energy : nullptr);
        return os_text(whole.dump(0, Malformed::Keep));  // file names as os.fsdecode gives them
      },
      "map"_a, "part"_a = "",
      "The summary `espgrid map --json` writes, for this map (src/pipeline/map_summary.h); part: \"timing\" or "
      "\"model_parameters\" alone.");
}

}  // namespace

void bind_map(py::module_& m) {
  bind_map_class(m);
  bind_map_making(m);
  bind_map_pages(m);
}

}  // namespace espgrid::python
