// The potential at points: the exact sum (espgrid sample), and a map interpolated there.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "src/core/text_format.h"
#include "src/os/atomic_output_file.h"
#include "src/pipeline/atom_potentials.h"
#include "src/pipeline/point_sampling.h"
#include "src/structure/atom_tables.h"
#include "src/view/view_page.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

/// Ctrl-C and the callback between the atoms' chunks (or the PB map's planes).
class AtomObserver : public MapObserver {
 public:
  explicit AtomObserver(const py::object& progress) : progress_(interruptible(progress)) {}
  void progress(std::size_t done, std::size_t total) override { progress_(done, total); }

 private:
  ProgressFn progress_;
};

std::vector<double> atom_values_of(const PyStructure& s, const py::handle& values) {
  return vector_of(values, "values", s.structure.atoms.size());
}

/// The values at a structure's atoms: each atom's potential, per residue, written as tables.
void bind_atom_values(py::module_& m) {
  m.def(
      "potential_at_atoms",
      [](const PyStructure& s, const MapJob& options, const py::object& progress) {
        AtomPotentials v;
        {
          AtomObserver observer(progress);
          py::gil_scoped_release release;
          v = potential_at_atoms(options, s.structure.atoms, observer);
        }
        py::dict info("method"_a = v.method, "device"_a = v.device, "seconds"_a = v.seconds);
        return py::make_tuple(py::array_t<double>(static_cast<py::ssize_t>(v.values.size()), v.values.data()), info);
      },
      "structure"_a, "options"_a, "progress"_a = py::none(),
      "The potential at every atom from every other charge (src/pipeline/atom_potentials.h).");
  m.def(
      "residue_values",
      [](const PyStructure& s, const py::handle& values) {
        py::list out;
        for (const ResidueValues& r : residue_values(s.structure, atom_values_of(s, values)))
          out.append(py::dict("residue"_a = r.label.residue_name(), "chain"_a = r.label.chain_id(),
                              "number"_a = r.label.number,
                              "insertion"_a = r.label.insertion ? std::string(1, r.label.insertion) : std::string(),
                              "atoms"_a = r.atoms, "first_atom"_a = r.first, "charge"_a = r.charge, "mean"_a = r.mean,
                              "min"_a = r.min, "min_atom"_a = r.min_atom, "max"_a = r.max, "max_atom"_a = r.max_atom));
        return out;
      },
      "structure"_a, "values"_a, "Each residue's mean, lowest and highest value of its atoms.");
  m.def(
      "write_atom_values",
      [](const std::string& path, const PyStructure& s, const py::handle& values, const std::string& column,
         const std::vector<std::string>& remarks, bool residues) {
        const std::vector<double> v = atom_values_of(s, values);
        const AtomTableFormat format = atom_table_format(path);
        if (residues && format != AtomTableFormat::Csv) throw UsageError(path + ": the per-residue table is a .csv");
        check_output_path(path);
        const std::string text = residues                         ? residue_values_csv(residue_values(s.structure, v))
                                 : format == AtomTableFormat::Csv ? atom_values_csv(s.structure, v, column)
                                                                  : atom_values_pdb(s.structure, v, remarks);
        py::gil_scoped_release release;
        write_text_file_atomically(path, text);
      },
      "path"_a, "structure"_a, "values"_a, "column"_a = "potential", "remarks"_a = std::vector<std::string>{},
      "residues"_a = false, "Writes per-atom values as .csv or .pdb (B-factors), or per residue (.csv).");
}

}  // namespace

void bind_points(py::module_& m) {
  bind_atom_values(m);
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
}

}  // namespace espgrid::python
