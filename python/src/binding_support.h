// What the binding files (python/src/bind_*.cpp) share: the objects Python holds (a structure
// with where it came from, a map with how it was made), the conversions of Python arguments
// into espgrid's types with the program's checks and messages, and the progress callback that
// hears Ctrl-C. module.cpp states the rules every binding keeps.
#pragma once

#include <array>
#include <optional>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <string>
#include <vector>

#include "src/core/errors.h"
#include "src/job/job_options.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/map_summary.h"
#include "src/structure/pdb2pqr_source.h"

namespace espgrid::python {

namespace py = pybind11;

/// A structure as Python sees it: the atoms and where they came from.
struct PyStructure {
  Structure structure;
  std::string path;          ///< the file as given; empty for arrays
  std::string source;        ///< the maps' header line, exactly as `espgrid map` writes it
  std::string charges_from;  ///< PDB/mmCIF: "pdb2pqr 3.5.2, AMBER force field, ..."; else empty
  std::string pdb2pqr_command;
  std::string pdb2pqr_log;                ///< PDB/mmCIF: everything pdb2pqr printed
  std::optional<Pdb2pqrAccount> account;  ///< PDB/mmCIF: atoms in and out, what was left out
  std::vector<ResidueCharging> charging;  ///< PDB/mmCIF: how each residue pdb2pqr did not cover was charged
  std::vector<std::pair<std::string, std::string>> report;  ///< PDB/mmCIF: the summary's lines (tag, text)
};

/// A map and, when computed here, which kernel made it and how long it took.
struct PyMap {
  PotentialMap map;
  std::string kernel;  ///< registry name; empty for a map read from a file or made from values
  std::string kernel_why;
  TimingReport timing;
  MapProvenance provenance;              ///< computed here: the atoms and where they came from (Map.provenance)
  std::vector<std::string> outputs;      ///< the files Map.write wrote, in order (Map.outputs)
  std::optional<PbEnergyReport> energy;  ///< --model pb: the energies computed with the map (Map.energy)
};

/// The groups whose options are Python keywords of compute_map, grid_around, map_from_values and
/// average_map (the input and output options are read_structure's and Map.write's arguments).
bool python_keyword_group(OptionGroup group);
/// A map job from Python keywords (None means "not given"), checked as the program checks its
/// words. An unknown keyword is a TypeError listing the keywords there are.
MapJob job_from_keywords(const py::dict& keywords);
/// The keyword options, for the trajectory script's argparse: group, long name, help, default
/// (None when there is none).
py::list map_option_specs();

/// A progress callback that may run with the GIL released: it takes the GIL, lets a pending
/// Ctrl-C stop the computation (KeyboardInterrupt), then calls `callback(done, total)` unless
/// it is None.
ProgressFn interruptible(const py::object& callback);

/// A file name (or text holding one) from Python as the bytes the system takes: a str (a name
/// os.listdir gives for bytes that are not UTF-8 holds surrogate escapes), bytes or an
/// os.PathLike, through os.fsencode. TypeError for anything else.
std::string os_string(const py::handle& value);
/// Text that may hold file names (a path, a map's source line, a summary, a message) as a
/// Python str: bytes that are not UTF-8 become surrogate escapes, as os.fsdecode gives them, so
/// a name read back from it opens the same file (pybind11's own conversion raises on them).
py::str os_text(const std::string& text);
/// Throws UsageError when `value` is (or converts to) a complex array: espgrid's numbers are
/// real, and numpy's cast would drop the imaginary parts silently.
void refuse_complex(const py::handle& value, const std::string& what);

/// "(906, 3)" for messages.
std::string shape_text(const py::array& array);
/// N×3 positions as a C-ordered float64 array; UsageError for any other shape.
py::array_t<double, py::array::c_style | py::array::forcecast> positions_array(const py::handle& positions,
                                                                               const std::string& what);
/// `expected` numbers, one per atom; UsageError naming `what` otherwise.
std::vector<double> vector_of(const py::handle& values, const std::string& what, std::size_t expected);
/// points as an (N, 3) array of finite coordinates within ±1e6 Å, flattened; UsageError naming
/// the first bad one.
std::vector<double> points_of(const py::handle& points);
/// "(x, y, z)" of point i, for messages.
std::string point_text(const std::vector<double>& points, std::size_t i);

py::array column(const std::vector<double>& values);
py::tuple triple(const std::array<double, 3>& a);
py::tuple triple(const std::array<std::int64_t, 3>& a);

// The binding of each part of the module (python/src/bind_*.cpp), called by PYBIND11_MODULE.
void bind_errors(py::module_& m);
void bind_grid(py::module_& m);
void bind_structure(py::module_& m);
void bind_options(py::module_& m);
void bind_map(py::module_& m);
void bind_trajectory(py::module_& m);
void bind_points(py::module_& m);
void bind_apbs(py::module_& m);

}  // namespace espgrid::python
