// espgrid's three exception types and the translation of the library's errors into them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "src/core/errors.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

PyObject* g_error = nullptr;
PyObject* g_usage_error = nullptr;
PyObject* g_input_error = nullptr;

void raise(PyObject* type, const std::string& message) {
  // PyErr_SetString would drop non-ASCII text ("Å") into mojibake; pass a str (a file name that is
  // not UTF-8 as os.fsdecode gives it).
  PyErr_SetObject(type, os_text(message).ptr());
}

}  // namespace

void bind_errors(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc("espgrid.Error",
                                      "espgrid failed: no GPU, pdb2pqr failed, a file could not be written...",
                                      PyExc_RuntimeError, nullptr);
  g_usage_error = PyErr_NewExceptionWithDoc("espgrid.UsageError", "an impossible option value or request",
                                            PyExc_ValueError, nullptr);
  g_input_error = PyErr_NewExceptionWithDoc(
      "espgrid.InputError", "a defect in an input file; .file and .line say where", PyExc_ValueError, nullptr);
  m.attr("Error") = py::handle(g_error);
  m.attr("UsageError") = py::handle(g_usage_error);
  m.attr("InputError") = py::handle(g_input_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object error = py::reinterpret_borrow<py::object>(g_input_error)(os_text(e.what()));
      error.attr("file") = os_text(e.file());
      error.attr("line") = e.line();
      PyErr_SetObject(g_input_error, error.ptr());
    } catch (const UsageError& e) {
      raise(g_usage_error, e.what());
    } catch (const Error& e) {
      raise(g_error, e.what());
    }
  });
}

}  // namespace espgrid::python
