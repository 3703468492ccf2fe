// espgrid.Grid: a regular grid, checked as `espgrid map` checks an explicit one.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "src/core/grid.h"

namespace espgrid::python {

using namespace pybind11::literals;

void bind_grid(py::module_& m) {
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
}

}  // namespace espgrid::python
