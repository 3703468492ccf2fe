#include "src/pipeline/map_summary.h"

#include <algorithm>
#include <cmath>

#include "src/core/bulk_memory.h"
#include "src/physics/pair_potentials.h"

namespace espgrid {

namespace {

std::string python_name(std::string_view option) {
  std::string name(option);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace

Json model_parameters_json(const PhysicsOptions& physics) {
  Json j = Json::object();
  j.set("name", model_label(physics));
  if (physics.is_pb()) {
    const PbOptions& pb = physics.pb;
    j.set("description", describe(pb));
    j.set("solute_dielectric", pb.solute_dielectric);
    j.set("solvent_dielectric", pb.solvent_dielectric);
    j.set("ionic_strength", pb.ionic_strength);
    j.set("ion_radius", pb.ion_radius);
    j.set("probe_radius", pb.probe_radius);
    j.set("surface", surface_name(pb.surface));
    j.set("surface_window", pb.spline_window);
    j.set("surface_density", pb.surface_density);
    j.set("surface_sampling", pb.sampling);
    j.set("pb_formulation", formulation_name(pb.formulation));
    j.set("pb_equation", equation_name(pb.equation));
    j.set("pb_tolerance", pb.tolerance);
    j.set("pb_max_iterations", pb.max_iterations);
    j.set("pb_equation", equation_name(pb.equation));
    j.set("boundary", boundary_name(pb.boundary));
    j.set("charge_method", charge_method_name(pb.charges));
    Json ions = Json::array();
    for (const PbIon& ion : ion_species(pb))
      ions.push(
          Json::object().set("charge", ion.charge).set("concentration", ion.concentration).set("radius", ion.radius));
    j.set("ions", ions);
    j.set("kappa_per_angstrom", pb_kappa(pb));
    return j;
  }
  j.set("description", describe_model(physics));
  with_pair_potential(physics.model, [&](auto potential) {
    if (potential.screened) {
      j.set("ionic_strength", physics.ionic_strength);
      j.set("kappa_per_angstrom", debye_kappa(physics.ionic_strength, physics.dielectric, physics.temperature));
    }
    for (const ModelParameter& p : potential.parameters) j.set(python_name(p.name), physics.parameter(p));
  });
  return j;
}

Json timing_json(const TimingReport& timing, double atom_evaluations, const std::optional<TimeEstimate>& estimate) {
  Json j = Json::object();
  j.set("read_seconds", timing.read_seconds);
  j.set("prepare_seconds", timing.prepare_seconds);
  j.set("kernel_seconds", timing.kernel_seconds);
  j.set("transfer_seconds", timing.transfer_seconds);
  j.set("write_seconds", timing.write_seconds);
  j.set("streamed_write_seconds", timing.streamed_write_seconds);
  j.set("total_seconds", timing.total_seconds());
  j.set("atom_evaluations", atom_evaluations);
  j.set("atom_evaluations_per_second",
        atom_evaluations > 0 && timing.kernel_seconds > 0 ? Json(atom_evaluations / timing.kernel_seconds) : Json());
  j.set("estimated_kernel_seconds", estimate ? Json(estimate->seconds) : Json());
  j.set("method", timing.method.empty() ? Json() : Json(timing.method));
  Json phases = Json::object();
  for (const PhaseTiming& phase : timing.phases) phases.set(phase.name, phase.seconds);
  j.set("phases", phases);
  Json parts = Json::array();
  for (const WorkerTiming& part : timing.parts)
    parts.push(Json::object()
                   .set("device", part.device)
                   .set("device_name", part.device_name)
                   .set("kernel_seconds", part.kernel_seconds)
                   .set("wall_seconds", part.wall_seconds)
                   .set("planes", static_cast<long long>(part.planes))
                   .set("chunks", part.chunks));
  j.set("devices", parts);
  return j;
}

Json map_summary(const PotentialMap& map, const std::string& kernel, const std::string& kernel_choice,
                 const TimingReport& timing, const MapProvenance& provenance, const std::vector<std::string>& outputs,
                 const std::optional<TimeEstimate>& estimate, const PbEnergyReport* energy,
                 std::optional<std::pair<float, float>> range) {
  const GridSpec& g = map.grid;
  Json j = Json::object();
  j.set("source", map.source);
  j.set("grid", Json::object()
                    .set("origin", Json::numbers(g.origin))
                    .set("dims", Json::numbers(g.dims))
                    .set("spacing", Json::numbers(g.spacing))
                    .set("point_count", static_cast<unsigned long long>(g.point_count())));
  j.set("origin", Json::numbers(g.origin));
  j.set("spacing", Json::numbers(g.spacing));
  j.set("shape", Json::numbers(g.dims));
  // A map espgrid did not compute (APBS's): no model, medium or temperature claimed.
  const bool foreign = !map.foreign.empty();
  j.set("units", map.unit_known ? Json(unit_name(map.physics.unit)) : Json());
  j.set("model", foreign ? Json() : Json(model_label(map.physics)));
  j.set("dielectric", foreign ? Json() : Json(map.physics.dielectric));
  j.set("temperature", foreign ? Json() : Json(map.physics.temperature));
  j.set("physics", foreign ? foreign_map_title(map) + "; " + foreign_map_unit(map) : physics_comment(map.physics));
  j.set("model_parameters", foreign ? Json() : model_parameters_json(map.physics));
  j.set("kernel", kernel.empty() ? Json() : Json(kernel));
  j.set("kernel_choice", kernel_choice);
  j.set("device", timing.device);
  const double evaluations =
      map.physics.is_pb() ? 0.0 : static_cast<double>(g.point_count()) * static_cast<double>(provenance.atoms);
  j.set("timing", timing_json(timing, evaluations, estimate));
  j.set("energy", energy ? pb_energy_json(*energy) : Json());
  // The range of the finite values (a map read back or made from values may hold none). The
  // threads' branch-free pass first (one thread's checked loop took ~0.3 s of the 1.93 M-atom
  // capsid's 249 M values); the checked loop only where it met an infinity or found nothing.
  auto [lo, hi] = range ? *range : float_range(map.values.data(), map.values.size());
  bool any = std::isfinite(lo) && std::isfinite(hi);
  if (!any) {
    for (const float v : map.values) {
      if (!std::isfinite(v)) continue;
      lo = any ? std::min(lo, v) : v;
      hi = any ? std::max(hi, v) : v;
      any = true;
    }
  }
  j.set("range", any ? Json::array({Json(lo), Json(hi)}) : Json());
  Json p = Json::object();
  p.set("espgrid_version", ESPGRID_VERSION);
  Json command = Json::array();
  for (const std::string& word : provenance.command) command.push(word);
  p.set("command", provenance.command.empty() ? Json() : command);
  p.set("input", provenance.input.empty() ? Json() : Json(provenance.input));
  p.set("atoms", static_cast<unsigned long long>(provenance.atoms));
  p.set("total_charge", provenance.total_charge);
  p.set("charges_from", provenance.charges_from.empty() ? Json() : Json(provenance.charges_from));
  p.set("pdb2pqr_command", provenance.pdb2pqr_command.empty() ? Json() : Json(provenance.pdb2pqr_command));
  p.set("pqr_kept", provenance.pqr_kept.empty() ? Json() : Json(provenance.pqr_kept));
  p.set("created", provenance.created.empty() ? Json() : Json(provenance.created));
  j.set("provenance", p);
  Json files = Json::array();
  for (const std::string& path : outputs) files.push(path);
  j.set("outputs", files);
  return j;
}

void SummaryRecorder::charges_assigned(const AssignedStructure& assigned, double seconds) {
  provenance.charges_from = assigned.describe();
  provenance.pdb2pqr_command = assigned.command;
  next_.charges_assigned(assigned, seconds);
}

void SummaryRecorder::prepared(const PreparedJob& job) {
  provenance.atoms = job.structure.atoms.size();
  provenance.total_charge = job.structure.atoms.total_charge();
  next_.prepared(job);
}

void SummaryRecorder::computed(const MapResult& result) {
  provenance.created = utc_timestamp();
  next_.computed(result);
}

void SummaryRecorder::written(const std::string& path, const std::string& what) {
  if (what.empty())
    outputs.push_back(path);
  else
    provenance.pqr_kept = path;
  next_.written(path, what);
}

}  // namespace espgrid
