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
      .def(py::init([](const py::object& origin, const py::object& dims, const py::object& spacing) {
             if (origin.is_none() || dims.is_none() || spacing.is_none())
               throw py::type_error(
                   "a Grid is origin=(x, y, z) Å, dims=(nx, ny, nz) and spacing (Å: one value or three); the grid "
                   "espgrid places around atoms is espgrid.grid_around(atoms, spacing=..., padding=...)");
             // Through the option table: the checks and messages of --origin, --dims and --spacing.
             const MapJob job =
                 job_from_keywords(py::dict("origin"_a = origin, "dims"_a = dims, "spacing"_a = spacing));
             return *explicit_grid(job.grid);
           }),
           "origin"_a = py::none(), "dims"_a = py::none(), "spacing"_a = py::none())
      .def(py::pickle(
          [](const GridSpec& g) { return py::make_tuple(triple(g.origin), triple(g.dims), triple(g.spacing)); },
          [](const py::tuple& t) {
            GridRequest request;
            request.origin = t[0].cast<std::array<double, 3>>();
            request.dims = t[1].cast<std::array<std::int64_t, 3>>();
            request.spacing = t[2].cast<std::array<double, 3>>();
            return *explicit_grid(request);
          }))
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
