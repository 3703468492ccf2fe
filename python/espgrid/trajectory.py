"""The potential averaged over the frames of a trajectory, read with MDAnalysis.

    from espgrid.trajectory import average_map
    result = average_map("top.psf", "traj.dcd", select="protein", step=10, std=True, spacing=1.0)
    result.mean.write("mean.dx"); result.std.write("std.dx")

or from a shell (the same as `python3 -m espgrid`):

    espgrid-trajectory top.psf traj.dcd -o mean.dx --std-output std.dx --select protein --step 10

Every selected frame's map is computed on one fixed grid (the atoms' bounding box over all
selected frames plus padding, unless the grid is given) with any kernel or model="pb" (radii:
espgrid/radii.py), and added to exact integer sums that give the mean and standard deviation
(C++: python/src/frame_average.h, src/compute/frame_sums.h). frame_energies gives energies per
frame (espgrid/frame_energy.py). The frames are shared out over MPI ranks and GPUs by
espgrid/frames.py. The topology must carry charges (PSF, PRMTOP, TPR, PQR, ...); they are taken
as they are.

Periodic systems: a molecule split across the box has atoms on both sides of it, and its map
is wrong there. unwrap=True (--unwrap) makes every molecule holding a selected atom whole in
each frame first (AtomGroup.unwrap over the topology's bonds: MDAnalysis's make_whole, without
changing the Universe); a periodic system averaged without it gets a PeriodicBoxWarning unless
unwrap=False (--no-unwrap) says its molecules are whole already.
"""

import argparse
import contextlib
import errno
import os
import sys
import warnings

import numpy as np

import espgrid
from espgrid import _espgrid


class TrajectoryAverage:
    """What average_map returns: the mean map, the standard-deviation map (or None), and the
    frames that went into them."""

    def __init__(self, mean, std, frames, atoms, kernel, seconds):
        self.mean = mean          # espgrid.Map: mean potential over the frames
        self.std = std            # espgrid.Map or None: population standard deviation
        self.frames = frames      # trajectory frame indices used
        self.atoms = atoms        # atoms selected
        self.kernel = kernel      # registry name of the kernel that computed every frame
        self.seconds = seconds    # wall time of the frame loop, s

    def __repr__(self):
        return (f"<TrajectoryAverage {len(self.frames)} frames, {self.atoms} atoms, kernel {self.kernel}, "
                f"grid {self.mean.shape}>")


class PeriodicBoxWarning(UserWarning):
    """A periodic system's map computed without making its molecules whole (unwrap=None)."""


class TrajectoryNote(UserWarning):
    """A remark about the input that changes nothing in the result, e.g. a DCD whose header's
    frame count (NSET) is stale: its frames are counted from the file's size, as VMD and
    MDAnalysis count them. espgrid-trajectory prints it as `espgrid-trajectory: note: ...`."""


@contextlib.contextmanager
def _quiet_mdanalysis():
    """MDAnalysis 2.4 warns about its own internals on Python 3.11 (xdrlib on import, the DCD
    reader's timesteps on every read): DeprecationWarnings its users can do nothing about. They
    are silenced while espgrid calls MDAnalysis; every other warning passes."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
        yield


def _mdanalysis():
    # MDAnalysis's import resets and adds warning filters, so an "ignore" filter set here would be
    # gone by the time xdrlib warns: the warnings of the import are recorded and dropped instead,
    # and catch_warnings restores the caller's filters afterwards.
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("ignore")
        try:
            import MDAnalysis
        except ImportError as e:
            raise ImportError("trajectory averages need MDAnalysis (Debian: apt-get install python3-mdanalysis)") from e
    return MDAnalysis


def _box(universe):
    """The periodic box of the current frame, [a, b, c (Å), α, β, γ (degrees)], or None when it has none."""
    dimensions = universe.dimensions
    if dimensions is None:
        return None
    box = np.asarray(dimensions[:6], dtype=np.float64)
    return box if np.all(np.isfinite(box)) and np.all(box[:3] > 0) else None


def _box_text(box):
    """"30 x 30 x 30 Å", with the angles where the box is not rectangular ("..., angles 60, 60, 90°")."""
    text = " x ".join(f"{x:g}" for x in box[:3]) + " Å"
    if len(box) == 6 and not np.allclose(box[3:], 90.0):
        text += ", angles " + ", ".join(f"{x:g}" for x in box[3:]) + "°"
    return text


def _box_width(box):
    """The box's smallest width (Å): its smallest edge for a rectangular box, else the smallest
    distance between opposite faces (the volume over the largest face), which is what a bond
    spanning "more than half the box" is measured against."""
    if len(box) < 6 or np.allclose(box[3:], 90.0):
        return float(box[:3].min())
    from MDAnalysis.lib.mdamath import triclinic_vectors
    a, b, c = triclinic_vectors(box)
    volume = abs(np.dot(a, np.cross(b, c)))
    return float(min(volume / np.linalg.norm(np.cross(b, c)), volume / np.linalg.norm(np.cross(c, a)),
                     volume / np.linalg.norm(np.cross(a, b))))


def _warn_user(warning):
    """warnings.warn naming the first line outside the espgrid package (the user's call), however
    deep in espgrid the warning arises."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level + 1)


def _has_bonds(group):
    try:
        group.bonds  # noqa: B018 (MDAnalysis raises NoDataError, an AttributeError, without bonds)
        return True
    except AttributeError:
        return False


def _check_unwrap(group, unwrap, name, frame_text, stacklevel):
    """unwrap=True: the system must have a box and bonds. unwrap=None: a PeriodicBoxWarning when
    it has a box, saying how many bonds span more than half of it now. unwrap=False: nothing."""
    if unwrap is not None and not isinstance(unwrap, bool):
        raise TypeError(f"unwrap must be True, False or None, got {unwrap!r}")
    box = _box(group.universe)
    if unwrap:
        if box is None:
            raise espgrid.UsageError(f"unwrap=True: {name} has no periodic box ({frame_text}), so there is nothing "
                                     "to make whole")
        if not _has_bonds(group):
            raise espgrid.UsageError(f"unwrap=True needs bonds to tell the molecules apart, and {name} has none "
                                     "(PSF, TPR and PRMTOP topologies carry them; for others, call "
                                     "universe.atoms.guess_bonds() and pass the Universe)")
        return
    if unwrap is False or box is None:
        return
    split = ""
    if _has_bonds(group) and len(group.bonds):
        lengths = group.bonds.values()
        stretched = int(np.count_nonzero(lengths > 0.5 * _box_width(box)))
        split = (f"; {stretched} of its {len(lengths)} bonds {'spans' if stretched == 1 else 'span'} more than half "
                 f"the box in {frame_text}" if stretched else f"; no bond spans more than half the box in {frame_text}")
    _warn_user(PeriodicBoxWarning(
        f"{name} is periodic (box {_box_text(box)}) and its molecules are not made whole"
        f"{split}: a molecule split across the box gives a wrong map there. unwrap=True (--unwrap; needs bonds) "
        "makes them whole first; unwrap=False (--no-unwrap) says they are whole already"))


def _positions(group, unwrap):
    """The group's positions (Å, float64) in the current frame; with unwrap, every molecule
    (bonded fragment) holding an atom of the group made whole across the box first, without
    changing the Universe's coordinates."""
    if not unwrap:
        return np.asarray(group.positions, dtype=np.float64)
    universe = group.universe
    # Whole fragments, so that a selection of part of a molecule is made whole with the rest.
    fragments = np.unique(group.fragindices)
    whole = universe.atoms[np.isin(universe.atoms.fragindices, fragments)]  # sorted by index
    xyz = whole.unwrap(compound="fragments", reference=None, inplace=False)
    return np.asarray(xyz[np.searchsorted(whole.ix, group.ix)], dtype=np.float64)


def _charges_of(group, name):
    mda = _mdanalysis()
    try:
        return np.asarray(group.charges, dtype=np.float64)
    except (AttributeError, mda.exceptions.NoDataError) as e:
        raise espgrid.UsageError(f"{name} has no charges: use a topology that carries them "
                                 "(PSF, PRMTOP, TPR, PQR, ...)") from e


def _group_name(group):
    """'fas2.pqr' or 'fas2.psf + traj.dcd' for messages: the files of the group's Universe."""
    universe = group.universe
    files = [f for f in [getattr(universe, "filename", None)] if isinstance(f, str)]
    trajectory = getattr(universe.trajectory, "filename", None)
    if isinstance(trajectory, str) and trajectory not in files:
        files.append(trajectory)
    return " + ".join(os.path.basename(f) for f in files) if files else "an MDAnalysis Universe"


def structure_of_atoms(atoms, unwrap=None):
    """An espgrid.Structure from an MDAnalysis AtomGroup or Universe: its current frame's
    positions (made whole first with unwrap=True) and its topology's charges (radii too when the
    topology has them, for drawing). compute_map and potential_at call this for MDAnalysis atoms."""
    mda = _mdanalysis()
    group = getattr(atoms, "atoms", None)  # a Universe's atoms; a ResidueGroup's or SegmentGroup's too
    if not isinstance(group, mda.AtomGroup):
        raise TypeError(f"expected an MDAnalysis AtomGroup or Universe, got {type(atoms).__name__}")
    kind = "Universe" if isinstance(atoms, mda.Universe) else type(atoms).__name__
    files = _group_name(group)
    name = f"the {kind} of {files}"
    if len(group) == 0:
        raise espgrid.UsageError(f"{name} holds no atoms")
    charges = _charges_of(group, name)
    frame_text = f"frame {group.universe.trajectory.frame}"
    # The warning names the caller's line: user → compute_map/potential_at → _structure → here.
    _check_unwrap(group, unwrap, name, frame_text, stacklevel=5)
    with _quiet_mdanalysis():
        positions = _positions(group, unwrap)
    radii = None
    try:
        radii = np.asarray(group.radii, dtype=np.float64)
    except (AttributeError, mda.exceptions.NoDataError):
        pass
    # describe_source adds ", N atoms, total charge Q e".
    description = f"MDAnalysis {kind} of {files}, {frame_text}{', molecules made whole' if unwrap else ''}"
    structure = _espgrid.structure_from_arrays(positions, charges, radii, description)
    return structure


def _input_error(message, path=None):
    """espgrid.InputError carrying the file, as the C++ readers raise it (line 0: no line)."""
    error = espgrid.InputError(message)
    error.file, error.line = (path or ""), 0
    return error


def _check_file(path):
    """FileNotFoundError (or IsADirectoryError) naming the path, before MDAnalysis sees it."""
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)


def _check_dcd_readers(universe, checked=()):
    """Every DCD the universe reads is walked record by record (structure/dcd_check.h): its frames
    are counted from its size, as MDAnalysis and VMD count them, so a file that ends inside a
    frame (cut short) or has a damaged record is refused rather than averaged over the frames
    before the damage. A header whose frame count differs from the whole frames is a
    TrajectoryNote, not an error: writers leave it stale. Raises espgrid.InputError
    "FILE: what is wrong"."""
    trajectory = universe.trajectory
    for reader in getattr(trajectory, "readers", None) or [trajectory]:
        path = getattr(reader, "filename", None)
        if not isinstance(path, str) or not path.lower().endswith(".dcd"):
            continue
        summary = checked[path] if path in checked else _espgrid.check_dcd(path)
        if reader.n_frames != summary["frames"]:
            raise _input_error(f"{path}: MDAnalysis sees {reader.n_frames} frames where the file's records hold "
                               f"{summary['frames']}", path)
        if summary.get("note"):
            _warn_user(TrajectoryNote(f"{path}: {summary['note']}"))


def _check_xyz_readers(universe):
    """Every frame of an XYZ trajectory holds as many atoms as the topology: MDAnalysis reads each
    frame as that many lines whatever the frame's own count says, so one atom more would shift
    positions onto the wrong atoms. Raises espgrid.InputError "FILE:LINE: frame F ..."."""
    from MDAnalysis.coordinates.XYZ import XYZReader
    from MDAnalysis.lib.util import anyopen
    atoms = universe.atoms.n_atoms
    for reader in getattr(universe.trajectory, "readers", None) or [universe.trajectory]:
        if not isinstance(reader, XYZReader):
            continue
        path, line, frame = reader.filename, 0, 0
        with anyopen(path) as f:
            while text := f.readline():
                line += 1
                if not text.strip():
                    if f.read().strip():  # blank lines only after the last frame
                        raise _input_error(f"{path}:{line}: a blank line between frames (frame {frame} should start "
                                           "here with its atom count)", path)
                    break
                count = text.split()[0]
                if not count.isdigit() or int(count) != atoms:
                    said = f"holds {int(count)} atoms" if count.isdigit() else f"starts with {text.strip()[:40]!r}"
                    raise _input_error(f"{path}:{line}: frame {frame} {said} where the topology has {atoms} atoms "
                                       "(every frame of an XYZ trajectory must hold the topology's atoms)", path)
                for _ in range(atoms + 1):  # its comment line and its atoms
                    if not f.readline():
                        raise _input_error(f"{path}: frame {frame} (from line {line}) ends early: the trajectory is "
                                           "truncated", path)
                line += atoms + 1
                frame += 1


def _atom_group(topology, trajectory, select):
    mda = _mdanalysis()
    if isinstance(topology, mda.AtomGroup):
        if trajectory is not None:
            raise TypeError("an AtomGroup brings its own trajectory; give no trajectory")
        universe, base, name, checked = topology.universe, topology, "atom group", {}
    elif isinstance(topology, mda.Universe):
        if trajectory is not None:
            raise TypeError("a Universe brings its own trajectory; give no trajectory")
        universe, base, name, checked = topology, topology.atoms, "universe", {}
    else:
        files = [] if trajectory is None else ([trajectory] if isinstance(trajectory, (str, os.PathLike))
                                                 else list(trajectory))
        top, files = os.fspath(topology), [os.fspath(f) for f in files]
        for path in [top] + files:
            _check_file(path)
        # A DCD cut short (inside a frame) or damaged is refused before MDAnalysis opens it.
        checked = {path: _espgrid.check_dcd(path) for path in files if path.lower().endswith(".dcd")}
        # The topology first, then the trajectory: an error names the file it comes from.
        try:
            with _quiet_mdanalysis():
                # The trajectory comes next (load_new): a topology without coordinates is expected.
                warnings.filterwarnings("ignore", message="No coordinate reader found", category=UserWarning)
                universe = mda.Universe(top)
        except Exception as e:  # MDAnalysis raises many kinds; none is the user's programming error
            raise _input_error(f"{top}: MDAnalysis cannot read this topology: {_reason(e)}", top) from e
        if files:
            try:
                with _quiet_mdanalysis():
                    universe.load_new(files if len(files) > 1 else files[0])
            except Exception as e:
                where = files[0] if len(files) == 1 else " + ".join(files)
                raise _input_error(f"{where}: MDAnalysis cannot read this trajectory with {top}: {_reason(e)}",
                                   files[0]) from e
        base = universe.atoms
        name = " + ".join([top] + files)
    _check_dcd_readers(universe, checked)
    _check_xyz_readers(universe)
    try:
        group = base.select_atoms(select) if select not in (None, "all") else base
    except Exception as e:  # SelectionError, and ValueError/TypeError for some malformed selections
        raise espgrid.UsageError(f"selection {select!r} is not one MDAnalysis understands: {_reason(e)}") from e
    if len(group) == 0:
        raise espgrid.UsageError(f"selection {select!r} matches no atoms of {name}")
    charges = _charges_of(group, name)
    return universe, group, charges, name


def _reason(error):
    """An exception's message without its Python type, or the type when it has no message."""
    text = str(error).strip()
    return text if text else type(error).__name__


def _frames(universe, start, stop, step, name, expected):
    """The selected frames, read one by one. A frame that cannot be read (a read error, a file
    cut short that MDAnalysis notices only there) or a trajectory that ends before the frames
    MDAnalysis announced is an espgrid.InputError naming the trajectory, never an early end."""
    frames = iter(universe.trajectory[start:stop:step])
    count = 0
    while True:
        try:
            with _quiet_mdanalysis():
                ts = next(frames)
        except StopIteration:
            break
        except Exception as e:
            raise _input_error(f"{name}: cannot read frame {expected[count] if count < len(expected) else count}: "
                               f"{_reason(e)} (nothing averaged from a partly read trajectory)") from e
        count += 1
        yield ts
    if count != len(expected):
        raise _input_error(f"{name}: the trajectory ended after {count} of the {len(expected)} frames selected "
                           "(nothing averaged from a partly read trajectory)")


def average_map(topology, trajectory=None, *, select="all", start=None, stop=None, step=None, std=False,
                grid=None, progress=None, unwrap=None, radii=None, devices=None, comm=None, **options):
    """The potential averaged over a trajectory's frames, on one fixed grid.

    topology, trajectory: file names (any MDAnalysis reads; trajectory may be a list, or None
    for the topology's own coordinates), or an MDAnalysis Universe/AtomGroup (then no
    trajectory). select: an MDAnalysis selection ("protein", "segid A"). start, stop, step: the
    frames, as a slice of the trajectory. std: also the standard deviation over the frames.
    grid: an espgrid.Grid; otherwise spacing/padding (or origin/dims) place it around the
    selected atoms' bounding box over all selected frames (one extra pass over them).
    progress: None (a bar when stderr is a terminal), True, False, or a callable
    progress(frames_done, frames). unwrap: True makes every molecule holding a selected atom
    whole across the periodic box in each frame (needs bonds); None (the default) warns
    (PeriodicBoxWarning) when the system is periodic; False neither (molecules whole already).
    radii (model="pb"): where the atoms' radii come from (espgrid.radii: None for the topology's
    or else the AMBER table with Bondi's by element, "amber", "parse", "bondi", a PQR of the same
    atoms, or an array). devices: "all" or GPU numbers: the frames dealt over them (one map per
    GPU at a time). comm: an mpi4py communicator whose ranks share the frames (None: MPI's world
    when started by mpirun with several ranks; False: none); rank 0 gets the result, the others
    None. Every other keyword is an `espgrid map` option (kernel, units, dielectric, model,
    threads, ...), as for espgrid.compute_map.
    """
    from espgrid.frames import run_frames
    run = run_frames(topology, trajectory, select=select, start=start, stop=stop, step=step, std=std, grid=grid,
                     progress=progress, unwrap=unwrap, radii=radii, devices=devices, comm=comm, **options)
    return None if run is None else run.average


def frame_energies(topology, trajectory=None, *, select="all", binding=None, start=None, stop=None, step=None,
                   progress=None, unwrap=None, radii=None, grid=None, energy_units="kJ/mol", comm=None, **options):
    """The electrostatic energy of every selected frame, as an EnergySeries (espgrid.frame_energy):
    of the selection, or with binding=(selection_a, selection_b) the binding energy
    complex − a − b and its three terms. A pair model (model="coulomb", "debye", ...) gives exact
    pair sums; model="pb" the polar solvation energy (solvent less reference medium) or the PB
    binding energy, every solve on one grid (grid=, or the selection's box over the frames), where
    the PB solver has energies. energy_units "kJ/mol" (APBS's), "kcal/mol" or "kT". The other
    arguments are average_map's; rank 0 gets the series under MPI, the others None.
    """
    from espgrid.frames import run_frames
    run = run_frames(topology, trajectory, select=select, start=start, stop=stop, step=step, progress=progress,
                     unwrap=unwrap, radii=radii, grid=grid, maps=False, energies=True, binding=binding, energy_units=energy_units, comm=comm,
                     **options)
    return None if run is None else run.energies


# ---- command line -------------------------------------------------------------------------------

def _parser():
    p = argparse.ArgumentParser(
        prog="espgrid-trajectory",
        description="The electrostatic potential averaged over a trajectory's frames (MDAnalysis reads the "
                    "topology and trajectory; the topology must carry charges: PSF, PRMTOP, TPR, PQR, ...).",
        epilog="The Grid, Physics and Compute options are those of `espgrid map` (same defaults and checks). "
               "The grid is the selected atoms' bounding box over all selected frames plus --padding, unless "
               "--origin and --dims fix it. See docs/python.md.")
    p.add_argument("topology", metavar="TOPOLOGY", help="topology with charges (.psf, .prmtop, .tpr, .pqr, ...)")
    p.add_argument("trajectory", metavar="TRAJECTORY", nargs="*",
                   help="trajectory file(s) (.dcd, .xtc, .trr, .nc, ...); none: the topology's coordinates")
    p.add_argument("-o", "--output", action="append", metavar="MAP",
                   help="mean map to write (.dx, .vti, or any format `espgrid map -o` writes); repeat for several")
    p.add_argument("--std-output", action="append", metavar="MAP",
                   help="also write the standard deviation over the frames; repeat for several")
    p.add_argument("--select", default="all", help="MDAnalysis selection of the atoms (default: all)")
    p.add_argument("--start", type=int, help="first frame (default 0)")
    p.add_argument("--stop", type=int, help="stop before this frame (default: the end)")
    p.add_argument("--step", type=int, help="use every STEP-th frame (default 1)")
    whole = p.add_mutually_exclusive_group()
    whole.add_argument("--unwrap", dest="unwrap", action="store_true", default=None,
                       help="make every molecule holding a selected atom whole across the periodic box in each "
                            "frame (needs bonds: PSF, TPR, PRMTOP)")
    whole.add_argument("--no-unwrap", dest="unwrap", action="store_false",
                       help="the molecules are whole already: no warning for a periodic system")
    p.add_argument("--radii", metavar="SOURCE",
                   help="--model pb: the atoms' radii: topology (a PQR's or PRMTOP's), amber or parse (PDB2PQR's "
                        "tables by residue and atom name), bondi (by element), or a PQR file of the same atoms "
                        "(default: the topology's, else amber with Bondi's for atoms the table lacks)")
    energy = p.add_argument_group("Energies per frame")
    energy.add_argument("--energy-output", metavar="CSV",
                        help="write the electrostatic energy of the selection in every frame (frame, time, energy) "
                             "as CSV; a pair model's exact sum over its atom pairs")
    energy.add_argument("--binding", nargs=2, metavar=("SEL_A", "SEL_B"),
                        help="energies of two disjoint selections and their binding energy, complex - a - b, "
                             "instead of the selection's")
    energy.add_argument("--energy-units", default="kJ/mol", choices=["kJ/mol", "kcal/mol", "kT"],
                        help="unit of the energies (default kJ/mol, as APBS)")
    p.add_argument("--json", metavar="FILE",
                   help="also write the run's summary as JSON (frames, grid, kernel, radii, ranks, the energies' "
                        "mean, standard error and statistical inefficiency): a file, or - for standard output")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None,
                     help="show a progress bar (default: when stderr is a terminal)")
    bar.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    groups = {}
    for spec in _espgrid.map_option_specs():
        group = groups.get(spec["group"]) or p.add_argument_group(spec["group"] + " (as `espgrid map`)")
        groups[spec["group"]] = group
        default = f" (default {spec['default']})" if spec["default"] is not None else ""
        text = spec["help"] + default
        if spec["name"] == "devices":  # a trajectory deals whole frames to the GPUs instead
            text = "several CUDA devices: all, or N,N,...: the frames dealt over them, two frames per GPU at a time"
        group.add_argument("--" + spec["name"], dest="map_" + spec["name"].replace("-", "_"), metavar="VALUE",
                           help=text)
    return p


def main(argv=None):
    """The command line. Exit codes, as espgrid's: 0 success; 1 an input file that cannot be
    read or is malformed ("FILE: what is wrong"), or a failure; 2 a bad command line (options,
    a selection MDAnalysis cannot parse or that matches nothing, no frames selected, an output
    path refused). Never a Python traceback (ESPGRID_DEBUG=1 shows one)."""
    import warnings

    def import_mdanalysis():
        # MDAnalysis 2.4 on Python 3.11 warns about its own internals (xdrlib, DCD timesteps), and
        # its import resets and adds warning filters: import it with warnings recorded, not shown
        # (the filters are restored afterwards, without MDAnalysis's), then ignore deprecations.
        # After the command line is checked: its import takes ~1 s, a usage error none.
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("ignore")
            try:
                _mdanalysis()
            except ImportError:
                pass  # reported where it is needed, as an error
        warnings.filterwarnings("ignore", category=DeprecationWarning)

    def show(message, category, filename, lineno, file=None, line=None):
        # espgrid's own warnings as one line, like its errors; others as Python shows them.
        if issubclass(category, PeriodicBoxWarning):
            print(f"espgrid-trajectory: warning: {message}", file=sys.stderr)
        elif issubclass(category, TrajectoryNote):
            print(f"espgrid-trajectory: note: {message}", file=sys.stderr)
        else:
            print(warnings.formatwarning(message, category, filename, lineno, line), end="", file=sys.stderr)
    warnings.showwarning = show
    args = _parser().parse_args(argv)
    options = {k[len("map_"):]: v for k, v in vars(args).items() if k.startswith("map_") and v is not None}

    def error(message, code):
        if ranks is None or ranks.root:  # every rank fails alike (frames.Ranks.agree); rank 0 says why
            print(f"espgrid-trajectory: error: {message}", file=sys.stderr)
        return code

    from espgrid import frames as shared
    from espgrid import trajectory_cli as cli
    ranks, stdout = None, sys.stdout
    try:
        ranks = shared.world()
        if not ranks.root:  # one report, from rank 0
            sys.stdout = open(os.devnull, "w")
        outputs, texts, energies = cli._check_arguments(args)
        if "-" in (args.json, args.energy_output):
            sys.stdout = sys.stderr  # standard output holds the CSV or JSON alone
        inputs = [args.topology] + args.trajectory
        shared._guarded(ranks, lambda: cli._check_outputs(outputs, texts, inputs) if ranks.root else None)
        import_mdanalysis()
        devices = options.pop("devices", None)
        run = shared.run_frames(args.topology, args.trajectory or None, select=args.select, start=args.start,
                                stop=args.stop, step=args.step, std=bool(args.std_output), progress=args.progress,
                                unwrap=args.unwrap, radii=args.radii, maps=bool(outputs), energies=energies,
                                binding=args.binding, energy_units=args.energy_units, devices=devices, **options)
        if run is not None:
            cli._report(args, run, ranks)
        return 0
    except KeyboardInterrupt:
        return error("interrupted; no output written", 130)
    except espgrid.InputError as e:
        return error(str(e), 1)
    except (espgrid.UsageError, TypeError) as e:
        return error(str(e), 2)
    except OSError as e:  # a missing or unreadable file: name it, as espgrid does
        if e.filename is not None and e.strerror:
            return error(f"cannot open {e.filename}: {e.strerror}", 1)
        return error(_reason(e), 1)
    except (espgrid.Error, RuntimeError, ImportError, ValueError) as e:
        return error(_reason(e), 1)
    except Exception as e:  # an MDAnalysis error no check above foresaw: still no traceback
        if os.environ.get("ESPGRID_DEBUG") == "1":
            raise
        return error(f"{type(e).__name__}: {_reason(e)}", 1)
    finally:
        sys.stdout = stdout
