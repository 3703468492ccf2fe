#include "python/src/binding_support.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "src/core/text_format.h"

namespace espgrid::python {

using namespace pybind11::literals;

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
    if (option->is_switch) {  // a switch (solvation_energy=True): True turns it on, False leaves it off
      if (!py::isinstance<py::bool_>(value))
        throw py::type_error(name + "= is a switch: give True or False, not " + py::repr(value).cast<std::string>());
      if (value.cast<bool>()) option->apply(job, OptionValue::on());
      continue;
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

std::string os_string(const py::handle& value) {
  const py::object bytes = py::module_::import("os").attr("fsencode")(value);  // TypeError for other types
  return bytes.cast<std::string>();
}

py::str os_text(const std::string& text) {
  PyObject* decoded = PyUnicode_DecodeFSDefaultAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

void refuse_complex(const py::handle& value, const std::string& what) {
  if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value)) return;
  const py::object array = py::module_::import("numpy").attr("asarray")(value);
  if (array.attr("dtype").attr("kind").cast<std::string>() != "c") return;
  throw UsageError(what + " hold complex numbers (dtype " + py::str(array.attr("dtype")).cast<std::string>() +
                   "): espgrid takes real numbers, and a cast would drop the imaginary parts; pass .real if that "
                   "is what is meant");
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
  refuse_complex(positions, what);
  auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(positions);
  if (!array) throw UsageError(what + " must be an array of numbers");
  if (array.ndim() != 2 || array.shape(1) != 3)
    throw UsageError(what + " must have shape (N, 3) (x, y, z in Å), got " + shape_text(array));
  return array;
}

std::vector<double> vector_of(const py::handle& values, const std::string& what, std::size_t expected) {
  refuse_complex(values, what);
  auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(values);
  if (!array) throw UsageError(what + " must be an array of numbers");
  if (array.ndim() != 1 || static_cast<std::size_t>(array.shape(0)) != expected)
    throw UsageError(what + " must have shape (" + std::to_string(expected) + ",), one per atom, got " +
                     shape_text(array));
  return std::vector<double>(array.data(), array.data() + expected);
}

/// points as an (N, 3) array of finite coordinates within ±1e6 Å, flattened; UsageError naming
/// the first bad one.
std::vector<double> points_of(const py::handle& points) {
  refuse_complex(points, "points");
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

py::array column(const std::vector<double>& values) { return py::array_t<double>(values.size(), values.data()); }
py::tuple triple(const std::array<double, 3>& a) { return py::make_tuple(a[0], a[1], a[2]); }
py::tuple triple(const std::array<std::int64_t, 3>& a) { return py::make_tuple(a[0], a[1], a[2]); }

}  // namespace espgrid::python
