// APBS input files from Python (espgrid.apbs.run; src/apbs/apbs_run.h): the run as plain Python
// values (dicts, lists) and each written map's values as a numpy array, built from the same
// ApbsResult `espgrid apbs` prints and writes as JSON. The GIL is released while the input runs;
// Ctrl-C is heard between calculations.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "src/apbs/apbs_report.h"
#include "src/apbs/apbs_run.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

/// Hears Ctrl-C after each calculation (the solves themselves run without the GIL).
class InterruptibleRun : public apbs::ApbsObserver {
 public:
  void calculation_done(const apbs::ApbsInput& input, const apbs::CalculationResult& result) override {
    text_ += apbs::calculation_text(input, result);
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  void notice(const std::string& text) override { notices_ += text + "\n"; }
  const std::string& text() const noexcept { return text_; }

 private:
  std::string text_;
  std::string notices_;
};

py::object optional_number(const std::optional<double>& v) { return v ? py::object(py::float_(*v)) : py::none(); }

py::dict calculation_dict(const apbs::ApbsInput& input, const apbs::CalculationResult& r) {
  const apbs::Calculation& c = r.calculation;
  py::list files;
  for (const auto& f : r.files) files.append(f.second);
  return py::dict(
      "number"_a = r.number, "elec"_a = c.elec + 1, "name"_a = input.elecs[c.elec].name, "level"_a = c.level,
      "levels"_a = c.levels, "dime"_a = py::make_tuple(c.grid.dime[0], c.grid.dime[1], c.grid.dime[2]),
      "spacing"_a = triple(c.grid.spacing), "length"_a = triple(c.grid.length), "center"_a = triple(c.grid.center),
      "bcfl"_a = std::string(apbs::boundary_name(c.boundary)), "energy"_a = optional_number(r.energy),
      "components"_a = r.components ? py::object(py::dict("fixed_charge"_a = r.components->fixed_charge,
                                                          "mobile_charge"_a = r.components->mobile_charge,
                                                          "dielectric"_a = r.components->dielectric))
                                    : py::object(py::none()),
      "files"_a = files, "solver"_a = r.solver, "seconds"_a = r.seconds);
}

py::dict map_dict(const apbs::ApbsMap& m, bool with_values) {
  py::object values = py::none();
  if (with_values) {
    // (nx, ny, nz), x fastest in memory: the layout of espgrid.Map.values.
    const std::vector<py::ssize_t> shape = {m.grid.dims[0], m.grid.dims[1], m.grid.dims[2]};
    const std::vector<py::ssize_t> strides = {
        sizeof(float), static_cast<py::ssize_t>(sizeof(float) * m.grid.dims[0]),
        static_cast<py::ssize_t>(sizeof(float) * m.grid.dims[0] * m.grid.dims[1])};
    values = py::array_t<float>(shape, strides, m.values.data());  // copies: the result goes away
  }
  return py::dict("path"_a = m.path, "type"_a = std::string(apbs::write_type_name(m.type)), "elec"_a = m.elec + 1,
                  "origin"_a = triple(m.grid.origin), "spacing"_a = triple(m.grid.spacing),
                  "shape"_a = triple(m.grid.dims), "values"_a = values);
}

}  // namespace

void bind_apbs(py::module_& m) {
  m.def(
      "apbs_run",
      [](const std::string& path, const std::string& directory, const std::string& backend, int threads, int device,
         bool write, bool maps, bool dry_run) {
        apbs::ApbsRunOptions options;
        options.directory = directory;
        options.solver.backend = apbs::parse_solver_backend(backend, "backend");
        options.solver.threads = threads;
        options.solver.device = device;
        options.write_files = write && !dry_run;
        options.keep_maps = maps;
        options.dry_run = dry_run;
        if (threads < 0) throw UsageError("threads must be 0 (all cores) or more");
        InterruptibleRun observer;
        apbs::ApbsResult r;
        {
          py::gil_scoped_release release;
          r = apbs::run_apbs(path, options, &observer);
        }
        py::list calculations, elecs, prints, written, notices;
        for (const apbs::CalculationResult& c : r.calculations) calculations.append(calculation_dict(r.input, c));
        for (std::size_t e = 0; e < r.elecs.size(); ++e)
          elecs.append(py::dict(
              "elec"_a = e + 1, "name"_a = r.elecs[e].name, "energy"_a = optional_number(r.elecs[e].energy),
              "atom_energies"_a = r.elecs[e].atom_energies.empty() ? py::object(py::none())
                                                                   : py::object(column(r.elecs[e].atom_energies)),
              "calculation"_a = r.elecs[e].calculation));
        for (const apbs::PrintResult& p : r.prints)
          prints.append(py::dict("expression"_a = p.expression, "energy"_a = p.energy));
        for (const apbs::ApbsMap& a : r.maps) written.append(map_dict(a, maps));
        for (const std::string& n : r.notices) notices.append(n);
        return py::dict("input"_a = r.input.file, "calculations"_a = calculations, "elecs"_a = elecs,
                        "prints"_a = prints, "maps"_a = written, "notices"_a = notices,
                        "text"_a = observer.text() + (dry_run ? std::string() : apbs::print_text(r)),
                        "json"_a = apbs::result_json(r).dump(), "seconds"_a = r.seconds);
      },
      "path"_a, "directory"_a, "backend"_a, "threads"_a, "device"_a, "write"_a, "maps"_a, "dry_run"_a,
      "Runs an APBS input file (src/apbs/apbs_run.h); use espgrid.apbs.run.");
}

}  // namespace espgrid::python
