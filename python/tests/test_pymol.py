"""The PyMOL command (python/espgrid/pymol.py) in Debian's PyMOL, headless (`pymol -cq`).

PyMOL runs a script that loads a structure, imports espgrid.pymol and runs `espgrid OBJECT`; the
test then checks that the map and ramp objects exist and that PyMOL's map is espgrid's, that the
surface's colours follow the potential's sign (the POV-Ray scene PyMOL exports holds each
surface vertex's colour: red where the map is negative, blue where positive), and that a
ray-traced PNG shows both colours. Skips where PyMOL (pymol, python3-pymol), pdb2pqr30 or Open
Babel is not installed: scripts/install-deps.sh --interop installs them.
"""

import json
import os
import pickle
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import espgrid
from conftest import ROOT

TUTORIAL = "/usr/share/pymol/data/tut/1hpv.pdb"  # Debian pymol-data: HIV protease with amprenavir
FIXTURE = os.path.join(ROOT, "tests", "data", "ligand_complex.pdb")  # where pymol-data is missing
PQR = os.path.join(ROOT, "data", "fasciculin2.pqr")

SCRIPT = r'''
import json, pickle, sys, time
from pymol import cmd
out = sys.argv[1]
cmd.load(sys.argv[2], "mol")
start = time.monotonic()
import espgrid.pymol
cmd.do("espgrid mol" + sys.argv[3])
seconds = time.monotonic() - start
names = cmd.get_names("all")
field = cmd.get_volume_field("mol_esp")
result = {"names": names, "seconds": seconds, "extent": cmd.get_extent("mol_esp"), "view": list(cmd.get_view()),
          "field_shape": list(map(int, __import__("numpy").shape(field)))}
__import__("numpy").save(out + "/field.npy", __import__("numpy").asarray(field))
cmd.hide("everything")
cmd.show("surface", "mol and not solvent")
cmd.disable("mol_esp_ramp")  # the colour bar would put both colours in any picture
head, body = cmd.get_povray()
open(out + "/scene.pov", "w").write(head + body)
cmd.png(out + "/surface.png", width=320, height=240, ray=1)
pickle.dump(list(espgrid.pymol._charged.values()), open(out + "/charged.pkl", "wb"))  # what pdb2pqr charged
json.dump(result, open(out + "/result.json", "w"))
'''


def require(condition, what):
    if not condition:
        pytest.skip(what + " is not installed (scripts/install-deps.sh --interop installs it)")


def run_pymol(tmp_path, structure, arguments=""):
    require(shutil.which("pymol"), "PyMOL (Debian pymol)")
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    # Debian's pymol wrapper runs `python3` from the PATH: Debian's, where python3-pymol lives.
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p and os.path.isdir(os.path.join(p, "espgrid"))))
    r = subprocess.run(["pymol", "-cq", str(script), "--", str(tmp_path), structure, arguments], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0 and (tmp_path / "result.json").exists(), r.stdout
    return json.loads((tmp_path / "result.json").read_text()), r.stdout


def surface_vertices(pov_text, view):
    """Each surface vertex of PyMOL's POV-Ray scene, in the model's coordinates, with its normal
    and colour. PyMOL writes camera coordinates: x_camera = R (x − origin) + camera offset."""
    number = r"(-?[\d.]+)"
    vector = r"<" + number + "," + number + "," + number + ">"
    vertices, normals, colours = [], [], []
    pattern = r"mesh2 \{ vertex_vectors \{ 3, (.*?)\}\s*normal_vectors \{ 3,(.*?)\}\s*texture_list \{ 3,(.*?)\} \}"
    for m in re.finditer(pattern, pov_text, re.S):
        vertices += re.findall(vector, m.group(1))
        normals += re.findall(vector, m.group(2))
        colours += re.findall(r"rgb<" + number + "," + number + "," + number + ">", m.group(3))
    v, n, c = (np.array(a, dtype=float) for a in (vertices, normals, colours))
    rotation = np.array(view[:9]).reshape(3, 3)  # column-major: rows here are PyMOL's columns
    camera, origin = np.array(view[9:12]), np.array(view[12:15])
    return (v - camera) @ rotation.T + origin, n @ rotation.T, c


def check_colours_follow_the_sign(result, tmp_path, phi):
    x, n, c = surface_vertices((tmp_path / "scene.pov").read_text(), result["view"])
    assert len(x) > 1000, "no surface in the scene"
    # surface_ramp_above_mode: PyMOL colours a vertex by the map one solvent radius (1.4 Å) out.
    points = x + 1.4 * n
    lo = np.array(phi.origin)
    hi = lo + np.array(phi.spacing) * (np.array(phi.shape) - 1)
    inside = np.all((points >= lo) & (points <= hi), axis=1)
    values = phi.sample(points[inside])
    redness = c[inside, 0] - c[inside, 2]  # red − blue: > 0 red (negative), < 0 blue (positive)
    # Vertices where the sign is clear: |φ| > 1 kT/e (a fifth of the ramp) and a visible tint.
    clear = (np.abs(values) > 1.0) & (np.abs(redness) > 0.02)
    assert clear.sum() > 500, clear.sum()
    agree = np.mean(np.sign(values[clear]) == -np.sign(redness[clear]))
    assert agree >= 0.99, agree  # measured 1.000 on 1HPV (8,712 vertices)
    return clear.sum(), agree


def check_png_has_both_colours(path):
    import matplotlib.image
    rgb = matplotlib.image.imread(str(path))[..., :3].astype(float)
    red = (rgb[..., 0] - rgb[..., 2] > 0.15).sum()
    blue = (rgb[..., 2] - rgb[..., 0] > 0.15).sum()
    assert red > 100 and blue > 100, (red, blue)


@pytest.fixture(scope="module")
def pdb_input():
    require(shutil.which("pdb2pqr30"), "pdb2pqr30 (Debian pdb2pqr)")
    try:
        from openbabel import openbabel  # noqa: F401
    except ImportError:
        pytest.skip("python3-openbabel is not installed (scripts/install-deps.sh installs it)")
    return TUTORIAL if os.path.exists(TUTORIAL) else FIXTURE


def test_espgrid_colours_the_surface_of_a_pdb_by_its_potential(tmp_path, pdb_input):
    result, log = run_pymol(tmp_path, pdb_input)
    assert {"mol", "mol_esp", "mol_esp_ramp"} <= set(result["names"]), result["names"]
    # The charges as `espgrid map` assigns them, the ligand charged (the summary says how).
    assert "ligand    478 200: Open Babel" in log, log
    [used] = pickle.loads((tmp_path / "charged.pkl").read_bytes())
    # The charges are those `espgrid map` assigns the file: the same atoms and charges, but for the
    # hydrogens Open Babel adds to the drug, whose placement follows the order PyMOL writes its atoms
    # in (1HPV: a hydroxyl hydrogen turned 0.97 Å away), so they are compared as the drug's totals.
    structure = espgrid.read_structure(pdb_input)
    assert len(used) == len(structure)
    drug = [np.array(s.residue_names) == "478" for s in (used, structure)]
    assert drug[0].sum() == drug[1].sum() == 70
    assert used.charges[drug[0]].sum() == pytest.approx(structure.charges[drug[1]].sum(), abs=1e-9)

    def rows(s, keep):
        return sorted(zip(*np.round(s.positions[keep], 3).T, s.charges[keep], s.radii[keep]))
    assert rows(used, ~drug[0]) == rows(structure, ~drug[1])
    phi = espgrid.compute_map(used, model="debye", dielectric=78.54, ionic_strength=0.15, spacing=1.0, padding=6.0)
    # PyMOL's map object is espgrid's map: same extent, same values.
    np.testing.assert_allclose(result["extent"], [phi.origin, np.add(phi.origin, np.multiply(phi.spacing,
                                                                                                np.subtract(phi.shape, 1)))])
    np.testing.assert_allclose(np.load(tmp_path / "field.npy"), phi.values, rtol=1e-6, atol=1e-6)
    check_colours_follow_the_sign(result, tmp_path, phi)
    check_png_has_both_colours(tmp_path / "surface.png")
    print("espgrid in PyMOL: %.2f s for %s (this machine, now)" % (result["seconds"], pdb_input))


def test_a_pqr_objects_own_charges_and_pb_with_isosurfaces(tmp_path):
    result, log = run_pymol(tmp_path, PQR, ", pb, 1.0, isosurfaces=1")
    assert {"mol_esp", "mol_esp_ramp", "mol_esp_neg", "mol_esp_pos"} <= set(result["names"]), result["names"]
    assert "charges: the object's own partial charges" in log, log
    structure = espgrid.read_structure(PQR)
    phi = espgrid.compute_map(structure, model="pb", spacing=1.0, padding=10.0)  # pb: 10 Å
    # PyMOL keeps the PQR's charges and radii to its own precision (float32): the same map to the
    # solver's tolerance (1e-6 relative residual) times the charges' rounding.
    field = np.load(tmp_path / "field.npy")
    assert np.max(np.abs(field - phi.values)) <= 1e-3 * np.max(np.abs(phi.values))
    check_colours_follow_the_sign(result, tmp_path, phi)


def test_bad_arguments_are_pymol_errors(tmp_path):
    require(shutil.which("pymol"), "PyMOL (Debian pymol)")
    script = tmp_path / "bad.py"
    script.write_text(
        "from pymol import cmd\n"
        "import espgrid.pymol\n"
        "cmd.load(%r, 'mol')\n"
        "for args in (('nothing',), ('mol', 'nomodel'), ('mol', 'debye', '', '5', '0', '', 'forcefield=CHARMM')):\n"
        "    try:\n"
        "        espgrid.pymol.espgrid_command(*args)\n"
        "    except Exception as e:\n"
        "        print('REFUSED', type(e).__name__, e)\n" % PQR)
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p and os.path.isdir(os.path.join(p, "espgrid"))))
    r = subprocess.run(["pymol", "-cq", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    refused = [line for line in r.stdout.splitlines() if line.startswith("REFUSED")]
    assert len(refused) == 3, r.stdout
    assert "is not a loaded molecular object" in refused[0]
    assert "--model takes coulomb, distance, debye or pb, got 'nomodel'" in refused[1]
    assert "has its own charges" in refused[2]
