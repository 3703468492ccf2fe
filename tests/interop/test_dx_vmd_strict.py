#!/usr/bin/python3
"""Our .dx passes a strict reader that follows VMD's dxplugin rules, and its values equal the .vti's.

No outside client: VMD is not packaged for Debian, so its reading rules (dxplugin.C of the VMD
molfile plugins) are written out in common.read_dx_strict. The .vti is read with VTK's own
vtkXMLImageDataReader (python3-vtk9) when it is installed; otherwise only the range espgrid prints
is compared.
"""

import os
import sys

try:
    import numpy as np
except ImportError:  # numpy is part of the client stack here (python3-numpy): skip, never fail
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CASES = common.CASES + [
    ("crlf_tabs", "tests/data/pqr_crlf_tabs.pqr", ["--spacing", "1", "--padding", "3"]),
    ("xyz_plain", "tests/data/xyz_plain.xyz", ["--spacing", "0.5", "--padding", "2"]),
    ("xyz_extended", "tests/data/xyz_extended_reordered.xyz", ["--spacing", "0.7", "--padding", "2"]),
    ("kcal_eps4", "tests/data/pqr_whitespace.pqr", ["--spacing", "1", "--padding", "3", "--units",
                                                    "kcal/mol/e", "--dielectric", "4"]),
]


def read_vti(path):
    try:
        from vtkmodules.vtkIOXML import vtkXMLImageDataReader
        from vtkmodules.util.numpy_support import vtk_to_numpy
        import vtkmodules.vtkCommonCore as cc
    except ImportError:
        return None
    r = vtkXMLImageDataReader()
    r.SetFileName(path)
    r.Update()
    img = r.GetOutput()
    dims = img.GetDimensions()
    vals = vtk_to_numpy(img.GetPointData().GetArray("potential")).reshape(dims[::-1]).transpose(2, 1, 0)
    units = img.GetFieldData().GetAbstractArray("units")
    return dict(dims=dims, origin=np.array(img.GetOrigin()), spacing=np.array(img.GetSpacing()),
                values=vals, units=units.GetValue(0) if units is not None else None,
                version=cc.vtkVersion.GetVTKVersion())


# Coulomb constants (CODATA 2018), as README.md states them: e^2/(4 pi eps0 * 1 Å) in V, kT/e at T.
E2_4PIEPS0_V_A = 14.399645478
KB_OVER_E = 1.380649e-23 / 1.602176634e-19


def coulomb_check(dx, structure, options):
    """Direct Coulomb sum in float64 at sample nodes >= 1.5 Å from every atom; max relative error."""
    atoms = []
    for line in open(structure):
        if line.startswith(("ATOM", "HETATM")):
            t = line.split()
            atoms.append([float(x) for x in t[-5:-1]])
    a = np.array(atoms)
    opt = dict(zip(options[::2], options[1::2]))
    eps = float(opt.get("--dielectric", 1))
    if opt.get("--units", "kT/e") == "kcal/mol/e":
        k = 332.0637133
    else:
        k = E2_4PIEPS0_V_A / (KB_OVER_E * 298.15)
    worst, checked = 0.0, 0
    for idx in common.sample_indices(dx.counts, n=60, seed=7):
        p = dx.node(*idx)
        r = np.linalg.norm(a[:, :3] - p, axis=1)
        if r.min() < 1.5:
            continue
        ref = k / eps * np.sum(a[:, 3] / r)
        scale = k / eps * np.sum(np.abs(a[:, 3]) / r)
        worst = max(worst, abs(float(dx.values64[idx]) - ref) / scale)
        checked += 1
    return worst, checked


def self_test(good_path, wd):
    """The strict reader must reject what VMD would misread; check it on edited copies of our file."""
    lines = open(good_path).read().split("\n")
    hdr = next(i for i, l in enumerate(lines) if l.startswith("object 1"))
    data = next(i for i, l in enumerate(lines) if l.endswith("data follows")) + 1
    edits = {
        "blank line before the header": lines[:hdr] + [""] + lines[hdr:],
        "comment inside the header": lines[:hdr + 1] + ["# late comment"] + lines[hdr + 1:],
        "quoted type": [l.replace("type double", 'type "double"') for l in lines],
        "4 values on a line": lines[:data] + [lines[data] + " 1.0"] + lines[data + 1:],
        "one value missing": lines[:data] + [" ".join(lines[data].split()[:2])] + lines[data + 1:],
        "binary keyword": [l.replace("data follows", "binary data follows") for l in lines],
        "swapped delta lines": lines[:hdr + 2] + [lines[hdr + 3], lines[hdr + 2]] + lines[hdr + 4:],
    }
    bad = 0
    for what, ls in edits.items():
        path = os.path.join(wd, "edited.dx")
        with open(path, "w") as f:
            f.write("\n".join(ls))
        try:
            common.read_dx_strict(path)
            print(f"FAIL self-test: the strict reader accepted a file with {what}")
            bad += 1
        except common.DxRuleError:
            pass
    return bad


def main():
    args = common.parse_args(__doc__)
    print("client: none (strict reader in this test, following VMD's dxplugin rules)")
    errors = 0
    with common.Workdir(args.keep) as wd:
        for name, structure, options in CASES:
            m = common.make_map(args, wd, name, structure, options)
            try:
                dx = common.read_dx_strict(m["dx"])
            except common.DxRuleError as e:
                print(f"FAIL {name}: {m['dx']} breaks the VMD/APBS rules: {e}")
                errors += 1
                continue
            unit = "kcal/mol/e" if "kcal/mol/e" in options else "kT/e"
            if not any(f"Potential in {unit}" in c for c in dx.comments):
                print(f"FAIL {name}: no '# Potential in {unit}' comment: {dx.comments}")
                errors += 1
            lo, hi = common.espgrid_range(m["stdout"])
            got = (float(dx.values32.min()), float(dx.values32.max()))
            # espgrid prints 4 significant digits.
            if not (np.isclose(got[0], lo, rtol=6e-4, atol=1e-9) and np.isclose(got[1], hi, rtol=6e-4, atol=1e-9)):
                print(f"FAIL {name}: range {got} but espgrid printed {lo} to {hi}")
                errors += 1
            if name == "whitespace":
                errors += self_test(m["dx"], wd)
            if structure.endswith(".pqr") and name in ("whitespace", "fasciculin2", "kcal_eps4"):
                worst, checked = coulomb_check(dx, os.path.join(args.source, structure), options)
                if checked < 10 or worst > 1e-5:
                    print(f"FAIL {name}: float64 Coulomb sum differs by {worst:.2e} (relative to sum|q|/r) "
                          f"at {checked} sample nodes")
                    errors += 1
                else:
                    print(f"ok   {name}: {checked} nodes match a float64 Coulomb sum (worst {worst:.1e} of sum|q|/r)")
            vti = read_vti(m["vti"]) if m["vti"] else None
            if vti is None:
                print(f"note: no .vti (espgrid without VTK) or python3-vtk9 not importable; "
                      f"{name}: .dx checked against espgrid's summary only")
                continue
            if tuple(vti["dims"]) != dx.counts:
                print(f"FAIL {name}: .vti dims {vti['dims']} != .dx counts {dx.counts}")
                errors += 1
                continue
            if not (np.allclose(vti["origin"], dx.origin, atol=1e-9) and np.allclose(vti["spacing"], dx.spacing, atol=1e-12)):
                print(f"FAIL {name}: .vti origin/spacing {vti['origin']}/{vti['spacing']} != .dx {dx.origin}/{dx.spacing}")
                errors += 1
            diff = vti["values"].astype(np.float32) != dx.values32
            if diff.any():
                i, j, k = np.argwhere(diff)[0]
                print(f"FAIL {name}: {int(diff.sum())} of {diff.size} values differ between .vti and .dx; "
                      f"first at node ({i},{j},{k}): vti {vti['values'][i, j, k]!r} dx {dx.values32[i, j, k]!r}")
                errors += 1
            if vti["units"] != unit:
                print(f"FAIL {name}: .vti field 'units' is {vti['units']!r}, expected {unit!r}")
                errors += 1
            print(f"ok   {name}: {dx.counts[0]}x{dx.counts[1]}x{dx.counts[2]}, spacing "
                  f"{','.join(f'{s:g}' for s in dx.spacing)}, values {got[0]:.6g} to {got[1]:.6g} {unit}; "
                  f".dx (VMD rules, float32) == .vti (VTK {vti['version']}) at all {diff.size} nodes")
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
