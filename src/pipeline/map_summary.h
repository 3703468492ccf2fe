// A computed map's whole summary as JSON, for scripts: `espgrid map --json FILE` writes it and
// Python's Map.summary() returns it as a dict. Its top-level keys are the Python Map's
// attribute names (grid, origin, spacing, shape, units, model, dielectric, temperature, physics,
// source, kernel, kernel_choice, device, timing, range, model_parameters, provenance, outputs),
// with the same values, so a script reads a map's record the same way from either front end.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/core/json.h"
#include "src/core/text_format.h"
#include "src/pipeline/map_pipeline.h"
#include "src/pipeline/time_estimate.h"

namespace espgrid {

/// Where a map came from.
struct MapProvenance {
  std::vector<std::string> command;  ///< the command line (the program's argv); empty from Python
  std::string input;                 ///< the structure file; empty for atoms given directly
  std::size_t atoms = 0;
  double total_charge = 0;      ///< e
  std::string charges_from;     ///< PDB/mmCIF: "pdb2pqr 3.5.2, AMBER force field, ..."; else empty
  std::string pdb2pqr_command;  ///< PDB/mmCIF: the equivalent pdb2pqr command; else empty
  std::string pqr_kept;         ///< PDB/mmCIF: where pdb2pqr's PQR was kept; empty when not
  std::string created;          ///< when the map was computed, UTC, ISO 8601 ("2026-11-24T10:31:02Z")
};

/// The model and its parameters: {"name", "description", then each parameter by its Python
/// keyword (ionic_strength, the model's own, pb's solvent_dielectric, ...), and kappa_per_angstrom
/// for screened models}.
Json model_parameters_json(const PhysicsOptions& physics);
/// Every stage's seconds (timing.total_seconds() as total_seconds), the approximate method or
/// PB solver and its phases, the atom-evaluations (grid points × atoms; 0 when unknown) and their
/// rate, and the estimate printed before the map (null when none was made).
Json timing_json(const TimingReport& timing, double atom_evaluations,
                 const std::optional<TimeEstimate>& estimate = std::nullopt);
/// The whole summary (see the file comment).
/// `energy`: a PB map's energies (the "energy" block; null without). `range`: the map's
/// float_range when the caller has it (MapResult::value_range), else computed here.
Json map_summary(const PotentialMap& map, const std::string& kernel, const std::string& kernel_choice,
                 const TimingReport& timing, const MapProvenance& provenance, const std::vector<std::string>& outputs,
                 const std::optional<TimeEstimate>& estimate = std::nullopt, const PbEnergyReport* energy = nullptr,
                 std::optional<std::pair<float, float>> range = std::nullopt);

/// An observer that records what a summary needs (the input, pdb2pqr's report, the files
/// written) and passes every report on to `next`.
class SummaryRecorder : public MapObserver {
 public:
  explicit SummaryRecorder(MapObserver& next) : next_(next) {}
  void charges_assigned(const AssignedStructure& assigned, double seconds) override;
  void notice(const std::string& text) override { next_.notice(text); }
  void prepared(const PreparedJob& job) override;
  void progress(std::size_t done, std::size_t total) override { next_.progress(done, total); }
  void computed(const MapResult& result) override;
  void written(const std::string& path, const std::string& what) override;

  MapProvenance provenance;          ///< command and input left to the caller
  std::vector<std::string> outputs;  ///< the maps written, in order (pdb2pqr's PQR is not one)

 private:
  MapObserver& next_;
};

}  // namespace espgrid
