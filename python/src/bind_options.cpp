// The option table as keywords (espgrid.MapOptions), the grid around positions, computing a map, the kernel registry.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "python/src/frame_average.h"
#include "src/core/text_format.h"
#include "src/registry/kernel_registry.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

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

/// Every model an entry computes, by asking the entry about each PairModel value that has a name
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
    out.kernel = result.kernel_name();
    out.kernel_why = result.kernel_choice();
    out.energy = result.pb_energy;
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

}  // namespace

void bind_options(py::module_& m) {
  py::class_<MapJob>(m, "MapOptions", "Grid, Physics and Compute options of `espgrid map`, parsed and checked.")
      .def_property_readonly("units", [](const MapJob& o) { return unit_name(o.physics.unit); })
      .def_property_readonly("model", [](const MapJob& o) { return model_label(o.physics); })
      .def_property_readonly("explicit_grid", [](const MapJob& o) { return explicit_grid(o.grid); })
      .def_property_readonly(
          "device", [](const MapJob& o) { return o.compute.run.device; },
          "The GPU the job runs on (--device; 0 unless given).");

  m.def(
      "map_options", &job_from_keywords, "options"_a,
      "The Grid/Physics/Compute options of `espgrid map` from a dict of keywords, checked as the program checks them.");
  m.def("map_option_specs", &map_option_specs);
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
      "check_output_paths",
      [](const py::iterable& paths, const py::iterable& inputs) {
        std::vector<std::string> outputs, read;
        for (const py::handle path : paths) outputs.push_back(os_string(path));
        for (const py::handle path : inputs) read.push_back(os_string(path));
        check_output_paths(outputs, read);
      },
      "paths"_a, "inputs"_a = py::tuple(),
      "Raises unless every path is a map format this build writes, in a writable directory, and none is one of "
      "the inputs (by name, through links, or as the same file).");
  m.def("kernels", &kernel_table);
  m.def("cuda_available", [] {
    std::string reason;
    const bool ok = cuda_available(&reason);
    return py::make_tuple(ok, reason);
  });
}

}  // namespace espgrid::python
