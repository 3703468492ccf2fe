// espgrid._espgrid: the pybind11 bindings (one file a part: python/src/bind_*.cpp) of the library facade
// (src/pipeline/map_pipeline.h), the kernel registry, the readers (PDB2PQR for PDB/mmCIF) and the map formats. The
// package python/espgrid/ wraps them into the documented API (docs/python.md).
//
// Rules kept here:
//   * keywords are the map job's options (src/job/job_options.h) with '-' written '_', passed
//     as typed values (numbers, sequences, text) to the same functions the program's words go
//     through: the same checks, defaults and messages, and options added to the table appear
//     here unchanged; the pipeline (src/pipeline/map_pipeline.h) runs the job as for the program;
//   * the GIL is released while reading, computing and writing; each progress report takes it
//     back briefly to call the Python callback and to notice Ctrl-C (KeyboardInterrupt);
//   * a map's values are a read-only numpy view of the C++ buffer, no copy;
//   * espgrid::InputError becomes espgrid.InputError (a ValueError with .file and .line),
//     UsageError espgrid.UsageError (ValueError), any other espgrid::Error espgrid.Error
//     (RuntimeError): a missing GPU, a failed pdb2pqr, an unwritable file.
#include <pybind11/pybind11.h>

#include "python/src/binding_support.h"

PYBIND11_MODULE(_espgrid, m) {
  using namespace espgrid::python;
  m.doc() = "espgrid's C++ core (use the espgrid package; docs/python.md)";
  m.attr("__version__") = ESPGRID_VERSION;
  bind_errors(m);
  bind_grid(m);
  bind_structure(m);
  bind_options(m);
  bind_map(m);
  bind_trajectory(m);
  bind_points(m);
  bind_apbs(m);
}
