#include "src/pipeline/atom_potentials.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "src/core/errors.h"
#include "src/core/stopwatch.h"
#include "src/core/text_format.h"
#include "src/view/vertex_potential.h"

namespace espgrid {

void check_atom_potential_job(const MapJob& job) {
  if (job.physics.is_pb()) return;  // the map's options apply
  const MethodParameters& method = job.compute.run.method;
  if (method.accuracy != 0 || !method.msm.empty())
    throw UsageError(
        "--accuracy and --msm-* choose an approximate map method; the potentials at atoms are summed "
        "exactly over every pair");
  if (!job.compute.kernel.empty())
    throw UsageError(
        "--kernel names a map kernel; the potentials at atoms are an exact sum over every pair, in "
        "double precision on the CPU");
  if (job.compute.backend == BackendChoice::Cuda)
    throw UsageError(
        "--backend cuda: the potentials at atoms are summed in double precision on the CPU (the GPU's "
        "float32 sum would lose them to the atom's own term); leave --backend out");
  if (!job.compute.run.devices.empty() || job.compute.device_given)
    throw UsageError("--device and --devices choose GPUs; the potentials at atoms are summed on the CPU");
  for (const std::string_view grid : {"spacing", "padding", "origin", "dims", "center", "length"})
    if (std::find(job.given.begin(), job.given.end(), grid) != job.given.end())
      throw UsageError("--" + std::string(grid) + " places a map's grid; a pair model's potentials at atoms are " +
                       "summed without one (--model pb computes a map, and takes it)");
}

namespace {

AtomPotentials pair_sum(const MapJob& job, const Atoms& atoms, MapObserver& observer) {
  AtomPotentials out;
  const int threads = job.compute.run.threads > 0 ? job.compute.run.threads : omp_get_max_threads();
  const std::size_t n = atoms.size();
  // Chunks of about 2^28 pairs (a fraction of a second): progress, and Python's Ctrl-C, between them.
  const std::size_t chunk = std::max<std::size_t>(64, (std::size_t{1} << 28) / std::max<std::size_t>(n, 1));
  const Stopwatch clock;
  out.values.reserve(n);
  for (std::size_t first = 0; first < n; first += chunk) {
    const std::size_t count = std::min(chunk, n - first);
    const std::vector<double> part = surface::potential_at_atoms(atoms, job.physics, first, count, threads);
    out.values.insert(out.values.end(), part.begin(), part.end());
    observer.progress(first + count, n);
  }
  out.seconds = clock.seconds();
  out.device = "CPU, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  out.method = "exact sum over the " + with_commas(n > 0 ? n - 1 : 0) + " other atoms, double precision (" +
               describe_model(job.physics) + ", dielectric " + shortest_text(job.physics.dielectric) + ")";
  return out;
}

AtomPotentials pb_map_at_atoms(const MapJob& job, const Atoms& atoms, MapObserver& observer) {
  MapJob map_job = job;
  map_job.input = {};
  map_job.input.atoms = std::make_shared<const Atoms>(atoms);
  map_job.input.description = "atoms for their potentials";
  map_job.outputs.clear();
  const Stopwatch clock;
  const PreparedJob prepared = prepare_job(map_job, observer, false);
  const MapResult result = compute_job(map_job, prepared, observer, nullptr);
  std::vector<double> centres(3 * atoms.size());
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    centres[3 * i] = atoms.x[i];
    centres[3 * i + 1] = atoms.y[i];
    centres[3 * i + 2] = atoms.z[i];
  }
  const std::vector<float> values = surface::interpolate(result.map, centres);
  AtomPotentials out;
  out.values.assign(values.begin(), values.end());
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw Error("internal error: atom " + std::to_string(i + 1) + " lies outside its own PB map");
  out.seconds = clock.seconds();
  out.device = result.timing.device;
  out.grid = result.map.grid;
  out.method = "APBS's atompot: the Poisson-Boltzmann map (" + describe(result.map.grid) + ", spacing " +
               shortest_text(result.map.grid.spacing[0]) +
               " Å) interpolated trilinearly at each atom's centre; it includes the atom's own charge as "
               "spread onto the grid";
  return out;
}

}  // namespace

AtomPotentials potential_at_atoms(const MapJob& job, const Atoms& atoms, MapObserver& observer) {
  check_atom_potential_job(job);
  validate(job.physics);
  if (atoms.empty()) throw UsageError("no atoms: the potentials at atoms need a structure");
  return job.physics.is_pb() ? pb_map_at_atoms(job, atoms, observer) : pair_sum(job, atoms, observer);
}

}  // namespace espgrid
