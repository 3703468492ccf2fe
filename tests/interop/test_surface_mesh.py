#!/usr/bin/python3
"""`espgrid surface` writes the coloured molecular surface as .vtp, .ply and .glb; outside readers
must get the same mesh from each, with the potential and colours espgrid computed.

Clients: VTK's own readers (python3-vtk9: vtkXMLPolyDataReader for .vtp, vtkPLYReader for .ply)
and Khronos' glTF validator (npm gltf-validator, pinned in web/package-lock.json and installed by
the build's npm ci into build/web-npm) run with Node.js for .glb, whose buffers are also decoded
here. The potential at sample vertices is checked against a float64 Coulomb sum written out in
this file (CODATA constants). Skipped (77) when VTK is missing; the .glb validation alone is
skipped, with a note, when Node.js or the validator is.
"""

import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# kcal/mol/e per e/Å (CODATA 2018, README.md): e²/(4π ε0 · 1 Å) · N_A / 4184.
K_KCAL = 332.0637133


def vtk_arrays(output):
    from vtk.util import numpy_support as ns
    pd = output.GetPointData()
    arrays = {pd.GetArrayName(i): ns.vtk_to_numpy(pd.GetArray(i)) for i in range(pd.GetNumberOfArrays())}
    points = ns.vtk_to_numpy(output.GetPoints().GetData()).astype(np.float64)
    cells = output.GetPolys()
    conn = ns.vtk_to_numpy(cells.GetConnectivityArray()).astype(np.int64)
    offsets = ns.vtk_to_numpy(cells.GetOffsetsArray()).astype(np.int64)
    return points, arrays, conn, offsets


def read_glb(path):
    data = open(path, "rb").read()
    magic, version, length = struct.unpack_from("<III", data, 0)
    assert magic == 0x46546C67 and version == 2 and length == len(data), "GLB header"
    json_len, json_type = struct.unpack_from("<II", data, 12)
    assert json_type == 0x4E4F534A, "first chunk is JSON"
    doc = json.loads(data[20:20 + json_len])
    bin_len, bin_type = struct.unpack_from("<II", data, 20 + json_len)
    assert bin_type == 0x004E4942, "second chunk is BIN"
    blob = data[28 + json_len:28 + json_len + bin_len]
    types = {5126: np.float32, 5125: np.uint32}
    width = {"SCALAR": 1, "VEC3": 3}

    def accessor(i):
        a = doc["accessors"][i]
        v = doc["bufferViews"][a["bufferView"]]
        arr = np.frombuffer(blob, dtype=types[a["componentType"]], count=a["count"] * width[a["type"]],
                            offset=v["byteOffset"] + a.get("byteOffset", 0))
        return arr.reshape(-1, width[a["type"]]) if width[a["type"]] > 1 else arr
    prim = doc["meshes"][0]["primitives"][0]
    return doc, {name: accessor(i) for name, i in prim["attributes"].items()}, accessor(prim["indices"])


def main():
    args = common.parse_args(__doc__)
    try:
        import vtk
    except ImportError as e:
        common.skip(f"VTK Python missing for {sys.executable} ({e}); apt-get install python3-vtk9")
    print(f"client: VTK {vtk.vtkVersion.GetVTKVersion()}, {sys.executable}")
    errors = 0

    def check(ok, what):
        nonlocal errors
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        errors += 0 if ok else 1

    pqr = os.path.join(args.source, "data", "fasciculin2.pqr")
    with common.Workdir(args.keep) as wd:
        outs = {ext: os.path.join(wd, f"fas.{ext}") for ext in ("vtp", "ply", "glb")}
        r = common.run([args.espgrid, "surface", pqr, "--dielectric", "4", "--units", "kcal/mol/e",
                        *sum((["-o", p] for p in outs.values()), [])])
        print(r.stdout, end="")
        if r.returncode != 0:
            common.fail(f"espgrid surface failed: {r.stderr}")

        # .vtp through VTK's XML reader: the reference for the others.
        reader = vtk.vtkXMLPolyDataReader()
        reader.SetFileName(outs["vtp"])
        reader.Update()
        vtp = reader.GetOutput()
        points, arrays, conn, offsets = vtk_arrays(vtp)
        n, m = len(points), len(offsets) - 1  # VTK's offsets start with 0
        check(n > 10000 and m > 2 * n - 100, f".vtp: {n} points, {m} triangles")
        check(offsets[0] == 0 and np.all(np.diff(offsets) == 3), ".vtp: every cell a triangle")
        check(set(arrays) >= {"potential", "Normals", "colors"}, f".vtp: point arrays {sorted(arrays)}")
        units = vtp.GetFieldData().GetAbstractArray("units")
        check(units is not None and units.GetValue(0) == "kcal/mol/e", ".vtp: field data units = kcal/mol/e")
        phi, normals = arrays["potential"].astype(np.float64), arrays["Normals"].astype(np.float64)
        check(np.allclose(np.linalg.norm(normals, axis=1), 1, atol=1e-5), ".vtp: unit normals")
        # Outward: the normals point away from the atoms' centre on average at the 10% of
        # vertices farthest from it (a closed molecular surface has no inward-facing rim there).
        centre = points.mean(axis=0)
        radial = points - centre
        far = np.argsort(-np.linalg.norm(radial, axis=1))[:n // 10]
        outward = np.mean(np.sum(normals[far] * radial[far], axis=1) / np.linalg.norm(radial[far], axis=1))
        check(outward > 0.5, f".vtp: normals face outwards (mean radial component {outward:.2f} at the rim)")

        # The potential: a float64 Coulomb sum at p + 1.4 n for 300 vertices. Both sides sum the
        # same terms in double; espgrid stores float32 (≤ 6e-8 relative) and its positions and
        # normals are float32 (moving the point by ≤ 1e-5 Å changes φ by |∇φ|·1e-5, at most
        # ~1e-4 relative this far from atoms): 1e-4 relative, or 1e-3 kcal/mol/e absolute.
        atoms = np.array([[float(x) for x in line.split()[-5:-1]]
                          for line in open(pqr) if line.startswith(("ATOM", "HETATM"))])
        rng = np.random.default_rng(7)
        worst = 0.0
        for v in rng.choice(n, 300, replace=False):
            q = points[v] + 1.4 * normals[v]
            r = np.sqrt(np.sum((atoms[:, :3] - q) ** 2, axis=1) + 1e-8)
            ref = K_KCAL / 4.0 * np.sum(atoms[:, 3] / r)
            worst = max(worst, abs(phi[v] - ref) / max(abs(ref), 10.0))
        check(worst < 1e-4, f"potential = float64 Coulomb sum 1.4 Å outside (worst {worst:.2e} relative)")
        # Colours: viz/render_potential.py's DIVERGING stops, linear between them on ±10
        # kcal/mol/e (ChimeraX's custom range), clamped, written out again here; espgrid rounds
        # each channel to the nearest of 256 levels, as this does: equal, or one level apart
        # where float32 and double straddle a half.
        stops = np.array([(0.70, 0.04, 0.09), (0.85, 0.25, 0.22), (0.95, 0.60, 0.55), (0.97, 0.97, 0.97),
                          (0.58, 0.71, 0.94), (0.25, 0.45, 0.85), (0.07, 0.22, 0.70)])
        t = np.clip((phi + 10) / 20, 0, 1) * 6
        i = np.minimum(np.floor(t).astype(int), 5)
        expected = np.rint(255 * (stops[i] + (t - i)[:, None] * (stops[i + 1] - stops[i])))
        colors = arrays["colors"].astype(int)
        worst_colour = int(np.abs(colors - expected).max())
        print(f"  potential {phi.min():.3g} to {phi.max():.3g} kcal/mol/e")
        check(worst_colour <= 1, f"colours = the renderer's ramp on ±10 (largest difference {worst_colour} of 255)")
        check(tuple(colors[np.argmax(phi)]) == (18, 56, 179), "beyond +10: the ramp's blue end")

        # .ply through VTK's PLY reader: the same points, triangles and colours.
        ply = vtk.vtkPLYReader()
        ply.SetFileName(outs["ply"])
        ply.Update()
        p_points, p_arrays, p_conn, _ = vtk_arrays(ply.GetOutput())
        check(np.array_equal(p_points, points), ".ply: the same vertices as .vtp")
        check(np.array_equal(p_conn, conn), ".ply: the same triangles as .vtp")
        rgb = p_arrays.get("RGB")
        check(rgb is not None and np.array_equal(rgb.astype(int), colors), ".ply: the same colours (RGB)")
        header = open(outs["ply"], "rb").read(2000).split(b"end_header")[0].decode("ascii")
        check("property float potential" in header and "comment espgrid" in header,
              ".ply: header names the potential and espgrid's comments")

        # .glb decoded here, and validated by Khronos' validator.
        doc, attrs, indices = read_glb(outs["glb"])
        check(np.array_equal(attrs["POSITION"].astype(np.float64), points), ".glb: POSITION = .vtp's vertices")
        check(np.array_equal(indices.astype(np.int64), conn), ".glb: indices = .vtp's triangles")
        check(np.array_equal(attrs["_POTENTIAL"].astype(np.float64), phi), ".glb: _POTENTIAL = .vtp's potential")
        srgb = colors / 255.0
        linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
        check(np.allclose(attrs["COLOR_0"], linear, atol=1e-6), ".glb: COLOR_0 = the colours in linear light")
        check(doc["asset"]["extras"]["potential_units"] == "kcal/mol/e", ".glb: asset extras name the unit")
        web = os.path.join(os.path.dirname(os.path.abspath(args.espgrid)), "web-npm", "node_modules", "gltf-validator")
        node = shutil.which("node")
        if node and os.path.isdir(web):
            script = ("const v = require(process.argv[1]); const fs = require('fs');"
                      "v.validateBytes(new Uint8Array(fs.readFileSync(process.argv[2])))"
                      ".then(r => console.log(JSON.stringify(r)))"
                      ".catch(e => { console.error(e); process.exit(1); });")
            res = subprocess.run([node, "-e", script, web, outs["glb"]], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, timeout=120)
            report = json.loads(res.stdout) if res.returncode == 0 else None
            issues = report["issues"] if report else {}
            print(f"  glTF validator {report['validatorVersion'] if report else '?'}: {issues.get('numErrors')} errors, "
                  f"{issues.get('numWarnings')} warnings, {issues.get('numInfos')} infos")
            for msg in (issues.get("messages") or [])[:10]:
                print(f"    {msg.get('severity')} {msg.get('code')}: {msg.get('message')} {msg.get('pointer', '')}")
            check(report is not None and issues["numErrors"] == 0, ".glb: Khronos glTF validator finds no error")
        else:
            print("  note: .glb not validated (no node or build/web-npm/node_modules/gltf-validator: npm ci did not run)")

    print("all checks passed" if not errors else f"{errors} check(s) failed")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
