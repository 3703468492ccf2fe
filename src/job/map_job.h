// A map job: everything one map needs, as typed values. The program's words and Python's
// keywords both become a MapJob through one option table (job/job_options.h) with the same
// checks and messages, and one pipeline runs it (pipeline/map_pipeline.h: run_map_job), so
// `espgrid map`, `verify`, `bench`, the MPI ranks, the Python module and trajectory frames
// differ only in how they build the job and what they do with what the pipeline reports.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/core/atoms.h"
#include "src/core/grid.h"
#include "src/maps/map_formats.h"
#include "src/physics/physics_options.h"
#include "src/registry/kernel_registry.h"
#include "src/structure/pdb2pqr_source.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

enum class BackendChoice { Auto, Cpu, Cuda };
/// "auto", "cpu" or "cuda"; UsageError otherwise.
BackendChoice parse_backend(const std::string& text);

/// --model pb's solver (--pb-solver). Auto: on a GPU its multigrid; on the CPU espgrid's
/// multigrid in one process (the GPU's arithmetic; 1.5-3x faster than hypre measured on APBS's
/// examples, docs/apbs.md) and hypre across MPI ranks, which only hypre splits.
enum class PbSolverChoice { Auto, Multigrid, Hypre };
/// "auto", "multigrid" or "hypre"; UsageError otherwise.
PbSolverChoice parse_pb_solver_choice(const std::string& text);

/// Which kernel runs and how: a registry name or the backend's choice, and the run options.
struct ComputeOptions {
  std::string kernel;  ///< a registry name; empty: the backend's default
  BackendChoice backend = BackendChoice::Auto;
  PbSolverChoice pb_solver = PbSolverChoice::Auto;
  RunOptions run;             ///< threads, device(s), launch shape, slab cap, method parameters
  bool device_given = false;  ///< --device was given (it excludes --devices)
};

/// Where the atoms come from: a structure file, or atoms a program already holds (Python
/// arrays, a trajectory frame).
struct StructureSource {
  std::string path;                       ///< the structure file; empty when `atoms` is set
  std::optional<StructureFormat> format;  ///< nothing: the extension decides
  ChargeAssignment charges;               ///< PDB/mmCIF: how pdb2pqr assigns charges and radii
  std::string keep_pqr;                   ///< PDB/mmCIF: where pdb2pqr's PQR is kept; empty: not kept
  std::shared_ptr<const Atoms> atoms;     ///< atoms given directly
  std::string description;                ///< given atoms: the maps' header line as is
  std::string charge_option;              ///< the first PDB-only option given (--forcefield, --ph, --keep-pqr)

  /// The file's format (format, or its extension's); only for a path.
  StructureFormat file_format() const { return format ? *format : format_from_extension(path); }
  bool from_file() const noexcept { return atoms == nullptr; }
};

struct MapJob {
  StructureSource input;
  GridRequest grid;  ///< padding around the atoms, or an exact origin and dims
  PhysicsOptions physics;
  ComputeOptions compute;
  std::vector<std::string> outputs;  ///< map files; none: the map is only returned
  MapWriteOptions write;
  std::vector<std::string> given;  ///< the options given, by name (the table's apply records them)
};

}  // namespace espgrid
