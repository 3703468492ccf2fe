#!/usr/bin/python3
"""APBS's own examples (Debian apbs-data, /usr/share/apbs/examples) that `espgrid apbs` runs but the
interop test (tests/interop/test_apbs_frontend.py) does not solve: each solved by APBS 3.4.1 and by
espgrid, and compared as that test compares them (its functions, imported):

  * every "Total electrostatic energy" (each focusing level's) and "Global net ELEC energy" (the
    PRINT results), paired in order, relative difference (target: within 0.1%);
  * calcenergy comps: the components and per-atom energies, against the largest of them;
  * the calculations' grid lines ("Grid dimensions/spacings/lengths/center"), as text;
  * every DX file APBS writes: the same name, the same grid, relative RMS over the nodes >= 1.4 A
    outside every van der Waals sphere (potential maps; every node for other maps; target 1e-3).

Each example's folder is copied twice into a fresh work folder; `apbs FILE.in` runs in one copy and
`ESPGRID apbs FILE.in` in the other, one program at a time (OMP_NUM_THREADS=--threads for both). By
default every block is coarsened to `dime 33` by the interop test's coarse() (lengths kept), and an
mg-para block's per-process `dime` to 33 too (coarse() leaves mg-para alone); --full runs the
examples as they are.

mg-para: Debian's APBS has no MPI, so it runs one partition per process with `async RANK` (as
tests/data/apbs/make_apbs_fixtures.py does); espgrid runs the input once, solving the whole fine
grid in one focusing chain and writing every partition's file (docs/apbs.md, "How APBS's behaviour
is reproduced"). What is comparable: each block's finest-level energy (APBS: the sum of its
partitions' shares; espgrid: the whole grid's), the PRINT energy (APBS: the sum of every
partition's "Global net ELEC energy", each partition's share), and partition R's file (APBS's
rank-R STEM-PE0.dx against espgrid's STEM-PE<R>.dx: same nodes). The levels above the finest are
different grids in the two programs (APBS's per partition, espgrid's whole) and are only recorded.
APBS's partitions have focusing boundaries inside the molecule, espgrid's single solve has none,
so mg-para is expected to differ by more than the target; it is reported, never counted as agreement
(and does not fail the run). --one-partition makes every mg-para block `pdime 1 1 1` (a diagnostic:
one process, no partition boundaries, compared level by level like any other input).

    /usr/bin/python3 benchmarks/apbs_examples_compare.py [--espgrid BIN] [--full] [--one-partition]
        [--all] [--threads N] [--out benchmarks/results/NAME] [--keep] [EXAMPLE.in ...]

EXAMPLE.in: paths under /usr/share/apbs/examples (default: every example docs/apbs.md's table lists
as running in espgrid, less those the interop test's CASES solve; --all for all of them). Exit 1
when an example (other than mg-para) disagrees or a program fails.
"""

import argparse
import csv
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
import test_apbs_frontend as frontend  # noqa: E402  (common, apbs_pb, numpy)

EXAMPLES = frontend.EXAMPLES
CALCULATION = re.compile(r"^CALCULATION #(\d+) \(([^)]*)\): ", re.M)


def runnable_examples():
    """The inputs docs/apbs.md's generated table marks 'runs'."""
    with open(os.path.join(ROOT, "docs", "apbs.md")) as f:
        text = f.read()
    table = text[text.index("<!-- apbs-examples-table:begin -->"):text.index("<!-- apbs-examples-table:end -->")]
    return re.findall(r"^\| `([^`]+)` \| [^|]* \| runs \|", table, re.M)


def interop_examples():
    return {example for _, example, _, _ in frontend.CASES if example}


def is_para(text):
    return bool(re.search(r"(?im)^\s*mg-para", text))


def coarse_all(text):
    """The interop test's coarse(), and an mg-para block's per-process dime at 33 too."""
    if not is_para(text):
        return frontend.coarse(text)
    return re.sub(r"(?is)\belec\b.*?\bend\b",
                  lambda m: re.sub(r"(?im)^(\s*dime)\s+\d+\s+\d+\s+\d+", r"\1 33 33 33", m.group(0)), text)


def partitions(text):
    """The number of processes an mg-para input's blocks ask for (pdime's product; the same for all)."""
    counts = {math.prod(int(x) for x in m.groups())
              for m in re.finditer(r"(?im)^\s*pdime\s+(\d+)\s+(\d+)\s+(\d+)", text)}
    if len(counts) != 1:
        raise SystemExit(f"mg-para blocks with different process counts {sorted(counts)}")
    return counts.pop()


def one_partition(text):
    """mg-para blocks with `pdime 1 1 1`: one process, no partition boundaries (a diagnostic)."""
    return re.sub(r"(?im)^(\s*pdime)\s+\d+\s+\d+\s+\d+", r"\1 1 1 1", text)


def with_async(text, rank):
    return re.sub(r"(?im)^(\s*mg-para)\s*$", rf"\1\n    async {rank}", text)


def run(cmd, cwd, threads):
    """(CompletedProcess, wall s, CPU s of the child: user + system)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=7200, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, wall, cpu


def block_energies(stdout):
    """[(calculation name, [each level's total energy])] in the order the blocks ran; a block's
    levels are consecutive CALCULATIONs of one name."""
    blocks = []
    marks = list(CALCULATION.finditer(stdout))
    for i, m in enumerate(marks):
        section = stdout[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(stdout)]
        energies = [float(x) for x in frontend.TOTAL.findall(section)]
        if blocks and blocks[-1][0] == m.group(2):
            blocks[-1][1].extend(energies)
        else:
            blocks.append((m.group(2), energies))
    return blocks


def compare_para(text, ours_dir, ours_out, ranks, problems, record):
    """mg-para: APBS's partitions (ranks: [(dir, stdout)]) against espgrid's one run."""
    energies, maps = [], []
    ours_blocks = block_energies(ours_out)
    rank_blocks = [block_energies(out) for _, out in ranks]
    if any([b[0] for b in rb] != [b[0] for b in ours_blocks] for rb in rank_blocks):
        problems.append(f"blocks {[b[0] for b in ours_blocks]} vs APBS's {[[b[0] for b in rb] for rb in rank_blocks]}")
    else:
        for i, (name, ours_levels) in enumerate(ours_blocks):
            if not ours_levels:
                continue
            shares = [rb[i][1][-1] for rb in rank_blocks]
            frontend.compare_energies(f"total, finest level of {name} (APBS: sum of {len(shares)} partitions)",
                                      [ours_levels[-1]], [sum(shares)], problems, energies)
            energies[-1]["apbs_partitions"] = shares
            record.setdefault("levels", []).append({
                "block": name, "espgrid_levels": ours_levels,
                "apbs_levels_sum_of_partitions": [sum(rb[i][1][k] for rb in rank_blocks)
                                                  for k in range(len(rank_blocks[0][i][1]))]})
    ours_global = [float(x) for x in frontend.GLOBAL.findall(ours_out)]
    rank_global = [[float(x) for x in frontend.GLOBAL.findall(out)] for _, out in ranks]
    if any(len(g) != len(ours_global) for g in rank_global):
        problems.append(f"{len(ours_global)} PRINT energies, APBS's partitions printed {[len(g) for g in rank_global]}")
    else:
        for k, value in enumerate(ours_global):
            shares = [g[k] for g in rank_global]
            frontend.compare_energies(f"global (APBS: sum of {len(shares)} partitions)", [value], [sum(shares)],
                                      problems, energies)
            energies[-1]["apbs_partitions"] = shares
    expected = set()
    for r, (apbs_dir, _) in enumerate(ranks):
        for f in frontend.dx_files(apbs_dir):
            mine = re.sub(r"-PE0\.dx$", f"-PE{r}.dx", f)
            expected.add(mine)
            if not os.path.exists(os.path.join(ours_dir, mine)):
                problems.append(f"espgrid wrote no {mine} (APBS's partition {r} wrote {f})")
                continue
            frontend.compare_map(f"{mine} (APBS rank {r}'s {f})", os.path.join(apbs_dir, f),
                                 os.path.join(ours_dir, mine), lambda d=apbs_dir: frontend.atoms_of(d, text),
                                 problems, maps)
    if set(frontend.dx_files(ours_dir)) != expected:
        problems.append(f"files {frontend.dx_files(ours_dir)} vs APBS's partitions' {sorted(expected)}")
    grids = [m.group(0) for m in frontend.GRID_LINE.finditer(ours_out)]
    theirs = [[m.group(0) for m in frontend.GRID_LINE.finditer(out)] for _, out in ranks]
    record.update(energies=energies, maps=maps, grid_lines_identical=None,
                  grid_lines_note="not compared: espgrid's levels span the whole grid, APBS's are per partition",
                  espgrid_grid_lines=grids, apbs_grid_lines=theirs)


def compare_example(example, args, work):
    """One example: both programs run; returns the example's record."""
    input_name = os.path.basename(example)
    with open(os.path.join(EXAMPLES, example)) as f:
        original = f.read()
    resolution = (lambda t: t) if args.full else coarse_all
    edit = (lambda t: one_partition(resolution(t))) if args.one_partition else resolution
    text = edit(original)
    slug = re.sub(r"\W+", "_", example[:-3])
    ours_dir = os.path.join(work, slug, "espgrid")
    frontend.prepare(ours_dir, example, None, [], ROOT, input_name, edit)
    record = {"example": example, "resolution": "full" if args.full else "dime 33", "mg_para": is_para(text),
              "one_partition": bool(args.one_partition and is_para(text))}
    problems = []
    ours, ours_s, ours_cpu = run([args.espgrid, "apbs", input_name], ours_dir, args.threads)
    record["espgrid"] = {"exit": ours.returncode, "wall_s": round(ours_s, 3), "cpu_s": round(ours_cpu, 3)}
    save_log(args, slug, "espgrid", ours)
    if ours.returncode != 0:
        problems.append(f"espgrid apbs exit {ours.returncode}: {ours.stderr.strip()[-1000:]}")
    ranks = []
    if is_para(text):
        record["apbs"] = {"partitions": []}
        for r in range(partitions(text)):
            d = os.path.join(work, slug, f"apbs-rank{r}")
            frontend.prepare(d, example, None, [], ROOT, input_name, lambda t, r=r: with_async(edit(t), r))
            theirs, s, cpu = run(["apbs", input_name], d, args.threads)
            save_log(args, slug, f"apbs-rank{r}", theirs)
            record["apbs"]["partitions"].append({"rank": r, "exit": theirs.returncode, "wall_s": round(s, 3),
                                                 "cpu_s": round(cpu, 3)})
            if theirs.returncode != 0:
                problems.append(f"apbs (async {r}) exit {theirs.returncode}: {theirs.stdout.strip()[-1000:]}")
            ranks.append((d, theirs.stdout))
        parts = record["apbs"]["partitions"]
        record["apbs"].update(exit=max(p["exit"] for p in parts), wall_s=round(sum(p["wall_s"] for p in parts), 3),
                              cpu_s=round(sum(p["cpu_s"] for p in parts), 3),
                              slowest_partition_wall_s=max(p["wall_s"] for p in parts))
    else:
        apbs_dir = os.path.join(work, slug, "apbs")
        frontend.prepare(apbs_dir, example, None, [], ROOT, input_name, edit)
        theirs, s, cpu = run(["apbs", input_name], apbs_dir, args.threads)
        save_log(args, slug, "apbs", theirs)
        record["apbs"] = {"exit": theirs.returncode, "wall_s": round(s, 3), "cpu_s": round(cpu, 3)}
        if theirs.returncode != 0:
            problems.append(f"apbs exit {theirs.returncode}: {theirs.stdout.strip()[-1000:]}")
    if not problems:
        if len(ranks) > 1:
            compare_para(text, ours_dir, ours.stdout, ranks, problems, record)
        else:  # one process (one partition of mg-para: the same levels and file in both programs)
            apbs_dir, apbs_out = ranks[0] if ranks else (apbs_dir, theirs.stdout)
            problems += frontend.compare_case(example, apbs_dir, ours_dir, apbs_out, ours.stdout,
                                              input_name, record)
    failed_run = record["espgrid"]["exit"] != 0 or record["apbs"]["exit"] != 0
    record["status"] = ("failed to run" if failed_run else "agrees" if not problems
                        else "differs (mg-para: APBS's partitions)" if len(ranks) > 1 else "disagrees")
    record["problems"] = problems
    return record


def save_log(args, slug, program, out):
    if args.out:
        logs = os.path.join(args.out, "logs")
        os.makedirs(logs, exist_ok=True)
        with open(os.path.join(logs, f"{slug}.{program}.txt"), "w") as f:
            f.write(out.stdout + ("\n--- stderr ---\n" + out.stderr if out.stderr.strip() else ""))


def partitioned(record):
    return record["mg_para"] and not record["one_partition"]


def write_tables(args, records):
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(records, f, indent=1)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["example", "quantity", "espgrid", "apbs", "relative_difference", "note"])
        for r in records:
            for e in r.get("energies", []):
                if "espgrid" in e:
                    w.writerow([r["example"], f"{e['kind']} energy (kJ/mol)", repr(e["espgrid"]), repr(e["apbs"]),
                                f"{e['relative']:.3e}", ""])
                else:
                    w.writerow([r["example"], f"{e['count']} {e['kind']} energies", "", "",
                                f"{e['largest_difference_of_largest']:.3e}", "largest difference / largest energy"])
            for m in r.get("maps", []):
                if m["same_grid"]:
                    w.writerow([r["example"], f"map {m['file']}", "", "", f"{m['relative_rms']:.3e}",
                                f"relative RMS over {m['nodes']} nodes, {m['region']}"])
                else:
                    w.writerow([r["example"], f"map {m['file']}", "", "", "", "different grid"])
            w.writerow([r["example"], "wall time (s)", r["espgrid"]["wall_s"], r["apbs"]["wall_s"], "",
                        f"status: {r['status']}"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("examples", nargs="*", help="inputs under /usr/share/apbs/examples (default: see above)")
    p.add_argument("--espgrid", default=os.path.join(ROOT, "build", "espgrid"))
    p.add_argument("--full", action="store_true", help="the examples' own dime (default: dime 33)")
    p.add_argument("--all", action="store_true", help="also the examples the interop test solves")
    p.add_argument("--one-partition", action="store_true",
                   help="mg-para blocks with pdime 1 1 1 (a diagnostic: no partition boundaries)")
    p.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of both programs (default 2)")
    p.add_argument("--out", help="folder for results.json, results.csv and both programs' logs")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args()
    args.espgrid = os.path.abspath(args.espgrid)
    if not os.access(args.espgrid, os.X_OK):
        sys.exit(f"{args.espgrid}: no espgrid binary (--espgrid BIN)")
    if not shutil.which("apbs"):
        sys.exit("apbs is not installed (apt-get install apbs apbs-data)")
    examples = args.examples or [e for e in runnable_examples() if args.all or e not in interop_examples()]
    if args.out:
        args.out = os.path.abspath(args.out)
        os.makedirs(args.out, exist_ok=True)
    print(f"{len(examples)} examples, {'full resolution' if args.full else 'dime 33'}, "
          f"OMP_NUM_THREADS={args.threads}, {args.espgrid}", flush=True)
    records = []
    work = tempfile.mkdtemp(prefix="espgrid-apbs-examples-")
    try:
        for example in examples:
            print(f"---- {example}", flush=True)
            r = compare_example(example, args, os.path.join(work))
            records.append(r)
            print(f"{r['status']}: APBS {r['apbs']['wall_s']:.1f} s, espgrid {r['espgrid']['wall_s']:.1f} s"
                  + "".join("\n       " + x for x in r["problems"]), flush=True)
            if args.out:
                write_tables(args, records)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    energies = [e["relative"] for r in records if not partitioned(r) for e in r.get("energies", []) if "relative" in e]
    rms = [m["relative_rms"] for r in records if not partitioned(r) for m in r.get("maps", []) if m.get("same_grid")]
    print(f"{sum(r['status'] == 'agrees' for r in records)} of {len(records)} agree; without partitioned mg-para: "
          f"{len(energies)} energies, largest relative difference {max(energies, default=0):.2e}; "
          f"{len(rms)} maps, largest relative RMS {max(rms, default=0):.2e}")
    bad = [r["example"] for r in records if r["status"] in ("failed to run", "disagrees")]
    if bad:
        print("disagree or failed: " + ", ".join(bad))
        sys.exit(1)


if __name__ == "__main__":
    main()
