"""APBS input files from Python: what `espgrid apbs FILE.in` does, returning the energies and maps.

    import espgrid.apbs
    run = espgrid.apbs.run("apbs.in")          # the files APBS would write, written (write=False: none)
    run.energies["solvated"]                   # kJ/mol: each ELEC block's total energy, by name (and number)
    run.prints[0].energy                       # kJ/mol: `print elecEnergy solvated - reference end`
    run.maps["pot-PE0.dx"].values              # the written map's values, (nx, ny, nz), in its units
    print(run.text)                            # APBS's lines, as `espgrid apbs` prints them

Relative paths in the input (molecules, parameter files, write stems) are read and written from
the working directory, as APBS does, or from `directory`. The input runs as APBS 3.4.1 runs it
(mg-manual, mg-auto focusing, mg-para); what this build cannot compute is refused before
anything runs, with the file and line (espgrid.InputError). docs/apbs.md has the details.
"""

import os
from dataclasses import dataclass, field

from . import _espgrid

__all__ = ["ApbsMap", "ApbsPrint", "ApbsRun", "run"]


@dataclass(frozen=True)
class ApbsPrint:
    """A PRINT statement's sum: APBS's echo ("1 (solvated) - 2 (reference)") and kJ/mol."""
    expression: str
    energy: float


@dataclass(frozen=True)
class ApbsMap:
    """A map the input writes: `path` (STEM-PE0.dx, .dx.gz), APBS's data `type` ("pot", "kappa",
    ...), its ELEC block (1-based), the grid and the values ((nx, ny, nz) float32; None with
    maps=False). Potentials are in kT/e."""
    path: str
    type: str
    elec: int
    origin: tuple
    spacing: tuple
    shape: tuple
    values: object = None


@dataclass(frozen=True)
class ApbsRun:
    """The outcome of an APBS input: every calculation (APBS's "CALCULATION #n": grid, bcfl,
    energy in kJ/mol, files), every ELEC block's energy, the PRINT sums, the maps, the notices
    (what APBS would warn about), the text `espgrid apbs` prints and its JSON."""
    input: str
    calculations: list
    elecs: list
    prints: list
    maps: dict
    notices: list
    text: str
    json: str
    seconds: float
    energies: dict = field(default_factory=dict)


def run(path, *, directory=None, backend="auto", threads=0, device=0, write=True, maps=True, dry_run=False):
    """Runs the APBS input file `path` as `espgrid apbs` does and returns an ApbsRun.

    directory: where relative paths in the input (and `path` itself) are read and the files are
    written; default the working directory, as APBS. backend: "auto" (the GPU when there is
    one), "cpu" (espgrid's multigrid), "cuda" or "hypre" (hypre's PCG + PFMG). write=False computes without writing files; maps=False keeps no map
    values in the result; dry_run=True checks everything and sets up the grids without solving.
    Raises espgrid.InputError (with .file and .line) for a defect of the input or an unsupported
    keyword, before anything is solved or written."""
    path = os.fspath(path)
    directory = os.fspath(directory) if directory is not None else ""
    raw = _espgrid.apbs_run(path, directory, backend, int(threads), int(device), bool(write), bool(maps),
                            bool(dry_run))
    written = {}
    for m in raw["maps"]:
        written[os.path.basename(m["path"])] = ApbsMap(m["path"], m["type"], m["elec"], m["origin"], m["spacing"],
                                                       m["shape"], m["values"])
    energies = {}
    for e in raw["elecs"]:
        energies[e["elec"]] = e["energy"]
        if e["name"]:
            energies[e["name"]] = e["energy"]
    return ApbsRun(raw["input"], raw["calculations"], raw["elecs"], [ApbsPrint(p["expression"], p["energy"])
                                                                     for p in raw["prints"]],
                   written, raw["notices"], raw["text"], raw["json"], raw["seconds"], energies)
