"""What a new user hit (issue 34), each checked through the program or the module as they met it.

PB maps read back as PB; maps espgrid did not compute converted without a model claimed;
--model in any case, and its error listing pb; --center/--length (APBS's gcent/glen); the PB
notices (a box too tight for its boundary values, XYZ input drawn with Bondi's radii);
--surface-window taken with smol; `espgrid atoms x | head` saying its error once; the periodic
box warning with a triclinic box's angles.
"""

import json
import os
import subprocess
import warnings

import numpy as np
import pytest

import espgrid
import espgrid.trajectory
from conftest import ESPGRID, ROOT, run_cli

FAS = os.path.join(ROOT, "data", "fasciculin2.pqr")
XYZ = os.path.join(ROOT, "data", "acetazolamide.xyz")
APBS_MAP = os.path.join(ROOT, "tests", "data", "pb", "fasciculin2_smol_I0.15.dx")  # APBS 3.4.1's


def summary(tmp_path, *args):
    """`espgrid map FAS ... --json` run to success: its JSON summary and stderr."""
    out = tmp_path / "s.json"
    r = run_cli("map", *args, "--json", out)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r.stderr


def test_model_names_in_any_case_and_the_error_lists_pb(tmp_path):
    s, _ = summary(tmp_path, FAS, "-o", tmp_path / "pb.dx", "--model", "PB", "--spacing", "2")
    assert s["model"] == "pb"
    s, _ = summary(tmp_path, FAS, "-o", tmp_path / "d.dx", "--model", "Debye", "--spacing", "2")
    assert s["model"] == "debye"
    r = run_cli("map", FAS, "-o", tmp_path / "x.dx", "--model", "nope")
    assert r.returncode == 2 and "--model takes coulomb, distance, debye or pb, got 'nope'" in r.stderr
    assert not (tmp_path / "x.dx").exists()


def test_a_pb_map_read_back_is_a_pb_map(tmp_path):
    run_cli("map", FAS, "-o", tmp_path / "pb.dx", "--model", "pb", "--spacing", "2", "-o", tmp_path / "pb.vti")
    for name in ("pb.dx", "pb.vti"):
        phi = espgrid.read_map(str(tmp_path / name))
        assert phi.model == "pb", (name, repr(phi))
        assert "model='pb'" in repr(phi) and "cpu-simd" not in repr(phi), repr(phi)


def test_maps_espgrid_did_not_compute_are_converted_without_a_model(tmp_path):
    # APBS's map says kT/e and nothing of its physics: converted without --units, no model claimed.
    r = run_cli("convert", APBS_MAP, "-o", tmp_path / "a.dx", "-o", tmp_path / "a.mrc")
    assert r.returncode == 0, r.stderr
    assert "not computed by espgrid (APBS); values in kT/e, model and medium unknown" in r.stdout
    header = (tmp_path / "a.dx").read_text()[:600]
    assert "not computed by espgrid (APBS)" in header and "values in kT/e" in header
    assert "Coulomb" not in header and "dielectric" not in header
    phi = espgrid.read_map(APBS_MAP)
    assert phi.model is None and phi.units == "kT/e"
    # A map saying no unit (a density) is converted with its unit unsaid, or the unit --units names.
    density = tmp_path / "density.dx"
    density.write_text("object 1 class gridpositions counts 2 2 2\norigin 0 0 0\ndelta 1 0 0\ndelta 0 1 0\n"
                       "delta 0 0 1\nobject 2 class gridconnections counts 2 2 2\n"
                       "object 3 class array type double rank 0 items 8 data follows\n1 2 3 4 5 6 7 8\n")
    r = run_cli("convert", density, "-o", tmp_path / "d.dx")
    assert r.returncode == 0 and "values in an unknown unit" in (tmp_path / "d.dx").read_text()[:400], r.stderr
    r = run_cli("convert", density, "-o", tmp_path / "v.dx", "--units", "V")
    assert r.returncode == 0 and "values in V" in (tmp_path / "v.dx").read_text()[:400], r.stderr
    # A unit that contradicts the file's is an error, and nothing is written.
    r = run_cli("convert", APBS_MAP, "-o", tmp_path / "bad.dx", "--units", "V")
    assert r.returncode == 2 and "says its unit is kT/e, not V" in r.stderr
    assert not (tmp_path / "bad.dx").exists()
    # The values are carried as read.
    np.testing.assert_array_equal(espgrid.read_map(str(tmp_path / "a.mrc"), units="kT/e").values, phi.values)


def test_a_converted_map_converts_again_as_what_it_is(tmp_path):
    # Each format's note on a foreign map ("not computed by espgrid (APBS)", "values in kT/e") is
    # read back: a second conversion, in any format, names APBS and kT/e and claims no physics.
    for first in ("dx", "mrc", "vti"):
        for second in ("dx", "mrc", "vti"):
            once, twice = tmp_path / f"once.{first}", tmp_path / f"twice-{first}.{second}"
            assert run_cli("convert", APBS_MAP, "-o", once).returncode == 0
            r = run_cli("convert", once, "-o", twice)
            assert r.returncode == 0, r.stderr
            assert "not computed by espgrid (APBS); values in kT/e" in r.stdout, (first, second, r.stdout)
            phi = espgrid.read_map(str(twice))
            assert phi.model is None and phi.units == "kT/e", (first, second, repr(phi))
    # A map of unknown unit stays unknown: converting it again claims none (--units still names one).
    density = tmp_path / "density.dx"
    density.write_text("object 1 class gridpositions counts 2 2 2\norigin 0 0 0\ndelta 1 0 0\ndelta 0 1 0\n"
                       "delta 0 0 1\nobject 2 class gridconnections counts 2 2 2\n"
                       "object 3 class array type double rank 0 items 8 data follows\n1 2 3 4 5 6 7 8\n")
    assert run_cli("convert", density, "-o", tmp_path / "d.mrc").returncode == 0
    r = run_cli("convert", tmp_path / "d.mrc", "-o", tmp_path / "d2.vti")
    assert r.returncode == 0 and "values in an unknown unit" in r.stdout, r.stdout
    r = run_cli("convert", tmp_path / "d2.vti", "-o", tmp_path / "d3.dx", "--units", "V")
    assert r.returncode == 0 and "values in V" in (tmp_path / "d3.dx").read_text()[:400], r.stderr


def test_center_and_length_place_the_grid_as_apbs_gcent_and_glen(tmp_path):
    s, _ = summary(tmp_path, FAS, "-o", tmp_path / "c.dx", "--center", "1,2,3", "--length", "10,7,4.1",
                   "--spacing", "0.5")
    # The fewest points whose extent reaches each length: 10/0.5 + 1, 7/0.5 + 1, ceil(4.1/0.5) + 1.
    assert s["shape"] == [21, 15, 10]
    centre = np.add(s["origin"], 0.5 * np.multiply(s["spacing"], np.subtract(s["shape"], 1)))
    np.testing.assert_allclose(centre, [1, 2, 3], atol=1e-9)
    # --length alone: centred on the atoms' box.
    fas = espgrid.read_structure(FAS)
    s, _ = summary(tmp_path, FAS, "-o", tmp_path / "l.dx", "--length", "20", "--spacing", "1")
    box_centre = 0.5 * (fas.positions.min(0) + fas.positions.max(0))
    centre = np.add(s["origin"], 0.5 * np.multiply(s["spacing"], np.subtract(s["shape"], 1)))
    np.testing.assert_allclose(centre, box_centre, atol=1e-6)
    assert s["shape"] == [21, 21, 21]
    for extra, message in ((["--length", "20", "--padding", "3"], "give one of them"),
                           (["--center", "0,0,0", "--origin", "0,0,0", "--dims", "3,3,3"], "give one or the other"),
                           (["--length", "0"], "--length along x must be a positive number")):
        r = run_cli("map", FAS, "-o", tmp_path / "bad.dx", *extra)
        assert r.returncode == 2 and message in r.stderr, (extra, r.stderr)
        assert not (tmp_path / "bad.dx").exists()
    # The same in Python.
    phi = espgrid.compute_map(fas, center=(1, 2, 3), length=10, spacing=1.0)
    assert phi.shape == (11, 11, 11)
    np.testing.assert_allclose(phi.origin, (-4, -3, -2))


def test_pb_says_when_the_box_is_too_tight_and_when_radii_come_from_a_table(tmp_path):
    _, err = summary(tmp_path, FAS, "-o", tmp_path / "t.dx", "--model", "pb", "--spacing", "1", "--padding", "3")
    assert "an atom lies 3.0 Å from the grid's face" in err and "--padding 10 or more" in err, err
    _, err = summary(tmp_path, FAS, "-o", tmp_path / "d.dx", "--model", "pb", "--spacing", "2")
    assert "from the grid's face" not in err, err  # the default padding, 10 Å
    _, err = summary(tmp_path, XYZ, "-o", tmp_path / "x.dx", "--model", "pb", "--spacing", "1")
    assert "is an XYZ file, which has no radii: the molecular surface is drawn with Bondi's radii" in err, err
    # An element without a Bondi radius is refused rather than given carbon's.
    odd = tmp_path / "odd.xyz"
    odd.write_text("2\n\nC 0 0 0 0.5\nEu 3 0 0 -0.5\n")
    r = run_cli("map", odd, "-o", tmp_path / "o.dx", "--model", "pb", "--spacing", "1")
    assert r.returncode == 2 and "Bondi's table has no radius for its atom 2 (Eu)" in r.stderr, r.stderr
    assert not (tmp_path / "o.dx").exists()


def test_surface_window_is_taken_with_smol_as_apbs_takes_swin(tmp_path):
    a, _ = summary(tmp_path, FAS, "-o", tmp_path / "a.dx", "--model", "pb", "--spacing", "2")
    b, _ = summary(tmp_path, FAS, "-o", tmp_path / "b.dx", "--model", "pb", "--spacing", "2", "--surface",
                   "smol", "--surface-window", "0.3")
    assert a["range"] == b["range"]  # taken and not used, as by APBS


def test_a_closed_pipe_is_said_once(tmp_path):
    # `espgrid atoms x | head -1`, the reader gone before the first write (as a pipe whose reader
    # has gone: closed here before espgrid starts, so the outcome does not depend on timing).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run([ESPGRID, "atoms", FAS], stdout=write_end, stderr=subprocess.PIPE, text=True,
                           timeout=120)
    finally:
        os.close(write_end)
    assert r.returncode == 1
    lines = [line for line in r.stderr.splitlines() if line.startswith("espgrid:")]
    assert lines == ["espgrid: error: cannot write the atoms to standard output: Broken pipe"], r.stderr


def test_the_periodic_box_warning_gives_a_triclinic_boxs_angles():
    mda = pytest.importorskip("MDAnalysis")
    universe = mda.Universe.empty(2, trajectory=True)
    universe.add_TopologyAttr("charges", [1.0, -1.0])
    universe.atoms.positions = np.array([[1.0, 1.0, 1.0], [2.0, 1.0, 1.0]])
    universe.dimensions = [20, 21, 22, 60, 70, 80]
    with pytest.warns(espgrid.trajectory.PeriodicBoxWarning, match=r"box 20 x 21 x 22 Å, angles 60, 70, 80°"):
        espgrid.compute_map(universe.atoms, spacing=2.0)
    universe.dimensions = [20, 21, 22, 90, 90, 90]
    with pytest.warns(espgrid.trajectory.PeriodicBoxWarning, match=r"box 20 x 21 x 22 Å\)"):
        espgrid.compute_map(universe.atoms, spacing=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        espgrid.compute_map(universe.atoms, spacing=2.0, unwrap=False)


def test_a_cpu_pb_map_uses_the_threads_it_was_given():
    # threads=1 on the CPU: no OpenMP loop of the PB solve may start a team of its own (libgomp keeps
    # a team's threads for the process's life, so any loop that ignored the count leaves workers
    # behind: a --threads 2 run showed 17 threads on a 16-core host, 2026-11-28). In a fresh process,
    # its threads counted after the import and after the map.
    # Threads that end (the boundary's std::async) may linger in /proc for an instant: the count is
    # read until it is back, for up to 2 s; libgomp's idle workers stay for good.
    script = f"""
import os, time, espgrid
count = lambda: len(os.listdir('/proc/self/task'))
before = count()
phi = espgrid.compute_map({FAS!r}, model='pb', backend='cpu', spacing=1.5, threads=1)
for _ in range(20):
    if count() <= before:
        break
    time.sleep(0.1)
print(before, count(), phi.values.shape)
"""
    if os.cpu_count() < 2:
        pytest.skip("one core: a loop that ignored threads=1 would start no more threads either")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run(["/usr/bin/python3", "-c", script], env=env, capture_output=True, text=True, check=True)
    before, after = (int(v) for v in out.stdout.split()[:2])
    assert after == before, f"{after - before} threads more after a threads=1 PB map ({out.stdout.strip()})"
