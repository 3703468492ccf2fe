// espgrid._espgrid: the pybind11 bindings of the library facade (src/pipeline/map_pipeline.h),
// the kernel registry, the readers (PDB2PQR for PDB/mmCIF) and the map formats. The package
// python/espgrid/ wraps them into the documented API (docs/python.md).
//
// Rules kept here:
//   * keywords are the map job's options (src/job/job_options.h) with '-' written '_', passed
//     as typed values (numbers, sequences, text) to the same functions the program's words go
//     through: the same checks, defaults and messages, and options added to the table appear
//     here unchanged; the pipeline (src/pipeline/map_pipeline.h) runs the job as for the program;
//   * the GIL is released while reading, computing and writing; each progress report takes it
//     back briefly to call the Python callback and to notice Ctrl-C (KeyboardInterrupt);
//   * a map's values are a read-only numpy view of the C++ buffer, no copy;
//   * espgrid::InputError becomes espgrid.InputError (a ValueError with .file and .line),
//     UsageError espgrid.UsageError (ValueError), any other espgrid::Error espgrid.Error
//     (RuntimeError): a missing GPU, a failed pdb2pqr, an unwritable file.
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <string>
#include <vector>

#include "python/src/frame_average.h"
#include "src/core/errors.h"
#include "src/core/text_format.h"
#include "src/job/job_options.h"
#include "src/maps/map_formats.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/map_summary.h"
#include "src/pipeline/point_sampling.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/dcd_check.h"
#include "src/structure/pdb2pqr_source.h"
#include "src/view/view.h"

namespace py = pybind11;
using namespace pybind11::literals;

namespace espgrid::python {
namespace {

PyObject* g_error = nullptr;
PyObject* g_usage_error = nullptr;
PyObject* g_input_error = nullptr;

/// A structure as Python sees it: the atoms and where they came from.
struct PyStructure {
  Structure structure;
  std::string path;          ///< the file as given; empty for arrays
  std::string source;        ///< the maps' header line, exactly as `espgrid map` writes it
  std::string charges_from;  ///< PDB/mmCIF: "pdb2pqr 3.5.2, AMBER force field, ..."; else empty
  std::string pdb2pqr_command;
  std::string pdb2pqr_log;                ///< PDB/mmCIF: everything pdb2pqr printed
  std::optional<Pdb2pqrAccount> account;  ///< PDB/mmCIF: atoms in and out, what was left out
};

/// A map and, when computed here, which kernel made it and how long it took.
struct PyMap {
  PotentialMap map;
  std::string kernel;  ///< registry name; empty for a map read from a file or made from values
  std::string kernel_why;
  TimingReport timing;
  MapProvenance provenance;          ///< computed here: the atoms and where they came from (Map.provenance)
  std::vector<std::string> outputs;  ///< the files Map.write wrote, in order (Map.outputs)
};

/// The groups whose options are Python keywords of compute_map, grid_around, map_from_values and
/// average_map (the input and output options are read_structure's and Map.write's arguments).
bool python_keyword_group(OptionGroup group) {
  return group == OptionGroup::Grid || group == OptionGroup::Physics || group == OptionGroup::Compute;
}

/// A keyword's value as the option table takes it: text, a whole number, a number, or a
/// sequence of numbers. Anything else (a boolean, a dict) is a TypeError.
OptionValue option_value(const std::string& key, const py::handle& value) {
  const py::module_ numbers = py::module_::import("numbers");
  const auto is = [&](const char* type) { return py::isinstance(value, numbers.attr(type)); };
  const auto type_error = [&] {
    return py::type_error("cannot use " + py::repr(value).cast<std::string>() + " as the value of " + key +
                          "=: option values are numbers, text or sequences of numbers");
  };
  if (py::isinstance<py::str>(value)) return OptionValue::text(value.cast<std::string>());
  if (py::isinstance<py::bool_>(value) || py::isinstance(value, py::module_::import("numpy").attr("bool_")))
    throw type_error();
  if (is("Integral")) {
    try {
      return OptionValue::whole(value.cast<long long>());
    } catch (const py::cast_error&) {
      throw UsageError("--" + key + " is out of range: " + py::repr(value).cast<std::string>());
    }
  }
  if (is("Real")) return OptionValue::number(value.cast<double>());
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value) ||
      py::isinstance(value, py::module_::import("numpy").attr("ndarray"))) {
    std::vector<double> items;
    bool all_whole = true;
    for (const py::handle item : py::iter(value)) {
      if (py::isinstance<py::bool_>(item)) throw type_error();
      if (py::isinstance(item, numbers.attr("Integral"))) {
        items.push_back(static_cast<double>(item.cast<long long>()));
      } else if (py::isinstance(item, numbers.attr("Real"))) {
        items.push_back(item.cast<double>());
        all_whole = false;
      } else {
        throw type_error();
      }
    }
    return OptionValue::numbers(std::move(items), all_whole);
  }
  throw type_error();
}

/// A map job from Python keywords (None means "not given"), checked as the program checks its
/// words. An unknown keyword is a TypeError listing the keywords there are.
MapJob job_from_keywords(const py::dict& keywords) {
  MapJob job;
  for (const auto& [key, value] : keywords) {
    const std::string name = py::str(key).cast<std::string>();
    if (value.is_none()) continue;
    const JobOption* option = find_job_option(name);
    if (option == nullptr || !python_keyword_group(option->group) || name.find('-') != std::string::npos) {
      std::string names;
      for (const JobOption& o : job_options()) {
        if (!python_keyword_group(o.group)) continue;
        std::string python_name(o.name);
        std::replace(python_name.begin(), python_name.end(), '-', '_');
        names += (names.empty() ? "" : ", ") + python_name;
      }
      throw py::type_error("unknown option '" + name + "'; espgrid's options are: " + names);
    }
    option->apply(job, option_value(std::string(option->name), value));
  }
  finish_job(job, JobUse::Values);
  return job;
}

/// The keyword options, for the trajectory script's argparse: group, long name, help, default
/// (None when there is none).
py::list map_option_specs() {
  py::list specs;
  for (const JobOption& o : job_options()) {
    if (!python_keyword_group(o.group)) continue;
    py::object fallback = py::none();
    if (!o.default_text.empty()) fallback = py::str(o.default_text);
    specs.append(py::dict("group"_a = std::string(group_name(o.group)), "name"_a = std::string(o.name),
                          "help"_a = o.help, "default"_a = fallback));
  }
  return specs;
}

/// A progress callback that may run with the GIL released: it takes the GIL, lets a pending
/// Ctrl-C stop the computation (KeyboardInterrupt), then calls `callback(done, total)` unless
/// it is None. The Python object lives behind a shared_ptr whose deleter takes the GIL, so
/// copies of the std::function made without the GIL never touch a reference count.
ProgressFn interruptible(const py::object& callback) {
  std::shared_ptr<py::object> held(new py::object(callback), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
  return [held](std::size_t done, std::size_t total) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!held->is_none()) (*held)(done, total);
  };
}

/// "(906, 3)" for messages.
std::string shape_text(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t d = 0; d < array.ndim(); ++d) text += (d ? ", " : "") + std::to_string(array.shape(d));
  return text + (array.ndim() == 1 ? ",)" : ")");
}

/// N×3 positions as a C-ordered float64 array; UsageError for any other shape.
py::array_t<double, py::array::c_style | py::array::forcecast> positions_array(const py::handle& positions,
                                                                               const std::string& what) {
  auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(positions);
  if (!array) throw UsageError(what + " must be an array of numbers");
  if (array.ndim() != 2 || array.shape(1) != 3)
    throw UsageError(what + " must have shape (N, 3) (x, y, z in Å), got " + shape_text(array));
  return array;
}

std::vector<double> vector_of(const py::handle& values, const std::string& what, std::size_t expected) {
  auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(values);
  if (!array) throw UsageError(what + " must be an array of numbers");
  if (array.ndim() != 1 || static_cast<std::size_t>(array.shape(0)) != expected)
    throw UsageError(what + " must have shape (" + std::to_string(expected) + ",), one per atom, got " +
                     shape_text(array));
  return std::vector<double>(array.data(), array.data() + expected);
}

PyStructure structure_from_arrays(const py::handle& positions, const py::handle& charges, const py::handle& radii,
                                  const std::string& name) {
  const auto xyz = positions_array(positions, "positions");
  const auto n = static_cast<std::size_t>(xyz.shape(0));
  if (n == 0) throw UsageError("positions hold no atoms");
  check_positions(xyz.data(), n, "positions");
  PyStructure s;
  s.structure.atoms = atoms_of(xyz.data(), n);
  // The PQR reader's checks (atom_value_problem), so that arrays are held to what a file is.
  s.structure.atoms.charge = vector_of(charges, "charges", n);
  check_atom_values(s.structure.atoms.charge, AtomField::Charge, "charges");
  s.structure.atoms.radius = radii.is_none() ? std::vector<double>(n, 0.0) : vector_of(radii, "radii", n);
  check_atom_values(s.structure.atoms.radius, AtomField::Radius, "radii");
  s.structure.atoms.element.assign(n, ElementSymbol{});
  s.source = describe_source(name, s.structure.atoms);
  return s;
}

PyStructure read_structure_file(const std::string& path, const std::optional<std::string>& format,
                                const std::optional<std::string>& forcefield, std::optional<double> ph,
                                const std::optional<std::string>& keep_pqr) {
  // The input options of a map job, checked as the program checks them (keep_pqr never onto the
  // input itself or a link to it).
  MapJob job;
  job.input.path = path;
  if (format) job.input.format = parse_format_name(*format);
  const auto apply = [&job](std::string_view name, const OptionValue& value) {
    find_job_option(name)->apply(job, value);
  };
  if (forcefield) apply("forcefield", OptionValue::text(*forcefield));
  if (ph) apply("ph", OptionValue::number(*ph));
  if (keep_pqr) apply("keep-pqr", OptionValue::text(*keep_pqr));
  finish_job(job, JobUse::Values);
  if (!job.input.keep_pqr.empty()) check_output_path(job.input.keep_pqr);
  if (!job.input.keep_pqr.empty()) check_output_path(AssignedStructure::log_path_for(job.input.keep_pqr));
  PyStructure s;
  s.path = path;
  {
    // Notices stay in Structure.notices; Ctrl-C while pdb2pqr runs ends it and removes its folder.
    class Interruptible : public MapObserver {
     public:
      void waiting() override {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      }
    } observer;
    py::gil_scoped_release release;
    JobInput input = read_job_input(job, observer);
    if (input.assigned) {
      if (!job.input.keep_pqr.empty()) input.assigned->keep(job.input.keep_pqr);
      s.charges_from = input.assigned->describe();
      s.pdb2pqr_command =
          job.input.keep_pqr.empty() ? input.assigned->command : input.assigned->command_for(job.input.keep_pqr);
      s.pdb2pqr_log = input.assigned->log;
      s.account = input.assigned->account;
    }
    s.structure = std::move(input.structure);
    // What `espgrid map` writes in the header, so that the module's files equal the program's.
    s.source = std::move(input.source);
  }
  return s;
}

py::array column(const std::vector<double>& values) { return py::array_t<double>(values.size(), values.data()); }

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

std::string role_text(KernelRole role) {
  switch (role) {
    case KernelRole::Reference:
      return "reference";
    case KernelRole::Default:
      return "default";
    case KernelRole::Alternative:
      return "alternative";
  }
  return "?";
}

std::string reproducibility_text(Reproducibility r) {
  switch (r) {
    case Reproducibility::MatchesReference:
      return "matches-reference";
    case Reproducibility::Deterministic:
      return "deterministic";
    case Reproducibility::Varies:
      return "varies";
  }
  return "?";
}

/// Every model a row computes, by asking the row about each PairModel value that has a name
/// (so models added to the enum appear here without a change).
py::list model_names(const KernelVariant& k) {
  py::list names;
  for (int m = 0; m < kPairModelCount; ++m) {
    const auto model = static_cast<PairModel>(m);
    if (!k.supports(model)) continue;
    const std::string name = model_name(model);
    if (name != "?") names.append(name);
  }
  return names;
}

py::list kernel_table() {
  py::list rows;
  for (const KernelVariant& k : kernel_variants()) {
    std::string why;
    const bool runnable = k.available(&why);
    rows.append(py::dict("name"_a = std::string(k.name), "backend"_a = std::string(backend_name(k.backend)),
                         "role"_a = role_text(k.role),
                         "accuracy"_a = k.accuracy == Accuracy::Exact ? "exact" : "approximate",
                         "error_bound"_a = k.error_bound, "reproducibility"_a = reproducibility_text(k.reproducibility),
                         "models"_a = model_names(k), "flops_per_evaluation"_a = k.flops_per_evaluation,
                         "serial"_a = k.serial, "summary"_a = std::string(k.summary), "runnable"_a = runnable,
                         "why_not"_a = runnable ? py::none() : py::object(py::str(why))));
  }
  return rows;
}

/// The pipeline's reports as Python wants them: planes to the progress callback, with Ctrl-C
/// noticed at each.
class PythonObserver : public MapObserver {
 public:
  explicit PythonObserver(const py::object& progress) : progress_(interruptible(progress)) {}
  void progress(std::size_t done, std::size_t total) override { progress_(done, total); }

 private:
  ProgressFn progress_;
};

PyMap compute(const PyStructure& s, const MapJob& options, const py::object& progress) {
  MapJob job = options;
  job.input.atoms = std::make_shared<const Atoms>(s.structure.atoms);
  job.input.description = s.source;
  PyMap out;
  {
    PythonObserver observer(progress);
    py::gil_scoped_release release;
    MapResult result = run_map_job(job, observer);
    out.map = std::move(result.map);
    out.timing = result.timing;
    out.kernel = std::string(result.kernel.kernel->name);
    out.kernel_why = result.kernel.why;
  }
  // What the summary records of the input (src/pipeline/map_summary.h), as `espgrid map --json`.
  out.provenance.input = s.path;
  out.provenance.atoms = s.structure.atoms.size();
  out.provenance.total_charge = s.structure.atoms.total_charge();
  out.provenance.charges_from = s.charges_from;
  out.provenance.pdb2pqr_command = s.pdb2pqr_command;
  out.provenance.created = utc_timestamp();
  return out;
}

/// points as an (N, 3) array of finite coordinates within ±1e6 Å, flattened; UsageError naming
/// the first bad one.
std::vector<double> points_of(const py::handle& points) {
  auto xyz = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(points);
  if (!xyz) throw UsageError("points must be an array of numbers");
  if (xyz.ndim() == 1 && xyz.shape(0) == 3) xyz = xyz.reshape({py::ssize_t{1}, py::ssize_t{3}});  // one point
  if (xyz.ndim() != 2 || xyz.shape(1) != 3)
    throw UsageError("points must have shape (N, 3) (x, y, z in Å), got " + shape_text(xyz));
  const auto n = static_cast<std::size_t>(xyz.shape(0));
  static const char* const kAxis[] = {"x", "y", "z"};
  for (std::size_t i = 0; i < 3 * n; ++i) {
    const double c = xyz.data()[i];
    if (!std::isfinite(c) || std::fabs(c) > kMaxCoordinate)
      throw UsageError("points[" + std::to_string(i / 3) + ", " + std::to_string(i % 3) + "] (" + kAxis[i % 3] +
                       " of point " + std::to_string(i / 3) + ") is " + number_text(c) +
                       ": points must be finite numbers of Å within ±1e6");
  }
  return std::vector<double>(xyz.data(), xyz.data() + 3 * n);
}

/// "(x, y, z)" of point i, for messages.
std::string point_text(const std::vector<double>& points, std::size_t i) {
  return "(" + number_text(points[3 * i]) + ", " + number_text(points[3 * i + 1]) + ", " +
         number_text(points[3 * i + 2]) + ")";
}

PyMap map_from_values(const py::handle& values, const GridSpec& grid, const PhysicsOptions& physics,
                      const std::string& source) {
  auto array = py::array_t<float, py::array::f_style | py::array::forcecast>::ensure(values);
  if (!array) throw UsageError("values must be an array of numbers");
  const auto& d = grid.dims;
  if (array.ndim() != 3 || array.shape(0) != d[0] || array.shape(1) != d[1] || array.shape(2) != d[2])
    throw UsageError("values must have the grid's shape (" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
                     std::to_string(d[2]) + "), got " + shape_text(array));
  PyMap m;
  m.map.grid = grid;
  m.map.physics = physics;
  m.map.source = source;
  m.map.values.assign(array.data(), array.data() + grid.point_count());  // Fortran order = x fastest
  return m;
}

PyMap read_map_file(const std::string& path, const std::optional<std::string>& units) {
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
  } else if (!unit_known) {
    throw UsageError(path + " does not say its unit; name it with units='kT/e', 'kcal/mol/e' or 'V'");
  }
  return m;
}

py::tuple triple(const std::array<double, 3>& a) { return py::make_tuple(a[0], a[1], a[2]); }
py::tuple triple(const std::array<std::int64_t, 3>& a) { return py::make_tuple(a[0], a[1], a[2]); }

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
                     ", model=" + r(py::str(model_name(m.physics.model))) +
                     ", dielectric=" + r(py::float_(m.physics.dielectric));
  if (m.physics.unit == PotentialUnit::KTPerE) text += ", temperature=" + r(py::float_(m.physics.temperature));
  if (finite) text += ", range=" + r(py::make_tuple(static_cast<double>(lo), static_cast<double>(hi)));
  if (finite != m.values.size()) text += ", not_finite=" + std::to_string(m.values.size() - finite);
  if (!p.kernel.empty()) text += ", kernel=" + r(py::str(p.kernel));
  if (!m.source.empty()) text += ", source=" + r(py::str(m.source));
  return text + ")";
}

void raise(PyObject* type, const std::string& message) {
  // PyErr_SetString would drop non-ASCII text ("Å") into mojibake; pass a str.
  PyErr_SetObject(type, py::str(message).ptr());
}

}  // namespace
}  // namespace espgrid::python

PYBIND11_MODULE(_espgrid, m) {
  using namespace espgrid;
  using namespace espgrid::python;
  m.doc() = "espgrid's C++ core (use the espgrid package; docs/python.md)";
  m.attr("__version__") = ESPGRID_VERSION;

  g_error = PyErr_NewExceptionWithDoc("espgrid.Error",
                                      "espgrid failed: no GPU, pdb2pqr failed, a file could not be written...",
                                      PyExc_RuntimeError, nullptr);
  g_usage_error = PyErr_NewExceptionWithDoc("espgrid.UsageError", "an impossible option value or request",
                                            PyExc_ValueError, nullptr);
  g_input_error = PyErr_NewExceptionWithDoc(
      "espgrid.InputError", "a defect in an input file; .file and .line say where", PyExc_ValueError, nullptr);
  m.attr("Error") = py::handle(g_error);
  m.attr("UsageError") = py::handle(g_usage_error);
  m.attr("InputError") = py::handle(g_input_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object error = py::reinterpret_borrow<py::object>(g_input_error)(py::str(e.what()));
      error.attr("file") = e.file();
      error.attr("line") = e.line();
      PyErr_SetObject(g_input_error, error.ptr());
    } catch (const UsageError& e) {
      raise(g_usage_error, e.what());
    } catch (const Error& e) {
      raise(g_error, e.what());
    }
  });

  py::class_<GridSpec>(m, "Grid", "A regular grid: dims (points along x, y, z), origin (Å), spacing (Å).")
      .def(py::init([](std::array<double, 3> origin, std::array<std::int64_t, 3> dims, std::array<double, 3> spacing) {
             GridRequest request;
             request.origin = origin;
             request.dims = dims;
             request.spacing = spacing;
             return *explicit_grid(request);  // checks every value
           }),
           "origin"_a, "dims"_a, "spacing"_a)
      .def_property_readonly("origin", [](const GridSpec& g) { return triple(g.origin); })
      .def_property_readonly("dims", [](const GridSpec& g) { return triple(g.dims); })
      .def_property_readonly("shape", [](const GridSpec& g) { return triple(g.dims); })
      .def_property_readonly("spacing", [](const GridSpec& g) { return triple(g.spacing); })
      .def_property_readonly("point_count", &GridSpec::point_count)
      .def(
          "coordinates",
          [](const GridSpec& g, int axis) {
            if (axis < 0 || axis > 2) throw UsageError("axis must be 0 (x), 1 (y) or 2 (z)");
            std::vector<double> c(static_cast<std::size_t>(g.dims[axis]));
            for (std::size_t i = 0; i < c.size(); ++i) c[i] = g.position(axis, static_cast<std::int64_t>(i));
            return column(c);
          },
          "axis"_a, "Positions of the grid points along one axis, Å (0 = x, 1 = y, 2 = z).")
      .def("__eq__",
           [](const GridSpec& a, const GridSpec& b) {
             return a.dims == b.dims && a.origin == b.origin && a.spacing == b.spacing;
           })
      .def("__repr__", [](const GridSpec& g) {
        return "Grid(origin=" + py::repr(triple(g.origin)).cast<std::string>() +
               ", dims=" + py::repr(triple(g.dims)).cast<std::string>() +
               ", spacing=" + py::repr(triple(g.spacing)).cast<std::string>() + ")";
      });

  py::class_<PyStructure>(m, "Structure", "Atoms with charges, as espgrid read them.")
      .def_property_readonly("positions",
                             [](const PyStructure& s) {
                               const Atoms& a = s.structure.atoms;
                               py::array_t<double> xyz({static_cast<py::ssize_t>(a.size()), py::ssize_t{3}});
                               auto w = xyz.mutable_unchecked<2>();
                               for (std::size_t i = 0; i < a.size(); ++i) {
                                 const auto r = static_cast<py::ssize_t>(i);
                                 w(r, 0) = a.x[i];
                                 w(r, 1) = a.y[i];
                                 w(r, 2) = a.z[i];
                               }
                               return xyz;
                             })
      .def_property_readonly("charges", [](const PyStructure& s) { return column(s.structure.atoms.charge); })
      .def_property_readonly("radii", [](const PyStructure& s) { return column(s.structure.atoms.radius); })
      .def_property_readonly("elements",
                             [](const PyStructure& s) {
                               std::vector<std::string> e;
                               for (const auto& symbol : s.structure.atoms.element) e.push_back(symbol.text());
                               return e;
                             })
      .def_property_readonly("total_charge", [](const PyStructure& s) { return s.structure.atoms.total_charge(); })
      .def_property_readonly("notices", [](const PyStructure& s) { return s.structure.notices; })
      .def_readonly("path", &PyStructure::path)
      .def_readonly("source", &PyStructure::source)
      .def_property_readonly("charges_from",
                             [](const PyStructure& s) -> py::object {
                               if (s.charges_from.empty()) return py::none();
                               return py::str(s.charges_from);
                             })
      .def_property_readonly("pdb2pqr_command",
                             [](const PyStructure& s) -> py::object {
                               if (s.pdb2pqr_command.empty()) return py::none();
                               return py::str(s.pdb2pqr_command);
                             })
      .def_property_readonly("pdb2pqr_log",
                             [](const PyStructure& s) -> py::object {
                               if (s.charges_from.empty()) return py::none();
                               return py::str(s.pdb2pqr_log);
                             })
      .def_property_readonly(
          "pdb2pqr_atoms",
          [](const PyStructure& s) -> py::object {
            if (!s.account) return py::none();
            const Pdb2pqrAccount& a = *s.account;
            py::list left_out;
            for (const auto& r : a.left_out)
              left_out.append(py::dict("residue"_a = r.name, "left_out"_a = r.left_out, "heavy_atoms"_a = r.heavy));
            return py::dict("input_atoms"_a = a.input_atoms, "input_hydrogens"_a = a.input_hydrogens,
                            "output_atoms"_a = a.output_atoms, "output_hydrogens"_a = a.output_hydrogens,
                            "left_out_atoms"_a = a.left_out_atoms, "left_out"_a = left_out);
          },
          "PDB/mmCIF input: atoms in the input and in pdb2pqr's PQR, and the input's heavy atoms it left out, by "
          "residue (None for other input).")
      .def("__len__", [](const PyStructure& s) { return s.structure.atoms.size(); })
      .def("__repr__", [](const PyStructure& s) { return "<espgrid.Structure " + s.source + ">"; });

  py::class_<MapJob>(m, "MapOptions", "Grid, Physics and Compute options of `espgrid map`, parsed and checked.")
      .def_property_readonly("units", [](const MapJob& o) { return unit_name(o.physics.unit); })
      .def_property_readonly("model", [](const MapJob& o) { return model_label(o.physics); })
      .def_property_readonly("explicit_grid", [](const MapJob& o) { return explicit_grid(o.grid); });

  py::class_<PyMap>(m, "Map", "A potential map: values on a grid, with its unit, medium and model.")
      .def_property_readonly("values", &values_view,
                             "Read-only (nx, ny, nz) view, no copy: values[i, j, k] is the potential at "
                             "origin + (i*hx, j*hy, k*hz), in the map's units. Memory is x fastest (Fortran order).")
      .def_property_readonly("grid", [](const PyMap& p) { return p.map.grid; })
      .def_property_readonly("origin", [](const PyMap& p) { return triple(p.map.grid.origin); })
      .def_property_readonly("spacing", [](const PyMap& p) { return triple(p.map.grid.spacing); })
      .def_property_readonly("shape", [](const PyMap& p) { return triple(p.map.grid.dims); })
      .def_property_readonly("units", [](const PyMap& p) { return unit_name(p.map.physics.unit); })
      .def_property_readonly("model", [](const PyMap& p) { return model_label(p.map.physics); })
      .def_property_readonly("dielectric", [](const PyMap& p) { return p.map.physics.dielectric; })
      .def_property_readonly("temperature", [](const PyMap& p) { return p.map.physics.temperature; })
      .def_property_readonly(
          "physics", [](const PyMap& p) { return physics_comment(p.map.physics); },
          "The physics line every output file records, e.g. 'Potential in kT/e (T = 298.15 K), "
          "dielectric 1'.")
      .def_property_readonly("source", [](const PyMap& p) { return p.map.source; })
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
      .def("__repr__", &map_repr)
      .def(
          "write",
          [](PyMap& p, const py::args& args) {
            // write("a.dx", "b.vti") or write(["a.dx", "b.vti"]); paths may be os.PathLike.
            py::list items =
                args.size() == 1 && (py::isinstance<py::list>(args[0]) || py::isinstance<py::tuple>(args[0]))
                    ? py::list(args[0])
                    : py::list(args);
            std::vector<std::string> paths;
            const py::object fspath = py::module_::import("os").attr("fspath");
            for (const py::handle& item : items) paths.push_back(fspath(item).cast<std::string>());
            if (paths.empty()) throw UsageError("no output given: write('map.dx') and/or write('map.vti')");
            check_output_paths(paths);
            py::gil_scoped_release release;
            write_map_files(p.map, paths, &p.timing, [&p](const std::string& path) { p.outputs.push_back(path); });
          },
          "Writes the map to every path (format from the extension, as `espgrid map -o`), each atomically.");

  py::class_<FrameAverage>(m, "FrameAverage", "Running mean (and standard deviation) of per-frame maps.")
      .def(py::init([](const MapJob& o, const GridSpec& grid, const py::handle& charges, bool with_deviation,
                       const std::string& source) {
             const auto count = py::len(charges);
             std::vector<double> q = vector_of(charges, "charges", count);
             check_atom_values(q, AtomField::Charge, "charges");
             return FrameAverage(o, grid, std::move(q), with_deviation, source);
           }),
           "options"_a, "grid"_a, "charges"_a, "with_deviation"_a, "source"_a)
      .def(
          "add_frame",
          [](FrameAverage& f, const py::handle& positions, const py::object& progress) {
            const auto xyz = positions_array(positions, "positions");
            if (static_cast<std::size_t>(xyz.shape(0)) != f.atom_count())
              throw UsageError("positions hold " + std::to_string(xyz.shape(0)) + " atoms, the charges " +
                               std::to_string(f.atom_count()));
            ProgressFn report = interruptible(progress);
            py::gil_scoped_release release;
            f.add_frame(xyz.data(), report);
          },
          "positions"_a, "progress"_a = py::none())
      .def_property_readonly("frames", &FrameAverage::frames)
      .def_property_readonly("kernel", [](const FrameAverage& f) { return std::string(f.kernel().kernel->name); })
      .def_property_readonly("kernel_choice", [](const FrameAverage& f) { return f.kernel().why; })
      .def_property_readonly("kernel_seconds", &FrameAverage::kernel_seconds)
      .def_property_readonly("transfer_seconds", &FrameAverage::transfer_seconds)
      .def("mean",
           [](const FrameAverage& f) {
             PyMap p;
             p.map = f.mean();
             p.kernel = std::string(f.kernel().kernel->name);
             p.kernel_why = f.kernel().why;
             p.timing.kernel_seconds = f.kernel_seconds();
             p.timing.transfer_seconds = f.transfer_seconds();
             return p;
           })
      .def("deviation", [](const FrameAverage& f) {
        PyMap p;
        p.map = f.deviation();
        p.kernel = std::string(f.kernel().kernel->name);
        p.kernel_why = f.kernel().why;
        return p;
      });

  m.def(
      "map_options", &job_from_keywords, "options"_a,
      "The Grid/Physics/Compute options of `espgrid map` from a dict of keywords, checked as the program checks them.");
  m.def("map_option_specs", &map_option_specs);
  m.def("read_structure", &read_structure_file, "path"_a, "format"_a = py::none(), "forcefield"_a = py::none(),
        "ph"_a = py::none(), "keep_pqr"_a = py::none());
  m.def("structure_from_arrays", &structure_from_arrays, "positions"_a, "charges"_a, "radii"_a = py::none(),
        "name"_a = "positions and charges from Python");
  m.def(
      "grid_around",
      [](const MapJob& o, const py::handle& positions) {
        const auto xyz = positions_array(positions, "positions");
        const auto n = static_cast<std::size_t>(xyz.shape(0));
        if (n == 0) throw UsageError("positions hold no atoms");
        check_positions(xyz.data(), n, "positions");
        Atoms atoms = atoms_of(xyz.data(), n);
        atoms.charge.assign(n, 0.0);
        atoms.radius.assign(n, 0.0);
        atoms.element.assign(n, ElementSymbol{});
        return make_grid(o.grid, atoms);
      },
      "options"_a, "positions"_a, "The grid `espgrid map` would place around these positions with these options.");
  m.def("compute", &compute, "structure"_a, "options"_a, "progress"_a = py::none());
  m.def(
      "map_from_values",
      [](const py::handle& values, const GridSpec& grid, const py::object& like, const MapJob* options,
         const std::string& source) {
        PhysicsOptions physics = options ? options->physics : PhysicsOptions{};
        if (!like.is_none()) {
          // A wrong type is a TypeError, as Python's own calls raise, not pybind11's cast error.
          if (!py::isinstance<PyMap>(like))
            throw py::type_error("like= takes an espgrid.Map (whose physics the new map gets), got " +
                                 py::repr(py::type::of(like)).cast<std::string>());
          physics = like.cast<const PyMap&>().map.physics;
        }
        return map_from_values(values, grid, physics, source);
      },
      "values"_a, "grid"_a, "like"_a = py::none(), "options"_a = nullptr, "source"_a = "");
  m.def("read_map", &read_map_file, "path"_a, "units"_a = py::none());
  m.def(
      "check_dcd",
      [](const std::string& path) {
        const DcdSummary s = [&] {
          py::gil_scoped_release release;
          return check_dcd(path);
        }();
        return py::dict("atoms"_a = s.atoms, "frames"_a = s.frames, "header_frames"_a = s.header_frames);
      },
      "path"_a,
      "Checks a DCD's records against its header and size (structure/dcd_check.h); InputError when it is cut short.");
  m.def(
      "check_output_paths", [](const std::vector<std::string>& paths) { check_output_paths(paths); }, "paths"_a,
      "Raises unless every path is a map format this build writes, in a writable directory.");
  m.def("kernels", &kernel_table);
  m.def("cuda_available", [] {
    std::string reason;
    const bool ok = cuda_available(&reason);
    return py::make_tuple(ok, reason);
  });
  m.def("describe_source",
        [](const std::string& what, const PyStructure& s) { return describe_source(what, s.structure.atoms); });

  // Map.view (python/espgrid/view.py, issue 26): the `espgrid view` page of a map in memory.
  m.def(
      "view_page",
      [](const PyMap& p, const PyStructure& s, const py::object& limit, const py::object& levels,
         const std::string& values, double offset, double surface_spacing, double probe, const std::string& title,
         const std::string& view) {
        surface::ViewOptions options;
        options.view = view;
        if (py::isinstance<py::str>(limit)) {
          if (limit.cast<std::string>() != "auto") throw UsageError("limit must be a positive number or 'auto'");
          options.limit_auto = true;
        } else if (!limit.is_none()) {
          options.limit = limit.cast<double>();
        }
        if (!levels.is_none()) options.levels = levels.cast<std::vector<double>>();
        options.values = surface::parse_vertex_values(values);
        options.offset = offset;
        options.surface.spacing = surface_spacing;
        options.surface.probe = probe;
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
      [](const std::string& path, const py::bytes& html) {
        const std::string text = html;
        check_output_path(path);
        py::gil_scoped_release release;
        write_text_file_atomically(path, text);
      },
      "path"_a, "html"_a);

  // ---- issue 25: the potential at points, and a map's summary ------------------------------------
  m.def(
      "potential_at",
      [](const py::handle& points, const PyStructure& s, const MapJob& options, const py::object& progress) {
        const std::vector<double> xyz = points_of(points);
        ProgressFn report = interruptible(progress);
        PointValues v;
        {
          py::gil_scoped_release release;
          v = sample_points(options, s.structure.atoms, xyz, report);
        }
        py::dict info("method"_a = v.method, "device"_a = v.device, "backend_choice"_a = v.why, "seconds"_a = v.seconds,
                      "kernel_seconds"_a = v.kernel_seconds);
        return py::make_tuple(py::array_t<float>(static_cast<py::ssize_t>(v.values.size()), v.values.data()), info);
      },
      "points"_a, "structure"_a, "options"_a, "progress"_a = py::none(),
      "The exact potential at each point (src/pipeline/point_sampling.h); (values, how they were computed).");
  m.def(
      "sample_map",
      [](const PyMap& p, const py::handle& points) {
        const std::vector<double> xyz = points_of(points);
        std::vector<std::size_t> outside, not_finite;
        PointValues v;
        {
          py::gil_scoped_release release;
          v = interpolate_points(p.map, xyz, outside, not_finite);
        }
        if (!outside.empty())
          throw UsageError("points[" + std::to_string(outside.front()) + "] " + point_text(xyz, outside.front()) +
                           " lies outside the map " + box_text(p.map.grid) +
                           (outside.size() > 1 ? " (" + with_commas(outside.size()) + " of the " +
                                                     with_commas(xyz.size() / 3) + " points do)"
                                               : std::string()));
        if (!not_finite.empty())
          throw UsageError("the map is not finite around points[" + std::to_string(not_finite.front()) + "] " +
                           point_text(xyz, not_finite.front()));
        return py::array_t<float>(static_cast<py::ssize_t>(v.values.size()), v.values.data());
      },
      "map"_a, "points"_a, "The map's values at the points, interpolated trilinearly (espgrid view's rule).");
  m.def(
      "map_summary_json",
      [](const PyMap& p, const std::string& part) {
        // One part alone where an attribute asks for it: the whole summary scans every value (range).
        const double evaluations = p.map.physics.poisson_boltzmann ? 0.0
                                                                   : static_cast<double>(p.map.grid.point_count()) *
                                                                         static_cast<double>(p.provenance.atoms);
        if (part == "timing") return timing_json(p.timing, evaluations).dump(0);
        if (part == "model_parameters") return model_parameters_json(p.map.physics).dump(0);
        const Json whole = map_summary(p.map, p.kernel, p.kernel_why, p.timing, p.provenance, p.outputs);
        return whole.dump(0);
      },
      "map"_a, "part"_a = "",
      "The summary `espgrid map --json` writes, for this map (src/pipeline/map_summary.h); part: \"timing\" or "
      "\"model_parameters\" alone.");
}
