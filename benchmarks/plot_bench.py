#!/usr/bin/python3
"""Charts from `espgrid bench --out DIR` results.

    /usr/bin/python3 benchmarks/plot_bench.py benchmarks/results [--out DIR]

Reads every bench-*.json in the folder and writes PNGs beside them (or into --out):

  bench-variants.png    throughput of every variant (log scale), rsqrt ceiling as a line
  bench-blocks.png      block-shape sweep: threads per block vs throughput, shapes labelled
  bench-coarsening.png  points per thread vs throughput
  bench-scaling.png     throughput vs atoms and vs grid points (log-log)
  bench-speedup.png     cpu-parallel vs the best GPU variant
  bench-msm.png         multilevel summation vs the exact kernel: time against atoms (the crossover),
                        error against its bound, per-phase times of the largest structure, map sizes
  bench-msm-accuracy.png  the accuracy table: relative RMS error against a/h per order and molecule

Only rows whose output verified ("ok") are drawn; a chart without such rows is skipped with a
note, so CPU-only results give the charts they can. Needs Debian's python3-matplotlib only.
"""

import argparse
import glob
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

CPU_COLOUR = "#4c72b0"
GPU_COLOUR = "#55a868"
FAIL_COLOUR = "#c44e52"
CEILING_COLOUR = "#c44e52"
PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]
# One colour per kernel in every chart (registry order); others get the remaining colours.
KERNEL_COLOURS = {
    "cpu-parallel": "#4c72b0", "cpu-reference": "#64b5cd", "cpu-naive": "#8c8c8c", "cuda-scatter": "#937860",
    "cuda-gather": "#dd8452", "cuda-constant": "#55a868", "cuda-coarsened": "#c44e52", "cuda-unrolled": "#8172b3",
}


def colour_of(kernel):
    if kernel not in KERNEL_COLOURS:
        KERNEL_COLOURS[kernel] = PALETTE[len(KERNEL_COLOURS) % len(PALETTE)]
    return KERNEL_COLOURS[kernel]


def load(folder):
    """kind -> document, from every bench-*.json in `folder`."""
    docs = {}
    for path in sorted(glob.glob(os.path.join(folder, "bench-*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"plot_bench: skipping {path}: {e}", file=sys.stderr)
            continue
        if not str(doc.get("format", "")).startswith("espgrid-bench/"):
            print(f"plot_bench: skipping {path}: not an espgrid bench file", file=sys.stderr)
            continue
        docs[doc.get("kind", os.path.basename(path))] = doc
    return docs


def ok_rows(doc):
    return [r for r in doc.get("rows", []) if r.get("verified") == "ok" and r.get("atom_evals_per_s")]


def ceiling(doc):
    c = (doc or {}).get("metadata", {}).get("rsqrt_ceiling") or {}
    return c.get("rsqrt_per_second"), c


def eng(value):
    """1.23e12 -> '1.23 T'."""
    if value == 0:
        return "0"
    if value is None or not math.isfinite(value) or value < 0:
        return "-"
    exponent = min(4, max(0, int(math.floor(math.log10(value) / 3))))
    prefix = ["", " k", " M", " G", " T"][exponent]
    scaled = value / 10 ** (3 * exponent)
    return f"{scaled:.3g}{prefix}"


def percent(fraction):
    return "<1%" if fraction < 0.01 else f"{100 * fraction:.0f}%"


def footer(fig, doc):
    m = doc.get("metadata", {})
    device = m.get("device", "?") if m.get("cuda_available") else "no GPU"
    text = (f"espgrid {m.get('espgrid_version', '?')} ({m.get('git_commit', '?')}), {m.get('date_utc', '?')}; "
            f"{device}; host {m.get('host_cpu', '?')}, {m.get('cpu_threads', '?')} threads; "
            f"median of {m.get('settings', {}).get('repeats', '?')} runs")
    fig.text(0.01, 0.005, text, fontsize=7, color="#555555", ha="left", va="bottom")


def ceiling_line(ax, rate, meta, horizontal=True):
    if not rate:
        return
    label = (f"measured rsqrt ceiling {eng(rate)}/s"
             f" ({meta.get('multiprocessors', '?')} SMs at {meta.get('sm_clock_ghz', 0):.2f} GHz)")
    ax.axhline(rate, color=CEILING_COLOUR, linestyle="--", linewidth=1.2, label=label, zorder=1)


def save(fig, out_dir, name, doc):
    footer(fig, doc)
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    print(f"wrote {path}")


# ---- charts ---------------------------------------------------------------------------------

def plot_variants(doc, out_dir):
    rows = [r for r in doc.get("rows", []) if r.get("atom_evals_per_s")]
    skipped = [r for r in doc.get("rows", []) if r.get("verified") in ("skipped", "unsupported")]
    if not rows:
        return "no measured variant"
    rate, meta = ceiling(doc)
    fig, ax = plt.subplots(figsize=(10, 6))
    names = [r["kernel"] for r in rows]
    values = [r["atom_evals_per_s"] for r in rows]
    colours = [FAIL_COLOUR if r["verified"] != "ok" else (GPU_COLOUR if r["backend"] == "cuda" else CPU_COLOUR)
               for r in rows]
    bars = ax.bar(names, values, color=colours, zorder=2)
    ax.set_yscale("log")
    top = max(values + ([rate] if rate else []))
    ax.set_ylim(min(values) / 3, top * 6)
    ceiling_line(ax, rate, meta)
    for bar, r in zip(bars, rows):
        lines = [f"{eng(r['atom_evals_per_s'])}/s", f"{eng(r['gflops'] * 1e9)}FLOPS"]
        if r.get("ceiling_fraction") is not None:
            lines.append(percent(r["ceiling_fraction"]) + " of ceiling")
        if r["nz_used"] < r["nz_full"] or r["ny"] < r["ny_full"]:
            part = (f"{r['nz_used']}/{r['nz_full']} planes" if r["ny"] == r["ny_full"]
                    else f"{r['ny']}/{r['ny_full']} rows")
            lines.append(part)
        if r["verified"] != "ok":
            lines.append(r["verified"])
        ax.annotate("\n".join(lines), (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=7.5)
    ax.set_ylabel("atom evaluations per second (log scale)")
    first = rows[0]
    title = (f"DCS kernel variants: {first['nx']}x{first['ny_full']}x{first['nz_full']} grid, "
             f"{first['atoms']:,} atoms")
    ax.set_title(title)
    ax.grid(axis="y", which="major", alpha=0.3, zorder=0)
    handles, labels = [], []
    for backend, colour, label in (("cpu", CPU_COLOUR, "CPU"), ("cuda", GPU_COLOUR, "GPU (CUDA)")):
        if any(r["backend"] == backend for r in rows):
            handles.append(plt.Rectangle((0, 0), 1, 1, color=colour))
            labels.append(label)
    if any(r["verified"] != "ok" for r in rows):
        handles.append(plt.Rectangle((0, 0), 1, 1, color=FAIL_COLOUR))
        labels.append("output failed the oracle check")
    if rate:
        handles.append(ax.get_lines()[0])
        labels.append(ax.get_lines()[0].get_label())
    ax.legend(handles, labels, loc="upper left", fontsize=8)
    note = "Bars: grid points x atoms / median kernel time. Slow variants timed on the first planes only (time budget)."
    if skipped:
        note += "\nNot run: " + ", ".join(f"{r['kernel']} ({r['verified']})" for r in skipped)
    fig.text(0.01, 0.035, note, fontsize=7.5, va="bottom")
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    fig.tight_layout(rect=(0, 0.08 if skipped else 0.06, 1, 1))
    save(fig, out_dir, "bench-variants.png", doc)
    return None


def by_kernel(rows):
    out = {}
    for r in rows:
        out.setdefault(r["kernel"], []).append(r)
    return out


def plot_blocks(doc, out_dir):
    rows = ok_rows(doc)
    if not rows:
        return "no verified block-shape measurement"
    rate, meta = ceiling(doc)
    groups = by_kernel(rows)
    unsupported = by_kernel([r for r in doc.get("rows", []) if r.get("verified") == "unsupported"])
    n = len(groups)
    cols = 2 if n > 1 else 1
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(6.5 * cols, 4.6 * nrows), squeeze=False)
    for ax, (kernel, rs) in zip(axes.flat, groups.items()):
        values = [r["atom_evals_per_s"] for r in rs]
        best = max(rs, key=lambda r: r["atom_evals_per_s"])
        hi = max(values + ([rate] if rate else []))
        # Shapes with the same thread count are spread a little along x (slowest left), and
        # their labels pushed apart vertically so that none overlap.
        groups_t = {}
        for r in rs:
            groups_t.setdefault(r["block_x"] * r["block_y"], []).append(r)
        gap = 0.045 * hi
        for t, group in groups_t.items():
            group.sort(key=lambda r: r["atom_evals_per_s"])
            m = len(group)
            xs = [t * 2 ** (0.09 * (i - (m - 1) / 2)) for i in range(m)]
            ys = [r["atom_evals_per_s"] for r in group]
            label_y = []
            for y in ys:
                label_y.append(max(y, label_y[-1] + gap) if label_y else y)
            shift = max(0.0, (label_y[-1] - ys[-1]) / 2)  # centre the stack on the points
            label_y = [y - shift for y in label_y]
            for i in range(1, m):  # keep the spacing after centring
                label_y[i] = max(label_y[i], label_y[i - 1] + gap)
            ax.scatter(xs, ys, color=GPU_COLOUR, zorder=3, s=22)
            x_label = max(xs) * 1.07
            for x, y, ly, r in zip(xs, ys, label_y, group):
                ax.annotate(f"{r['block_x']}x{r['block_y']}", (x, y), xytext=(x_label, ly), textcoords="data",
                            ha="left", va="center", fontsize=7, fontweight="bold" if r is best else "normal",
                            arrowprops=dict(arrowstyle="-", color="#999999", linewidth=0.5, shrinkA=0, shrinkB=2))
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator([64, 128, 256, 512, 1024]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v)}"))
        ax.set_xlim(45, 1700)
        ceiling_line(ax, rate, meta)
        ax.set_ylim(0, hi * 1.12)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: eng(v)))
        pct = f", {percent(best['ceiling_fraction'])} of ceiling" if best.get("ceiling_fraction") else ""
        ax.set_title(f"{kernel}: best {best['block_x']}x{best['block_y']} "
                     f"({eng(best['atom_evals_per_s'])}/s{pct})", fontsize=10)
        ax.set_xlabel("threads per block")
        ax.set_ylabel("atom evaluations / s")
        ax.grid(alpha=0.3)
        if kernel in unsupported:
            shapes = ", ".join(f"{r['block_x']}x{r['block_y']}" for r in unsupported[kernel])
            ax.text(0.01, 0.01, f"unsupported: {shapes}", transform=ax.transAxes, fontsize=7, color=FAIL_COLOUR)
        if rate:
            ax.legend(loc="lower right", fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    first = rows[0]
    fig.suptitle(f"Block-shape sweep: {first['nx']}x{first['ny_full']}x{first['nz_full']} grid, "
                 f"{first['atoms']:,} atoms (bx x by labelled)")
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    save(fig, out_dir, "bench-blocks.png", doc)
    return None


def plot_coarsening(doc, out_dir):
    rows = ok_rows(doc)
    if not rows:
        return "no verified coarsening measurement"
    rate, meta = ceiling(doc)
    fig, ax = plt.subplots(figsize=(8, 5))
    for kernel, rs in by_kernel(rows).items():
        rs = sorted(rs, key=lambda r: r["coarsening"])
        xs = [r["coarsening"] for r in rs]
        ys = [r["atom_evals_per_s"] for r in rs]
        ax.plot(xs, ys, marker="o", color=colour_of(kernel), label=kernel, zorder=3)
        for r in rs:
            if r.get("ceiling_fraction"):
                ax.annotate(percent(r["ceiling_fraction"]), (r["coarsening"], r["atom_evals_per_s"]),
                            xytext=(0, 6), textcoords="offset points", ha="center", fontsize=7)
    ceiling_line(ax, rate, meta)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([1, 2, 4, 8, 16]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v)}"))
    ax.set_ylim(0, max([r["atom_evals_per_s"] for r in rows] + ([rate] if rate else [])) * 1.12)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: eng(v)))
    ax.set_xlabel("points per thread along x (coarsening)")
    ax.set_ylabel("atom evaluations / s")
    first = rows[0]
    ax.set_title(f"Coarsening sweep (default block): {first['nx']}x{first['ny_full']}x{first['nz_full']} grid, "
                 f"{first['atoms']:,} atoms", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(fig, out_dir, "bench-coarsening.png", doc)
    return None


def scaling_panel(ax, doc, x_of, xlabel, title):
    rows = ok_rows(doc)
    if not rows:
        ax.set_visible(False)
        return False
    rate, meta = ceiling(doc)
    for kernel, rs in by_kernel(rows).items():
        rs = sorted(rs, key=x_of)
        colour = colour_of(kernel)
        style = "--" if rs[0]["backend"] == "cpu" else "-"
        ax.plot([x_of(r) for r in rs], [r["atom_evals_per_s"] for r in rs], marker="o", linestyle=style,
                color=colour, label=kernel, zorder=3)
    ceiling_line(ax, rate, meta)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("atom evaluations / s")
    ax.set_title(title, fontsize=10)
    ax.grid(which="both", alpha=0.25)
    return True


def plot_scaling(docs, out_dir):
    atoms, grid = docs.get("atoms"), docs.get("grid")
    have_atoms = atoms is not None and ok_rows(atoms)
    have_grid = grid is not None and ok_rows(grid)
    if not have_atoms and not have_grid:
        return "no verified atoms or grid sweep"
    panels = [p for p in (("atoms", atoms) if have_atoms else None, ("grid", grid) if have_grid else None) if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
    for ax, (kind, doc) in zip(axes.flat, panels):
        if kind == "atoms":
            r0 = ok_rows(doc)[0]
            scaling_panel(ax, doc, lambda r: r["atoms"], "atoms",
                          f"vs atoms ({r0['nx']}x{r0['ny_full']}x{r0['nz_full']} grid)")
        else:
            r0 = ok_rows(doc)[0]
            scaling_panel(ax, doc, lambda r: r["nx"] * r["ny_full"] * r["nz_full"], "grid points",
                          f"vs grid size ({r0['atoms']:,} atoms; cubes 16^3 up)")
    fig.suptitle("Scaling (CPU dashed; slow runs timed on the planes that fit the time budget)", fontsize=11)
    handles, labels = {}, {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=min(6, len(handles)),
               fontsize=8, bbox_to_anchor=(0.5, 0.03), frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 0.96))
    save(fig, out_dir, "bench-scaling.png", atoms if have_atoms else grid)
    return None


def plot_speedup(doc, out_dir):
    entries = [s for s in doc.get("speedups", []) if s.get("kernel_speedup")]
    if not entries:
        return "no CPU-vs-GPU pair measured"
    fig, ax = plt.subplots(figsize=(9, 5))
    xs = range(len(entries))
    width = 0.38
    k = ax.bar([x - width / 2 for x in xs], [s["kernel_speedup"] for s in entries], width, color=GPU_COLOUR,
               label="kernel time", zorder=2)
    w = ax.bar([x + width / 2 for x in xs], [s["wall_speedup"] or 0 for s in entries], width, color=CPU_COLOUR,
               label="with transfers (wall)", zorder=2)
    for bars in (k, w):
        for bar in bars:
            if bar.get_height() > 0:
                ax.annotate(f"{bar.get_height():.0f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{s['label']}\n{s['gpu_kernel']}" for s in entries], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(bottom=1, top=max(max(s["kernel_speedup"], s["wall_speedup"] or 0) for s in entries) * 2)
    ax.set_ylabel("speedup over cpu-parallel (log scale)")
    m = doc.get("metadata", {})
    ax.set_title(f"Best GPU variant vs cpu-parallel ({m.get('cpu_threads', '?')} threads)", fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.25, zorder=0)
    ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(fig, out_dir, "bench-speedup.png", doc)
    return None


# ---- multilevel summation (espgrid bench --sweep msm, --sweep msm-accuracy) -------------------------

PHASES = ["binning", "anterpolation", "restriction", "cutoff", "top", "prolongation", "interpolation", "short_range"]
PRESET_COLOURS = {0.001: "#dd8452", 0.0001: "#55a868"}


def plot_msm(doc, out_dir):
    rows = [r for r in doc.get("msm_rows", []) if r.get("kernel_ms_median")]
    if not rows:
        return "no MSM measurement"
    sizes = [r for r in rows if r.get("part") == "atoms"]
    maps = [r for r in rows if r.get("part") == "map"]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    ax = axes[0][0]
    exact = {}
    for r in sizes:
        if r.get("exact_ms"):
            exact[r["atoms"]] = (r["exact_ms"], r.get("exact_scaled"))
    if exact:
        xs = sorted(exact)
        ax.plot(xs, [exact[x][0] / 1e3 for x in xs], "o-", color=KERNEL_COLOURS.get(sizes[0]["exact_kernel"], "#8172b3"),
                label=f"{sizes[0]['exact_kernel']} (exact; hollow: scaled from the planes timed)")
        for x in xs:
            if exact[x][1]:
                ax.plot([x], [exact[x][0] / 1e3], "o", color="white", markeredgecolor="#8172b3", zorder=3)
    for accuracy in sorted({r["accuracy"] for r in sizes}, reverse=True):
        series = sorted([r for r in sizes if r["accuracy"] == accuracy], key=lambda r: r["atoms"])
        colour = PRESET_COLOURS.get(accuracy, "#c44e52")
        ax.plot([r["atoms"] for r in series], [r["kernel_ms_median"] / 1e3 for r in series], "s-", color=colour,
                label=f"{series[0]['kernel']} --accuracy {accuracy:g}")
    for c in doc.get("crossover", []):
        if c.get("atoms"):
            ax.axvline(c["atoms"], color=PRESET_COLOURS.get(c["accuracy"], "#c44e52"), linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("atoms")
    ax.set_ylabel("kernel time for the whole map, s (log)")
    spacing = sizes[0]["spacing"] if sizes else 0
    ax.set_title(f"Time vs atoms at {spacing:g} Å (dotted: crossover)", fontsize=10)
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=7)

    ax = axes[0][1]
    for accuracy in sorted({r["accuracy"] for r in sizes}, reverse=True):
        series = sorted([r for r in sizes if r["accuracy"] == accuracy and r.get("relative_rms")],
                        key=lambda r: r["atoms"])
        if not series:
            continue
        colour = PRESET_COLOURS.get(accuracy, "#c44e52")
        ax.plot([r["atoms"] for r in series], [r["relative_rms"] for r in series], "s-", color=colour,
                label=f"--accuracy {accuracy:g}")
        ax.axhline(series[0]["bound"], color=colour, linestyle="--", linewidth=1, label=f"bound {series[0]['bound']:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("atoms")
    ax.set_ylabel("relative RMS error, points >= 1.4 Å from atoms")
    ax.set_title("Error against the exact sum (sampled, double oracle)", fontsize=10)
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=7)

    ax = axes[1][0]
    largest = max(sizes or rows, key=lambda r: r["atoms"])
    picks = sorted([r for r in sizes if r["atoms"] == largest["atoms"]], key=lambda r: -r["accuracy"])
    bottoms = [0.0] * len(picks)
    for i, phase in enumerate(PHASES):
        values = [(r.get("phases_ms") or {}).get(phase) or 0 for r in picks]
        ax.bar(range(len(picks)), values, bottom=bottoms, color=PALETTE[i % len(PALETTE)], label=phase, zorder=2)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.set_xticks(range(len(picks)))
    ax.set_xticklabels([f"--accuracy {r['accuracy']:g}\na={r['cutoff']:g} h={r['msm_spacing']:g} L{r['levels']}"
                        for r in picks], fontsize=8)
    ax.set_ylabel("ms")
    ax.set_title(f"Phases at {largest['atoms']:,} atoms, {largest['points']:.3g} points", fontsize=10)
    ax.grid(axis="y", alpha=0.25, zorder=0)
    ax.legend(fontsize=7, ncol=2)

    ax = axes[1][1]
    if maps:
        base = [r for r in sizes if r["structure"] == maps[0]["structure"]]
        all_map = sorted(maps + base, key=lambda r: r["points"])
        for accuracy in sorted({r["accuracy"] for r in all_map}, reverse=True):
            series = [r for r in all_map if r["accuracy"] == accuracy]
            ax.plot([r["points"] for r in series], [r["kernel_ms_median"] / 1e3 for r in series], "s-",
                    color=PRESET_COLOURS.get(accuracy, "#c44e52"), label=f"MSM --accuracy {accuracy:g}")
        ex = sorted({(r["points"], r["exact_ms"]) for r in all_map if r.get("exact_ms")})
        ax.plot([p for p, _ in ex], [e / 1e3 for _, e in ex], "o-", color="#8172b3", label="exact kernel")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("map points")
        ax.set_ylabel("kernel time, s (log)")
        ax.set_title(f"Map sizes: {maps[0]['structure']} ({maps[0]['atoms']:,} atoms)", fontsize=10)
        ax.grid(which="both", alpha=0.25)
        ax.legend(fontsize=7)
    else:
        ax.set_axis_off()
    fig.suptitle("Multilevel summation vs the exact sum", fontsize=11)
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    save(fig, out_dir, "bench-msm.png", doc)
    return None


def plot_msm_accuracy(doc, out_dir):
    rows = [r for r in doc.get("accuracy_rows", []) if r.get("relative_rms")]
    if not rows:
        return "no accuracy measurement"
    fig, ax = plt.subplots(figsize=(9, 6))
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    molecules = sorted({r["molecule"] for r in rows})
    for order, colour in ((3, "#4c72b0"), (5, "#c44e52")):
        for i, molecule in enumerate(molecules):
            series = sorted([r for r in rows if r["order"] == order and r["molecule"] == molecule],
                            key=lambda r: r["ratio"])
            if series:
                ax.plot([r["ratio"] for r in series], [r["relative_rms"] for r in series], markers[i % len(markers)],
                        color=colour, alpha=0.8,
                        label=f"{'cubic' if order == 3 else 'quintic'}, {molecule}")
    for bound in (1e-3, 1e-4):
        ax.axhline(bound, color="#555555", linestyle="--", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("a / h (cutoff over finest grid spacing)")
    ax.set_ylabel("relative RMS error, points >= 1.4 Å from atoms")
    ax.set_title("MSM error against the exact sum on the bundled molecules", fontsize=10)
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(fig, out_dir, "bench-msm-accuracy.png", doc)
    return None


def main(argv):
    parser = argparse.ArgumentParser(description="Charts from espgrid bench JSON results.")
    parser.add_argument("results", help="folder with bench-*.json (espgrid bench --out DIR)")
    parser.add_argument("--out", help="folder for the PNGs (default: the results folder)")
    args = parser.parse_args(argv)
    docs = load(args.results)
    if not docs:
        print(f"plot_bench: no bench-*.json in {args.results}", file=sys.stderr)
        return 1
    out_dir = args.out or args.results
    os.makedirs(out_dir, exist_ok=True)
    charts = [
        ("variants", lambda: plot_variants(docs["variants"], out_dir) if "variants" in docs else "no bench-variants.json"),
        ("blocks", lambda: plot_blocks(docs["blocks"], out_dir) if "blocks" in docs else "no bench-blocks.json"),
        ("coarsening",
         lambda: plot_coarsening(docs["coarsening"], out_dir) if "coarsening" in docs else "no bench-coarsening.json"),
        ("scaling", lambda: plot_scaling(docs, out_dir)),
        ("speedup", lambda: plot_speedup(docs["speedup"], out_dir) if "speedup" in docs else "no bench-speedup.json"),
        ("msm", lambda: plot_msm(docs["msm"], out_dir) if "msm" in docs else "no bench-msm.json"),
        ("msm-accuracy", lambda: plot_msm_accuracy(docs["msm-accuracy"], out_dir)
         if "msm-accuracy" in docs else "no bench-msm-accuracy.json"),
    ]
    for name, make in charts:
        why_not = make()
        if why_not:
            print(f"skipped {name} chart: {why_not}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
