// The potential at points: the exact sum (espgrid sample), and a map interpolated there.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "src/core/text_format.h"
#include "src/pipeline/point_sampling.h"

namespace espgrid::python {

using namespace pybind11::literals;

void bind_points(py::module_& m) {
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
