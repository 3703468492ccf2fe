// espgrid.FrameAverage (the running mean and deviation of a trajectory's maps) and the DCD check.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/binding_support.h"
#include "python/src/frame_average.h"
#include "src/pb/pb_pipeline_driver.h"
#include "src/pb/pb_solve.h"
#include "src/physics/pair_energy.h"
#include "src/structure/dcd_check.h"

namespace espgrid::python {

using namespace pybind11::literals;

namespace {

/// The PbRun of a map job's PB energies: the solver its backend asks for, in kT.
PbRun energy_run(const MapJob& job) {
  PbRun run;
  run.solver = job.compute.backend == BackendChoice::Cpu    ? PbSolver::Hypre
               : job.compute.backend == BackendChoice::Cuda ? PbSolver::CudaMultigrid
                                                            : PbSolver::Auto;
  run.threads = job.compute.run.threads;
  run.device = job.compute.run.device;
  run.unit = PotentialUnit::KTPerE;
  return run;
}

GridSpec energy_grid(const MapJob& job) {
  const std::optional<GridSpec> grid = explicit_grid(job.grid);
  if (!grid) throw Error("internal error: PB energies of a frame need the exact grid");
  return *grid;
}

/// espgrid.frame_energy's PB energies of one frame (polar solvation; binding as complex − parts on
/// one grid), through the PB solver's energies (src/pb/pb_solve.h: solvation_energy,
/// binding_energy; APBS's calcenergy).
template <class FrameAtoms>
void bind_pb_energies(py::module_& m, const FrameAtoms& frame_atoms) {
  auto with_radii = [frame_atoms](const py::handle& positions, const py::handle& charges, const py::handle& radii) {
    Atoms atoms = frame_atoms(positions, charges);
    atoms.radius = vector_of(radii, "radii", atoms.size());
    check_atom_values(atoms.radius, AtomField::Radius, "radii");
    atoms.element.assign(atoms.size(), ElementSymbol{});
    return atoms;
  };
  m.def(
      "pb_solvation_energy",
      [with_radii](const py::handle& positions, const py::handle& charges, const py::handle& radii, const MapJob& job) {
        const Atoms atoms = with_radii(positions, charges, radii);
        py::gil_scoped_release release;
        return solvation_energy(atoms, energy_grid(job), job.physics.pb, energy_run(job)).energy;
      },
      "positions"_a, "charges"_a, "radii"_a, "options"_a,
      "The polar solvation energy of the atoms, kT: the PB total energy in the solvent minus in the reference "
      "medium (solvent dielectric = solute's, no ions), on the job's grid.");
  m.def(
      "pb_binding_energy",
      [with_radii](const py::handle& positions, const py::handle& charges, const py::handle& radii, const MapJob& job,
                   const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
        const Atoms complex = with_radii(positions, charges, radii);
        std::vector<Atoms> parts(2);
        for (int k = 0; k < 2; ++k)
          for (const std::int32_t i : k == 0 ? a : b) {
            if (i < 0 || static_cast<std::size_t>(i) >= complex.size()) throw UsageError("atom index out of range");
            const auto j = static_cast<std::size_t>(i);
            parts[static_cast<std::size_t>(k)].push_back(complex.x[j], complex.y[j], complex.z[j], complex.charge[j],
                                                         complex.radius[j]);
          }
        PbBinding binding;
        {
          py::gil_scoped_release release;
          binding = binding_energy(complex, parts, energy_grid(job), job.physics.pb, energy_run(job));
        }
        return py::make_tuple(binding.complex.energy.total, binding.parts.at(0).energy.total,
                              binding.parts.at(1).energy.total, binding.energy);
      },
      "positions"_a, "charges"_a, "radii"_a, "options"_a, "a"_a, "b"_a,
      "PB total energies (kT) of the complex and of the parts a and b (indices) on one grid, and complex − a − b.");
}

/// A map of the average (its mean or deviation) with the kernel that computed the frames.
PyMap average_map(const FrameAverage& f, PotentialMap map) {
  PyMap p;
  p.map = std::move(map);
  p.kernel = std::string(f.kernel().kernel->name);
  p.kernel_why = f.kernel().why;
  return p;
}

/// FrameAverage.phase_seconds: {phase: seconds}, in the phases' order.
py::dict phase_seconds(const FrameAverage& f) {
  py::dict out;
  for (const PhaseTiming& p : f.phase_seconds()) out[py::str(p.name)] = p.seconds;
  return out;
}

/// espgrid.FrameAverage: frames queued, computed while the next is read, and summed exactly.
void bind_frame_average(py::module_& m) {
  py::class_<FrameAverage, std::unique_ptr<FrameAverage>>(m, "FrameAverage",
                                                          "Running mean (and standard deviation) of per-frame maps.")
      .def(py::init([](const MapJob& o, const GridSpec& grid, const py::handle& charges, bool with_deviation,
                       const py::object& source, const py::handle& radii) {
             const auto count = py::len(charges);
             std::vector<double> q = vector_of(charges, "charges", count);
             check_atom_values(q, AtomField::Charge, "charges");
             std::vector<double> r;
             if (!radii.is_none()) {
               r = vector_of(radii, "radii", count);
               check_atom_values(r, AtomField::Radius, "radii");
             }
             return std::make_unique<FrameAverage>(o, grid, std::move(q), std::move(r), with_deviation,
                                                   os_string(source));
           }),
           "options"_a, "grid"_a, "charges"_a, "with_deviation"_a, "source"_a, "radii"_a = py::none())
      .def(
          "add_frame",
          [](FrameAverage& f, const py::handle& positions, const std::string& label, const py::object& progress) {
            const auto xyz = positions_array(positions, "positions");
            if (static_cast<std::size_t>(xyz.shape(0)) != f.atom_count())
              throw UsageError(label + ": positions hold " + std::to_string(xyz.shape(0)) + " atoms, the charges " +
                               std::to_string(f.atom_count()));
            ProgressFn report = interruptible(progress);
            py::gil_scoped_release release;
            f.add_frame(xyz.data(), label, report);
          },
          "positions"_a, "label"_a = "frame", "progress"_a = py::none(),
          "Queues a frame (computed while the caller reads the next); an earlier frame's error is raised here.")
      .def(
          "finish",
          [](FrameAverage& f, const py::object& progress) {
            ProgressFn report = interruptible(progress);
            py::gil_scoped_release release;
            f.finish(report);
          },
          "progress"_a = py::none(), "Waits until every queued frame is computed and summed.")
      .def_property_readonly("frames", &FrameAverage::frames)
      .def_property_readonly(
          "limbs",
          [](py::object self) {
            // A view of the exact sums (compute/frame_sums.h), limb-major, for MPI: no copy.
            FrameAverage& f = self.cast<FrameAverage&>();
            auto& limbs = f.sums().limbs();
            return py::array_t<std::uint64_t>({static_cast<py::ssize_t>(limbs.size())}, {sizeof(std::uint64_t)},
                                              limbs.data(), self);
          },
          "The exact frame sums' limbs (uint64, limb-major), a view: what merge() of another rank takes.")
      .def(
          "merge",
          [](FrameAverage& f, const py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>& limbs,
             std::uint64_t frames) {
            if (limbs.ndim() != 1) throw UsageError("limbs must be one-dimensional");
            py::gil_scoped_release release;
            f.sums().merge(limbs.data(), static_cast<std::size_t>(limbs.shape(0)), frames, f.threads());
          },
          "limbs"_a, "frames"_a, "Adds another accumulator's sums (its limbs and frame count): integer sums, exact.")
      .def_property_readonly("last_solve", &FrameAverage::last_solve)
      .def_property_readonly("sums_on_device", &FrameAverage::sums_on_device)
      .def_property_readonly("kernel", [](const FrameAverage& f) { return std::string(f.kernel().kernel->name); })
      .def_property_readonly("kernel_choice", [](const FrameAverage& f) { return f.kernel().why; })
      .def_property_readonly("kernel_seconds", &FrameAverage::kernel_seconds)
      .def_property_readonly("transfer_seconds", &FrameAverage::transfer_seconds)
      .def_property_readonly("phase_seconds", &phase_seconds,
                             "Methods that run in phases (PB, MSM): {phase: seconds summed over the frames so far}.")
      .def("mean",
           [](const FrameAverage& f) {
             PyMap p = average_map(f, f.mean());
             p.timing.kernel_seconds = f.kernel_seconds();
             p.timing.transfer_seconds = f.transfer_seconds();
             return p;
           })
      .def("deviation", [](const FrameAverage& f) { return average_map(f, f.deviation()); });
}

/// The energies of one frame: the pair models' (exact pair sums) and PB's.
void bind_frame_energies(py::module_& m) {
  // The pair models' energies of one frame (physics/pair_energy.h), in kT: the energies of
  // espgrid.trajectory_energies, converted to the asked unit in Python.
  auto frame_atoms = [](const py::handle& positions, const py::handle& charges) {
    const auto xyz = positions_array(positions, "positions");
    const auto count = static_cast<std::size_t>(xyz.shape(0));
    check_positions(xyz.data(), count, "positions");
    Atoms atoms = atoms_of(xyz.data(), count);
    atoms.charge = vector_of(charges, "charges", count);
    check_atom_values(atoms.charge, AtomField::Charge, "charges");
    return atoms;
  };
  auto kt_physics = [](const MapJob& job) {
    PhysicsOptions physics = job.physics;
    if (model_label(physics) == "pb") throw UsageError("internal error: pair energies asked of a PB job");
    physics.unit = PotentialUnit::KTPerE;
    return physics;
  };
  m.def(
      "pair_energy",
      [=](const py::handle& positions, const py::handle& charges, const MapJob& job,
          const std::vector<std::int32_t>& members) {
        const Atoms atoms = frame_atoms(positions, charges);
        const PhysicsOptions physics = kt_physics(job);
        py::gil_scoped_release release;
        return pair_energy(atoms, physics, members, job.compute.run.threads);
      },
      "positions"_a, "charges"_a, "options"_a, "members"_a,
      "The pair model's energy of the atoms `members` (indices), kT: the sum over their pairs.");
  m.def(
      "pair_interaction",
      [=](const py::handle& positions, const py::handle& charges, const MapJob& job, const std::vector<std::int32_t>& a,
          const std::vector<std::int32_t>& b) {
        const Atoms atoms = frame_atoms(positions, charges);
        const PhysicsOptions physics = kt_physics(job);
        py::gil_scoped_release release;
        return pair_interaction(atoms, physics, a, b, job.compute.run.threads);
      },
      "positions"_a, "charges"_a, "options"_a, "a"_a, "b"_a,
      "The pair model's interaction of two disjoint groups, kT: E(a ∪ b) − E(a) − E(b).");

  bind_pb_energies(m, frame_atoms);
}

}  // namespace

void bind_trajectory(py::module_& m) {
  bind_frame_average(m);
  bind_frame_energies(m);
  m.def(
      "usable_devices",
      [] {
        std::string reason;
        const std::vector<int> devices = cuda::usable_devices(&reason);
        return py::make_tuple(devices, reason);
      },
      "The usable CUDA devices' numbers and, when there are none, why: (devices, reason).");
  m.def(
      "device_memory",
      [](int device) {
        std::size_t free = 0, total = 0;
        cuda::pb_device_memory(device, free, total);
        return py::make_tuple(free, total);
      },
      "device"_a, "GPU `device`'s free and total memory now, bytes: (free, total). Error without CUDA.");

  m.def(
      "check_dcd",
      [](const py::object& path_argument) {
        const std::string path = os_string(path_argument);
        const DcdSummary s = [&] {
          py::gil_scoped_release release;
          return check_dcd(path);
        }();
        return py::dict("atoms"_a = s.atoms, "frames"_a = s.frames, "header_frames"_a = s.header_frames,
                        "note"_a = frame_count_note(s));
      },
      "path"_a,
      "Checks a DCD's records and counts its whole frames (structure/dcd_check.h); InputError when it ends "
      "inside a frame or a record is damaged. 'note' says when the header's frame count differs.");
}

}  // namespace espgrid::python
