"""Electrostatic energies per trajectory frame, their time series and its statistics.

The pair models (coulomb, debye, distance, ...) are the cheap option: exact sums over the atom
pairs in double precision (src/physics/pair_energy.h), E = ½ Σᵢ qᵢ φ_others(rᵢ), with the map's
model, medium and softening. A binding energy of two disjoint selections A and B is
E(A ∪ B) − E(A) − E(B), which for a pair model is exactly the interaction of A with B.
--model pb energies (polar solvation, binding on one grid) need the PB solver's energies.

Statistics of a series x₁..x_N (summary()):
- mean; standard deviation with N − 1;
- statistical inefficiency g = 1 + 2 Σ_{t=1}^{N−1} (1 − t/N) C(t), C(t) the normalized
  autocorrelation Σ_{n<N−t} δxₙ δx_{n+t} / ((N − t) σ²) with σ² the variance over N, the sum
  stopped at the first t > 3 where C(t) ≤ 0, and g ≥ 1: pymbar's timeseries.statistical_inefficiency
  (Chodera, Swope, Pitera, Seok, Dill, J. Chem. Theory Comput. 3, 26 (2007)), fast=False, mintime=3;
- standard error of the mean √(s² g / N): the N frames hold N/g independent samples.
"""

import csv
import io
import json
import math

import numpy as np

import espgrid
from espgrid import _espgrid

_R = 1.380649e-23 * 6.02214076e23  # J/(mol K): kT per mole
UNITS = ("kJ/mol", "kcal/mol", "kT")


def kt_in(unit, temperature):
    """The size of kT in `unit` at `temperature` (K)."""
    if unit == "kT":
        return 1.0
    if unit == "kJ/mol":
        return _R * temperature / 1000.0
    if unit == "kcal/mol":
        return _R * temperature / 4184.0
    raise espgrid.UsageError(f"energy units must be one of {', '.join(UNITS)}, got {unit!r}")


def statistical_inefficiency(values, mintime=3):
    """g of the series (see the module's docstring); 1.0 for fewer than 2 values or no spread."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n < 2:
        return 1.0
    dx = x - x.mean()
    sigma2 = float(np.mean(dx * dx))
    if sigma2 == 0.0:
        return 1.0
    g = 1.0
    t = 1
    while t < n - 1:
        c = float(np.sum(dx[:n - t] * dx[t:])) / (float(n - t) * sigma2)
        if c <= 0.0 and t > mintime:
            break
        g += 2.0 * c * (1.0 - float(t) / float(n))
        t += 1
    return max(g, 1.0)


def series_summary(values):
    """{'mean', 'std', 'standard_error', 'statistical_inefficiency', 'effective_samples', 'frames'}."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n == 0:
        return {"frames": 0, "mean": None, "std": None, "standard_error": None, "statistical_inefficiency": None,
                "effective_samples": None}
    g = statistical_inefficiency(x)
    std = float(np.std(x, ddof=1)) if n > 1 else None
    return {"frames": n, "mean": float(np.mean(x)), "std": std,
            "standard_error": math.sqrt(std * std * g / n) if std is not None else None,
            "statistical_inefficiency": g, "effective_samples": n / g}


class EnergySeries:
    """Per-frame energies: `frames` (trajectory indices), `times` (ps), `columns` ({name: array}),
    `unit` ("kJ/mol", ...), `what` (what the energies are), and summary()."""

    def __init__(self, frames, times, columns, unit, what):
        self.frames = list(frames)
        self.times = np.asarray(times, dtype=np.float64)
        self.columns = {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}
        self.unit = unit
        self.what = what

    def __repr__(self):
        return f"<EnergySeries {len(self.frames)} frames: {', '.join(self.columns)} ({self.unit})>"

    def summary(self):
        """{'unit', 'what', 'frames', 'energies': {column: series_summary}}."""
        return {"unit": self.unit, "what": self.what, "frames": len(self.frames),
                "energies": {k: series_summary(v) for k, v in self.columns.items()}}

    def csv_text(self):
        """frame,time_ps,COLUMN_UNIT,...: one row a frame, the values as repr() (every digit)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        suffix = "_" + self.unit.replace("/", "_per_")
        writer.writerow(["frame", "time_ps"] + [k + suffix for k in self.columns])
        for i, frame in enumerate(self.frames):
            writer.writerow([frame, repr(float(self.times[i]))] + [repr(float(v[i])) for v in self.columns.values()])
        return out.getvalue()

    def json_text(self, extra=None):
        return json.dumps(dict(self.summary(), **(extra or {})), indent=2) + "\n"


class PairEnergies:
    """The per-frame energy of one selection, or the binding energy of two, for a pair model:
    rows(positions_of) → the frame's values, in kT."""

    def __init__(self, options, group, binding):
        self.options = options
        if binding is None:
            self.groups = [group]
            self.names = ["energy"]
            self.charges = np.asarray(group.charges, np.float64)
            self.members = [np.arange(len(group), dtype=np.int32)]
            self.what = "electrostatic energy of the selection"
        else:
            a, b = binding
            overlap = np.intersect1d(a.ix, b.ix)
            if len(overlap):
                raise espgrid.UsageError(f"the two binding selections share {len(overlap)} atoms (atom {overlap[0]} "
                                         "first): they must be disjoint")
            both = a | b  # sorted union
            self.groups = [both]
            self.charges = np.asarray(both.charges, np.float64)
            self.members = [np.searchsorted(both.ix, g.ix).astype(np.int32) for g in (a, b)]
            self.names = ["complex", "a", "b", "binding"]
            self.what = "binding energy: complex - a - b (a, b: the two selections)"

    def values(self, positions):
        """One frame's energies in kT from the positions of self.groups[0]."""
        xyz = np.ascontiguousarray(positions, np.float64)
        if len(self.members) == 1:
            return [_espgrid.pair_energy(xyz, self.charges, self.options, self.members[0])]
        a, b = self.members
        ea = _espgrid.pair_energy(xyz, self.charges, self.options, a)
        eb = _espgrid.pair_energy(xyz, self.charges, self.options, b)
        cross = _espgrid.pair_interaction(xyz, self.charges, self.options, a, b)
        return [ea + eb + cross, ea, eb, cross]


class PbEnergies:
    """The per-frame PB energy of one selection (its polar solvation energy: the total energy in
    the solvent less that in the reference medium, the solvent's dielectric set to the solute's
    and no ions), or the PB binding energy of two (complex − a − b, every solve on the maps' grid),
    through the PB solver's energies (APBS's calcenergy), in kT."""

    def __init__(self, job, group, group_radii, binding, radii_source):
        from espgrid.radii import assign_radii
        self.job = job
        if binding is None:
            self.groups, self.names = [group], ["solvation"]
            self.charges = np.asarray(group.charges, np.float64)
            self.radii = group_radii.radii
            self.what = "polar solvation energy of the selection (PB: solvent less reference medium)"
            return
        a, b = binding
        overlap = np.intersect1d(a.ix, b.ix)
        if len(overlap):
            raise espgrid.UsageError(f"the two binding selections share {len(overlap)} atoms (atom {overlap[0]} "
                                     "first): they must be disjoint")
        both = a | b
        self.groups, self.names = [both], ["complex", "a", "b", "binding"]
        self.charges = np.asarray(both.charges, np.float64)
        self.radii = assign_radii(both, radii_source).radii
        self.members = [np.searchsorted(both.ix, g.ix).astype(np.int32) for g in (a, b)]
        self.what = "PB binding energy: complex - a - b, each solved on one grid (a, b: the two selections)"

    def values(self, positions):
        xyz = np.ascontiguousarray(positions, np.float64)
        if len(self.names) == 1:
            return [_espgrid.pb_solvation_energy(xyz, self.charges, self.radii, self.job)]
        return list(_espgrid.pb_binding_energy(xyz, self.charges, self.radii, self.job, *self.members))
