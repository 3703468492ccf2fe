#!/usr/bin/python3
"""The table of docs/apbs.md: every input file of APBS's examples (Debian apbs-data,
/usr/share/apbs/examples) and whether `espgrid apbs` runs it, and why not.

Each example's folder is copied to a temporary directory (APBS reads paths from the working
directory; the check also makes sure the outputs could be written) and `espgrid apbs FILE --dry-run`
runs there: the parser, the molecules, NOsh's grids, the solver's ranges and the outputs are all
checked, nothing is solved. Exit 0: the input passes every check made before solving. Exit 2: the
message says which line and keyword stop it (another solver, forces, APOLAR, ...). Inputs APBS
3.4.1 itself cannot run are marked so (checked by running apbs on them).

    /usr/bin/python3 scripts/apbs_examples_table.py [--espgrid build/espgrid] [--write docs/apbs.md]

With --write the table between the markers in that file is replaced; otherwise it is printed.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

EXAMPLES = "/usr/share/apbs/examples"
BEGIN, END = "<!-- apbs-examples-table:begin -->", "<!-- apbs-examples-table:end -->"

# Inputs APBS 3.4.1 (Debian) itself stops on, checked 2026-11-27 by running apbs in a copy of the
# example's folder: why, in a few words.
APBS_FAILS_TOO = {
    "misc/apbs-PDB.in": "APBS fails too: param.dat has no CYX residue",
    "point-pmf/apbs.in": "APBS fails too: complex.pqr is not in the example (runme.sh makes it)",
    "point-pmf/point-pmf-0.in": "APBS fails too: complex.pqr is not in the example (runme.sh makes it)",
    "pbsam-gly/gly_dynamics.in": "APBS fails too: pbsam-auto is no ELEC method",
    "pbsam-gly/gly_electrostatic.in": "APBS fails too: pbsam-auto is no ELEC method",
    "pbsam-gly/gly_energyforce.in": "APBS fails too: pbsam-auto is no ELEC method",
}


def methods(text):
    """'2 mg-auto' / '1 mg-manual, 1 mg-para' / '' for the ELEC blocks of an input."""
    text = re.sub(r"[#%][^\n]*", "", text)
    found = re.findall(r"(?is)\belec\b\s+(?:name\s+\S+\s+)?(\S+)", text)
    counts = {}
    for m in found:
        counts[m.lower()] = counts.get(m.lower(), 0) + 1
    return ", ".join(f"{n} {m}" for m, n in counts.items())


def check(espgrid, example):
    """(status, reason) of one example: status is 'runs' or 'no'."""
    folder = os.path.join(EXAMPLES, os.path.dirname(example))
    with tempfile.TemporaryDirectory() as work:
        for f in os.listdir(folder):
            if os.path.isfile(os.path.join(folder, f)):
                shutil.copy(os.path.join(folder, f), work)
        run = subprocess.run([espgrid, "apbs", os.path.basename(example), "--dry-run", "--quiet"], cwd=work,
                             capture_output=True, text=True)
    if run.returncode == 0:
        return "runs", ""
    lines = [line for line in run.stderr.splitlines() if line.startswith("espgrid: error: ")]
    reason = lines[-1][len("espgrid: error: "):] if lines else run.stderr.strip()[-300:]
    if example in APBS_FAILS_TOO:
        return "no", APBS_FAILS_TOO[example] + " (espgrid: " + reason + ")"
    return "no", reason


def table(espgrid):
    inputs = sorted(os.path.relpath(os.path.join(d, f), EXAMPLES) for d, _, files in os.walk(EXAMPLES)
                    for f in files if f.endswith(".in"))
    rows = ["| example input | ELEC blocks | espgrid apbs | why not |", "| --- | --- | --- | --- |"]
    tally = {}
    for example in inputs:
        with open(os.path.join(EXAMPLES, example), errors="replace") as f:
            blocks = methods(f.read())
        status, reason = check(espgrid, example)
        tally[status] = tally.get(status, 0) + 1
        reason = reason.replace("|", "\\|")
        rows.append(f"| `{example}` | {blocks or '—'} | {status} | {reason} |")
    summary = (f"{len(inputs)} inputs: {tally.get('runs', 0)} run, {tally.get('no', 0)} use what espgrid does not take "
               "(or APBS cannot run either).")
    return summary + "\n\n" + "\n".join(rows) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--espgrid", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                    "build", "espgrid"))
    p.add_argument("--write", help="replace the table between the markers of this Markdown file")
    a = p.parse_args()
    if not os.path.isdir(EXAMPLES):
        sys.exit(f"{EXAMPLES} is missing: apt-get install apbs-data")
    text = table(os.path.abspath(a.espgrid))
    if not a.write:
        print(text)
        return
    with open(a.write) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{a.write} has no {BEGIN} ... {END} markers")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(a.write, "w") as f:
        f.write(head + BEGIN + "\n" + text + END + tail)
    print(f"{a.write}: table updated")


if __name__ == "__main__":
    main()
