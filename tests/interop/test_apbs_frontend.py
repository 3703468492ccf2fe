#!/usr/bin/python3
"""`espgrid apbs FILE.in` against APBS 3.4.1 itself on the same input files: APBS's own
examples (Debian apbs-data) at a coarse dime so CI can afford them, and inputs of the shapes users
run (PDB2PQR's template, mg-manual maps). Both programs run the same file in their own directory;
then, file by file and line by line:

  * every calculation's grid lines ("Grid dimensions/spacings/lengths/center", APBS's %4.3f) are
    the same text: NOsh's focusing set up identically;
  * every "Total electrostatic energy" and "Global net ELEC energy" within 0.1% of APBS's (the
    issue's target; the figures are printed);
  * every file APBS writes, espgrid writes under the same name, on the same grid, and its values
    agree to 1e-3 relative RMS over the nodes >= 1.4 A outside every van der Waals sphere.

Every case must run and agree; a refusal or a disagreement fails. Skips (77) without apbs or
apbs-data.
"""

import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

try:
    import apbs_pb  # noqa: E402  (numpy)
except ImportError as e:
    common.skip(f"{e}; apt-get install python3-numpy")

EXAMPLES = "/usr/share/apbs/examples"
ENERGY_TOLERANCE = 1e-3  # the 0.1%
MAP_TOLERANCE = 1e-3  # the relative RMS >= 1.4 A outside

# A mg-manual map of the kind `espgrid map --model pb` makes, and PDB2PQR's --apbs-input template
# (psize.py: cglen 1.7 x the extent, fglen the extent + 20 A but at most cglen, dime 32k + 1).
FAS_MANUAL = """read
    mol pqr fasciculin2.pqr
end
elec name fas
    mg-manual
    dime 65 65 65
    glen 60 60 60
    gcent mol 1
    mol 1
    lpbe
    bcfl mdh
    ion charge 1 conc 0.1 radius 2.0
    ion charge -1 conc 0.1 radius 2.0
    pdie 2.0
    sdie 78.54
    chgm spl2
    srfm smol
    srad 1.4
    swin 0.3
    sdens 10.0
    temp 298.15
    calcenergy no
    calcforce no
    write pot dx pot
end
elec name spline
    mg-manual
    dime 49 65 33
    grid 1.1 0.9 1.6
    gcent 1.0 2.5 26.0
    mol 1
    lpbe
    bcfl mdh
    ion charge 2 conc 0.05 radius 2.5
    ion charge -1 conc 0.1 radius 1.5
    pdie 4.0
    sdie 78.54
    chgm spl2
    srfm spl2
    swin 0.3
    temp 310
    calcenergy no
    calcforce no
    write pot dx spline
end
quit
"""

PDB2PQR_TEMPLATE = """read
    mol pqr fasciculin2.pqr
end
elec name mol1
    mg-auto
    dime 65 65 65
    cglen 64.8 40.0 56.3
    fglen 58.1 40.0 53.1
    cgcent mol 1
    fgcent mol 1
    mol 1
    lpbe
    bcfl sdh
    pdie 2.0
    sdie 78.54
    srfm smol
    chgm spl2
    sdens 10.0
    srad 1.4
    swin 0.3
    temp 298.15
    calcenergy total
    calcforce no
    write pot dx fas2
end
print elecEnergy 1 end
quit
"""

# calcenergy comps (APBS prints the three terms and every atom's energy) with spl0 and zero
# boundary values, on a grid the molecule fills.
FAS_COMPS = """read
    mol pqr fasciculin2.pqr
end
elec name comps
    mg-manual
    dime 33 33 33
    glen 50 45 48
    gcent mol 1
    mol 1
    lpbe
    bcfl zero
    ion charge 1 conc 0.15 radius 2.0
    ion charge -1 conc 0.15 radius 2.0
    pdie 4.0
    sdie 78.54
    chgm spl0
    srfm mol
    srad 1.4
    sdens 10.0
    temp 298.15
    calcenergy comps
    calcforce no
end
quit
"""

# (name, example input under EXAMPLES or None, text when None, molecules to copy)
CASES = [
    ("fasciculin2 mg-manual smol/spl2", None, FAS_MANUAL, ["data/fasciculin2.pqr"]),
    ("PDB2PQR template (fasciculin-2)", None, PDB2PQR_TEMPLATE, ["data/fasciculin2.pqr"]),
    ("fasciculin2 comps (spl0, bcfl zero)", None, FAS_COMPS, ["data/fasciculin2.pqr"]),
    ("born/apbs-mol-auto", "born/apbs-mol-auto.in", None, []),
    ("born/apbs-smol-auto", "born/apbs-smol-auto.in", None, []),
    ("solv/apbs-mol", "solv/apbs-mol.in", None, []),
    ("ionize/apbs-smol", "ionize/apbs-smol.in", None, []),
    ("hca-bind/apbs-mol", "hca-bind/apbs-mol.in", None, []),
    ("FKBP/1d7h-dmso-mol", "FKBP/1d7h-dmso-mol.in", None, []),
    ("pka-lig/apbs-mol-surf", "pka-lig/apbs-mol-surf.in", None, []),
    ("misc/apbs (pot, sspl, kappa, charge maps)", "misc/apbs.in", None, []),
    ("actin-dimer/apbs-mol-auto", "actin-dimer/apbs-mol-auto.in", None, []),
    ("point-pmf/complex-0_1 (ions of radius 0, uniform medium, comps)", "point-pmf/complex-0_1.in", None, []),
]

GRID_LINE = re.compile(r"^  Grid (dimensions|spacings|lengths|center): .*$", re.M)
TOTAL = re.compile(r"^  Total electrostatic energy = (\S+) kJ/mol$", re.M)
GLOBAL = re.compile(r"^  Global net ELEC energy = (\S+) kJ/mol$", re.M)
COMPONENT = re.compile(r"^  (?:Fixed charge|Mobile charge|Dielectric) energy = (\S+) kJ/mol$", re.M)
ATOM = re.compile(r"^      Atom \d+:  (\S+) kJ/mol$", re.M)


def coarse(text):
    """The example at dime 33 along every axis, each block's lengths kept (a `grid` spacing grows by
    (dime - 1)/32); mg-para inputs keep theirs (their dime is per process)."""
    if re.search(r"(?im)^\s*mg-para", text):
        return text

    def block(m):
        b = m.group(0)
        d = re.search(r"(?im)^\s*dime\s+(\d+)\s+(\d+)\s+(\d+)", b)
        if not d:
            return b
        dims = [int(x) for x in d.groups()]
        g = re.search(r"(?im)^(\s*grid)\s+(\S+)\s+(\S+)\s+(\S+)", b)
        if g:
            spacing = [float(g.group(2 + i)) * (dims[i] - 1) / 32 for i in range(3)]
            b = b[:g.start()] + g.group(1) + " " + " ".join(f"{h:.6g}" for h in spacing) + b[g.end():]
        return re.sub(r"(?im)^(\s*dime)\s+\d+\s+\d+\s+\d+", r"\1 33 33 33", b)

    return re.sub(r"(?is)\belec\b.*?\bend\b", block, text)


def prepare(work, example, text, molecules, source, input_name="case.in", edit=coarse):
    """`work` made with the example's folder copied in (its files), the molecules, and the input
    (the example's text through `edit`, or `text`) written as `input_name`."""
    os.makedirs(work)
    if example:
        folder = os.path.join(EXAMPLES, os.path.dirname(example))
        for f in os.listdir(folder):
            if os.path.isfile(os.path.join(folder, f)):
                shutil.copy(os.path.join(folder, f), work)
        with open(os.path.join(folder, os.path.basename(example))) as f:
            text = edit(f.read())
    for m in molecules:
        shutil.copy(os.path.join(source, m), work)
    with open(os.path.join(work, input_name), "w") as f:
        f.write(text)


def run(cmd, cwd):
    start = time.time()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    return out, time.time() - start


def dx_files(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".dx"))


def atoms_of(folder, text):
    """Positions and radii of every PQR the input reads, for the map comparison's outside region."""
    xyz, radii = [], []
    for m in re.findall(r"(?im)^\s*mol\s+pqr\s+(\S+)", text):
        p, r = apbs_pb.read_pqr(os.path.join(folder, m))
        xyz.append(p)
        radii.append(r)
    return apbs_pb.np.concatenate(xyz), apbs_pb.np.concatenate(radii)


def compare_energies(label, ours, theirs, problems, records=None):
    """espgrid's energies (kJ/mol) against APBS's, paired in order: each within 0.1% of APBS's.
    Appends failure messages to `problems` and, when given, {"kind", "espgrid", "apbs", "relative"}
    to `records`; prints the figures."""
    if len(theirs) != len(ours):
        problems.append(f"{len(ours)} {label} energies, APBS printed {len(theirs)}")
        return
    for a, b in zip(ours, theirs):
        rel = abs(a - b) / max(abs(b), 1e-300)
        print(f"       {label} energy: espgrid {a:.6e}, APBS {b:.6e} kJ/mol, relative {rel:.2e}")
        if records is not None:
            records.append({"kind": label, "espgrid": a, "apbs": b, "relative": rel})
        if rel > ENERGY_TOLERANCE:
            problems.append(f"{label} energy {a} vs APBS {b} (relative {rel:.2e})")


def compare_map(name, apbs_path, ours_path, atoms, problems, records=None):
    """One DX file espgrid wrote against APBS's: the same grid, then the relative RMS over the nodes
    >= 1.4 A outside every vdW sphere (a potential map; `atoms()` gives the (xyz, radii)) or over
    every node (charge, accessibility, dielectric, ... maps). Appends as compare_energies does
    ({"file", "relative_rms", "nodes", ...})."""
    o, h, counts, reference = apbs_pb.read_dx(apbs_path)
    o2, h2, counts2, values = apbs_pb.read_dx(ours_path)
    if counts != counts2 or apbs_pb.np.abs(o - o2).max() > 1e-5 or apbs_pb.np.abs(h - h2).max() > 1e-6:
        problems.append(f"{name}: grid {counts2} {o2} {h2} vs APBS's {counts} {o} {h}")
        if records is not None:
            records.append({"file": name, "same_grid": False})
        return
    with open(apbs_path) as f:
        potential = "POTENTIAL" in f.read(200)
    if potential:
        xyz, radii = atoms()
        outside, shell = apbs_pb.regions(o, h, counts, xyz, radii)
        c = apbs_pb.compare(values, reference, outside, shell)
        print(f"       {name}: relative RMS {c['relative_rms']:.2e} over {c['outside_points']} nodes, "
              f"sign agreement {c['sign_agreement']:.4f}")
        rel = c["relative_rms"]
        record = {"file": name, "same_grid": True, "region": ">= 1.4 A outside every vdW sphere",
                  "relative_rms": rel, "nodes": c["outside_points"], "sign_agreement": c["sign_agreement"],
                  "max_abs_diff_kT_per_e": c["max_abs_diff"]}
    else:  # charge, accessibility, dielectric, ... maps: every node
        diff = apbs_pb.np.sqrt(apbs_pb.np.sum((values - reference) ** 2))
        rel = float(diff / max(apbs_pb.np.sqrt(apbs_pb.np.sum(reference ** 2)), 1e-300))
        print(f"       {name}: relative RMS {rel:.2e} over every node")
        record = {"file": name, "same_grid": True, "region": "every node", "relative_rms": rel,
                  "nodes": int(values.size)}
    if records is not None:
        records.append(record)
    if rel > MAP_TOLERANCE:
        problems.append(f"{name}: relative RMS {rel:.2e}")


def compare_case(name, apbs_dir, ours_dir, apbs_out, ours_out, input_name="case.in", records=None):
    """Failure messages (empty when everything agrees); prints the figures. `records`, when given,
    gets {"energies": [...], "maps": [...], "grid_lines_identical": bool, "grid_lines": n}."""
    problems = []
    energies, maps = [], []
    theirs_grids = [m.group(0) for m in GRID_LINE.finditer(apbs_out)]
    ours_grids = [m.group(0) for m in GRID_LINE.finditer(ours_out)]
    if theirs_grids != ours_grids:
        problems.append(f"the calculations' grid lines differ from APBS's: {ours_grids} vs {theirs_grids}")
    # calcenergy comps: APBS prints the components "%g" (6 digits) and every atom's energy; an atom's
    # is held to 0.1% of the largest (a small one is the difference of large terms).
    for label, pattern in (("component", COMPONENT), ("per-atom", ATOM)):
        theirs = [float(x) for x in pattern.findall(apbs_out)]
        ours = [float(x) for x in pattern.findall(ours_out)]
        if len(theirs) != len(ours):
            problems.append(f"{len(ours)} {label} energies, APBS printed {len(theirs)}")
        elif theirs:
            scale = max(abs(x) for x in theirs) or 1.0
            worst = max(abs(a - b) for a, b in zip(ours, theirs)) / scale
            print(f"       {len(theirs)} {label} energies: largest difference {worst:.2e} of the largest")
            energies.append({"kind": label, "count": len(theirs), "largest_difference_of_largest": worst})
            if worst > ENERGY_TOLERANCE:
                problems.append(f"{label} energies differ by {worst:.2e} of the largest")
    for label, pattern in (("total", TOTAL), ("global", GLOBAL)):
        compare_energies(label, [float(x) for x in pattern.findall(ours_out)],
                         [float(x) for x in pattern.findall(apbs_out)], problems, energies)
    with open(os.path.join(ours_dir, input_name)) as f:
        text = f.read()
    theirs_files = dx_files(apbs_dir)
    if theirs_files != dx_files(ours_dir):
        problems.append(f"files {dx_files(ours_dir)} vs APBS's {theirs_files}")
    for f in theirs_files:
        if os.path.exists(os.path.join(ours_dir, f)):
            compare_map(f, os.path.join(apbs_dir, f), os.path.join(ours_dir, f),
                        lambda: atoms_of(apbs_dir, text), problems, maps)
    if records is not None:
        records.update(energies=energies, maps=maps, grid_lines_identical=theirs_grids == ours_grids,
                       grid_lines=len(theirs_grids))
    return problems


def main():
    args = common.parse_args(__doc__)
    args.espgrid, args.source = os.path.abspath(args.espgrid), os.path.abspath(args.source)
    if not apbs_pb.find_apbs():
        common.skip("apbs not installed (apt-get install apbs)")
    if not os.path.isdir(EXAMPLES):
        common.skip(f"{EXAMPLES} missing (apt-get install apbs-data)")
    failures = agreed = 0
    with common.Workdir(args.keep) as wd:
        for name, example, text, molecules in CASES:
            slug = re.sub(r"\W+", "_", name)
            apbs_dir, ours_dir = os.path.join(wd, slug, "apbs"), os.path.join(wd, slug, "espgrid")
            for d in (apbs_dir, ours_dir):
                prepare(d, example, text, molecules, args.source)
            ours, ours_s = run([args.espgrid, "apbs", "case.in"], ours_dir)
            if ours.returncode != 0:
                print(f"FAIL {name}: espgrid apbs exit {ours.returncode}\n{ours.stderr[-2000:]}")
                failures += 1
                continue
            theirs, theirs_s = run(["apbs", "case.in"], apbs_dir)
            if theirs.returncode != 0:
                print(f"FAIL {name}: apbs exit {theirs.returncode}\n{theirs.stdout[-1000:]}")
                failures += 1
                continue
            problems = compare_case(name, apbs_dir, ours_dir, theirs.stdout, ours.stdout)
            line = f"{name}: APBS {theirs_s:.1f} s, espgrid {ours_s:.1f} s"
            print(("ok   " if not problems else "FAIL ") + line + "".join("\n       " + p for p in problems), flush=True)
            failures += bool(problems)
            agreed += not problems
    print(f"{agreed} agree, {failures} failed")
    if failures:
        common.fail(f"{failures} case(s) disagree with APBS")


if __name__ == "__main__":
    main()
