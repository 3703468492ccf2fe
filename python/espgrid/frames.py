"""How the frames of a trajectory are shared out: over MPI ranks (mpirun -np N), over the GPUs of
a host (devices="all"), and how the parts are put back together (espgrid.trajectory uses it).

- Ranks take contiguous blocks of the selected frames, each reading its own block. The maps'
  sums are exact integers (src/compute/frame_sums.h), so rank 0 adds the other ranks' sums in
  any order and the mean and deviation are the same bits for any number of ranks; the
  energies come back to rank 0 and are put in frame order.
- Devices: frames_in_flight() accumulators (espgrid.FrameAverage) per GPU (two; four for PB), frames dealt
  round-robin; each accumulator computes its frame while the next is read; their sums are added
  at the end.
- Progress: only rank 0 reports, counting every rank's frames (each rank tells rank 0 after
  each frame, without waiting), with the rate and the time left.
- A failure on any rank stops every rank with that rank's error, named; nothing is written.
"""

import os
import sys
import time

import numpy as np

import espgrid
from espgrid import _espgrid

_MPI_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS")
_PROGRESS_TAG = 7301


def launched_ranks():
    """How many ranks the MPI launcher started this process among (1 without a launcher)."""
    for name in _MPI_SIZE_VARIABLES[:4]:
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    return 1


class Ranks:
    """This process's place among the ranks: rank, size, and the collective steps the trajectory
    needs. Without MPI (one rank) every step is local."""

    def __init__(self, comm=None):
        self.comm = comm
        self.rank = comm.Get_rank() if comm is not None else 0
        self.size = comm.Get_size() if comm is not None else 1
        self._sent = []
        self._heard = 0
        self.local_rank = 0  # among the ranks of this host
        if comm is not None:  # collective: every rank makes it here, before anything can fail
            from mpi4py import MPI
            host = comm.Split_type(MPI.COMM_TYPE_SHARED)
            self.local_rank = host.Get_rank()
            host.Free()

    @property
    def root(self):
        return self.rank == 0

    def block(self, frames):
        """This rank's contiguous block of `frames` (a range): frames[r·n/N : (r+1)·n/N]."""
        n = len(frames)
        return frames[self.rank * n // self.size:(self.rank + 1) * n // self.size]

    def agree(self, error):
        """Every rank learns whether any failed; then all raise the first failure (lowest rank),
        named by its rank, or none does. `error` is this rank's exception or None."""
        if self.comm is None:
            if error is not None:
                raise error
            return
        mine = None if error is None else (type(error).__name__, str(error), getattr(error, "file", None),
                                           getattr(error, "line", None), getattr(error, "errno", None),
                                           getattr(error, "filename", None), getattr(error, "strerror", None))
        failures = self.comm.allgather(mine)
        for rank, failure in enumerate(failures):
            if failure is not None:
                if rank == self.rank and error is not None:
                    raise error
                raise _rebuilt(failure, rank)

    def bounds(self, lo, hi):
        """The smallest lo and largest hi over the ranks (exact: min and max do not round)."""
        if self.comm is None:
            return lo, hi
        from mpi4py import MPI
        lo_all, hi_all = np.empty(3), np.empty(3)
        self.comm.Allreduce(np.ascontiguousarray(lo, np.float64), lo_all, op=MPI.MIN)
        self.comm.Allreduce(np.ascontiguousarray(hi, np.float64), hi_all, op=MPI.MAX)
        return lo_all, hi_all

    def merge_sums(self, engine):
        """Rank 0's engine gets every rank's exact sums (in rank order; the order cannot matter)."""
        if self.comm is None:
            return
        frames = self.comm.gather(engine.frames, root=0)
        limbs = engine.limbs
        if self.root:
            buffer = np.empty_like(limbs)
            for rank in range(1, self.size):
                self.comm.Recv(buffer, source=rank, tag=_PROGRESS_TAG + 1)
                engine.merge(buffer, frames[rank])
        else:
            self.comm.Send(np.ascontiguousarray(limbs), dest=0, tag=_PROGRESS_TAG + 1)

    def gather_rows(self, rows):
        """Rank 0 gets every rank's rows, in rank order (the blocks are in frame order); others None."""
        if self.comm is None:
            return rows
        parts = self.comm.gather(rows, root=0)
        return [row for part in parts for row in part] if self.root else None

    def frame_done(self):
        """A non-root rank tells rank 0 that it finished a frame (without waiting for rank 0)."""
        if self.comm is not None and not self.root:
            self._sent.append(self.comm.isend(1, dest=0, tag=_PROGRESS_TAG))

    def heard(self, block=False):
        """Rank 0: frames the other ranks reported since the last call (all of the pending ones)."""
        if self.comm is None or not self.root:
            return 0
        count = 0
        while self.comm.iprobe(tag=_PROGRESS_TAG) or (block and count == 0):
            count += self.comm.recv(tag=_PROGRESS_TAG)
            block = False
        self._heard += count
        return count

    def settle_progress(self, expected_others):
        """Rank 0 receives every report still in flight; the others wait until theirs are received."""
        if self.comm is None:
            return 0
        if self.root:
            count = 0
            while self._heard < expected_others:
                count += self.heard(block=True)
            return count
        from mpi4py import MPI
        MPI.Request.Waitall(self._sent)
        self._sent = []
        return 0


_OS_ERRORS = {"FileNotFoundError": FileNotFoundError, "IsADirectoryError": IsADirectoryError,
              "PermissionError": PermissionError, "OSError": OSError}


def _rebuilt(failure, rank):
    """Another rank's exception, rebuilt on this one: the same espgrid type, its message named by rank."""
    kind, message, file, line, errno_, filename, strerror = failure
    text = f"rank {rank}: {message}"
    if kind == "InputError":
        error = espgrid.InputError(text)
        error.file, error.line = file or "", line or 0
        return error
    if kind == "UsageError":
        return espgrid.UsageError(text)
    if kind == "KeyboardInterrupt":
        return KeyboardInterrupt(text)
    if kind in _OS_ERRORS and strerror:
        return _OS_ERRORS[kind](errno_, strerror, filename)
    return espgrid.Error(text)


def world(comm=None):
    """The Ranks of this run: `comm` (an mpi4py communicator) if given; False: none; None: MPI's
    COMM_WORLD when an MPI launcher started several ranks (mpi4py needed then), else none."""
    if comm is False:
        return Ranks(None)
    if comm is None:
        if launched_ranks() <= 1:
            return Ranks(None)
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise espgrid.Error(f"started as one of {launched_ranks()} MPI ranks, but mpi4py is missing "
                                "(Debian: apt-get install python3-mpi4py)") from e
        comm = MPI.COMM_WORLD
    return Ranks(comm if comm.Get_size() > 1 else None)


def rank_device(ranks, options, devices):
    """Under MPI with no device named, each rank takes a GPU of its host in turn (its rank among the
    host's ranks modulo the host's usable GPUs), so `mpirun -np 2` on a 2-GPU host uses both; None
    where there is no GPU, one rank, or a device was named."""
    if ranks.comm is None or devices is not None or options.get("device") is not None:
        return devices
    found, _ = _espgrid.usable_devices()
    return [found[ranks.local_rank % len(found)]] if found else None


def device_list(devices):
    """The GPUs to deal frames to: "all", "N,N,...", a sequence of numbers, or None (none named).
    An Error when "all" finds none."""
    if devices is None:
        return None
    if isinstance(devices, str):
        if devices.strip() == "all":
            found, reason = _espgrid.usable_devices()
            if not found:
                raise espgrid.Error(f"devices='all': {reason}")
            return list(found)
        try:
            devices = [int(d) for d in devices.split(",")]
        except ValueError:
            raise espgrid.UsageError(f"devices expects all or device numbers N,N,..., got {devices!r}") from None
    devices = [int(d) for d in devices]
    if not devices or any(d < 0 for d in devices):
        raise espgrid.UsageError("devices expects all or device numbers N,N,...")
    return devices


class Progress:
    """One report for the whole run, on rank 0: a tqdm bar (or plain lines where tqdm is missing)
    with the rate and the time left, or the caller's progress(done, total)."""

    def __init__(self, enabled, total, ranks, own):
        self.total, self.done, self.ranks, self.own = total, 0, ranks, own  # own: rank 0's frames
        self.callback = enabled if callable(enabled) else None
        self.began = time.perf_counter()
        self.bar = None
        if not ranks.root or self.callback is not None:
            return
        if enabled is None:
            enabled = sys.stderr.isatty()
        if not enabled:
            return
        try:
            from tqdm import tqdm
            self.bar = tqdm(total=total, unit="frame", desc="espgrid", file=sys.stderr)
        except ImportError:
            self.bar = _PlainBar(total, self.began)

    def advance(self, count=1):
        """This rank finished `count` frames (rank 0 also counts what the others reported)."""
        if not self.ranks.root:
            self.ranks.frame_done()
            return
        self._add(count + self.ranks.heard())

    def _add(self, count):
        if count <= 0:
            return
        self.done += count
        if self.bar is not None:
            self.bar.update(count)
        if self.callback is not None:
            for k in range(self.done - count + 1, self.done + 1):
                self.callback(k, self.total)

    def settle(self):
        """Every rank's reports received (rank 0) or delivered (the others)."""
        others = self.total - self.own
        if self.ranks.root:
            self._add(self.ranks.settle_progress(others))
        else:
            self.ranks.settle_progress(0)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class _PlainBar:
    """Progress lines on stderr without tqdm: frames, rate and the time left."""

    def __init__(self, total, began):
        self.n, self.total, self.began = 0, total, began

    def update(self, k):
        self.n += k
        elapsed = time.perf_counter() - self.began
        rate = self.n / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.n) / rate if rate > 0 else float("nan")
        sys.stderr.write(f"\respgrid: frame {self.n}/{self.total}, {rate:.3g} frames/s, about {left:.0f} s left")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")


# ---- the run: every selected frame once, maps and energies, on this rank's block --------------------

class FrameRun:
    """What run_frames returns on rank 0 (None on the others): `average` (a TrajectoryAverage or
    None) and `energies` (an EnergySeries or None)."""

    def __init__(self, average, energies):
        self.average, self.energies = average, energies


def _guarded(ranks, step):
    """step() on this rank, then every rank learns whether any failed (Ranks.agree)."""
    result, error = None, None
    try:
        result = step()
    except (Exception, KeyboardInterrupt) as e:  # every rank must reach agree(), whatever failed
        error = e
    ranks.agree(error)
    return result


class _Setup:
    """Everything a rank needs before its frames: the atoms, frames, options, radii, energies."""


def _prepare(t, topology, trajectory, select, start, stop, step, grid, unwrap, radii, maps, energies, binding,
             energy_units, devices, options, ranks):
    from espgrid import frame_energy
    from espgrid.radii import assign_radii
    s = _Setup()
    if step == 0:
        raise espgrid.UsageError("step=0: step takes every STEP-th frame, a whole number other than 0")
    s.universe, s.group, s.charges, s.name = t._atom_group(topology, trajectory, select)
    s.frames = range(s.universe.trajectory.n_frames)[slice(start, stop, step)]
    if len(s.frames) == 0:
        raise espgrid.UsageError(f"no frames selected from {s.name} ({s.universe.trajectory.n_frames} frames, "
                                 f"start={start}, stop={stop}, step={step})")
    s.mine = ranks.block(s.frames)
    with t._quiet_mdanalysis():
        s.universe.trajectory[s.frames[0]]
    t._check_unwrap(s.group, unwrap, s.name, f"frame {s.frames[0]}", stacklevel=0)
    s.devices = device_list(rank_device(ranks, options, devices))
    s.model = espgrid.map_options(**_energy_options(options)).model  # the physics options checked early
    s.pb = s.model == "pb"
    s.radii = None
    if s.pb:
        s.radii = assign_radii(s.group, radii)
    elif radii is not None:
        raise espgrid.UsageError("radii are for model='pb' (the pair models take charges only)")
    s.energies = s.parts = None
    s.wants_energies = bool(energies or binding is not None)
    if s.wants_energies:
        frame_energy.kt_in(energy_units, 298.15)  # the unit checked before any frame is read
        if binding is not None:
            if len(binding) != 2:
                raise espgrid.UsageError("binding takes two selections (the two parts of the complex)")
            s.parts = [_select(s.universe, b, s.name) for b in binding]
        if not s.pb:
            s.energies = frame_energy.PairEnergies(espgrid.map_options(**_energy_options(options)), s.group, s.parts)
    return s


def _energy_options(options):
    """The Physics (and thread) options of a map job, for the pair energies: no grid needed."""
    return {k: v for k, v in options.items() if k not in ("spacing", "padding", "origin", "dims", "devices", "device",
                                                          "kernel", "backend", "accuracy")}


def _select(universe, selection, name):
    try:
        group = universe.select_atoms(selection)
    except Exception as e:  # SelectionError, and ValueError/TypeError for malformed selections
        raise espgrid.UsageError(f"selection {selection!r} is not one MDAnalysis understands: {e}") from e
    if len(group) == 0:
        raise espgrid.UsageError(f"selection {selection!r} matches no atoms of {name}")
    return group


def _grid(t, s, grid, unwrap, options, ranks):
    """The grid every rank uses: given, or the selected atoms' box over all frames (each rank scans its
    block; the boxes meet exactly), plus padding."""
    if grid is not None or options.get("origin") is not None or options.get("dims") is not None:
        if grid is not None:
            options = espgrid._with_grid(grid, options)
        return espgrid.map_options(**options).explicit_grid, options

    def scan():
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        if len(s.mine):
            for _ in t._frames(s.universe, s.mine.start, s.mine.stop, s.mine.step, s.name, s.mine):
                xyz = t._positions(s.group, unwrap)
                lo, hi = np.minimum(lo, xyz.min(axis=0)), np.maximum(hi, xyz.max(axis=0))
        return lo, hi

    lo, hi = _guarded(ranks, scan)
    lo, hi = ranks.bounds(lo, hi)
    placed = espgrid.grid_around(np.array([lo, hi], dtype=np.float64), **options)
    options = espgrid._with_grid(placed, {k: v for k, v in options.items() if k not in ("spacing", "padding")})
    return espgrid.map_options(**options).explicit_grid, options


# Frames in flight on one GPU: a second accumulator (its own session and worker thread) prepares
# and launches its frame while the first one's kernel runs, so the device never waits for the host
# between frames. Measured on an H200 (2026-11-27, benchmarks/trajectory_rate.py, 3,341 atoms at
# 1 Å, cuda-dualpipe): 827-916 frames/s with one, 1,334 with two, 1,285 with three.
FRAMES_IN_FLIGHT_PER_GPU = 2
# PB frames spend more of each frame on their host thread (the boundary's sums, the solve's
# preparation, waits between the pipeline's phases), so more of them in flight keep the device
# busy. One H200, 2026-11-28 (benchmarks/results/pb-frames-engines-2026-11-28/), frames/s with
# 2 / 3 / 4 in flight: 3,341 atoms 176-185 / 221-223 / 236-237, the actin dimer 86-92 / 107-113 /
# 116-118, 44,016 atoms 28.7-29.2 / 31.9-32.1 / 35.7-35.8. Each holds its own device buffers
# (pb_memory: at most PB_DEVICE_BYTES_PER_POINT a grid point), so no more are made than half the
# device's free memory holds; never fewer than one.
PB_FRAMES_IN_FLIGHT_PER_GPU = 4
PB_DEVICE_BYTES_PER_POINT = 64


def frames_in_flight(job):
    """Accumulators for one GPU: FRAMES_IN_FLIGHT_PER_GPU for the pair models; for PB,
    PB_FRAMES_IN_FLIGHT_PER_GPU as far as half of `job`'s device's free memory holds them."""
    if job.model != "pb":
        return FRAMES_IN_FLIGHT_PER_GPU
    points = int(np.prod([int(d) for d in job.explicit_grid.dims]))
    free, _total = _espgrid.device_memory(job.device)
    return max(1, min(PB_FRAMES_IN_FLIGHT_PER_GPU, free // 2 // (PB_DEVICE_BYTES_PER_POINT * points)))


def _engines(s, options, std, source):
    """The accumulators: frames_in_flight() per device for CUDA kernels (one per device, or on the
    job's own device), one on the CPU; kernels chosen before any frame. Frames are dealt to them
    in turn, the devices interleaved; their exact sums merge into the same bits in any order."""
    radii = None if s.radii is None else s.radii.radii
    jobs = [espgrid.map_options(**(dict(options, device=d) if d is not None else options))
            for d in (s.devices or [None])]
    first = [_espgrid.FrameAverage(job, job.explicit_grid, s.charges, std, source, radii) for job in jobs]
    if not first[0].kernel.startswith("cuda"):
        return first
    in_flight = [frames_in_flight(job) for job in jobs]
    more = [_espgrid.FrameAverage(job, job.explicit_grid, s.charges, std, source, radii)
            for extra in range(1, max(in_flight)) for job, n in zip(jobs, in_flight) if extra < n]
    return first + more


def run_frames(topology, trajectory=None, *, select="all", start=None, stop=None, step=None, std=False, grid=None,
               progress=None, unwrap=None, radii=None, maps=True, energies=False, binding=None,
               energy_units="kJ/mol", devices=None, comm=None, **options):
    """Every selected frame once, on this rank's block: the maps' mean (and deviation) and the
    energies per frame. See espgrid.trajectory.average_map and frame_energies for the arguments."""
    from espgrid import frame_energy
    from espgrid import trajectory as t
    from espgrid.frame_energy import EnergySeries, kt_in
    ranks = world(comm)
    quiet = None
    if not ranks.root:  # warnings and notes once, from rank 0
        import warnings
        quiet = warnings.catch_warnings()
        quiet.__enter__()
        warnings.simplefilter("ignore")
    try:
        s = _guarded(ranks, lambda: _prepare(t, topology, trajectory, select, start, stop, step, grid, unwrap, radii,
                                             maps, energies, binding, energy_units, devices, options, ranks))
        engines, rows = [], []
        if maps or (s.pb and s.wants_energies):  # PB energies: on the maps' grid
            explicit, options = _grid(t, s, grid, unwrap, dict(options), ranks)
        if s.pb and s.wants_energies:
            s.energies = _guarded(ranks, lambda: frame_energy.PbEnergies(espgrid.map_options(**options), s.group,
                                                                       s.radii, s.parts, radii))
        if maps:
            selection = ("" if select in (None, "all") else f", selection {select!r}") + \
                (", molecules made whole" if unwrap else "") + \
                (f", radii: {s.radii.description}" if s.radii is not None else "")
            source = _espgrid.describe_source(
                f"{s.name}{selection}, frames {s.frames.start}:{s.frames.stop}:{s.frames.step}",
                _espgrid.structure_from_arrays(s.group.positions.astype(np.float64), s.charges))
            engines = _guarded(ranks, lambda: _engines(s, options, std, source))
        bar = Progress(progress, len(s.frames), ranks, len(ranks.block(range(len(s.frames)))))
        began = time.perf_counter()

        def loop():
            try:
                if len(s.mine):
                    frames = t._frames(s.universe, s.mine.start, s.mine.stop, s.mine.step, s.name, s.mine)
                    for i, ts in enumerate(frames):
                        frame = s.universe.trajectory.frame
                        if engines:
                            engines[i % len(engines)].add_frame(t._positions(s.group, unwrap), f"frame {frame}")
                        if s.energies is not None:
                            xyz = t._positions(s.energies.groups[0], unwrap)
                            rows.append((frame, float(ts.time), s.energies.values(xyz)))
                        bar.advance()
                for engine in engines:
                    engine.finish()
                for engine in engines[1:]:  # the devices' sums into the first (exact: any order)
                    engines[0].merge(engine.limbs, engine.frames)
            except BaseException:
                bar.close()
                raise

        _guarded(ranks, loop)
        bar.settle()
        bar.close()
        seconds = time.perf_counter() - began
        kernel_seconds = ranks.gather_rows([sum(e.kernel_seconds for e in engines)])
        if engines:
            ranks.merge_sums(engines[0])
        gathered = ranks.gather_rows(rows)
        if not ranks.root:
            return None
        average = energy_series = None
        if engines:
            first = engines[0]
            average = t.TrajectoryAverage(first.mean(), first.deviation() if std else None, list(s.frames),
                                          len(s.group), first.kernel, seconds)
            average.radii = s.radii.description if s.radii is not None else None
            average.solve = first.last_solve or None
            average.kernel_seconds = sum(kernel_seconds)  # every rank's and device's
            average.ranks, average.devices = ranks.size, (s.devices or [])
        if s.energies is not None:
            scale = kt_in(energy_units, _temperature(options))
            values = np.array([r[2] for r in gathered], dtype=np.float64).reshape(len(gathered), -1) * scale
            energy_series = EnergySeries([r[0] for r in gathered], [r[1] for r in gathered],
                                         {name: values[:, k] for k, name in enumerate(s.energies.names)}, energy_units,
                                         f"{s.energies.what}, model {s.model}")
        return FrameRun(average, energy_series)
    finally:
        if quiet is not None:
            quiet.__exit__(None, None, None)


def _temperature(options):
    """The temperature (K) of the options, as `espgrid map` reads it (default 298.15)."""
    value = options.get("temperature")
    return 298.15 if value is None else float(value)
