// espgrid.Structure and how one is made: read from a file (PDB/mmCIF through pdb2pqr) or from arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "python/src/frame_average.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/map_pipeline.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

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

PyStructure read_structure_file(const py::handle& path_argument, const std::optional<std::string>& format,
                                const std::optional<std::string>& forcefield, std::optional<double> ph,
                                const py::object& keep_pqr_argument) {
  const std::string path = os_string(path_argument);
  const std::optional<std::string> keep_pqr =
      keep_pqr_argument.is_none() ? std::nullopt : std::optional<std::string>(os_string(keep_pqr_argument));
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

}  // namespace

void bind_structure(py::module_& m) {
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
      .def_property_readonly("notices",
                             [](const PyStructure& s) {
                               py::list notices;
                               for (const std::string& n : s.structure.notices) notices.append(os_text(n));
                               return notices;
                             })
      .def_property_readonly("path", [](const PyStructure& s) { return os_text(s.path); })
      .def_property_readonly("source", [](const PyStructure& s) { return os_text(s.source); })
      .def_property_readonly("charges_from",
                             [](const PyStructure& s) -> py::object {
                               if (s.charges_from.empty()) return py::none();
                               return py::str(s.charges_from);
                             })
      .def_property_readonly("pdb2pqr_command",
                             [](const PyStructure& s) -> py::object {
                               if (s.pdb2pqr_command.empty()) return py::none();
                               return os_text(s.pdb2pqr_command);
                             })
      .def_property_readonly("pdb2pqr_log",
                             [](const PyStructure& s) -> py::object {
                               if (s.charges_from.empty()) return py::none();
                               return os_text(s.pdb2pqr_log);
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
      .def("__repr__", [](const PyStructure& s) { return os_text("<espgrid.Structure " + s.source + ">"); });

  m.def("read_structure", &read_structure_file, "path"_a, "format"_a = py::none(), "forcefield"_a = py::none(),
        "ph"_a = py::none(), "keep_pqr"_a = py::none());
  m.def("structure_from_arrays", &structure_from_arrays, "positions"_a, "charges"_a, "radii"_a = py::none(),
        "name"_a = "positions and charges from Python");
  m.def("describe_source", [](const py::object& what, const PyStructure& s) {
    return os_text(describe_source(os_string(what), s.structure.atoms));
  });
}

}  // namespace espgrid::python
