// espgrid.FrameAverage (the running mean and deviation of a trajectory's maps) and the DCD check.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "python/src/frame_average.h"
#include "src/structure/dcd_check.h"

namespace espgrid::python {

using namespace pybind11::literals;

void bind_trajectory(py::module_& m) {
  py::class_<FrameAverage>(m, "FrameAverage", "Running mean (and standard deviation) of per-frame maps.")
      .def(py::init([](const MapJob& o, const GridSpec& grid, const py::handle& charges, bool with_deviation,
                       const py::object& source) {
             const auto count = py::len(charges);
             std::vector<double> q = vector_of(charges, "charges", count);
             check_atom_values(q, AtomField::Charge, "charges");
             return FrameAverage(o, grid, std::move(q), with_deviation, os_string(source));
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
      "check_dcd",
      [](const py::object& path_argument) {
        const std::string path = os_string(path_argument);
        const DcdSummary s = [&] {
          py::gil_scoped_release release;
          return check_dcd(path);
        }();
        return py::dict("atoms"_a = s.atoms, "frames"_a = s.frames, "header_frames"_a = s.header_frames);
      },
      "path"_a,
      "Checks a DCD's records against its header and size (structure/dcd_check.h); InputError when it is cut short.");
}

}  // namespace espgrid::python
