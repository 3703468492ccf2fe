// espgrid.Structure and how one is made: read from a file (PDB/mmCIF through pdb2pqr) or from arrays.
#include <algorithm>
#include <cmath>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "python/src/frame_average.h"
#include "src/core/text_format.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/map_pipeline.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

/// Text values, one per atom (names= and friends of structure_from_arrays); UsageError otherwise.
std::vector<std::string> texts_of(const py::handle& values, const std::string& what, std::size_t expected) {
  std::vector<std::string> out;
  if (py::isinstance<py::str>(values)) throw UsageError(what + " must be a sequence with one text an atom");
  for (const py::handle item : py::iter(values)) out.push_back(py::str(item).cast<std::string>());
  if (out.size() != expected)
    throw UsageError(what + " has " + std::to_string(out.size()) + " values for " + std::to_string(expected) +
                     " atoms");
  return out;
}

/// The atoms' labels from Python sequences (any of them None: empty names, residue 1).
std::vector<AtomLabel> labels_of(const py::handle& names, const py::handle& residue_names,
                                 const py::handle& residue_numbers, const py::handle& chains, std::size_t n) {
  if (names.is_none() && residue_names.is_none() && residue_numbers.is_none() && chains.is_none()) return {};
  const auto text = [&](const py::handle& h, const char* what) {
    return h.is_none() ? std::vector<std::string>(n) : texts_of(h, what, n);
  };
  const std::vector<std::string> atom = text(names, "names"), residue = text(residue_names, "residue_names"),
                                 chain = text(chains, "chains");
  std::vector<double> number(n, 1.0);
  if (!residue_numbers.is_none()) number = vector_of(residue_numbers, "residue_numbers", n);
  std::vector<AtomLabel> labels;
  for (std::size_t i = 0; i < n; ++i) {
    if (number[i] != std::floor(number[i]) || std::fabs(number[i]) > 2e9)
      throw UsageError("residue_numbers[" + std::to_string(i) + "] = " + number_text(number[i]) +
                       " is not a whole residue number");
    labels.push_back(AtomLabel::make(atom[i], residue[i], chain[i], static_cast<std::int32_t>(number[i])));
  }
  return labels;
}

PyStructure structure_from_arrays(const py::handle& positions, const py::handle& charges, const py::handle& radii,
                                  const std::string& name, const py::handle& names, const py::handle& residue_names,
                                  const py::handle& residue_numbers, const py::handle& chains) {
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
  s.structure.labels = labels_of(names, residue_names, residue_numbers, chains, n);
  s.source = describe_source(name, s.structure.atoms);
  return s;
}

PyStructure read_structure_file(const py::handle& path_argument, const std::optional<std::string>& format,
                                const std::optional<std::string>& forcefield, std::optional<double> ph,
                                const py::object& keep_pqr_argument, const py::dict& pdb_options) {
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
  // keep_water=True, keep_chain=True, ligand="x.mol2", ligand_charges="gasteiger", pdb2pqr_options="--noopt"
  for (const auto& [key, value] : pdb_options) {
    if (value.is_none()) continue;
    std::string name = py::str(key).cast<std::string>();
    std::replace(name.begin(), name.end(), '_', '-');
    const JobOption* option = find_job_option(name);
    if (option == nullptr)
      throw py::type_error("read_structure() got an unexpected keyword " + py::str(key).cast<std::string>());
    if (option->is_switch) {
      if (!py::isinstance<py::bool_>(value))
        throw py::type_error(py::str(key).cast<std::string>() + "= takes True or False");
      if (value.cast<bool>()) apply(name, OptionValue::on());
    } else if (name == "pdb2pqr-options" && !py::isinstance<py::str>(value)) {
      std::string words;
      for (const py::handle w : py::iter(value)) words += (words.empty() ? "" : " ") + py::str(w).cast<std::string>();
      apply(name, OptionValue::text(words));
    } else {
      apply(name, OptionValue::text(os_string(value)));
    }
  }
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
      s.charging = input.assigned->charging;
      s.report = input.assigned->report();
    }
    s.structure = std::move(input.structure);
    // What `espgrid map` writes in the header, so that the module's files equal the program's.
    s.source = std::move(input.source);
  }
  return s;
}

py::tuple label_tuple(const AtomLabel& l) {
  return py::make_tuple(l.atom_name(), l.residue_name(), l.chain_id(), l.number,
                        l.insertion ? std::string(1, l.insertion) : std::string());
}

AtomLabel label_from(const py::handle& t) {
  const auto f = t.cast<py::tuple>();
  const std::string insertion = f[4].cast<std::string>();
  return AtomLabel::make(f[0].cast<std::string>(), f[1].cast<std::string>(), f[2].cast<std::string>(),
                         f[3].cast<std::int32_t>(), insertion.empty() ? '\0' : insertion[0]);
}

/// Everything a Structure holds, for pickle and copy.deepcopy (__getstate__/__setstate__).
py::dict structure_state(const PyStructure& s) {
  const Atoms& a = s.structure.atoms;
  py::list elements, labels;
  for (const ElementSymbol& e : a.element) elements.append(e.text());
  for (const AtomLabel& l : s.structure.labels) labels.append(label_tuple(l));
  py::dict state("version"_a = ESPGRID_VERSION, "x"_a = column(a.x), "y"_a = column(a.y), "z"_a = column(a.z),
                 "charge"_a = column(a.charge), "radius"_a = column(a.radius), "elements"_a = elements,
                 "labels"_a = labels, "notices"_a = s.structure.notices, "path"_a = s.path, "source"_a = s.source,
                 "charges_from"_a = s.charges_from, "pdb2pqr_command"_a = s.pdb2pqr_command,
                 "pdb2pqr_log"_a = s.pdb2pqr_log, "report"_a = s.report);
  py::list charging;
  for (const ResidueCharging& c : s.charging)
    charging.append(py::make_tuple(static_cast<int>(c.way), c.residues, c.atoms, c.hydrogens_added, c.formal_charge,
                                   c.charge, c.how));
  state["charging"] = charging;
  if (s.account) {
    const Pdb2pqrAccount& acc = *s.account;
    py::list left;
    for (const auto& r : acc.left_out) left.append(py::make_tuple(r.name, label_tuple(r.label), r.left_out, r.heavy));
    state["account"] = py::make_tuple(acc.input_atoms, acc.input_hydrogens, acc.output_atoms, acc.output_hydrogens,
                                      acc.left_out_atoms, left, acc.flipped);
  }
  return state;
}

PyStructure structure_from_state(const py::dict& state) {
  if (state["version"].cast<std::string>() != ESPGRID_VERSION)
    throw UsageError("this Structure was pickled by espgrid " + state["version"].cast<std::string>() + ", not " +
                     ESPGRID_VERSION);
  PyStructure s;
  Atoms& a = s.structure.atoms;
  a.x = state["x"].cast<std::vector<double>>();
  a.y = state["y"].cast<std::vector<double>>();
  a.z = state["z"].cast<std::vector<double>>();
  a.charge = state["charge"].cast<std::vector<double>>();
  a.radius = state["radius"].cast<std::vector<double>>();
  for (const py::handle e : state["elements"]) a.element.push_back(ElementSymbol::from(e.cast<std::string>()));
  for (const py::handle l : state["labels"]) s.structure.labels.push_back(label_from(l));
  s.structure.notices = state["notices"].cast<std::vector<std::string>>();
  s.path = state["path"].cast<std::string>();
  s.source = state["source"].cast<std::string>();
  s.charges_from = state["charges_from"].cast<std::string>();
  s.pdb2pqr_command = state["pdb2pqr_command"].cast<std::string>();
  s.pdb2pqr_log = state["pdb2pqr_log"].cast<std::string>();
  s.report = state["report"].cast<std::vector<std::pair<std::string, std::string>>>();
  for (const py::handle h : state["charging"]) {
    const auto t = h.cast<py::tuple>();
    ResidueCharging c;
    c.way = static_cast<ResidueCharging::Way>(t[0].cast<int>());
    c.residues = t[1].cast<std::string>();
    c.atoms = t[2].cast<std::size_t>();
    c.hydrogens_added = t[3].cast<std::size_t>();
    c.formal_charge = t[4].cast<int>();
    c.charge = t[5].cast<double>();
    c.how = t[6].cast<std::string>();
    s.charging.push_back(c);
  }
  if (state.contains("account")) {
    const auto t = state["account"].cast<py::tuple>();
    Pdb2pqrAccount acc;
    acc.input_atoms = t[0].cast<std::size_t>();
    acc.input_hydrogens = t[1].cast<std::size_t>();
    acc.output_atoms = t[2].cast<std::size_t>();
    acc.output_hydrogens = t[3].cast<std::size_t>();
    acc.left_out_atoms = t[4].cast<std::size_t>();
    for (const py::handle h : t[5]) {
      const auto r = h.cast<py::tuple>();
      acc.left_out.push_back(
          {r[0].cast<std::string>(), label_from(r[1]), r[2].cast<std::size_t>(), r[3].cast<std::size_t>()});
    }
    acc.flipped = t[6].cast<std::vector<std::string>>();
    s.account = acc;
  }
  return s;
}

/// A per-atom column of the labels, or None for a structure without them.
template <typename Field>
py::object label_column(const PyStructure& s, Field field) {
  if (!s.structure.has_labels()) return py::none();
  py::list out;
  for (const AtomLabel& l : s.structure.labels) out.append(field(l));
  return out;
}

/// Structure's arrays, one a column of its atoms.
void bind_structure_atoms(py::class_<PyStructure>& cls) {
  cls.def_property_readonly("positions",
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
      .def_property_readonly("total_charge", [](const PyStructure& s) { return s.structure.atoms.total_charge(); });
}

/// Structure's provenance: where its charges came from, what pdb2pqr said and kept.
void bind_structure_provenance(py::class_<PyStructure>& cls) {
  cls.def_property_readonly("notices",
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
                            "left_out_atoms"_a = a.left_out_atoms, "left_out"_a = left_out, "flipped"_a = a.flipped);
          },
          "PDB/mmCIF input: atoms in the input and in pdb2pqr's PQR, and the input's heavy atoms it left out, by "
          "residue (None for other input).");
}

/// Structure's atom labels (PQR, PDB/mmCIF): a column each, None where the input has none.
void bind_structure_labels(py::class_<PyStructure>& cls) {
  cls.def_property_readonly(
         "names",
         [](const PyStructure& s) { return label_column(s, [](const AtomLabel& l) { return l.atom_name(); }); },
         "Atom names (PQR, PDB/mmCIF: 'CA', 'OD1'), or None for a structure without them (XYZ, arrays without names).")
      .def_property_readonly(
          "residue_names",
          [](const PyStructure& s) { return label_column(s, [](const AtomLabel& l) { return l.residue_name(); }); })
      .def_property_readonly("residue_numbers",
                             [](const PyStructure& s) -> py::object {
                               if (!s.structure.has_labels()) return py::none();
                               py::array_t<std::int32_t> out(static_cast<py::ssize_t>(s.structure.labels.size()));
                               auto w = out.mutable_unchecked<1>();
                               for (std::size_t i = 0; i < s.structure.labels.size(); ++i)
                                 w(static_cast<py::ssize_t>(i)) = s.structure.labels[i].number;
                               return out;
                             })
      .def_property_readonly(
          "chains",
          [](const PyStructure& s) { return label_column(s, [](const AtomLabel& l) { return l.chain_id(); }); })
      .def_property_readonly("insertion_codes",
                             [](const PyStructure& s) {
                               return label_column(s, [](const AtomLabel& l) {
                                 return l.insertion ? std::string(1, l.insertion) : std::string();
                               });
                             })
      .def_property_readonly(
          "charging",
          [](const PyStructure& s) -> py::object {
            if (!s.account) return py::none();
            static constexpr const char* kWays[] = {"openbabel", "ion", "dropped", "left out"};
            py::list out;
            for (const ResidueCharging& c : s.charging)
              out.append(py::dict("residues"_a = c.residues, "how"_a = kWays[static_cast<int>(c.way)],
                                  "atoms"_a = c.atoms, "hydrogens_added"_a = c.hydrogens_added,
                                  "formal_charge"_a = c.formal_charge, "charge"_a = c.charge, "text"_a = c.text()));
            return out;
          },
          "PDB/mmCIF input: how each residue pdb2pqr's templates did not cover was treated (ligands by Open Babel, "
          "ions by formal charge, waters dropped, or left out), in input order; None for other input.")
      .def_property_readonly(
          "report",
          [](const PyStructure& s) -> py::object {
            if (!s.account) return py::none();
            py::list out;
            for (const auto& [tag, text] : s.report) out.append(py::make_tuple(tag, text));
            return out;
          },
          "PDB/mmCIF input: the lines `espgrid map` prints after its charges line, as (tag, text).");
}

}  // namespace

void bind_structure(py::module_& m) {
  py::class_<PyStructure> cls(m, "Structure", "Atoms with charges, as espgrid read them.");
  bind_structure_atoms(cls);
  bind_structure_provenance(cls);
  bind_structure_labels(cls);
  cls.def("__len__", [](const PyStructure& s) { return s.structure.atoms.size(); })
      .def("__copy__", [](const PyStructure& s) { return PyStructure(s); })
      .def(
          "__deepcopy__", [](const PyStructure& s, const py::dict&) { return PyStructure(s); }, "memo"_a)
      .def(py::pickle(&structure_state, &structure_from_state))
      .def("__repr__", [](const PyStructure& s) { return os_text("<espgrid.Structure " + s.source + ">"); });

  m.def("read_structure", &read_structure_file, "path"_a, "format"_a = py::none(), "forcefield"_a = py::none(),
        "ph"_a = py::none(), "keep_pqr"_a = py::none(), "pdb_options"_a = py::dict());
  m.def("structure_from_arrays", &structure_from_arrays, "positions"_a, "charges"_a, "radii"_a = py::none(),
        "name"_a = "positions and charges from Python", "names"_a = py::none(), "residue_names"_a = py::none(),
        "residue_numbers"_a = py::none(), "chains"_a = py::none());
  m.def("describe_source", [](const py::object& what, const PyStructure& s) {
    return os_text(describe_source(os_string(what), s.structure.atoms));
  });
}

}  // namespace espgrid::python
