#!/usr/bin/python3
"""ParaView opens our .vti, uncompressed (the default) and with each compressor: right extent
(dims - 1), origin, spacing, "units", and the range and values of "potential" equal our .dx (read
by the strict reader, rounded to float32).

Client: ParaView's Python (pvpython, or pvbatch), running paraview.simple.XMLImageDataReader in a
child process. Debian 12 ships pvpython in python3-paraview, which conflicts with python3-vtk9
(both install the `vtkmodules` package), so the search order is:
  1. $ESPGRID_PVPYTHON (a pvpython or pvbatch), with $ESPGRID_PARAVIEW_PYTHONPATH if set;
  2. pvpython on PATH;
  3. pvbatch on PATH (Debian package paraview) with ParaView's Python modules from
     $ESPGRID_PARAVIEW_PYTHONPATH, or from /opt/paraview-python/usr/lib/python3/dist-packages
     (tests/interop/setup_paraview_python.sh unpacks python3-paraview there without installing it).
The test is skipped (77) when no working client is found. Under no X display the client is
retried under `xvfb-run -a` if it fails.
"""

import json
import os
import shutil
import sys

try:
    import numpy as np
except ImportError:  # numpy is part of the client stack here (python3-numpy): skip, never fail
    print(f"SKIP: numpy is not installed for {sys.executable}; apt-get install python3-numpy")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DEFAULT_PV_PYTHONPATH = "/opt/paraview-python/usr/lib/python3/dist-packages"

PROBE_SCRIPT = r'''
import json, sys
from paraview.simple import XMLImageDataReader
from paraview import servermanager
with open(sys.argv[1], "w") as f:
    json.dump({"source_version": servermanager.vtkSMProxyManager.GetParaViewSourceVersion()}, f)
'''

CLIENT_SCRIPT = r'''
import json, sys
from paraview.simple import XMLImageDataReader
from paraview import servermanager
vti, out_json, out_raw = sys.argv[1], sys.argv[2], sys.argv[3]
reader = XMLImageDataReader(FileName=[vti])
reader.UpdatePipeline()
info = reader.GetDataInformation()
arrays = list(reader.PointData.keys())
res = {"extent": list(info.GetExtent()), "points": info.GetNumberOfPoints(),
       "arrays": arrays}
if "potential" in arrays:
    res["range"] = list(reader.PointData["potential"].GetRange())
# The data itself, fetched to the client: origin, spacing, units, every value (x fastest).
img = servermanager.Fetch(reader)
res["origin"] = list(img.GetOrigin())
res["spacing"] = list(img.GetSpacing())
res["dims"] = list(img.GetDimensions())
u = img.GetFieldData().GetAbstractArray("units")
res["units"] = u.GetValue(0) if u is not None else None
a = img.GetPointData().GetArray("potential")
if a is not None:
    import array
    vals = array.array("f", (a.GetValue(i) for i in range(a.GetNumberOfTuples())))
    with open(out_raw, "wb") as f:
        vals.tofile(f)
with open(out_json, "w") as f:
    json.dump(res, f)
'''


def candidates():
    """(label, command prefix, extra env) for every client worth trying, best first."""
    env_pp = os.environ.get("ESPGRID_PARAVIEW_PYTHONPATH")
    out = []
    # Real paths: ParaView puts <exe>/../lib/python3/dist-packages first on sys.path, and through
    # the /bin -> /usr/bin link that would be Debian's python3-vtk9 (a different VTK: crash).
    exe = os.environ.get("ESPGRID_PVPYTHON")
    if exe:
        exe = os.path.realpath(exe)
        out.append((exe, [exe], {"PYTHONPATH": env_pp} if env_pp else {}))
    pv = shutil.which("pvpython")
    if pv:
        pv = os.path.realpath(pv)
        out.append((pv, [pv], {"PYTHONPATH": env_pp} if env_pp else {}))
    pb = shutil.which("pvbatch")
    if pb:
        pb = os.path.realpath(pb)
        pp = env_pp or (DEFAULT_PV_PYTHONPATH if os.path.isdir(DEFAULT_PV_PYTHONPATH) else None)
        out.append((pb + (f" (PYTHONPATH={pp})" if pp else ""), [pb], {"PYTHONPATH": pp} if pp else {}))
    return out


def run_client(prefix, extra_env, script, args, use_xvfb):
    env = dict(os.environ)
    env.update(extra_env)
    cmd = list(prefix) + [script] + list(args)
    if use_xvfb:
        cmd = ["xvfb-run", "-a"] + cmd
    return common.run(cmd, timeout=300, env=env)


def main():
    args = common.parse_args(__doc__)
    errors = 0
    with common.Workdir(args.keep) as wd:
        script = os.path.join(wd, "pv_client.py")
        with open(script, "w") as f:
            f.write(CLIENT_SCRIPT)
        probe_script = os.path.join(wd, "pv_probe.py")
        with open(probe_script, "w") as f:
            f.write(PROBE_SCRIPT)
        # The default .vti is espgrid's own uncompressed writer; the compressed ones are VTK's
        # (--compression), checked on the protein map.
        maps = [(name, common.make_map(args, wd, name, structure, options))
                for name, structure, options in common.CASES]
        name, structure, options = common.CASES[-1]
        if any(m["vti"] is None for _, m in maps):
            common.skip("this espgrid cannot write .vti")
        compressed = [(f"{name}_{c}", common.make_map(args, wd, f"{name}_{c}", structure,
                                                      options + ["--compression", c]))
                      for c in ("lz4", "zlib", "lzma")]
        if any(m["vti"] is None for _, m in compressed):
            print("note: this espgrid was built without VTK: compressed .vti not checked")
        maps += [(n, m) for n, m in compressed if m["vti"] is not None]
        # A client "works" when it imports paraview.simple (so a crash on our file is a FAIL).
        chosen, tried = None, []
        probe = [os.path.join(wd, "probe.json")]
        for label, prefix, extra in candidates():
            for xvfb in (False, True):
                if xvfb and not shutil.which("xvfb-run"):
                    continue
                r = run_client(prefix, extra, probe_script, probe, xvfb)
                if r.returncode == 0 and os.path.isfile(probe[0]):
                    chosen = (label, prefix, extra, xvfb)
                    break
                tried.append(f"{label}{' under xvfb-run' if xvfb else ''}: exit {r.returncode}: "
                             f"{r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ''}")
            if chosen:
                break
        if not chosen:
            common.skip("no working ParaView Python client (pvpython, or pvbatch with ParaView's "
                        "Python modules; Debian 12: python3-paraview conflicts with python3-vtk9, "
                        "see tests/interop/setup_paraview_python.sh). Tried: "
                        + ("; ".join(tried) if tried else "none found"))
        label, prefix, extra, xvfb = chosen
        info = json.load(open(probe[0]))
        print(f"client: {info['source_version']}, {label}"
              f"{' under xvfb-run -a' if xvfb else ''}")
        for name, m in maps:
            before = errors
            js, raw = os.path.join(wd, f"{name}.json"), os.path.join(wd, f"{name}.raw")
            r = run_client(prefix, extra, script, [m["vti"], js, raw], xvfb)
            if r.returncode != 0:
                print(f"FAIL {name}: ParaView client exited {r.returncode}:\n{r.stdout[-2000:]}")
                errors += 1
                continue
            res = json.load(open(js))
            dx = common.read_dx_strict(m["dx"])
            want_extent = [0, dx.counts[0] - 1, 0, dx.counts[1] - 1, 0, dx.counts[2] - 1]
            if res["extent"] != want_extent:
                print(f"FAIL {name}: ParaView extent {res['extent']}, expected {want_extent}")
                errors += 1
            if "range" not in res:
                print(f"FAIL {name}: ParaView sees no 'potential' array (arrays: {res['arrays']})")
                errors += 1
                continue
            want_range = [float(dx.values32.min()), float(dx.values32.max())]
            if res["range"] != want_range:
                print(f"FAIL {name}: ParaView range of 'potential' {res['range']}, ours {want_range}")
                errors += 1
            if not (np.allclose(res["origin"], dx.origin, atol=1e-9) and
                    np.allclose(res["spacing"], dx.spacing, atol=1e-12)):
                print(f"FAIL {name}: ParaView origin/spacing {res['origin']}/{res['spacing']}, "
                      f"ours {dx.origin.tolist()}/{dx.spacing.tolist()}")
                errors += 1
            if res["units"] != "kT/e":
                print(f"FAIL {name}: ParaView field data 'units' = {res['units']!r}, expected 'kT/e'")
                errors += 1
            vals = np.fromfile(raw, dtype=np.float32)
            if vals.size != dx.values32.size:
                print(f"FAIL {name}: ParaView fetched {vals.size} values, expected {dx.values32.size}")
                errors += 1
            else:
                pv = vals.reshape(dx.counts[::-1]).transpose(2, 1, 0)   # VTK: x fastest
                diff = pv != dx.values32
                if diff.any():
                    i, j, k = np.argwhere(diff)[0]
                    print(f"FAIL {name}: {int(diff.sum())} values differ; first at ({i},{j},{k}): "
                          f"ParaView {pv[i, j, k]!r}, ours {dx.values32[i, j, k]!r}")
                    errors += 1
            if errors == before:
                print(f"ok   {name}: extent {res['extent']}, range {res['range'][0]:.6g} .. "
                      f"{res['range'][1]:.6g} {res['units']}; all {vals.size} values equal the .dx")
    if errors:
        common.fail(f"{errors} check(s) failed")
    print("PASS")


if __name__ == "__main__":
    main()
